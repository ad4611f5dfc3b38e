package mcpsource

import (
	"context"
	"encoding/json"
	"fmt"
	"maps"
	"slices"
	"strings"
	"time"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"
	"go.opentelemetry.io/otel/propagation"
	"go.opentelemetry.io/otel/trace"
)

// IdempotencyKeyMetaKey is the _meta key of every tools/call that carries
// the session's idempotency key, <flowId>/<turnId>/<toolCallId>.
const IdempotencyKeyMetaKey = "io.superdurable.dex/idempotencyKey"

// maxStateOnlyRetries bounds the immediate retries of a state-only
// input_required answer (one that only asks for the same request again).
const maxStateOnlyRetries = 3

// Kind is what became of a call, the spec's result and error mapping.
type Kind int

const (
	// Succeeded: the tool ran; Outcome.Text is its result.
	Succeeded Kind = iota + 1
	// ToolFailed: the tool reported an error (isError) or the server
	// answered with a JSON-RPC error other than -32603 and -32700, or
	// asked for input this session cannot give. Record it failed with
	// Outcome.Text, which the model sees. Never sent again.
	ToolFailed
	// NotSent: the call never reached the server (an unknown server, or
	// every connection attempt failed). Record it failed: the tool did not
	// run. Outcome.Err says why.
	NotSent
	// OutcomeUnknown: the call was sent and then the stream broke, the
	// server exited, the request timed out, or the answer was an internal
	// error (-32603), not JSON-RPC (-32700), an HTTP error status, or a
	// server that kept asking to repeat the call. The tool may have run.
	// A read or idempotent_write call is sent again with the same
	// idempotency key; any other effect records outcome_unknown and is
	// never sent again. Outcome.Err says why.
	OutcomeUnknown
	// InputRequested: the server answered with input_required for one
	// form elicitation the session can ask as a question (a single string
	// field, with or without an enum, or a single boolean field), before
	// the tool took any effect. Outcome.Input is the question; call again
	// with its answer ([Source.CallWithAnswer]).
	InputRequested
	// TaskStarted: a Streamable HTTP server answered with a task handle
	// (the tasks extension); Outcome.Task is the task. Poll it with
	// [Source.PollTask] on durable timers. A stdio server's task is
	// polled inside the call instead, since it ends with the process.
	TaskStarted
)

func (k Kind) String() string {
	switch k {
	case Succeeded:
		return "succeeded"
	case ToolFailed:
		return "tool_failed"
	case NotSent:
		return "not_sent"
	case OutcomeUnknown:
		return "outcome_unknown"
	case InputRequested:
		return "input_requested"
	case TaskStarted:
		return "task_started"
	}
	return fmt.Sprintf("Kind(%d)", int(k))
}

// Outcome is the result of [Source.Call].
type Outcome struct {
	Kind Kind
	// Text is the result (Succeeded) or the error the model sees
	// (ToolFailed): text blocks joined with newlines, other content as JSON
	// with sorted keys. A ToolFailed text has the server's secrets
	// redacted; a result is the tool's output as it sent it.
	Text string
	// Err is why a call was NotSent or its outcome is unknown. It holds no
	// secret of the server.
	Err error
	// Input is the question of an InputRequested outcome.
	Input *InputRequest
	// Task is the task of a TaskStarted outcome.
	Task *Task
}

// InputRequest is a server's elicitation as a session question.
type InputRequest struct {
	// Question is the elicitation's message.
	Question string
	// Choices are the enum's values, or "yes" and "no" for a boolean;
	// AllowsFreeText is set for a string without an enum.
	Choices        []string
	AllowsFreeText bool
	// Continuation goes back with the answer: the request's key, its
	// field and type, and the server's request state. It is opaque.
	Continuation string
}

// Answer is the user's answer to an [InputRequest], for the call's next
// request.
type Answer struct {
	Continuation string
	Answer       string
}

// Progress is one notifications/progress of a running call.
type Progress struct {
	Progress float64
	Total    float64 // 0 when the server sent none
	Message  string
}

// Call runs the MCP tool that ref names (a [Tool.Ref]) with arguments (a
// JSON object, or empty for none), on a new connection: the server's
// connection attempts for the handshake, then one tools/call bounded by its
// request timeout, with idempotencyKey in _meta under
// [IdempotencyKeyMetaKey]. progress, if not nil, gets the server's progress
// notifications for the call. Call never returns a Go error: every way a
// call can end is an [Outcome] kind.
func (s *Source) Call(ctx context.Context, ref string, arguments json.RawMessage, idempotencyKey string, progress func(Progress)) Outcome {
	return s.CallWithAnswer(ctx, ref, arguments, idempotencyKey, progress, nil)
}

