package chat

import (
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/dex-agents/dex-agent-worker/wire"

	"github.com/dex-agents/dex-agent-worker/httpclient/sse"
)

const testToken = "test-token-0123456789"

// fakeAPI serves the API of one session from memory: an event log whose
// tokens are "<epoch>.<count>", a snapshot, and scripts for messages and
// approvals. Faults are injected through its fields (under mu).
type fakeAPI struct {
	t   testing.TB
	srv *httptest.Server

	mu        sync.Mutex
	changed   chan struct{}
	epoch     string
	events    []Event
	snap      Snapshot
	turnStart map[string]int // turn → index of its turn_started
	requests  []string
	seq       int64
	served    int // snapshots answered

	onMessage func(f *fakeAPI, text string)
	onResolve func(f *fakeAPI, interruptID string, r Resolution) bool
	// onPlanMessage takes a plan_mode message (nil: plan mode is off, the
	// message is refused); onExecute answers execute_plan.
	onPlanMessage func(f *fakeAPI, text string)
	onExecute     func(f *fakeAPI, revision int) bool
	// onSteer and onCancel answer steer (with text) and cancel; a message
	// with mode steer goes to onSteer. closed answers every message, steer
	// and cancel with 409 session_closed.
	onSteer  func(f *fakeAPI, text string) bool
	onCancel func(f *fakeAPI, turnID string) bool
	closed   bool

	dropAfter   int  // end each stream after this many events (0: never)
	rejectLast  int  // answer this many Last-Event-ID reconnects with 400
	silentFirst int  // the first stream sends nothing: 1 not even headers, 2 headers only
	muted       bool // events are lost
	streams     int
}

