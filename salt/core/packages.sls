{%- from "core/map.jinja" import core with context %}

core-packages-pkg-uptodate:
  pkg.uptodate:
    - refresh: true

core-packages-pkg-installed:
  pkg.installed:
    - pkgs: {{ core.packages | json }}
    - require:
      - pkg: core-packages-pkg-uptodate
