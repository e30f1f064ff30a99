{%- from "core/map.jinja" import core with context %}

core-resolv-file-managed:
  file.managed:
    - name: /etc/resolv.conf
    - follow_symlinks: false
    - source: salt://core/files/resolv.conf.jinja
    - template: jinja
    - context:
        nameservers:
{%- for server in core.nameservers %}
          - {{ server | yaml_encode }}
{%- endfor %}
