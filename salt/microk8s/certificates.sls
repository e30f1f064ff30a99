{#-
  The API certificate of a control-plane node (the master, and every dqlite voter the pillar
  names in microk8s:control_plane) names every address clients reach the API at: the load
  balancer spreads kubectl's connections over all of them. It runs after the join, whose new CA
  makes the node issue itself a certificate from its own template (join.py, ensure_server_ca),
  and again at every highstate, so a change of the addresses reaches every voter. A worker
  serves no API (it joins with --worker): nothing to do there.
#}
{%- from "microk8s/map.jinja" import microk8s, control_plane with context %}
{#- Every address clients reach the API at (Terraform's list); an older pillar has only the floating IP. #}
{%- set api_addresses = microk8s.api_addresses or ([microk8s.allowed_csr_ip] if microk8s.allowed_csr_ip else []) %}
{%- if api_addresses and control_plane %}
include:
  - microk8s.install
  - microk8s.joined

# The API certificate must be valid for every address clients use: the master's floating IP and,
# behind the load balancer, its floating IP and VIP (the template lists exactly these).
microk8s-certificates-microk8s-extra-sans:
  microk8s.extra_sans:
    - addresses: {{ api_addresses | json }}
    - require:
      - sls: microk8s.install
      - sls: microk8s.joined

# Only a change of the template reissues server.crt (refresh-certs restarts kubelite). The
# module runs it as it runs every microk8s command: an argument list, a timeout, and microk8s'
# reason in the error; in test mode module.run only says it would.
microk8s-certificates-module-run-refresh-certs:
  module.run:
    - microk8s.refresh_certs:
      - cert: server.crt
    - onchanges:
      - microk8s: microk8s-certificates-microk8s-extra-sans
{%- endif %}
