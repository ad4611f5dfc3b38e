package session

import (
	"bytes"
	"encoding/json"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"unicode/utf8"

	"github.com/dex-agents/dex-agent-worker/pluginapi/contract"
	"github.com/dex-agents/dex-agent-worker/wire"
)

// Built-in tools: session features that work under every runner. The
// session offers the enabled ones to the runner (TurnInput.HostTools), and
// runs their calls itself with the read effect and no approval: ask_user
// raises a question interrupt and waits in AwaitQuestionAnswer; durable_wait
// waits in AwaitTimer on a durable timer. No Step, model call or worker
// holds either wait.

// Built-in tool names.
const (
	BuiltInAskUser      = "ask_user"
	BuiltInDurableWait  = "durable_wait"
	BuiltInWriteTodos   = "write_todos"
	DefaultMaxDurableMs = 365 * 24 * 3600 * 1000
)

// Texts the model sees for the built-ins (the spec's).
const (
	QuestionDeclined       = wire.QuestionDeclinedText
	QuestionDeadlinePassed = wire.QuestionDeadlinePassedText
)

// Limits of a question.
const (
	maxQuestionBytes = 4096
	maxChoices       = 50
	maxChoiceBytes   = 500
	maxAnswerBytes   = 16 * 1024
	maxReasonBytes   = 1000
)

// BuiltInToolDefinitions returns the definitions of the enabled built-ins,
// in a fixed order.
func BuiltInToolDefinitions(enabled []string) []contract.ToolDefinition {
	var out []contract.ToolDefinition
	for _, d := range builtInDefinitions {
		if slices.Contains(enabled, d.Name) {
			out = append(out, d)
		}
	}
	return out
}

var builtInDefinitions = []contract.ToolDefinition{
	{
		Name: BuiltInAskUser,
		Description: "Ask the user a question and wait for the answer. Use it when you cannot go on without " +
			"information only the user has. Give choices when the answer is one of a few options.",
		InputSchema: json.RawMessage(`{"type":"object","properties":{` +
			`"question":{"type":"string","description":"The question, as the user will read it."},` +
			`"choices":{"type":["array","null"],"items":{"type":"string"},"description":"The answers to choose from, if any."},` +
			`"allows_free_text":{"type":["boolean","null"],"description":"Whether the user may answer with other text when choices are given."}` +
			`},"required":["question"],"additionalProperties":false}`),
		Effect: contract.EffectRead,
	},
	{
		Name: BuiltInDurableWait,
		Description: "Wait for a number of seconds before going on, such as to check on something later. " +
			"The wait survives restarts; nothing runs while it lasts.",
		InputSchema: json.RawMessage(`{"type":"object","properties":{` +
			`"duration_seconds":{"type":"integer","minimum":1,"description":"How long to wait, in whole seconds."},` +
			`"reason":{"type":"string","description":"Why you wait; the user sees it."}` +
			`},"required":["duration_seconds","reason"],"additionalProperties":false}`),
		Effect: contract.EffectRead,
	},
	{
		Name: BuiltInWriteTodos,
		Description: "Write your plan as a list of tasks, replacing the previous list as a whole. Use it for work of " +
			"several steps, and keep each task's status current as you go: pending, in_progress, or completed. " +
			"An empty list clears the plan.",
		InputSchema: json.RawMessage(`{"type":"object","properties":{` +
			`"todos":{"type":"array","items":{"type":"object","properties":{` +
			`"content":{"type":"string","description":"The task, in a short sentence."},` +
			`"status":{"type":"string","enum":["pending","in_progress","completed"]}` +
			`},"required":["content","status"],"additionalProperties":false}}` +
			`},"required":["todos"],"additionalProperties":false}`),
		Effect: contract.EffectRead,
	},
}

// builtIn reports whether name is a built-in the session enabled.
func (s *State) builtIn(name string) bool { return s.Options.builtIn(name) }

