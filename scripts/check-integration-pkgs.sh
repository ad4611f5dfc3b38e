#!/usr/bin/env bash
# Fails when a package outside the integration list (the Makefile's
# INTEGRATION_PKGS, the argument) links the Temporal server into its tests:
# make test runs those packages with the race detector, which would compile
# the whole server a second time, and such a package's tests start engines.
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."
go=${GO:-go}
# shellcheck disable=SC2086
unit=$(bash scripts/unit-pkgs.sh ${1:?the integration packages})
# shellcheck disable=SC2086
bad=$($go list -test -f '{{.ImportPath}} {{join .Deps " "}}' $unit |
	awk '$1 ~ /\.test$/ && / go\.temporal\.io\/server\// { sub(/\.test$/, "", $1); print $1 }' | sort -u)
if [ -n "$bad" ]; then
	echo "These packages' tests link the Temporal server; add them to INTEGRATION_PKGS in the Makefile:" >&2
	echo "$bad" >&2
	exit 1
fi
