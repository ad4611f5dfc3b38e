#!/usr/bin/env bash
# Installs the SMTP server the notification tests send mail to: Python's
# aiosmtpd from PyPI, pinned in requirements.txt, in a virtualenv in .venv.
# Idempotent: it skips what is up to date.
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")"
python=${PYTHON:-python3}
if ! "$python" -c 'import venv, ensurepip' >/dev/null 2>&1; then
	echo "internal/testpeer/smtp: $python has no venv module: install python3-venv" >&2
	exit 1
fi
want=$(sha256sum requirements.txt | cut -d' ' -f1)
if [ "$(cat .venv/.dex-requirements-sha256 2>/dev/null || true)" != "$want" ]; then
	rm -rf .venv
	"$python" -m venv .venv
	.venv/bin/pip install --quiet --disable-pip-version-check --no-deps -r requirements.txt
	echo "$want" > .venv/.dex-requirements-sha256
fi
echo "internal/testpeer/smtp is installed: aiosmtpd $(.venv/bin/python -c 'import aiosmtpd; print(aiosmtpd.__version__)')"
