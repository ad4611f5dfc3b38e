// Package pgtest starts a real PostgreSQL server for tests: Debian's
// PostgreSQL 15 binaries, a fresh cluster in a temporary directory, on a
// free loopback port, stopped when the test ends.
//
//	srv := pgtest.Start(t)                  // skips (or fails under CI=true) without PostgreSQL
//	dsn := srv.CreateDatabase(t, "")        // a fresh database with a unique name
//	pool, err := pgxpool.New(ctx, dsn)
//
// Start one server per top-level test (initdb takes a second or two) and a
// database per subtest. The cluster trusts local connections and runs
// without fsync: it is for tests only. PostgreSQL refuses to run as root,
// so under root the server runs as the postgres system user, which the
// Debian package creates. Install the binaries with `make test-peers`.
package pgtest

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"os"
	"os/exec"
	"os/user"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/dex-agents/dex-agent-worker/internal/testpeer"
)

// BinDir is where Debian installs the PostgreSQL 15 server binaries. The
// environment variable DEX_PGTEST_BINDIR overrides it.
const BinDir = "/usr/lib/postgresql/15/bin"

// Server is a running PostgreSQL server.
type Server struct {
	// Port is the TCP port on 127.0.0.1.
	Port int
	// User is the superuser, who connects without a password.
	User string

	dir  string // the temporary directory: data/, sockets/, the log
	cmd  *exec.Cmd
	done chan struct{} // closed when the server process has exited
	log  *logBuffer
	seq  atomic.Int64
}

// binDir returns the directory of the server binaries.
func binDir() string {
	if d := os.Getenv("DEX_PGTEST_BINDIR"); d != "" {
		return d
	}
	return BinDir
}

// Available reports whether the PostgreSQL server binaries are installed.
func Available() bool {
	for _, b := range []string{"initdb", "postgres"} {
		if fi, err := os.Stat(filepath.Join(binDir(), b)); err != nil || fi.Mode()&0o111 == 0 {
			return false
		}
	}
	return true
}

// Start initializes a cluster in a new temporary directory and starts a
// server on it; t's cleanup stops it and removes the directory. Without
// the binaries it calls testpeer.Missing, which skips t (or fails it under
// CI=true).
func Start(t testing.TB) *Server {
	t.Helper()
	if !Available() {
		testpeer.Missing(t, "PostgreSQL 15 ("+binDir()+")", "make test-peers")
	}
	cred, uid, gid, err := serverCredential()
	if err != nil {
		t.Fatalf("pgtest: %v", err)
	}
	// Not t.TempDir: its parents are 0700 root, where the postgres user
	// could not reach.
	dir, err := os.MkdirTemp("", "pgtest-")
	if err != nil {
		t.Fatalf("pgtest: %v", err)
	}
	t.Cleanup(func() { _ = os.RemoveAll(dir) })
	data, sockets := filepath.Join(dir, "data"), filepath.Join(dir, "sockets")
	for _, d := range []string{data, sockets} {
		if err := os.Mkdir(d, 0o700); err != nil {
			t.Fatalf("pgtest: %v", err)
		}
	}
	if cred != nil {
		for _, d := range []string{dir, data, sockets} {
			if err := os.Chown(d, uid, gid); err != nil {
				t.Fatalf("pgtest: %v", err)
			}
		}
	}
	const superuser = "postgres"
	initdb := exec.Command(filepath.Join(binDir(), "initdb"), "-D", data, "-U", superuser,
		"--auth=trust", "--encoding=UTF8", "--locale=C", "--no-sync")
	initdb.Env = serverEnv()
	initdb.SysProcAttr = &syscall.SysProcAttr{Credential: cred}
	if out, err := initdb.CombinedOutput(); err != nil {
		t.Fatalf("pgtest: initdb: %v\n%s", err, out)
	}

	// A port that was free a moment ago may be taken by the time the
	// server binds it: try a few.
	var lastErr error
	for range 3 {
		port, err := testpeer.FreePort()
		if err != nil {
			t.Fatalf("pgtest: %v", err)
		}
		s := &Server{Port: port, User: superuser, dir: dir}
		if lastErr = s.start(cred, data, sockets); lastErr == nil {
			t.Cleanup(func() {
				if err := s.stop(); err != nil {
					t.Errorf("pgtest: %v", err)
				}
			})
			return s
		}
	}
	t.Fatalf("pgtest: %v", lastErr)
	return nil
}

// serverCredential returns the credential to run the server with: nil
// when not root, else the postgres system user's.
func serverCredential() (*syscall.Credential, int, int, error) {
	if os.Geteuid() != 0 {
		return nil, 0, 0, nil
	}
	u, err := user.Lookup("postgres")
	if err != nil {
		return nil, 0, 0, fmt.Errorf("running as root, and there is no postgres user to run the server as (install the postgresql package): %w", err)
	}
	uid, err1 := strconv.Atoi(u.Uid)
	gid, err2 := strconv.Atoi(u.Gid)
	if err1 != nil || err2 != nil {
		return nil, 0, 0, fmt.Errorf("the postgres user has uid %q and gid %q", u.Uid, u.Gid)
	}
	return &syscall.Credential{Uid: uint32(uid), Gid: uint32(gid)}, uid, gid, nil
}

