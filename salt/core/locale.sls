{%- from "core/map.jinja" import core with context %}

core-locale-locale-present:
  locale.present:
    - name: {{ core.locale | json }}

core-locale-locale-system:
  locale.system:
    - name: {{ core.locale | json }}
    - require:
      - locale: core-locale-locale-present
