#!/bin/sh
# Once per project, in the project directory: Stockade as Claude Code's MCP server. Its sandbox
# reaches the package registries, another host once you allow it, none without the --network flags.
claude mcp add stockade -- stockade serve --workspace "$PWD" --network allowlist --allow-preset registries
