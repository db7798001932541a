"""Checkpoints of the files a session changed, and going back to them."""