// builtIn reports whether a session of these options runs the tool itself.
func (o Options) builtIn(name string) bool {
	return (name == BuiltInAskUser || name == BuiltInDurableWait || name == BuiltInWriteTodos) && slices.Contains(o.BuiltInTools, name)
}

// askUserArgs are ask_user's arguments.
type askUserArgs struct {
	Question       string   `json:"question"`
	Choices        []string `json:"choices"`
	AllowsFreeText *bool    `json:"allows_free_text"`
}

// durableWaitArgs are durable_wait's arguments.
type durableWaitArgs struct {
	DurationSeconds json.Number `json:"duration_seconds"`
	Reason          *string     `json:"reason"`
}

// decodeArgs decodes a built-in's arguments strictly: an object, known
// keys only. null for an optional argument means it is absent.
func decodeArgs(args string, v any) error {
	dec := json.NewDecoder(strings.NewReader(args))
	dec.DisallowUnknownFields()
	dec.UseNumber()
	// Decoding into a fixed struct reads no time or randomness.
	err := dec.Decode(v) //workflowcheck:ignore
	if err != nil {
		return fmt.Errorf("want a JSON object of the tool's arguments: %s", strings.TrimPrefix(err.Error(), "json: "))
	}
	if dec.More() {
		return fmt.Errorf("want one JSON object")
	}
	return nil
}

func parseAskUser(args string) (askUserArgs, error) {
	var a askUserArgs
	if err := decodeArgs(args, &a); err != nil {
		return a, err
	}
	a.Question = strings.TrimSpace(a.Question)
	switch {
	case a.Question == "":
		return a, fmt.Errorf("question is required and must not be blank")
	case len(a.Question) > maxQuestionBytes:
		return a, fmt.Errorf("question is over %d bytes", maxQuestionBytes)
	case len(a.Choices) > maxChoices:
		return a, fmt.Errorf("choices has %d entries; at most %d", len(a.Choices), maxChoices)
	}
	for i, c := range a.Choices {
		c = strings.TrimSpace(c)
		switch {
		case c == "":
			return a, fmt.Errorf("choices[%d] is blank", i)
		case len(c) > maxChoiceBytes:
			return a, fmt.Errorf("choices[%d] is over %d bytes", i, maxChoiceBytes)
		case slices.Contains(a.Choices[:i], c):
			return a, fmt.Errorf("choices[%d] %q is listed twice", i, c)
		}
		a.Choices[i] = c
	}
	if len(a.Choices) == 0 {
		a.Choices = nil
	}
	return a, nil
}

func parseDurableWait(args string, maxMs int64) (secs int64, reason string, err error) {
	var a durableWaitArgs
	if err := decodeArgs(args, &a); err != nil {
		return 0, "", err
	}
	if a.DurationSeconds == "" {
		return 0, "", fmt.Errorf("duration_seconds is required")
	}
	secs, convErr := strconv.ParseInt(a.DurationSeconds.String(), 10, 64)
	maxSecs := maxMs / 1000
	switch {
	case convErr != nil:
		return 0, "", fmt.Errorf("duration_seconds must be a whole number of seconds, got %s", a.DurationSeconds)
	case secs < 1 || secs > maxSecs:
		return 0, "", fmt.Errorf("duration_seconds must be from 1 to %d, got %d", maxSecs, secs)
	case a.Reason == nil:
		return 0, "", fmt.Errorf("reason is required")
	case len(*a.Reason) > maxReasonBytes:
		return 0, "", fmt.Errorf("reason is over %d bytes", maxReasonBytes)
	}
	return secs, *a.Reason, nil
}

