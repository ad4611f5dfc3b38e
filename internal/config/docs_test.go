package config

import (
	"os"
	"path/filepath"
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

	// The snippets of README.md and of every docs/*.md: whole configs
	// load as they are; a fragment (only events and http, say) loads with
	// pluginapi's plugin and agent (a fragment's plugins join pluginapi's).
	// Blocks of other YAML (runner_config, a model block) are skipped.
	t.Setenv("TEMPORAL_API_KEY", "tk-docs-example")
	t.Setenv("DEX_BUILD_ID", "docs-example-build")
	t.Setenv("SUPPORT_APP_TOKEN", "docs-example-token-0123456789")
	t.Setenv("DEX_OPERATOR_TOKEN", "docs-example-operator-token-0123456789")
	t.Setenv("BILLING_HOOK_TOKEN", "docs-example-hook-token")
	t.Setenv("TICKETS_TOKEN", "docs-example-tickets-token")
	t.Setenv("DEX_APPROVAL_KEY", "docs-example-approval-key-0123456789")
	t.Setenv("SMTP_PASSWORD", "docs-example-smtp-password")
	t.Setenv("OPS_HOOK_SECRET", "docs-example-hook-secret-0123456789")
	t.Setenv("SLACK_WEBHOOK_URL", "https://hooks.slack.com/services/T000/B000/XXXX")
	t.Setenv("DEX_LINK_KEY", "docs-example-link-key-0123456789abcdef0123456789")
	t.Setenv("DEX_REDIS_URL", "redis://localhost:6379/0")
	t.Setenv("DEX_EVENTS_TOKEN_KEY", "docs-example-events-token-key-0123456789")
	t.Setenv("DEX_MESSAGE_STORE_DSN", "postgres://dex:secret@localhost:5432/dex")
	var base map[string]any
	if err := yaml.Unmarshal([]byte(pluginapiDoc), &base); err != nil {
		t.Fatal(err)
	}
	files, err := filepath.Glob("../../docs/*.md")
	if err != nil {
		t.Fatal(err)
	}
	known := topLevelKeys()
	configs := map[string]int{}
	for _, path := range append([]string{"../../README.md"}, files...) {
		name := strings.TrimPrefix(path, "../../")
		for _, b := range markdownBlocks(t, path, "yaml") {
			var top map[string]any
			if err := yaml.Unmarshal([]byte(b.text), &top); err != nil {
				t.Errorf("%s:%d: the YAML block does not parse: %v", name, b.line, err)
				continue
			}
			isConfig := len(top) > 0
			for k := range top {
				isConfig = isConfig && known[k]
			}
			if !isConfig {
				continue
			}
			configs[name]++
			doc := []byte(b.text)
			if _, ok := top["agents"]; !ok {
				doc = withBase(t, base, top)
			}
			if _, err := LoadBytes(doc, "/etc/dex"); err != nil {
				t.Errorf("%s:%d: the config block does not load:\n%s\n%v", name, b.line, doc, err)
			}
		}
	}
	// configuration.md documents every key in config blocks; far fewer
	// means the extraction is broken.
	if n := configs["docs/configuration.md"]; n < 10 {
		t.Errorf("found %d config blocks in docs/configuration.md; the extraction is broken", n)
	}
	if len(configs) < 3 {
		t.Errorf("found config blocks in %d files (%v); the extraction is broken", len(configs), configs)
	}
}

// withBase completes a config fragment with base (a plugin and an agent):
// the fragment's top-level keys win, and its plugins join base's.
func withBase(t *testing.T, base, fragment map[string]any) []byte {
	t.Helper()
	doc := map[string]any{}
	for k, v := range base {
		doc[k] = v
	}
	for k, v := range fragment {
		if k == "plugins" {
			plugins := map[string]any{}
			for name, p := range base["plugins"].(map[string]any) {
				plugins[name] = p
			}
			for name, p := range v.(map[string]any) {
				plugins[name] = p
			}
			v = plugins
		}
		doc[k] = v
	}
	out, err := yaml.Marshal(doc)
	if err != nil {
		t.Fatal(err)
	}
	return out
}
