#!yaml
include:
  - core.sysctl
  - core.locale
  - core.motd
  - core.sshd
  - core.resolv
  - core.hosts
  - core.packages
  - core.minion
  - core.users
