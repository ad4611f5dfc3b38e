package session

import (
	"bufio"
	"encoding/json"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

var updateGolden = flag.Bool("update", false, "rewrite the expected output of testdata/interactions/*.txt")

// inputKinds names the inputs a script may apply. Their JSON uses the Go
// field names of the input structs.
var inputKinds = map[string]reflect.Type{
	"start":                      reflect.TypeFor[Start](),
	"continued":                  reflect.TypeFor[Continued](),
	"send_user_message":          reflect.TypeFor[SendUserMessage](),
	"resolve_interrupt":          reflect.TypeFor[ResolveInterrupt](),
	"update_session_settings":    reflect.TypeFor[UpdateSessionSettings](),
	"context_compacted":          reflect.TypeFor[ContextCompacted](),
	"compaction_failed":          reflect.TypeFor[CompactionFailed](),
	"user_message_built":         reflect.TypeFor[UserMessageBuilt](),
	"user_message_failed":        reflect.TypeFor[UserMessageFailed](),
	"model_step_done":            reflect.TypeFor[ModelStepDone](),
	"model_step_failed":          reflect.TypeFor[ModelStepFailed](),
	"tool_step_done":             reflect.TypeFor[ToolStepDone](),
	"tool_step_failed":           reflect.TypeFor[ToolStepFailed](),
	"turn_failure_recorded":      reflect.TypeFor[TurnFailureRecorded](),
	"turn_failure_record_failed": reflect.TypeFor[TurnFailureRecordFailed](),
	"deadline_timer_fired":       reflect.TypeFor[DeadlineTimerFired](),
	"answer_question":            reflect.TypeFor[AnswerQuestion](),
	"wait_timer_fired":           reflect.TypeFor[WaitTimerFired](),
	"task_poll_timer_fired":      reflect.TypeFor[TaskPollTimerFired](),
	"task_poll_done":             reflect.TypeFor[TaskPollDone](),
	"task_poll_failed":           reflect.TypeFor[TaskPollFailed](),
	"execute_plan":               reflect.TypeFor[ExecutePlan](),
	"steer_user_message":         reflect.TypeFor[SteerUserMessage](),
	"delete_queued_message":      reflect.TypeFor[DeleteQueuedMessage](),
	"cancel_turn":                reflect.TypeFor[CancelTurn](),
	"close_session":              reflect.TypeFor[CloseSession](),
	"task_cancel_done":           reflect.TypeFor[TaskCancelDone](),
}

// TestInteractions runs the golden interaction scripts in
// testdata/interactions: readable sequences of inputs, each followed by the
// commands Apply returned and a line of the session's state. A script
// starts with "> session <Options JSON>" (merged over the tests' options);
// then "> <input> <JSON>" lines. Run with -update to rewrite the expected
// output, then read the diff.
func TestInteractions(t *testing.T) {
	paths, err := filepath.Glob(filepath.Join("testdata", "interactions", "*.txt"))
	if err != nil || len(paths) == 0 {
		t.Fatalf("no interaction scripts: %v", err)
	}
	for _, path := range paths {
		t.Run(filepath.Base(path), func(t *testing.T) {
			b, err := os.ReadFile(path)
			if err != nil {
				t.Fatal(err)
			}
			got := runScript(t, string(b))
			if *updateGolden {
				if err := os.WriteFile(path, []byte(got), 0o644); err != nil {
					t.Fatal(err)
				}
				return
			}
			if diff := cmp.Diff(string(b), got); diff != "" {
				t.Errorf("%s (-want +got; run go test ./internal/session -run TestInteractions -update):\n%s", path, diff)
			}
		})
	}
}

// runScript replays a script's inputs and returns the script with freshly
// computed output under each input.
func runScript(t *testing.T, script string) string {
	t.Helper()
	var out strings.Builder
	var s *State
	sc := bufio.NewScanner(strings.NewReader(script))
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	skipping := false // inside the output of the previous input
	for sc.Scan() {
		line := sc.Text()
		switch {
		case strings.HasPrefix(line, "> "):
			skipping = true
			out.WriteString(line + "\n")
			kind, arg, _ := strings.Cut(strings.TrimPrefix(line, "> "), " ")
			if kind == "session" {
				o := opts()
				if arg != "" {
					if err := json.Unmarshal([]byte(arg), &o); err != nil {
						t.Fatalf("%s: %v", line, err)
					}
				}
				s = New("s-1", o)
				out.WriteString(stateLine(s) + "\n")
				continue
			}
			if s == nil {
				t.Fatalf("%s: the script must start with > session", line)
			}
			typ, ok := inputKinds[kind]
			if !ok {
				t.Fatalf("%s: unknown input %q", line, kind)
			}
			ptr := reflect.New(typ)
			if arg == "" {
				arg = "{}"
			}
			dec := json.NewDecoder(strings.NewReader(arg))
			dec.DisallowUnknownFields()
			if err := dec.Decode(ptr.Interface()); err != nil {
				t.Fatalf("%s: %v", line, err)
			}
			r := s.Apply(ptr.Elem().Interface().(Input))
			switch {
			case r.Refusal != "":
				out.WriteString("refused: " + r.Refusal + "\n")
			case !r.Accepted:
				out.WriteString("not accepted\n")
			}
			for _, c := range r.Commands {
				out.WriteString(render(c) + "\n")
			}
			out.WriteString(stateLine(s) + "\n")
		case line == "" || strings.HasPrefix(line, "#"):
			skipping = false
			out.WriteString(line + "\n")
		case !skipping:
			t.Fatalf("unexpected line outside an input's output: %q", line)
		}
	}
	return out.String()
}

// stateLine summarizes the session for a script.
func stateLine(s *State) string {
	var b strings.Builder
	fmt.Fprintf(&b, "= status=%s", orNone(s.Status))
	if s.ActiveTurnID != "" {
		fmt.Fprintf(&b, " turn=%s phase=%s", s.ActiveTurnID, s.Phase)
	}
	if s.Options.Messages.Store {
		fmt.Fprintf(&b, " window=%d..%d", s.windowFirst(), s.NextSequence-1)
		if s.RolledThrough > 0 {
			fmt.Fprintf(&b, " rolled_through=%d", s.RolledThrough)
		}
		if s.DeletedBefore > 0 {
			fmt.Fprintf(&b, " deleted_before=%d", s.DeletedBefore)
		}
		fmt.Fprintf(&b, " queued=%d", len(s.Queued))
	} else {
		fmt.Fprintf(&b, " messages=%d queued=%d", len(s.Messages), len(s.Queued))
	}
	for _, in := range s.Interrupts {
		fmt.Fprintf(&b, " interrupt=%s/%s", in.Kind, in.InterruptID)
	}
	for _, c := range s.ToolCalls {
		fmt.Fprintf(&b, " call=%s:%s:%s", c.ToolCallID, c.Effect, c.Status)
		if c.CancellationReason != "" {
			fmt.Fprintf(&b, "(%s)", c.CancellationReason)
		}
		// What the model sees of a built-in's call.
		if c.ToolName == BuiltInAskUser || c.ToolName == BuiltInDurableWait || c.ToolName == BuiltInWriteTodos {
			switch {
			case c.Output != "":
				fmt.Fprintf(&b, "=%s", c.Output)
			case c.Error != "":
				fmt.Fprintf(&b, "=%q", c.Error)
			case c.RejectionMessage != "":
				fmt.Fprintf(&b, "=%q", c.RejectionMessage)
			case c.WaitUntil != "":
				fmt.Fprintf(&b, "(until %s)", c.WaitUntil)
			}
		} else if len(c.InputAnswers) > 0 && (c.Error != "" || c.RejectionMessage != "") || strings.HasPrefix(c.Error, "the tool asked") {
			// What the model sees of a call that asked.
			fmt.Fprintf(&b, "=%q", c.Error+c.RejectionMessage)
		}
	}
	if s.LastTurnError != "" {
		fmt.Fprintf(&b, " last_turn_error=%q", s.LastTurnError)
	}
	if s.Control != "" {
		fmt.Fprintf(&b, " control=%s", s.Control)
	}
	for _, m := range s.Steered {
		fmt.Fprintf(&b, " steered=%s:%q", m.MessageID, m.Text)
	}
	for _, m := range s.TurnMore {
		fmt.Fprintf(&b, " turn_more=%s:%q", m.MessageID, m.Text)
	}
	if s.Closed {
		b.WriteString(" closed")
	}
	if s.Mode == "planning" || s.Mode == "executing" {
		fmt.Fprintf(&b, " mode=%s", s.Mode)
	}
	if p := s.Plan; p != nil {
		fmt.Fprintf(&b, " plan=%d:%s:%d", p.Revision, p.Status, len(p.Tasks))
	}
	if s.Settings != "" {
		fmt.Fprintf(&b, " settings=%s", s.Settings)
	}
	if s.TurnSettings != "" {
		fmt.Fprintf(&b, " turn_settings=%s", s.TurnSettings)
	}
	if s.Summary != nil {
		fmt.Fprintf(&b, " summary=%d:%d..%d", s.Summary.Generation, s.Summary.FirstSequence, s.Summary.LastSequence)
	}
	if s.CostMicros != 0 || s.SpendRefused != nil {
		fmt.Fprintf(&b, " cost_micros=%d", s.CostMicros)
	}
	if s.SpendRefused != nil {
		fmt.Fprintf(&b, " spend_refused=%s/%s", s.SpendRefused.Scope, s.SpendRefused.Counter)
	}
	fmt.Fprintf(&b, " model_calls=%d steps=%s", s.Usage.ModelCalls, strings.Join(s.ActiveStepTypes(), ","))
	return b.String()
}

func orNone(s string) string {
	if s == "" {
		return "none"
	}
	return s
}
