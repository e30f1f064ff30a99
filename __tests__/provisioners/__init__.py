"""Tests of the provisioner scripts; a package so that its conftest does not take __tests__/salt's module name."""
