{#-
  NAT for the private network. The outbound interface is the one whose address lies in the
  public network (kube_on_os.interface_in), never "the first interface": interface order is not
  stable, which the wiki lists as a known bug of the original state.
#}
{%- from "bastion/map.jinja" import network with context %}

bastion-iptables-pkg-installed:
  pkg.installed:
    - pkgs:
      - iptables
      - iptables-persistent

bastion-iptables-iptables-append-masquerade:
  iptables.append:
    - table: nat
    - chain: POSTROUTING
    - source: {{ network.private_cidr | yaml_encode }}
    - out-interface: {{ salt["kube_on_os.interface_in"](network.public_cidr) | yaml_encode }}
    - jump: MASQUERADE
    - save: true
    - require:
      - pkg: bastion-iptables-pkg-installed
      - sls: bastion.sysctl
