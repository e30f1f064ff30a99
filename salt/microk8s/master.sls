{#- The master publishes join tokens through the mine (mine_functions in the pillar). #}
include:
  - microk8s

microk8s-master-module-run-mine-update:
  module.run:
    - mine.update: []
    - require:
      - sls: microk8s
