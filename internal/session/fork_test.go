package session

import (
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/dex-agents/dex-agent-worker/wire"
)

func storeOpts() Options {
	o := opts()
	o.Messages = MessageOptions{Store: true, WindowSize: 4, ChunkSize: 2, ChunkMaxBytes: 1000}
	return o
}

func forkStart() *wire.ForkStart {
	return &wire.ForkStart{
		ParentSessionID: "parent", AtSequence: 5, FromSequence: 1, ThroughSequence: 3,
		Tail: []wire.ForkMessage{
			{Sequence: 4, Role: "tool", Text: "ok", Bytes: 40, ToolCallID: "c1", ToolName: "refund", TurnID: "turn-1", ToolStatus: "succeeded"},
			{Sequence: 5, Role: "assistant", Text: "done", Bytes: 30, TurnID: "turn-1"},
		},
		Summary: &wire.ForkSummary{Generation: 1, FirstSequence: 1, LastSequence: 2, Text: "the user asked for a refund", CreatedAtMs: now},
	}
}

func TestForkStartsFromTheSharedTranscript(t *testing.T) {
	s := New("fork", storeOpts())
	res := s.Apply(Start{Fork: forkStart(), InitialMessage: "again"})
	if len(res.Commands) == 0 {
		t.Fatal("no commands: the initial message started no turn")
	}
	for _, c := range res.Commands {
		if f, ok := c.(FailSession); ok {
			t.Fatalf("the fork failed: %s", f.Reason)
		}
	}
	if s.NextSequence != 6 || s.RolledThrough != 3 || s.DeletedBefore != 0 || s.windowFirst() != 4 {
		t.Fatalf("next %d, rolled through %d, deleted before %d, window first %d", s.NextSequence, s.RolledThrough, s.DeletedBefore, s.windowFirst())
	}
	if s.Summary == nil || s.Summary.LastSequence != 2 || s.transcriptFrom() != 3 {
		t.Fatalf("summary %+v, transcript from %d", s.Summary, s.transcriptFrom())
	}
	if d := cmp.Diff(&wire.ForkOrigin{ParentSessionID: "parent", AtSequence: 5}, s.Snapshot().ForkedFrom); d != "" {
		t.Errorf("forked_from (-want +got):\n%s", d)
	}
	if s.Window[0].ToolCallID != "c1" || s.Window[1].Text != "done" || s.Window[0].Bytes != 40 {
		t.Errorf("window = %+v", s.Window)
	}
	if s.ActiveTurnID == "" || s.TurnCount != 1 {
		t.Errorf("the initial message started no turn: %+v", s.Snapshot().State)
	}
}

func TestForkStartRefusals(t *testing.T) {
	for _, tc := range []struct {
		name   string
		opts   Options
		change func(*wire.ForkStart)
		want   string
	}{
		{"no store", opts(), func(*wire.ForkStart) {}, "keeps no messages in the message store"},
		{"no parent", storeOpts(), func(f *wire.ForkStart) { f.ParentSessionID = "" }, "names no parent"},
		{"a hole in the tail", storeOpts(), func(f *wire.ForkStart) { f.Tail = f.Tail[1:] }, "skip sequence 4"},
		{"a short tail", storeOpts(), func(f *wire.ForkStart) { f.Tail = f.Tail[:1] }, "end at 4, not at the fork point 5"},
		{"shared past the point", storeOpts(), func(f *wire.ForkStart) { f.ThroughSequence = 6; f.Tail = nil }, "does not fit fork point 5"},
		{"a summary past the point", storeOpts(), func(f *wire.ForkStart) { f.Summary.LastSequence = 6 }, "does not end at or before the fork point"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f := forkStart()
			tc.change(f)
			s := New("fork", tc.opts)
			res := s.Apply(Start{Fork: f})
			if len(res.Commands) != 1 {
				t.Fatalf("commands = %+v", res.Commands)
			}
			fail, ok := res.Commands[0].(FailSession)
			if !ok || !strings.Contains(fail.Reason, tc.want) || !strings.HasPrefix(fail.Reason, "the fork cannot start: ") {
				t.Fatalf("command = %+v, want a FailSession with %q", res.Commands[0], tc.want)
			}
		})
	}
}

func TestForkPoint(t *testing.T) {
	s := New("parent", storeOpts())
	s.Apply(Start{Fork: forkStart()})
	s.Settings = `{"tier":"gold"}`
	p := s.ForkPoint(4)
	if !p.Store || p.LastSequence != 5 || p.WindowFirstSequence != 4 || p.FirstSequence != 1 || p.ResultsPending || string(p.SessionSettings) != `{"tier":"gold"}` {
		t.Errorf("fork point = %+v", p)
	}
	if p.Summary == nil || p.Summary.LastSequence != 2 || p.SummaryAfter {
		t.Errorf("a fork after the summary's end inherits it: %+v", p)
	}
	if p := s.ForkPoint(1); p.Summary != nil || !p.SummaryAfter || p.SummaryLastSequence != 2 {
		t.Errorf("a fork inside the summary's range starts without it: %+v", p)
	}
}

// TestForkPointResultsPending: from a turn's tool calls until the Step
// that resumes the turn stores their results (a model call, a compaction
// before it, or the Step that records a failed or stopped turn), a fork at
// the last message would hold calls without results.
func TestForkPointResultsPending(t *testing.T) {
	for _, tc := range []struct {
		phase string
		calls int
		want  bool
	}{
		{phaseNone, 0, false},
		{phaseRunningModel, 0, false}, // the turn's first model call: the user message is last
		{phaseRunningTools, 2, true},
		{phaseRunningModel, 2, true}, // the resume
		{phaseCompacting, 2, true},
		{phaseRecordFailure, 2, true},
		{phaseApplyingControl, 2, true},
	} {
		s := New("s", storeOpts())
		s.Phase = tc.phase
		for i := range tc.calls {
			s.ToolCalls = append(s.ToolCalls, wire.ToolCall{ToolCallID: string(rune('a' + i))})
		}
		if got := s.ForkPoint(1).ResultsPending; got != tc.want {
			t.Errorf("phase %q with %d calls: results_pending = %v, want %v", tc.phase, tc.calls, got, tc.want)
		}
	}
}
