package chat

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/dex-agents/dex-agent-worker/wire"

	"github.com/google/go-cmp/cmp"

	"github.com/dex-agents/dex-agent-worker/internal/testpeer"
)

// scriptControl plays a session with turn control. "refund order 7" waits
// for the refund's approval; "think hard" streams "Thinking" and runs until
// it is stopped or steered; any other message is answered at once with
// "You said: TEXT.". A message sent while a turn runs is queued and starts
// the next turn when that one ends. Cancel and steer reject the turn's
// pending approvals with their reason and end the turn with turn_cancelled
// or turn_steered; a steered turn is followed by a turn of the steered
// message. The turn after a stopped or steered one starts once the chat
// has loaded the snapshot, as a real session takes a moment to start it.
func (f *fakeAPI) scriptControl() {
	turns := 0
	var start func(text string)
	next := func() {
		var text string
		f.update(func(s *Snapshot) {
			if len(s.QueuedMessages) > 0 {
				text = s.QueuedMessages[0].Text
				s.QueuedMessages = s.QueuedMessages[1:]
			}
		})
		if text != "" {
			start(text)
		}
	}
	start = func(text string) {
		turns++
		turn := fmt.Sprintf("turn-%d", turns)
		step := "run/" + turn
		f.update(func(s *Snapshot) {
			s.State = &State{Status: StatusRunningModel, ActiveTurnID: turn, TurnCount: turns, AcceptsTurnControl: true}
			s.SteeredMessages = nil
			f.addMessage(s, RoleUser, text, "", "")
			s.ToolCalls = []ToolCall{}
		})
		f.publish(wire.EventTurnStarted, "", 0, map[string]int64{"sequence": f.seq})
		f.recordUsage(step, 1, usage(1, 10, 5))
		switch text {
		case "refund order 7":
			f.update(func(s *Snapshot) {
				f.setCall(s, ToolCall{ToolCallID: "call_1", ToolName: "refund_order", Arguments: refundArgs, Effect: "non_idempotent_write", RequiresApproval: true, Status: "awaiting_approval"})
				s.PendingInterrupts = []Interrupt{{InterruptID: "call_1", ToolCallID: "call_1", ToolName: "refund_order", Arguments: refundArgs, Kind: "approval"}}
				s.State.Status = StatusRunningTools
			})
			f.publish(wire.EventToolCallDeferred, "", 0, map[string]any{"tool_call_id": "call_1", "tool_name": "refund_order", "effect": "non_idempotent_write", "requires_approval": true})
			f.publish(wire.EventInterruptRaised, "", 0, map[string]any{"interrupt_id": "call_1", "tool_call_id": "call_1", "tool_name": "refund_order", "kind": "approval"})
		case "think hard":
			f.deltas(step, 1, "Thinking")
		default:
			answer := "You said: " + text + "."
			f.deltas(step, 1, answer)
			f.update(func(s *Snapshot) {
				f.addMessage(s, RoleAssistant, answer, "", "")
				s.State = &State{Status: StatusWaitingForUserMessage, TurnCount: turns, AcceptsTurnControl: true}
			})
			f.publishIn(turn, wire.EventTurnCompleted, "", 0, map[string]int{"message_count": 2})
			next()
		}
	}
	// end stops the active turn for reason; steered is the steered text.
	end := func(turnID, reason, steered string) bool {
		turn := ""
		var pending []Interrupt
		f.update(func(s *Snapshot) {
			if s.State == nil || s.State.ActiveTurnID == "" || turnID != "" && s.State.ActiveTurnID != turnID {
				return
			}
			turn, pending = s.State.ActiveTurnID, s.PendingInterrupts
			s.PendingInterrupts = []Interrupt{}
		})
		if turn == "" {
			return false
		}
		for _, in := range pending {
			f.publish(wire.EventInterruptResolved, "", 0, map[string]any{"interrupt_id": in.InterruptID, "approved": false, "kind": in.Kind, "cancellation_reason": reason})
			f.update(func(s *Snapshot) {
				f.setCall(s, ToolCall{ToolCallID: in.ToolCallID, ToolName: in.ToolName, Arguments: in.Arguments, Status: ToolCallRejected, CancellationReason: reason})
			})
			f.publish(wire.EventToolCallFinished, "", 0, map[string]any{"tool_call_id": in.ToolCallID, "tool_name": in.ToolName, "status": ToolCallRejected})
		}
		f.update(func(s *Snapshot) {
			s.State = &State{Status: StatusWaitingForUserMessage, TurnCount: turns, AcceptsTurnControl: true}
			s.ToolCalls = []ToolCall{}
			if steered != "" {
				s.SteeredMessages = []QueuedMessage{{MessageID: "msg-steered", Text: steered}}
			}
		})
		if steered == "" {
			f.publishIn(turn, wire.EventTurnCancelled, "", 0, map[string]int{"message_count": 2})
			f.afterSnapshot(next)
			return true
		}
		f.publishIn(turn, wire.EventTurnSteered, "", 0, map[string]int{"steered_message_count": 1, "message_count": 2})
		f.afterSnapshot(func() { start(steered) })
		return true
	}
	f.onMessage = func(f *fakeAPI, text string) {
		busy := false
		f.update(func(s *Snapshot) {
			if busy = s.State != nil && s.State.ActiveTurnID != ""; busy {
				s.QueuedMessages = append(s.QueuedMessages, QueuedMessage{MessageID: fmt.Sprintf("msg-%d", len(s.QueuedMessages)+1), Text: text})
			}
		})
		if !busy {
			start(text)
		}
	}
	f.onSteer = func(f *fakeAPI, text string) bool {
		if !end("", wire.CancellationSteered, text) {
			start(text) // nothing to steer: the message starts a turn
		}
		return true
	}
	f.onCancel = func(f *fakeAPI, turnID string) bool { return end(turnID, wire.CancellationTurnCancelled, "") }
}

