"""Reading the YAML and SKILL.md declarations into specs."""
