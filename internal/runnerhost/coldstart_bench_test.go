package runnerhost

import (
	"context"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"testing"
	"time"
)

// BenchmarkColdStart measures a runner's cold start as the worker sees it:
// process launch, the go-plugin handshake over mutual TLS, and Info, until
// the plugin is ready for its first call. Go is the test plugin (a Go
// binary on pluginapi.Serve); Python is the Python SDK's echo runner
// (sdk/python, make test-peers), skipped when its virtualenv is missing.
// Compare the two in one run: make bench, or
// go test -run '^$' -bench ColdStart ./internal/runnerhost/.
func BenchmarkColdStart(b *testing.B) {
	sdk, _ := filepath.Abs(filepath.Join("..", "..", "sdk", "python"))
	python := filepath.Join(sdk, ".venv", "bin", "python")
	for _, bm := range []struct {
		name string
		spec PluginSpec
	}{
		{"Go", PluginSpec{Command: testPluginPath}},
		{"Python", PluginSpec{Command: python, Args: []string{filepath.Join(sdk, "tests", "echo_runner.py")}}},
	} {
		b.Run(bm.name, func(b *testing.B) {
			if _, err := os.Stat(bm.spec.Command); err != nil {
				b.Skipf("%s is missing (make test-peers)", bm.spec.Command)
			}
			ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
			defer cancel()
			for range b.N {
				h := New(slog.New(slog.NewTextHandler(io.Discard, nil)))
				spec := bm.spec
				spec.Name = "cold"
				if err := h.Launch(ctx, spec); err != nil {
					b.Fatal(err)
				}
				b.StopTimer()
				h.Close()
				b.StartTimer()
			}
		})
	}
}
