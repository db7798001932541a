"""The interactive edge: the session's loop, line input, its commands."""
