// Package archtest checks the module's import rules: which packages may
// depend on which, directly or through others. The rules keep the session
// core free of the engine, the plugin host, stores, brokers and HTTP, keep
// clients and the API layer off the core, keep plugins on the runner
// contract, and keep the runner SDK free of the worker's internals.
//
// Check reads the import graph with go list and returns every broken rule,
// each naming the package, the import that breaks the rule and the chain
// of imports that leads to it.
package archtest

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os/exec"
	"slices"
	"strings"
)

// Module is the module path the rules are written for.
const Module = "github.com/dex-agents/dex-agent-worker"

// Package is one package of the import graph.
type Package struct {
	ImportPath string
	Standard   bool
	Imports    []string
}

// Graph is an import graph: every package by its import path.
type Graph map[string]*Package

// Load lists the packages matched by patterns in dir, with everything they
// depend on (tests excluded), through go list.
func Load(dir string, env []string, patterns ...string) (Graph, error) {
	args := append([]string{"list", "-deps", "-json=ImportPath,Standard,Imports"}, patterns...)
	cmd := exec.Command("go", args...)
	cmd.Dir = dir
	cmd.Env = env
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		return nil, fmt.Errorf("go list in %s: %v: %s", dir, err, stderr.String())
	}
	g := Graph{}
	dec := json.NewDecoder(bytes.NewReader(out))
	for {
		var p Package
		if err := dec.Decode(&p); errors.Is(err, io.EOF) {
			break
		} else if err != nil {
			return nil, fmt.Errorf("go list output: %w", err)
		}
		g[p.ImportPath] = &p
	}
	return g, nil
}

// Violation is one broken rule.
type Violation struct {
	Rule    string
	Package string
	// Import is the package that breaks the rule, and Chain the imports
	// from Package to it (Package first, Import last).
	Import string
	Chain  []string
}

func (v Violation) String() string {
	via := ""
	if len(v.Chain) > 2 {
		via = " (through " + strings.Join(short(v.Chain[1:len(v.Chain)-1]), " -> ") + ")"
	}
	return fmt.Sprintf("%s: %s imports %s%s", v.Rule, shortPath(v.Package), shortPath(v.Import), via)
}

func shortPath(p string) string {
	if p == Module {
		return "."
	}
	return strings.TrimPrefix(p, Module+"/")
}

func short(ps []string) []string {
	out := make([]string, len(ps))
	for i, p := range ps {
		out[i] = shortPath(p)
	}
	return out
}

// Rule is one import rule: each package Applies to may not depend, directly
// or transitively, on a package Forbidden reports.
type Rule struct {
	Name    string
	Applies func(pkg string) bool
	// Forbidden reports whether the rule's packages may not import p.
	Forbidden func(g Graph, p string) bool
}

func under(prefix string) func(string) bool {
	return func(p string) bool { return p == Module+"/"+prefix || strings.HasPrefix(p, Module+"/"+prefix+"/") }
}

func is(path string) func(string) bool {
	return func(p string) bool { return p == Module+"/"+path }
}

func anyOf(fs ...func(string) bool) func(string) bool {
	return func(p string) bool { return slices.ContainsFunc(fs, func(f func(string) bool) bool { return f(p) }) }
}

// coreStandardForbidden are the standard packages the core may not use:
// the network, HTTP, processes, databases and concurrency belong to the
// glue and the Steps. (The clock and randomness are checked file by file
// in the core's own purity test.)
var coreStandardForbidden = []string{"net", "net/http", "os/exec", "database/sql", "sync", "math/rand", "math/rand/v2", "crypto/rand"}

// Rules are the module's import rules.
var Rules = []Rule{
	{
		Name:    "the core imports only wire and the runner contract's types",
		Applies: is("internal/session"),
		Forbidden: func(g Graph, p string) bool {
			if pk := g[p]; pk != nil && pk.Standard {
				return slices.Contains(coreStandardForbidden, p)
			}
			return !anyOf(is("wire"), is("pluginapi/contract"), is("internal/wireconv"))(p)
		},
	},
	{
		Name:    "wire imports only the standard library",
		Applies: is("wire"),
		Forbidden: func(g Graph, p string) bool {
			pk := g[p]
			return pk == nil || !pk.Standard
		},
	},
	{
		Name:    "clients never import the core",
		Applies: anyOf(under("client"), under("httpclient")),
		Forbidden: func(_ Graph, p string) bool {
			return anyOf(under("internal/session"), under("internal/sessionflow"), under("internal/steps"))(p)
		},
	},
	{
		Name:      "the HTTP client imports no engine SDK",
		Applies:   under("httpclient"),
		Forbidden: func(_ Graph, p string) bool { return strings.HasPrefix(p, "go.temporal.io/") || under("client")(p) },
	},
	{
		Name:    "the API layer imports wire, not the core",
		Applies: anyOf(under("internal/httpapi"), under("internal/uistream"), under("internal/chat")),
		Forbidden: func(_ Graph, p string) bool {
			return anyOf(under("internal/session"), under("internal/sessionflow"), under("internal/steps"))(p)
		},
	},
	{
		Name:      "pluginapi imports no internal package of the worker",
		Applies:   under("pluginapi"),
		Forbidden: func(_ Graph, p string) bool { return strings.HasPrefix(p, Module+"/") && !under("pluginapi")(p) },
	},
	{
		Name:    "plugins import only pluginapi",
		Applies: anyOf(under("plugins"), under("examples")),
		Forbidden: func(_ Graph, p string) bool {
			return strings.HasPrefix(p, Module+"/") && !anyOf(under("pluginapi"), under("plugins"), under("examples"))(p)
		},
	},
}

// Check returns every broken rule of g, in a stable order.
func Check(g Graph, rules []Rule) []Violation {
	var names []string
	for p := range g {
		names = append(names, p)
	}
	slices.Sort(names)
	var out []Violation
	for _, r := range rules {
		for _, p := range names {
			if !r.Applies(p) {
				continue
			}
			for _, chain := range forbiddenImports(g, p, func(q string) bool { return r.Forbidden(g, q) }) {
				out = append(out, Violation{Rule: r.Name, Package: p, Import: chain[len(chain)-1], Chain: chain})
			}
		}
	}
	return out
}

// forbiddenImports walks the imports of from breadth first and returns,
// for each forbidden package it reaches, the shortest chain to it. It does
// not walk past a forbidden package (what that one imports is its own
// rules' business), nor into the standard library.
func forbiddenImports(g Graph, from string, forbidden func(string) bool) [][]string {
	prev := map[string]string{from: ""}
	queue := []string{from}
	var out [][]string
	for len(queue) > 0 {
		p := queue[0]
		queue = queue[1:]
		pk := g[p]
		if pk == nil {
			continue
		}
		for _, q := range pk.Imports {
			if _, seen := prev[q]; seen {
				continue
			}
			prev[q] = p
			if forbidden(q) {
				chain := []string{q}
				for c := p; c != ""; c = prev[c] {
					chain = append([]string{c}, chain...)
				}
				out = append(out, chain)
				continue
			}
			// What the standard library uses inside (fmt uses sync) is
			// not the module's to rule.
			if qk := g[q]; qk != nil && qk.Standard {
				continue
			}
			queue = append(queue, q)
		}
	}
	return out
}