func newFakeAPI(t testing.TB) *fakeAPI {
	f := &fakeAPI{t: t, changed: make(chan struct{}), epoch: "ep1", turnStart: map[string]int{},
		snap: Snapshot{SessionID: "s-1", Agent: "orders", Messages: []Message{}, PendingInterrupts: []Interrupt{}, ToolCalls: []ToolCall{}}}
	mux := http.NewServeMux()
	mux.HandleFunc("POST /v1/sessions", f.auth(func(w http.ResponseWriter, r *http.Request) {
		writeJSON(w, 201, map[string]string{"session_id": "s-1"})
	}))
	mux.HandleFunc("GET /v1/sessions/{id}/snapshot", f.auth(f.snapshot))
	mux.HandleFunc("GET /v1/sessions/{id}/events", f.auth(f.stream))
	mux.HandleFunc("POST /v1/sessions/{id}/messages", f.auth(func(w http.ResponseWriter, r *http.Request) {
		var body struct {
			Text     string
			PlanMode bool   `json:"plan_mode"`
			Mode     string `json:"mode"`
		}
		_ = json.NewDecoder(r.Body).Decode(&body)
		f.mu.Lock()
		switch {
		case body.PlanMode:
			f.requests = append(f.requests, "plan message "+body.Text)
		case body.Mode != "":
			f.requests = append(f.requests, "message["+body.Mode+"] "+body.Text)
		default:
			f.requests = append(f.requests, "message "+body.Text)
		}
		closed := f.closed
		f.mu.Unlock()
		if closed {
			writeAPIError(w, 409, "session_closed", "session s-1 was closed and takes no new messages")
			return
		}
		if strings.TrimSpace(body.Text) == "" || body.PlanMode && f.onPlanMessage == nil {
			writeJSON(w, 200, map[string]bool{"accepted": false})
			return
		}
		if body.Mode == SendModeSteer && f.onSteer != nil {
			writeJSON(w, 200, map[string]bool{"accepted": f.onSteer(f, body.Text)})
			return
		}
		if body.PlanMode {
			f.onPlanMessage(f, body.Text)
		} else if f.onMessage != nil {
			f.onMessage(f, body.Text)
		}
		writeJSON(w, 200, map[string]bool{"accepted": true})
	}))
	mux.HandleFunc("POST /v1/sessions/{id}/interrupts/{iid}", f.auth(func(w http.ResponseWriter, r *http.Request) {
		var res Resolution
		_ = json.NewDecoder(r.Body).Decode(&res)
		ok := false
		if f.onResolve != nil {
			ok = f.onResolve(f, r.PathValue("iid"), res)
		}
		writeJSON(w, 200, map[string]bool{"resolved": ok})
	}))
	mux.HandleFunc("POST /v1/sessions/{id}/steer", f.auth(func(w http.ResponseWriter, r *http.Request) {
		var body struct {
			Text string `json:"text"`
		}
		_ = json.NewDecoder(r.Body).Decode(&body)
		f.mu.Lock()
		f.requests = append(f.requests, "steer "+body.Text)
		closed := f.closed
		f.mu.Unlock()
		if closed {
			writeAPIError(w, 409, "session_closed", "session s-1 was closed and takes no new messages")
			return
		}
		ok := false
		if f.onSteer != nil && strings.TrimSpace(body.Text) != "" {
			ok = f.onSteer(f, body.Text)
		}
		writeJSON(w, 200, map[string]bool{"accepted": ok})
	}))
	mux.HandleFunc("POST /v1/sessions/{id}/cancel", f.auth(func(w http.ResponseWriter, r *http.Request) {
		var body struct {
			TurnID string `json:"turn_id"`
		}
		_ = json.NewDecoder(r.Body).Decode(&body)
		f.mu.Lock()
		f.requests = append(f.requests, "cancel "+body.TurnID)
		closed := f.closed
		f.mu.Unlock()
		if closed {
			writeAPIError(w, 409, "session_closed", "session s-1 was closed and takes no new messages")
			return
		}
		ok := false
		if f.onCancel != nil {
			ok = f.onCancel(f, body.TurnID)
		}
		writeJSON(w, 200, map[string]bool{"accepted": ok})
	}))
	mux.HandleFunc("POST /v1/sessions/{id}/plan/execute", f.auth(func(w http.ResponseWriter, r *http.Request) {
		var body struct {
			Revision int `json:"revision"`
		}
		_ = json.NewDecoder(r.Body).Decode(&body)
		f.mu.Lock()
		f.requests = append(f.requests, fmt.Sprintf("execute %d", body.Revision))
		f.mu.Unlock()
		ok := false
		if f.onExecute != nil {
			ok = f.onExecute(f, body.Revision)
		}
		writeJSON(w, 200, map[string]bool{"executed": ok})
	}))
	mux.HandleFunc("PUT /v1/sessions/{id}/settings", f.auth(func(w http.ResponseWriter, r *http.Request) {
		var body struct {
			SessionSettings json.RawMessage `json:"session_settings"`
		}
		_ = json.NewDecoder(r.Body).Decode(&body)
		f.mu.Lock()
		f.snap.SessionSettings = body.SessionSettings
		f.requests = append(f.requests, "settings "+string(body.SessionSettings))
		f.mu.Unlock()
		writeJSON(w, 200, map[string]bool{"updated": true})
	}))
	f.srv = httptest.NewServer(mux)
	t.Cleanup(f.srv.Close)
	return f
}

func writeJSON(w http.ResponseWriter, status int, v any) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	_ = json.NewEncoder(w).Encode(v)
}

func writeAPIError(w http.ResponseWriter, status int, code, msg string) {
	writeJSON(w, status, map[string]any{"error": map[string]string{"code": code, "message": msg}})
}

func (f *fakeAPI) auth(h http.HandlerFunc) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		f.mu.Lock()
		entry := r.Method + " " + r.URL.Path
		if id := r.Header.Get("Last-Event-ID"); id != "" {
			entry += " Last-Event-ID=" + id
		}
		if tok := r.URL.Query().Get("resume_token"); tok != "" {
			entry += " resume_token=" + tok
		}
		f.requests = append(f.requests, entry)
		f.mu.Unlock()
		if r.Header.Get("Authorization") != "Bearer "+testToken {
			writeAPIError(w, 401, "unauthorized", "missing or unknown bearer token")
			return
		}
		h(w, r)
	}
}

// requested reports whether a request whose log entry contains sub came in.
func (f *fakeAPI) requested(sub string) bool {
	for _, r := range f.requestLog() {
		if strings.Contains(r, sub) {
			return true
		}
	}
	return false
}

func (f *fakeAPI) requestLog() []string {
	f.mu.Lock()
	defer f.mu.Unlock()
	return append([]string(nil), f.requests...)
}