// liveChat is a chat running on f, fed line by line and Ctrl-C by Ctrl-C.
type liveChat struct {
	t          *testing.T
	f          *fakeAPI
	in         *io.PipeWriter
	ints       chan os.Signal
	out, notes *testpeer.SyncBuffer
	done       chan error
}

func startChat(t *testing.T, f *fakeAPI, interactive bool) *liveChat {
	t.Helper()
	pr, pw := io.Pipe()
	l := &liveChat{t: t, f: f, in: pw, ints: make(chan os.Signal, 1), out: &testpeer.SyncBuffer{}, notes: &testpeer.SyncBuffer{}, done: make(chan error, 1)}
	s := &Session{
		Client: f.client(t), ID: "s-1", In: pr, Out: l.out, Notes: l.notes, Interactive: interactive, Interrupts: l.ints,
		MinBackoff: 5 * time.Millisecond, MaxBackoff: 50 * time.Millisecond, IdleTimeout: 5 * time.Second, PollInterval: 10 * time.Second,
	}
	ctx, cancel := context.WithCancel(context.Background())
	go func() { l.done <- s.Run(ctx) }()
	t.Cleanup(func() {
		cancel()
		pw.Close()
		select {
		case <-l.done:
		case <-time.After(5 * time.Second):
			t.Error("the chat did not end")
		}
	})
	l.waitFor("the event stream", func() bool { return f.requested("/events") })
	return l
}

func (l *liveChat) send(line string) {
	l.t.Helper()
	if _, err := io.WriteString(l.in, line+"\n"); err != nil {
		l.t.Fatalf("type %q: %v", line, err)
	}
}

func (l *liveChat) ctrlC() {
	l.t.Helper()
	select {
	case l.ints <- os.Interrupt:
	case <-time.After(5 * time.Second):
		l.t.Fatal("the chat does not take Ctrl-C")
	}
}

// waitFor waits until cond holds, failing when the chat ends first.
func (l *liveChat) waitFor(what string, cond func() bool) {
	l.t.Helper()
	for deadline := time.Now().Add(10 * time.Second); !cond(); {
		if time.Now().After(deadline) {
			l.t.Fatalf("no %s\nout:\n%s\nnotes:\n%s\nrequests: %q", what, l.out, l.notes, l.f.requestLog())
		}
		select {
		case err := <-l.done:
			l.done <- err
			l.t.Fatalf("the chat ended (%v) before %s\nout:\n%s\nnotes:\n%s", err, what, l.out, l.notes)
		case <-time.After(5 * time.Millisecond):
		}
	}
}

