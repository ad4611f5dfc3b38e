package stepwise

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"reflect"
	"strings"

	"github.com/dex-agents/dex-agent-worker/pluginapi"
)

// ToolCallContext is what a function tool learns about its call.
type ToolCallContext struct {
	// IdempotencyKey is "<session_id>/<turn_id>/<tool_call_id>", the same on
	// every attempt. Pass it to the system the tool writes to.
	IdempotencyKey string
	// Attempt is the one-based attempt of the tool Step.
	Attempt    int
	SessionID  string
	TurnID     string
	ToolCallID string
	// Checkpoint is the text an earlier attempt saved with Events.SaveHeartbeatCheckpoint.
	Checkpoint string
	// InputAnswers are the user's answers to the questions this call asked,
	// oldest first; InputContinuation is the Continuation of its last
	// question. To ask (before the tool takes any effect), return a
	// *pluginapi.ToolInputRequested as the error: the call runs again once
	// the user answered.
	InputAnswers      []string
	InputContinuation string
	// SupportsToolTasks tells whether the worker polls tool tasks: return
	// a *pluginapi.ToolTaskStarted only when it does.
	SupportsToolTasks bool
	// Events writes live events and heartbeats for this attempt.
	Events pluginapi.ToolEventWriter
}

// Heartbeat records liveness from a long-running tool.
func (c ToolCallContext) Heartbeat() {
	if c.Events != nil {
		c.Events.Heartbeat()
	}
}

// Tool is a tool the runner offers to its model and executes in the
// session's tool Steps.
type Tool struct {
	def              pluginapi.ToolDefinition
	requiresApproval *bool
	call             func(ctx context.Context, tc ToolCallContext, args json.RawMessage) (string, error)
	poll             func(ctx context.Context, p TaskPoll) (*pluginapi.ExecuteToolResponse, error)
	cancel           func(ctx context.Context, c TaskCancel) error
}

// TaskCancel is what a tool task's cancel function learns (see
// WithTaskCancel).
type TaskCancel struct {
	SessionID  string
	ToolCallID string
	// TaskID is the handle the tool returned in ToolTaskStarted.
	TaskID string
}

// WithTaskCancel gives a tool task a cancel function: when the user
// cancels the turn (cancel_turn) while the task runs, the session stops
// polling it and calls cancel to stop the remote work, best effort; the
// call is recorded outcome_unknown either way. A crash or a failed attempt
// calls it again, so make it idempotent by task ID. A task without one is
// abandoned without a call.
func WithTaskCancel(cancel func(ctx context.Context, c TaskCancel) error) ToolOption {
	return func(t *Tool) { t.cancel = cancel }
}

// TaskPoll is what a tool task's poll function learns (see WithTaskPoll).
type TaskPoll struct {
	SessionID  string
	TurnID     string
	ToolCallID string
	// TaskID is the handle the tool returned in ToolTaskStarted.
	TaskID string
	// Continuation is what the last ToolTaskPending, or the task's last
	// question, asked to get back.
	Continuation string
	// PendingAnswer is how the user resolved the task's last question, on
	// the first poll after it only (and its retries).
	PendingAnswer *pluginapi.QuestionAnswer
	// Attempt is the one-based attempt of the PollToolTask Step.
	Attempt int
	Events  pluginapi.ToolEventWriter
}

// WithTaskPoll makes the tool's calls tool tasks: the function starts the
// remote work and returns a *pluginapi.ToolTaskStarted as its error (save
// the handle with Events.SaveHeartbeatCheckpoint first, and return the
// saved one when ToolCallContext.Checkpoint holds it); the session then
// calls poll on durable timers until it returns a Result or an Error. poll
// may return TaskPending to be polled again, or InputRequested to ask the
// user (the answer arrives as TaskPoll.PendingAnswer). A poll must only
// read the task, or deliver an answer idempotently.
func WithTaskPoll(poll func(ctx context.Context, p TaskPoll) (*pluginapi.ExecuteToolResponse, error)) ToolOption {
	return func(t *Tool) { t.poll = poll }
}

// Definition returns the tool's name, description, JSON Schema and effect.
func (t *Tool) Definition() pluginapi.ToolDefinition { return t.def }

// Policy returns the tool's own policy: its effect and approval rule.
func (t *Tool) Policy() pluginapi.ToolPolicy {
	return pluginapi.ToolPolicy{Effect: t.def.Effect, RequiresApproval: t.requiresApproval}
}

