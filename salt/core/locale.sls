{%- from "core/map.jinja" import core with context %}

core-locale-locale-present:
  locale.present:
    - name: {{ core.locale }}

core-locale-locale-system:
  locale.system:
    - name: {{ core.locale }}
    - require:
      - locale: core-locale-locale-present
