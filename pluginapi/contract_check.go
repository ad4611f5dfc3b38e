package pluginapi

// The checks in this file enforce the parts of the contract that a Go type
// cannot: exactly one outcome, and the rules runner.go states for each
// outcome. The plugin side runs them so a Go runner learns of its mistake
// with a precise message; the host side runs them again because a runner in
// another language never passes through the plugin side. A failed check is
// a malformed outcome: on the wire it is status InvalidArgument with the
// reason as its message.

import (
	"fmt"
	"slices"
	"strings"
	"unicode/utf8"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/reflect/protoreflect"
)

// malformedPrefix starts the message of every malformed-outcome error.
const malformedPrefix = "runner returned a malformed outcome: "

// rpcError is an error of the host-side client. Its message is what the
// worker shows; GRPCStatus keeps the classification (Unavailable: the plugin
// went away, InvalidArgument: malformed outcome, Unimplemented: optional
// call not implemented) for internal/runnerhost, which turns it into its
// sentinel errors.
type rpcError struct {
	code  codes.Code
	msg   string
	cause error
}

func (e *rpcError) Error() string { return e.msg }

func (e *rpcError) Unwrap() error { return e.cause }

// GRPCStatus lets status.Code and status.FromError read the classification.
func (e *rpcError) GRPCStatus() *status.Status { return status.New(e.code, e.msg) }

// malformed returns the host-side error for a broken contract.
func malformed(reason string) error {
	return &rpcError{code: codes.InvalidArgument, msg: malformedPrefix + reason}
}

// malformedStatus returns the plugin-side status for a broken contract.
func malformedStatus(reason string) error {
	return status.Error(codes.InvalidArgument, reason)
}

func checkRole(field string, r Role, allowed ...Role) string {
	for _, a := range allowed {
		if r == a {
			return ""
		}
	}
	names := make([]string, len(allowed))
	for i, a := range allowed {
		names[i] = fmt.Sprintf("%q", a)
	}
	return fmt.Sprintf("%s is %q, want %s", field, r, strings.Join(names, " or "))
}

func checkMessages(field string, ms []FrameworkMessage) string {
	for i, m := range ms {
		if reason := checkRole(fmt.Sprintf("%s[%d].Role", field, i), m.Role, RoleUser, RoleAssistant, RoleTool); reason != "" {
			return reason
		}
	}
	return ""
}

// checkBuildUserMessageResponse returns why r breaks the contract, or "".
func checkBuildUserMessageResponse(r *BuildUserMessageResponse) string {
	if r == nil {
		return "BuildUserMessage returned no response"
	}
	if reason := checkRole("BuildUserMessage: Message.Role", r.Message.Role, RoleUser); reason != "" {
		return reason
	}
	return ""
}

// checkConfigureResponse returns why r breaks the contract, or "". A nil
// response is an empty one (the runner reports no tools).
func checkConfigureResponse(r *ConfigureResponse) string {
	if r == nil {
		return ""
	}
	seen := make(map[string]bool, len(r.Tools))
	for i, name := range r.Tools {
		switch {
		case name == "":
			return fmt.Sprintf("Configure: Tools[%d] is empty", i)
		case seen[name]:
			return fmt.Sprintf("Configure: Tools[%d] %q is listed twice", i, name)
		}
		seen[name] = true
	}
	keys := make(map[string]bool, len(r.SettingChoices))
	for i, c := range r.SettingChoices {
		switch {
		case c.Key == "":
			return fmt.Sprintf("Configure: SettingChoices[%d].Key is empty", i)
		case keys[c.Key]:
			return fmt.Sprintf("Configure: SettingChoices[%d] %q is listed twice", i, c.Key)
		case len(c.Values) == 0:
			return fmt.Sprintf("Configure: SettingChoices[%d] %q has no values", i, c.Key)
		case slices.Contains(c.Values, ""):
			return fmt.Sprintf("Configure: SettingChoices[%d] %q has an empty value", i, c.Key)
		}
		keys[c.Key] = true
	}
	return ""
}

// checkRunModelStepResponse returns why r breaks the contract for a model
// call of turn, or "".
func checkRunModelStepResponse(r *RunModelStepResponse, turn *TurnContext) string {
	if r == nil {
		return "RunModelStep returned no response"
	}
	switch {
	case r.TurnCompleted == nil && r.ToolCallsRequested == nil:
		return "RunModelStep returned no outcome; set TurnCompleted or ToolCallsRequested"
	case r.TurnCompleted != nil && r.ToolCallsRequested != nil:
		return "RunModelStep returned two outcomes (TurnCompleted and ToolCallsRequested); set exactly one"
	case r.TurnCompleted != nil:
		if reason := checkMessages("TurnCompleted.NewMessages", r.TurnCompleted.NewMessages); reason != "" {
			return "RunModelStep: " + reason
		}
		return ""
	}
	req := r.ToolCallsRequested
	if req.RunState == "" {
		return "RunModelStep: ToolCallsRequested.RunState is empty; it must continue the turn after the tools"
	}
	if reason := checkMessages("ToolCallsRequested.NewMessages", req.NewMessages); reason != "" {
		return "RunModelStep: " + reason
	}
	seen := make(map[string]bool, len(req.ToolCalls))
	if turn != nil {
		for _, c := range turn.ToolCalls {
			seen[c.ToolCallID] = true
		}
	}
	for i, c := range req.ToolCalls {
		field := fmt.Sprintf("RunModelStep: ToolCallsRequested.ToolCalls[%d]", i)
		switch {
		case c.ToolCallID == "":
			return field + ".ToolCallID is empty"
		case strings.Contains(c.ToolCallID, "/"):
			return fmt.Sprintf("%s.ToolCallID %q contains '/'", field, c.ToolCallID)
		case seen[c.ToolCallID]:
			return fmt.Sprintf("%s.ToolCallID %q is not unique within the turn", field, c.ToolCallID)
		case c.ToolName == "":
			return field + ".ToolName is empty"
		case !c.Policy.Effect.Valid():
			return fmt.Sprintf("%s.Policy.Effect %q is not an effect class (use TurnContext.ResolvePolicy)", field, c.Policy.Effect)
		}
		seen[c.ToolCallID] = true
	}
	return ""
}

