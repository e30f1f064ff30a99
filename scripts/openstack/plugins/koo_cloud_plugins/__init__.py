"""The kit's own drivers for the real OpenStack services (scripts/openstack/README.md)."""
