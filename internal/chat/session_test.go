package chat

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/dex-agents/dex-agent-worker/wire"

	"github.com/google/go-cmp/cmp"
)

// runChat runs a Session on f with input piped in, and returns what it
// wrote to Out and to Notes.
func runChat(t *testing.T, f *fakeAPI, input string, opts ...func(*Session)) (string, string, error) {
	t.Helper()
	var out, notes bytes.Buffer
	s := &Session{
		Client: f.client(t), ID: "s-1", In: strings.NewReader(input), Out: &out, Notes: &notes,
		MinBackoff: 5 * time.Millisecond, MaxBackoff: 50 * time.Millisecond,
		IdleTimeout: 5 * time.Second, PollInterval: 10 * time.Second,
	}
	for _, o := range opts {
		o(s)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	err := s.Run(ctx)
	if ctx.Err() != nil {
		t.Fatalf("the chat did not end: %v\nout:\n%s\nnotes:\n%s", err, out.String(), notes.String())
	}
	return out.String(), notes.String(), err
}

// ordersTranscript is the chat of the orders demo with "refund order 7"
// and "y".
const ordersTranscript = `you> refund order 7
→ lookup_order {"order_id":"7"}
✓ lookup_order succeeded
Order 7 (Blue kettle) has $62.50 left to refund. I'll ask to refund it.
→ refund_order {"order_id":"7","amount_cents":6250}
Approve refund_order {"order_id":"7","amount_cents":6250}? [y/N/r=reject with reason] y
✓ refund_order succeeded
Done. Refunded $62.50 of order 7 (Blue kettle); order status: refunded.
· usage: 3 model calls, 540 tokens (450 in, 90 out); session total: 3 model calls, 540 tokens

`

func TestSessionOrdersDemo(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name  string
		fault func(f *fakeAPI)
		opts  func(s *Session)
		check func(t *testing.T, f *fakeAPI, notes string)
	}{
		{name: "one stream"},
		{
			name:  "dropped streams reconnect with Last-Event-ID",
			fault: func(f *fakeAPI) { f.dropAfter = 3 },
			check: func(t *testing.T, f *fakeAPI, notes string) {
				if n := countPrefix(f.requestLog(), "GET /v1/sessions/s-1/events Last-Event-ID=ep1."); n < 5 {
					t.Errorf("%d reconnects with Last-Event-ID, want many:\n%s", n, strings.Join(f.requestLog(), "\n"))
				}
			},
		},
		{
			name:  "a 400 on reconnect reloads the snapshot and replays the turn without repeats",
			fault: func(f *fakeAPI) { f.dropAfter = 4; f.rejectLast = 3 },
			check: func(t *testing.T, f *fakeAPI, notes string) {
				log := f.requestLog()
				if n := countPrefix(log, "GET /v1/sessions/s-1/events resume_token=ep1.0"); n < 3 {
					t.Errorf("%d streams from the turn's start, want 3 replays after 400s:\n%s", n, strings.Join(log, "\n"))
				}
			},
		},
		{
			name:  "a stream without headers is dropped after IdleTimeout",
			fault: func(f *fakeAPI) { f.silentFirst = 1 },
			opts:  func(s *Session) { s.IdleTimeout = 200 * time.Millisecond },
			check: func(t *testing.T, f *fakeAPI, notes string) {
				if n := countPrefix(f.requestLog(), "GET /v1/sessions/s-1/events"); n < 2 {
					t.Errorf("%d streams, want a second one after the silent first", n)
				}
			},
		},
		{
			name:  "a silent stream is dropped after IdleTimeout",
			fault: func(f *fakeAPI) { f.silentFirst = 2 },
			opts:  func(s *Session) { s.IdleTimeout = 200 * time.Millisecond },
			check: func(t *testing.T, f *fakeAPI, notes string) {
				if n := countPrefix(f.requestLog(), "GET /v1/sessions/s-1/events"); n < 2 {
					t.Errorf("%d streams, want a second one after the silent first", n)
				}
			},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			f := newFakeAPI(t)
			f.scriptOrders(false)
			if tt.fault != nil {
				tt.fault(f)
			}
			var opts []func(*Session)
			if tt.opts != nil {
				opts = append(opts, tt.opts)
			}
			out, notes, err := runChat(t, f, "refund order 7\ny\n", opts...)
			if err != nil {
				t.Fatalf("Run: %v\n%s", err, out)
			}
			if diff := cmp.Diff(ordersTranscript, out); diff != "" {
				t.Errorf("transcript (-want +got):\n%s\nnotes:\n%s", diff, notes)
			}
			if tt.check != nil {
				tt.check(t, f, notes)
			}
		})
	}
}

