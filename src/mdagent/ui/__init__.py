"""Terminal text: imported only by the edges, the agent and the runtime."""
