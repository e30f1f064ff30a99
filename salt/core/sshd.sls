#!yaml
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

# Enabled apart from running: an enable in service.running is its change, and Salt then skips
# the reload its watch asks for (salt_master/init.sls says more).
core-sshd-service-enabled:
  service.enabled:
    - name: ssh

core-sshd-service-running:
  service.running:
    - name: ssh
    - reload: true
    - require:
      - service: core-sshd-service-enabled
    - watch:
      - file: core-sshd-file-managed-config
