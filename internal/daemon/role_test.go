package daemon

import (
	"context"
	"log/slog"
	"strings"
	"testing"
	"time"

	"github.com/dex-agents/dex-agent-worker/internal/config"
)

func TestRoleAPIRefusesAConfigWithoutSharedStores(t *testing.T) {
	t.Setenv("DEX_ROLE_TEST_DSN", "postgres://127.0.0.1:1/none")
	t.Setenv("DEX_ROLE_TEST_REDIS", "redis://127.0.0.1:1/0")
	t.Setenv("DEX_ROLE_TEST_KEY", "a key of at least sixteen bytes")
	base := `
plugins: {p: {command: /bin/false}}
agents: [{name: a, flow_type: A, runner: p}]
`
	for _, tt := range []struct {
		name, role, yaml, want string
	}{
		{"memory events", RoleAPI, base + `
message_store: {driver: postgres, dsn_env: DEX_ROLE_TEST_DSN}
`, "--role api needs events.backend: redis"},
		{"sqlite store", RoleAPI, base + `
events: {backend: redis, url_env: DEX_ROLE_TEST_REDIS, token_key_env: DEX_ROLE_TEST_KEY}
message_store: {driver: sqlite, path: m.db}
`, "--role api needs message_store with driver postgres"},
		{"no store", RoleAPI, base + `
events: {backend: redis, url_env: DEX_ROLE_TEST_REDIS, token_key_env: DEX_ROLE_TEST_KEY}
`, "--role api needs message_store with driver postgres"},
		{"unknown role", "scheduler", base, `unknown role "scheduler" (want all, worker or api)`},
	} {
		t.Run(tt.name, func(t *testing.T) {
			cfg, err := config.LoadBytes([]byte(tt.yaml), t.TempDir())
			if err != nil {
				t.Fatal(err)
			}
			_, err = Start(context.Background(), Options{Config: cfg, Role: tt.role})
			if err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Fatalf("Start = %v, want an error with %q", err, tt.want)
			}
		})
	}
}

// A Redis that does not answer fails the start and names the variable of
// its URL, never the URL (it may hold a password).
func TestRedisEventsUnreachableFailsTheStart(t *testing.T) {
	t.Setenv("DEX_ROLE_TEST_REDIS", "redis://:hunter2-secret@127.0.0.1:1/0")
	t.Setenv("DEX_ROLE_TEST_KEY", "a key of at least sixteen bytes")
	_, err := openEvents(context.Background(), config.Events{Backend: config.EventsRedis, URLEnv: "DEX_ROLE_TEST_REDIS", TokenKeyEnv: "DEX_ROLE_TEST_KEY"}, slog.New(slog.DiscardHandler))
	if err == nil || !strings.Contains(err.Error(), "cannot reach Redis at 127.0.0.1:1 (the URL in DEX_ROLE_TEST_REDIS)") {
		t.Fatalf("openEvents = %v", err)
	}
	if strings.Contains(err.Error(), "hunter2") {
		t.Fatalf("the error shows the password: %v", err)
	}
}

// A frontend that is not up yet is tried again until DialWait passes.
func TestDialWaitsForTheFrontend(t *testing.T) {
	var logs strings.Builder
	logger := slog.New(slog.NewTextHandler(&logs, nil))
	start := time.Now()
	_, err := dialWaiting(context.Background(), config.Temporal{Namespace: "default"}, "127.0.0.1:1", 2*time.Second, logger, nil, nil)
	if err == nil || !strings.Contains(err.Error(), "connect to Temporal at 127.0.0.1:1") {
		t.Fatalf("dialWaiting = %v", err)
	}
	if n := strings.Count(logs.String(), "Temporal is not reachable yet; retrying"); n < 1 {
		t.Fatalf("no retry logged in %s:\n%s", time.Since(start), logs.String())
	}
	logs.Reset()
	if _, err := dialWaiting(context.Background(), config.Temporal{Namespace: "default"}, "127.0.0.1:1", 0, logger, nil, nil); err == nil {
		t.Fatal("dialWaiting with no wait succeeded")
	}
	if strings.Contains(logs.String(), "retrying") {
		t.Fatalf("a wait of 0 retried:\n%s", logs.String())
	}
}
