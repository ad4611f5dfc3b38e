package session

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"testing"
)

// builtInToolsFile is the built-in tool definitions as the SDKs of other
// languages read them (a runner whose framework fixes its tools when the
// agent is built, such as LangGraph, offers them from this file).
var builtInToolsFile = filepath.Join("..", "..", "sdk", "python", "src", "dex_runner", "builtin_tools.json")

// TestBuiltInToolsFile: the SDKs' copy of the built-in definitions is the
// session's, byte for byte (go test -update-wire rewrites it).
func TestBuiltInToolsFile(t *testing.T) {
	want, err := json.MarshalIndent(BuiltInToolDefinitions([]string{BuiltInAskUser, BuiltInDurableWait, BuiltInWriteTodos}), "", "  ")
	if err != nil {
		t.Fatal(err)
	}
	want = append(want, '\n')
	if *updateWire {
		if err := os.WriteFile(builtInToolsFile, want, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	got, err := os.ReadFile(builtInToolsFile)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(got, want) {
		t.Errorf("%s is not the session's built-in definitions; run go test ./internal/session -run TestBuiltInToolsFile -update-wire", builtInToolsFile)
	}
}