func (f *fakeAPI) client(t testing.TB) *Client {
	c, err := NewClient(f.srv.URL, testToken, nil)
	if err != nil {
		t.Fatal(err)
	}
	return c
}

func (f *fakeAPI) token(n int) string { return f.epoch + "." + strconv.Itoa(n) }

func (f *fakeAPI) snapshot(w http.ResponseWriter, r *http.Request) {
	f.mu.Lock()
	defer f.mu.Unlock()
	tok := f.token(len(f.events))
	if f.snap.State != nil && f.snap.State.ActiveTurnID != "" {
		if i, ok := f.turnStart[f.snap.State.ActiveTurnID]; ok {
			tok = f.token(i)
		}
	}
	writeJSON(w, 200, map[string]any{"snapshot": f.snap, "resume_token": tok})
	f.served++
}

// afterSnapshot runs fn once the chat has loaded a snapshot after now.
func (f *fakeAPI) afterSnapshot(fn func()) {
	f.mu.Lock()
	base := f.served
	f.mu.Unlock()
	go func() {
		for {
			f.mu.Lock()
			n := f.served
			f.mu.Unlock()
			if n > base {
				fn()
				return
			}
			time.Sleep(time.Millisecond)
		}
	}()
}

func (f *fakeAPI) stream(w http.ResponseWriter, r *http.Request) {
	f.mu.Lock()
	tok := r.Header.Get("Last-Event-ID")
	reconnect := tok != ""
	if tok == "" {
		tok = r.URL.Query().Get("resume_token")
	}
	epoch, num, _ := strings.Cut(tok, ".")
	n, err := strconv.Atoi(num)
	switch {
	case err != nil || epoch != f.epoch || n > len(f.events) || n < 0:
		f.mu.Unlock()
		writeAPIError(w, 400, "bad_request", "invalid resume token: reload the snapshot")
		return
	case reconnect && f.rejectLast > 0:
		f.rejectLast--
		f.mu.Unlock()
		writeAPIError(w, 400, "bad_request", "events after this resume token were trimmed")
		return
	}
	f.streams++
	silent := 0
	if f.streams == 1 {
		silent = f.silentFirst
	}
	f.mu.Unlock()
	w.Header().Set("Content-Type", "text/event-stream")
	w.WriteHeader(200)
	flusher := w.(http.Flusher)
	if silent == 2 {
		flusher.Flush()
	}
	if silent != 0 {
		<-r.Context().Done()
		return
	}
	_, _ = fmt.Fprint(w, ": stream open\n\n")
	flusher.Flush()
	sent := 0
	for {
		f.mu.Lock()
		batch := f.events[n:]
		changed := f.changed
		drop := f.dropAfter
		f.mu.Unlock()
		for _, e := range batch {
			data, _ := json.Marshal(e)
			n++
			if err := sse.Write(w, sse.Event{ID: f.token(n), Data: string(data)}); err != nil {
				return
			}
			flusher.Flush()
			sent++
			if drop > 0 && sent >= drop {
				return
			}
		}
		select {
		case <-r.Context().Done():
			return
		case <-changed:
		case <-time.After(50 * time.Millisecond):
			_, _ = fmt.Fprint(w, ": keep-alive\n\n")
			flusher.Flush()
		}
	}
}

// publish appends an event of the active turn.
func (f *fakeAPI) publish(typ, step string, attempt int, payload any) {
	f.mu.Lock()
	turn := ""
	if f.snap.State != nil {
		turn = f.snap.State.ActiveTurnID
	}
	f.mu.Unlock()
	f.publishIn(turn, typ, step, attempt, payload)
}

// publishIn appends an event of a turn, unless the fake is muted.
func (f *fakeAPI) publishIn(turn, typ, step string, attempt int, payload any) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.muted {
		return
	}
	b, _ := json.Marshal(payload)
	if typ == wire.EventTurnStarted {
		f.turnStart[turn] = len(f.events)
	}
	f.events = append(f.events, Event{SessionID: "s-1", Type: typ, TurnID: turn, StepExecutionID: step, Attempt: attempt, Payload: b})
	close(f.changed)
	f.changed = make(chan struct{})
}

