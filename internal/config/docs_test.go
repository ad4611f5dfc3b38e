package config

import (
	"os"
	"reflect"
	"regexp"
	"strings"
	"testing"

	"go.yaml.in/yaml/v3"
)

// The docs' YAML snippets are loaded here, so an example can never drift
// from what the worker accepts.

// docBlock returns the indented block of the Go doc comment in path that
// follows the comment line containing marker (with one blank comment line
// between), without the comment markers.
func docBlock(t *testing.T, path, marker string) string {
	t.Helper()
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(string(data), "\n")
	for i, line := range lines {
		if !strings.HasPrefix(line, "//") || !strings.Contains(line, marker) {
			continue
		}
		var b strings.Builder
		j := i + 1
		for j < len(lines) && !strings.HasPrefix(lines[j], "//\t") {
			if lines[j] != "//" && !strings.HasPrefix(lines[j], "// ") {
				t.Fatalf("%s: no indented block after %q", path, marker)
			}
			j++
		}
		for ; j < len(lines) && strings.HasPrefix(lines[j], "//\t"); j++ {
			b.WriteString(strings.TrimPrefix(lines[j], "//\t") + "\n")
		}
		if b.Len() == 0 {
			t.Fatalf("%s: no indented block after %q", path, marker)
		}
		return b.String()
	}
	t.Fatalf("%s: no doc comment line contains %q", path, marker)
	return ""
}

// markdownBlock is one fenced code block of a Markdown file.
type markdownBlock struct {
	line int // of the opening fence
	text string
}

var fence = regexp.MustCompile("^```(\\w*)\\s*$")

// markdownBlocks returns the fenced blocks of language lang in path.
func markdownBlocks(t *testing.T, path, lang string) []markdownBlock {
	t.Helper()
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	var out []markdownBlock
	var cur *markdownBlock
	var curLang string
	for i, line := range strings.Split(string(data), "\n") {
		m := fence.FindStringSubmatch(line)
		switch {
		case m != nil && cur == nil:
			cur, curLang = &markdownBlock{line: i + 1}, m[1]
		case cur != nil && strings.TrimSpace(line) == "```":
			if curLang == lang {
				out = append(out, *cur)
			}
			cur = nil
		case cur != nil:
			cur.text += line + "\n"
		}
	}
	if cur != nil {
		t.Fatalf("%s:%d: the code block is not closed", path, cur.line)
	}
	return out
}

// topLevelKeys returns the keys of Config's YAML mapping.
func topLevelKeys() map[string]bool {
	keys := map[string]bool{}
	typ := reflect.TypeFor[Config]()
	for i := range typ.NumField() {
		if tag, _, _ := strings.Cut(typ.Field(i).Tag.Get("yaml"), ","); tag != "" && tag != "-" {
			keys[tag] = true
		}
	}
	return keys
}

func TestDocSnippetsLoad(t *testing.T) {
	pluginapiDoc := docBlock(t, "../../pluginapi/doc.go", "name it in the worker's config")
	for name, snippet := range map[string]string{
		"pluginapi/doc.go":       pluginapiDoc,
		"internal/config/doc.go": docBlock(t, "doc.go", "A minimal file declares"),
	} {
		cfg, err := LoadBytes([]byte(snippet), "/etc/dex")
		if err != nil {
			t.Errorf("the config snippet of %s does not load:\n%s\n%v", name, snippet, err)
			continue
		}
		if len(cfg.Agents) != 1 || len(cfg.Plugins) != 1 {
			t.Errorf("the snippet of %s has %d agents and %d plugins, want 1 and 1", name, len(cfg.Agents), len(cfg.Plugins))
		}
	}

	// The README's snippets: whole configs load as they are; a fragment
	// (only events and http, say) loads with pluginapi's plugin and agent.
	// Snippets of other YAML (runner_config) must parse.
	t.Setenv("TEMPORAL_API_KEY", "tk-readme-example")
	t.Setenv("DEX_BUILD_ID", "readme-example-build")
	t.Setenv("SUPPORT_APP_TOKEN", "readme-example-token-0123456789")
	t.Setenv("BILLING_HOOK_TOKEN", "readme-example-hook-token")
	t.Setenv("TICKETS_TOKEN", "readme-example-tickets-token")
	t.Setenv("DEX_APPROVAL_KEY", "readme-example-approval-key-0123456789")
	known := topLevelKeys()
	configs := 0
	for _, b := range markdownBlocks(t, "../../README.md", "yaml") {
		var top map[string]any
		if err := yaml.Unmarshal([]byte(b.text), &top); err != nil {
			t.Errorf("README.md:%d: the YAML block does not parse: %v", b.line, err)
			continue
		}
		isConfig := len(top) > 0
		for k := range top {
			isConfig = isConfig && known[k]
		}
		if !isConfig {
			continue
		}
		configs++
		doc := b.text
		if _, ok := top["agents"]; !ok {
			doc += pluginapiDoc
		}
		if _, err := LoadBytes([]byte(doc), "/etc/dex"); err != nil {
			t.Errorf("README.md:%d: the config block does not load:\n%s\n%v", b.line, doc, err)
		}
	}
	if configs < 2 {
		t.Errorf("found %d config blocks in README.md; the extraction is broken", configs)
	}
}
