package pgtest

import (
	"context"
	"testing"

	"github.com/jackc/pgx/v5"
)

// TestStart starts a server, creates two databases and checks that they
// are separate and that the server answers as the superuser.
func TestStart(t *testing.T) {
	srv := Start(t)
	ctx := t.Context()
	a, b := srv.CreateDatabase(t, ""), srv.CreateDatabase(t, "named")
	if a == b {
		t.Fatalf("two databases with one DSN %q", a)
	}
	exec := func(dsn, sql string) {
		t.Helper()
		conn, err := pgx.Connect(ctx, dsn)
		if err != nil {
			t.Fatalf("connect %s: %v\n%s", dsn, err, srv.Log())
		}
		defer func() { _ = conn.Close(context.WithoutCancel(ctx)) }()
		if _, err := conn.Exec(ctx, sql); err != nil {
			t.Fatalf("%s on %s: %v", sql, dsn, err)
		}
	}
	exec(a, "CREATE TABLE only_in_a (x int)")
	exec(b, "CREATE TABLE only_in_a (x int)") // would fail if b were a
	conn, err := pgx.Connect(ctx, b)
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = conn.Close(context.WithoutCancel(ctx)) }()
	var version string
	var super bool
	if err := conn.QueryRow(ctx, "SELECT current_setting('server_version'), rolsuper FROM pg_roles WHERE rolname = current_user").Scan(&version, &super); err != nil {
		t.Fatal(err)
	}
	if !super {
		t.Errorf("user %s is not a superuser", srv.User)
	}
	t.Logf("PostgreSQL %s on port %d", version, srv.Port)
}
