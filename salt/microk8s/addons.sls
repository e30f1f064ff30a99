{%- from "microk8s/map.jinja" import microk8s with context %}
{%- for addon in microk8s.addons.enabled %}

{{ ("microk8s-addons-microk8s-addon-enabled-" ~ addon) | yaml_encode }}:
  microk8s.addon_enabled:
    - name: {{ addon | yaml_encode }}
    - require:
      - sls: microk8s.install
{%- endfor %}
{%- for addon in microk8s.addons.disabled %}

{{ ("microk8s-addons-microk8s-addon-disabled-" ~ addon) | yaml_encode }}:
  microk8s.addon_disabled:
    - name: {{ addon | yaml_encode }}
    - require:
      - sls: microk8s.install
{%- endfor %}
