package session

import (
	"encoding/json"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/dex-agents/dex-agent-worker/pluginapi/contract"
	"github.com/dex-agents/dex-agent-worker/plugins/stepwise"
	"github.com/dex-agents/dex-agent-worker/wire"
)

// wireNames are the constants that carry a spec name, by their Go name in
// docs/conformance.md.
var wireNames = map[string]string{
	"wire.EventTurnStarted":          wire.EventTurnStarted,
	"wire.EventTurnCompleted":        wire.EventTurnCompleted,
	"wire.EventTurnFailed":           wire.EventTurnFailed,
	"wire.EventTextDelta":            wire.EventTextDelta,
	"wire.EventReasoningDelta":       wire.EventReasoningDelta,
	"wire.EventToolCallStarted":      wire.EventToolCallStarted,
	"wire.EventToolCallFinished":     wire.EventToolCallFinished,
	"wire.EventToolCallDeferred":     wire.EventToolCallDeferred,
	"wire.EventInterruptRaised":      wire.EventInterruptRaised,
	"wire.EventInterruptResolved":    wire.EventInterruptResolved,
	"wire.EventUsageRecorded":        wire.EventUsageRecorded,
	"wire.EventCompactionStarted":    wire.EventCompactionStarted,
	"wire.EventCompactionFinished":   wire.EventCompactionFinished,
	"wire.EventTimerStarted":         wire.EventTimerStarted,
	"wire.EventToolTaskStarted":      wire.EventToolTaskStarted,
	"wire.EventPlanUpdated":          wire.EventPlanUpdated,
	"wire.EventPlanExecutionStarted": wire.EventPlanExecutionStarted,
	"wire.EventSubAgentStarted":      wire.EventSubAgentStarted,
	"wire.EventSubAgentFinished":     wire.EventSubAgentFinished,
	"wire.EventNotificationFailed":   wire.EventNotificationFailed,
	"wire.EventTurnSteered":          wire.EventTurnSteered,
	"wire.EventTurnCancelled":        wire.EventTurnCancelled,

	"wire.UpdateSendUserMessage":     wire.UpdateSendUserMessage,
	"wire.UpdateResolveInterrupt":    wire.UpdateResolveInterrupt,
	"wire.UpdateAnswerQuestion":      wire.UpdateAnswerQuestion,
	"wire.UpdateExecutePlan":         wire.UpdateExecutePlan,
	"wire.UpdateSessionSettings":     wire.UpdateSessionSettings,
	"wire.UpdateSteerUserMessage":    wire.UpdateSteerUserMessage,
	"wire.UpdateDeleteQueuedMessage": wire.UpdateDeleteQueuedMessage,
	"wire.UpdateCancelTurn":          wire.UpdateCancelTurn,
	"wire.QueryAgentSnapshot":        wire.QueryAgentSnapshot,
	"wire.QueryListAgentMessages":    wire.QueryListAgentMessages,

	"wire.StepAwaitUserMessage":      wire.StepAwaitUserMessage,
	"wire.StepRunModel":              wire.StepRunModel,
	"wire.StepCompactContext":        wire.StepCompactContext,
	"wire.StepAwaitToolApproval":     wire.StepAwaitToolApproval,
	"wire.StepAwaitQuestionAnswer":   wire.StepAwaitQuestionAnswer,
	"wire.StepAwaitTimer":            wire.StepAwaitTimer,
	"wire.StepPollToolTask":          wire.StepPollToolTask,
	"wire.StepCallTool":              wire.StepCallTool,
	"wire.StepCallSingleAttemptTool": wire.StepCallSingleAttemptTool,
	"wire.StepResumeTurn":            wire.StepResumeTurn,
	"wire.StepRecordTurnFailure":     wire.StepRecordTurnFailure,
	"wire.StepCancelToolTask":        wire.StepCancelToolTask,
	"wire.StepApplyTurnControl":      wire.StepApplyTurnControl,

	"wire.StatusWaitingForUserMessage": wire.StatusWaitingForUserMessage,
	"wire.StatusRunningModel":          wire.StatusRunningModel,
	"wire.StatusRunningTools":          wire.StatusRunningTools,
	"wire.StatusCompactingContext":     wire.StatusCompactingContext,
	"wire.InterruptKindApproval":       wire.InterruptKindApproval,
	"wire.InterruptKindQuestion":       wire.InterruptKindQuestion,
	"wire.InteractionChat":             wire.InteractionChat,
	"wire.InteractionPlanning":         wire.InteractionPlanning,
	"wire.InteractionExecuting":        wire.InteractionExecuting,

	"pluginapi.EffectRead":               string(contract.EffectRead),
	"pluginapi.EffectIdempotentWrite":    string(contract.EffectIdempotentWrite),
	"pluginapi.EffectNonIdempotentWrite": string(contract.EffectNonIdempotentWrite),
	"pluginapi.EffectUnclassified":       string(contract.EffectUnclassified),
	"pluginapi.RoleUser":                 string(contract.RoleUser),
	"pluginapi.RoleAssistant":            string(contract.RoleAssistant),
	"pluginapi.RoleTool":                 string(contract.RoleTool),

	"wire.ToolCallAwaitingApproval": string(wire.ToolCallAwaitingApproval),
	"wire.ToolCallApproved":         string(wire.ToolCallApproved),
	"wire.ToolCallAwaitingAnswer":   string(wire.ToolCallAwaitingAnswer),
	"wire.ToolCallWaitingForTimer":  string(wire.ToolCallWaitingForTimer),
	"wire.ToolCallWaitingForTask":   string(wire.ToolCallWaitingForTask),
	"wire.ToolCallRejected":         string(wire.ToolCallRejected),
	"wire.ToolCallSucceeded":        string(wire.ToolCallSucceeded),
	"wire.ToolCallFailed":           string(wire.ToolCallFailed),
	"wire.ToolCallOutcomeUnknown":   string(wire.ToolCallOutcomeUnknown),

	"wire.CancellationSteered":       wire.CancellationSteered,
	"wire.CancellationTurnCancelled": wire.CancellationTurnCancelled,
}

