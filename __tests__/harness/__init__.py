"""
The pytest suites' shared harness (__tests__/l4-salt, __tests__/l5-provisioners,
__tests__/double-microk8s), importable as ``harness`` through pytest.ini's ``pythonpath``:

- ``layout``: the cluster's machines, their names and addresses, by the product's layout;
- ``salt_minion``: the real Salt's masterless minion and module loading;
- ``microk8s_node``: a node of the fake microk8s CLI (__tests__/doubles/microk8s/);
- ``salt_cluster``: a real salt-master with real minions on 127.0.0.1, over fake microk8s nodes;
- ``real_salt``: that cluster serving test orchestrations, for the provisioner scripts;
- ``provisioners``: the provisioner scripts run against the fake Salt CLI (__tests__/doubles/salt-cli/).
"""
