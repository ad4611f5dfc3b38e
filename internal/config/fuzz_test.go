package config

import (
	"bytes"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"
)

// FuzzLoadBytes checks that any input gives either a valid config or a
// *ValidationError that names at least one problem, and never panics.
func FuzzLoadBytes(f *testing.F) {
	files, err := filepath.Glob("testdata/*.yml")
	if err != nil {
		f.Fatal(err)
	}
	for _, file := range files {
		data, err := os.ReadFile(file)
		if err != nil {
			f.Fatal(err)
		}
		f.Add(data)
	}
	f.Add([]byte("a: &a [*a]"))
	f.Add([]byte("<<: {temporal: {}}\nagents: [{<<: &x {name: a}, flow_type: A, runner: p}]\nplugins: {p: {command: x}}"))
	f.Fuzz(func(t *testing.T, data []byte) {
		cfg, err := LoadBytes(data, "/base")
		if err != nil {
			if cfg != nil {
				t.Fatal("LoadBytes returned both a config and an error")
			}
			var verr *ValidationError
			if !errors.As(err, &verr) || len(verr.Errors) == 0 {
				t.Fatalf("error %T %q is not a non-empty *ValidationError", err, err)
			}
			for _, line := range strings.Split(err.Error(), "\n") {
				if strings.TrimSpace(line) == "" {
					t.Fatalf("error has an empty line:\n%s", err)
				}
			}
			return
		}
		if err := cfg.Validate(); err != nil {
			t.Fatalf("LoadBytes returned a config that fails Validate: %v", err)
		}
		red, err := cfg.Redacted()
		if err != nil {
			t.Fatalf("Redacted: %v", err)
		}
		// Without hidden values, the resolved config loads back the same.
		if !bytes.Contains(red, []byte(redacted)) && utf8.Valid(data) {
			again, err := LoadBytes(red, "/base")
			if err != nil {
				t.Fatalf("loading the resolved config: %v\n%s", err, red)
			}
			if diff := cmp.Diff(cfg, again, cmpopts.IgnoreUnexported(Config{}), cmpopts.EquateEmpty()); diff != "" {
				t.Fatalf("resolved config loads differently (-first +again):\n%s\n%s", diff, red)
			}
		}
		for i := range cfg.Agents {
			a := &cfg.Agents[i]
			if _, err := a.RunnerConfigJSON(); err != nil {
				t.Fatalf("RunnerConfigJSON: %v", err)
			}
			if got, ok := cfg.Agent(a.Name); !ok || got != a {
				t.Fatalf("Agent(%q) did not find agents[%d]", a.Name, i)
			}
			if got, ok := cfg.AgentByFlowType(a.FlowType); !ok || got != a {
				t.Fatalf("AgentByFlowType(%q) did not find agents[%d]", a.FlowType, i)
			}
			if _, ok := cfg.Plugins[a.Runner]; !ok {
				t.Fatalf("agents[%d].runner %q names no plugin", i, a.Runner)
			}
		}
	})
}

// FuzzParseHeaders feeds OTEL-style header lists: ParseHeaders never
// panics, every key it returns is trimmed and non-empty, and an error never
// quotes the input (it may hold an API key).
func FuzzParseHeaders(f *testing.F) {
	for _, s := range []string{"", "a=b", "api-key=s3cr%3Dt, x = y ,,", "novalue", "=x", "a=%zz", "k=v=w"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		h, err := ParseHeaders(s)
		if err != nil {
			if len(s) > 8 && strings.Contains(err.Error(), s) {
				t.Fatalf("the error quotes the input: %v", err)
			}
			return
		}
		for k := range h {
			if k == "" || strings.TrimSpace(k) != k {
				t.Fatalf("key %q from %q", k, s)
			}
		}
	})
}
