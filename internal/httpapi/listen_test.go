package httpapi

import (
	"bufio"
	"errors"
	"io"
	"net"
	"net/http"
	"os"
	"testing"
	"time"
)

// serve runs srv on a loopback port until the test ends.
func serve(t *testing.T, srv *http.Server) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	go func() { _ = srv.Serve(ln) }()
	t.Cleanup(func() { _ = srv.Close() })
	return ln.Addr().String()
}

// waitClosed reads conn until the server closes it. The deadline only
// bounds a broken server; the assertion is that the server hangs up.
func waitClosed(t *testing.T, conn net.Conn, r io.Reader, what string) {
	t.Helper()
	if err := conn.SetReadDeadline(time.Now().Add(30 * time.Second)); err != nil {
		t.Fatal(err)
	}
	_, err := io.Copy(io.Discard, r)
	if errors.Is(err, os.ErrDeadlineExceeded) {
		t.Fatalf("%s: the server never closed the connection", what)
	}
}

// TestServerDisconnectsSlowClients checks the timeouts NewHTTPServer sets:
// a client whose headers never end (slowloris) and a keep-alive
// connection left idle are both disconnected.
func TestServerDisconnectsSlowClients(t *testing.T) {
	ok := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { _, _ = io.WriteString(w, "ok") })
	srv, err := NewHTTPServer(ok, ServerOptions{ReadHeaderTimeout: 100 * time.Millisecond, IdleTimeout: 100 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	addr := serve(t, srv)

	slow, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	defer slow.Close()
	if _, err := io.WriteString(slow, "GET /healthz HTTP/1.1\r\nHost: x\r\nX-Slow: "); err != nil {
		t.Fatal(err)
	}
	waitClosed(t, slow, slow, "headers that never end")

	idle, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	defer idle.Close()
	if _, err := io.WriteString(idle, "GET /healthz HTTP/1.1\r\nHost: x\r\n\r\n"); err != nil {
		t.Fatal(err)
	}
	br := bufio.NewReader(idle)
	resp, err := http.ReadResponse(br, nil)
	if err != nil || resp.StatusCode != http.StatusOK {
		t.Fatalf("a complete request: %v, %v", resp, err)
	}
	if _, err := io.Copy(io.Discard, resp.Body); err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	waitClosed(t, idle, br, "an idle keep-alive connection")
}

func TestNewHTTPServerDefaults(t *testing.T) {
	srv, err := NewHTTPServer(http.NotFoundHandler(), ServerOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if srv.ReadHeaderTimeout != DefaultReadHeaderTimeout || srv.IdleTimeout != DefaultIdleTimeout || srv.TLSConfig != nil || srv.ErrorLog == nil {
		t.Errorf("server: read header timeout %v, idle timeout %v, TLS %v, error log %v",
			srv.ReadHeaderTimeout, srv.IdleTimeout, srv.TLSConfig, srv.ErrorLog)
	}
	for _, o := range []ServerOptions{{CertFile: "c.pem"}, {KeyFile: "k.pem"}, {CertFile: "/nonexistent/c.pem", KeyFile: "/nonexistent/k.pem"}} {
		if _, err := NewHTTPServer(http.NotFoundHandler(), o); err == nil {
			t.Errorf("NewHTTPServer(%+v) succeeded", o)
		}
	}
}

func TestLoopbackOnly(t *testing.T) {
	for addr, want := range map[string]bool{
		"127.0.0.1:8080":   true,
		"127.10.0.3:8080":  true,
		"[::1]:8080":       true,
		"localhost:8080":   true,
		"LocalHost:8080":   true,
		"0.0.0.0:8080":     false,
		"[::]:8080":        false,
		":8080":            false,
		"192.168.1.5:8080": false,
		"[fe80::1]:8080":   false,
		"example.com:443":  false,
		"127.0.0.1":        false, // not host:port
	} {
		if got := LoopbackOnly(addr); got != want {
			t.Errorf("LoopbackOnly(%q) = %v, want %v", addr, got, want)
		}
	}
}
