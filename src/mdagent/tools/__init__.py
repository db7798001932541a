"""Running one tool call: the toolbox, dispatch, templates, processes, hooks."""
