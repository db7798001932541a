"""The compiled registry of tools, commands and skills, and its cache."""
