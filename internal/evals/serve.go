package evals

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"sync"

	"github.com/dex-agents/dex-agent-worker/internal/session"
	"github.com/dex-agents/dex-agent-worker/wire"
)

// Server serves the tool calls of the sessions that replay cases from
// their records: a call with the same tool and the same arguments
// (Canonical) as an unused recorded call gets that call's result, and the
// tool never runs. A read the record lacks runs only with LiveReads; any
// other call the record lacks gets a tool error and is never run. A
// session that replays no case runs nothing.
type Server struct {
	LiveReads bool

	mu      sync.Mutex
	replays map[string]*Replay // by session ID
}

// Replay is one case being replayed.
type Replay struct {
	s          *Server
	rec        *Case
	used       []bool         // by index into rec.Records
	served     map[string]int // turn/tool call ID -> record served (a Step's retry gets it again)
	unrecorded []Unrecorded
	unanswered []Unrecorded
	// firstDeparture is where the run first left the record.
	firstDeparture *Unrecorded
}

func (r *Replay) depart(u Unrecorded) {
	if r.firstDeparture == nil {
		r.firstDeparture = &u
	}
}

// Depart records that the run left the record where the driver could not
// do what people did (an execute_plan with no draft to run).
func (r *Replay) Depart(u Unrecorded) {
	r.s.mu.Lock()
	defer r.s.mu.Unlock()
	r.unanswered = append(r.unanswered, u)
	r.depart(u)
}

// Begin serves the session sessionID from case c.
func (s *Server) Begin(sessionID string, c *Case) *Replay {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.replays == nil {
		s.replays = map[string]*Replay{}
	}
	r := &Replay{s: s, rec: c, used: make([]bool, len(c.Records)), served: map[string]int{}}
	s.replays[sessionID] = r
	return r
}

// NotRecordedText is the tool error a call the record lacks gets.
const NotRecordedText = "eval run: this call (%s with these arguments) is not in the recorded session, so it was not run"

// Serve implements steps.ToolServer.
func (s *Server) Serve(_ context.Context, in session.ToolInput, arguments string) (session.ToolOutcome, bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	r := s.replays[in.SessionID]
	if r == nil {
		msg := "eval run: this session replays no recorded case, so no tool runs in it"
		return session.ToolOutcome{Error: &msg}, true
	}
	call := in.TurnID + "/" + in.ToolCall.ToolCallID // call IDs are unique within a turn
	i, ok := r.served[call]
	if !ok {
		i = -1
		want := Canonical(arguments)
		for k, rec := range r.rec.Records {
			if r.used[k] || rec.Type != TypeToolCall || rec.ToolName != in.ToolCall.ToolName || Canonical(rec.Arguments) != want {
				continue
			}
			if rec.Status == string(wire.ToolCallSucceeded) || rec.Status == string(wire.ToolCallFailed) || rec.Status == string(wire.ToolCallOutcomeUnknown) {
				i = k
				break
			}
		}
		if i >= 0 {
			r.used[i] = true
			r.served[call] = i
		}
	}
	if i < 0 {
		effect := string(in.ToolCall.Effect)
		u := Unrecorded{Kind: "call", Tool: in.ToolCall.ToolName, Effect: effect, Arguments: arguments}
		if effect == string(wire.EffectRead) && s.LiveReads {
			r.unrecorded = append(r.unrecorded, u)
			return session.ToolOutcome{}, false
		}
		if _, seen := r.served[call]; !seen {
			r.served[call] = -1
			r.unrecorded = append(r.unrecorded, u)
			r.depart(u)
		}
		msg := fmt.Sprintf(NotRecordedText, in.ToolCall.ToolName)
		return session.ToolOutcome{Error: &msg}, true
	}
	rec := r.rec.Records[i]
	out := rec.Output
	if rec.Status == string(wire.ToolCallSucceeded) {
		return session.ToolOutcome{Output: &out}, true
	}
	if rec.Status == string(wire.ToolCallOutcomeUnknown) && out == "" {
		out = "the recorded call's outcome is unknown"
	}
	return session.ToolOutcome{Error: &out}, true
}

// AnswerApproval finds the recorded answer of an approval of a call: the
// first unused approval record of the same tool and arguments.
func (r *Replay) AnswerApproval(tool, arguments string) (Record, bool) {
	r.s.mu.Lock()
	defer r.s.mu.Unlock()
	want := Canonical(arguments)
	// Long arguments reach the driver as their beginning (the snapshot's
	// preview): they match a recorded call's arguments that begin with it.
	preview := len(arguments) >= session.PreviewBytes-4 && !json.Valid([]byte(arguments))
	for k, rec := range r.rec.Records {
		if r.used[k] || rec.Type != TypeApproval || rec.ToolName != tool {
			continue
		}
		if Canonical(rec.Arguments) == want || preview && strings.HasPrefix(rec.Arguments, arguments) {
			r.used[k] = true
			return rec, true
		}
	}
	u := Unrecorded{Kind: "approval", Tool: tool, Arguments: arguments}
	r.unanswered = append(r.unanswered, u)
	r.depart(u)
	return Record{}, false
}

// AnswerQuestion finds the recorded answer of a question: the first
// unused question record that asked the same.
func (r *Replay) AnswerQuestion(question string) (Record, bool) {
	r.s.mu.Lock()
	defer r.s.mu.Unlock()
	for k, rec := range r.rec.Records {
		if !r.used[k] && rec.Type == TypeQuestion && rec.Question == question {
			r.used[k] = true
			return rec, true
		}
	}
	u := Unrecorded{Kind: "question", Question: question}
	r.unanswered = append(r.unanswered, u)
	r.depart(u)
	return Record{}, false
}

// Finish adds what the replay saw to the comparison of the run with the
// record: the calls the record lacked (the first that was not run makes
// the case diverged) and the approvals and questions it had no answer for.
func (r *Replay) Finish(rep *CaseReport) {
	r.s.mu.Lock()
	defer r.s.mu.Unlock()
	rep.Unrecorded = append([]Unrecorded(nil), r.unrecorded...)
	rep.Unanswered = append([]Unrecorded(nil), r.unanswered...)
	// The run left the record at the first call it could not be served
	// (a read that ran live did not) or the first approval or question
	// the record had no answer for, whichever came first.
	if first := r.firstDeparture; first != nil {
		u := *first
		rep.DivergedAt = &u
		if rep.Status == "same" || rep.Status == "changed" || rep.Status == "" {
			rep.Status = "diverged" // a failed turn stays the case's status
		}
	}
}

// TotalsOf sums what a case's turns spent and did.
func TotalsOf(c *Case) Totals { return totals(c) }
