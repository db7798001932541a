"""`agent mcp serve`: mdagent as an MCP server."""
