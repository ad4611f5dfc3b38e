#!/usr/bin/env bash
# Installs the orders agent on the OpenAI Agents SDK for JavaScript: first the runner SDK it is built on
# (the install.sh of the directory its @dex-agents/runner dependency names,
# sdk/typescript in this repository), then its own npm packages (pinned by
# package-lock.json, with npm ci; the SDK is a link to that directory)
# into node_modules/, then compiles src/ to dist/ with tsc. Idempotent: with
# the pinned packages already installed it only rebuilds.
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")"
if ! command -v node >/dev/null 2>&1 || ! command -v npm >/dev/null 2>&1; then
	echo "orders-openai-agents-ts: node and npm are missing: install Node.js 20 or later (apt-get install nodejs npm)" >&2
	exit 1
fi
major=$(node -p 'process.versions.node.split(".")[0]')
if [ "$major" -lt 20 ]; then
	echo "orders-openai-agents-ts: node $(node --version) is too old: install Node.js 20 or later" >&2
	exit 1
fi
# The SDK from the checkout the dependency names (file:...): built first,
# since this package compiles against its dist/.
sdk=$(node -p 'const d = require("./package.json").dependencies["@dex-agents/runner"] || ""; d.startsWith("file:") ? require("path").resolve(d.slice(5)) : ""')
if [ -n "$sdk" ]; then
	bash "$sdk/install.sh"
fi
want=$(sha256sum package-lock.json | cut -d' ' -f1)
have=$(cat node_modules/.dex-lock-sha256 2>/dev/null || true)
if [ "$have" != "$want" ]; then
	npm ci --no-audit --no-fund --loglevel=error
	echo "$want" > node_modules/.dex-lock-sha256
fi
rm -rf dist
node node_modules/typescript/bin/tsc -p tsconfig.json
echo "orders-openai-agents-ts built: node $(pwd)/dist/main.js (@openai/agents $(node -p "require(\"./node_modules/@openai/agents/package.json\").version"))"
