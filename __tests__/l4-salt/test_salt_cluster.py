"""
The harness's SaltCluster (__tests__/harness/salt_cluster.py) on its own: the ports its master
takes, what its salt CLI calls make of a master that does not answer yet.
"""

from __future__ import annotations

import pytest
from harness import ports
from harness.ports import ephemeral_range
from harness.salt_cluster import MasterBusy, SaltCluster


def test_a_master_not_listening_yet_is_busy_so_a_starting_cluster_asks_again(tmp_path):
    """
    SaltCluster.start pings the minions while the master may still be starting: on a loaded
    machine its publisher socket comes up after the first ping ("The salt master could not be
    contacted"), which, like a request that timed out, is asked again until the deadline.
    """
    cluster = SaltCluster(tmp_path, {}, {}, {})
    try:
        cluster._write(cluster.master_dir, "master", cluster.master_config())
        with pytest.raises(MasterBusy, match="could not be contacted"):
            cluster.salt("*", "test.ping", timeout=5)
    finally:
        cluster.stop()  # its link directory under /tmp


def test_a_cluster_listens_on_ports_the_kernel_never_hands_to_another_program(tmp_path):
    """
    The master binds its ports when it starts, a while after the cluster chose them: a port the
    kernel's bind(0) had handed out (the ephemeral range) could meanwhile be another program's,
    and the master would not start. Ports below the range are only ever taken on purpose.
    """
    low, _ = ephemeral_range()
    clusters = [SaltCluster(tmp_path / str(n), {}, {}, {}) for n in range(20)]
    for cluster in clusters:
        cluster.stop()  # its link directory under /tmp
    assert [p for cluster in clusters for p in cluster.ports.values() if p >= low] == []


def test_a_port_handed_out_is_not_handed_out_again_before_its_server_binds_it(monkeypatch):
    """
    A cluster's two ports, and the ports of the servers other tests start at the same time, are
    probed and closed long before their servers bind them. A port picked twice in that while (a
    master's ret_port equal to its publish_port, or to another test's) failed a whole module: its
    master's request server died at every start with EADDRINUSE (CI, stop 65).
    """
    port = ports.free_port()
    monkeypatch.setattr(ports.random, "randrange", lambda low, high: port)
    with pytest.raises(RuntimeError, match=f"no free port among {ports.TRIES} tried"):
        ports.free_port()
