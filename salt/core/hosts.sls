#!yaml
# Every minion's name and private address, from the mine; the logic is in kube_on_os.hosts_file.
core-hosts-file-managed:
  file.managed:
    - name: /etc/hosts
    - source: salt://core/files/hosts.jinja
    - template: jinja
