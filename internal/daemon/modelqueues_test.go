package daemon

import (
	"slices"
	"strings"
	"testing"

	"github.com/dex-agents/dex-agent-worker/internal/config"
	"github.com/dex-agents/dex-agent-worker/internal/events"
)

func TestPollModelQueues(t *testing.T) {
	cfg := &config.Config{ModelQueues: map[string]config.ModelQueue{
		"openai": {ActivitiesPerSecond: 10}, "anthropic": {MaxConcurrentPerWorker: 2}, "local": {},
	}}
	for _, tc := range []struct {
		spec    string
		want    []string
		wantErr string
	}{
		{spec: "", want: []string{"anthropic", "local", "openai"}},
		{spec: "all", want: []string{"anthropic", "local", "openai"}},
		{spec: "none", want: nil},
		{spec: "openai", want: []string{"openai"}},
		{spec: "openai, anthropic", want: []string{"anthropic", "openai"}},
		{spec: "openai,gemini", wantErr: `model_queues declares no queue "gemini" (it declares anthropic, local, openai)`},
		{spec: "openai,", wantErr: "an empty name"},
		{spec: "openai,none", wantErr: "none stands alone"},
		{spec: "openai,openai", wantErr: `queue "openai" is named twice`},
	} {
		got, err := pollModelQueues(cfg, tc.spec)
		if tc.wantErr != "" {
			if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
				t.Errorf("pollModelQueues(%q) = %v, %v; want the error %q", tc.spec, got, err, tc.wantErr)
			}
			continue
		}
		if err != nil || !slices.Equal(got, tc.want) {
			t.Errorf("pollModelQueues(%q) = %v, %v; want %v", tc.spec, got, err, tc.want)
		}
	}
	if _, err := pollModelQueues(&config.Config{}, "openai"); err == nil || !strings.Contains(err.Error(), "declares no model_queues") {
		t.Errorf("a queue name without model_queues: %v", err)
	}
	if got := unpolledModelQueues(cfg, []string{"openai"}); !slices.Equal(got, []string{"anthropic", "local"}) {
		t.Errorf("unpolledModelQueues = %v", got)
	}
}

func TestCheckRoleRefusesModelQueuesForTheAPI(t *testing.T) {
	cfg := &config.Config{ModelQueues: map[string]config.ModelQueue{"openai": {}}}
	if err := checkRole(RoleAPI, cfg, Options{ModelQueues: "openai"}); err == nil || !strings.Contains(err.Error(), "role api polls no task queue") {
		t.Errorf("role api with --model-queues: %v", err)
	}
	if err := checkRole(RoleWorker, cfg, Options{ModelQueues: "gemini"}); err == nil || !strings.Contains(err.Error(), `no queue "gemini"`) {
		t.Errorf("role worker with an unknown queue: %v", err)
	}
	// One --model-queues none for every process of a deployment works.
	api := &config.Config{ModelQueues: cfg.ModelQueues, MessageStore: &config.MessageStore{Driver: config.MessageStorePostgres}}
	for _, role := range []string{RoleWorker, RoleAPI} {
		if err := checkRole(role, api, Options{ModelQueues: " none", Events: events.Discard}); err != nil {
			t.Errorf("role %s with none: %v", role, err)
		}
	}
}
