"""The leaf: records, errors, defaults and the small helpers every layer uses."""
