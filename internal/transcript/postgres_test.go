package transcript_test

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"sync"
	"testing"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"

	"github.com/dex-agents/dex-agent-worker/internal/transcript"
	"github.com/dex-agents/dex-agent-worker/internal/transcript/pgtest"
	"github.com/dex-agents/dex-agent-worker/internal/transcript/transcripttest"
)

func openPostgres(t testing.TB, dsn string) transcript.Store {
	t.Helper()
	s, err := transcript.Open(t.Context(), transcript.Options{Driver: transcript.DriverPostgres, DSN: dsn})
	if err != nil {
		t.Fatalf("Open: %v", err)
	}
	t.Cleanup(func() {
		if err := s.Close(); err != nil {
			t.Errorf("Close: %v", err)
		}
	})
	return s
}

// TestPostgres runs the suite and the PostgreSQL cases against one real
// server, with a new database for each case.
func TestPostgres(t *testing.T) {
	srv := pgtest.Start(t)
	t.Run("Suite", func(t *testing.T) {
		transcripttest.Run(t, func(t *testing.T) transcript.Store {
			return openPostgres(t, srv.CreateDatabase(t, ""))
		})
	})
	t.Run("ConcurrentOpen", func(t *testing.T) { testPostgresConcurrentOpen(t, srv) })
	t.Run("Reopen", func(t *testing.T) { testPostgresReopen(t, srv) })
	t.Run("SchemaNewer", func(t *testing.T) { testPostgresSchemaNewer(t, srv) })
	t.Run("Corrupt", func(t *testing.T) { testPostgresCorrupt(t, srv) })
	t.Run("DSNHidden", func(t *testing.T) { testPostgresDSNHidden(t, srv) })
}

// testPostgresConcurrentOpen opens one new database from several workers at
// once: the schema is created once and every open succeeds.
func testPostgresConcurrentOpen(t *testing.T, srv *pgtest.Server) {
	dsn := srv.CreateDatabase(t, "")
	const workers = 8
	stores := make([]transcript.Store, workers)
	errs := make([]error, workers)
	var wg sync.WaitGroup
	for i := range workers {
		wg.Go(func() {
			stores[i], errs[i] = transcript.Open(t.Context(), transcript.Options{Driver: transcript.DriverPostgres, DSN: dsn})
		})
	}
	wg.Wait()
	for i, err := range errs {
		if err != nil {
			t.Errorf("worker %d: Open: %v", i, err)
			continue
		}
		t.Cleanup(func() { _ = stores[i].Close() })
	}
	if t.Failed() {
		return
	}
	// Each worker writes through its own pool; all see one store.
	for i, s := range stores {
		msgs := transcripttest.Messages(int64(i+1), 1, 10)
		if err := s.PutWindow(t.Context(), "shared", transcript.Writer{Gen: int64(i + 1), Attempt: 1}, msgs); err != nil {
			t.Fatal(err)
		}
	}
	got, err := stores[0].Window(t.Context(), "shared", 1, workers)
	if err != nil || len(got) != workers {
		t.Errorf("Window of the rows every worker wrote: %d rows, %v", len(got), err)
	}
	if v := pgVersion(t, dsn); v != 3 {
		t.Errorf("schema version = %d, want 3", v)
	}
}

func pgExec(t *testing.T, dsn, sql string) {
	t.Helper()
	conn, err := pgx.Connect(t.Context(), dsn)
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = conn.Close(context.WithoutCancel(t.Context())) }()
	if _, err := conn.Exec(t.Context(), sql); err != nil {
		t.Fatalf("%s: %v", sql, err)
	}
}

func pgVersion(t *testing.T, dsn string) int {
	t.Helper()
	conn, err := pgx.Connect(t.Context(), dsn)
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = conn.Close(context.WithoutCancel(t.Context())) }()
	var rows, v int
	if err := conn.QueryRow(t.Context(), "SELECT count(*), max(version) FROM transcript_schema").Scan(&rows, &v); err != nil {
		t.Fatal(err)
	}
	if rows != 1 {
		t.Errorf("transcript_schema has %d rows, want 1", rows)
	}
	return v
}

