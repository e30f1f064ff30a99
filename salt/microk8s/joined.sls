include:
  - microk8s

microk8s-joined-microk8s-cluster-joined:
  microk8s.cluster_joined:
    - master: {{ salt["pillar.get"]("microk8s:master") }}
    - require:
      - sls: microk8s