// eventPayloads are the payload types of the events, by Go name.
var eventPayloads = map[string]any{
	"wire.EventTurnStarted":          wire.TurnStartedPayload{},
	"wire.EventTurnCompleted":        wire.TurnCompletedPayload{},
	"wire.EventTurnFailed":           wire.TurnFailedPayload{},
	"wire.EventTextDelta":            wire.TextPayload{},
	"wire.EventReasoningDelta":       wire.TextPayload{},
	"wire.EventToolCallStarted":      wire.ToolCallStartedPayload{},
	"wire.EventToolCallFinished":     wire.ToolCallFinishedPayload{},
	"wire.EventToolCallDeferred":     wire.ToolCallDeferredPayload{},
	"wire.EventInterruptRaised":      wire.InterruptRaisedPayload{},
	"wire.EventInterruptResolved":    wire.InterruptResolvedPayload{},
	"wire.EventUsageRecorded":        wire.UsageRecordedPayload{},
	"wire.EventCompactionStarted":    wire.CompactionStartedPayload{},
	"wire.EventCompactionFinished":   wire.CompactionFinishedPayload{},
	"wire.EventTimerStarted":         wire.TimerStartedPayload{},
	"wire.EventToolTaskStarted":      wire.ToolTaskStartedPayload{},
	"wire.EventPlanUpdated":          wire.PlanUpdatedPayload{},
	"wire.EventPlanExecutionStarted": wire.PlanExecutionStartedPayload{},
	"wire.EventSubAgentStarted":      wire.SubAgentStartedPayload{},
	"wire.EventSubAgentFinished":     wire.SubAgentFinishedPayload{},
	"wire.EventNotificationFailed":   wire.NotificationFailedPayload{},
	"wire.EventTurnSteered":          wire.TurnSteeredPayload{},
	"wire.EventTurnCancelled":        wire.TurnCancelledPayload{},
}

