#!/usr/bin/env bash
# Installs what internal/transcript/pgtest needs, idempotently, on a Debian
# machine: the PostgreSQL 15 server binaries from apt, only when they are
# missing. Tests start their own server in a temporary directory, so the
# package's own cluster need not run (in a container apt cannot start it,
# and that is fine). Run it as root, or with sudo available.
set -euo pipefail

bin=/usr/lib/postgresql/15/bin

if [ ! -x "$bin/postgres" ] || [ ! -x "$bin/initdb" ]; then
  echo "install.sh: installing postgresql-15 with apt-get"
  sudo=""
  if [ "$(id -u)" -ne 0 ]; then sudo="sudo"; fi
  export DEBIAN_FRONTEND=noninteractive
  $sudo apt-get update -qq
  $sudo apt-get install -y -qq --no-install-recommends postgresql-15 >/dev/null
fi

# Under root the tests run the server as the postgres user, which the
# package creates.
if [ "$(id -u)" -eq 0 ] && ! id postgres >/dev/null 2>&1; then
  echo "install.sh: there is no postgres user; reinstall postgresql-common" >&2
  exit 1
fi

echo "install.sh: $("$bin/postgres" --version)"
