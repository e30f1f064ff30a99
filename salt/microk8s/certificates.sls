{%- from "microk8s/map.jinja" import microk8s with context %}
{#- Every address clients reach the API at (Terraform's list); an older pillar has only the floating IP. #}
{%- set api_addresses = microk8s.api_addresses or ([microk8s.allowed_csr_ip] if microk8s.allowed_csr_ip else []) %}
{%- if api_addresses %}

# The API certificate must be valid for every address clients use: the master's floating IP and,
# behind the load balancer, its floating IP and VIP (the template lists exactly these).
microk8s-certificates-microk8s-extra-sans:
  microk8s.extra_sans:
    - addresses: {{ api_addresses | json }}
    - require:
      - sls: microk8s.install

microk8s-certificates-cmd-run-refresh:
  cmd.run:
    - name: microk8s refresh-certs --cert server.crt
    - onchanges:
      - microk8s: microk8s-certificates-microk8s-extra-sans
{%- endif %}
