#!/bin/sh
# Once per project, in the project directory: Stockade as Claude Code's MCP server.
claude mcp add stockade -- stockade serve --workspace "$PWD"
