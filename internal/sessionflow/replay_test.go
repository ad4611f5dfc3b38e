package sessionflow

import (
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"go.temporal.io/sdk/client"
	"go.temporal.io/sdk/log"
	"go.temporal.io/sdk/worker"
	"go.temporal.io/sdk/workflow"

	"github.com/dex-agents/dex-agent-worker/internal/session"
	"github.com/dex-agents/dex-agent-worker/pluginapi/contract"
)

// Histories in testdata/histories were recorded from real sessions (see
// internal/e2e TestRecordStoreSessionHistory -update-histories). Replaying
// them fails when a change to the workflow would break running sessions,
// so none is recorded again once it landed: each stands for the sessions
// of its time.
//   - legacy_approval_turn.json: the first main, before sessions recorded
//     their settings; it replays only with the settings it ran with.
//   - settings_approval_turn.json: settings recorded, Step names of the
//     time.
//   - approval_turn.json: spec Step names, messages in the workflow.
//   - store_turns.json: messages in the store, with a message sent by
//     reference, chunks rolled and retention.
//   - compaction_spend_turns.json: compactions (summaries), a settings
//     update, priced calls and a turn a spend limit ended.
//   - builtin_turns.json: ask_user answered and declined, a durable_wait.
//   - task_turns.json: a tool input request answered, and a tool task
//     polled on timers whose question was answered.
//   - plan_turns.json: plan mode: a planning turn's draft (another call
//     rejected), execute_plan and the executing turn, then write_todos.
//   - control_turns.json: an approval a steer (by queued message ID)
//     rejected, the steered turn, a model call cancel_turn stopped, a tool
//     task it abandoned (CancelToolTask), and close_session completing
//     the workflow.
//   - mcp_turns.json: a session of version 2 whose runner was offered MCP
//     tools: RunModel's host_calls routed a read (annotations: read) and a
//     write (no hints: unclassified, approved) to the server. The MCP
//     servers are the worker's config, which the workflow never reads:
//     the routing and the effects replay from the history alone.
//   - mcp_task_turns.json: MCP calls that ran as tasks of the tasks
//     extension: one polled on durable timers (PollToolTask with its
//     host_source), one whose question was answered through tasks/update,
//     one whose question could not be asked, and one cancel_turn abandoned
//     (CancelToolTask sending tasks/cancel), then close_session.
//   - rules_turns.json: approval_rules decisions in RunModel outcomes: a
//     write allowed without its approval, a write denied with the rule's
//     reason, a read a rule made wait (approved), and a shadow decision
//     recorded on a read that ran. The rules are the worker's config,
//     which the workflow never reads.
//   - deadline_turns.json: an approval with a 20 s deadline whose timer
//     first fired at the interrupt_expiring warning (15 s lead), then
//     extend_interrupt moved the deadline a minute (cancelling the timer
//     and arming one for the new warning), and the approval, with its
//     digest, came after the first deadline. The refused resolves (wrong
//     or missing digests) and extensions are not in it: validators refused
//     them.
//   - recovery_turns.json: a session of version 3 with recovery
//     max_attempts 1: a write killed mid-call on its one attempt made
//     outcome_unknown and told to the model (not the budget's failure), a
//     model call that kept failing bounded to 2 attempts and the turn
//     failed with the budget's last_turn_error, then a turn that answered.
//   - store_v4_turns.json: store_turns.json's session at version 4
//     (RetentionVersion): the same turns roll chunks, and without
//     compaction nothing is deleted.
//   - retention_turns.json: a version-4 session with compaction and a
//     retained limit of 6: summaries, then retention deleting the chunks
//     the summary covers, with the worker killed after a Step that deleted
//     them and before its commit.
//   - builtin_v5_turns.json: builtin_turns.json's turns in a version-5
//     session, whose built-in results keep the reference's key order.
//   - runner_policies_turns.json: a version-5 session (RunnerPoliciesVersion)
//     whose runner's own read (runner_read, which no tool policy names)
//     ran without approval, and whose call of an unknown tool failed at
//     once from RunModel's unknown_calls.
//   - metadata_turns.json: a session started with a title memo, renamed
//     and archived with set_session_metadata (an UpsertMemo) between two
//     turns, then closed.
//   - fork_turns.json: a fork (its start input's fork: chunks 1..6 of the
//     parent shared, messages 7..9 copied) whose first message started a
//     turn, then a turn with a tool call; the parent's approved write is
//     in its transcript, not run again.
//   - subagent_turns.json: a parent's delegations: a waiting child
//     (StartChildWorkflowExecution, its reports as sub_agent_report
//     signals) whose approval came through the parent, one the parent's
//     cancel_turn stopped (a sub_agent_control signal sent), and a
//     background child whose answer, a queued message, started the next
//     turn.
//   - notify_turns.json: an approval notified to a webhook channel and to
//     one that refused it (SendNotification Steps, the refusal reported),
//     escalated by its timer after 2 s, notified again at
//     interrupt_expiring, then approved (the escalation timer's cancel).
//   - subagent_child_turns.json: the first child's history (workflow type
//     TestAgentHelper): its start input's sub_agent, its reports to the
//     parent (SignalExternalWorkflowExecution), its turn and its close.

