#!yaml
# Settings shared by every deployment, over Terraform's values (_from_terraform) and under a
# domain's own (environments/<domain>). Empty: the Salt tree's defaults live in its
# defaults.yaml files (salt/*/defaults.yaml, read through map.jinja), so that each has one home;
# a key set here overrides them everywhere. The keys are in pillar.example.
{}
