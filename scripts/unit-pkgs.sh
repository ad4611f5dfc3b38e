#!/usr/bin/env bash
# Prints the module's unit packages: every package but the integration
# packages given as the arguments (the Makefile's INTEGRATION_PKGS).
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."
go=${GO:-go}
{ $go list ./...; $go list "$@"; } | sort | uniq -u
