#!/usr/bin/env bash
# Installs the real MCP server the internal/mcpsource tests start over stdio:
# @modelcontextprotocol/server-everything, pinned by package-lock.json, into
# node_modules/ beside this script. Idempotent: a second run with the pinned
# version already installed does nothing.
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")"
pkg=@modelcontextprotocol/server-everything
want=$(node -p "require('./package-lock.json').packages['node_modules/$pkg'].version")
have=$(node -p "try { require('./node_modules/$pkg/package.json').version } catch { '' }" 2>/dev/null || true)
if [ "$have" = "$want" ] && [ -d "node_modules/$pkg/dist" ]; then
	echo "server-everything $have is installed"
	exit 0
fi
npm ci --no-audit --no-fund --loglevel=error
echo "server-everything $want installed"
