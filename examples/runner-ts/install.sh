#!/usr/bin/env bash
# Installs the TypeScript runner plugin: its npm packages (pinned by
# package-lock.json, with npm ci) into node_modules/, then compiles src/ to
# dist/ with tsc. Idempotent: with the pinned packages already installed it
# only rebuilds dist/.
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")"
if ! command -v node >/dev/null 2>&1 || ! command -v npm >/dev/null 2>&1; then
	echo "runner-ts: node and npm are missing: install Node.js 20 or later (apt-get install nodejs npm)" >&2
	exit 1
fi
major=$(node -p 'process.versions.node.split(".")[0]')
if [ "$major" -lt 20 ]; then
	echo "runner-ts: node $(node --version) is too old: install Node.js 20 or later" >&2
	exit 1
fi
want=$(sha256sum package-lock.json | cut -d' ' -f1)
have=$(cat node_modules/.dex-lock-sha256 2>/dev/null || true)
if [ "$have" != "$want" ]; then
	npm ci --no-audit --no-fund --loglevel=error
	echo "$want" > node_modules/.dex-lock-sha256
fi
rm -rf dist
node node_modules/typescript/bin/tsc -p tsconfig.json
echo "runner-ts built: node $(pwd)/dist/main.js (ai $(node -p 'require("./node_modules/ai/package.json").version'), @grpc/grpc-js $(node -p 'require("./node_modules/@grpc/grpc-js/package.json").version'))"
