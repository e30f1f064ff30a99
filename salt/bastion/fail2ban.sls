#!yaml
bastion-fail2ban-pkg-installed:
  pkg.installed:
    - name: fail2ban

bastion-fail2ban-file-managed-jail:
  file.managed:
    - name: /etc/fail2ban/jail.d/kube-on-os.conf
    - contents: |
        [sshd]
        enabled = true
        # sshd logs to the journal; a journald-only system (Debian 12, newer Ubuntu) has no
        # /var/log/auth.log for the default backend to read.
        backend = systemd
        maxretry = 5
        bantime = 1h
    - require:
      - pkg: bastion-fail2ban-pkg-installed

# Enabled apart from running: an enable in service.running is its change, and Salt then skips
# the restart its watch asks for (salt_master/init.sls says more).
bastion-fail2ban-service-enabled:
  service.enabled:
    - name: fail2ban

bastion-fail2ban-service-running:
  service.running:
    - name: fail2ban
    - require:
      - service: bastion-fail2ban-service-enabled
    - watch:
      - file: bastion-fail2ban-file-managed-jail
