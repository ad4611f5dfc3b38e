package devserver

import (
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

func TestReset(t *testing.T) {
	t.Parallel()
	write := func(path string) {
		t.Helper()
		if err := os.MkdirAll(filepath.Dir(path), 0o700); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(path, []byte("x"), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	names := func(dir string) []string {
		t.Helper()
		entries, err := os.ReadDir(dir)
		if err != nil {
			t.Fatal(err)
		}
		var out []string
		for _, e := range entries {
			out = append(out, e.Name())
		}
		return out
	}

	t.Run("a data dir is emptied", func(t *testing.T) {
		dir := t.TempDir()
		for _, f := range []string{dbFileName, dbFileName + "-wal", lockFileName, "messages.db", "orders.json", "sub/file"} {
			write(filepath.Join(dir, f))
		}
		if err := Reset(dir); err != nil {
			t.Fatal(err)
		}
		if got := names(dir); !slices.Equal(got, []string{lockFileName}) {
			t.Errorf("left %v, want the lock file alone", got)
		}
	})
	t.Run("a missing or empty dir is fine", func(t *testing.T) {
		if err := Reset(filepath.Join(t.TempDir(), "none")); err != nil {
			t.Error(err)
		}
		if err := Reset(t.TempDir()); err != nil {
			t.Error(err)
		}
	})
	t.Run("a dir without temporal.db is not touched", func(t *testing.T) {
		dir := t.TempDir()
		write(filepath.Join(dir, "notes.txt"))
		err := Reset(dir)
		if err == nil || !strings.Contains(err.Error(), "not a dev data dir; nothing was removed") {
			t.Fatalf("Reset = %v", err)
		}
		if got := names(dir); !slices.Equal(got, []string{"notes.txt"}) {
			t.Errorf("left %v", got)
		}
	})
	t.Run("a dir in use is not touched", func(t *testing.T) {
		dir := t.TempDir()
		write(filepath.Join(dir, dbFileName))
		lock, err := acquireDirLock(filepath.Join(dir, lockFileName))
		if err != nil {
			t.Fatal(err)
		}
		defer lock.release()
		err = Reset(dir)
		if err == nil || !strings.Contains(err.Error(), "in use by another dev server") || !strings.Contains(err.Error(), "stop it first") {
			t.Fatalf("Reset = %v", err)
		}
		if got := names(dir); !slices.Contains(got, dbFileName) {
			t.Errorf("left %v, want %s kept", got, dbFileName)
		}
	})
}
