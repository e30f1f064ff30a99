"""
The harness's SaltCluster (__tests__/harness/salt_cluster.py) on its own: what its salt CLI
calls make of a master that does not answer yet.
"""

from __future__ import annotations

import pytest
from harness.salt_cluster import MasterBusy, SaltCluster


def test_a_master_not_listening_yet_is_busy_so_a_starting_cluster_asks_again(tmp_path):
    """
    SaltCluster.start pings the minions while the master may still be starting: on a loaded
    machine its publisher socket comes up after the first ping ("The salt master could not be
    contacted"), which, like a request that timed out, is asked again until the deadline.
    """
    cluster = SaltCluster(tmp_path, {}, {}, {})
    cluster._write(cluster.master_dir, "master", cluster.master_config())
    with pytest.raises(MasterBusy, match="could not be contacted"):
        cluster.salt("*", "test.ping", timeout=5)
