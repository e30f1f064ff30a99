{#- The minion's own options (core/files/minion.conf). orch.deploy applies this SLS on every minion
    before anything else and then waits until each runs with them (kube_on_os.minion_options). #}
core-minion-config-file-managed:
  file.managed:
    - name: /etc/salt/minion.d/kube-on-os.conf
    - source: salt://core/files/minion.conf
    - mode: "0644"
    # Salt installed from wheels, or baked into an image, may come without minion.d/.
    - makedirs: true

{#- A minion whose master restarted while its socket monitor was on runs status.master every
    second, and keeps that job in minion.d/_schedule.conf across restarts (minion.conf says why):
    it goes from the running minion and from the file. #}
core-minion-master-alive-schedule-absent:
  schedule.absent:
    - name: {{ ("__master_alive_" ~ opts["master"]) | yaml_encode }}

core-minion-service-running:
  service.running:
    - name: salt-minion
    - enable: true

{#- salt-minion reads its options only when it starts, and a restart from inside the job would end
    the job before it returns: kube_on_os.restart_minion restarts it in the background, once the
    job has returned. #}
core-minion-restarted:
  module.run:
    - kube_on_os.restart_minion: []
    - onchanges:
      - file: core-minion-config-file-managed
