package archtest

import (
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// goEnv is the environment go list runs with: the test's own, without a
// workspace, so that the fixture module is listed alone.
func goEnv() []string {
	return append(os.Environ(), "GOWORK=off", "GOFLAGS=-mod=mod")
}

// TestModuleKeepsItsImportRules lists the whole module and fails with each
// broken rule, naming the import that breaks it.
func TestModuleKeepsItsImportRules(t *testing.T) {
	t.Parallel()
	root, err := filepath.Abs(filepath.Join("..", ".."))
	if err != nil {
		t.Fatal(err)
	}
	g, err := Load(root, append(os.Environ(), "GOWORK=off"), "./...")
	if err != nil {
		t.Fatal(err)
	}
	// The rules must apply to something: a renamed package would make a
	// rule pass by matching nothing.
	for _, r := range Rules {
		if !slices.ContainsFunc(keys(g), r.Applies) {
			t.Errorf("rule %q applies to no package of the module", r.Name)
		}
	}
	for _, v := range Check(g, Rules) {
		t.Error(v)
	}
}

// TestRulesCatchEachBadImport lists a fixture module that breaks every
// rule once and checks each is reported, with the offending import and the
// chain that reaches it.
func TestRulesCatchEachBadImport(t *testing.T) {
	t.Parallel()
	g, err := Load(filepath.Join("testdata", "bad"), goEnv(), "./...")
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, v := range Check(g, Rules) {
		got = append(got, v.String())
	}
	want := []string{
		"the core imports only wire and the runner contract's types: internal/session imports net/http",
		"the core imports only wire and the runner contract's types: internal/session imports internal/steps (through internal/wireconv)",
		"wire imports only the standard library: wire imports pluginapi/contract",
		"clients never import the core: client imports internal/sessionflow (through internal/httpapi)",
		"clients never import the core: httpclient imports internal/sessionflow (through client -> internal/httpapi)",
		"the HTTP client imports no engine SDK: httpclient imports client",
		"the API layer imports wire, not the core: internal/httpapi imports internal/sessionflow",
		"pluginapi imports no internal package of the worker: pluginapi imports internal/tracing",
		"plugins import only pluginapi: plugins/runner imports internal/config",
		"plugins import only pluginapi: plugins/runner imports internal/tracing (through pluginapi)",
	}
	for _, w := range want {
		if !slices.Contains(got, w) {
			t.Errorf("missing violation %q", w)
		}
	}
	for _, v := range got {
		if !slices.Contains(want, v) {
			t.Errorf("unexpected violation %q", v)
		}
	}
	if t.Failed() {
		t.Logf("reported:\n%s", strings.Join(got, "\n"))
	}
}

func keys(g Graph) []string {
	out := make([]string, 0, len(g))
	for p := range g {
		out = append(out, p)
	}
	return out
}