func (l *liveChat) waitOut(sub string) {
	l.t.Helper()
	l.waitFor(fmt.Sprintf("%q in the output", sub), func() bool { return strings.Contains(l.out.String(), sub) })
}

func (l *liveChat) waitNotes(sub string) {
	l.t.Helper()
	l.waitFor(fmt.Sprintf("%q in the notes", sub), func() bool { return strings.Contains(l.notes.String(), sub) })
}

func (l *liveChat) waitRequest(sub string) {
	l.t.Helper()
	l.waitFor(fmt.Sprintf("request %q", sub), func() bool { return l.f.requested(sub) })
}

// running fails the test when the chat has ended.
func (l *liveChat) running() {
	l.t.Helper()
	select {
	case err := <-l.done:
		l.done <- err
		l.t.Fatalf("the chat ended: %v\nout:\n%s\nnotes:\n%s", err, l.out, l.notes)
	case <-time.After(50 * time.Millisecond):
	}
}

// end waits for Run's result.
func (l *liveChat) end() error {
	l.t.Helper()
	select {
	case err := <-l.done:
		l.done <- err
		return err
	case <-time.After(10 * time.Second):
		l.t.Fatalf("the chat did not end\nout:\n%s\nnotes:\n%s", l.out, l.notes)
		return nil
	}
}

func setCtrlCWindow(t *testing.T, d time.Duration) {
	old := ctrlCWindow
	ctrlCWindow = d
	t.Cleanup(func() { ctrlCWindow = old })
}

// TestSessionCtrlCStopsTheTurn: Ctrl-C while a turn runs cancels it (the
// chat goes on); Ctrl-C while no turn runs ends the chat.
func TestSessionCtrlCStopsTheTurn(t *testing.T) {
	// Not parallel: it sets the package's Ctrl-C window.
	setCtrlCWindow(t, 0) // the second Ctrl-C quits because no turn runs
	f := newFakeAPI(t)
	f.scriptControl()
	l := startChat(t, f, true)
	l.send("think hard")
	l.waitOut("Thinking")
	l.ctrlC()
	l.waitNotes("(stopping the turn… Ctrl-C again to quit)\n")
	l.waitNotes("(the turn was stopped)\n")
	l.waitOut("· usage: 1 model call, 15 tokens (10 in, 5 out); session total: 1 model call, 15 tokens\n\nyou> ")
	if !f.requested("cancel turn-1") {
		t.Errorf("no cancel of turn-1: %q", f.requestLog())
	}
	l.running()
	l.send("hello")
	l.waitOut("You said: hello.")
	l.waitOut("session total: 2 model calls, 30 tokens\n\nyou> ")
	l.ctrlC()
	if err := l.end(); !errors.Is(err, ErrInterrupted) || !errors.Is(err, context.Canceled) {
		t.Errorf("Run = %v, want ErrInterrupted", err)
	}
	if n := countPrefix(f.requestLog(), "cancel "); n != 1 {
		t.Errorf("%d cancels, want 1: %q", n, f.requestLog())
	}
}

