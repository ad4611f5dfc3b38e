#!/usr/bin/env bash
# Installs what the web chat browser test (internal/e2e/browser_test.go)
# needs, idempotently, on a Debian machine: Chromium from apt (only when
# /usr/bin/chromium is missing) and playwright-core from package-lock.json.
# Run it as root (or with sudo available). Safe to run again.
set -euo pipefail

here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"

if [ ! -x /usr/bin/chromium ]; then
  echo "install.sh: installing chromium with apt-get"
  sudo=""
  if [ "$(id -u)" -ne 0 ]; then sudo="sudo"; fi
  export DEBIAN_FRONTEND=noninteractive
  $sudo apt-get update -qq
  $sudo apt-get install -y -qq --no-install-recommends chromium fonts-liberation >/dev/null
fi

if ! command -v node >/dev/null || ! command -v npm >/dev/null; then
  echo "install.sh: node and npm are required (apt-get install nodejs npm)" >&2
  exit 1
fi

cd "$here"
# npm ci installs exactly package-lock.json; skip it when node_modules
# already holds every locked version (so a machine offline can run again).
locked_and_installed() {
  node -e '
    const lock = require("./package-lock.json");
    for (const [p, v] of Object.entries(lock.packages || {})) {
      if (!p) continue;
      try { if (require("./" + p + "/package.json").version !== v.version) process.exit(1); }
      catch { process.exit(1); }
    }' 2>/dev/null
}
if ! locked_and_installed; then
  echo "install.sh: npm ci in $here"
  npm ci --no-audit --no-fund --loglevel=error
fi

echo "install.sh: $(/usr/bin/chromium --version 2>/dev/null | head -n1); playwright-core $(node -p 'require("./node_modules/playwright-core/package.json").version')"
