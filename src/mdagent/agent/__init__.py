"""Turns: the loop, the conversation, prompts, `agent ask`."""
