package e2e

import (
	"flag"
	"os"
	"path/filepath"
	"testing"

	enumspb "go.temporal.io/api/enums/v1"
	historypb "go.temporal.io/api/history/v1"
	"google.golang.org/protobuf/encoding/protojson"

	"github.com/dex-agents/dex-agent-worker/client"
)

var updateHistories = flag.Bool("update-histories", false, "record the replay histories in internal/session/testdata/histories")

// TestRecordApprovalTurnHistory runs a full turn with an approval and, with
// -update-histories, stores its history for the replay test of
// internal/session. Without the flag it still checks the turn.
func TestRecordApprovalTurnHistory(t *testing.T) {
	s := newStack(t)
	s.StartWorker()
	id := start(t, s, "call:read_gate:h call:approve_write:h")
	snap := s.WaitForSnapshot("a pending approval", id, func(s client.Snapshot) bool { return len(s.PendingInterrupts) == 1 })
	if ok, err := s.Sessions.ResolveInterrupt(ctx(t), id, client.ResolveInterruptRequest{InterruptID: snap.PendingInterrupts[0].InterruptID, Approved: true}); err != nil || !ok {
		t.Fatalf("approve: %v %v", ok, err)
	}
	snap = s.WaitForSnapshot("the final answer", id, idleWithAnswer)
	wantAnswer(t, snap, "done: read_gate=succeeded:read h; approve_write=succeeded:wrote h")
	if ok, err := s.Sessions.SendUserMessage(ctx(t), id, "thanks"); err != nil || !ok {
		t.Fatalf("send: %v %v", ok, err)
	}
	s.WaitForSnapshot("the second answer", id, func(s client.Snapshot) bool { return idleWithAnswer(s) && lastText(s) == "echo: thanks" })
	if !*updateHistories {
		return
	}
	hist := &historypb.History{}
	it := s.Client.GetWorkflowHistory(ctx(t), id, "", false, enumspb.HISTORY_EVENT_FILTER_TYPE_ALL_EVENT)
	for it.HasNext() {
		e, err := it.Next()
		if err != nil {
			t.Fatal(err)
		}
		hist.Events = append(hist.Events, e)
	}
	b, err := protojson.MarshalOptions{Multiline: true, Indent: "  "}.Marshal(hist)
	if err != nil {
		t.Fatal(err)
	}
	path := filepath.Join("..", "session", "testdata", "histories", "approval_turn.json")
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, b, 0o644); err != nil {
		t.Fatal(err)
	}
	t.Logf("recorded %d events in %s", len(hist.Events), path)
}
