// Package evals turns recorded sessions into portable evaluation cases
// (eval capture) and compares a changed agent's run of them with the
// record. A case is one session as versioned JSON Lines: a header, then
// the user's messages, the tool calls with their arguments and results,
// the approvals and answers people gave, and each turn's answer, usage
// and cost, in the order they happened.
package evals

import (
	"bufio"
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"sort"
	"strings"
)

// Format is the version of the case format, in every case's header. A
// reader refuses another major version.
const Format = "dex-eval-case/1"

// Record types: the header first, then the rest in the order they
// happened.
const (
	TypeCase        = "case"
	TypeUserMessage = "user_message"
	TypeToolCall    = "tool_call"
	TypeApproval    = "approval"
	TypeQuestion    = "question"
	TypeTurn        = "turn"
	// TypeExecutePlan: the user ran the session's draft plan
	// (execute_plan), after the plan-mode message that drafted it.
	TypeExecutePlan = "execute_plan"
)

// Header is a case's first line.
type Header struct {
	Type      string `json:"type"` // "case"
	Format    string `json:"format"`
	SessionID string `json:"session_id"`
	Agent     string `json:"agent"`
	FlowType  string `json:"flow_type"`
	// StartedAt is when the session started; CapturedAt when it was
	// captured (RFC 3339 UTC).
	StartedAt  string `json:"started_at"`
	CapturedAt string `json:"captured_at"`
	// Runs counts the workflow runs read (continue-as-new makes more).
	Runs int `json:"runs"`
	// Status is the session's workflow status when captured: running,
	// completed, failed, canceled, terminated, timed_out.
	Status string `json:"status"`
	// Settings are the session settings it started with (a JSON object).
	Settings json.RawMessage `json:"settings,omitempty"`
}

// Record is one line after the header. Type says which fields are set.
type Record struct {
	Type string `json:"type"`
	// Turn is the turn the record belongs to ("turn-3"); a user message
	// has none (it is queued, and starts or steers a turn).
	Turn string `json:"turn,omitempty"`

	// user_message: the text, and whether it was sent in plan mode or as
	// a steer of the running turn.
	Text     string `json:"text,omitempty"`
	PlanMode bool   `json:"plan_mode,omitempty"`
	Steer    bool   `json:"steer,omitempty"`

	// execute_plan: the plan revision run.
	Revision int `json:"revision,omitempty"`

	// tool_call, approval, question: the call.
	ToolCallID string `json:"tool_call_id,omitempty"`
	ToolName   string `json:"tool_name,omitempty"`
	// Arguments is the model's JSON argument text, as it asked.
	Arguments string `json:"arguments,omitempty"`

	// tool_call: how the session classed it and how it ended. Output is
	// what the model saw of the result (a tool's output, its error, or the
	// session's text for a call that did not run); Status is the record's
	// final status (succeeded, failed, rejected, outcome_unknown), or ""
	// when the capture found none (the session was still on it).
	Effect           string `json:"effect,omitempty"`
	RequiresApproval bool   `json:"requires_approval,omitempty"`
	Status           string `json:"status,omitempty"`
	Output           string `json:"output,omitempty"`
	// Rule is what the agent's approval rules decided about the call.
	Rule *Rule `json:"rule,omitempty"`

	// approval: the answer. Approved is false for a rejection, with its
	// message; Resolution is "answered", or "deadline_passed" when nobody
	// answered in time.
	Approved *bool  `json:"approved,omitempty"`
	Message  string `json:"message,omitempty"`
	Via      string `json:"via,omitempty"`

	// question: what was asked, and how it was resolved (answered,
	// declined, deadline_passed) with the answer.
	Question   string   `json:"question,omitempty"`
	Choices    []string `json:"choices,omitempty"`
	Resolution string   `json:"resolution,omitempty"`
	Answer     string   `json:"answer,omitempty"`

	// turn: how it ended (completed, failed, cancelled, or "" when it
	// had not ended), its final answer or error, and what it spent. ModelMs
	// and ToolMs are the time its model and tool Steps took (waits for
	// people are not in them).
	Error      string `json:"error,omitempty"`
	Usage      *Usage `json:"usage,omitempty"`
	CostMicros int64  `json:"cost_micros,omitempty"`
	ModelMs    int64  `json:"model_ms,omitempty"`
	ToolMs     int64  `json:"tool_ms,omitempty"`

	// Truncated says a text of the record (arguments, output, answer) is
	// only its beginning: the capture could not read the whole of it.
	Truncated bool `json:"truncated,omitempty"`
}

// Rule is an approval rule's decision about a call.
type Rule struct {
	Rule           string `json:"rule,omitempty"`
	Decision       string `json:"decision,omitempty"`
	Reason         string `json:"reason,omitempty"`
	ShadowRule     string `json:"shadow_rule,omitempty"`
	ShadowDecision string `json:"shadow_decision,omitempty"`
}

