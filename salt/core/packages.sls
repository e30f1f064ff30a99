{%- from "core/map.jinja" import core with context %}

core-packages-pkg-uptodate:
  pkg.uptodate:
    - refresh: true

core-packages-pkg-installed:
  pkg.installed:
    - pkgs:
{%- for package in core.packages %}
      - {{ package | yaml_encode }}
{%- endfor %}
    - require:
      - pkg: core-packages-pkg-uptodate
