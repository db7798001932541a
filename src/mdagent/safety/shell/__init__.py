"""The shell model: what a command line runs, read without running it."""