// quietLogger hides the replayer's expected nondeterminism report.
var quietLogger = log.NewStructuredLogger(slog.New(slog.DiscardHandler))

// recordedSettings are the worker settings the histories were recorded
// with (internal/e2e's test config).
func recordedSettings() session.Options {
	return session.Options{
		Agent: "test",
		Policies: contract.PolicySet{DefaultEffect: contract.EffectUnclassified, Policies: map[string]contract.ToolPolicy{
			"read_gate":     {Effect: contract.EffectRead},
			"idem_gate":     {Effect: contract.EffectIdempotentWrite},
			"noop":          {Effect: contract.EffectRead},
			"write_gate":    {Effect: contract.EffectNonIdempotentWrite, RequiresApproval: ptr(false)},
			"approve_write": {Effect: contract.EffectNonIdempotentWrite, RequiresApproval: ptr(true)},
		}},
		RunModel:         session.DefaultRunModelLimits,
		Tool:             session.DefaultToolLimits,
		SearchAttributes: true,
	}
}

// changedSettings are the ways an operator may change the config while
// sessions run. A session that recorded its settings must replay under
// each of them.
var changedSettings = []struct {
	name   string
	change func(*session.Options)
}{
	{"as recorded", func(*session.Options) {}},
	{"a new approval deadline", func(o *session.Options) { o.InterruptDeadlineMs = time.Hour.Milliseconds() }},
	{"model calls on a model queue", func(o *session.Options) { o.ModelTaskQueue = "dex-agents-model-openai" }},
	{"a tight recovery budget", func(o *session.Options) {
		o.Recovery = &session.RecoveryPolicy{MaxAttempts: 1, NoProgressTimeoutMs: 1000}
	}},
	{"another warning lead and extension maximum", func(o *session.Options) {
		o.InterruptExpiringLeadMs, o.MaxInterruptDeadlineMs = time.Minute.Milliseconds(), 0
	}},
	{"the search attribute missing", func(o *session.Options) { o.SearchAttributes = false }},
	{"every tool a read", func(o *session.Options) {
		o.Policies = contract.PolicySet{DefaultEffect: contract.EffectRead}
	}},
	{"every tool needs approval", func(o *session.Options) {
		o.Policies = contract.PolicySet{DefaultEffect: contract.EffectNonIdempotentWrite}
	}},
	{"another message window, chunk and retention", func(o *session.Options) {
		o.Messages = session.MessageOptions{Store: true, WindowSize: 64, ChunkSize: 32, ChunkMaxBytes: 1 << 20, RetainedLimit: 1000}
	}},
	{"no message store", func(o *session.Options) { o.Messages = session.MessageOptions{} }},
	{"compaction off", func(o *session.Options) { o.Compaction = nil }},
	{"another compaction policy", func(o *session.Options) {
		o.Compaction = &session.CompactionPolicy{ContextWindowTokens: 1000, TriggerRatio: 0.5, KeepRatio: 0.1}
	}},
	{"built-in tools off", func(o *session.Options) { o.BuiltInTools = nil }},
	{"the runner's policies untrusted", func(o *session.Options) { o.RunnerPoliciesUntrusted = true }},
	{"plan mode off", func(o *session.Options) { o.PlanModeEnabled = false }},
	{"no sub-agents", func(o *session.Options) { o.SubAgents = nil }},
	{"notify rules", func(o *session.Options) {
		o.Notify = []session.NotifyRule{{Kinds: []string{"approval", "question"}, Channel: "ops", EscalateAfterMs: 1000, EscalateTo: "oncall"}}
	}},
	{"other sub-agents", func(o *session.Options) {
		o.SubAgents = []session.SubAgentOption{{Name: "helper", FlowType: "OtherFlow", Mode: "background", MaxTurns: 1}}
	}},
	{"another longest wait", func(o *session.Options) {
		o.BuiltInTools, o.MaxDurableWaitMs = []string{session.BuiltInAskUser, session.BuiltInDurableWait}, 1000
	}},
	{"other Step limits", func(o *session.Options) {
		o.RunModel.MaximumAttempts, o.Tool.MaximumAttempts = 1, 7
		o.Tool.StartToClose = time.Minute
	}},
}