// CallWithAnswer is [Source.Call] for a call whose server asked for input:
// the tools/call carries answer (to the InputRequested outcome of the
// call's previous request) as the elicitation's accepted content, with the
// server's request state. A nil answer is Call.
func (s *Source) CallWithAnswer(ctx context.Context, ref string, arguments json.RawMessage, idempotencyKey string, progress func(Progress), answer *Answer) Outcome {
	srv, err := s.serverOf(ref)
	if err != nil {
		return Outcome{Kind: NotSent, Err: err}
	}
	serverName, mcpName, _ := ParseRef(ref)
	// The arguments go to the server as they are (no float64 round trip
	// for big integers), once they are known to be a JSON object.
	args := json.RawMessage(`{}`)
	if trimmed := strings.TrimSpace(string(arguments)); trimmed != "" && trimmed != "null" {
		var object map[string]json.RawMessage
		if err := json.Unmarshal(arguments, &object); err != nil || object == nil {
			return Outcome{Kind: ToolFailed, Text: fmt.Sprintf("the arguments of %s are not a JSON object", ToolName(serverName, mcpName))}
		}
		args = arguments
	}
	var onProgress func(context.Context, *mcp.ProgressNotificationClientRequest)
	if progress != nil {
		onProgress = func(_ context.Context, req *mcp.ProgressNotificationClientRequest) {
			p := req.Params
			progress(Progress{Progress: p.Progress, Total: p.Total, Message: p.Message})
		}
	}
	params := &mcp.CallToolParams{
		Meta:      traceMeta(ctx, mcp.Meta{IdempotencyKeyMetaKey: idempotencyKey}),
		Name:      mcpName,
		Arguments: args,
	}
	if progress != nil {
		params.SetProgressToken(idempotencyKey + "#progress")
	}
	if answer != nil {
		state, responses, err := answerParams(answer)
		if err != nil {
			return Outcome{Kind: NotSent, Err: fmt.Errorf("mcp: the answer to the server's question: %w", err)}
		}
		params.RequestState, params.InputResponses = state, responses
	}

	var last error
	for attempt := 1; ; attempt++ {
		tracker := &callTracker{}
		conn, err := s.connect(ctx, srv, tracker, onProgress)
		if err != nil {
			return Outcome{Kind: NotSent, Err: err}
		}
		out, resend := s.callOnce(ctx, srv, conn, params, s.needsTask(ctx, srv, conn, mcpName))
		conn.close()
		if !resend {
			return out
		}
		// The tools/call provably never left: a connection attempt failed.
		last = out.Err
		if attempt >= srv.connectionAttempts() || ctx.Err() != nil {
			return Outcome{Kind: NotSent, Err: srv.errorf("mcp server %q: %d connection attempts failed: %v", srv.Name, attempt, last)}
		}
	}
}

// callOnce sends the tools/call on conn. resend is true when the request
// provably never reached the server, so another connection may send it.
func (s *Source) callOnce(ctx context.Context, srv *server, conn *connection, params *mcp.CallToolParams, augment bool) (out Outcome, resend bool) {
	rctx, cancel := context.WithTimeout(ctx, srv.requestTimeout())
	defer cancel()
	for stateOnly := 0; ; stateOnly++ {
		tracker := conn.tracker
		tracker.reset()
		cctx := context.WithValue(rctx, trackerKey{}, tracker)
		if augment {
			cctx = context.WithValue(cctx, augmentKey{}, srv.taskWaitTimeout().Milliseconds())
		}
		res, err := conn.session.CallTool(cctx, params)
		if err != nil {
			if !tracker.sent.Load() && stateOnly == 0 {
				return Outcome{Kind: NotSent, Err: srv.errorf("mcp server %q: sending tools/call: %v", srv.Name, err)}, true
			}
			return classifyError(srv, rctx, tracker, err), false
		}
		if st := tracker.httpStatus.Load(); st >= 300 {
			return Outcome{Kind: OutcomeUnknown, Err: srv.errorf("mcp server %q: tools/call: HTTP status %d", srv.Name, st)}, false
		}
		if augment {
			if task, ok := taskHandle2025(tracker.rawResult()); ok {
				return s.waitForTask2025(ctx, srv, conn, task), false
			}
		}
		if task, err := taskHandle(tracker.rawResult()); err != nil {
			return Outcome{Kind: OutcomeUnknown, Err: srv.errorf("mcp server %q: tools/call: %v", srv.Name, err)}, false
		} else if task != nil {
			if srv.URL != "" {
				return Outcome{Kind: TaskStarted, Task: task}, false
			}
			return s.waitForTask(ctx, srv, conn, task), false
		}
		if !res.NeedsInput() {
			if res.IsError {
				return Outcome{Kind: ToolFailed, Text: srv.redactor.String(renderContent(res))}, false
			}
			return Outcome{Kind: Succeeded, Text: renderContent(res)}, false
		}
		if len(res.InputRequests) > 0 {
			if in, ok := question(res.InputRequests, res.RequestState); ok {
				return Outcome{Kind: InputRequested, Input: in}, false
			}
			return Outcome{Kind: ToolFailed, Text: inputRequestedText(res.InputRequests)}, false
		}
		// A state-only input_required: the same request again, at once.
		if stateOnly >= maxStateOnlyRetries {
			return Outcome{Kind: OutcomeUnknown, Err: srv.errorf("mcp server %q: tools/call: the server asked to repeat the call %d times", srv.Name, stateOnly+1)}, false
		}
		next := *params
		next.RequestState = res.RequestState
		next.InputResponses = nil
		params = &next
	}
}

