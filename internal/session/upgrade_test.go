package session

import (
	"testing"
)

func TestHoldTurnsQueuesMessagesForTheNextRun(t *testing.T) {
	s := started(t)
	s.Apply(HoldTurns{})
	// The running turn goes on and ends; no turn starts after it.
	if _, cmds := send(s, "next"); nonEmit(cmds) != nil {
		t.Fatalf("a queued message started %s while turns are held", renderAll(cmds))
	}
	cmds := s.Apply(ModelStepDone{TurnID: "turn-1", Outcome: completed("done"), NowMs: now}).Commands
	if nonEmit(cmds) != nil || !s.Idle() || s.QueuedCount() != 1 {
		t.Fatalf("after the held turn: %s, idle %v, queued %d; want idle with the message queued", renderAll(cmds), s.Idle(), s.QueuedCount())
	}
	// The next run starts it.
	cmds = s.Apply(Continued{NowMs: now}).Commands
	if got := renderAll(nonEmit(cmds)); len(got) != 1 || got[0] != `build_user_message turn-2 "next"` || s.HoldTurns {
		t.Fatalf("the next run: %v (held %v); want turn-2 built", got, s.HoldTurns)
	}
}
