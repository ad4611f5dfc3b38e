package e2e

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/dex-agents/dex-agent-worker/wire"

	"github.com/dex-agents/dex-agent-worker/agenttest"
	"github.com/dex-agents/dex-agent-worker/httpclient"
)

// TestTurnPastItsRecoveryBudget: the model provider (aimock) holds its
// first chunk for 30 s on every call, so every RunModel attempt fails at
// first_chunk_timeout (2 s), and RunModel alone would make 10 attempts.
// The agent's recovery budget fails the turn first, with a last_turn_error
// that names it: after 2 retries with recovery.max_attempts 2, or when
// the Step has not finished within recovery.no_progress_timeout. Each retry
// announced itself with turn_recovering, and the session's next turn has
// the whole budget again and answers.
func TestTurnPastItsRecoveryBudget(t *testing.T) {
	t.Parallel()
	if testing.Short() {
		t.Skip("integration test")
	}
	const limit = "    run_model_limit: {first_chunk_timeout: 2s, maximum_attempts: 10, start_to_close_timeout: 2m, heartbeat_timeout: 30s, schedule_to_close_timeout: 10m}\n"
	for _, tc := range []struct {
		name, recovery, wantErr string
		wantAttempts            int32 // of the failed RunModel Step; 0: any
	}{
		{"max_attempts", "{max_attempts: 2}",
			"the turn ran out of its recovery budget: its Steps were retried 2 times (recovery.max_attempts 2), and RunModel failed on attempt 3: ", 3},
		{"no_progress_timeout", "{no_progress_timeout: 6s}",
			"the turn made no progress: RunModel did not finish within recovery.no_progress_timeout (6s)", 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			port := agenttest.FreePort(t)
			s, srv := stepwiseAimockStack(t, "recovery.json", "openai-chat", "gpt-4.1-mini", limit+"    recovery: "+tc.recovery+"\n",
				fmt.Sprintf("http:\n  listen: 127.0.0.1:%d\n  auth:\n    tokens: [{name: all, token: %s}]\n", port, tokenAll))
			s.StartWorker()
			c := apiClient(t, fmt.Sprintf("http://127.0.0.1:%d", port), tokenAll)
			if err := agenttest.WaitFor(ctx(t), "the API ready", time.Minute, func() (bool, error) { return c.Ready(ctx(t)) == nil, nil }); err != nil {
				t.Fatal(err)
			}
			id, err := c.StartSession(ctx(t), httpclient.StartRequest{Agent: "chat", InitialMessage: "always stalls"})
			if err != nil {
				t.Fatal(err)
			}
			events := sessionEvents(t, c, id, func(e httpclient.Event) bool { return e.Type == wire.EventTurnFailed })
			snap := s.WaitForSnapshot("the failed turn", id, func(s wire.Snapshot) bool {
				return s.State != nil && s.State.LastTurnError != "" && s.State.Status == wire.StatusWaitingForUserMessage
			})
			t.Logf("last_turn_error: %s", snap.State.LastTurnError)
			if !strings.HasPrefix(snap.State.LastTurnError, tc.wantErr) {
				t.Errorf("last_turn_error %q; want it to start with %q", snap.State.LastTurnError, tc.wantErr)
			}
			steps, err := s.StepHistory(id)
			if err != nil {
				t.Fatal(err)
			}
			var failed []agenttest.StepHistoryEntry
			for _, st := range steps {
				if st.StepType == "RunModel" {
					failed = append(failed, st)
				}
			}
			if len(failed) != 1 || failed[0].EventType == "completed" || tc.wantAttempts > 0 && failed[0].Attempt != tc.wantAttempts {
				t.Errorf("RunModel Steps %+v; want one that failed on attempt %d", failed, tc.wantAttempts)
			}
			calls := len(srv.Requests("/v1/chat/completions"))
			if calls < 2 || calls > 4 {
				t.Errorf("%d model requests; want the 2 to 4 attempts the budget allows", calls)
			}
			// Each attempt after the first wrote turn_recovering.
			var recovering []int
			for _, e := range events {
				if e.Type == wire.EventTurnRecovering {
					recovering = append(recovering, e.Attempt)
				}
			}
			if len(recovering) != calls-1 || len(recovering) > 0 && recovering[0] != 2 {
				t.Errorf("turn_recovering attempts %v for %d model requests; want one per retry, from attempt 2", recovering, calls)
			}

			if ok, err := s.Sessions.SendUserMessage(ctx(t), id, "after the budget"); err != nil || !ok {
				t.Fatalf("send: %v %v", ok, err)
			}
			snap = s.WaitForSnapshot("the next answer", id, func(s wire.Snapshot) bool {
				return idleWithAnswer(s) && s.State.LastTurnError == ""
			})
			wantAnswer(t, snap, "A fresh turn, a fresh budget.")
		})
	}
}