// modelTexts are the texts the model sees, by Go name.
var modelTexts = map[string]string{
	"pluginapi.DefaultRejectionToolResult":     contract.DefaultRejectionToolResult,
	"session.ApprovalDeadlinePassed":           ApprovalDeadlinePassed,
	"session.QuestionDeclined":                 QuestionDeclined,
	"session.QuestionDeadlinePassed":           QuestionDeadlinePassed,
	"session.WriteTodosCalledTwice":            WriteTodosCalledTwice,
	"session.PlanningOnlyWriteTodos":           PlanningOnlyWriteTodos,
	"session.PlanApprovedMessageFormat":        PlanApprovedMessageFormat,
	"session.ToolCallNotRunErrorPrefix":        ToolCallNotRunErrorPrefix,
	"pluginapi.ModelCallLimitToolResultFormat": contract.ModelCallLimitToolResultFormat,
	"stepwise.ContextSummaryNoteHeader":        stepwise.ContextSummaryNoteHeader,
	"stepwise.ContextSummaryOmissionFormat":    stepwise.ContextSummaryOmissionFormat,
	"stepwise.ContextSummaryInstructions":      stepwise.ContextSummaryInstructions,
}

var (
	codeSpan = regexp.MustCompile("`([^`]*)`")
	goName   = regexp.MustCompile(`^[a-z]+\.[A-Z][A-Za-z]+$`)
)

// TestConformanceTable checks docs/conformance.md against the code: every
// row built here names a constant whose value is the spec name (and, for an
// event, a payload with the spec's fields, empty ones included), and every
// constant above has its row.
func TestConformanceTable(t *testing.T) {
	b, err := os.ReadFile(filepath.Join("..", "..", "docs", "conformance.md"))
	if err != nil {
		t.Fatal(err)
	}
	tests := repositoryTests(t)
	seen := map[string]bool{}
	inTable := false // the table has a Test column
	for i, line := range strings.Split(string(b), "\n") {
		if strings.HasPrefix(line, "| Spec") {
			inTable = slices.Contains(strings.Split(strings.Trim(line, "| "), " | "), "Test")
		}
		if !strings.HasPrefix(line, "| `") && !strings.HasPrefix(line, "| (") {
			continue
		}
		cells := strings.Split(strings.Trim(line, "| "), " | ")
		var spec, name string
		if m := codeSpan.FindStringSubmatch(cells[0]); m != nil {
			spec = m[1]
		}
		for _, c := range cells[1:] {
			if m := codeSpan.FindStringSubmatch(c); m != nil && goName.MatchString(m[1]) {
				name = m[1]
			}
		}
		where := "docs/conformance.md:" + itoa(i+1)
		if text, ok := modelTexts[name]; ok {
			seen[name] = true
			if got := cells[len(cells)-1]; got != text {
				t.Errorf("%s: %s is %q here, the table says %q", where, name, text, got)
			}
			continue
		}
		built := cells[len(cells)-1] == "yes"
		if !built {
			if name != "" {
				t.Errorf("%s: %s names %s but is not marked built", where, spec, name)
			}
			continue
		}
		if !inTable {
			t.Errorf("%s: %s is marked built in a table without a Test column", where, spec)
		} else if m := codeSpan.FindStringSubmatch(cells[len(cells)-2]); m == nil || !tests[m[1]] {
			t.Errorf("%s: %s is marked built, but its Test cell %q names no test of this repository (a Go test function, or a script of internal/session/testdata/interactions)", where, spec, cells[len(cells)-2])
		}
		value, ok := wireNames[name]
		if !ok {
			t.Errorf("%s: %s is marked built, but %q is not a constant this test knows", where, spec, name)
			continue
		}
		seen[name] = true
		if value != spec {
			t.Errorf("%s: %s = %q, the spec name is %q", where, name, value, spec)
		}
		if payload, ok := eventPayloads[name]; ok {
			want := strings.Split(cells[1], ", ")
			if got := jsonFields(t, payload); !slices.Equal(sorted(want), got) {
				t.Errorf("%s: the %s payload has fields %v, the spec lists %v", where, spec, got, want)
			}
		}
	}
	for name := range wireNames {
		if !seen[name] {
			t.Errorf("%s has no row in docs/conformance.md", name)
		}
	}
	for name := range modelTexts {
		if !seen[name] {
			t.Errorf("%s has no row in docs/conformance.md", name)
		}
	}
}

