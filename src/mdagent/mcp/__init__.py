"""Other MCP servers: the client and their tools."""