func countPrefix(lines []string, prefix string) int {
	n := 0
	for _, l := range lines {
		if strings.HasPrefix(l, prefix) {
			n++
		}
	}
	return n
}

func TestSessionRejectWithReason(t *testing.T) {
	t.Parallel()
	for _, input := range []string{"refund order 7\nr\ntoo expensive\n", "refund order 7\nr too expensive\n"} {
		f := newFakeAPI(t)
		f.scriptOrders(false)
		out, _, err := runChat(t, f, input)
		if err != nil {
			t.Fatal(err)
		}
		for _, want := range []string{
			"[y/N/r=reject with reason] r",
			"✗ refund_order rejected: too expensive\nOK, I did not refund order 7. (too expensive)\n",
		} {
			if !strings.Contains(out, want) {
				t.Errorf("input %q: output lacks %q:\n%s", input, want, out)
			}
		}
	}
}

// TestSessionLostEvents: the events after the approval never arrive; the
// snapshot, reloaded after a quiet PollInterval, ends the turn and shows the
// stored answer and tool result.
func TestSessionLostEvents(t *testing.T) {
	t.Parallel()
	f := newFakeAPI(t)
	f.scriptOrders(true)
	out, _, err := runChat(t, f, "refund order 7\ny\n", func(s *Session) { s.PollInterval = 100 * time.Millisecond })
	if err != nil {
		t.Fatal(err)
	}
	want := strings.Replace(ordersTranscript, "✓ refund_order succeeded\n", "← refund_order: Refunded $62.50\n", 1)
	if diff := cmp.Diff(want, out); diff != "" {
		t.Errorf("transcript (-want +got):\n%s", diff)
	}
}

func TestSessionEOFWhileApprovalWaits(t *testing.T) {
	t.Parallel()
	f := newFakeAPI(t)
	f.scriptOrders(false)
	out, _, err := runChat(t, f, "refund order 7\n")
	if !errors.Is(err, ErrPendingApproval) || !strings.Contains(err.Error(), "refund_order") {
		t.Errorf("Run = %v, want ErrPendingApproval naming refund_order", err)
	}
	if !strings.HasSuffix(out, "[y/N/r=reject with reason] \n") {
		t.Errorf("output:\n%s", out)
	}
}

// TestSessionTurns sends two messages: the second is read only after the
// first turn ended; blank lines are skipped.
func TestSessionTurns(t *testing.T) {
	t.Parallel()
	f := newFakeAPI(t)
	f.scriptOrders(false)
	out, _, err := runChat(t, f, "hello\n\n  \nhello again")
	if err != nil {
		t.Fatal(err)
	}
	want := `you> hello
I can refund orders.
· usage: 1 model call, 15 tokens (10 in, 5 out); session total: 1 model call, 15 tokens

you> 
you>   
you> hello again
I can refund orders.
· usage: 1 model call, 15 tokens (10 in, 5 out); session total: 2 model calls, 30 tokens

`
	if diff := cmp.Diff(want, out); diff != "" {
		t.Errorf("transcript (-want +got):\n%s", diff)
	}
}

