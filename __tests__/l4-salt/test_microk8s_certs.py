"""
The microk8s module's _certs: the API server certificate's extra SANs in csr.conf.template, up to
the certificate the fake microk8s refreshes, and the CA fingerprint that tells clusters apart.
"""

from __future__ import annotations

import hashlib
import importlib
import json

import pytest
from harness.microk8s_node import FakeMicrok8s
from harness.salt_minion import ROOT, LocalMinion, load_module
from microk8s_support import MASTER, NO_LOCK
from salt.exceptions import CommandExecutionError

# microk8s' own template (microk8s-resources/certs/csr.conf.template), its [ alt_names ] and after.
CSR_TEMPLATE = """[ alt_names ]
DNS.1 = kubernetes
DNS.2 = kubernetes.default
DNS.3 = kubernetes.default.svc
DNS.4 = kubernetes.default.svc.cluster
DNS.5 = kubernetes.default.svc.cluster.local
IP.1 = 127.0.0.1
IP.2 = 10.152.183.1
#MOREIPS

[ v3_ext ]
subjectAltName=@alt_names
"""
FLOATING_IP, LB_FLOATING_IP, LB_VIP = "203.0.113.10", "203.0.113.20", "10.1.0.5"


@pytest.fixture
def san_node(microk8s, tmp_path):
    node = FakeMicrok8s(tmp_path, tmp_path / "cluster")
    (node.home / "certs" / "csr.conf.template").write_text(CSR_TEMPLATE)
    microk8s.__salt__ = node.salt_functions()
    return node


def csr_template(node) -> str:
    return (node.home / "certs" / "csr.conf.template").read_text()


def test_extra_sans_are_added_in_order_counting_down_from_99_before_the_marker(microk8s, san_node):
    assert microk8s.extra_sans() == []
    assert microk8s.config_set_extra_sans([FLOATING_IP, LB_FLOATING_IP, LB_VIP]) == {
        "changed": True,
        "sans": [f"IP.99 = {FLOATING_IP}", f"IP.98 = {LB_FLOATING_IP}", f"IP.97 = {LB_VIP}"],
    }
    assert csr_template(san_node) == CSR_TEMPLATE.replace(
        "#MOREIPS\n", f"IP.99 = {FLOATING_IP}\nIP.98 = {LB_FLOATING_IP}\nIP.97 = {LB_VIP}\n#MOREIPS\n"
    )
    assert microk8s.extra_sans() == [FLOATING_IP, LB_FLOATING_IP, LB_VIP]


def test_setting_the_same_extra_sans_again_changes_nothing(microk8s, san_node):
    microk8s.config_set_extra_sans([FLOATING_IP, LB_FLOATING_IP])
    before = csr_template(san_node)
    assert microk8s.config_set_extra_sans([FLOATING_IP, LB_FLOATING_IP]) == {
        "changed": False,
        "sans": [f"IP.99 = {FLOATING_IP}", f"IP.98 = {LB_FLOATING_IP}"],
    }
    assert csr_template(san_node) == before


def test_extra_sans_are_replaced_and_extended(microk8s, san_node):
    microk8s.config_set_extra_sans(["203.0.113.9"])
    assert microk8s.config_set_extra_sans([FLOATING_IP, LB_FLOATING_IP, LB_VIP])["changed"] is True
    assert microk8s.extra_sans() == [FLOATING_IP, LB_FLOATING_IP, LB_VIP]
    assert "203.0.113.9" not in csr_template(san_node)
    # Same addresses, another order: the lines follow the new order.
    assert microk8s.config_set_extra_sans([LB_FLOATING_IP, FLOATING_IP, LB_VIP])["changed"] is True
    assert microk8s.extra_sans() == [LB_FLOATING_IP, FLOATING_IP, LB_VIP]


def test_extra_sans_no_longer_listed_are_removed(microk8s, san_node):
    microk8s.config_set_extra_sans([FLOATING_IP, LB_FLOATING_IP, LB_VIP])
    assert microk8s.config_set_extra_sans([FLOATING_IP]) == {"changed": True, "sans": [f"IP.99 = {FLOATING_IP}"]}
    assert csr_template(san_node) == CSR_TEMPLATE.replace("#MOREIPS\n", f"IP.99 = {FLOATING_IP}\n#MOREIPS\n")
    assert microk8s.config_set_extra_sans([]) == {"changed": True, "sans": []}
    assert csr_template(san_node) == CSR_TEMPLATE


def test_the_single_address_template_of_earlier_releases_is_taken_over(microk8s, san_node):
    # Earlier releases wrote only IP.99 (the master's floating IP): it stays, the others follow.
    san_node.home.joinpath("certs", "csr.conf.template").write_text(
        CSR_TEMPLATE.replace("#MOREIPS\n", f"IP.99 = {FLOATING_IP}\n#MOREIPS\n")
    )
    assert microk8s.extra_sans() == [FLOATING_IP]
    assert microk8s.config_set_extra_sans([FLOATING_IP])["changed"] is False
    assert microk8s.config_set_extra_sans([FLOATING_IP, LB_FLOATING_IP])["changed"] is True
    assert csr_template(san_node).count(f"IP.99 = {FLOATING_IP}") == 1


