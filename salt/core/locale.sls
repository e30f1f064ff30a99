{%- from "core/map.jinja" import core with context %}

core-locale-locale-present:
  locale.present:
    - name: {{ core.locale | yaml_encode }}

core-locale-locale-system:
  locale.system:
    - name: {{ core.locale | yaml_encode }}
    - require:
      - locale: core-locale-locale-present
