package evals

import (
	"context"
	"os"
	"reflect"
	"strings"
	"testing"

	"github.com/dex-agents/dex-agent-worker/internal/session"
	"github.com/dex-agents/dex-agent-worker/internal/steps"
	"github.com/dex-agents/dex-agent-worker/pluginapi"
	"github.com/dex-agents/dex-agent-worker/wire"
)

func toolInput(sessionID, callID, tool string, effect wire.Effect) session.ToolInput {
	return session.ToolInput{SessionID: sessionID, ToolCall: wire.ToolCall{ToolCallID: callID, ToolName: tool, Effect: effect}}
}

func TestServerServesFromTheRecord(t *testing.T) {
	yes := true
	rec := &Case{Records: []Record{
		{Type: TypeToolCall, ToolName: "lookup", Arguments: `{"id":"7"}`, Status: "succeeded", Output: "order 7"},
		{Type: TypeToolCall, ToolName: "refund", Arguments: `{"id":"7","cents":6250}`, Status: "succeeded", Output: "refunded"},
		{Type: TypeToolCall, ToolName: "refund", Arguments: `{"id":"7","cents":6250}`, Status: "failed", Output: "already refunded"},
		{Type: TypeToolCall, ToolName: "refund", Arguments: `{"id":"8"}`, Status: "rejected", Output: "no"},
		{Type: TypeApproval, ToolName: "refund", Arguments: `{"id":"7","cents":6250}`, Approved: &yes},
		{Type: TypeQuestion, Question: "Which order?", Resolution: "answered", Answer: "7"},
	}}
	s := &Server{}
	r := s.Begin("eval-1", rec)
	ctx := context.Background()
	serve := func(callID, tool string, effect wire.Effect, args string) (session.ToolOutcome, bool) {
		return s.Serve(ctx, toolInput("eval-1", callID, tool, effect), args)
	}
	// Same tool, same arguments in another key order and spacing.
	if out, ok := serve("c1", "lookup", wire.EffectRead, `{ "id" : "7" }`); !ok || out.Output == nil || *out.Output != "order 7" {
		t.Fatalf("lookup: %+v %v", out, ok)
	}
	// Calls are served in the record's order; a Step's retry of a call
	// gets the same record again.
	for _, c := range []struct{ call, want string }{{"c2", "refunded"}, {"c2", "refunded"}, {"c3", "already refunded"}} {
		out, ok := serve(c.call, "refund", wire.EffectNonIdempotentWrite, `{"cents":6250,"id":"7"}`)
		got := ""
		if out.Output != nil {
			got = *out.Output
		} else if out.Error != nil {
			got = *out.Error
		}
		if !ok || got != c.want {
			t.Errorf("%s: %q %v, want %q", c.call, got, ok, c.want)
		}
	}
	// A write the record lacks (the rejected call never ran, so it has no
	// result): a tool error, never run; the case left the record there.
	out, ok := serve("c4", "refund", wire.EffectNonIdempotentWrite, `{"id":"8"}`)
	if !ok || out.Error == nil || !strings.Contains(*out.Error, "is not in the recorded session, so it was not run") {
		t.Fatalf("an unrecorded write: %+v %v", out, ok)
	}
	// A read the record lacks: a tool error too, without --live-reads.
	if out, ok := serve("c5", "lookup", wire.EffectRead, `{"id":"9"}`); !ok || out.Error == nil {
		t.Fatalf("an unrecorded read: %+v %v", out, ok)
	}
	if a, ok := r.AnswerApproval("refund", `{"cents":6250,"id":"7"}`); !ok || !*a.Approved {
		t.Errorf("approval: %+v %v", a, ok)
	}
	if _, ok := r.AnswerApproval("refund", `{"cents":6250,"id":"7"}`); ok {
		t.Error("one recorded approval answered two")
	}
	if q, ok := r.AnswerQuestion("Which order?"); !ok || q.Answer != "7" {
		t.Errorf("question: %+v %v", q, ok)
	}
	var rep CaseReport
	r.Finish(&rep)
	if rep.Status != "diverged" || rep.DivergedAt == nil || rep.DivergedAt.Tool != "refund" || rep.DivergedAt.Kind != "call" ||
		len(rep.Unrecorded) != 2 || len(rep.Unanswered) != 1 {
		t.Errorf("report: %+v", rep)
	}

	// With --live-reads, a read the record lacks runs; a write still never.
	live := &Server{LiveReads: true}
	lr := live.Begin("eval-2", rec)
	if _, ok := live.Serve(ctx, toolInput("eval-2", "l1", "lookup", wire.EffectRead), `{"id":"9"}`); ok {
		t.Error("--live-reads: an unrecorded read was not run live")
	}
	if out, ok := live.Serve(ctx, toolInput("eval-2", "l2", "refund", wire.EffectIdempotentWrite), `{"id":"9"}`); !ok || out.Error == nil {
		t.Errorf("--live-reads: an unrecorded write: %+v %v", out, ok)
	}
	rep = CaseReport{}
	lr.Finish(&rep)
	if rep.DivergedAt == nil || rep.DivergedAt.Tool != "refund" {
		t.Errorf("--live-reads: diverged at %+v, want the write", rep.DivergedAt)
	}
	// A session that replays no case runs nothing.
	if out, ok := s.Serve(ctx, toolInput("other", "x", "lookup", wire.EffectRead), `{}`); !ok || out.Error == nil {
		t.Errorf("another session: %+v %v", out, ok)
	}
}

