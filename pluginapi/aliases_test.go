package pluginapi_test

import (
	"os"
	"os/exec"
	"path/filepath"
	"testing"
)

// TestAliasesAreGenerated fails when package contract changed and
// contract_aliases.go was not generated again (go generate ./pluginapi).
func TestAliasesAreGenerated(t *testing.T) {
	out := filepath.Join(t.TempDir(), "aliases.go")
	cmd := exec.Command("go", "run", "./internal/gencontract", "./contract", out)
	if msg, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("gencontract: %v\n%s", err, msg)
	}
	want, err := os.ReadFile(out)
	if err != nil {
		t.Fatal(err)
	}
	got, err := os.ReadFile("contract_aliases.go")
	if err != nil {
		t.Fatal(err)
	}
	if string(got) != string(want) {
		t.Error("contract_aliases.go is stale: run go generate ./pluginapi")
	}
}
