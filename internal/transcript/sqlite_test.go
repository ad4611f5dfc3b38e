package transcript_test

import (
	"bytes"
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/dex-agents/dex-agent-worker/internal/transcript"
	"github.com/dex-agents/dex-agent-worker/internal/transcript/transcripttest"
)

func openSQLite(t testing.TB, path string) transcript.Store {
	t.Helper()
	s, err := transcript.Open(t.Context(), transcript.Options{Driver: transcript.DriverSQLite, Path: path})
	if err != nil {
		t.Fatalf("Open(%s): %v", path, err)
	}
	t.Cleanup(func() {
		if err := s.Close(); err != nil {
			t.Errorf("Close: %v", err)
		}
	})
	return s
}

func TestSQLite(t *testing.T) {
	transcripttest.Run(t, func(t *testing.T) transcript.Store {
		return openSQLite(t, filepath.Join(t.TempDir(), "messages.db"))
	})
}

// TestSQLiteReopen checks that what was stored survives closing and
// opening the file again, and that opening does not migrate twice.
func TestSQLiteReopen(t *testing.T) {
	ctx := t.Context()
	path := filepath.Join(t.TempDir(), "data", "messages.db") // the directory is created too
	s, err := transcript.Open(ctx, transcript.Options{Driver: transcript.DriverSQLite, Path: path})
	if err != nil {
		t.Fatal(err)
	}
	window := transcripttest.Messages(11, 5, 100)
	chunk := transcripttest.Messages(1, 10, 100)
	if err := s.PutWindow(ctx, "s1", transcript.Writer{Gen: 4, Attempt: 2}, window); err != nil {
		t.Fatal(err)
	}
	ref, err := s.PutChunk(ctx, "s1", chunk)
	if err != nil {
		t.Fatal(err)
	}
	blob, err := s.PutBlob(ctx, "s1", []byte("blob"))
	if err != nil {
		t.Fatal(err)
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}

	s = openSQLite(t, path)
	got, err := s.Window(ctx, "s1", 11, 15)
	if err != nil {
		t.Fatal(err)
	}
	if d := cmp.Diff(window, got); d != "" {
		t.Errorf("window after reopening (-want +got):\n%s", d)
	}
	if got, err := s.Chunk(ctx, "s1", 1); err != nil || !cmp.Equal(chunk, got) {
		t.Errorf("chunk after reopening: %v (equal %v)", err, cmp.Equal(chunk, got))
	}
	if refs, err := s.Chunks(ctx, "s1", 1, 100); err != nil || len(refs) != 1 || refs[0] != ref {
		t.Errorf("Chunks after reopening = %v, %v; want [%v]", refs, err, ref)
	}
	if b, err := s.Blob(ctx, "s1", blob); err != nil || string(b) != "blob" {
		t.Errorf("Blob after reopening = %q, %v", b, err)
	}
	// The writers survived too: the old attempt is still fenced.
	err = s.PutWindow(ctx, "s1", transcript.Writer{Gen: 4, Attempt: 1}, window)
	if !errors.Is(err, transcript.ErrFenced) {
		t.Errorf("an older attempt after reopening: %v, want ErrFenced", err)
	}
	if v := userVersion(t, path); v != 3 {
		t.Errorf("user_version = %d, want 3", v)
	}
}

func userVersion(t *testing.T, path string) int {
	t.Helper()
	db, err := sql.Open("sqlite", path+"?_pragma=query_only(1)")
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = db.Close() }()
	var v int
	if err := db.QueryRow("PRAGMA user_version").Scan(&v); err != nil {
		t.Fatal(err)
	}
	return v
}

