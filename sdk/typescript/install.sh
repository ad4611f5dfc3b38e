#!/usr/bin/env bash
# Builds the TypeScript runner SDK (@dex-agents/runner): its npm packages,
# pinned by package-lock.json (npm ci), into node_modules/; runner.proto
# copied from the repository's proto/ into the package; the TypeScript
# types generated from it (proto-loader-gen-types, into src/gen/, never
# edited by hand); then src/ and test/ compiled to dist/. Idempotent: with
# the pinned packages installed it only builds again.
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")"
if ! command -v node >/dev/null 2>&1 || ! command -v npm >/dev/null 2>&1; then
	echo "sdk/typescript: node and npm are missing: install Node.js 20 or later (apt-get install nodejs npm)" >&2
	exit 1
fi
major=$(node -p 'process.versions.node.split(".")[0]')
if [ "$major" -lt 20 ]; then
	echo "sdk/typescript: node $(node --version) is too old: install Node.js 20 or later" >&2
	exit 1
fi
want=$(sha256sum package-lock.json | cut -d' ' -f1)
have=$(cat node_modules/.dex-lock-sha256 2>/dev/null || true)
if [ "$have" != "$want" ]; then
	npm ci --no-audit --no-fund --loglevel=error
	echo "$want" > node_modules/.dex-lock-sha256
fi
# Built already from these very sources? Then leave dist/ alone: tests of
# other packages may be loading it.
stamp=$(cat package-lock.json tsconfig.json ../../proto/dex/runner/v1/runner.proto proto/*.proto \
	$(find src test fixtures -name '*.ts' -not -path 'src/gen/*' | sort) | sha256sum | cut -d' ' -f1)
if [ "$(cat dist/.dex-build-sha256 2>/dev/null || true)" = "$stamp" ]; then
	echo "sdk/typescript is up to date: @dex-agents/runner $(node -p 'require("./package.json").version')"
	exit 0
fi
rm -rf dist src/gen proto/dex
mkdir -p proto/dex/runner/v1
cp ../../proto/dex/runner/v1/runner.proto proto/dex/runner/v1/runner.proto
node node_modules/@grpc/proto-loader/build/bin/proto-loader-gen-types.js \
	--keepCase --longs=Number --enums=String --defaults --oneofs --grpcLib=@grpc/grpc-js \
	--includeComments --outDir=src/gen -I proto -- dex/runner/v1/runner.proto >/dev/null
node node_modules/typescript/bin/tsc -p tsconfig.json
echo "$stamp" > dist/.dex-build-sha256
echo "sdk/typescript built: @dex-agents/runner $(node -p 'require("./package.json").version') (@grpc/grpc-js $(node -p 'require("./node_modules/@grpc/grpc-js/package.json").version'))"
