#!yaml
include:
  - microk8s.install
  - microk8s.certificates
  - microk8s.addons
