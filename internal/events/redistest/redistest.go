// Package redistest starts a real Redis server for tests: Debian's
// redis-server 7.0, on a free loopback port, with its files in a temporary
// directory and no persistence (a restart loses every key, like a Redis
// that lost its data), stopped when the test ends.
//
//	srv := redistest.Start(t)          // skips (or fails under CI=true) without redis-server
//	rdb := redis.NewClient(&redis.Options{Addr: srv.Addr()})
//	srv.Restart(t)                     // the same port, empty
//
// Install the binary with `make test-peers`.
package redistest

import (
	"bufio"
	"fmt"
	"io"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/dex-agents/dex-agent-worker/internal/testpeer"
)

// Binary is the server binary; the environment variable
// DEX_REDISTEST_SERVER overrides it.
const Binary = "/usr/bin/redis-server"

func binary() string {
	if b := os.Getenv("DEX_REDISTEST_SERVER"); b != "" {
		return b
	}
	return Binary
}

// Available reports whether redis-server is installed.
func Available() bool {
	fi, err := os.Stat(binary())
	return err == nil && fi.Mode()&0o111 != 0
}

// Server is a running Redis server.
type Server struct {
	// Port is the TCP port on 127.0.0.1.
	Port int

	dir  string
	mu   sync.Mutex
	cmd  *exec.Cmd
	done chan struct{}
	log  strings.Builder
}

// Addr is host:port.
func (s *Server) Addr() string { return "127.0.0.1:" + strconv.Itoa(s.Port) }

// URL is the redis:// URL of the server.
func (s *Server) URL() string { return "redis://" + s.Addr() + "/0" }

// Start runs a server; t's cleanup stops it. Without the binary it calls
// testpeer.Missing, which skips t (or fails it under CI=true).
func Start(t testing.TB) *Server {
	t.Helper()
	if !Available() {
		testpeer.Missing(t, "redis-server ("+binary()+")", "make test-peers")
	}
	dir := t.TempDir()
	var lastErr error
	for range 3 {
		port, err := testpeer.FreePort()
		if err != nil {
			t.Fatalf("redistest: %v", err)
		}
		s := &Server{Port: port, dir: dir}
		if lastErr = s.start(); lastErr == nil {
			t.Cleanup(s.Stop)
			return s
		}
	}
	t.Fatalf("redistest: %v", lastErr)
	return nil
}

func (s *Server) start() error {
	cmd := exec.Command(binary(), "--port", strconv.Itoa(s.Port), "--bind", "127.0.0.1",
		"--dir", s.dir, "--save", "", "--appendonly", "no", "--daemonize", "no",
		"--protected-mode", "yes", "--loglevel", "notice", "--logfile", "")
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL, Setpgid: true}
	out, err := cmd.StdoutPipe()
	if err != nil {
		return err
	}
	cmd.Stderr = cmd.Stdout
	if err := cmd.Start(); err != nil {
		return fmt.Errorf("starting redis-server: %w", err)
	}
	done := make(chan struct{})
	ready := make(chan struct{})
	var once sync.Once
	go func() {
		sc := bufio.NewScanner(out)
		for sc.Scan() {
			line := sc.Text()
			s.mu.Lock()
			s.log.WriteString(line + "\n")
			s.mu.Unlock()
			if strings.Contains(line, "Ready to accept connections") {
				once.Do(func() { close(ready) })
			}
		}
		_, _ = io.Copy(io.Discard, out)
	}()
	go func() {
		_ = cmd.Wait()
		close(done)
	}()
	s.mu.Lock()
	s.cmd, s.done = cmd, done
	s.mu.Unlock()
	select {
	case <-ready:
		return nil
	case <-done:
		s.mu.Lock()
		defer s.mu.Unlock()
		return fmt.Errorf("redis-server exited at start:\n%s", s.log.String())
	case <-time.After(20 * time.Second):
		_ = cmd.Process.Kill()
		<-done
		s.mu.Lock()
		defer s.mu.Unlock()
		return fmt.Errorf("redis-server not ready after 20s:\n%s", s.log.String())
	}
}

// Stop kills the server (SIGKILL: it keeps nothing anyway).
func (s *Server) Stop() {
	s.mu.Lock()
	cmd, done := s.cmd, s.done
	s.cmd = nil
	s.mu.Unlock()
	if cmd == nil {
		return
	}
	_ = cmd.Process.Kill()
	<-done
}

// Restart kills the server and starts an empty one on the same port.
func (s *Server) Restart(t testing.TB) {
	t.Helper()
	s.Stop()
	var err error
	for range 50 {
		if err = s.start(); err == nil {
			return
		}
		time.Sleep(100 * time.Millisecond) // the port may take a moment to free
	}
	t.Fatalf("redistest: restart: %v", err)
}
