"""The real OpenStack kit: the 2026.2 services from PyPI on 127.0.0.1 (scripts/openstack/README.md)."""
