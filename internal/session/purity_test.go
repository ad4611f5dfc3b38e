package session

import (
	"go/ast"
	"go/parser"
	"go/token"
	"os"
	"strconv"
	"strings"
	"testing"
)

// pureFiles returns the package's non-test Go files: the state machine,
// which must stay deterministic without help from the SDK. (The glue is
// package sessionflow.)
func pureFiles(t *testing.T) []string {
	t.Helper()
	entries, err := os.ReadDir(".")
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, e := range entries {
		name := e.Name()
		if strings.HasSuffix(name, ".go") && !strings.HasSuffix(name, "_test.go") {
			out = append(out, name)
		}
	}
	if len(out) < 10 {
		t.Fatalf("found %d pure files; the listing is broken", len(out))
	}
	return out
}

// forbiddenImports would make the state machine depend on the clock,
// randomness, the process, concurrency or the engine.
var forbiddenImports = map[string]bool{
	"math/rand": true, "math/rand/v2": true, "crypto/rand": true, "os": true,
	"go.temporal.io/sdk/workflow": true, "go.temporal.io/sdk/client": true, "go.temporal.io/sdk/temporal": true,
	"sync": true, "net/http": true,
}

// timeNames are what a pure file may use of package time: durations and
// their units, which are arithmetic. Reading the clock (Now, Since), waiting
// (Sleep, After, timers) or the time zone database is the glue's work.
var timeNames = map[string]bool{
	"Duration": true, "Nanosecond": true, "Microsecond": true, "Millisecond": true,
	"Second": true, "Minute": true, "Hour": true,
}

func TestPureFilesUseNoClockEngineOrRandomness(t *testing.T) {
	fset := token.NewFileSet()
	for _, name := range pureFiles(t) {
		f, err := parser.ParseFile(fset, name, nil, 0)
		if err != nil {
			t.Fatal(err)
		}
		timeAs := ""
		for _, imp := range f.Imports {
			path, _ := strconv.Unquote(imp.Path.Value)
			if forbiddenImports[path] {
				t.Errorf("%s imports %s; only the glue (package sessionflow) may", name, path)
			}
			if path == "time" {
				timeAs = "time"
				if imp.Name != nil {
					timeAs = imp.Name.Name
				}
			}
		}
		if timeAs == "" {
			continue
		}
		ast.Inspect(f, func(n ast.Node) bool {
			sel, ok := n.(*ast.SelectorExpr)
			if !ok {
				return true
			}
			if id, ok := sel.X.(*ast.Ident); ok && id.Name == timeAs && !timeNames[sel.Sel.Name] {
				t.Errorf("%s: uses time.%s at %s; a pure file may only compute with durations", name, sel.Sel.Name, fset.Position(sel.Pos()))
			}
			return true
		})
	}
}

func TestPureFilesNeverRangeOverAMap(t *testing.T) {
	// A cheap syntactic check: no range statement in the pure files ranges
	// over an expression whose declared type is a map. The state machine has
	// no map-typed fields except PolicySet.Policies, which it never ranges.
	fset := token.NewFileSet()
	for _, name := range pureFiles(t) {
		f, err := parser.ParseFile(fset, name, nil, 0)
		if err != nil {
			t.Fatal(err)
		}
		ast.Inspect(f, func(n ast.Node) bool {
			r, ok := n.(*ast.RangeStmt)
			if !ok {
				return true
			}
			if sel, ok := r.X.(*ast.SelectorExpr); ok && sel.Sel.Name == "Policies" {
				t.Errorf("%s: ranges over a map at %s", name, fset.Position(r.Pos()))
			}
			if _, ok := r.X.(*ast.CompositeLit); ok {
				t.Errorf("%s: ranges over a literal at %s", name, fset.Position(r.Pos()))
			}
			return true
		})
	}
}