// ToolOption configures a function tool.
type ToolOption func(*Tool)

// WithEffect sets the tool's effect class. Without it the session's
// default effect applies.
func WithEffect(e pluginapi.Effect) ToolOption { return func(t *Tool) { t.def.Effect = e } }

// RequiresApproval overrides the effect's default approval rule.
func RequiresApproval(v bool) ToolOption { return func(t *Tool) { t.requiresApproval = &v } }

// FunctionTool turns a typed Go function into a tool. The JSON Schema of
// its arguments is derived from A, which must be a struct: json tags name
// the properties, a `description` tag describes one, an `enum` tag
// ("a,b,c") limits a string, and fields without omitempty that are not
// pointers are required. A string result is the output; any other result is
// marshalled to JSON. Return a *pluginapi.ToolExecutionError for a failure
// the model should see.
func FunctionTool[A any, R any](name, description string, fn func(ctx context.Context, tc ToolCallContext, args A) (R, error), opts ...ToolOption) (*Tool, error) {
	if !validToolName(name) {
		return nil, fmt.Errorf("tool name %q: use 1 to 64 letters, digits, '_' or '-'", name)
	}
	var zero A
	typ := reflect.TypeOf(zero)
	if typ == nil || typ.Kind() != reflect.Struct {
		return nil, fmt.Errorf("tool %s: the argument type must be a struct, not %v", name, typ)
	}
	schema, err := schemaFor(typ)
	if err != nil {
		return nil, fmt.Errorf("tool %s: %w", name, err)
	}
	raw, err := json.Marshal(schema)
	if err != nil {
		return nil, fmt.Errorf("tool %s: %w", name, err)
	}
	t := &Tool{def: pluginapi.ToolDefinition{Name: name, Description: description, InputSchema: raw}}
	for _, o := range opts {
		o(t)
	}
	if t.def.Effect != "" && !t.def.Effect.Valid() {
		return nil, fmt.Errorf("tool %s: unknown effect %q", name, t.def.Effect)
	}
	required := requiredFields(typ)
	t.call = func(ctx context.Context, tc ToolCallContext, args json.RawMessage) (string, error) {
		var a A
		if err := decodeArguments(args, required, &a); err != nil {
			return "", &pluginapi.ToolExecutionError{Message: "invalid arguments for " + name + ": " + err.Error()}
		}
		res, err := fn(ctx, tc, a)
		if err != nil {
			return "", err
		}
		if s, ok := any(res).(string); ok {
			return s, nil
		}
		b, err := json.Marshal(res)
		if err != nil {
			return "", fmt.Errorf("tool %s: marshal result: %w", name, err)
		}
		return string(b), nil
	}
	return t, nil
}

// MustFunctionTool is FunctionTool that panics on a definition error, for
// package-level tool variables.
func MustFunctionTool[A any, R any](name, description string, fn func(ctx context.Context, tc ToolCallContext, args A) (R, error), opts ...ToolOption) *Tool {
	t, err := FunctionTool(name, description, fn, opts...)
	if err != nil {
		panic(err)
	}
	return t
}

func validToolName(name string) bool {
	if name == "" || len(name) > 64 {
		return false
	}
	for _, r := range name {
		if !(r == '_' || r == '-' || r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9') {
			return false
		}
	}
	return true
}

func decodeArguments(args json.RawMessage, required []string, into any) error {
	trimmed := bytes.TrimSpace(args)
	if len(trimmed) == 0 {
		trimmed = []byte("{}")
	}
	if !json.Valid(trimmed) {
		return errors.New("arguments are not valid JSON")
	}
	var present map[string]json.RawMessage
	if err := json.Unmarshal(trimmed, &present); err != nil {
		return errors.New("arguments must be a JSON object")
	}
	for _, name := range required {
		if v, ok := present[name]; !ok || string(v) == "null" {
			return fmt.Errorf("missing required argument %q", name)
		}
	}
	dec := json.NewDecoder(bytes.NewReader(trimmed))
	dec.DisallowUnknownFields()
	if err := dec.Decode(into); err != nil {
		var typeErr *json.UnmarshalTypeError
		if errors.As(err, &typeErr) {
			return fmt.Errorf("argument %q: want %s, got %s", typeErr.Field, jsonKind(typeErr.Type), typeErr.Value)
		}
		if msg, ok := strings.CutPrefix(err.Error(), "json: unknown field "); ok {
			return fmt.Errorf("unknown argument %s", msg)
		}
		return err
	}
	return nil
}

