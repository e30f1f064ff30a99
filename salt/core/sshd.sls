# sshd -t (the config's check) needs its privilege separation directory, which exists only
# while sshd runs (ssh.service's RuntimeDirectory), or not at all with socket activation.
core-sshd-file-directory-privsep:
  file.directory:
    - name: /run/sshd
    - mode: "0755"

core-sshd-file-managed-config:
  file.managed:
    - name: /etc/ssh/sshd_config
    - source: salt://core/files/sshd_config.jinja
    - template: jinja
    - mode: "0644"
    - check_cmd: /usr/sbin/sshd -t -f
    - require:
      - file: core-sshd-file-directory-privsep

core-sshd-service-running:
  service.running:
    - name: ssh
    - enable: true
    - reload: true
    - watch:
      - file: core-sshd-file-managed-config