// deferBuiltIn records a built-in call of a ToolCallsRequested: the
// question or the wait it starts, or its failure for invalid arguments.
// todos counts the response's write_todos calls.
func (s *State) deferBuiltIn(rec wire.ToolCall, attempt int, nowMs int64, todos int) []Command {
	rec.Effect, rec.RequiresApproval = wire.EffectRead, false
	step := toolStep(s.ActiveTurnID, rec.ToolCallID)
	cmds := []Command{Emit{Event: newEvent(wire.EventToolCallDeferred, s.ActiveTurnID, attempt, wire.ToolCallDeferredPayload{
		ToolCallID: rec.ToolCallID, ToolName: rec.ToolName, Effect: string(rec.Effect), RequiresApproval: false,
	}).forStep(step)}}
	// final records the call final at once (no Step runs it).
	final := func(status wire.ToolCallStatus, more ...Command) []Command {
		rec.Status = status
		s.ToolCalls = append(s.ToolCalls, rec)
		return append(append(cmds, more...), Emit{Event: newEvent(wire.EventToolCallFinished, s.ActiveTurnID, attempt, wire.ToolCallFinishedPayload{
			ToolCallID: rec.ToolCallID, ToolName: rec.ToolName, Status: string(status),
		}).forStep(step)})
	}
	fail := func(err error) []Command {
		rec.Error = "invalid " + rec.ToolName + " arguments: " + err.Error()
		return final(wire.ToolCallFailed)
	}
	switch rec.ToolName {
	case BuiltInWriteTodos:
		if todos > 1 {
			rec.Error = WriteTodosCalledTwice
			return final(wire.ToolCallFailed)
		}
		tasks, err := parseTodos(rec.Arguments)
		if err != nil {
			rec.Error = "invalid todos: " + err.Error()
			return final(wire.ToolCallFailed)
		}
		plan := s.writePlan(tasks)
		if plan.Status == PlanCleared {
			rec.Output = s.builtInResult("status", "cleared", "revision", plan.Revision)
		} else {
			rec.Output = s.builtInResult("status", "updated", "revision", plan.Revision, "task_count", len(plan.Tasks))
		}
		return final(wire.ToolCallSucceeded,
			Emit{Event: newEvent(wire.EventPlanUpdated, s.ActiveTurnID, attempt, wire.PlanUpdatedPayload{Revision: plan.Revision, Status: plan.Status, TaskCount: len(plan.Tasks)})})
	case BuiltInAskUser:
		a, err := parseAskUser(rec.Arguments)
		if err != nil {
			return fail(err)
		}
		// Without choices any answer is text; with them, other text only
		// when the model allowed it.
		free := len(a.Choices) == 0 || a.AllowsFreeText != nil && *a.AllowsFreeText
		rec.Status = wire.ToolCallAwaitingAnswer
		in := Interrupt{InterruptID: rec.ToolCallID, ToolCallID: rec.ToolCallID, ToolName: rec.ToolName, Kind: InterruptQuestion,
			Question: a.Question, Choices: a.Choices, AllowsFreeText: free}
		if s.Options.InterruptDeadlineMs > 0 {
			in.DeadlineUnixMs = nowMs + s.Options.InterruptDeadlineMs
			in.RaisedUnixMs = nowMs
		}
		s.Interrupts = append(s.Interrupts, in)
		s.ToolCalls = append(s.ToolCalls, rec)
		choices := in.Choices
		if choices == nil {
			choices = []string{}
		}
		cmds = append(cmds, Emit{Event: newEvent(wire.EventInterruptRaised, s.ActiveTurnID, attempt, wire.InterruptRaisedPayload{
			InterruptID: in.InterruptID, ToolCallID: in.ToolCallID, ToolName: in.ToolName, Deadline: formatDeadline(in.DeadlineUnixMs),
			Kind: string(in.Kind), Question: in.Question, Choices: choices, AllowsFreeText: in.AllowsFreeText,
		}).forStep(step)})
		if in.DeadlineUnixMs > 0 {
			cmds = append(cmds, s.deadlineTimer(in, nowMs))
		}
		return cmds
	case BuiltInDurableWait:
		maxMs := s.Options.MaxDurableWaitMs
		if maxMs <= 0 {
			maxMs = DefaultMaxDurableMs
		}
		secs, reason, err := parseDurableWait(rec.Arguments, maxMs)
		if err != nil {
			return fail(err)
		}
		w := Wait{ToolCallID: rec.ToolCallID, UntilMs: nowMs + secs*1000, Seconds: secs, Reason: reason}
		rec.Status = wire.ToolCallWaitingForTimer
		rec.WaitUntil = formatDeadline(w.UntilMs)
		s.ToolCalls = append(s.ToolCalls, rec)
		s.Waits = append(s.Waits, w)
		return append(cmds,
			Emit{Event: newEvent(wire.EventTimerStarted, s.ActiveTurnID, attempt, wire.TimerStartedPayload{ToolCallID: rec.ToolCallID, WaitUntil: rec.WaitUntil, Reason: reason}).forStep(step)},
			StartWaitTimer{ToolCallID: rec.ToolCallID, DelayMs: secs * 1000})
	}
	return fail(fmt.Errorf("unknown built-in tool"))
}

