#!yaml
include:
  - bastion.sysctl
  - bastion.iptables
  - bastion.fail2ban