// TestSQLiteFileModes checks that the database and its WAL files are the
// user's alone, and the directory Open creates too.
func TestSQLiteFileModes(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "new")
	path := filepath.Join(dir, "messages.db")
	s := openSQLite(t, path)
	if err := s.PutWindow(t.Context(), "s1", transcript.Writer{Gen: 1, Attempt: 1}, transcripttest.Messages(1, 1, 10)); err != nil {
		t.Fatal(err)
	}
	if fi, err := os.Stat(dir); err != nil || fi.Mode().Perm() != 0o700 {
		t.Errorf("the directory: %v, %v; want mode 0700", fi.Mode(), err)
	}
	entries, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, e := range entries {
		fi, err := e.Info()
		if err != nil {
			t.Fatal(err)
		}
		names = append(names, e.Name())
		if fi.Mode().Perm() != 0o600 {
			t.Errorf("%s has mode %v, want 0600", e.Name(), fi.Mode().Perm())
		}
	}
	if strings.Join(names, " ") != "messages.db messages.db-shm messages.db-wal" {
		t.Errorf("files = %q, want the database and its WAL files", names)
	}
}

// TestSQLiteSchemaNewer refuses a file whose schema a newer build wrote.
func TestSQLiteSchemaNewer(t *testing.T) {
	path := filepath.Join(t.TempDir(), "messages.db")
	db, err := sql.Open("sqlite", path)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := db.Exec("PRAGMA user_version = 99"); err != nil {
		t.Fatal(err)
	}
	if err := db.Close(); err != nil {
		t.Fatal(err)
	}
	_, err = transcript.Open(t.Context(), transcript.Options{Driver: transcript.DriverSQLite, Path: path})
	if err == nil || !strings.Contains(err.Error(), "schema version 99 is newer") {
		t.Errorf("Open of a newer schema: %v", err)
	}
}

// TestSQLiteCorrupt checks that damaged rows are reported, not returned.
func TestSQLiteCorrupt(t *testing.T) {
	ctx := t.Context()
	path := filepath.Join(t.TempDir(), "messages.db")
	s := openSQLite(t, path)
	if err := s.PutWindow(ctx, "s1", transcript.Writer{Gen: 1, Attempt: 1}, transcripttest.Messages(1, 3, 10)); err != nil {
		t.Fatal(err)
	}
	if _, err := s.PutChunk(ctx, "s1", transcripttest.Messages(10, 3, 10)); err != nil {
		t.Fatal(err)
	}
	db, err := sql.Open("sqlite", path+"?_pragma=busy_timeout(10000)")
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = db.Close() }()
	for _, stmt := range []string{
		`UPDATE transcript_window SET data = CAST('{"sequence":2,"role":"user","text":"x","extra":1}' AS BLOB) WHERE seq = 2`,
		`UPDATE transcript_window SET data = CAST('{"sequence":2,"role":"user","text":"x"}' AS BLOB) WHERE seq = 3`,
		`UPDATE transcript_chunks SET data = CAST('[{"sequence":10,"role":"user","text":"x"}] []' AS BLOB)`,
	} {
		if _, err := db.ExecContext(ctx, stmt); err != nil {
			t.Fatal(err)
		}
	}
	for _, tt := range []struct {
		name string
		read func() error
		want string
	}{
		{"unknown field", func() error { _, err := s.Window(ctx, "s1", 2, 2); return err }, "window row 2"},
		{"another sequence", func() error { _, err := s.Window(ctx, "s1", 3, 3); return err }, "window row 3 holds message 2"},
		{"data after the chunk", func() error { _, err := s.Chunk(ctx, "s1", 10); return err }, "chunk 10"},
	} {
		if err := tt.read(); !errors.Is(err, transcript.ErrCorrupt) || !strings.Contains(err.Error(), tt.want) {
			t.Errorf("%s: %v, want ErrCorrupt naming %q", tt.name, err, tt.want)
		}
	}
}

