{#-
  salt-run state.orchestrate orch.minions: every minion syncs the custom modules, takes the
  options of core.minion and runs with them (orch.deploy starts the same way).

  orchestrate.sh runs it before a change to the Salt master's own configuration restarts the
  master. A minion still on Salt 3007's default zmq_monitor (one that an earlier version of
  kube-on-os configured) rebuilds its channels when its master restarts, and its main process can
  hang for good in pyzmq's Context.term (core/files/minion.conf): with these options first, no
  minion goes through that restart with the monitor on.
#}
{%- from "orch/minions.jinja" import steps %}
{{ steps("orch-minions", '\n    - tgt: "*"') }}
