#!/usr/bin/env bash
# Installs the Python runner SDK for its tests and for runner plugins in
# this repository: a virtualenv in .venv with the pinned packages of
# requirements-dev.txt, the gRPC stubs generated from the repository's
# proto/dex/runner/v1/runner.proto (the one source of the contract) into
# src/dex_runner/_gen, and the SDK itself, editable. Idempotent: it skips
# what is up to date.
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")"
python=${PYTHON:-python3}
if ! command -v "$python" >/dev/null 2>&1; then
	echo "sdk/python: $python is missing: install Python 3.11 or later (apt-get install python3 python3-venv)" >&2
	exit 1
fi
if ! "$python" -c 'import sys; sys.exit(0 if sys.version_info >= (3, 11) else 1)'; then
	echo "sdk/python: $("$python" --version 2>&1) is too old: install Python 3.11 or later" >&2
	exit 1
fi
if ! "$python" -c 'import venv, ensurepip' >/dev/null 2>&1; then
	echo "sdk/python: $python has no venv module: install python3-venv" >&2
	exit 1
fi
want=$(cat requirements-dev.txt pyproject.toml | sha256sum | cut -d' ' -f1)
if [ "$(cat .venv/.dex-requirements-sha256 2>/dev/null || true)" != "$want" ]; then
	rm -rf .venv
	"$python" -m venv .venv
	.venv/bin/pip install --quiet --disable-pip-version-check --no-deps -r requirements-dev.txt
	echo "$want" > .venv/.dex-requirements-sha256
fi
proto=../../proto/dex/runner/v1/runner.proto
stamp=$(cat "$proto" requirements-dev.txt | sha256sum | cut -d' ' -f1)
if [ "$(cat src/dex_runner/_gen/.dex-proto-sha256 2>/dev/null || true)" != "$stamp" ]; then
	rm -rf src/dex_runner/_gen
	mkdir -p src/dex_runner/_gen
	.venv/bin/python -m grpc_tools.protoc -I ../../proto \
		--python_out=src/dex_runner/_gen --grpc_python_out=src/dex_runner/_gen \
		--mypy_out=src/dex_runner/_gen --plugin=protoc-gen-mypy=.venv/bin/protoc-gen-mypy \
		--mypy_grpc_out=src/dex_runner/_gen --plugin=protoc-gen-mypy_grpc=.venv/bin/protoc-gen-mypy_grpc \
		dex/runner/v1/runner.proto 2> >(grep -v "^Writing mypy" >&2)
	# The generated modules import each other as "dex.runner.v1": make them
	# a package under dex_runner._gen.
	for d in src/dex_runner/_gen src/dex_runner/_gen/dex src/dex_runner/_gen/dex/runner src/dex_runner/_gen/dex/runner/v1; do
		touch "$d/__init__.py"
	done
	sed -i 's/^from dex\.runner\.v1 import/from dex_runner._gen.dex.runner.v1 import/' src/dex_runner/_gen/dex/runner/v1/*.py src/dex_runner/_gen/dex/runner/v1/*.pyi
	echo "$stamp" > src/dex_runner/_gen/.dex-proto-sha256
fi
if ! .venv/bin/python -c 'import dex_runner' >/dev/null 2>&1; then
	.venv/bin/pip install --quiet --disable-pip-version-check --no-deps --no-build-isolation -e .
fi
echo "sdk/python is installed: $(.venv/bin/python --version) in sdk/python/.venv, dex-runner $(.venv/bin/python -c 'import dex_runner; print(dex_runner.__version__)')"