// TestSessionResume joins a session in the middle of a turn that waits for
// approval: the stored conversation is shown without the active turn's
// answer, which the snapshot's token replays; the approval is asked once.
func TestSessionResume(t *testing.T) {
	t.Parallel()
	f := newFakeAPI(t)
	f.scriptOrders(false)
	f.onMessage(f, "hello")
	f.onMessage(f, "refund order 7")
	out, _, err := runChat(t, f, "y\n")
	if err != nil {
		t.Fatal(err)
	}
	want := `you> hello
I can refund orders.
you> refund order 7
(turn turn-2 is running)

→ lookup_order {"order_id":"7"}
✓ lookup_order succeeded
Order 7 (Blue kettle) has $62.50 left to refund. I'll ask to refund it.
→ refund_order {"order_id":"7","amount_cents":6250}
Approve refund_order {"order_id":"7","amount_cents":6250}? [y/N/r=reject with reason] y
✓ refund_order succeeded
Done. Refunded $62.50 of order 7 (Blue kettle); order status: refunded.
· usage: 3 model calls, 540 tokens (450 in, 90 out); session total: 4 model calls, 555 tokens

`
	if diff := cmp.Diff(want, out); diff != "" {
		t.Errorf("transcript (-want +got):\n%s", diff)
	}
}

func TestSessionHistoryIsBrief(t *testing.T) {
	t.Parallel()
	f := newFakeAPI(t)
	f.scriptOrders(false)
	for i := range 15 {
		f.onMessage(f, fmt.Sprintf("hello %d", i))
	}
	out, _, err := runChat(t, f, "")
	if err != nil {
		t.Fatal(err)
	}
	if !strings.HasPrefix(out, "(10 earlier messages)\nyou> hello 5\nI can refund orders.\n") || strings.Count(out, "\n") != 22 {
		t.Errorf("history:\n%s", out)
	}
}

