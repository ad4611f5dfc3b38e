package model

import (
	"encoding/json"
	"os"
	"strings"
	"testing"

	"go.yaml.in/yaml/v3"
)

// TestDocsModelBlock loads the model block of docs/models.md, the one
// snippet of runner_config it shows, so it stays a configuration Validate
// accepts.
func TestDocsModelBlock(t *testing.T) {
	data, err := os.ReadFile("../../../docs/models.md")
	if err != nil {
		t.Fatal(err)
	}
	_, rest, ok := strings.Cut(string(data), "```yaml\nmodel:\n")
	if !ok {
		t.Fatal("docs/models.md has no yaml block that starts with model:")
	}
	block, _, ok := strings.Cut("model:\n"+rest, "```")
	if !ok {
		t.Fatal("the model block of docs/models.md is not closed")
	}
	var doc struct {
		Model map[string]any `yaml:"model"`
	}
	if err := yaml.Unmarshal([]byte(block), &doc); err != nil {
		t.Fatalf("the model block of docs/models.md does not parse: %v\n%s", err, block)
	}
	raw, err := json.Marshal(doc.Model)
	if err != nil {
		t.Fatal(err)
	}
	cfg, err := ParseConfig(raw)
	if err != nil {
		t.Fatalf("ParseConfig(the model block of docs/models.md): %v\n%s", err, block)
	}
	if err := cfg.Validate(); err != nil {
		t.Errorf("the model block of docs/models.md is not valid: %v\n%s", err, block)
	}
}
