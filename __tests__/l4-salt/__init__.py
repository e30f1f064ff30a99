"""L4: the real Salt renders and runs our states and modules."""
