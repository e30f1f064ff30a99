{%- from "microk8s/map.jinja" import microk8s with context %}
{#- microk8s_channel unset: the channel the cluster's nodes track, or a new cluster's. #}
{%- set channel = microk8s.channel or salt["kube_on_os.microk8s_channel"](microk8s.master or "", microk8s.new_cluster_channel) %}

# The launch configuration is read when the snap installs: pod and service networks must not
# be microk8s' own default (10.1.0.0/16 collides with the private network).
microk8s-install-file-managed-launch-config:
  file.managed:
    - name: /var/snap/microk8s/common/.microk8s.yaml
    - makedirs: true
    - source: salt://microk8s/files/launch-config.yaml.jinja
    - template: jinja
    - context:
        pod_cidr: {{ microk8s.pod_cidr | yaml_encode }}
        service_cidr: {{ microk8s.service_cidr | yaml_encode }}

microk8s-install-cmd-run-snap:
  cmd.run:
    - name: {{ ("snap install microk8s --classic --channel=" ~ channel | quote) | yaml_encode }}
    - unless: snap list microk8s
    # The microk8s execution and state modules load only once the binary exists.
    - reload_modules: true
    - require:
      - file: microk8s-install-file-managed-launch-config

# snapd refreshes microk8s on its own up to four times a day, on every node independently,
# restarting kubelite and k8s-dqlite; held, only the roll refreshes it, one node at a time.
microk8s-install-microk8s-refreshes-held:
  microk8s.refreshes_held:
    - require:
      - cmd: microk8s-install-cmd-run-snap

microk8s-install-microk8s-running:
  microk8s.running:
    - require:
      - cmd: microk8s-install-cmd-run-snap
