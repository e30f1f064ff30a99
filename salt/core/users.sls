{#-
  People from the `users` pillar (Terraform's `users` variable): key-only SSH, sudo. Every
  pillar value goes into the YAML through yaml_encode, state ids included: written raw, a
  username such as `yes`, `null` or `off` would become True, None or False. (`json` is not
  enough: a key comment may hold U+2028 or DEL, which JSON leaves raw and YAML cannot read back.)
#}
{%- from "core/map.jinja" import users with context %}
{%- for user in users %}
{%- set user_state = "core-users-user-present-" ~ user.username %}

{{ user_state | yaml_encode }}:
  user.present:
    - name: {{ user.username | yaml_encode }}
    - shell: /bin/bash
    - createhome: true
    - password: "*"
    - groups:
      - sudo

{{ ("core-users-ssh-auth-present-" ~ user.username) | yaml_encode }}:
  ssh_auth.present:
    - user: {{ user.username | yaml_encode }}
    - names:
      - {{ user.ssh_public_key | yaml_encode }}
    - require:
      - user: {{ user_state | yaml_encode }}
{%- endfor %}
