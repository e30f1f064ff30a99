{%- from "core/map.jinja" import core with context %}

core-sysctl-sysctl-present-file-max:
  sysctl.present:
    - name: fs.file-max
    - value: {{ core.nofile_limit | yaml_encode }}

core-sysctl-file-managed-limits:
  file.managed:
    - name: /etc/security/limits.d/90-kube-on-os.conf
    - contents: {{ ("* soft nofile %s\n* hard nofile %s\n" | format(core.nofile_limit, core.nofile_limit)) | yaml_encode }}

{%- for key in ["net.ipv6.conf.all.disable_ipv6", "net.ipv6.conf.default.disable_ipv6"] %}

core-sysctl-sysctl-present-{{ key }}:
  sysctl.present:
    - name: {{ key }}
    - value: 1
{%- endfor %}
