"""The rehearsal's fake microk8s, held to the microk8s 1.28 behaviour it cites."""
