{%- from "core/map.jinja" import core with context %}

core-motd-file-managed-issue:
  file.managed:
    - name: /etc/issue
    - source: salt://core/files/issue.jinja
    - template: jinja
    - context:
        message: {{ core.motd_issue | yaml_encode }}

core-motd-file-managed-issue-net:
  file.managed:
    - name: /etc/issue.net
    - source: salt://core/files/issue.jinja
    - template: jinja
    - context:
        message: {{ core.motd_issue | yaml_encode }}

core-motd-file-managed-motd:
  file.managed:
    - name: /etc/motd
    - source: salt://core/files/motd.jinja
    - template: jinja

# Ubuntu's generated motd would repeat (and leak) system details; ours replaces it.
core-motd-file-directory-update-motd:
  file.directory:
    - name: /etc/update-motd.d
    - file_mode: "0644"
    - recurse:
      - mode