func testPostgresReopen(t *testing.T, srv *pgtest.Server) {
	ctx := t.Context()
	dsn := srv.CreateDatabase(t, "")
	s, err := transcript.Open(ctx, transcript.Options{Driver: transcript.DriverPostgres, DSN: dsn})
	if err != nil {
		t.Fatal(err)
	}
	msgs := transcripttest.Messages(1, 4, 100)
	if err := s.PutWindow(ctx, "s1", transcript.Writer{Gen: 2, Attempt: 1}, msgs); err != nil {
		t.Fatal(err)
	}
	if _, err := s.PutChunk(ctx, "s1", msgs); err != nil {
		t.Fatal(err)
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	s = openPostgres(t, dsn)
	if got, err := s.Window(ctx, "s1", 1, 4); err != nil || len(got) != 4 {
		t.Errorf("Window after reopening: %d rows, %v", len(got), err)
	}
	if got, err := s.Chunk(ctx, "s1", 1); err != nil || len(got) != 4 {
		t.Errorf("Chunk after reopening: %d messages, %v", len(got), err)
	}
	if err := s.PutWindow(ctx, "s1", transcript.Writer{Gen: 1, Attempt: 9}, msgs); !errors.Is(err, transcript.ErrFenced) {
		t.Errorf("an older Step after reopening: %v, want ErrFenced", err)
	}
	if v := pgVersion(t, dsn); v != 3 {
		t.Errorf("schema version = %d, want 3", v)
	}
}

func testPostgresSchemaNewer(t *testing.T, srv *pgtest.Server) {
	dsn := srv.CreateDatabase(t, "")
	openPostgres(t, dsn)
	pgExec(t, dsn, "UPDATE transcript_schema SET version = 99")
	_, err := transcript.Open(t.Context(), transcript.Options{Driver: transcript.DriverPostgres, DSN: dsn})
	if err == nil || !strings.Contains(err.Error(), "schema version 99 is newer") {
		t.Errorf("Open of a newer schema: %v", err)
	}
}

func testPostgresCorrupt(t *testing.T, srv *pgtest.Server) {
	ctx := t.Context()
	dsn := srv.CreateDatabase(t, "")
	s := openPostgres(t, dsn)
	if err := s.PutWindow(ctx, "s1", transcript.Writer{Gen: 1, Attempt: 1}, transcripttest.Messages(1, 2, 10)); err != nil {
		t.Fatal(err)
	}
	if _, err := s.PutChunk(ctx, "s1", transcripttest.Messages(10, 3, 10)); err != nil {
		t.Fatal(err)
	}
	pgExec(t, dsn, `UPDATE transcript_window SET data = convert_to('{"sequence":2,"role":"user","text":1}', 'UTF8') WHERE seq = 2`)
	pgExec(t, dsn, `UPDATE transcript_chunks SET count = 4`)
	if _, err := s.Window(ctx, "s1", 1, 2); !errors.Is(err, transcript.ErrCorrupt) || !strings.Contains(err.Error(), "window row 2") {
		t.Errorf("a row of the wrong type: %v, want ErrCorrupt", err)
	}
	if _, err := s.Chunk(ctx, "s1", 10); !errors.Is(err, transcript.ErrCorrupt) || !strings.Contains(err.Error(), "its index says") {
		t.Errorf("a chunk that does not match its index: %v, want ErrCorrupt", err)
	}
}

// testPostgresDSNHidden checks that a DSN with a password shows up in no
// error and no log line, whether it fails to parse, to connect, or opens.
func testPostgresDSNHidden(t *testing.T, srv *pgtest.Server) {
	const password = "pw-LEAKED-7f3a"
	var logs strings.Builder
	logger := slog.New(slog.NewTextHandler(&logs, &slog.HandlerOptions{Level: slog.LevelDebug}))
	refused := fmt.Sprintf("postgres://postgres:%s@127.0.0.1:1/none?sslmode=disable&connect_timeout=5", password)
	for _, dsn := range []string{
		fmt.Sprintf("postgres://postgres:%s@127.0.0.1:notaport/db", password),
		fmt.Sprintf("postgres://postgres:%s@[::1/db", password),
		"host=127.0.0.1 password=" + password + " port=x",
		refused,
		fmt.Sprintf("host=127.0.0.1 port=%d user=nobody password=%s dbname=none sslmode=disable", srv.Port, password),
	} {
		o := transcript.Options{Driver: transcript.DriverPostgres, DSN: dsn, Logger: logger}
		s, err := transcript.Open(t.Context(), o)
		if err == nil {
			_ = s.Close()
			t.Errorf("Open(%q) succeeded", dsn)
			continue
		}
		if strings.Contains(err.Error(), password) {
			t.Errorf("the error shows the password: %v", err)
		}
		t.Logf("error: %v", err)
		var connectErr *pgconn.ConnectError
		var parseErr *pgconn.ParseConfigError
		if errors.As(err, &connectErr) || errors.As(err, &parseErr) {
			t.Errorf("the error wraps pgx's error, whose fields hold the DSN: %#v", err)
		}
		logger.Info("open failed", "options", o, "err", err)
	}
	// A DSN that opens, with a password the server does not check.
	dsn := strings.Replace(srv.CreateDatabase(t, ""), "postgres@", "postgres:"+password+"@", 1)
	o := transcript.Options{Driver: transcript.DriverPostgres, DSN: dsn, Logger: logger}
	openPostgres(t, o.DSN)
	logger.Info("opened", "options", o)
	for _, shown := range []string{fmt.Sprint(o), fmt.Sprintf("%+v", o), fmt.Sprintf("%#v", o), logs.String()} {
		if strings.Contains(shown, password) {
			t.Errorf("the options show the password: %s", shown)
		}
	}
	if !strings.Contains(logs.String(), "<secret>") {
		t.Errorf("the log does not show <secret> for the DSN:\n%s", logs.String())
	}
}