func jsonKind(t reflect.Type) string {
	switch t.Kind() {
	case reflect.String:
		return "a string"
	case reflect.Bool:
		return "a boolean"
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64,
		reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64:
		return "an integer"
	case reflect.Float32, reflect.Float64:
		return "a number"
	case reflect.Slice, reflect.Array:
		return "an array"
	}
	return "an object"
}

type jsonField struct {
	name     string
	index    int
	optional bool
}

func fieldsOf(t reflect.Type) []jsonField {
	var out []jsonField
	for i := 0; i < t.NumField(); i++ {
		f := t.Field(i)
		if !f.IsExported() {
			continue
		}
		tag := f.Tag.Get("json")
		if tag == "-" {
			continue
		}
		name, opts, _ := strings.Cut(tag, ",")
		if name == "" {
			name = f.Name
		}
		optional := f.Type.Kind() == reflect.Pointer
		for _, o := range strings.Split(opts, ",") {
			if o == "omitempty" || o == "omitzero" {
				optional = true
			}
		}
		out = append(out, jsonField{name: name, index: i, optional: optional})
	}
	return out
}

func requiredFields(t reflect.Type) []string {
	var out []string
	for _, f := range fieldsOf(t) {
		if !f.optional {
			out = append(out, f.name)
		}
	}
	return out
}

// schema is a JSON Schema object; field order is fixed for stable output.
type schema struct {
	Type                 string             `json:"type,omitempty"`
	Description          string             `json:"description,omitempty"`
	Enum                 []string           `json:"enum,omitempty"`
	Items                *schema            `json:"items,omitempty"`
	Properties           *orderedProperties `json:"properties,omitempty"`
	Required             []string           `json:"required,omitempty"`
	AdditionalProperties any                `json:"additionalProperties,omitempty"`
}

type orderedProperties struct {
	names []string
	props []*schema
}

func (p *orderedProperties) MarshalJSON() ([]byte, error) {
	var b bytes.Buffer
	b.WriteByte('{')
	for i, name := range p.names {
		if i > 0 {
			b.WriteByte(',')
		}
		k, _ := json.Marshal(name)
		b.Write(k)
		b.WriteByte(':')
		v, err := json.Marshal(p.props[i])
		if err != nil {
			return nil, err
		}
		b.Write(v)
	}
	b.WriteByte('}')
	return b.Bytes(), nil
}

func schemaFor(t reflect.Type) (*schema, error) {
	return schemaForDepth(t, 0)
}

func schemaForDepth(t reflect.Type, depth int) (*schema, error) {
	if depth > 16 {
		return nil, fmt.Errorf("type %v nests too deeply (recursive types are not supported)", t)
	}
	for t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	switch t.Kind() {
	case reflect.String:
		return &schema{Type: "string"}, nil
	case reflect.Bool:
		return &schema{Type: "boolean"}, nil
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64,
		reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64:
		return &schema{Type: "integer"}, nil
	case reflect.Float32, reflect.Float64:
		return &schema{Type: "number"}, nil
	case reflect.Slice, reflect.Array:
		items, err := schemaForDepth(t.Elem(), depth+1)
		if err != nil {
			return nil, err
		}
		return &schema{Type: "array", Items: items}, nil
	case reflect.Map:
		if t.Key().Kind() != reflect.String {
			return nil, fmt.Errorf("map key type %v: only string keys map to JSON objects", t.Key())
		}
		vals, err := schemaForDepth(t.Elem(), depth+1)
		if err != nil {
			return nil, err
		}
		return &schema{Type: "object", AdditionalProperties: vals}, nil
	case reflect.Interface:
		return &schema{}, nil
	case reflect.Struct:
		s := &schema{Type: "object", Properties: &orderedProperties{}, AdditionalProperties: false}
		for _, f := range fieldsOf(t) {
			sf := t.Field(f.index)
			ps, err := schemaForDepth(sf.Type, depth+1)
			if err != nil {
				return nil, fmt.Errorf("field %s: %w", sf.Name, err)
			}
			ps.Description = sf.Tag.Get("description")
			if enum := sf.Tag.Get("enum"); enum != "" {
				ps.Enum = strings.Split(enum, ",")
			}
			s.Properties.names = append(s.Properties.names, f.name)
			s.Properties.props = append(s.Properties.props, ps)
			if !f.optional {
				s.Required = append(s.Required, f.name)
			}
		}
		return s, nil
	}
	return nil, fmt.Errorf("type %v has no JSON Schema", t)
}
