package e2e

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/dex-agents/dex-agent-worker/wire"

	"github.com/dex-agents/dex-agent-worker/agenttest"
	"github.com/dex-agents/dex-agent-worker/httpclient"
)

// TestStalledModelStreamIsRetried: the model provider (aimock) stalls a
// stream for 20 s after its first words, or holds its first chunk for 20 s.
// With run_model_limit's chunk_gap_timeout and first_chunk_timeout at 2 s,
// the worker stops the call and the RunModel Step's next attempt answers;
// the stalled attempt's words are dropped by the attempt rule, so the
// turn's text is the retry's alone.
func TestStalledModelStreamIsRetried(t *testing.T) {
	t.Parallel()
	if testing.Short() {
		t.Skip("integration test")
	}
	port := agenttest.FreePort(t)
	s, _ := stepwiseAimockStack(t, "liveness.json", "openai-chat", "gpt-4.1-mini",
		"    run_model_limit: {first_chunk_timeout: 2s, chunk_gap_timeout: 2s, call_timeout: 1m, start_to_close_timeout: 2m, heartbeat_timeout: 30s}\n",
		fmt.Sprintf("http:\n  listen: 127.0.0.1:%d\n  auth:\n    tokens: [{name: all, token: %s}]\n", port, tokenAll))
	s.StartWorker()
	c, err := httpclient.New(fmt.Sprintf("http://127.0.0.1:%d", port), tokenAll, nil)
	if err != nil {
		t.Fatal(err)
	}
	if err := agenttest.WaitFor(ctx(t), "the API ready", time.Minute, func() (bool, error) { return c.Ready(ctx(t)) == nil, nil }); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct{ message, answer, stalled, failure string }{
		{"stall mid-stream", "The whole answer, at once.", "Partial words", "past chunk_gap_timeout (2s)"},
		{"slow first chunk", "On time.", "", "no chunk within first_chunk_timeout (2s)"},
	} {
		t.Run(tc.message, func(t *testing.T) {
			id, err := c.StartSession(ctx(t), httpclient.StartRequest{Agent: "chat"})
			if err != nil {
				t.Fatal(err)
			}
			_, token, err := c.Snapshot(ctx(t), id)
			if err != nil {
				t.Fatal(err)
			}
			es, err := c.Events(ctx(t), id, token, "")
			if err != nil {
				t.Fatal(err)
			}
			defer es.Close()
			if _, err := c.SendMessage(ctx(t), id, tc.message); err != nil {
				t.Fatal(err)
			}
			var text httpclient.TurnText
			var raw strings.Builder
			attempts := map[int]bool{}
			var recovering []httpclient.Event
			for {
				d, err := es.Next()
				if err != nil {
					t.Fatalf("events: %v", err)
				}
				text.Add(d.Event)
				if d.Event.Type == wire.EventTurnRecovering {
					recovering = append(recovering, d.Event)
				}
				if d.Event.Type == wire.EventTextDelta {
					var p struct{ Text string }
					_ = d.Event.Payload.Decode(&p)
					raw.WriteString(p.Text)
					attempts[d.Event.Attempt] = true
				}
				if d.Event.Type == wire.EventTurnCompleted || d.Event.Type == wire.EventTurnFailed {
					if d.Event.Type == wire.EventTurnFailed {
						t.Fatalf("the turn failed: %s", d.Event.Payload)
					}
					break
				}
			}
			snap := s.WaitForSnapshot("the answer", id, idleWithAnswer)
			wantAnswer(t, snap, tc.answer)
			// The retried attempt announced itself before its text.
			if len(recovering) != 1 || recovering[0].Attempt != 2 || eventPayload(t, recovering[0])["step"] != "RunModel" {
				t.Errorf("turn_recovering events %s; want one of RunModel attempt 2", eventsString(recovering))
			}
			if got := text.String(); got != tc.answer {
				t.Errorf("the turn's text by the attempt rule %q, want %q", got, tc.answer)
			}
			if tc.stalled != "" && (!strings.Contains(raw.String(), tc.stalled) || !attempts[1] || !attempts[2]) {
				t.Errorf("streamed %q in attempts %v: want the stalled attempt's words, then attempt 2", raw.String(), attempts)
			}
			steps, err := s.StepHistory(id)
			if err != nil {
				t.Fatal(err)
			}
			var retried bool
			for _, st := range steps {
				retried = retried || (st.StepType == "RunModel" && st.EventType == "completed" && st.Attempt == 2)
			}
			if !retried {
				t.Errorf("no RunModel Step completed on attempt 2: %+v", steps)
			}
			// The failed attempt's reason, as the worker logged it.
			err = agenttest.WaitFor(ctx(t), "the stall in the worker's log", 30*time.Second, func() (bool, error) {
				b, err := os.ReadFile(filepath.Join(s.Dir, "worker-1.log"))
				return strings.Contains(string(b), tc.failure), err
			})
			if err != nil {
				t.Error(err)
			}
		})
	}
}
