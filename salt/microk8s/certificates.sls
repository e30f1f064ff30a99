{%- from "microk8s/map.jinja" import microk8s with context %}
{%- if microk8s.allowed_csr_ip %}

# The API certificate must also be valid for the master's floating IP (replaced if it changes).
microk8s-certificates-microk8s-extra-san:
  microk8s.extra_san:
    - name: {{ microk8s.allowed_csr_ip | yaml_encode }}
    - require:
      - sls: microk8s.install

microk8s-certificates-cmd-run-refresh:
  cmd.run:
    - name: microk8s refresh-certs --cert server.crt
    - onchanges:
      - microk8s: microk8s-certificates-microk8s-extra-san
{%- endif %}
