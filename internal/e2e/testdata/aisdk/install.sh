#!/usr/bin/env bash
# Installs the AI SDK (the npm package "ai", pinned in package-lock.json)
# that the UI message stream tests drive a session with.
set -euo pipefail
cd "$(dirname "$0")"
command -v node >/dev/null || { echo "node is missing: install Node.js 20 or later" >&2; exit 1; }
npm ci --no-audit --no-fund --loglevel=error
node -e 'import("ai").then(m => { if (!m.AbstractChat) throw new Error("ai has no AbstractChat"); console.log("ai", require("ai/package.json").version) })'