// Wait is a durable_wait in progress.
type Wait struct {
	ToolCallID string `json:"tool_call_id"`
	UntilMs    int64  `json:"until_ms"`
	Seconds    int64  `json:"seconds"`
	Reason     string `json:"reason"`
}

// waitTimerFired ends a durable wait: the model sees how long it waited.
// A timer that fired early (a clock skew) waits again.
func (s *State) waitTimerFired(t WaitTimerFired) Result {
	if t.TurnID != s.ActiveTurnID {
		return Result{}
	}
	w := slices.IndexFunc(s.Waits, func(w Wait) bool { return w.ToolCallID == t.ToolCallID })
	c := s.findCall(t.ToolCallID)
	if w < 0 || c < 0 || s.ToolCalls[c].Status != wire.ToolCallWaitingForTimer {
		return Result{}
	}
	wait := s.Waits[w]
	if t.NowMs < wait.UntilMs {
		return applied([]Command{StartWaitTimer{ToolCallID: wait.ToolCallID, DelayMs: ceilSeconds(wait.UntilMs - t.NowMs)}})
	}
	s.Waits = append(s.Waits[:w:w], s.Waits[w+1:]...)
	s.ToolCalls[c].WaitUntil = ""
	s.ToolCalls[c].Output = s.builtInResult("status", "completed", "waited_seconds", wait.Seconds, "reason", wait.Reason)
	return applied(s.finishCall(c, wire.ToolCallSucceeded, waitingStepAttempt))
}

// ceilSeconds rounds a delay up to whole seconds, at least one.
func ceilSeconds(ms int64) int64 { return max((ms+999)/1000, 1) * 1000 }

// answerQuestion applies answer_question. It is not accepted for an
// unknown, blank or no longer pending question, a passed deadline, a blank
// answer, or an answer outside the choices when free text is not allowed.
func (s *State) answerQuestion(a AnswerQuestion) Result {
	i := s.findInterrupt(a.InterruptID)
	if i < 0 || s.Interrupts[i].Kind != InterruptQuestion {
		return Result{}
	}
	in := s.Interrupts[i]
	answer := strings.TrimSpace(a.Answer)
	switch {
	case in.DeadlineUnixMs > 0 && a.NowMs >= in.DeadlineUnixMs:
		return Result{}
	case answer == "" || len(answer) > maxAnswerBytes || !utf8.ValidString(answer):
		return Result{}
	case !in.AllowsFreeText && !slices.Contains(in.Choices, answer):
		return Result{}
	}
	c := s.findCall(in.ToolCallID)
	if c < 0 || s.ToolCalls[c].Status != wire.ToolCallAwaitingAnswer {
		return Result{}
	}
	s.removeInterrupt(i)
	s.noteResolver(c, a.Via, a.By)
	var cmds []Command
	if in.DeadlineUnixMs > 0 {
		cmds = append(cmds, CancelTimer{InterruptID: in.InterruptID})
	}
	cmds = append(cmds, Emit{Event: newEvent(wire.EventInterruptResolved, s.ActiveTurnID, waitingStepAttempt, wire.InterruptResolvedPayload{
		InterruptID: in.InterruptID, Approved: true, Kind: string(in.Kind), Answered: true,
		ResolvedVia: s.ToolCalls[c].ResolvedVia, ResolvedBy: s.ToolCalls[c].ResolvedBy,
	}).forStep(toolStep(s.ActiveTurnID, in.ToolCallID))})
	if in.isToolInput() && s.ToolCalls[c].TaskID != "" {
		return applied(append(cmds, s.taskQuestionResolved(c, wire.QuestionAnswer{Resolution: wire.QuestionAnswered, Answer: answer})))
	}
	if in.isToolInput() {
		return applied(append(cmds, s.toolInputAnswered(c, answer)))
	}
	s.ToolCalls[c].Output = s.builtInResult("status", "answered", "answer", answer)
	return applied(append(cmds, s.finishCall(c, wire.ToolCallSucceeded, waitingStepAttempt)...))
}

