package main

import (
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"io/fs"
	"net"
	"os"
	"path/filepath"
	"regexp"
	"strings"

	"github.com/dex-agents/dex-agent-worker/internal/config"
)

// The variables dev puts its kept keys in, for the config sections it adds.
const (
	devApprovalKeyEnv = "DEX_DEV_APPROVAL_KEY"
	devLinkKeyEnv     = "DEX_DEV_LINK_KEY"
)

// devApprovalLinks turns on signed approval links (and the approval
// digests they need) for a config that declares no approval_links, as dev
// adds an API token to a config without tokens, so that the demo's
// notifications carry links that answer them. Their keys are made at random the first time and kept in
// the data dir (mode 0600), so links and pending approvals keep working
// across restarts; links start with dev's HTTP address. A config that
// declares approval_links keeps its own; one that declares only
// approval_digest gets links beside it. It returns what it did, for the
// log, or "" when it did nothing.
func devApprovalLinks(cfg *config.Config, dataDir, httpAddr string) (string, error) {
	if cfg.ApprovalLinks != nil {
		return "", nil
	}
	base, err := devPublicURL(httpAddr, cfg.HTTP.TLS != nil)
	if err != nil {
		return "", err
	}
	if base == "" {
		return "", nil
	}
	if cfg.ApprovalDigest == nil {
		key, err := keptKey(filepath.Join(dataDir, "approval-key"))
		if err != nil {
			return "", fmt.Errorf("the approval digest key: %w", err)
		}
		if err := os.Setenv(devApprovalKeyEnv, key); err != nil {
			return "", err
		}
		cfg.ApprovalDigest = &config.ApprovalDigest{KeyEnv: devApprovalKeyEnv}
	}
	key, err := keptKey(filepath.Join(dataDir, "link-key"))
	if err != nil {
		return "", fmt.Errorf("the approval links' key: %w", err)
	}
	if err := os.Setenv(devLinkKeyEnv, key); err != nil {
		return "", err
	}
	cfg.ApprovalLinks = &config.ApprovalLinks{KeyEnv: devLinkKeyEnv, PublicURL: base}
	return "approval links on at " + base + ", signed with keys kept in " + dataDir, nil
}

// devPublicURL is the URL people reach dev's HTTP API at, from --http
// (https with the config's http.tls); "" when dev serves no HTTP or its
// port is picked at start (0), which no link can name beforehand.
func devPublicURL(httpAddr string, tls bool) (string, error) {
	if httpAddr == "" {
		return "", nil
	}
	host, port, err := net.SplitHostPort(httpAddr)
	if err != nil {
		return "", fmt.Errorf("--http %q: %w", httpAddr, err)
	}
	if port == "0" {
		return "", nil
	}
	if ip := net.ParseIP(host); host == "" || (ip != nil && ip.IsUnspecified()) {
		host = "127.0.0.1"
	}
	scheme := "http://"
	if tls {
		scheme = "https://"
	}
	return scheme + net.JoinHostPort(host, port), nil
}

// devKeyPattern is the form of a key dev makes: 32 random bytes in hex.
var devKeyPattern = regexp.MustCompile(`^[0-9a-f]{64}$`)

// keptKey returns the key kept in path, made and written (mode 0600) the
// first time.
func keptKey(path string) (string, error) {
	b, err := os.ReadFile(path)
	switch key := strings.TrimSpace(string(b)); {
	case err == nil && devKeyPattern.MatchString(key):
		return key, os.Chmod(path, 0o600)
	case err == nil:
		return "", fmt.Errorf("%s does not hold a key dev made (64 hex digits): remove it, and dev makes a new one", path)
	case !errors.Is(err, fs.ErrNotExist):
		return "", err
	}
	raw := make([]byte, 32)
	if _, err := rand.Read(raw); err != nil {
		return "", err
	}
	key := hex.EncodeToString(raw)
	if err := writePrivate(path, key+"\n"); err != nil {
		return "", err
	}
	return key, nil
}