// update changes the snapshot.
func (f *fakeAPI) update(fn func(s *Snapshot)) {
	f.mu.Lock()
	defer f.mu.Unlock()
	fn(&f.snap)
}

func (f *fakeAPI) addMessage(s *Snapshot, role wire.Role, text, toolCallID, toolName string) {
	f.seq++
	turn := ""
	if s.State != nil {
		turn = s.State.ActiveTurnID
	}
	s.Messages = append(s.Messages, Message{Sequence: f.seq, Role: role, Text: text, ToolCallID: toolCallID, ToolName: toolName, TurnID: turn})
}

func (f *fakeAPI) setCall(s *Snapshot, tc ToolCall) {
	for i := range s.ToolCalls {
		if s.ToolCalls[i].ToolCallID == tc.ToolCallID {
			s.ToolCalls[i] = tc
			return
		}
	}
	s.ToolCalls = append(s.ToolCalls, tc)
}

func usage(calls, in, out int64) Usage {
	return Usage{InputTokens: in, OutputTokens: out, TotalTokens: in + out, ModelCalls: calls}
}

// deltas publishes text in chunks of three bytes, as the demo model does.
func (f *fakeAPI) deltas(step string, attempt int, text string) {
	for len(text) > 0 {
		n := min(3, len(text))
		f.publish(wire.EventTextDelta, step, attempt, map[string]string{"text": text[:n]})
		text = text[n:]
	}
}

func (f *fakeAPI) recordUsage(step string, attempt int, u Usage) {
	var total Usage
	f.update(func(s *Snapshot) { s.Usage = s.Usage.Add(u); total = s.Usage })
	f.publish(wire.EventUsageRecorded, step, attempt, map[string]Usage{"recorded": u, "session": total})
}

const (
	lookupArgs  = `{"order_id": "7"}`
	refundArgs  = `{"order_id":"7","amount_cents":6250}`
	lookupOut   = `{"id":"7","item":"Blue kettle","total_cents":6250}`
	proposal    = "Order 7 (Blue kettle) has $62.50 left to refund. I'll ask to refund it."
	finalAnswer = "Done. Refunded $62.50 of order 7 (Blue kettle); order status: refunded."
)