// resultJSON is a built-in's result as the model sees it: compact JSON with
// sorted keys and no HTML escaping.
// builtInResult is a built-in's result for the model: a JSON object of the
// key/value pairs kv, in the reference's key order (sessions of
// BuiltInTextsVersion) or sorted (older sessions, as they ran).
func (s *State) builtInResult(kv ...any) string {
	if s.Options.Version < BuiltInTextsVersion {
		m := map[string]any{}
		for i := 0; i+1 < len(kv); i += 2 {
			m[kv[i].(string)] = kv[i+1]
		}
		return resultJSON(m)
	}
	var b strings.Builder
	b.WriteByte('{')
	for i := 0; i+1 < len(kv); i += 2 {
		if i > 0 {
			b.WriteByte(',')
		}
		b.WriteString(valueJSON(kv[i]))
		b.WriteByte(':')
		b.WriteString(valueJSON(kv[i+1]))
	}
	b.WriteByte('}')
	return b.String()
}

// valueJSON is one string or number as compact JSON, without HTML escapes.
func valueJSON(v any) string {
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	_ = enc.Encode(v) //workflowcheck:ignore (a string or a number)
	return strings.TrimSuffix(b.String(), "\n")
}

func resultJSON(v map[string]any) string {
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	_ = enc.Encode(v) //workflowcheck:ignore (a map of strings and numbers: keys sorted)
	return strings.TrimSuffix(b.String(), "\n")
}

// endQuestion ends question interrupt i of record c without an answer:
// declined, or its deadline passed. The record is rejected with text, which
// the model sees; the event's rejection_message is eventText.
func (s *State) endQuestion(i, c int, text, eventText string) []Command {
	in := s.Interrupts[i]
	s.removeInterrupt(i)
	var cmds []Command
	if in.DeadlineUnixMs > 0 {
		cmds = append(cmds, CancelTimer{InterruptID: in.InterruptID})
	}
	cmds = append(cmds, Emit{Event: newEvent(wire.EventInterruptResolved, s.ActiveTurnID, waitingStepAttempt, wire.InterruptResolvedPayload{
		InterruptID: in.InterruptID, Approved: false, RejectionMessage: eventText, Kind: string(in.Kind),
		ResolvedVia: s.ToolCalls[c].ResolvedVia, ResolvedBy: s.ToolCalls[c].ResolvedBy,
	}).forStep(toolStep(s.ActiveTurnID, in.ToolCallID))})
	if s.ToolCalls[c].TaskID != "" {
		// A task's question never ends the call: the task hears it.
		res := wire.QuestionDeclined
		if text == QuestionDeadlinePassed {
			res = wire.QuestionDeadlinePassed
		}
		return append(cmds, s.taskQuestionResolved(c, wire.QuestionAnswer{Resolution: res}))
	}
	s.ToolCalls[c].RejectionMessage = text
	return append(cmds, s.finishCall(c, wire.ToolCallRejected, waitingStepAttempt)...)
}
