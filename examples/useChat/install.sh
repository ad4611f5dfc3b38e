#!/usr/bin/env bash
# Installs the example's packages (pinned by package-lock.json) and builds
# dist/app.js; the browser test in internal/e2e runs the built page.
set -euo pipefail
cd "$(dirname "$0")"
command -v node >/dev/null || { echo "install.sh: node is required (apt-get install nodejs npm)" >&2; exit 1; }
npm ci --no-audit --no-fund --loglevel=error
npm run --silent build
echo "useChat example built: $(wc -c < dist/app.js) bytes"
