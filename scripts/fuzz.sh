#!/usr/bin/env bash
# Runs every fuzz target of the module (every func Fuzz... in a _test.go
# file, found anew each time, so a new target is fuzzed without a change
# here) for the given time, two targets at a time with one fuzzing process
# each, so both cores work. Each target's go test -json events go to
# REPORT_DIR/fuzz-<package>-<target>.json through testreport.
#
#	scripts/fuzz.sh FUZZTIME REPORT_DIR TESTREPORT
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."
fuzztime=${1:?FUZZTIME}
report=${2:?REPORT_DIR}
testreport=${3:?TESTREPORT}
go=${GO:-go}

# Tracked and new test files that exist (one deleted but not yet
# committed is still tracked).
targets=$(git ls-files -co --exclude-standard '*_test.go' | grep -v '/node_modules/' |
	while IFS= read -r f; do [ -f "$f" ] && printf '%s\n' "$f"; done |
	xargs grep -H -o -E '^func Fuzz[A-Za-z0-9_]+\(f \*testing\.F\)' |
	sed -E 's#^(.*)/[^/]+_test\.go:func (Fuzz[A-Za-z0-9_]+).*#./\1 \2#; s#^[^/]+_test\.go:func (Fuzz[A-Za-z0-9_]+).*#. \1#' |
	sort -u)
if [ -z "$targets" ]; then
	echo "fuzz.sh: found no fuzz targets" >&2
	exit 1
fi
echo "fuzz: $(echo "$targets" | wc -l) targets, $fuzztime each, two at a time"
export go fuzztime report testreport
echo "$targets" | xargs -P 2 -L 1 bash -c '
	pkg=$0 target=$1
	out="$report/fuzz-$(echo "${pkg#./}" | tr / -)-$target.json"
	# A package of a nested module (pluginapi) is tested from its module.
	mod=${pkg#./} dir=.
	while [ "$mod" != "." ] && [ -n "$mod" ]; do
		if [ -f "$mod/go.mod" ]; then dir=$mod; break; fi
		[ "$mod" = "${mod%/*}" ] && break
		mod=${mod%/*}
	done
	rel=./${pkg#./$dir}; rel=${rel%/}; [ "$dir" = . ] && rel=$pkg
	case "$testreport" in /*) ;; *) testreport=$PWD/$testreport ;; esac
	case "$out" in /*) ;; *) out=$PWD/$out ;; esac
	if (cd "$dir" && "$testreport" run -o "$out" -- "$go" test -json -run="^$" -fuzz="^$target\$" -fuzztime="$fuzztime" -parallel=1 "$rel"); then
		echo "fuzz: ok   $target $pkg"
	else
		echo "fuzz: FAIL $target $pkg (events in $out)"
		exit 255
	fi'
