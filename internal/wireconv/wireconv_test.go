package wireconv

import (
	"reflect"
	"slices"
	"testing"

	"github.com/dex-agents/dex-agent-worker/pluginapi/contract"
	"github.com/dex-agents/dex-agent-worker/wire"
)

// sessionOnly are the fields of a session's tool call record that no
// runner sees.
var sessionOnly = []string{
	"WaitUntil", "InputAnswers", "InputRequests", "TaskAnswerPending",
	"ApprovalRule", "ApprovalDecision", "ShadowApprovalRule", "ShadowApprovalDecision",
	// DisplayText is the HTTP API's, for people; a runner never sees it.
	"DisplayText",
	// ChildSessionID is a delegate_to_ call's, which the session runs.
	"ChildSessionID",
	// Who answered the call's approval or question, for people.
	"ResolvedVia", "ResolvedBy",
}

// fill sets every field of the struct v points to to a value that is not
// zero.
func fill(t *testing.T, v reflect.Value) {
	t.Helper()
	for i := range v.NumField() {
		f := v.Field(i)
		switch f.Kind() {
		case reflect.String:
			f.SetString(v.Type().Field(i).Name)
		case reflect.Int, reflect.Int64:
			f.SetInt(int64(i + 1))
		case reflect.Bool:
			f.SetBool(true)
		case reflect.Slice:
			f.Set(reflect.MakeSlice(f.Type(), 1, 1))
		case reflect.Pointer:
			f.Set(reflect.New(f.Type().Elem()))
		default:
			t.Fatalf("%s.%s: kind %s not filled", v.Type(), v.Type().Field(i).Name, f.Kind())
		}
	}
}

// zeroFields names the fields of v that are zero.
func zeroFields(v reflect.Value) []string {
	var out []string
	for i := range v.NumField() {
		if v.Field(i).IsZero() {
			out = append(out, v.Type().Field(i).Name)
		}
	}
	return out
}

// TestRunnerToolCallMapsEveryField fails when a field is added to either
// record without a decision: the runner's ToolCall maps every field of its
// own, with the same JSON name, and the session's record has no field
// beyond those and sessionOnly.
func TestRunnerToolCallMapsEveryField(t *testing.T) {
	var rec wire.ToolCall
	fill(t, reflect.ValueOf(&rec).Elem())
	got := RunnerToolCall(rec)
	if z := zeroFields(reflect.ValueOf(got)); len(z) > 0 {
		t.Errorf("RunnerToolCall leaves %v unset", z)
	}
	rt, wt := reflect.TypeFor[contract.ToolCall](), reflect.TypeFor[wire.ToolCall]()
	for i := range rt.NumField() {
		f := rt.Field(i)
		w, ok := wt.FieldByName(f.Name)
		if !ok || w.Tag.Get("json") != f.Tag.Get("json") {
			t.Errorf("contract.ToolCall.%s (json %q) has no wire.ToolCall field of that name and JSON name", f.Name, f.Tag.Get("json"))
		}
	}
	for i := range wt.NumField() {
		f := wt.Field(i)
		if _, ok := rt.FieldByName(f.Name); !ok && !slices.Contains(sessionOnly, f.Name) {
			t.Errorf("wire.ToolCall.%s is neither a runner's field nor listed as the session's own", f.Name)
		}
	}
	if n := wt.NumField() - rt.NumField(); n != len(sessionOnly) {
		t.Errorf("the session's record has %d fields a runner does not see, want %d", n, len(sessionOnly))
	}
}

func TestMessageMapsEveryField(t *testing.T) {
	var m contract.Message
	fill(t, reflect.ValueOf(&m).Elem())
	got := Message(m, true)
	if z := zeroFields(reflect.ValueOf(got)); len(z) > 0 {
		t.Errorf("Message leaves %v unset", z)
	}
	if n, w := reflect.TypeFor[wire.Message]().NumField(), reflect.TypeFor[contract.Message]().NumField(); n != w+1 {
		t.Errorf("wire.Message has %d fields, want the runner's %d and TextTruncated", n, w)
	}
}

func TestUsageMapsEveryField(t *testing.T) {
	var u contract.Usage
	fill(t, reflect.ValueOf(&u).Elem())
	if z := zeroFields(reflect.ValueOf(Usage(u))); len(z) > 0 {
		t.Errorf("Usage leaves %v unset", z)
	}
}

func TestRunnerPlanAndAnswer(t *testing.T) {
	if RunnerPlan(nil) != nil || QuestionAnswer(nil) != nil || RunnerToolCalls(nil) != nil {
		t.Fatal("nil in, want nil out")
	}
	p := RunnerPlan(&wire.Plan{Revision: 2, Status: "active", Tasks: []wire.PlanTask{{Content: "a", Status: "pending"}}})
	if p.Revision != 2 || p.Status != "active" || len(p.Tasks) != 1 || p.Tasks[0].Content != "a" || p.Tasks[0].Status != "pending" {
		t.Errorf("RunnerPlan = %+v", p)
	}
	a := QuestionAnswer(&wire.QuestionAnswer{Resolution: wire.QuestionAnswered, Answer: "yes"})
	if a.Resolution != contract.QuestionAnswered || a.Answer != "yes" {
		t.Errorf("QuestionAnswer = %+v", a)
	}
}
