package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/dex-agents/dex-agent-worker/internal/config"
)

func TestDevApprovalLinksKeepsItsKeys(t *testing.T) {
	t.Setenv(devApprovalKeyEnv, "")
	t.Setenv(devLinkKeyEnv, "")
	dir := filepath.Join(t.TempDir(), ".dex")
	cfg := &config.Config{}
	note, err := devApprovalLinks(cfg, dir, "127.0.0.1:8080")
	if err != nil {
		t.Fatal(err)
	}
	if cfg.ApprovalDigest == nil || cfg.ApprovalDigest.KeyEnv != devApprovalKeyEnv || cfg.ApprovalLinks == nil ||
		cfg.ApprovalLinks.KeyEnv != devLinkKeyEnv || cfg.ApprovalLinks.PublicURL != "http://127.0.0.1:8080" {
		t.Fatalf("the config dev made: %+v %+v", cfg.ApprovalDigest, cfg.ApprovalLinks)
	}
	digestKey, linkKey := os.Getenv(devApprovalKeyEnv), os.Getenv(devLinkKeyEnv)
	if len(digestKey) != 64 || len(linkKey) != 64 || digestKey == linkKey {
		t.Fatalf("keys %q %q: want two different 64-digit keys", digestKey, linkKey)
	}
	if strings.Contains(note, digestKey) || strings.Contains(note, linkKey) || !strings.Contains(note, dir) {
		t.Errorf("the note names the keys or not where they are: %q", note)
	}
	for _, name := range []string{"approval-key", "link-key"} {
		fi, err := os.Stat(filepath.Join(dir, name))
		if err != nil || fi.Mode().Perm() != 0o600 {
			t.Errorf("%s: %v, mode %v; want 0600", name, err, fi.Mode())
		}
	}
	// A restart reads the same keys, so links already sent keep working;
	// the configuration is valid as dev made it.
	cfg2 := &config.Config{}
	if _, err := devApprovalLinks(cfg2, dir, ":8080"); err != nil {
		t.Fatal(err)
	}
	if os.Getenv(devApprovalKeyEnv) != digestKey || os.Getenv(devLinkKeyEnv) != linkKey {
		t.Error("a restart made new keys")
	}
	if keys, err := cfg2.ApprovalLinks.Keys(); err != nil || len(keys) != 1 {
		t.Errorf("the links' keys: %v %v", keys, err)
	}
	if keys, err := cfg2.ApprovalDigest.Keys(); err != nil || len(keys) != 1 {
		t.Errorf("the digest keys: %v %v", keys, err)
	}
}

func TestDevApprovalLinksLeavesTheConfigsOwn(t *testing.T) {
	t.Setenv(devApprovalKeyEnv, "")
	t.Setenv(devLinkKeyEnv, "")
	own := &config.ApprovalLinks{KeyEnv: "MY_LINK_KEY", PublicURL: "https://dex.example.com"}
	cfg := &config.Config{ApprovalDigest: &config.ApprovalDigest{KeyEnv: "MY_KEY"}, ApprovalLinks: own}
	dir := t.TempDir()
	if note, err := devApprovalLinks(cfg, dir, "127.0.0.1:8080"); err != nil || note != "" || cfg.ApprovalLinks != own || cfg.ApprovalDigest.KeyEnv != "MY_KEY" {
		t.Fatalf("a config with its own links: %q %v %+v", note, err, cfg.ApprovalLinks)
	}
	// Only a digest: dev adds links beside it and keeps the digest.
	cfg = &config.Config{ApprovalDigest: &config.ApprovalDigest{KeyEnv: "MY_KEY", Required: true}}
	if _, err := devApprovalLinks(cfg, dir, "[::]:9000"); err != nil {
		t.Fatal(err)
	}
	if cfg.ApprovalDigest.KeyEnv != "MY_KEY" || !cfg.ApprovalDigest.Required || cfg.ApprovalLinks.PublicURL != "http://127.0.0.1:9000" {
		t.Fatalf("a config with only a digest: %+v %+v", cfg.ApprovalDigest, cfg.ApprovalLinks)
	}
	if _, err := os.Stat(filepath.Join(dir, "approval-key")); !os.IsNotExist(err) {
		t.Errorf("dev made a digest key the config does not use: %v", err)
	}
	// A port picked at start: no link can name it beforehand.
	cfg = &config.Config{}
	if note, err := devApprovalLinks(cfg, dir, "127.0.0.1:0"); err != nil || note != "" || cfg.ApprovalLinks != nil || cfg.ApprovalDigest != nil {
		t.Fatalf("--http with port 0: %q %v %+v", note, err, cfg.ApprovalLinks)
	}
	if _, err := devApprovalLinks(cfg, dir, "nonsense"); err == nil || !strings.Contains(err.Error(), `--http "nonsense"`) {
		t.Errorf("a bad --http: %v", err)
	}
}

func TestDevApprovalLinksRefusesAKeyItDidNotMake(t *testing.T) {
	t.Setenv(devApprovalKeyEnv, "")
	t.Setenv(devLinkKeyEnv, "")
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "link-key"), []byte("short\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	_, err := devApprovalLinks(&config.Config{}, dir, "127.0.0.1:8080")
	if err == nil || !strings.Contains(err.Error(), filepath.Join(dir, "link-key")) || !strings.Contains(err.Error(), "remove it") {
		t.Fatalf("err = %v; want one that names the file and what to do", err)
	}
	if strings.Contains(err.Error(), "short") {
		t.Errorf("the error shows the file's content: %v", err)
	}
}

func TestDevPublicURL(t *testing.T) {
	for _, c := range []struct {
		addr string
		tls  bool
		want string
	}{
		{"127.0.0.1:8080", false, "http://127.0.0.1:8080"},
		{":8080", false, "http://127.0.0.1:8080"},
		{"0.0.0.0:8443", true, "https://127.0.0.1:8443"},
		{"[::1]:8080", false, "http://[::1]:8080"},
		{"localhost:9000", false, "http://localhost:9000"},
		{"127.0.0.1:0", false, ""},
		{"", false, ""},
	} {
		if got, err := devPublicURL(c.addr, c.tls); err != nil || got != c.want {
			t.Errorf("devPublicURL(%q, %v) = %q, %v; want %q", c.addr, c.tls, got, err, c.want)
		}
	}
}
