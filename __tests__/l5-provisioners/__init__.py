"""The provisioner scripts, against the fake Salt CLI and a real Salt master."""
