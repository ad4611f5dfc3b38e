// Package runnerpb holds the Go code generated from
// proto/dex/runner/v1/runner.proto (protoc-gen-go and protoc-gen-go-grpc,
// pinned as go tool dependencies). Regenerate it with proto/generate.sh;
// never edit it by hand. Only pluginapi uses it: runner authors see Go
// types, never these messages.
package runnerpb
