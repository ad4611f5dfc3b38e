#!/usr/bin/env bash
# Installs what internal/events/redistest needs, idempotently, on a Debian
# machine: redis-server 7.0 from apt, only when it is missing. Tests start
# their own server on a free port, so the package's service need not run.
# Run it as root, or with sudo available.
set -euo pipefail

if [ ! -x /usr/bin/redis-server ]; then
  echo "install.sh: installing redis-server with apt-get"
  sudo=""
  if [ "$(id -u)" -ne 0 ]; then sudo="sudo"; fi
  export DEBIAN_FRONTEND=noninteractive
  $sudo apt-get update -qq
  $sudo apt-get install -y -qq --no-install-recommends redis-server >/dev/null
fi

echo "install.sh: $(/usr/bin/redis-server --version)"