// TestSessionSecondCtrlCQuits: a second Ctrl-C ends the chat while the
// turn is stopping, while the cancel request waits, and within two seconds
// of the first.
func TestSessionSecondCtrlCQuits(t *testing.T) {
	// Not parallel: it sets the package's Ctrl-C window.
	t.Run("while the turn is stopping", func(t *testing.T) {
		setCtrlCWindow(t, 0)
		f := newFakeAPI(t)
		f.scriptControl()
		f.onCancel = func(f *fakeAPI, turnID string) bool { return true } // a tool runs to its end
		l := startChat(t, f, true)
		l.send("think hard")
		l.waitOut("Thinking")
		l.ctrlC()
		l.waitRequest("cancel turn-1")
		l.running()
		l.ctrlC()
		if err := l.end(); !errors.Is(err, ErrInterrupted) {
			t.Errorf("Run = %v, want ErrInterrupted", err)
		}
	})
	t.Run("while the cancel request waits", func(t *testing.T) {
		setCtrlCWindow(t, 0)
		f := newFakeAPI(t)
		f.scriptControl()
		release := make(chan struct{})
		t.Cleanup(func() { close(release) })
		f.onCancel = func(f *fakeAPI, turnID string) bool { <-release; return true }
		l := startChat(t, f, true)
		l.send("think hard")
		l.waitOut("Thinking")
		l.ctrlC()
		l.waitRequest("cancel turn-1")
		l.ctrlC()
		if err := l.end(); !errors.Is(err, ErrInterrupted) {
			t.Errorf("Run = %v, want ErrInterrupted", err)
		}
	})
	t.Run("within two seconds", func(t *testing.T) {
		f := newFakeAPI(t)
		f.scriptControl()
		f.onCancel = func(f *fakeAPI, turnID string) bool { return false }
		l := startChat(t, f, true)
		l.send("think hard")
		l.waitOut("Thinking")
		f.update(func(s *Snapshot) { s.State.AcceptsTurnControl = false })
		l.ctrlC()
		l.waitNotes("(the turn was not stopped: a worker without turn control started it; it runs to its end)\n")
		l.running()
		l.ctrlC()
		if err := l.end(); !errors.Is(err, ErrInterrupted) {
			t.Errorf("Run = %v, want ErrInterrupted", err)
		}
	})
}

// TestSessionStopCommand: /stop at an approval stops the turn; the
// approval shows as cancelled and is not answered; /stop while no turn
// runs says so.
func TestSessionStopCommand(t *testing.T) {
	t.Parallel()
	f := newFakeAPI(t)
	f.scriptControl()
	out, notes, err := runChat(t, f, "refund order 7\n/stop\n/stop\n")
	if err != nil {
		t.Fatalf("Run: %v\n%s", err, out)
	}
	want := `you> refund order 7
→ refund_order {"order_id":"7","amount_cents":6250}
Approve refund_order {"order_id":"7","amount_cents":6250}? [y/N/r=reject with reason] /stop
✗ refund_order cancelled: the turn was stopped
· usage: 1 model call, 15 tokens (10 in, 5 out); session total: 1 model call, 15 tokens

you> /stop
`
	if diff := cmp.Diff(want, out); diff != "" {
		t.Errorf("transcript (-want +got):\n%s", diff)
	}
	wantNotes := "(stopping the turn…)\n(the approval of refund_order was cancelled: the turn was stopped)\n(the turn was stopped)\n(no turn is running)\n"
	if diff := cmp.Diff(wantNotes, notes); diff != "" {
		t.Errorf("notes (-want +got):\n%s", diff)
	}
	if !f.requested("cancel turn-1") || f.requested("/interrupts/") || f.requested("message /stop") {
		t.Errorf("requests: %q", f.requestLog())
	}
}

// TestSessionSteerCommand: /steer TEXT at an approval steers the turn: the
// approval shows as cancelled, and TEXT's turn answers. Without text it
// says how; while no turn runs, TEXT starts a turn.
func TestSessionSteerCommand(t *testing.T) {
	t.Parallel()
	f := newFakeAPI(t)
	f.scriptControl()
	out, notes, err := runChat(t, f, "refund order 7\n/steer\n/steer never mind\n")
	if err != nil {
		t.Fatalf("Run: %v\n%s", err, out)
	}
	want := `you> refund order 7
→ refund_order {"order_id":"7","amount_cents":6250}
Approve refund_order {"order_id":"7","amount_cents":6250}? [y/N/r=reject with reason] /steer
/steer never mind
✗ refund_order cancelled: the turn was steered
· usage: 1 model call, 15 tokens (10 in, 5 out); session total: 1 model call, 15 tokens
You said: never mind.
· usage: 1 model call, 15 tokens (10 in, 5 out); session total: 2 model calls, 30 tokens

`
	if diff := cmp.Diff(want, out); diff != "" {
		t.Errorf("transcript (-want +got):\n%s", diff)
	}
	wantNotes := "(/steer TEXT ends the running turn at its next safe step; the next turn starts with TEXT)\n" +
		"(steering: the turn ends at its next safe step, then your message starts the next turn)\n" +
		"(the approval of refund_order was cancelled: the turn was steered)\n" +
		"(the turn was steered: the next turn starts with the steered message)\n"
	if diff := cmp.Diff(wantNotes, notes); diff != "" {
		t.Errorf("notes (-want +got):\n%s", diff)
	}
	if !f.requested("steer never mind") || f.requested("/interrupts/") || f.requested("message never mind") || f.requested("message /steer") {
		t.Errorf("requests: %q", f.requestLog())
	}

	f = newFakeAPI(t)
	f.scriptControl()
	out, notes, err = runChat(t, f, "/steer hi\n")
	if err != nil || !strings.Contains(out, "you> /steer hi\nYou said: hi.\n") || notes != "" || !f.requested("steer hi") {
		t.Errorf("/steer while idle: Run = %v\nout:\n%s\nnotes:\n%s", err, out, notes)
	}
}