// classifyError maps an error of a sent tools/call.
func classifyError(srv *server, ctx context.Context, tracker *callTracker, err error) Outcome {
	if st := tracker.httpStatus.Load(); st >= 300 {
		return Outcome{Kind: OutcomeUnknown, Err: srv.errorf("mcp server %q: tools/call: HTTP status %d: %v", srv.Name, st, err)}
	}
	if ctx.Err() != nil {
		return Outcome{Kind: OutcomeUnknown, Err: srv.errorf("mcp server %q: tools/call: %v after it was sent: %v", srv.Name, context.Cause(ctx), err)}
	}
	if werr := tracker.serverError(); werr != nil {
		if werr.Code == jsonrpc.CodeInternalError || werr.Code == jsonrpc.CodeParseError {
			return Outcome{Kind: OutcomeUnknown, Err: srv.errorf("mcp server %q: tools/call: JSON-RPC error %d: %s", srv.Name, werr.Code, werr.Message)}
		}
		return Outcome{Kind: ToolFailed, Text: srv.redactor.String(fmt.Sprintf("MCP error %d: %s", werr.Code, werr.Message))}
	}
	return Outcome{Kind: OutcomeUnknown, Err: srv.errorf("mcp server %q: tools/call: %v", srv.Name, err)}
}

// renderContent renders a result as the spec does: text blocks joined with
// newlines, any other block as JSON with sorted keys; a result with no
// content but structured content is that content's JSON.
func renderContent(res *mcp.CallToolResult) string {
	if len(res.Content) == 0 && res.StructuredContent != nil {
		return sortedJSON(res.StructuredContent)
	}
	parts := make([]string, 0, len(res.Content))
	for _, c := range res.Content {
		if t, ok := c.(*mcp.TextContent); ok {
			parts = append(parts, t.Text)
			continue
		}
		parts = append(parts, sortedJSON(c))
	}
	return strings.Join(parts, "\n")
}

// sortedJSON marshals v with sorted object keys (through a generic value).
func sortedJSON(v any) string {
	b, err := json.Marshal(v)
	if err != nil {
		return fmt.Sprintf("%v", v)
	}
	var generic any
	if err := json.Unmarshal(b, &generic); err != nil {
		return string(b)
	}
	b, err = json.Marshal(generic)
	if err != nil {
		return fmt.Sprintf("%v", v)
	}
	return string(b)
}

// inputRequestedText is the ToolFailed text for input requests this
// session cannot answer yet.
func inputRequestedText(reqs mcp.InputRequestMap) string {
	var names []string
	for _, id := range slices.Sorted(maps.Keys(reqs)) {
		switch p := reqs[id].(type) {
		case *mcp.ElicitParams:
			names = append(names, fmt.Sprintf("an answer to %q", p.Message))
		default:
			names = append(names, fmt.Sprintf("a %T request", p))
		}
	}
	return "the MCP server asked for input that this agent session cannot provide yet (" + strings.Join(names, ", ") + ")"
}

// maxRequestStateBytes bounds the server's request state a question keeps
// (in the session's history, on the call's record).
const maxRequestStateBytes = 16 << 10

// continuation is an InputRequest's Continuation.
type continuation struct {
	Key   string `json:"key"`
	Field string `json:"field"`
	Type  string `json:"type"` // string or boolean
	State string `json:"state,omitempty"`
}

// elicitSchema is the part of a requested schema a question can ask.
type elicitSchema struct {
	Type       string `json:"type"`
	Properties map[string]struct {
		Type string `json:"type"`
		Enum []any  `json:"enum"`
	} `json:"properties"`
}