func TestSessionCtrlC(t *testing.T) {
	t.Parallel()
	f := newFakeAPI(t)
	f.scriptOrders(false)
	pr, pw := io.Pipe()
	defer pw.Close()
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	var out bytes.Buffer
	go func() {
		done <- (&Session{Client: f.client(t), ID: "s-1", In: pr, Out: &out, Interactive: true}).Run(ctx)
	}()
	// Ctrl-C once the chat is running: it has opened the event stream.
	for deadline := time.Now().Add(10 * time.Second); !f.requested("/events"); {
		if time.Now().After(deadline) {
			t.Fatalf("the chat opened no event stream; requests: %q", f.requestLog())
		}
		select {
		case err := <-done:
			t.Fatalf("Run returned before Ctrl-C: %v", err)
		case <-time.After(10 * time.Millisecond):
		}
	}
	cancel()
	select {
	case err := <-done:
		if !errors.Is(err, context.Canceled) {
			t.Errorf("Run = %v, want context.Canceled", err)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("Run did not return after its context ended")
	}
	if out.String() != "you> \n" {
		t.Errorf("output %q, want the prompt and a newline", out.String())
	}
}

func TestSessionUnauthorized(t *testing.T) {
	t.Parallel()
	f := newFakeAPI(t)
	c, _ := NewClient(f.srv.URL, "wrong-token", nil)
	err := (&Session{Client: c, ID: "s-1", In: strings.NewReader(""), Out: io.Discard}).Run(context.Background())
	var apiErr *APIError
	if !errors.As(err, &apiErr) || apiErr.Code != "unauthorized" || err.Error() != "missing or unknown bearer token" {
		t.Errorf("Run = %v, want the API's unauthorized error", err)
	}
}

// TestAttemptRule replays canned SSE: attempt 1 of a model call streams
// text, attempt 2 of the same step execution restarts it, and a late delta
// of attempt 1 is dropped. The stored answer equals the live text, so it is
// not written again.
func TestAttemptRule(t *testing.T) {
	t.Parallel()
	frames := []string{
		": stream open\r\n\r\n",
		"id: t1\r\ndata: " + `{"session_id":"s-1","type":"turn_started","turn_id":"turn-1","attempt":0,"payload":"{\"sequence\":1}"}` + "\r\n\r\n",
		"id: t2\ndata: " + `{"session_id":"s-1","type":"text_delta","turn_id":"turn-1","step_execution_id":"r/1","attempt":1,"payload":"{\"text\":\"Hel\"}"}` + "\n\n",
		// One event over three data lines (JSON allows the line breaks).
		"id: t3\ndata: {\"session_id\":\"s-1\",\"type\":\"text_delta\",\ndata: \"turn_id\":\"turn-1\",\"step_execution_id\":\"r/1\",\ndata: \"attempt\":1,\"payload\":\"{\\\"text\\\":\\\"lo th\\\"}\"}\n\n",
		": keep-alive\n\n",
		"id: t4\ndata: " + `{"session_id":"s-1","type":"text_delta","turn_id":"turn-1","step_execution_id":"r/1","attempt":2,"payload":"{\"text\":\"Hello\"}"}` + "\n\n",
		"id: t5\ndata: " + `{"session_id":"s-1","type":"text_delta","turn_id":"turn-1","step_execution_id":"r/1","attempt":1,"payload":"{\"text\":\"ere\"}"}` + "\n\n",
		"retry: 1000\nid: t6\ndata: " + `{"session_id":"s-1","type":"text_delta","turn_id":"turn-1","step_execution_id":"r/1","attempt":2,"payload":{"text":" world"}}` + "\n\n",
		"id: t7\n\n", // an id without data moves the reconnect position only
		"id: t8\ndata: " + `{"session_id":"s-1","type":"usage_recorded","turn_id":"turn-1","attempt":0,"payload":"{\"recorded\":{\"input_tokens\":7,\"output_tokens\":3,\"total_tokens\":10,\"model_calls\":2},\"session\":{\"input_tokens\":7,\"output_tokens\":3,\"total_tokens\":10,\"model_calls\":2}}"}` + "\n\n",
		"id: t9\ndata: " + `{"session_id":"s-1","type":"turn_completed","turn_id":"turn-1","attempt":0,"payload":"{\"message_count\":2}"}` + "\n\n",
	}
	active := `{"snapshot":{"session_id":"s-1","agent":"orders","state":{"status":"running_model","active_turn_id":"turn-1","turn_count":1},
		"messages":[{"sequence":1,"role":"user","text":"hi","turn_id":"turn-1"}]},"resume_token":"t0"}`
	idle := `{"snapshot":{"session_id":"s-1","agent":"orders","state":{"status":"waiting_for_user_message","turn_count":1},
		"messages":[{"sequence":1,"role":"user","text":"hi","turn_id":"turn-1"},{"sequence":2,"role":"assistant","text":"Hello world","turn_id":"turn-1"}],
		"usage":{"input_tokens":7,"output_tokens":3,"total_tokens":10,"model_calls":2}},"resume_token":"t9"}`
	var snapshots atomic.Int32
	var lastEventIDs []string
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		switch r.URL.Path {
		case "/v1/sessions/s-1/snapshot":
			w.Header().Set("Content-Type", "application/json")
			if snapshots.Add(1) == 1 {
				io.WriteString(w, active)
			} else {
				io.WriteString(w, idle)
			}
		case "/v1/sessions/s-1/events":
			w.Header().Set("Content-Type", "text/event-stream")
			if id := r.Header.Get("Last-Event-ID"); id != "" {
				lastEventIDs = append(lastEventIDs, id)
				<-r.Context().Done()
				return
			}
			if r.URL.Query().Get("resume_token") != "t0" {
				http.Error(w, "bad token", http.StatusBadRequest)
				return
			}
			for _, fr := range frames {
				io.WriteString(w, fr)
				w.(http.Flusher).Flush()
			}
		default:
			http.NotFound(w, r)
		}
	}))
	defer srv.Close()
	c, err := NewClient(srv.URL, testToken, nil)
	if err != nil {
		t.Fatal(err)
	}
	var out bytes.Buffer
	s := &Session{Client: c, ID: "s-1", In: strings.NewReader(""), Out: &out, MinBackoff: time.Millisecond}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := s.Run(ctx); err != nil {
		t.Fatal(err)
	}
	want := `you> hi
(turn turn-1 is running)

Hello th
(retrying…)
Hello world
· usage: 2 model calls, 10 tokens (7 in, 3 out); session total: 2 model calls, 10 tokens

`
	if diff := cmp.Diff(want, out.String()); diff != "" {
		t.Errorf("transcript (-want +got):\n%s", diff)
	}
}

