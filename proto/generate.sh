#!/usr/bin/env bash
# Regenerates pluginapi/internal/runnerpb from proto/dex/runner/v1/runner.proto.
#
# Needs only protoc (Debian: apt-get install protobuf-compiler) and the go
# command: protoc-gen-go and protoc-gen-go-grpc are `go tool` dependencies
# pinned in go.mod, so `go tool -n` builds them and prints their paths.
# The generated code is committed; a build never runs this script.
set -euo pipefail

export GOTOOLCHAIN="${GOTOOLCHAIN:-go1.27.3}"
cd "$(dirname "$0")/.."

protoc_gen_go="$(go tool -n protoc-gen-go)"
protoc_gen_go_grpc="$(go tool -n protoc-gen-go-grpc)"

protoc \
	--proto_path=proto \
	--plugin=protoc-gen-go="$protoc_gen_go" \
	--plugin=protoc-gen-go-grpc="$protoc_gen_go_grpc" \
	--go_out=. \
	--go_opt=module=github.com/dex-agents/dex-agent-worker \
	--go-grpc_out=. \
	--go-grpc_opt=module=github.com/dex-agents/dex-agent-worker \
	dex/runner/v1/runner.proto
