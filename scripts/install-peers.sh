#!/usr/bin/env bash
# Installs every real peer the tests run against (make test-peers): first
# the Debian packages that are missing, with one apt-get run, then each
# peer's own install.sh (npm packages pinned by package-lock.json, built
# examples), the npm ones side by side. Every step is idempotent: a second
# run with everything in place installs nothing. Run it as root, or with
# sudo available, on Debian.
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."

# Debian packages, by the file that tells whether each is installed.
declare -A debs=(
	[chromium]=/usr/bin/chromium
	[fonts-liberation]=/usr/share/fonts/truetype/liberation
	[postgresql-15]=/usr/lib/postgresql/15/bin/postgres
	[redis-server]=/usr/bin/redis-server
)
missing=()
for pkg in "${!debs[@]}"; do
	[ -e "${debs[$pkg]}" ] || missing+=("$pkg")
done
if [ ${#missing[@]} -gt 0 ]; then
	echo "install-peers: apt-get install ${missing[*]}"
	sudo=""
	if [ "$(id -u)" -ne 0 ]; then sudo="sudo"; fi
	export DEBIAN_FRONTEND=noninteractive
	$sudo apt-get update -qq
	$sudo apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
fi

# Each peer's own script, which checks (and, with the packages above in
# place, only checks) its Debian part and installs its npm part. The npm
# installs run side by side; a failure of any fails the whole run, with
# its output.
scripts=(
	internal/webui/browsertest/install.sh
	internal/testpeer/aimock/testdata/aimock/install.sh
	internal/transcript/pgtest/install.sh
	internal/mcpsource/testdata/install.sh
	internal/events/redistest/install.sh
	internal/e2e/testdata/aisdk/install.sh
	examples/useChat/install.sh
	examples/install-ts.sh
	sdk/python/install.sh
	internal/testpeer/smtp/install.sh
)
logs=$(mktemp -d)
trap 'rm -rf "$logs"' EXIT
pids=()
for s in "${scripts[@]}"; do
	bash "$s" >"$logs/$(echo "$s" | tr / _).log" 2>&1 &
	pids+=($!)
done
failed=0
for i in "${!scripts[@]}"; do
	log="$logs/$(echo "${scripts[$i]}" | tr / _).log"
	if wait "${pids[$i]}"; then
		tail -n 1 "$log" | sed "s#^#${scripts[$i]}: #"
	else
		echo "install-peers: ${scripts[$i]} failed:" >&2
		cat "$log" >&2
		failed=1
	fi
done
exit $failed