func TestOpenErrors(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	for _, tt := range []struct {
		name string
		o    transcript.Options
		want string
	}{
		{"unknown driver", transcript.Options{Driver: "mysql"}, `unknown driver "mysql"`},
		{"no path", transcript.Options{Driver: transcript.DriverSQLite}, "path is required"},
		{"question mark", transcript.Options{Driver: transcript.DriverSQLite, Path: filepath.Join(dir, "a?b.db")}, "must not contain '?'"},
		{"a directory", transcript.Options{Driver: transcript.DriverSQLite, Path: dir}, "not a regular file"},
		{"dsn for sqlite", transcript.Options{Driver: transcript.DriverSQLite, Path: "x.db", DSN: "postgres://u:pw@h/db"}, "a DSN is for driver postgres"},
		{"path for postgres", transcript.Options{Driver: transcript.DriverPostgres, Path: "x.db"}, "a path is for driver sqlite"},
		{"no dsn", transcript.Options{Driver: transcript.DriverPostgres}, "the DSN is empty"},
	} {
		s, err := transcript.Open(ctx, tt.o)
		if err == nil {
			_ = s.Close()
			t.Errorf("%s: Open succeeded", tt.name)
			continue
		}
		if !strings.Contains(err.Error(), tt.want) {
			t.Errorf("%s: error %q does not say %q", tt.name, err, tt.want)
		}
		if strings.Contains(err.Error(), "pw@") {
			t.Errorf("%s: error shows the DSN: %v", tt.name, err)
		}
	}
	notSQLite := filepath.Join(dir, "text.db")
	if err := os.WriteFile(notSQLite, []byte(strings.Repeat("not a database\n", 100)), 0o600); err != nil {
		t.Fatal(err)
	}
	if s, err := transcript.Open(ctx, transcript.Options{Driver: transcript.DriverSQLite, Path: notSQLite}); err == nil {
		_ = s.Close()
		t.Error("Open of a text file succeeded")
	}
}

// TestSQLiteMigratesAVersion2File opens a file that an older worker made
// (schema version 2, before forks) with a chunk in it: the chunk is read
// back, and it can be shared by a fork.
func TestSQLiteMigratesAVersion2File(t *testing.T) {
	path := filepath.Join(t.TempDir(), "messages.db")
	db, err := sql.Open("sqlite", path)
	if err != nil {
		t.Fatal(err)
	}
	for _, m := range transcript.SQLiteMigrations[:2] {
		for _, stmt := range m {
			if _, err := db.Exec(stmt); err != nil {
				t.Fatal(err)
			}
		}
	}
	msgs := transcripttest.Messages(1, 3, 20)
	// One chunk of one message, written as version 2 wrote it: a JSON
	// array without HTML escaping.
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(msgs[0]); err != nil {
		t.Fatal(err)
	}
	chunk := "[" + strings.TrimSuffix(buf.String(), "\n") + "]"
	if _, err := db.Exec(`INSERT INTO transcript_chunks (session, first_seq, last_seq, count, bytes, digest, data) VALUES ('old', 1, 1, 1, ?, x'00', ?)`, len(chunk), []byte(chunk)); err != nil {
		t.Fatal(err)
	}
	if _, err := db.Exec("PRAGMA user_version = 2"); err != nil {
		t.Fatal(err)
	}
	if err := db.Close(); err != nil {
		t.Fatal(err)
	}
	s := openSQLite(t, path)
	if v := userVersion(t, path); v != 3 {
		t.Errorf("user_version = %d, want 3", v)
	}
	if err := s.PutWindow(t.Context(), "old", transcript.Writer{Gen: 1, Attempt: 1}, msgs[1:]); err != nil {
		t.Fatal(err)
	}
	r, err := s.Fork(t.Context(), "new", "old", 3)
	if err != nil {
		t.Fatal(err)
	}
	if r.Fork.Through != 1 || len(r.Tail) != 2 {
		t.Errorf("fork of a migrated file = %+v", r)
	}
	got, err := transcript.Read(t.Context(), s, "new", 1, 2, 3)
	if err != nil {
		t.Fatal(err)
	}
	if d := cmp.Diff(msgs, got); d != "" {
		t.Errorf("the fork's transcript (-want +got):\n%s", d)
	}
}
