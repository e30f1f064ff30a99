salt_master-config-file-managed:
  file.managed:
    - name: /etc/salt/master.d/kube-on-os.conf
    - source: salt://salt_master/files/master.conf
    - mode: "0644"
    # Salt installed from wheels, or baked into an image, may come without master.d/.
    - makedirs: true

salt_master-service-running:
  service.running:
    - name: salt-master
    - enable: true
    - watch:
      - file: salt_master-config-file-managed