def test_extra_sans_keep_microk8s_own_lines_and_the_marker(microk8s, san_node):
    # A template with a host address microk8s numbered (IP.3) and a line of someone else's (IP.5).
    own = CSR_TEMPLATE.replace("IP.2 = 10.152.183.1\n", "IP.2 = 10.152.183.1\nIP.3 = 10.1.0.10\nIP.5 = 192.0.2.7\n")
    san_node.home.joinpath("certs", "csr.conf.template").write_text(own)
    microk8s.config_set_extra_sans([FLOATING_IP, LB_VIP])
    microk8s.config_set_extra_sans([LB_VIP])
    assert csr_template(san_node) == own.replace("#MOREIPS\n", f"IP.99 = {LB_VIP}\n#MOREIPS\n")
    assert microk8s.extra_sans() == [LB_VIP]


def test_a_template_without_the_marker_is_an_error_not_a_guess(microk8s, san_node):
    san_node.home.joinpath("certs", "csr.conf.template").write_text("[ alt_names ]\nDNS.1 = kubernetes\n")
    assert microk8s.extra_sans() == []
    with pytest.raises(CommandExecutionError, match=r"csr\.conf\.template has no #MOREIPS marker to add a SAN at$"):
        microk8s.config_set_extra_sans([FLOATING_IP])
    assert csr_template(san_node) == "[ alt_names ]\nDNS.1 = kubernetes\n"


@pytest.mark.parametrize(
    ("addresses", "message"),
    [
        (["203.0.113.300"], "'203.0.113.300' is not an IPv4 address: an extra SAN must be one"),
        (["2001:db8::1"], "'2001:db8::1' is not an IPv4 address: an extra SAN must be one"),
        ([FLOATING_IP, "api.lab.example"], "'api.lab.example' is not an IPv4 address: an extra SAN must be one"),
        ([None], "None is not an IPv4 address: an extra SAN must be one"),
        (
            [FLOATING_IP, FLOATING_IP],
            f"{FLOATING_IP} is listed twice in the extra SANs ['{FLOATING_IP}', '{FLOATING_IP}']",
        ),
        (FLOATING_IP, f"the extra SANs must be a list of IPv4 addresses, not '{FLOATING_IP}'"),
        ([f"10.0.0.{n}" for n in range(11)], "at most 10 extra SANs are managed, not 11: "),
    ],
)
def test_anything_but_distinct_ipv4_addresses_is_refused_and_the_template_kept(microk8s, san_node, addresses, message):
    with pytest.raises(CommandExecutionError) as raised:
        microk8s.config_set_extra_sans(addresses)
    assert str(raised.value).startswith(message)
    assert csr_template(san_node) == CSR_TEMPLATE


def test_extra_sans_through_the_real_loader_reach_the_certificate_once_refreshed(tmp_path):
    """
    state.single microk8s.extra_sans, then refresh-certs as certificates.sls runs it on changes,
    against the fake microk8s: its server.crt then names every API address (server_cert.py
    reproduces refresh_csr_conf; gen_server_cert).
    """
    server_cert = load_module("server_cert", ROOT / "__tests__" / "doubles" / "microk8s_core" / "server_cert.py")
    node = FakeMicrok8s(tmp_path / "node", tmp_path / "cluster")
    grains = {"microk8s.snap_data": str(node.home)}
    call = LocalMinion(tmp_path, MASTER, file_root=ROOT / "salt", grains=grains, env=node.env).call
    call("saltutil.sync_all")
    addresses = f"addresses={json.dumps([FLOATING_IP, LB_FLOATING_IP, LB_VIP])}"

    def extra_sans(*extra: str) -> dict:
        return next(iter(call("state.single", "microk8s.extra_sans", "api", addresses, *extra).values()))

    predicted = extra_sans("test=True")
    assert (predicted["result"], predicted["changes"]) == (
        None,
        {"extra_sans": {"old": [], "new": [FLOATING_IP, LB_FLOATING_IP, LB_VIP]}},
    )
    assert extra_sans()["changes"] == predicted["changes"]
    assert extra_sans()["changes"] == {}
    call("microk8s.refresh_certs")
    certificate = (node.home / "certs" / "server.crt").read_text()
    assert [name for name in server_cert.subject_alt_names(certificate) if name.startswith("IP Address:")] == [
        "IP Address:127.0.0.1",
        f"IP Address:{FLOATING_IP}",
        f"IP Address:{LB_FLOATING_IP}",
        f"IP Address:{LB_VIP}",
        "IP Address:10.1.0.10",
    ]


def test_the_ca_fingerprint_tells_one_cluster_from_another(microk8s, tmp_path):
    files = {}
    microk8s.__salt__ = {
        **NO_LOCK,
        "config.get": lambda key, default=None: str(tmp_path) if key == "microk8s.snap_data" else default,
        "file.file_exists": lambda path: path in files,
        "file.read": lambda path: files[path],
    }
    certs = importlib.import_module("microk8s._certs")
    assert certs.ca_fingerprint(microk8s.__salt__) is None
    pem = "-----BEGIN CERTIFICATE-----\nAAECAw==\n-----END CERTIFICATE-----\n"
    files[f"{tmp_path}/certs/ca.crt"] = pem
    assert certs.ca_fingerprint(microk8s.__salt__) == hashlib.sha256(bytes([0, 1, 2, 3])).hexdigest()
    files[f"{tmp_path}/certs/ca.crt"] = "not a certificate"
    with pytest.raises(CommandExecutionError, match=r"certs/ca\.crt is not a PEM certificate"):
        certs.ca_fingerprint(microk8s.__salt__)