// scriptOrders plays the orders demo: "refund order 7" looks the order up,
// asks to refund it, and reports. lose drops the events after the approval
// (the snapshot still moves on).
func (f *fakeAPI) scriptOrders(lose bool) {
	turns := 0
	f.onMessage = func(f *fakeAPI, text string) {
		turns++
		turn := "turn-" + strconv.Itoa(turns)
		f.update(func(s *Snapshot) {
			s.State = &State{Status: StatusRunningModel, ActiveTurnID: turn, TurnCount: turns}
			f.addMessage(s, RoleUser, text, "", "")
			s.ToolCalls = []ToolCall{}
		})
		f.publish(wire.EventTurnStarted, "", 0, map[string]int64{"sequence": f.seq})
		if text != "refund order 7" {
			f.deltas("run/"+turn+"/1", 1, "I can refund orders.")
			f.recordUsage("run/"+turn+"/1", 1, usage(1, 10, 5))
			f.update(func(s *Snapshot) {
				f.addMessage(s, RoleAssistant, "I can refund orders.", "", "")
				s.State = &State{Status: StatusWaitingForUserMessage, TurnCount: turns}
			})
			f.publishIn(turn, wire.EventTurnCompleted, "", 0, map[string]int{"message_count": 2})
			return
		}
		f.recordUsage("run/1", 1, usage(1, 100, 20))
		f.update(func(s *Snapshot) {
			f.addMessage(s, RoleAssistant, "", "", "")
			f.setCall(s, ToolCall{ToolCallID: "call_1_0", ToolName: "lookup_order", Arguments: lookupArgs, Effect: "read", Status: "approved"})
			s.State.Status = StatusRunningTools
		})
		f.publish(wire.EventToolCallDeferred, "", 0, map[string]any{"tool_call_id": "call_1_0", "tool_name": "lookup_order", "effect": "read", "requires_approval": false})
		f.publish(wire.EventToolCallStarted, "tool/2", 1, map[string]any{"tool_call_id": "call_1_0", "tool_name": "lookup_order"})
		f.update(func(s *Snapshot) {
			f.setCall(s, ToolCall{ToolCallID: "call_1_0", ToolName: "lookup_order", Arguments: lookupArgs, Effect: "read", Status: ToolCallSucceeded, Output: lookupOut})
			f.addMessage(s, RoleTool, lookupOut, "call_1_0", "lookup_order")
			s.State.Status = StatusRunningModel
		})
		f.publish(wire.EventToolCallFinished, "", 0, map[string]any{"tool_call_id": "call_1_0", "tool_name": "lookup_order", "status": ToolCallSucceeded})
		f.deltas("run/3", 1, proposal)
		f.recordUsage("run/3", 1, usage(1, 150, 40))
		f.update(func(s *Snapshot) {
			f.addMessage(s, RoleAssistant, proposal, "", "")
			f.setCall(s, ToolCall{ToolCallID: "call_3_0", ToolName: "refund_order", Arguments: refundArgs, Effect: "non_idempotent_write", RequiresApproval: true, Status: "awaiting_approval"})
			s.PendingInterrupts = []Interrupt{{InterruptID: "call_3_0", ToolCallID: "call_3_0", ToolName: "refund_order", Arguments: refundArgs, Kind: "approval", Digest: fakeDigest("call_3_0")}}
			s.State.Status = StatusRunningTools
		})
		f.publish(wire.EventToolCallDeferred, "", 0, map[string]any{"tool_call_id": "call_3_0", "tool_name": "refund_order", "effect": "non_idempotent_write", "requires_approval": true})
		f.publish(wire.EventInterruptRaised, "", 0, map[string]any{"interrupt_id": "call_3_0", "tool_call_id": "call_3_0", "tool_name": "refund_order", "kind": "approval", "digest": fakeDigest("call_3_0")})
	}
	f.onResolve = func(f *fakeAPI, id string, r Resolution) bool {
		if r.Digest != fakeDigest(id) {
			// A worker that signs approvals refuses it (409 there).
			f.mu.Lock()
			f.requests = append(f.requests, "resolve without the digest "+id)
			f.mu.Unlock()
			return false
		}
		pending := false
		turn := ""
		f.update(func(s *Snapshot) {
			pending = len(s.PendingInterrupts) == 1 && s.PendingInterrupts[0].InterruptID == id
			s.PendingInterrupts = []Interrupt{}
			turn = s.State.ActiveTurnID
		})
		if !pending {
			return false
		}
		if lose {
			f.mu.Lock()
			f.muted = true
			f.mu.Unlock()
		}
		f.publish(wire.EventInterruptResolved, "", 0, map[string]any{"interrupt_id": id, "approved": r.Approved, "rejection_message": r.RejectionMessage, "kind": "approval"})
		answer := finalAnswer
		status := ToolCallSucceeded
		if r.Approved {
			f.publish(wire.EventToolCallStarted, "tool/4", 1, map[string]any{"tool_call_id": id, "tool_name": "refund_order"})
		} else {
			answer, status = "OK, I did not refund order 7. ("+r.RejectionMessage+")", ToolCallRejected
		}
		f.update(func(s *Snapshot) {
			f.setCall(s, ToolCall{ToolCallID: id, ToolName: "refund_order", Arguments: refundArgs, Status: status})
			f.addMessage(s, RoleTool, "Refunded $62.50", id, "refund_order")
			s.State.Status = StatusRunningModel
		})
		f.publish(wire.EventToolCallFinished, "", 0, map[string]any{"tool_call_id": id, "tool_name": "refund_order", "status": status})
		go func() {
			// The session goes on after the update, as a real one does;
			// the chat must take the events in whatever order they come.
			f.deltas("run/5", 1, answer)
			f.recordUsage("run/5", 1, usage(1, 200, 30))
			f.update(func(s *Snapshot) {
				f.addMessage(s, RoleAssistant, answer, "", "")
				s.State = &State{Status: StatusWaitingForUserMessage, TurnCount: s.State.TurnCount}
				s.ToolCalls = []ToolCall{}
			})
			f.publishIn(turn, wire.EventTurnCompleted, "", 0, map[string]int{"message_count": 7})
		}()
		return true
	}
}

// fakeDigest is the approval digest the fake session shows and wants back.
func fakeDigest(interruptID string) string { return "v1.fake-digest-of-" + interruptID }