// TestSessionModelCommand: /model shows the model setting, /model NAME sets
// it for the next turns keeping the other settings, /model - removes it;
// none of them is sent as a message.
func TestSessionModelCommand(t *testing.T) {
	t.Parallel()
	f := newFakeAPI(t)
	f.scriptOrders(false)
	f.snap.SessionSettings = json.RawMessage(`{"tone":"brief"}`)
	_, notes, err := runChat(t, f, "/model\n/model deep\n/model\n/model -\nhello")
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{
		"(model: the agent's default; /model NAME switches to one the agent allows)",
		"(the next turn uses model deep)",
		"(model: deep; /model NAME switches, /model - returns to the agent's default)",
		"(the next turn uses the agent's default model)",
	} {
		if !strings.Contains(notes, want) {
			t.Errorf("notes lack %q:\n%s", want, notes)
		}
	}
	if !f.requested(`settings {"model":"deep","tone":"brief"}`) || !f.requested(`settings {"tone":"brief"}`) {
		t.Errorf("settings sent: %v", f.requestLog())
	}
	if f.requested("message /model") || !f.requested("message hello") {
		t.Errorf("messages sent: %v", f.requestLog())
	}
}

// TestSessionCompactionNotes: the compaction events show as notes, and a
// turn a spend limit stopped shows its reason.
func TestSessionCompactionNotes(t *testing.T) {
	t.Parallel()
	f := newFakeAPI(t)
	turns := 0
	f.onMessage = func(f *fakeAPI, text string) {
		turns++
		turn := "turn-" + fmt.Sprint(turns)
		f.update(func(s *Snapshot) {
			s.State = &State{Status: StatusRunningModel, ActiveTurnID: turn, TurnCount: turns}
			f.addMessage(s, RoleUser, text, "", "")
		})
		f.publish(wire.EventTurnStarted, "", 0, map[string]int64{"sequence": f.seq})
		if turns == 1 {
			f.publish(wire.EventCompactionStarted, "run/1", 1, map[string]int64{"through_sequence": 40})
			f.publish(wire.EventCompactionFinished, "compact/1", 1, map[string]any{"generation": 2, "through_sequence": 40})
			f.deltas("run/2", 1, "Still here.")
			f.update(func(s *Snapshot) {
				f.addMessage(s, RoleAssistant, "Still here.", "", "")
				s.State = &State{Status: StatusWaitingForUserMessage, TurnCount: turns}
			})
			f.publishIn(turn, wire.EventTurnCompleted, "", 0, map[string]int{"message_count": 2})
			return
		}
		const reason = "spend limit reached: this session used 3 model calls of its 3 model calls"
		f.publish(wire.EventSpendLimitReached, "run/3", 1, map[string]any{"scope": "session", "counter": "model_calls", "used": 3, "limit": 3, "reason": reason})
		f.update(func(s *Snapshot) {
			s.State = &State{Status: StatusWaitingForUserMessage, TurnCount: turns, LastTurnError: reason}
		})
		f.publishIn(turn, wire.EventTurnFailed, "", 0, map[string]string{"error": reason})
	}
	out, notes, err := runChat(t, f, "hello\nmore\n")
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(notes, "(compacting the conversation: the model gets a summary of the older messages)\n(summary 2 covers messages 1 to 40)\n") {
		t.Errorf("notes = %q", notes)
	}
	if !strings.Contains(out, "Still here.") || !strings.Contains(out, "✗ turn failed: spend limit reached: this session used 3 model calls of its 3 model calls\n") {
		t.Errorf("out = %q", out)
	}
}
