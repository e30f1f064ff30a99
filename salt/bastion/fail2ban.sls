bastion-fail2ban-pkg-installed:
  pkg.installed:
    - name: fail2ban

bastion-fail2ban-file-managed-jail:
  file.managed:
    - name: /etc/fail2ban/jail.d/kube-on-os.conf
    - contents: |
        [sshd]
        enabled = true
        maxretry = 5
        bantime = 1h
    - require:
      - pkg: bastion-fail2ban-pkg-installed

bastion-fail2ban-service-running:
  service.running:
    - name: fail2ban
    - enable: true
    - watch:
      - file: bastion-fail2ban-file-managed-jail
