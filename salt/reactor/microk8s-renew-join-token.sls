{#-
  A joiner's join token failed (microk8s.request_token_renewal fired the event). The master is
  asked to renew the token of data["id"], the minion that fired the event, never of a minion the
  event names; renew_join_token checks that it runs on the pillar's master and that the joiner
  is expected. The values are JSON-quoted, so event data cannot add YAML of its own.
#}
microk8s-renew-join-token:
  local.microk8s.renew_join_token:
    - tgt: {{ data["data"]["master"] | yaml_encode }}
    - args:
      - joiner: {{ data["id"] | yaml_encode }}
      - reason: {{ data["data"]["reason"] | yaml_encode }}
      - serial: {{ data["data"]["serial"] | yaml_encode }}
