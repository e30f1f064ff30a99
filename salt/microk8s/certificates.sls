{%- from "microk8s/map.jinja" import microk8s with context %}
{%- if microk8s.allowed_csr_ip %}

# The API certificate must also be valid for the master's floating IP.
microk8s-certificates-file-replace-csr-san:
  file.replace:
    - name: /var/snap/microk8s/current/certs/csr.conf.template
    - pattern: '^#MOREIPS$'
    - repl: 'IP.99 = {{ microk8s.allowed_csr_ip }}'
    - require:
      - sls: microk8s.install

microk8s-certificates-cmd-run-refresh:
  cmd.run:
    - name: microk8s refresh-certs --cert server.crt
    - onchanges:
      - file: microk8s-certificates-file-replace-csr-san
{%- endif %}
