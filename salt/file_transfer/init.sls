#!yaml
# The user's own files, from salt/file_transfer/files/, on the hosts the pillar's file_transfer
# names. The state reads the pillar itself, checks every file (kube_on_os.file_transfers) and
# transfers all or none.

file_transfer-file_transfer-transferred:
  file_transfer.transferred: []