// checkExecuteToolResponse returns why r breaks the contract, or "". poll
// tells whether r answers PollToolTask; supportsTasks is the request's
// SupportsToolTasks (polls always allow TaskStarted).
func checkExecuteToolResponse(method string, r *ExecuteToolResponse, poll, supportsTasks bool) string {
	if r == nil {
		return method + " returned no response"
	}
	var set []string
	if r.Result != nil {
		set = append(set, "Result")
	}
	if r.Error != nil {
		set = append(set, "Error")
	}
	if r.InputRequested != nil {
		set = append(set, "InputRequested")
	}
	if r.TaskStarted != nil {
		set = append(set, "TaskStarted")
	}
	if r.TaskPending != nil {
		set = append(set, "TaskPending")
	}
	switch {
	case len(set) == 0 && poll:
		return method + " returned no outcome; set one of Result, Error, InputRequested, TaskStarted, TaskPending"
	case len(set) == 0:
		return method + " returned no outcome; set one of Result, Error, InputRequested, TaskStarted"
	case len(set) > 1:
		return fmt.Sprintf("%s returned %d outcomes (%s); set exactly one", method, len(set), strings.Join(set, ", "))
	case r.TaskPending != nil && !poll:
		return method + " returned TaskPending, which only PollToolTask may return"
	case r.TaskStarted != nil && !poll && !supportsTasks:
		return method + " returned TaskStarted, but the request's SupportsToolTasks is false"
	case r.TaskStarted != nil && r.TaskStarted.TaskID == "":
		return method + ": TaskStarted.TaskID is empty"
	}
	return ""
}

// checkCompactionCutoffResponse returns why r breaks the contract, or "".
func checkCompactionCutoffResponse(r *CompactionCutoffResponse, req *CompactionCutoffRequest) string {
	if r == nil {
		return "SelectCompactionCutoff returned no response"
	}
	last := int64(0)
	if n := len(req.Turn.Messages); n > 0 {
		last = req.Turn.Messages[n-1].Sequence
	}
	// A host that sends only the messages the plugin has not cached
	// (TurnContext.CachedThrough) still asks about the whole transcript.
	last = max(last, req.Turn.CachedThrough)
	floor := int64(0)
	if cs := req.Turn.ContextSummary; cs != nil {
		floor = cs.LastSequence
	}
	if r.ThroughSequence != 0 && (r.ThroughSequence <= floor || r.ThroughSequence > last) {
		return fmt.Sprintf("SelectCompactionCutoff: ThroughSequence %d is not 0 or a stored sequence after the current summary (%d to %d)", r.ThroughSequence, floor+1, last)
	}
	return ""
}

// checkUTF8 returns why m cannot be sent, protobuf strings being UTF-8
// only, or "". Runners keep opaque items byte for byte, so the plugin side
// refuses such an outcome with the field's path instead of mending it.
func checkUTF8(method string, m proto.Message) string {
	if path := invalidUTF8(m.ProtoReflect()); path != "" {
		return fmt.Sprintf("%s: %s is not valid UTF-8", method, path)
	}
	return ""
}

// invalidUTF8 returns the path of the first string field of m that is not
// valid UTF-8, or "".
func invalidUTF8(m protoreflect.Message) string {
	var bad string
	m.Range(func(fd protoreflect.FieldDescriptor, v protoreflect.Value) bool {
		name := string(fd.Name())
		switch {
		case fd.IsList():
			l := v.List()
			for i := 0; i < l.Len() && bad == ""; i++ {
				bad = invalidUTF8Value(fd, l.Get(i), fmt.Sprintf("%s[%d]", name, i))
			}
		case fd.IsMap():
			v.Map().Range(func(k protoreflect.MapKey, mv protoreflect.Value) bool {
				key := k.String()
				switch {
				case fd.MapKey().Kind() == protoreflect.StringKind && !utf8.ValidString(key):
					bad = name + " key"
				default:
					bad = invalidUTF8Value(fd.MapValue(), mv, fmt.Sprintf("%s[%q]", name, key))
				}
				return bad == ""
			})
		default:
			bad = invalidUTF8Value(fd, v, name)
		}
		return bad == ""
	})
	return bad
}

func invalidUTF8Value(fd protoreflect.FieldDescriptor, v protoreflect.Value, path string) string {
	switch fd.Kind() {
	case protoreflect.StringKind:
		if !utf8.ValidString(v.String()) {
			return path
		}
	case protoreflect.MessageKind, protoreflect.GroupKind:
		if inner := invalidUTF8(v.Message()); inner != "" {
			return path + "." + inner
		}
	}
	return ""
}
