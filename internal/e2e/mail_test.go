package e2e

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
	"regexp"
	"sort"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/dex-agents/dex-agent-worker/agenttest"
	"github.com/dex-agents/dex-agent-worker/internal/testpeer"
	"github.com/dex-agents/dex-agent-worker/wire"
)

// mailCatcher is a real SMTP server (Python's aiosmtpd) on 127.0.0.1 that
// requires STARTTLS with a certificate this test made, and writes each
// message to Dir as <n>.eml.
type mailCatcher struct {
	Port   int
	Dir    string
	CAFile string
}

func startMailCatcher(t *testing.T) *mailCatcher {
	t.Helper()
	peer, _ := filepath.Abs(filepath.Join("..", "testpeer", "smtp"))
	python := filepath.Join(peer, ".venv", "bin", "python")
	if _, err := os.Stat(python); err != nil {
		testpeer.Missing(t, "the SMTP test server (aiosmtpd)", "make test-peers (or bash internal/testpeer/smtp/install.sh)")
	}
	dir := t.TempDir()
	cert, key := filepath.Join(dir, "cert.pem"), filepath.Join(dir, "key.pem")
	writeSelfSigned(t, cert, key)
	mails := filepath.Join(dir, "mail")
	if err := os.Mkdir(mails, 0o755); err != nil {
		t.Fatal(err)
	}
	port := agenttest.FreePort(t)
	ctx, cancel := context.WithCancel(context.Background())
	cmd := exec.CommandContext(ctx, python, filepath.Join(peer, "catcher.py"), strconv.Itoa(port), mails, cert, key)
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
	return &mailCatcher{Port: port, Dir: mails, CAFile: cert}
}