func TestModelCache(t *testing.T) {
	turn := pluginapi.TurnContext{Agent: "orders", SessionID: "eval-1", TurnID: "turn-1", Attempt: 1,
		Messages: []pluginapi.Message{{Sequence: 1, Role: pluginapi.RoleUser, Text: "refund order 7"}}}
	key, err := steps.ModelCacheKey(turn)
	if err != nil {
		t.Fatal(err)
	}
	// Another session replaying the same conversation, on a retry: the
	// same call.
	again := turn
	again.SessionID, again.Attempt = "eval-2", 3
	if k, _ := steps.ModelCacheKey(again); k != key {
		t.Error("the key depends on the session or the attempt")
	}
	other := turn
	other.Messages = []pluginapi.Message{{Sequence: 1, Role: pluginapi.RoleUser, Text: "refund order 8"}}
	if k, _ := steps.ModelCacheKey(other); k == key {
		t.Error("another message has the same key")
	}
	c := &ModelCache{Dir: t.TempDir()}
	if _, ok := c.Get(key); ok {
		t.Fatal("an empty cache answered")
	}
	resp := &pluginapi.RunModelStepResponse{TurnCompleted: &pluginapi.TurnCompleted{
		NewMessages: []pluginapi.FrameworkMessage{{Role: pluginapi.RoleAssistant, Text: "Done."}}, Usage: pluginapi.Usage{ModelCalls: 1, InputTokens: 10}}}
	c.Put(key, resp)
	got, ok := c.Get(key)
	if !ok || !reflect.DeepEqual(got, resp) {
		t.Fatalf("Get after Put: %+v %v", got, ok)
	}
	if h, m, err := c.Stats(); h != 1 || m != 1 || err != nil {
		t.Errorf("stats %d %d %v", h, m, err)
	}
	// Another scope (a changed prompt, model or runner) does not use it.
	if _, ok := (&ModelCache{Dir: c.Dir, Scope: "changed"}).Get(key); ok {
		t.Error("an answer kept under another scope was used")
	}
	// A file that holds no answer is a miss, not an answer.
	if err := os.WriteFile(c.path(key), []byte(`{}`), 0o644); err != nil {
		t.Fatal(err)
	}
	if _, ok := c.Get(key); ok {
		t.Error("an empty answer was used")
	}
}

// Call IDs repeat across turns (a runner may number them per turn): a
// call is known by its turn and ID. A case whose turn failed stays failed
// when it also left the record.
func TestServerKnowsACallByItsTurn(t *testing.T) {
	rec := &Case{Records: []Record{
		{Type: TypeToolCall, ToolName: "lookup", Arguments: `{"id":"1"}`, Status: "succeeded", Output: "one"},
		{Type: TypeToolCall, ToolName: "lookup", Arguments: `{"id":"2"}`, Status: "succeeded", Output: "two"},
	}}
	s := &Server{}
	r := s.Begin("eval-1", rec)
	in := toolInput("eval-1", "call_1_0", "lookup", wire.EffectRead)
	in.TurnID = "turn-1"
	if out, ok := s.Serve(context.Background(), in, `{"id":"1"}`); !ok || *out.Output != "one" {
		t.Fatalf("turn 1: %+v", out)
	}
	in.TurnID = "turn-2"
	if out, ok := s.Serve(context.Background(), in, `{"id":"2"}`); !ok || out.Output == nil || *out.Output != "two" {
		t.Fatalf("turn 2, the same call ID: %+v", out)
	}
	in.TurnID = "turn-3"
	if out, _ := s.Serve(context.Background(), in, `{"id":"3"}`); out.Error == nil {
		t.Fatal("an unrecorded read was served")
	}
	rep := CaseReport{Status: "failed"}
	r.Finish(&rep)
	if rep.Status != "failed" || rep.DivergedAt == nil {
		t.Errorf("a failed case that also diverged: %+v", rep)
	}
}
