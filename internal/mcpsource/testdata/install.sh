#!/usr/bin/env bash
# Installs the real MCP servers the tests start (over stdio, and
# server-everything also over Streamable HTTP):
# @modelcontextprotocol/server-everything, server-filesystem and
# server-memory, pinned by package-lock.json, into node_modules/ beside this
# script. Idempotent: a second run with the pinned versions already
# installed does nothing.
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")"
missing=0
for pkg in @modelcontextprotocol/server-everything @modelcontextprotocol/server-filesystem @modelcontextprotocol/server-memory; do
	want=$(node -p "require('./package-lock.json').packages['node_modules/$pkg'].version")
	have=$(node -p "try { require('./node_modules/$pkg/package.json').version } catch { '' }" 2>/dev/null || true)
	if [ "$have" != "$want" ] || [ ! -d "node_modules/$pkg/dist" ]; then
		missing=1
	fi
done
if [ "$missing" = 0 ]; then
	echo "the MCP test servers are installed"
	exit 0
fi
npm ci --no-audit --no-fund --loglevel=error
echo "the MCP test servers are installed"
