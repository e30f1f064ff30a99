{#- People from the `users` pillar (Terraform's `users` variable): key-only SSH, sudo. #}
{%- from "core/map.jinja" import users with context %}
{%- for user in users %}

core-users-user-present-{{ user.username }}:
  user.present:
    - name: {{ user.username }}
    - shell: /bin/bash
    - createhome: true
    - password: "*"
    - groups:
      - sudo

core-users-ssh-auth-present-{{ user.username }}:
  ssh_auth.present:
    - user: {{ user.username }}
    - names:
      - {{ user.ssh_public_key | json }}
    - require:
      - user: core-users-user-present-{{ user.username }}
{%- endfor %}