// serverEnv is the environment of initdb and the server: messages in
// English (the start-up check reads them), no inherited PG* settings.
func serverEnv() []string {
	env := []string{"LC_ALL=C", "LANG=C"}
	for _, kv := range os.Environ() {
		if strings.HasPrefix(kv, "PATH=") {
			env = append(env, kv)
		}
	}
	return env
}

// readyLine is what the server logs once it accepts connections.
const readyLine = "database system is ready to accept connections"

// start runs the server and waits until its log says it is ready, or it
// exits.
func (s *Server) start(cred *syscall.Credential, data, sockets string) error {
	cmd := exec.Command(filepath.Join(binDir(), "postgres"), "-D", data,
		"-h", "127.0.0.1", "-p", strconv.Itoa(s.Port), "-k", sockets,
		"-c", "fsync=off", "-c", "synchronous_commit=off", "-c", "full_page_writes=off",
		"-c", "logging_collector=off", "-c", "lc_messages=C", "-c", "max_connections=100")
	cmd.Env = serverEnv()
	// Should the test binary die, SIGQUIT makes the server shut down at
	// once instead of outliving it.
	cmd.SysProcAttr = &syscall.SysProcAttr{Credential: cred, Pdeathsig: syscall.SIGQUIT, Setpgid: true}
	stderr, err := cmd.StderrPipe()
	if err != nil {
		return err
	}
	cmd.Stdout = io.Discard
	if err := cmd.Start(); err != nil {
		return fmt.Errorf("starting postgres: %w", err)
	}
	s.cmd, s.done, s.log = cmd, make(chan struct{}), &logBuffer{}
	ready := make(chan struct{})
	go func() {
		sc := bufio.NewScanner(stderr)
		sc.Buffer(make([]byte, 64<<10), 1<<20)
		signalled := false
		for sc.Scan() {
			line := sc.Text()
			s.log.add(line)
			if !signalled && strings.Contains(line, readyLine) {
				signalled = true
				close(ready)
			}
		}
		_, _ = io.Copy(io.Discard, stderr)
		_ = cmd.Wait()
		close(s.done)
	}()
	timeout := time.NewTimer(time.Minute)
	defer timeout.Stop()
	select {
	case <-ready:
		return nil
	case <-s.done:
		return fmt.Errorf("postgres exited before it was ready (%v):\n%s", cmd.ProcessState, s.log)
	case <-timeout.C:
		_ = cmd.Process.Kill()
		<-s.done
		return fmt.Errorf("postgres was not ready after a minute:\n%s", s.log)
	}
}

// stop shuts the server down fast (SIGINT: disconnect clients, then a
// clean stop) and waits for it to exit.
func (s *Server) stop() error {
	_ = s.cmd.Process.Signal(syscall.SIGINT)
	timeout := time.NewTimer(30 * time.Second)
	defer timeout.Stop()
	select {
	case <-s.done:
		return nil
	case <-timeout.C:
		_ = syscall.Kill(-s.cmd.Process.Pid, syscall.SIGKILL)
		<-s.done
		return fmt.Errorf("postgres did not stop within 30s; killed it:\n%s", s.log)
	}
}

// DSN returns the connection string of database db on the server.
func (s *Server) DSN(db string) string {
	return fmt.Sprintf("postgres://%s@127.0.0.1:%d/%s?sslmode=disable", s.User, s.Port, db)
}

// CreateDatabase creates a database and returns its DSN. An empty name
// makes a unique one. The database goes away with the server.
func (s *Server) CreateDatabase(t testing.TB, name string) string {
	t.Helper()
	if name == "" {
		name = fmt.Sprintf("test_%d", s.seq.Add(1))
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	conn, err := pgx.Connect(ctx, s.DSN("postgres"))
	if err != nil {
		t.Fatalf("pgtest: %v\n%s", err, s.log)
	}
	defer func() { _ = conn.Close(ctx) }()
	if _, err := conn.Exec(ctx, "CREATE DATABASE "+pgx.Identifier{name}.Sanitize()); err != nil {
		t.Fatalf("pgtest: create database %s: %v", name, err)
	}
	return s.DSN(name)
}

// Log returns the server's log so far.
func (s *Server) Log() string { return s.log.String() }

// logBuffer keeps the last lines of the server's log.
type logBuffer struct {
	mu    sync.Mutex
	lines []string
}

func (b *logBuffer) add(line string) {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.lines = append(b.lines, line)
	if len(b.lines) > 200 {
		b.lines = b.lines[len(b.lines)-200:]
	}
}

func (b *logBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return strings.Join(b.lines, "\n")
}