// question turns the one form elicitation of reqs into a session question:
// a single string field (its enum as the choices, or free text) or a
// single boolean field (yes or no). ok is false for anything else.
func question(reqs mcp.InputRequestMap, state string) (*InputRequest, bool) {
	if len(reqs) != 1 || len(state) > maxRequestStateBytes {
		return nil, false
	}
	var key string
	var p *mcp.ElicitParams
	for k, r := range reqs {
		key = k
		p, _ = r.(*mcp.ElicitParams)
	}
	if p == nil || p.Mode != "" && p.Mode != "form" || strings.TrimSpace(p.Message) == "" {
		return nil, false
	}
	raw, err := json.Marshal(p.RequestedSchema)
	if err != nil {
		return nil, false
	}
	var schema elicitSchema
	if json.Unmarshal(raw, &schema) != nil || schema.Type != "object" || len(schema.Properties) != 1 {
		return nil, false
	}
	in := &InputRequest{Question: p.Message}
	c := continuation{Key: key, State: state}
	for name, prop := range schema.Properties {
		if strings.TrimSpace(name) == "" {
			return nil, false // no field to put the answer in
		}
		c.Field, c.Type = name, prop.Type
		switch {
		case prop.Type == "boolean":
			in.Choices = []string{"yes", "no"}
		case prop.Type == "string" && len(prop.Enum) > 0:
			for _, v := range prop.Enum {
				str, ok := v.(string)
				if !ok || strings.TrimSpace(str) == "" {
					return nil, false // a choice nobody can answer with
				}
				in.Choices = append(in.Choices, str)
			}
		case prop.Type == "string":
			in.AllowsFreeText = true
		default:
			return nil, false
		}
	}
	b, err := json.Marshal(c)
	if err != nil {
		return nil, false
	}
	in.Continuation = string(b)
	return in, true
}

// answerParams are the request state and input responses that send an
// answer: the elicitation accepted with the answer as its one field.
func answerParams(a *Answer) (string, mcp.InputResponseMap, error) {
	var c continuation
	if err := json.Unmarshal([]byte(a.Continuation), &c); err != nil || c.Key == "" || c.Field == "" {
		return "", nil, fmt.Errorf("the continuation %q is not one of this worker's", a.Continuation)
	}
	var value any = a.Answer
	if c.Type == "boolean" {
		switch strings.ToLower(strings.TrimSpace(a.Answer)) {
		case "yes", "true":
			value = true
		case "no", "false":
			value = false
		default:
			return "", nil, fmt.Errorf("%q is not yes or no", a.Answer)
		}
	}
	return c.State, mcp.InputResponseMap{c.Key: &mcp.ElicitResult{Action: "accept", Content: map[string]any{c.Field: value}}}, nil
}

// waitForTask polls a stdio server's task on the call's own connection
// (the task lives in the process, which ends with the request) until it
// ends, for at most the server's task wait timeout; then it cancels the
// task and the outcome is unknown.
func (s *Source) waitForTask(ctx context.Context, srv *server, conn *connection, task *Task) Outcome {
	return s.pollUntilEnd(ctx, srv, conn, task, func(id string) (*Task, *Outcome) {
		poll := s.getTask(ctx, srv, conn, id)
		return poll.Task, poll.Outcome
	})
}

// pollUntilEnd reads a task with read, on the call's connection, at the
// spec's intervals until read returns an outcome, for at most the server's
// task wait timeout; then it cancels the task and the outcome is unknown.
func (s *Source) pollUntilEnd(ctx context.Context, srv *server, conn *connection, task *Task, read func(taskID string) (*Task, *Outcome)) Outcome {
	deadline := time.Now().Add(srv.taskWaitTimeout())
	var wait time.Duration
	for {
		wait = NextPollInterval(task.PollInterval, wait)
		if time.Now().Add(wait).After(deadline) {
			_ = s.cancelTask(context.WithoutCancel(ctx), srv, conn, task.ID)
			return Outcome{Kind: OutcomeUnknown, Err: srv.errorf("mcp server %q: task %s did not end within %s", srv.Name, task.ID, srv.taskWaitTimeout())}
		}
		select {
		case <-ctx.Done():
			return Outcome{Kind: OutcomeUnknown, Err: srv.errorf("mcp server %q: task %s: %v", srv.Name, task.ID, ctx.Err())}
		case <-time.After(wait):
		}
		next, out := read(task.ID)
		if out != nil {
			return *out
		}
		if next != nil {
			task = next
		}
	}
}

// traceMeta adds the W3C traceparent (and tracestate) of ctx's span to
// meta, so a traced MCP server continues the tool call's trace.
func traceMeta(ctx context.Context, meta mcp.Meta) mcp.Meta {
	if !trace.SpanContextFromContext(ctx).IsValid() {
		return meta
	}
	carrier := propagation.MapCarrier{}
	propagation.TraceContext{}.Inject(ctx, carrier)
	for k, v := range carrier {
		meta[k] = v
	}
	return meta
}
