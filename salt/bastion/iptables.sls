{#-
  NAT for the private network. The outbound interface is the one whose address lies in the
  public network (kube_on_os.interface_in), never "the first interface": interface order is not
  stable, which the wiki lists as a known bug of the original state.
#}
{%- set private_cidr = salt["pillar.get"]("network:private_cidr") %}
{%- set public_cidr = salt["pillar.get"]("network:public_cidr") %}

bastion-iptables-pkg-installed:
  pkg.installed:
    - pkgs:
      - iptables
      - iptables-persistent

bastion-iptables-iptables-append-masquerade:
  iptables.append:
    - table: nat
    - chain: POSTROUTING
    - source: {{ private_cidr }}
    - out-interface: {{ salt["kube_on_os.interface_in"](public_cidr) }}
    - jump: MASQUERADE
    - save: true
    - require:
      - pkg: bastion-iptables-pkg-installed
      - sls: bastion.sysctl
