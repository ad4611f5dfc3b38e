#!/usr/bin/env bash
# Installs the AI SDK (the npm package "ai" 6, and 7 as "ai7", pinned in
# package-lock.json) that the UI message stream tests drive a session with.
set -euo pipefail
cd "$(dirname "$0")"
command -v node >/dev/null || { echo "node is missing: install Node.js 20 or later" >&2; exit 1; }
npm ci --no-audit --no-fund --loglevel=error
node -e 'Promise.all([import("ai"), import("ai7")]).then(([a, b]) => { if (!a.AbstractChat || !b.AbstractChat) throw new Error("no AbstractChat"); console.log("ai", require("ai/package.json").version, "and", require("ai7/package.json").version) })'