func replayer(opts session.Options) worker.WorkflowReplayer {
	r := worker.NewWorkflowReplayer()
	r.RegisterWorkflowWithOptions(Workflow(Runtime{Options: opts}), workflow.RegisterOptions{Name: "TestAgent"})
	// Sub-agents' histories (subagent_child_turns.json).
	r.RegisterWorkflowWithOptions(Workflow(Runtime{Options: opts}), workflow.RegisterOptions{Name: "TestAgentHelper"})
	return r
}

func histories(t *testing.T) []string {
	t.Helper()
	paths, err := filepath.Glob(filepath.Join("testdata", "histories", "*.json"))
	if err != nil {
		t.Fatal(err)
	}
	if len(paths) == 0 {
		t.Fatal("no recorded histories in testdata/histories")
	}
	return paths
}

func TestReplayRecordedHistories(t *testing.T) {
	for _, path := range histories(t) {
		name := filepath.Base(path)
		if strings.HasPrefix(name, "legacy_") {
			t.Run(name, func(t *testing.T) {
				if err := replayFile(replayer(recordedSettings()), nil, path); err != nil {
					t.Fatalf("replay %s: %v", path, err)
				}
			})
			continue
		}
		for _, c := range changedSettings {
			t.Run(name+"/"+c.name, func(t *testing.T) {
				opts := recordedSettings()
				c.change(&opts)
				if err := replayFile(replayer(opts), nil, path); err != nil {
					t.Fatalf("replay %s under %s: %v", path, c.name, err)
				}
			})
		}
	}
}

// TestReplayOfALegacyHistoryNeedsItsOwnSettings shows what recording the
// settings fixed: a session from before it does not replay once the
// deadline changed, so the replay tests above could fail.
func TestReplayOfALegacyHistoryNeedsItsOwnSettings(t *testing.T) {
	opts := recordedSettings()
	opts.InterruptDeadlineMs = time.Hour.Milliseconds()
	path := filepath.Join("testdata", "histories", "legacy_approval_turn.json")
	if err := replayFile(replayer(opts), quietLogger, path); err == nil {
		t.Fatal("a legacy history replayed under a new deadline; the changed-config replays prove nothing")
	}
}

// TestReplayDetectsAnIncompatibleHistory proves the replay test can fail: a
// history whose tool, compaction or model Step had another activity type
// does not replay.
func TestReplayDetectsAnIncompatibleHistory(t *testing.T) {
	for _, path := range histories(t) {
		t.Run(filepath.Base(path), func(t *testing.T) {
			b, err := os.ReadFile(path)
			if err != nil {
				t.Fatal(err)
			}
			bad := string(b)
			for _, swap := range [][2]string{{`"CallSingleAttemptTool"`, `"CallTool"`}, {`"CompactContext"`, `"RunModel"`}, {`"RunModel"`, `"CallTool"`}} {
				if bad = strings.Replace(string(b), swap[0], swap[1], 1); bad != string(b) {
					break
				}
			}
			if bad == string(b) {
				t.Fatal("the recorded history has no CallSingleAttemptTool, CompactContext or RunModel step")
			}
			tampered := filepath.Join(t.TempDir(), "bad.json")
			if err := os.WriteFile(tampered, []byte(bad), 0o644); err != nil {
				t.Fatal(err)
			}
			if err := replayFile(replayer(recordedSettings()), quietLogger, tampered); err == nil {
				t.Fatal("an incompatible history replayed without error")
			}
		})
	}
}

func ptr[T any](v T) *T { return &v }

// replayFile replays a recorded history as the session it was, under the
// session ID its commands show (RecordedSessionID).
func replayFile(r worker.WorkflowReplayer, logger log.Logger, path string) error {
	f, err := os.Open(path)
	if err != nil {
		return err
	}
	defer f.Close()
	hist, err := client.HistoryFromJSON(f, client.HistoryJSONOptions{})
	if err != nil {
		return err
	}
	var opts worker.ReplayWorkflowHistoryOptions
	opts.OriginalExecution.ID = RecordedSessionID(hist)
	if logger == nil {
		logger = log.NewStructuredLogger(slog.New(slog.DiscardHandler))
	}
	return r.ReplayWorkflowHistoryWithOptions(logger, hist, opts)
}
