{%- for key in ["net.ipv4.ip_forward", "net.ipv4.conf.all.forwarding"] %}

bastion-sysctl-sysctl-present-{{ key }}:
  sysctl.present:
    - name: {{ key }}
    - value: 1
{%- endfor %}
