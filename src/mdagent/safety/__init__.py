"""The boundary: the policy and what the kernel holds; imports core only."""
