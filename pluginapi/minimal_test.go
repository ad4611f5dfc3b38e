package pluginapi_test

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// maxMinimalRunnerBytes bounds a minimal runner built as releases are
// (-ldflags "-s -w").
const maxMinimalRunnerBytes = 20 << 20

// TestMinimalRunnerLinksNoEngineAndStaysSmall builds the smallest useful
// runner (internal/minimalrunner) from this module alone and checks what a
// runner author's binary gets: no Temporal server or SDK, no worker
// package, no OpenTelemetry SDK or exporter, and at most 20 MiB.
func TestMinimalRunnerLinksNoEngineAndStaysSmall(t *testing.T) {
	t.Parallel()
	deps, err := exec.Command("go", "list", "-deps", "./internal/minimalrunner").Output()
	if err != nil {
		t.Fatalf("go list: %v", err)
	}
	for _, p := range strings.Fields(string(deps)) {
		switch {
		case strings.HasPrefix(p, "go.temporal.io/"),
			strings.HasPrefix(p, "go.opentelemetry.io/otel/sdk"),
			strings.HasPrefix(p, "go.opentelemetry.io/otel/exporters/"),
			strings.HasPrefix(p, "github.com/dex-agents/dex-agent-worker/") && !strings.HasPrefix(p, "github.com/dex-agents/dex-agent-worker/pluginapi"):
			t.Errorf("a minimal runner links %s", p)
		}
	}
	bin := filepath.Join(t.TempDir(), "minimalrunner")
	if out, err := exec.Command("go", "build", "-ldflags", "-s -w", "-o", bin, "./internal/minimalrunner").CombinedOutput(); err != nil {
		t.Fatalf("go build: %v\n%s", err, out)
	}
	fi, err := os.Stat(bin)
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("minimal runner: %d bytes (%.1f MiB)", fi.Size(), float64(fi.Size())/(1<<20))
	if fi.Size() > maxMinimalRunnerBytes {
		t.Errorf("a minimal runner is %d bytes, over %d", fi.Size(), maxMinimalRunnerBytes)
	}
}
