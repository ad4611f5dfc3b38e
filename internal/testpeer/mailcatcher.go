package testpeer

import (
	"bufio"
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"fmt"
	"io"
	"math/big"
	"mime"
	"mime/multipart"
	"net"
	"net/mail"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"sort"
	"strconv"
	"strings"
	"testing"
	"time"
)

// MailCatcher is a real SMTP server (Python's aiosmtpd, installed by
// internal/testpeer/smtp/install.sh) on 127.0.0.1 that writes each message
// it accepts to Dir as <n>.eml.
type MailCatcher struct {
	Port int
	Dir  string
	// CAFile is the certificate of a catcher that requires STARTTLS, for
	// the sender's ca_file; "" for a plain one.
	CAFile string
}

// MailCatcherOptions choose how StartMailCatcher runs the server.
type MailCatcherOptions struct {
	// TLS requires STARTTLS, with a certificate for 127.0.0.1 made for
	// the test.
	TLS bool
	// Port is the port to listen on; 0 picks a free one.
	Port int
}

// StartMailCatcher starts a mail catcher that stops when the test ends. A
// missing aiosmtpd fails the test in CI and skips it elsewhere (Missing).
func StartMailCatcher(t testing.TB, o MailCatcherOptions) *MailCatcher {
	t.Helper()
	_, file, _, _ := runtime.Caller(0)
	peer := filepath.Join(filepath.Dir(file), "smtp")
	python := filepath.Join(peer, ".venv", "bin", "python")
	if _, err := os.Stat(python); err != nil {
		Missing(t, "the SMTP test server (aiosmtpd)", "make test-peers (or bash internal/testpeer/smtp/install.sh)")
	}
	dir := t.TempDir()
	mc := &MailCatcher{Port: o.Port, Dir: filepath.Join(dir, "mail")}
	if err := os.Mkdir(mc.Dir, 0o755); err != nil {
		t.Fatal(err)
	}
	if mc.Port == 0 {
		p, err := FreePort()
		if err != nil {
			t.Fatal(err)
		}
		mc.Port = p
	}
	args := []string{filepath.Join(peer, "catcher.py"), "--port", strconv.Itoa(mc.Port), "--dir", mc.Dir}
	if o.TLS {
		cert, key := filepath.Join(dir, "cert.pem"), filepath.Join(dir, "key.pem")
		writeSelfSigned(t, cert, key)
		args = append(args, "--tls", cert, key)
		mc.CAFile = cert
	}
	ctx, cancel := context.WithCancel(context.Background())
	cmd := exec.CommandContext(ctx, python, args...)
	cmd.Stderr = os.Stderr
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cancel(); _ = cmd.Wait() })
	ready := make(chan error, 1)
	go func() {
		line, err := bufio.NewReader(out).ReadString('\n')
		if err == nil && !strings.HasPrefix(line, "listening") {
			err = fmt.Errorf("the catcher said %q", line)
		}
		ready <- err
		_, _ = io.Copy(io.Discard, out)
	}()
	select {
	case err := <-ready:
		if err != nil {
			t.Fatalf("the mail catcher did not start: %v", err)
		}
	case <-time.After(30 * time.Second):
		t.Fatal("the mail catcher did not start in 30 s")
	}
	return mc
}

// DelayReplies makes the catcher wait d after it has written a message and
// before it answers the end of its data, so a test can stop the sender
// while the server holds the mail and has not said so.
func (m *MailCatcher) DelayReplies(t testing.TB, d time.Duration) {
	t.Helper()
	if err := os.WriteFile(filepath.Join(m.Dir, "delay-reply"), []byte(strconv.FormatFloat(d.Seconds(), 'f', -1, 64)), 0o644); err != nil {
		t.Fatal(err)
	}
}

// Mail is a message the catcher kept: its header and its parts by media
// type, decoded.
type Mail struct {
	Header mail.Header
	Parts  map[string]string
}

// Mails reads what the catcher received, in order.
func (m *MailCatcher) Mails(t testing.TB) []Mail {
	t.Helper()
	names, _ := filepath.Glob(filepath.Join(m.Dir, "*.eml"))
	number := func(name string) int {
		n, _ := strconv.Atoi(strings.TrimSuffix(filepath.Base(name), ".eml"))
		return n
	}
	sort.Slice(names, func(i, j int) bool { return number(names[i]) < number(names[j]) })
	var out []Mail
	for _, n := range names {
		out = append(out, readMail(t, n))
	}
	return out
}

func readMail(t testing.TB, path string) Mail {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	msg, err := mail.ReadMessage(f)
	if err != nil {
		t.Fatalf("%s: %v", path, err)
	}
	r := Mail{Header: msg.Header, Parts: map[string]string{}}
	_, params, err := mime.ParseMediaType(msg.Header.Get("Content-Type"))
	if err != nil {
		t.Fatalf("%s: content type: %v", path, err)
	}
	mr := multipart.NewReader(msg.Body, params["boundary"])
	for {
		p, err := mr.NextPart()
		if err == io.EOF {
			return r
		}
		if err != nil {
			t.Fatalf("%s: %v", path, err)
		}
		typ, _, _ := mime.ParseMediaType(p.Header.Get("Content-Type"))
		b, _ := io.ReadAll(p) // the reader decodes quoted-printable
		r.Parts[typ] = string(b)
	}
}

// Wait waits up to a minute for at least n mails and returns them all.
func (m *MailCatcher) Wait(t testing.TB, n int) []Mail {
	t.Helper()
	deadline := time.Now().Add(time.Minute)
	for {
		got := m.Mails(t)
		if len(got) >= n {
			return got
		}
		if time.Now().After(deadline) {
			t.Fatalf("the mail catcher got %d mail(s) in a minute, want %d", len(got), n)
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// writeSelfSigned writes a certificate for 127.0.0.1 and its key.
func writeSelfSigned(t testing.TB, certPath, keyPath string) {
	t.Helper()
	k, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	tmpl := &x509.Certificate{SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: "127.0.0.1"},
		IPAddresses: []net.IP{net.ParseIP("127.0.0.1")}, NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(24 * time.Hour),
		KeyUsage: x509.KeyUsageDigitalSignature | x509.KeyUsageCertSign, ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth},
		BasicConstraintsValid: true, IsCA: true}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &k.PublicKey, k)
	if err != nil {
		t.Fatal(err)
	}
	kb, err := x509.MarshalECPrivateKey(k)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(certPath, pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(keyPath, pem.EncodeToMemory(&pem.Block{Type: "EC PRIVATE KEY", Bytes: kb}), 0o600); err != nil {
		t.Fatal(err)
	}
}
