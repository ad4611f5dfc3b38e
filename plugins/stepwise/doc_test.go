package stepwise

import (
	"os"
	"os/exec"
	"strings"
	"testing"
)

// TestPackageDocExample keeps the package doc's plugin program identical to
// testdata/docexample/main.go, and type-checks that program.
func TestPackageDocExample(t *testing.T) {
	doc, err := os.ReadFile("doc.go")
	if err != nil {
		t.Fatal(err)
	}
	var b strings.Builder
	in := false
	for _, line := range strings.Split(string(doc), "\n") {
		switch {
		case strings.HasPrefix(line, "//\tpackage main"):
			in = true
		case in && line != "//" && !strings.HasPrefix(line, "//\t"):
			in = false
		}
		if in {
			b.WriteString(strings.TrimPrefix(strings.TrimPrefix(line, "//"), "\t") + "\n")
		}
	}
	want, err := os.ReadFile("testdata/docexample/main.go")
	if err != nil {
		t.Fatal(err)
	}
	if got := strings.TrimRight(b.String(), "\n") + "\n"; got != string(want) {
		t.Errorf("the package doc's program differs from testdata/docexample/main.go:\n%s", got)
	}
	if testing.Short() {
		return
	}
	if out, err := exec.Command("go", "vet", "./testdata/docexample").CombinedOutput(); err != nil {
		t.Errorf("go vet ./testdata/docexample: %v\n%s", err, out)
	}
}
