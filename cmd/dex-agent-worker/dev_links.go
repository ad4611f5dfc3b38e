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

// keptSecret returns the secret kept in path: nBytes random bytes in hex,
// made and written (mode 0600) the first time, or anew with rotate. made
// reports a new one. what names it in errors; fix says what to do with a
// file dev did not write.
func keptSecret(path string, nBytes int, rotate bool, what, fix string) (secret string, made bool, err error) {
	if !rotate {
		b, err := os.ReadFile(path)
		switch s := strings.TrimSpace(string(b)); {
		case err == nil && len(s) == 2*nBytes && isLowerHex(s):
			if err := os.Chmod(path, 0o600); err != nil {
				return "", false, fmt.Errorf("keep the %s private: %w", what, err)
			}
			return s, false, nil
		case err == nil:
			kind := what[strings.LastIndex(what, " ")+1:] // "token", "key"
			return "", false, fmt.Errorf("%s does not hold a %s dev made (%d hex digits): %s", path, kind, 2*nBytes, fix)
		case !errors.Is(err, fs.ErrNotExist):
			return "", false, fmt.Errorf("read the %s: %w", what, err)
		}
	}
	raw := make([]byte, nBytes)
	if _, err := rand.Read(raw); err != nil {
		return "", false, err
	}
	secret = hex.EncodeToString(raw)
	if err := writePrivate(path, secret+"\n"); err != nil {
		return "", false, fmt.Errorf("keep the %s in the data dir: %w", what, err)
	}
	return secret, true, nil
}

func isLowerHex(s string) bool {
	for _, c := range s {
		if !(c >= '0' && c <= '9' || c >= 'a' && c <= 'f') {
			return false
		}
	}
	return true
}

// keptKey is a 32-byte key kept in path (see keptSecret).
func keptKey(path string) (string, error) {
	key, _, err := keptSecret(path, 32, false, "key", "remove it, and dev makes a new one")
	return key, err
}