// TestSessionQueueOrSteer: a message typed while a turn runs asks whether
// to queue it or to steer the turn with it.
func TestSessionQueueOrSteer(t *testing.T) {
	t.Parallel()
	const ask = "A turn is running: [q]ueue it or [s]teer the turn with it? (q/s) "
	t.Run("queue", func(t *testing.T) {
		f := newFakeAPI(t)
		f.scriptControl()
		l := startChat(t, f, true)
		l.send("think hard")
		l.waitOut("Thinking")
		l.send("hello")
		l.waitOut(ask)
		l.send("x")
		l.waitNotes("(answer q to queue the message for after the turn, or s to steer the turn with it)\n")
		l.waitFor("the question again", func() bool { return strings.Count(l.out.String(), ask) == 2 })
		l.send("q")
		l.waitRequest("message[queue] hello")
		l.waitNotes("(queued: it starts the next turn once this one ends)\n")
		if f.snap.QueuedMessages[0].Text != "hello" {
			t.Errorf("queued: %+v", f.snap.QueuedMessages)
		}
		l.send("/stop")
		l.waitNotes("(the turn was stopped)\n")
		l.waitOut("You said: hello.\n")
		l.in.Close()
		if err := l.end(); err != nil {
			t.Errorf("Run = %v", err)
		}
		if f.requested("steer") {
			t.Errorf("requests: %q", f.requestLog())
		}
		// No "you> " prompt while the turns ran: only before the first
		// message and after the queued message's turn.
		if n := strings.Count(l.out.String(), "you> "); n != 2 {
			t.Errorf("%d prompts, want 2:\n%s", n, l.out)
		}
		if !strings.Contains(l.out.String(), "· usage: 1 model call, 15 tokens (10 in, 5 out); session total: 1 model call, 15 tokens\nYou said: hello.\n") {
			t.Errorf("the stopped turn's usage, then the queued message's answer:\n%s", l.out)
		}
	})
	t.Run("steer", func(t *testing.T) {
		f := newFakeAPI(t)
		f.scriptControl()
		l := startChat(t, f, true)
		l.send("think hard")
		l.waitOut("Thinking")
		l.send("look up order 3")
		l.waitOut(ask)
		l.send("s")
		l.waitRequest("steer look up order 3")
		l.waitNotes("(the turn was steered: the next turn starts with the steered message)\n")
		l.waitOut("You said: look up order 3.\n")
		l.in.Close()
		if err := l.end(); err != nil {
			t.Errorf("Run = %v", err)
		}
		if f.requested("message[") || f.requested("message look") || f.requested("cancel") {
			t.Errorf("requests: %q", f.requestLog())
		}
	})
}

// TestSessionClosedSession: a 409 session_closed says the session is
// closed; piped input ends with ErrSessionClosed, a terminal goes on.
func TestSessionClosedSession(t *testing.T) {
	t.Parallel()
	const msg = "session s-1 is closed: it takes no new messages; start a new session to go on"
	f := newFakeAPI(t)
	f.scriptControl()
	f.closed = true
	_, _, err := runChat(t, f, "hello\n")
	if !errors.Is(err, ErrSessionClosed) || err.Error() != msg {
		t.Errorf("Run = %v, want ErrSessionClosed: %s", err, msg)
	}
	_, _, err = runChat(t, f, "/steer hello\n")
	if !errors.Is(err, ErrSessionClosed) {
		t.Errorf("/steer: Run = %v, want ErrSessionClosed", err)
	}

	l := startChat(t, f, true)
	l.send("hello")
	l.waitNotes("(" + msg + ")\n")
	l.send("/plan hello")
	l.waitFor("a second note", func() bool { return strings.Count(l.notes.String(), msg) == 2 })
	l.in.Close()
	if err := l.end(); err != nil {
		t.Errorf("interactive: Run = %v", err)
	}
}

