package devserver

import (
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/dex-agents/dex-agent-worker/internal/testpeer"
)

// TestDataDirModes checks that a new data dir is 0700 and that the SQLite
// database, its WAL and shared-memory files, the lock and every other file
// the server writes there are 0600; an existing dir that others may enter
// gets a warning and keeps its mode.
func TestDataDirModes(t *testing.T) {
	t.Parallel()
	dir := filepath.Join(t.TempDir(), "a", "data")
	s := startTestServer(t, Options{DataDir: dir})
	dial(t, s).Close() // a connection, so the server has written through the WAL
	fi, err := os.Stat(dir)
	if err != nil {
		t.Fatal(err)
	}
	if got := fi.Mode().Perm(); got != 0o700 {
		t.Errorf("data dir mode = %v, want 0700", got)
	}
	entries, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, e := range entries {
		info, err := e.Info()
		if err != nil {
			t.Fatal(err)
		}
		names = append(names, e.Name())
		if got := info.Mode().Perm(); got != 0o600 {
			t.Errorf("%s mode = %v, want 0600", e.Name(), got)
		}
	}
	for _, want := range []string{"temporal.db", "temporal.db-wal", "temporal.db-shm", "temporal.db.lock"} {
		if !strings.Contains(" "+strings.Join(names, " ")+" ", " "+want+" ") {
			t.Errorf("data dir holds %q, no %s", names, want)
		}
	}
	if err := s.Stop(); err != nil {
		t.Fatal(err)
	}

	t.Run("existing dir open to others", func(t *testing.T) {
		loose := t.TempDir()
		if err := os.Chmod(loose, 0o755); err != nil {
			t.Fatal(err)
		}
		var logs testpeer.SyncBuffer
		s := startTestServer(t, Options{DataDir: loose, Logger: slog.New(slog.NewTextHandler(&logs, nil))})
		_ = s.Stop()
		want := `level=WARN msg="the data dir is open to other users; it holds every session's conversation" data_dir=` + loose + ` mode=-rwxr-xr-x fix="chmod 700 ` + loose + `"`
		if !strings.Contains(logs.String(), want) {
			t.Errorf("log lacks\n%s\nlog:\n%s", want, logs.String())
		}
		if fi, err := os.Stat(loose); err != nil || fi.Mode().Perm() != 0o755 {
			t.Errorf("the existing dir's mode changed: %v, %v", fi.Mode(), err)
		}
	})
}
