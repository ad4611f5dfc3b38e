package daemon

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"log/slog"
	"math/big"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/dex-agents/dex-agent-worker/internal/config"
	"github.com/dex-agents/dex-agent-worker/internal/events"

	"github.com/dex-agents/dex-agent-worker/internal/testpeer"
)

// selfSigned writes a new self-signed certificate for 127.0.0.1 and
// localhost, and its key, to dir; it returns their paths and a pool that
// trusts the certificate.
func selfSigned(t *testing.T, dir string) (certFile, keyFile string, roots *x509.CertPool) {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	tmpl := &x509.Certificate{
		SerialNumber:          big.NewInt(1),
		Subject:               pkix.Name{CommonName: "dex-agent-worker test"},
		NotBefore:             time.Now().Add(-time.Hour),
		NotAfter:              time.Now().Add(time.Hour),
		KeyUsage:              x509.KeyUsageDigitalSignature | x509.KeyUsageCertSign,
		ExtKeyUsage:           []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth},
		BasicConstraintsValid: true,
		IsCA:                  true,
		IPAddresses:           []net.IP{net.IPv4(127, 0, 0, 1)},
		DNSNames:              []string{"localhost"},
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		t.Fatal(err)
	}
	keyDER, err := x509.MarshalPKCS8PrivateKey(key)
	if err != nil {
		t.Fatal(err)
	}
	certFile, keyFile = filepath.Join(dir, "server.pem"), filepath.Join(dir, "server.key")
	if err := os.WriteFile(certFile, pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(keyFile, pem.EncodeToMemory(&pem.Block{Type: "PRIVATE KEY", Bytes: keyDER}), 0o600); err != nil {
		t.Fatal(err)
	}
	cert, err := x509.ParseCertificate(der)
	if err != nil {
		t.Fatal(err)
	}
	roots = x509.NewCertPool()
	roots.AddCert(cert)
	return certFile, keyFile, roots
}

// startHTTP serves only the daemon's HTTP API (no engine, no worker: the
// routes that need neither answer) for the config in yaml, relative paths
// resolved against dir.
func startHTTP(t *testing.T, yaml, dir string) (*Daemon, *testpeer.SyncBuffer) {
	t.Helper()
	cfg, err := config.LoadBytes([]byte(yaml), dir)
	if err != nil {
		t.Fatal(err)
	}
	logs := &testpeer.SyncBuffer{}
	logger := slog.New(slog.NewTextHandler(logs, nil))
	d := &Daemon{log: logger, broker: events.NewMemoryBroker(events.MemoryOptions{})}
	if err := d.serveHTTP(cfg, Options{}, logger); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(d.Stop)
	return d, logs
}

const httpTestConfig = `
plugins: {p: {command: x}}
agents: [{name: a, flow_type: A, runner: p}]
http:
  listen: %s
  auth: {tokens: [{token: "0123456789abcdef0123"}]}
`

// TestServeHTTPOverTLS serves the API with http.tls (paths relative to
// the config) and calls it with a client that trusts the certificate.
func TestServeHTTPOverTLS(t *testing.T) {
	dir := t.TempDir()
	_, _, roots := selfSigned(t, dir)
	cfg := strings.Replace(httpTestConfig, "%s", "127.0.0.1:0", 1) + "  tls: {cert_file: server.pem, key_file: server.key}\n"
	d, logs := startHTTP(t, cfg, dir)
	if d.http.ReadHeaderTimeout <= 0 || d.http.IdleTimeout <= 0 {
		t.Errorf("the HTTP server has read header timeout %v and idle timeout %v", d.http.ReadHeaderTimeout, d.http.IdleTimeout)
	}

	trusting := &http.Client{Transport: &http.Transport{TLSClientConfig: &tls.Config{RootCAs: roots}}}
	resp, err := trusting.Get("https://" + d.HTTPAddress() + "/healthz")
	if err != nil {
		t.Fatalf("HTTPS with the certificate trusted: %v", err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK || resp.TLS == nil {
		t.Errorf("HTTPS: %s, TLS %v", resp.Status, resp.TLS != nil)
	}
	// A client that does not trust it refuses the server.
	untrusting := &http.Client{Transport: &http.Transport{TLSClientConfig: &tls.Config{RootCAs: x509.NewCertPool()}}}
	if resp, err := untrusting.Get("https://" + d.HTTPAddress() + "/healthz"); err == nil {
		resp.Body.Close()
		t.Error("a client without the certificate in its roots connected")
	}
	// Plain HTTP is not served.
	if resp, err := http.Get("http://" + d.HTTPAddress() + "/healthz"); err == nil {
		resp.Body.Close()
		if resp.StatusCode == http.StatusOK {
			t.Error("plain HTTP was served on the HTTPS port")
		}
	}
	if strings.Contains(logs.String(), "WARN") {
		t.Errorf("warned about an HTTPS listener:\n%s", logs)
	}

	// A missing file is a clear start error.
	cfgMissing, err := config.LoadBytes([]byte(strings.Replace(httpTestConfig, "%s", "127.0.0.1:0", 1)+"  tls: {cert_file: missing.pem, key_file: server.key}\n"), dir)
	if err != nil {
		t.Fatal(err)
	}
	bad := &Daemon{log: slog.New(slog.DiscardHandler), broker: events.NewMemoryBroker(events.MemoryOptions{})}
	err = bad.serveHTTP(cfgMissing, Options{}, bad.log)
	if err == nil || !strings.Contains(err.Error(), "http.tls: load the HTTPS certificate "+filepath.Join(dir, "missing.pem")) {
		t.Errorf("missing certificate: %v", err)
	}
}

// TestServeHTTPWarnsWhenExposedWithoutTLS checks the warning for plain
// HTTP beyond loopback, and its absence on loopback.
func TestServeHTTPWarnsWhenExposedWithoutTLS(t *testing.T) {
	const warning = "the HTTP API listens beyond loopback without TLS"
	for listen, want := range map[string]bool{"127.0.0.1:0": false, "0.0.0.0:0": true} {
		_, logs := startHTTP(t, strings.Replace(httpTestConfig, "%s", listen, 1), t.TempDir())
		if got := strings.Contains(logs.String(), "level=WARN msg=\""+warning); got != want {
			t.Errorf("listen %s: warned %v, want %v; logs:\n%s", listen, got, want, logs)
		}
	}
}
