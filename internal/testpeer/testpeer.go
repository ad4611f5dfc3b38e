// Package testpeer handles tests that need a real outside peer (Chromium,
// the aimock model server, and later PostgreSQL, Redis, MCP servers). A
// missing peer fails the test in CI (CI=true), which installs every peer;
// elsewhere it skips the test and records the skip, so that `make test`
// ends by naming the skipped tests and the command that installs their
// peers. Nothing is skipped silently.
package testpeer

import (
	"fmt"
	"os"
	"testing"

	"github.com/dex-agents/dex-agent-worker/internal/freeport"
)

// SkippedFileEnv names the environment variable that holds the file where
// skips are recorded (make test sets it).
const SkippedFileEnv = "DEX_SKIPPED_PEERS_FILE"

// Missing reports that the peer what is missing: it fails t when CI=true,
// else records the skip and skips t. install is the command that installs
// the peer.
func Missing(t testing.TB, what, install string) {
	t.Helper()
	msg := fmt.Sprintf("%s is missing; install it with: %s", what, install)
	if os.Getenv("CI") == "true" {
		t.Fatalf("%s (CI=true: a missing test peer fails the run)", msg)
	}
	if path := os.Getenv(SkippedFileEnv); path != "" {
		if f, err := os.OpenFile(path, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644); err == nil {
			fmt.Fprintf(f, "%s: %s\n", t.Name(), msg)
			f.Close()
		}
	}
	t.Skipf("%s; CI=true makes this a failure", msg)
}

// FreePort returns a TCP port on 127.0.0.1 that was free a moment ago,
// for a peer server to listen on (try another if the server cannot bind
// it); this process never gets it twice (package freeport).
func FreePort() (int, error) { return freeport.Get() }