// TestSessionTurnControlNotes: turn_steered with several messages, and an
// approval cancelled by a steer from elsewhere.
func TestSessionTurnControlNotes(t *testing.T) {
	t.Parallel()
	f := newFakeAPI(t)
	f.scriptControl()
	f.onMessage(f, "refund order 7")
	go func() {
		// Another client steers once the chat has asked for the approval.
		for !f.requested("/events") {
			time.Sleep(5 * time.Millisecond)
		}
		time.Sleep(50 * time.Millisecond)
		f.update(func(s *Snapshot) { s.PendingInterrupts = []Interrupt{} })
		f.publish(wire.EventInterruptResolved, "", 0, map[string]any{"interrupt_id": "call_1", "approved": false, "kind": "approval", "cancellation_reason": "steered"})
		f.publish(wire.EventToolCallFinished, "", 0, map[string]any{"tool_call_id": "call_1", "tool_name": "refund_order", "status": ToolCallRejected})
		f.update(func(s *Snapshot) { s.State = &State{Status: StatusWaitingForUserMessage, TurnCount: 1} })
		f.publishIn("turn-1", wire.EventTurnSteered, "", 0, map[string]int{"steered_message_count": 2, "message_count": 3})
	}()
	out, notes, err := runChat(t, f, "y\n")
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{
		"(the approval of refund_order was cancelled: the turn was steered)\n",
		"(the turn was steered: the next turn starts with the 2 steered messages)\n",
	} {
		if !strings.Contains(notes, want) {
			t.Errorf("notes lack %q:\n%s", want, notes)
		}
	}
	if !strings.Contains(out, "✗ refund_order cancelled: the turn was steered\n") {
		t.Errorf("out:\n%s", out)
	}
}

func TestSessionHelpListsTurnControl(t *testing.T) {
	t.Parallel()
	f := newFakeAPI(t)
	f.scriptControl()
	_, notes, err := runChat(t, f, "/help\n")
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"\n  /stop ", "\n  /steer TEXT ", "Ctrl-C", "q queues it", "s steers the turn"} {
		if !strings.Contains(notes, want) {
			t.Errorf("/help lacks %q:\n%s", want, notes)
		}
	}
	if f.requested("message") {
		t.Errorf("requests: %q", f.requestLog())
	}
}

// TestInterruptContext sends this process SIGINT: outside Run it ends the
// context; during Run, while no turn runs, it ends the chat and the
// context.
func TestInterruptContext(t *testing.T) {
	t.Parallel()
	sigint := func() {
		if err := syscall.Kill(os.Getpid(), syscall.SIGINT); err != nil {
			t.Fatal(err)
		}
	}
	ctx := InterruptContext(context.Background())
	sigint()
	select {
	case <-ctx.Done():
	case <-time.After(5 * time.Second):
		t.Fatal("SIGINT did not end the context")
	}

	f := newFakeAPI(t)
	f.scriptControl()
	ctx = InterruptContext(context.Background())
	pr, pw := io.Pipe()
	defer pw.Close()
	done := make(chan error, 1)
	go func() {
		done <- (&Session{Client: f.client(t), ID: "s-1", In: pr, Out: io.Discard, Interactive: true}).Run(ctx)
	}()
	for !f.requested("/events") {
		time.Sleep(5 * time.Millisecond)
	}
	sigint()
	select {
	case err := <-done:
		if !errors.Is(err, ErrInterrupted) || ctx.Err() == nil {
			t.Errorf("Run = %v, context %v; want ErrInterrupted and an ended context", err, ctx.Err())
		}
	case <-time.After(5 * time.Second):
		t.Fatal("SIGINT did not end the chat")
	}
}
