package session

import (
	"go/ast"
	"go/parser"
	"go/token"
	"strconv"
	"testing"
)

// pureFiles hold the state machine; they must stay deterministic without
// help from the workflow SDK.
var pureFiles = []string{"apply.go", "state.go", "commands.go", "snapshot.go", "timefmt.go", "steps.go", "policy.go", "texts.go", "window.go", "compaction.go", "interrupts.go"}

func TestPureFilesImportNoClockEngineOrRandomness(t *testing.T) {
	forbidden := map[string]bool{
		"time": true, "math/rand": true, "math/rand/v2": true, "crypto/rand": true, "os": true,
		"go.temporal.io/sdk/workflow": true, "go.temporal.io/sdk/client": true, "go.temporal.io/sdk/temporal": true,
		"sync": true, "net/http": true,
	}
	fset := token.NewFileSet()
	for _, name := range pureFiles {
		f, err := parser.ParseFile(fset, name, nil, parser.ImportsOnly)
		if err != nil {
			t.Fatal(err)
		}
		for _, imp := range f.Imports {
			path, _ := strconv.Unquote(imp.Path.Value)
			if forbidden[path] {
				t.Errorf("%s imports %s", name, path)
			}
		}
	}
}

func TestPureFilesNeverRangeOverAMap(t *testing.T) {
	// A cheap syntactic check: no range statement in the pure files ranges
	// over an expression whose declared type is a map. The state machine has
	// no map-typed fields except PolicySet.Policies, which it never ranges.
	fset := token.NewFileSet()
	for _, name := range pureFiles {
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