// repositoryTests are the names of the repository's Go test functions and
// of the golden interaction scripts, which the table's Test column names.
func repositoryTests(t *testing.T) map[string]bool {
	t.Helper()
	out := map[string]bool{}
	testFunc := regexp.MustCompile(`(?m)^func (Test\w+)\(`)
	root := filepath.Join("..", "..")
	err := filepath.WalkDir(root, func(path string, d os.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() && (d.Name() == "node_modules" || d.Name() == ".git" || strings.HasPrefix(d.Name(), ".")) && path != root {
			return filepath.SkipDir
		}
		if d.IsDir() || !strings.HasSuffix(path, "_test.go") {
			return nil
		}
		b, err := os.ReadFile(path)
		if err != nil {
			return err
		}
		for _, m := range testFunc.FindAllStringSubmatch(string(b), -1) {
			out[m[1]] = true
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	scripts, err := filepath.Glob(filepath.Join("testdata", "interactions", "*.txt"))
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range scripts {
		out[filepath.Base(p)] = true
	}
	return out
}

// jsonFields returns the JSON fields of a zero payload: every field of the
// spec's list must be present even when empty.
func jsonFields(t *testing.T, payload any) []string {
	t.Helper()
	b, err := json.Marshal(payload)
	if err != nil {
		t.Fatal(err)
	}
	var m map[string]any
	if err := json.Unmarshal(b, &m); err != nil {
		t.Fatal(err)
	}
	var keys []string
	for k := range m {
		keys = append(keys, k)
	}
	return sorted(keys)
}

func sorted(v []string) []string {
	out := slices.Clone(v)
	slices.Sort(out)
	return out
}

func itoa(n int) string { b, _ := json.Marshal(n); return string(b) }

// TestActiveStepTypesUseTheSpecNames: no phase of a turn lists a name the
// spec does not have, while runs of older workers keep theirs.
func TestActiveStepTypesUseTheSpecNames(t *testing.T) {
	spec := []string{"AwaitUserMessage", "RunModel", "CompactContext", "AwaitToolApproval", "AwaitQuestionAnswer",
		"AwaitTimer", "CallTool", "CallSingleAttemptTool", "PollToolTask", "CancelToolTask", "ResumeTurn",
		"ApplyTurnControl", "FinishTurnCancellation", "RecordTurnFailure"}
	s := New("s", opts())
	check := func(when string) {
		t.Helper()
		for _, name := range s.ActiveStepTypes() {
			if !slices.Contains(spec, name) {
				t.Errorf("%s: ActiveStepTypes has %q, not a spec Step", when, name)
			}
		}
	}
	s.Apply(Start{InitialMessage: "hi"})
	check("building the user message")
	if got := s.StepTypes(true); !slices.Equal(got, []string{wire.StepBuildUserMessage}) {
		t.Errorf("legacy names while building = %v", got)
	}
	s.Apply(UserMessageBuilt{TurnID: "turn-1", Message: userMsg("hi"), Attempt: 1})
	check("running the model")
	s.Apply(ModelStepFailed{TurnID: "turn-1", Reason: "boom", Attempt: 3})
	check("recording the turn failure")
	if got := s.ActiveStepTypes(); !slices.Equal(got, []string{wire.StepRunModel}) {
		t.Errorf("ActiveStepTypes while the failure is recorded = %v, want [RunModel]", got)
	}
	s.Apply(TurnFailureRecorded{TurnID: "turn-1", Attempt: 1})
	check("idle")
}
