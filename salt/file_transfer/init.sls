{#- Arbitrary files from the salt fileserver, listed in the `file_transfer:files` pillar. #}
{%- for file in salt["pillar.get"]("file_transfer:files", []) %}

file_transfer-file-managed-{{ file.name }}:
  file.managed:
    - name: {{ file.name }}
    - source: {{ file.source }}
    - mode: {{ file.get("mode", "0644") | json }}
    - makedirs: true
{%- endfor %}