// Usage is what model calls used.
type Usage struct {
	ModelCalls   int64 `json:"model_calls"`
	InputTokens  int64 `json:"input_tokens"`
	OutputTokens int64 `json:"output_tokens"`
	TotalTokens  int64 `json:"total_tokens"`
}

func (u *Usage) add(v Usage) {
	u.ModelCalls += v.ModelCalls
	u.InputTokens += v.InputTokens
	u.OutputTokens += v.OutputTokens
	u.TotalTokens += v.TotalTokens
}

// Case is one captured session.
type Case struct {
	Header  Header
	Records []Record
}

// Write writes c as JSON Lines.
func (c *Case) Write(w io.Writer) error {
	enc := json.NewEncoder(w)
	enc.SetEscapeHTML(false)
	h := c.Header
	h.Type, h.Format = TypeCase, Format
	if err := enc.Encode(h); err != nil {
		return err
	}
	for _, r := range c.Records {
		if err := enc.Encode(r); err != nil {
			return err
		}
	}
	return nil
}

// WriteFile writes c to path, through a temporary file, so that a file
// at path is always a whole case.
func (c *Case) WriteFile(path string) error {
	var b bytes.Buffer
	if err := c.Write(&b); err != nil {
		return err
	}
	return writeFileAtomic(path, b.Bytes())
}

// MaxLineBytes bounds one line of a case file.
const MaxLineBytes = 64 << 20

// Read reads a case written by Write, or by a later writer of the same
// major version (fields it does not know are ignored). Errors name the
// line.
func Read(r io.Reader) (*Case, error) {
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 0, 64<<10), MaxLineBytes)
	c := &Case{}
	line := 0
	for sc.Scan() {
		line++
		b := bytes.TrimSpace(sc.Bytes())
		if len(b) == 0 {
			continue
		}
		if c.Header.Format == "" {
			if err := json.Unmarshal(b, &c.Header); err != nil {
				return nil, fmt.Errorf("line %d: the header: %w", line, err)
			}
			major, _, _ := strings.Cut(Format, ".")
			if c.Header.Type != TypeCase || c.Header.Format == "" {
				return nil, fmt.Errorf("line %d: want the case header ({\"type\":\"case\",\"format\":%q,...}) first", line, Format)
			}
			if got, _, _ := strings.Cut(c.Header.Format, "."); got != major {
				return nil, fmt.Errorf("line %d: format %q: this build reads %s", line, c.Header.Format, Format)
			}
			continue
		}
		var rec Record
		if err := json.Unmarshal(b, &rec); err != nil {
			return nil, fmt.Errorf("line %d: %w", line, err)
		}
		switch rec.Type {
		case TypeUserMessage, TypeToolCall, TypeApproval, TypeQuestion, TypeTurn, TypeExecutePlan:
		default:
			return nil, fmt.Errorf("line %d: unknown record type %q", line, rec.Type)
		}
		c.Records = append(c.Records, rec)
	}
	if err := sc.Err(); err != nil {
		return nil, fmt.Errorf("line %d: %w", line+1, err)
	}
	if c.Header.Format == "" {
		return nil, fmt.Errorf("no case header: the file is empty")
	}
	return c, nil
}

// Redact applies f to every text of the case that may hold a secret: the
// settings, messages, arguments, outputs, answers and errors.
func (c *Case) Redact(f func(string) string) {
	if len(c.Header.Settings) > 0 {
		c.Header.Settings = json.RawMessage(f(string(c.Header.Settings)))
		if !json.Valid(c.Header.Settings) {
			c.Header.Settings, _ = json.Marshal(string(c.Header.Settings))
		}
	}
	for i := range c.Records {
		r := &c.Records[i]
		for _, s := range []*string{&r.Text, &r.Arguments, &r.Output, &r.Message, &r.Question, &r.Answer, &r.Error} {
			*s = f(*s)
		}
		for j := range r.Choices {
			r.Choices[j] = f(r.Choices[j])
		}
		if r.Rule != nil {
			r.Rule.Reason = f(r.Rule.Reason)
		}
	}
}

// ReadDataset reads every case (*.jsonl) in dir, in name order.
func ReadDataset(dir string) ([]*Case, error) {
	paths, err := filepath.Glob(filepath.Join(dir, "*.jsonl"))
	if err != nil {
		return nil, err
	}
	if len(paths) == 0 {
		if _, err := os.Stat(dir); err != nil {
			return nil, err
		}
		return nil, fmt.Errorf("%s holds no case (*.jsonl)", dir)
	}
	sort.Strings(paths)
	var out []*Case
	for _, p := range paths {
		f, err := os.Open(p)
		if err != nil {
			return nil, err
		}
		c, err := Read(f)
		f.Close()
		if err != nil {
			return nil, fmt.Errorf("%s: %w", p, err)
		}
		out = append(out, c)
	}
	return out, nil
}
