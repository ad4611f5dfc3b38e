#!/usr/bin/env bash
# Installs the fake model provider the plugins/stepwise/model and
# examples/orders tests start: @copilotkit/aimock, pinned by package-lock.json,
# into node_modules/ beside this script. Idempotent: a second run with the
# pinned version already installed does nothing.
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")"
want=$(node -p 'require("./package-lock.json").packages["node_modules/@copilotkit/aimock"].version')
have=$(node -p 'try { require("./node_modules/@copilotkit/aimock/package.json").version } catch { "" }' 2>/dev/null || true)
if [ "$have" = "$want" ] && [ -f node_modules/@copilotkit/aimock/dist/cli.js ]; then
	echo "aimock $have is installed"
	exit 0
fi
npm ci --no-audit --no-fund --loglevel=error
echo "aimock $want installed"
