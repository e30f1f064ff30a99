"""
The rehearsal's hosts only: ``service.offline``, beside Salt's own service module. The minion
finds this directory through /etc/salt/minion.d/koo-rehearsal.conf (``module_dirs``).

Salt's service states ask for it before they act (salt/states/service.py ``_offline()``:
``"service.offline" in __salt__ and __salt__["service.offline"]()``). On the machines the stack
builds, systemd is PID 1, so Salt's service module is ``systemd_service``, which has it (False
while systemd runs). The rehearsal's hosts have no systemd: their service module is
``debian_service``, which has none, and a function missing from the module its name points to
makes Salt's loader import every execution module it has, about 530, looking for it
(salt/loader/lazy.py ``LazyLoader._load``: every file is tried, then the file mapping is
refreshed and they are tried again). A state run makes its loaders anew, so every highstate paid
that: about a second of CPU, where a real machine pays nothing. This gives the rehearsal's hosts
the function the real ones have, with the value it has there while the init system runs.
"""

__virtualname__ = "service"


def __virtual__():
    return __virtualname__


def offline():
    """False: the host's init system runs (systemd_service.offline on a real machine)."""
    return False
