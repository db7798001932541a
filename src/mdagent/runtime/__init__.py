"""The composition root: options, the runtime, approvers, trust."""