// writeSelfSigned writes a certificate for 127.0.0.1 and its key.
func writeSelfSigned(t *testing.T, certPath, keyPath string) {
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

// received is a mail the catcher kept: its header and its parts by type.
type received struct {
	Header mail.Header
	Parts  map[string]string
}

// mails reads what the catcher received, in order.
func (m *mailCatcher) mails(t *testing.T) []received {
	t.Helper()
	names, _ := filepath.Glob(filepath.Join(m.Dir, "*.eml"))
	sort.Slice(names, func(i, j int) bool {
		a, _ := strconv.Atoi(strings.TrimSuffix(filepath.Base(names[i]), ".eml"))
		b, _ := strconv.Atoi(strings.TrimSuffix(filepath.Base(names[j]), ".eml"))
		return a < b
	})
	var out []received
	for _, n := range names {
		f, err := os.Open(n)
		if err != nil {
			t.Fatal(err)
		}
		msg, err := mail.ReadMessage(f)
		if err != nil {
			t.Fatalf("%s: %v", n, err)
		}
		r := received{Header: msg.Header, Parts: map[string]string{}}
		_, params, err := mime.ParseMediaType(msg.Header.Get("Content-Type"))
		if err != nil {
			t.Fatalf("%s: content type: %v", n, err)
		}
		mr := multipart.NewReader(msg.Body, params["boundary"])
		for {
			p, err := mr.NextPart()
			if err == io.EOF {
				break
			}
			if err != nil {
				t.Fatalf("%s: %v", n, err)
			}
			typ, _, _ := mime.ParseMediaType(p.Header.Get("Content-Type"))
			b, _ := io.ReadAll(p) // quoted-printable is decoded by the reader
			r.Parts[typ] = string(b)
		}
		f.Close()
		out = append(out, r)
	}
	return out
}

func (m *mailCatcher) wait(t *testing.T, n int) []received {
	t.Helper()
	var got []received
	if err := agenttest.WaitFor(ctx(t), fmt.Sprintf("%d mail(s)", n), 60*time.Second, func() (bool, error) {
		got = m.mails(t)
		return len(got) >= n, nil
	}); err != nil {
		t.Fatal(err)
	}
	return got
}

// mailStack is the test agent whose approvals go to the mail catcher, with
// approval links, and the HTTP API.
func mailStack(t *testing.T, mc *mailCatcher) (*agenttest.Stack, string) {
	t.Helper()
	plugin := agenttest.BuildBinary(t, "github.com/dex-agents/dex-agent-worker/internal/e2e/testrunner")
	port := agenttest.FreePort(t)
	base := fmt.Sprintf("http://127.0.0.1:%d", port)
	cfg := strings.Replace(testConfig(plugin), "    default_tool_effect: unclassified\n",
		"    default_tool_effect: unclassified\n    notify: [{kinds: [approval], channel: mail}]\n", 1)
	s := agenttest.NewStack(t, cfg+fmt.Sprintf(`approval_digest: {key_env: DEX_E2E_DIGEST_KEY, required: true}
approval_links: {key_env: DEX_E2E_LINK_KEY, public_url: %q}
notifications:
  channels:
    mail:
      type: email
      smtp: {host: 127.0.0.1, port: %d, ca_file: %q}
      from: "Dex <dex@example.com>"
      to: [ops@example.com]
http:
  listen: 127.0.0.1:%d
  auth:
    tokens: [{name: ops, token: %s}]
`, base, mc.Port, mc.CAFile, port, tokenAll))
	s.Setenv("DEX_E2E_DIGEST_KEY", "e2e-approval-digest-key-0123456789")
	s.Setenv("DEX_E2E_LINK_KEY", linkKey)
	return s, base
}

var approveLinkRe = regexp.MustCompile(`(?m)^Approve:\r?\n(\S+)`)

// TestMailNotificationLinkInChromium: an approval goes out as a mail over
// STARTTLS to a real SMTP server, with a plain-text and an HTML part and
// the links; Chromium follows the approve link from the mail, confirms,
// and the write runs once.
func TestMailNotificationLinkInChromium(t *testing.T) {
	t.Parallel()
	if testing.Short() {
		t.Skip("integration test")
	}
	node := requireBrowser(t)
	mc := startMailCatcher(t)
	s, base := mailStack(t, mc)
	s.StartWorker()
	waitForPage(t, base)
	id := start(t, s, "call:approve_write:M1")
	m := mc.wait(t, 1)[0]
	if subj, _ := new(mime.WordDecoder).DecodeHeader(m.Header.Get("Subject")); subj != "Approval needed: approve_write (test)" || m.Header.Get("To") != "ops@example.com" {
		t.Fatalf("mail header: %v", m.Header)
	}
	text, html := m.Parts["text/plain"], m.Parts["text/html"]
	found := approveLinkRe.FindStringSubmatch(text)
	if found == nil || !strings.Contains(html, found[1]) || !strings.Contains(text, "Session: "+id) {
		t.Fatalf("the mail's parts:\n%s\n%s", text, html)
	}
	runBrowserScriptEnv(t, node, "link.test.mjs", base, tokenAll, filepath.Join(t.TempDir(), "webui-link.png"), []string{"LINK_URL=" + found[1]}, "-confirm", "-approved")
	s.WaitForSnapshot("the answer", id, idleWithAnswer)
	if n := s.Log().Count("tool", "approve_write"); n != 1 {
		t.Errorf("approve_write ran %d times", n)
	}
}

// TestMailSentOnceThroughAWorkerKill SIGKILLs the worker between composing
// a mail and sending it: the next attempt sends it, and the server gets it
// once.
func TestMailSentOnceThroughAWorkerKill(t *testing.T) {
	t.Parallel()
	if testing.Short() {
		t.Skip("integration test")
	}
	mc := startMailCatcher(t)
	s, base := mailStack(t, mc)
	gate := s.Gate("before-mail-mail")
	if err := gate.Arm(); err != nil {
		t.Fatal(err)
	}
	w := s.StartWorker()
	waitForPage(t, base)
	id := start(t, s, "call:approve_write:K1")
	reached(t, gate)
	w.Kill()
	if err := gate.Release(); err != nil {
		t.Fatal(err)
	}
	s.StartWorker()
	got := mc.wait(t, 1)
	time.Sleep(2 * time.Second) // a second copy would have come by now
	if got = mc.mails(t); len(got) != 1 {
		t.Fatalf("%d mails, want 1", len(got))
	}
	if got[0].Header.Get("Message-Id") == "" && got[0].Header.Get("Message-ID") == "" {
		t.Errorf("the mail has no Message-ID: %v", got[0].Header)
	}
	snap := s.WaitForSnapshot("the approval still pending", id, func(s wire.Snapshot) bool { return len(s.PendingInterrupts) == 1 })
	_ = snap
}
