core-sshd-file-managed-config:
  file.managed:
    - name: /etc/ssh/sshd_config
    - source: salt://core/files/sshd_config.jinja
    - template: jinja
    - mode: "0644"
    - check_cmd: /usr/sbin/sshd -t -f

core-sshd-service-running:
  service.running:
    - name: ssh
    - enable: true
    - reload: true
    - watch:
      - file: core-sshd-file-managed-config
