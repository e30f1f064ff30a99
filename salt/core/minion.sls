#!yaml
core-minion-service-running:
  service.running:
    - name: salt-minion
    - enable: true
