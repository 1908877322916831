"""Sleuth's servers: the HTTP API, the MCP server and the run viewer."""
