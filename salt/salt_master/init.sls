#!yaml
salt_master-config-file-managed:
  file.managed:
    - name: /etc/salt/master.d/kube-on-os.conf
    - source: salt://salt_master/files/master.conf
    - mode: "0644"
    # Salt installed from wheels, or baked into an image, may come without master.d/.
    - makedirs: true

# Enabled by a state of its own: a service.running that enables the service reports that as its
# change, and Salt then skips its mod_watch, so the first run would never restart the master
# with its new configuration (no reactor). Salt's requisites docs, "watch"; the rehearsal found it.
salt_master-service-enabled:
  service.enabled:
    - name: salt-master

salt_master-service-running:
  service.running:
    - name: salt-master
    - require:
      - service: salt_master-service-enabled
    - watch:
      - file: salt_master-config-file-managed
