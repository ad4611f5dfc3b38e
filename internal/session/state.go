package session

// State, the settings a session starts with (Options), and the turn loop:
// queued messages, the next turn, the model's outcome, tool calls and their
// approvals. Like every file of the package but the glue (see doc.go), it
// is part of the deterministic state machine.

import (
	"slices"
	"strconv"
	"strings"

	"github.com/dex-agents/dex-agent-worker/pluginapi/contract"
	"github.com/dex-agents/dex-agent-worker/wire"
)

// Options are the session's settings: everything from the worker's config
// that shapes the session's workflow commands. They are fixed when the
// session starts, recorded in its history (see the workflow glue), and
// carried through continue-as-new, so a later change of the config applies
// to new sessions and never changes how a running session replays.
type Options struct {
	// Agent is the agent's name in the worker config.
	Agent string `json:"agent"`
	// Policies are the explicit tool policies and the default effect. An
	// explicit policy is the authority on a call's effect and approval;
	// where there is none, a trusted runner's claim comes before the
	// default effect (see AuthorizeRunnerPolicy).
	Policies contract.PolicySet `json:"policies"`
	// InterruptDeadlineMs is the approval deadline in milliseconds (0: none).
	InterruptDeadlineMs int64 `json:"interrupt_deadline_ms,omitempty"`
	// InterruptExpiringLeadMs, when set, writes interrupt_expiring this
	// long before an interrupt's deadline passes.
	InterruptExpiringLeadMs int64 `json:"interrupt_expiring_lead_ms,omitempty"`
	// MaxInterruptDeadlineMs, when set, lets extend_interrupt move a
	// deadline up to this long after the interrupt was raised; 0 refuses
	// extensions.
	MaxInterruptDeadlineMs int64 `json:"max_interrupt_deadline_ms,omitempty"`
	// SearchAttributes says whether the session upserts the ActiveStepTypes
	// search attribute.
	SearchAttributes bool `json:"search_attributes,omitempty"`
	// RunModel and Tool are the timeouts and retry budgets of the Steps.
	RunModel Limits `json:"run_model"`
	Tool     Limits `json:"tool"`
	// Recovery, when set, is the turn's recovery budget: how many Step
	// attempts after each Step's first a turn may make, and how long one
	// Step may go unfinished, before the turn fails.
	Recovery *RecoveryPolicy `json:"recovery,omitempty"`
	// ModelTaskQueue, when set, is the task queue of the model calls (the
	// RunModel and CompactContext Steps): a model queue whose rate limit
	// the engine enforces for every worker. Empty: the workflow's queue.
	ModelTaskQueue string `json:"model_task_queue,omitempty"`
	// Messages says where the session keeps its messages.
	Messages MessageOptions `json:"messages"`
	// Compaction, when set, summarizes the oldest messages before a model
	// call whose input would pass its threshold (sessions in the store).
	Compaction *CompactionPolicy `json:"compaction,omitempty"`
	// PlanModeEnabled lets messages start planning turns (plan_mode),
	// whose plan the user runs with execute_plan. It needs write_todos.
	PlanModeEnabled bool `json:"plan_mode_enabled,omitempty"`
	// BuiltInTools are the built-in tools the session offers and runs
	// itself (ask_user, durable_wait); MaxDurableWaitMs bounds a wait.
	BuiltInTools     []string `json:"built_in_tools,omitempty"`
	MaxDurableWaitMs int64    `json:"max_durable_wait_ms,omitempty"`
	// RunnerPoliciesUntrusted is set when the agent's plugin is declared
	// trusts_tool_policies: false: only the config decides a call's
	// policy, and a runner's claim may only make it stricter (sessions of
	// RunnerPoliciesVersion; older ones never trust the claim).
	RunnerPoliciesUntrusted bool `json:"runner_policies_untrusted,omitempty"`
	// SubAgents are the agent's sub-agents, offered as delegate_to_<name>.
	SubAgents []SubAgentOption `json:"sub_agents,omitempty"`
	// Notify are the agent's notify rules (notify.go).
	Notify []NotifyRule `json:"notify,omitempty"`
	// Version is SettingsVersion once the settings were recorded in the
	// session's history; 0 for sessions started by older workers, which
	// replay as they ran: with the worker's settings, trusting the effect
	// and approval the runner resolved for each call.
	Version int `json:"version,omitempty"`
}

// CompactionPolicy keeps the model's input under its context window: once
// the next input is estimated at TriggerRatio of ContextWindowTokens, a
// CompactContext Step summarizes the oldest messages, keeping about
// KeepRatio of the window of the newest ones. ReservedInputTokens adds
// what an estimate cannot see (a framework's system prompt).
type CompactionPolicy struct {
	ContextWindowTokens int64   `json:"context_window_tokens"`
	TriggerRatio        float64 `json:"trigger_ratio"`
	KeepRatio           float64 `json:"keep_ratio"`
	ReservedInputTokens int64   `json:"reserved_input_tokens,omitempty"`
}

// Default ratios of a compaction policy (the spec's).
const (
	DefaultTriggerRatio = 0.85
	DefaultKeepRatio    = 0.3
)

// Summary is the session's context summary: it replaces the messages from
// FirstSequence through LastSequence in every later model input. The
// workflow keeps its beginning; the store keeps a longer text (TextRef).
type Summary struct {
	Generation    int    `json:"generation"`
	FirstSequence int64  `json:"first_sequence"`
	LastSequence  int64  `json:"last_sequence"`
	Text          string `json:"text"`
	TextRef       string `json:"text_ref,omitempty"`
	CreatedAtMs   int64  `json:"created_at_ms"`
}

// MessageOptions say where a session keeps its messages: in its own state
// (Store false: sessions started before the message store, whose
// histories replay that way), or in the message store, with a window of
// the newest ones in the workflow.
type MessageOptions struct {
	Store bool `json:"store,omitempty"`
	// WindowSize is message_window_size: the newest messages the workflow
	// keeps (as previews); older ones move into chunks.
	WindowSize int `json:"window_size,omitempty"`
	// ChunkSize and ChunkMaxBytes bound one chunk.
	ChunkSize     int   `json:"chunk_size,omitempty"`
	ChunkMaxBytes int64 `json:"chunk_max_bytes,omitempty"`
	// RetainedLimit is retained_message_limit: with compaction, whole
	// chunks that the summary covers and that precede the newest
	// RetainedLimit messages are deleted; 0 keeps every message. Without
	// compaction nothing is deleted (from RetentionVersion on).
	RetainedLimit int64 `json:"retained_limit,omitempty"`
}

// SettingsVersion is the version of recorded settings: the config's
// policies are the authority on every call (AuthorizePolicy).
const SettingsVersion = 1

// HostToolsVersion is the version from which the worker runs MCP tools
// itself: a RunModel outcome's HostCalls route calls to MCP servers, and a
// tool source reference starting with "mcp:" is the host's alone (a runner
// that sets one fails the turn). Sessions of older versions replay as they
// ran, with every call run by the runner.
const HostToolsVersion = 2

// ToolBudgetVersion is the version from which a tool Step's failure is
// weighed against the Step's own limits (one attempt for a write) to tell
// whether the turn's recovery budget stopped it. Sessions of older
// versions replay as they ran, weighing it against the tool limits.
const ToolBudgetVersion = 3

// RetentionVersion is the version from which retention deletes only what a
// compaction summary covers: a session without compaction keeps every
// message (the model's input and list_agent_messages need them all).
// Sessions of older versions replay as they ran, deleting the chunks
// before the newest retained_message_limit messages without compaction too.
const RetentionVersion = 4

// RunnerPoliciesVersion is the version from which a runner's policy
// applies where the config is silent: a call of the runner's own tool runs
// under the config's tool_policies entry, else the policy the runner
// claims (unless its plugin is declared trusts_tool_policies: false),
// else the agent's default_tool_effect (AuthorizeRunnerPolicy). A call the
// worker found to name no tool of any source (ModelOutcome.UnknownCalls)
// fails at once as "unknown tool <name>", without approval. Sessions of
// older versions replay as they ran: the config decides, and a claim may
// only make a call stricter.
const RunnerPoliciesVersion = 5

// ExecutePlanVersion is the version from which execute_plan runs an active
// plan with plan mode off, as the reference does (a plan write_todos wrote
// in an ordinary turn). Older sessions replay as they ran: false.
const ExecutePlanVersion = 5

// SearchOptInVersion is the version from which a session whose start
// input names no active_step_search_mode (a raw Temporal client's start)
// does not upsert ActiveStepTypes; client.StartSession asks for it.
// Older sessions replay as they ran: searchable by default.
const SearchOptInVersion = 5

// AskedRerunVersion is the version from which a call whose tool asked a
// question, and whose rerun with the answer never started, keeps the
// status of its effect (failed for a read, outcome_unknown otherwise): the
// tool ran before it asked. Older sessions replay as they ran: failed as
// never run.
const AskedRerunVersion = 5

// BuiltInTextsVersion is the version from which the built-ins' results
// keep the reference's key order ({"status":"answered","answer":...});
// older sessions replay with sorted keys, as they ran.
const BuiltInTextsVersion = 5

// CurrentVersion is the version new sessions record.
const CurrentVersion = RunnerPoliciesVersion

// MCPSourcePrefix starts the tool source reference of a call the worker
// routes to an MCP server ("mcp:<server>/<tool>").
const MCPSourcePrefix = "mcp:"

// HostCall is a tool call that the worker runs itself: an MCP tool it
// offered in that model call. The RunModel Step decides it, so history
// keeps the routing and the effect the tool's annotations gave, and a
// replay never lists a server again.
type HostCall struct {
	ToolCallID string `json:"tool_call_id"`
	// Source is the call's tool source reference, "mcp:<server>/<tool>".
	Source string `json:"source"`
	// Effect is the effect of the tool's annotations on a server whose
	// annotations are trusted; "" when they say nothing, so the session's
	// default effect applies. A tool policy naming the tool wins.
	Effect contract.Effect `json:"effect,omitempty"`
}

// InterruptKind tags a pending interrupt: what answers it and how.
type InterruptKind string

// Interrupt kinds. Questions and plan approvals come with the features that
// raise them.
const (
	// InterruptApproval waits for resolve_interrupt on one tool call.
	InterruptApproval InterruptKind = wire.InterruptKindApproval
	// InterruptQuestion waits for answer_question (or a decline through
	// resolve_interrupt) on an ask_user call.
	InterruptQuestion InterruptKind = wire.InterruptKindQuestion
)

// Interrupt is a pending interrupt with its deadline as Unix milliseconds.
type Interrupt struct {
	InterruptID    string        `json:"interrupt_id"`
	ToolCallID     string        `json:"tool_call_id"`
	ToolName       string        `json:"tool_name"`
	Kind           InterruptKind `json:"kind"`
	DeadlineUnixMs int64         `json:"deadline_unix_ms,omitempty"`
	// RaisedUnixMs is when it was raised (0 in states of older workers);
	// Warned is set once interrupt_expiring was written for the deadline.
	RaisedUnixMs int64 `json:"raised_unix_ms,omitempty"`
	Warned       bool  `json:"warned,omitempty"`
	// Question, Choices and AllowsFreeText are a question's.
	Question       string   `json:"question,omitempty"`
	Choices        []string `json:"choices,omitempty"`
	AllowsFreeText bool     `json:"allows_free_text,omitempty"`
}

// State is the whole session. It is serializable and passes through
// continue-as-new unchanged.
type State struct {
	SessionID string  `json:"session_id"`
	Options   Options `json:"options"`
	Started   bool    `json:"started"`

	Status        string `json:"status"`
	ActiveTurnID  string `json:"active_turn_id,omitempty"`
	TurnCount     int    `json:"turn_count"`
	LastTurnError string `json:"last_turn_error,omitempty"`
	// Phase says which Step the active turn is in; see the phase constants.
	Phase string `json:"phase,omitempty"`

	NextSequence int64 `json:"next_sequence"`
	// Messages holds every message whole, in a session without the
	// message store.
	Messages []contract.Message `json:"messages"`
	// Window holds the newest messages as previews, in a session with the
	// message store (which holds them whole); the store's chunks hold the
	// older ones from DeletedBefore on.
	Window []Entry `json:"window,omitempty"`
	// RolledThrough is the last sequence committed chunks hold: the next
	// storing Step deletes the window rows up to it.
	RolledThrough int64 `json:"rolled_through,omitempty"`
	// DeletedBefore is where retention cut: the messages before it are
	// deleted (0: none).
	DeletedBefore int64 `json:"deleted_before,omitempty"`
	// WriterGen is the Gen of the last Step scheduled that stores messages.
	WriterGen int64 `json:"writer_gen,omitempty"`
	// Rolling and Retaining are the roll and the retention asked of that
	// Step; its result must report exactly that roll and no deletion past
	// Retaining.
	Rolling   []ChunkPlan `json:"rolling,omitempty"`
	Retaining int64       `json:"retaining,omitempty"`

	Queued        []wire.QueuedMessage `json:"queued,omitempty"`
	NextMessageID int64                `json:"next_message_id"`
	// TurnText is the user text of the turn whose message is being built
	// (its preview when TurnTextRef is set).
	TurnText    string `json:"turn_text,omitempty"`
	TurnTextRef string `json:"turn_text_ref,omitempty"`
	// RunState is the framework run state while a turn waits for tool
	// calls (its preview when RunStateRef is set).
	RunState    string          `json:"run_state,omitempty"`
	RunStateRef string          `json:"run_state_ref,omitempty"`
	ToolCalls   []wire.ToolCall `json:"tool_calls,omitempty"`
	// Refs hold the store references of the records' large fields.
	Refs       []RecordRefs   `json:"refs,omitempty"`
	Interrupts []Interrupt    `json:"interrupts,omitempty"`
	Usage      contract.Usage `json:"usage"`
	// Settings are the session settings the next turn starts with, as
	// compact JSON of one object ("" for none).
	Settings string `json:"session_settings,omitempty"`
	// TurnSettings are the active turn's copy of Settings, taken when it
	// started; its model calls read only this copy.
	TurnSettings string `json:"turn_session_settings,omitempty"`
	// Summary is the context summary, once a compaction recorded one.
	Summary *Summary `json:"context_summary,omitempty"`
	// CompactingThrough is the cutoff of the running CompactContext Step.
	CompactingThrough int64 `json:"compacting_through,omitempty"`
	// Waits are the active turn's durable_wait calls that wait.
	Waits []Wait `json:"waits,omitempty"`
	// Plan is the session's plan, nil until write_todos first succeeds.
	Plan *wire.Plan `json:"plan,omitempty"`
	// Mode is the active turn's interaction mode ("" is chat).
	Mode string `json:"interaction_mode,omitempty"`
	// APIToken names the API token that started the session.
	APIToken string `json:"api_token,omitempty"`
	// ForkedFrom is set on a fork: its parent and fork point.
	ForkedFrom *wire.ForkOrigin `json:"forked_from,omitempty"`
	// CostMicros is what the session's model calls cost, as the Steps
	// priced them; TurnSpend is what the active turn's calls used.
	CostMicros int64      `json:"cost_micros,omitempty"`
	TurnSpend  wire.Spend `json:"turn_spend"`
	// TurnRetries counts the active turn's Step attempts after each
	// Step's first (its recovery attempts); RecoveryError, once set, ends
	// the turn when its tool calls are final: a tool Step ran out of the
	// turn's recovery budget (Options.Recovery).
	TurnRetries   int    `json:"turn_retries,omitempty"`
	RecoveryError string `json:"recovery_error,omitempty"`
	// HoldTurns starts no new turn in this run: a newer worker version is
	// current, and the session moves to it at its next turn boundary
	// (continue-as-new). The next run clears it.
	HoldTurns bool `json:"hold_turns,omitempty"`
	// SpendLeft is what the budgets left at the last model call, and
	// SpendRefused the limit that stopped the last one.
	SpendLeft    *wire.SpendLeft    `json:"spend_left,omitempty"`
	SpendRefused *wire.SpendRefusal `json:"spend_refused,omitempty"`
	// Steered are the steered messages not applied yet: the next turn
	// starts with all of them, before any queued message. They share the
	// queue's byte limit.
	Steered []wire.QueuedMessage `json:"steered,omitempty"`
	// TurnMore are the user messages of the turn being built after
	// TurnText (a turn that steered messages start has one per message).
	TurnMore []wire.QueuedMessage `json:"turn_more,omitempty"`
	// Control is the active turn's turn control request: "", "steered" or
	// "turn_cancelled"; CancelledTurn is the last turn cancel_turn
	// cancelled, so a second cancel of it is true and changes nothing.
	Control       string `json:"control,omitempty"`
	CancelledTurn string `json:"cancelled_turn,omitempty"`
	// Closed is set by close_session: the session takes no new message,
	// and its workflow completes once nothing is left to run.
	Closed bool `json:"closed,omitempty"`
	// TurnStartedSent says the turn being built wrote turn_started at its
	// first user message.
	TurnStartedSent bool `json:"turn_started_sent,omitempty"`
	// ModelSteps counts the session's model calls (RunModel outcomes),
	// which a sub-agent's max_turns bounds.
	ModelSteps int `json:"model_steps,omitempty"`

	// SubAgent is set on a sub-agent's session: its parent, mode and the
	// budget above it (subagent.go).
	SubAgent *wire.SubAgentStart `json:"sub_agent,omitempty"`
	// Reported are the interrupts reported to the parent (session and
	// interrupt ID), and ReportedTurns the turns whose end was.
	Reported      []string `json:"reported,omitempty"`
	ReportedTurns int      `json:"reported_turns,omitempty"`
	// Children are the child sessions the active turn waits on;
	// SubAgentSeq numbers the session's delegations; SubAgentSpend is
	// what its children used; Settled are children stopped before they
	// reported their end.
	Children []Child `json:"children,omitempty"`
	// Background are the children started in background mode that have
	// not answered yet; they outlive the turn that started them.
	Background []Child `json:"background_children,omitempty"`
	// Notified are the pending interrupts notified, and Notices their
	// escalations that wait (notify.go).
	Notified      []string       `json:"notified,omitempty"`
	Notices       []Notice       `json:"notices,omitempty"`
	SubAgentSeq   int            `json:"sub_agent_seq,omitempty"`
	SubAgentSpend wire.Spend     `json:"sub_agent_spend,omitempty"`
	Settled       []SettledChild `json:"settled_children,omitempty"`
}

// Turn phases. The phase decides which inputs a state accepts.
const (
	phaseNone          = ""
	phaseBuildingUser  = "building_user_message"
	phaseRunningModel  = "running_model"
	phaseRunningTools  = "running_tools"
	phaseRecordFailure = "recording_turn_failure"
	phaseCompacting    = "compacting_context"
	// phaseApplyingControl ends a steered or cancelled turn.
	phaseApplyingControl = "applying_turn_control"
)

// New returns the state of a session that has not started.
func New(sessionID string, opts Options) *State {
	return &State{SessionID: sessionID, Options: opts, NextSequence: 1, NextMessageID: 1}
}

func (s *State) enqueue(text, ref string) {
	id := "msg-" + strconv.FormatInt(s.NextMessageID, 10)
	s.NextMessageID++
	s.Queued = append(s.Queued, wire.QueuedMessage{MessageID: id, Text: text, TextRef: ref})
}

// next starts the next turn when the session is idle: with every steered
// message, else with the first queued one.
func (s *State) next() []Command {
	if !s.Started || s.Phase != phaseNone || s.HoldTurns || len(s.Queued) == 0 && len(s.Steered) == 0 {
		if s.Closed && s.Finished() {
			s.Status = wire.StatusClosed
		}
		return nil
	}
	var msg wire.QueuedMessage
	planMode := false
	if len(s.Steered) > 0 {
		msg, s.TurnMore = s.Steered[0], s.Steered[1:]
		s.Steered = nil
		for _, m := range s.TurnMore {
			planMode = planMode || m.PlanMode
		}
	} else {
		msg = s.Queued[0]
		s.Queued = s.Queued[1:]
	}
	planMode = planMode || msg.PlanMode
	s.Mode = wire.InteractionChat
	switch {
	case msg.MessageID == planExecutionMessageID:
		s.Mode = wire.InteractionExecuting
	case s.Options.PlanModeEnabled && (planMode || s.Plan != nil && s.Plan.Status == PlanDraft):
		s.Mode = wire.InteractionPlanning
	}
	s.TurnCount++
	s.ActiveTurnID = "turn-" + strconv.Itoa(s.TurnCount)
	s.Status = wire.StatusRunningModel
	s.Phase = phaseBuildingUser
	s.TurnText, s.TurnTextRef = msg.Text, msg.TextRef
	s.TurnSettings = s.Settings
	s.TurnSpend = wire.Spend{}
	s.TurnRetries, s.RecoveryError = 0, ""
	cmd := s.buildUserMessage()
	if w := cmd.Input.Store; w != nil {
		// A new turn: the last turn's blobs (its tool arguments and
		// outputs, its run state, its user text) are garbage now.
		w.Sweep, w.SweepKeep = true, s.heldRefs()
	}
	return []Command{cmd}
}

// buildUserMessage builds the turn's next user message (TurnText).
func (s *State) buildUserMessage() BuildUserMessage {
	return BuildUserMessage{Input: BuildUserMessageInput{
		Agent: s.Options.Agent, SessionID: s.SessionID, TurnID: s.ActiveTurnID,
		Text: s.TurnText, TextRef: s.TurnTextRef, Store: s.storeWork(),
	}}
}

// heldRefs lists the store references the session holds between turns:
// the texts of queued messages and of the turn about to start.
func (s *State) heldRefs() []string {
	var refs []string
	if s.TurnTextRef != "" {
		refs = append(refs, s.TurnTextRef)
	}
	if s.Summary != nil && s.Summary.TextRef != "" {
		refs = append(refs, s.Summary.TextRef)
	}
	for _, m := range slices.Concat(s.Queued, s.Steered, s.TurnMore) {
		if m.TextRef != "" {
			refs = append(refs, m.TextRef)
		}
	}
	return refs
}

func (s *State) append(m contract.FrameworkMessage) int64 {
	seq := s.NextSequence
	s.NextSequence++
	s.Messages = append(s.Messages, contract.Message{
		Sequence:   seq,
		Role:       m.Role,
		Text:       m.Text,
		Item:       m.Item,
		ToolCallID: m.ToolCallID,
		ToolName:   m.ToolName,
		TurnID:     s.ActiveTurnID,
		ToolStatus: m.ToolStatus,
	})
	return seq
}

// ModelOutcome is the result of one RunModel Step. With the message store,
// the outcome's new messages are stored and Stored describes them (the
// outcome's NewMessages are then empty), a long run state is stored
// (RunStateRef; RunState holds its preview), and so are long tool call
// arguments (Refs; Arguments holds their preview).
type ModelOutcome struct {
	TurnCompleted      *contract.TurnCompleted      `json:"turn_completed,omitempty"`
	ToolCallsRequested *contract.ToolCallsRequested `json:"tool_calls_requested,omitempty"`
	Stored             *StoreResult                 `json:"stored,omitempty"`
	RunStateRef        string                       `json:"run_state_ref,omitempty"`
	Refs               []RecordRefs                 `json:"refs,omitempty"`
	// UnfinishedCapable reports that the runner implements
	// build_unfinished_turn_messages.
	UnfinishedCapable bool `json:"unfinished_capable,omitempty"`
	// Attempt is the attempt of the RunModel Step that made the call.
	Attempt int `json:"attempt,omitempty"`
	// CompactThrough, instead of an outcome of the runner, says that the
	// Step made no model call: the input was past the compaction threshold,
	// and the messages through this sequence are to be summarized first.
	CompactThrough int64 `json:"compact_through,omitempty"`
	// Spend is set when the worker limits or prices spend; with Refused
	// set, the Step made no model call.
	Spend *StepSpend `json:"spend,omitempty"`
	// HostCalls are the calls of ToolCallsRequested that the worker runs
	// itself, in sessions of HostToolsVersion.
	HostCalls []HostCall `json:"host_calls,omitempty"`
	// RuleDecisions are what the agent's approval rules decided about the
	// calls of ToolCallsRequested. They are decided by the Step, so they
	// are in history: a rule change never replays differently.
	RuleDecisions []RuleDecision `json:"rule_decisions,omitempty"`
	// UnknownCalls are the IDs of the calls of ToolCallsRequested whose
	// name no tool source offered: not the runner (its Configure listed
	// its tools) and not the worker (built-ins, MCP tools). They fail
	// without approval in sessions of RunnerPoliciesVersion.
	UnknownCalls []string `json:"unknown_calls,omitempty"`
}

// RuleDecision is what an agent's approval rules decided about one call:
// the enforcing rule's decision (allow, require_approval, deny) and the
// shadow rule's (recorded, never enforced). Empty fields: no rule matched.
type RuleDecision struct {
	ToolCallID     string `json:"tool_call_id"`
	Rule           string `json:"rule,omitempty"`
	Decision       string `json:"decision,omitempty"`
	Reason         string `json:"reason,omitempty"`
	ShadowRule     string `json:"shadow_rule,omitempty"`
	ShadowDecision string `json:"shadow_decision,omitempty"`
}

// The decisions of approval rules (package approvalrules).
const (
	RuleAllow           = "allow"
	RuleRequireApproval = "require_approval"
	RuleDeny            = "deny"
)

// ruleDecision returns the rules' decision about a call, or nil.
func ruleDecision(out ModelOutcome, id string) *RuleDecision {
	for i := range out.RuleDecisions {
		if out.RuleDecisions[i].ToolCallID == id {
			return &out.RuleDecisions[i]
		}
	}
	return nil
}

// CallPolicy is the policy a session with these options gives a call the
// model asked for (hc: the worker's own tool that runs it, or nil): the
// effect that sets its retries, and whether it needs approval before the
// agent's approval rules decide.
func (o Options) CallPolicy(call contract.DeferredToolCall, hc *HostCall) contract.ToolPolicy {
	switch {
	case hc != nil:
		return AuthorizeHostPolicy(o.Policies, call.ToolName, hc.Effect, call.Policy)
	case o.Version < SettingsVersion:
		return legacyPolicy(call.Policy)
	case o.Version < RunnerPoliciesVersion || o.builtIn(call.ToolName):
		return AuthorizePolicy(o.Policies, call.ToolName, call.Policy)
	}
	return AuthorizeRunnerPolicy(o.Policies, call.ToolName, call.Policy, !o.RunnerPoliciesUntrusted)
}

// HostCallOf is the host call of out with this ID, in a session of these
// options (nil: the runner runs it).
func (o Options) HostCallOf(out ModelOutcome, id string) *HostCall {
	if o.Version < HostToolsVersion {
		return nil
	}
	for i := range out.HostCalls {
		if out.HostCalls[i].ToolCallID == id {
			return &out.HostCalls[i]
		}
	}
	return nil
}

// hostCall returns the host's decision about a call, or nil when the
// runner runs it.
func (s *State) hostCall(out ModelOutcome, id string) *HostCall { return s.Options.HostCallOf(out, id) }

// modelStepDone applies a RunModel outcome. nowMs is the workflow clock in
// Unix milliseconds, used for approval deadlines.
func (s *State) modelStepDone(out ModelOutcome, nowMs int64) []Command {
	if out.Spend != nil && out.Spend.Refused != nil {
		return s.spendRefused(out.Stored, out.Spend.Refused, out.Attempt)
	}
	if out.CompactThrough != 0 {
		return s.compact(out)
	}
	var usage contract.Usage
	switch {
	case out.TurnCompleted != nil && out.ToolCallsRequested == nil:
		usage = out.TurnCompleted.Usage
	case out.ToolCallsRequested != nil && out.TurnCompleted == nil:
		usage = out.ToolCallsRequested.Usage
	default:
		return s.failTurn("the runner returned a malformed outcome: want exactly one of turn_completed and tool_calls_requested")
	}
	attempt := out.Attempt
	s.ModelSteps++
	cmds := s.recordUsage(usage, attempt)
	s.chargeSpend(usage, out.Spend)
	if reason := s.checkStored(out.Stored); reason != "" {
		return append(cmds, s.failTurn(reason)...)
	}
	if tc := out.TurnCompleted; tc != nil {
		count := s.store(tc.NewMessages, out.Stored)
		turn := s.ActiveTurnID
		s.LastTurnError = ""
		cmds = append(cmds, s.endTurn()...)
		cmds = append(cmds, Emit{Event: newEvent(wire.EventTurnCompleted, turn, attempt, wire.TurnCompletedPayload{MessageCount: count})})
		return append(cmds, s.next()...)
	}
	req := out.ToolCallsRequested
	if reason := s.checkToolCalls(out); reason != "" {
		return append(cmds, s.failTurn(reason)...)
	}
	s.store(req.NewMessages, out.Stored)
	s.RunState, s.RunStateRef = req.RunState, out.RunStateRef
	s.Refs = append(s.Refs, out.Refs...)
	s.Phase = phaseRunningTools
	s.Status = wire.StatusRunningTools
	todos := 0 // write_todos calls in this response
	for _, call := range req.ToolCalls {
		if call.ToolName == BuiltInWriteTodos {
			todos++
		}
	}
	for _, call := range req.ToolCalls {
		source := call.ToolSourceReference
		hc := s.hostCall(out, call.ToolCallID)
		if hc != nil {
			source = hc.Source
		}
		policy := s.Options.CallPolicy(call, hc)
		rec := wire.ToolCall{
			ToolCallID:          call.ToolCallID,
			ToolName:            call.ToolName,
			Arguments:           call.Arguments,
			Effect:              wire.Effect(policy.Effect),
			RequiresApproval:    policy.ApprovalRequired(),
			DeferralOrder:       len(s.ToolCalls),
			ToolSourceReference: source,
		}
		if s.Options.Version >= RunnerPoliciesVersion && slices.Contains(out.UnknownCalls, call.ToolCallID) {
			cmds = append(cmds, s.failUnknown(rec, attempt)...)
			continue
		}
		if s.Mode == wire.InteractionPlanning && call.ToolName != BuiltInWriteTodos {
			cmds = append(cmds, s.refuseInPlanning(rec, attempt)...)
			continue
		}
		if s.Control != controlNone && !s.settlesAtOnce(rec) {
			// The user steered while the model ran: what it asked for does
			// not run (write_todos, and a built-in call with invalid
			// arguments, still settle here).
			cmds = append(cmds, s.deferStopped(rec, attempt)...)
			continue
		}
		if s.builtIn(call.ToolName) {
			cmds = append(cmds, s.deferBuiltIn(rec, attempt, nowMs, todos)...)
			continue
		}
		if sa := s.subAgentTool(call.ToolName); sa != nil {
			cmds = append(cmds, s.delegate(rec, sa, attempt)...)
			continue
		}
		if s.backgroundTool(call.ToolName) {
			cmds = append(cmds, s.controlBackground(rec, attempt)...)
			continue
		}
		// The agent's approval rules decide before the policy; the effect,
		// and so the retries, stay the policy's.
		if d := ruleDecision(out, call.ToolCallID); d != nil {
			rec.ApprovalRule, rec.ApprovalDecision = d.Rule, d.Decision
			rec.ShadowApprovalRule, rec.ShadowApprovalDecision = d.ShadowRule, d.ShadowDecision
			switch d.Decision {
			case RuleAllow:
				rec.RequiresApproval = false
			case RuleRequireApproval:
				rec.RequiresApproval = true
			case RuleDeny:
				cmds = append(cmds, s.denyByRule(rec, d, attempt)...)
				continue
			}
		}
		cmds = append(cmds, Emit{Event: newEvent(wire.EventToolCallDeferred, s.ActiveTurnID, attempt, wire.ToolCallDeferredPayload{
			ToolCallID: rec.ToolCallID, ToolName: rec.ToolName, Effect: string(rec.Effect), RequiresApproval: rec.RequiresApproval,
			ApprovalRule: rec.ApprovalRule, ApprovalDecision: rec.ApprovalDecision,
			ShadowApprovalRule: rec.ShadowApprovalRule, ShadowApprovalDecision: rec.ShadowApprovalDecision,
		}).forStep(toolStep(s.ActiveTurnID, rec.ToolCallID))})
		if rec.RequiresApproval {
			rec.Status = wire.ToolCallAwaitingApproval
			in := Interrupt{InterruptID: rec.ToolCallID, ToolCallID: rec.ToolCallID, ToolName: rec.ToolName, Kind: InterruptApproval}
			if s.Options.InterruptDeadlineMs > 0 {
				in.DeadlineUnixMs = nowMs + s.Options.InterruptDeadlineMs
				in.RaisedUnixMs = nowMs
			}
			s.Interrupts = append(s.Interrupts, in)
			s.ToolCalls = append(s.ToolCalls, rec)
			cmds = append(cmds, Emit{Event: newEvent(wire.EventInterruptRaised, s.ActiveTurnID, attempt, wire.InterruptRaisedPayload{
				InterruptID: in.InterruptID, ToolCallID: in.ToolCallID, ToolName: in.ToolName,
				Deadline: formatDeadline(in.DeadlineUnixMs), Kind: string(in.Kind), Choices: []string{},
			}).forStep(toolStep(s.ActiveTurnID, in.ToolCallID))})
			if in.DeadlineUnixMs > 0 {
				cmds = append(cmds, s.deadlineTimer(in, nowMs))
			}
			continue
		}
		rec.Status = wire.ToolCallApproved
		s.ToolCalls = append(s.ToolCalls, rec)
		cmds = append(cmds, s.runTool(rec))
	}
	// Built-in calls with invalid arguments are final at once; when every
	// call is, the turn goes on.
	if !slices.ContainsFunc(s.ToolCalls, func(c wire.ToolCall) bool { return !c.Status.Final() }) {
		cmds = append(cmds, s.toModel()...)
	}
	return cmds
}

// checkToolCalls returns why a ToolCallsRequested must fail the turn, or "".
func (s *State) checkToolCalls(out ModelOutcome) string {
	req := out.ToolCallsRequested
	if req.RunState == "" && out.RunStateRef == "" {
		return "the runner returned tool_calls_requested with an empty framework_run_state"
	}
	if len(req.ToolCalls) == 0 {
		return "the runner returned tool_calls_requested without tool calls"
	}
	stored := len(req.NewMessages) > 0 || out.Stored != nil && len(out.Stored.Messages) > 0
	if stored && !out.UnfinishedCapable {
		return "the runner stored new_messages in tool_calls_requested but does not implement build_unfinished_turn_messages"
	}
	for i, call := range req.ToolCalls {
		switch {
		case call.ToolCallID == "":
			return "tool call " + strconv.Itoa(i) + " (" + call.ToolName + ") has an empty tool_call_id"
		case strings.Contains(call.ToolCallID, "/"):
			return "tool call ID " + strconv.Quote(call.ToolCallID) + " contains '/'"
		case call.ToolName == "":
			return "tool call " + strconv.Quote(call.ToolCallID) + " has an empty tool_name"
		}
		if s.findCall(call.ToolCallID) >= 0 {
			return "tool call ID " + strconv.Quote(call.ToolCallID) + " is used twice in turn " + s.ActiveTurnID
		}
		for _, prev := range req.ToolCalls[:i] {
			if prev.ToolCallID == call.ToolCallID {
				return "tool call ID " + strconv.Quote(call.ToolCallID) + " is used twice in turn " + s.ActiveTurnID
			}
		}
		if s.Options.Version >= HostToolsVersion && strings.HasPrefix(call.ToolSourceReference, MCPSourcePrefix) && s.hostCall(out, call.ToolCallID) == nil {
			// Only the worker routes a call to an MCP server, and only
			// for a tool it offered: a runner cannot send a call of its
			// own tool (under its own policy) to one.
			return "tool call " + strconv.Quote(call.ToolCallID) + " (" + call.ToolName + ") has tool_source_reference " +
				strconv.Quote(call.ToolSourceReference) + ", but references starting with " + strconv.Quote(MCPSourcePrefix) +
				" are the worker's, for the MCP tools it offers"
		}
	}
	return ""
}

// runModel starts the RunModel Step with the committed turn state.
func (s *State) runModel() RunModel {
	in := s.turnInput()
	in.Store = s.storeWork()
	return RunModel{Input: in, Limits: s.recoveryBound(s.Options.RunModel)}
}

// turnInput builds the runner's view of the active turn: the messages
// themselves without the store, where the store holds them with it.
func (s *State) turnInput() TurnInput {
	in := TurnInput{
		Agent:       s.Options.Agent,
		SessionID:   s.SessionID,
		TurnID:      s.ActiveTurnID,
		RunState:    s.RunState,
		RunStateRef: s.RunStateRef,
		ToolCalls:   s.ToolCalls,
		Refs:        s.Refs,
		Policies:    s.Options.Policies,
		Settings:    s.TurnSettings,
		Spend:       SpendInput{APIToken: s.APIToken, Session: s.sessionSpend(), Turn: s.TurnSpend},
		HostTools:   s.hostTools(),
		Plan:        s.Plan,
		Mode:        s.Mode,
	}
	if s.SubAgent != nil {
		in.Streams = s.streams()
		if s.SubAgent.Budget != nil {
			b := *s.SubAgent.Budget
			in.Spend.Parent = &b
		}
	}
	if s.Options.Version >= RunnerPoliciesVersion {
		in.RunnerPolicies = RunnerPoliciesTrusted
		if s.Options.RunnerPoliciesUntrusted {
			in.RunnerPolicies = RunnerPoliciesUntrusted
		}
	}
	if s.Options.Messages.Store {
		in.Transcript = &Transcript{From: s.transcriptFrom(), WindowFirst: s.windowFirst(), Last: s.NextSequence - 1}
		in.Compaction, in.Summary = s.Options.Compaction, s.Summary
	} else {
		in.Messages = s.Messages
	}
	return in
}

// toolLimits are the tool Step's own limits, before the recovery budget:
// one attempt for the effects that do not retry.
func (s *State) toolLimits(rec wire.ToolCall) Limits {
	limits := s.Options.Tool
	if !contract.Effect(rec.Effect).Retryable() {
		limits.MaximumAttempts = 1
	}
	return limits
}

// runTool starts the tool Step of an approved record: CallTool for the
// effects that retry, CallSingleAttemptTool (one attempt) otherwise.
func (s *State) runTool(rec wire.ToolCall) RunTool {
	limits, step := s.toolLimits(rec), wire.StepCallTool
	if !contract.Effect(rec.Effect).Retryable() {
		step = wire.StepCallSingleAttemptTool
	}
	return RunTool{
		Step:       step,
		ActivityID: toolStep(s.ActiveTurnID, rec.ToolCallID),
		Limits:     s.recoveryBound(limits),
		Input: ToolInput{
			Agent: s.Options.Agent, SessionID: s.SessionID, TurnID: s.ActiveTurnID,
			ToolCall:       rec,
			IdempotencyKey: s.SessionID + "/" + s.ActiveTurnID + "/" + rec.ToolCallID,
			ArgumentsRef:   s.refs(rec.ToolCallID).ArgumentsRef,
			StoreOutput:    s.Options.Messages.Store,
			HostSource:     s.hostSource(rec),
			Streams:        s.streams(),
		},
	}
}

// streams are the sessions above a sub-agent (nil for others).
func (s *State) streams() []string {
	if s.SubAgent == nil {
		return nil
	}
	return s.SubAgent.Lineage
}

// hostSource is the MCP source a tool Step routes rec to, or "" when the
// runner runs it.
func (s *State) hostSource(rec wire.ToolCall) string {
	if s.Options.Version >= HostToolsVersion && strings.HasPrefix(rec.ToolSourceReference, MCPSourcePrefix) {
		return rec.ToolSourceReference
	}
	return ""
}

// recordUsage adds one RunModel outcome's usage as the runner reported it:
// model_calls 0 stays 0, and total_tokens is what the runner reported (the
// runner contract computes it only when the runner left it out).
func (s *State) recordUsage(u contract.Usage, attempt int) []Command {
	s.Usage = s.Usage.Add(u)
	return []Command{Emit{Event: newEvent(wire.EventUsageRecorded, s.ActiveTurnID, attempt, wire.UsageRecordedPayload{Recorded: wire.Usage(u), Session: wire.Usage(s.Usage)})}}
}

// failTurn starts RecordTurnFailure for the active turn.
func (s *State) failTurn(reason string) []Command {
	s.Phase = phaseRecordFailure
	s.LastTurnError = reason
	in := TurnFailureInput{Turn: s.turnInput(), Note: BuildTurnFailureNote(s.ToolCalls)}
	if s.Options.Messages.Store {
		in.Turn.Store = s.storeWork()
		// A user message that could not be built is stored as plain text
		// by the Step, first, so nothing the user sent is lost.
		in.UserText, in.UserTextRef = s.TurnText, s.TurnTextRef
	}
	return []Command{RecordTurnFailure{Input: in}}
}

// turnFailureRecorded stores the unfinished-turn messages and the note
// (stored is what the Step stored, with the store), and ends the failed
// turn.
func (s *State) turnFailureRecorded(msgs []contract.FrameworkMessage, stored *StoreResult, attempt int) []Command {
	if reason := s.checkStored(stored); reason != "" {
		// Our own Step broke the store contract: keep what the Step said
		// out of the session and end the turn with the reason.
		s.LastTurnError += "; and " + reason
		stored = nil
	}
	s.TurnText, s.TurnTextRef = "", ""
	s.store(msgs, stored)
	turn, reason := s.ActiveTurnID, s.LastTurnError
	cmds := s.endTurn()
	s.LastTurnError = reason
	cmds = append(cmds, Emit{Event: newEvent(wire.EventTurnFailed, turn, attempt, wire.TurnFailedPayload{Error: reason})})
	return append(cmds, s.next()...)
}

// endTurn clears the turn. A deadline timer of an interrupt still pending
// (none is, today, when a turn ends) is cancelled, so no timer outlives its
// turn.
func (s *State) endTurn() []Command {
	var cmds []Command
	for _, in := range s.Interrupts {
		if in.DeadlineUnixMs > 0 {
			cmds = append(cmds, CancelTimer{InterruptID: in.InterruptID})
		}
	}
	s.ActiveTurnID = ""
	s.Mode = ""
	s.Phase = phaseNone
	s.Status = wire.StatusWaitingForUserMessage
	s.RunState, s.RunStateRef = "", ""
	s.ToolCalls = nil
	s.Refs = nil
	s.Interrupts = nil
	s.Children = nil
	s.TurnSettings = ""
	s.Control = controlNone
	s.TurnRetries, s.RecoveryError = 0, ""
	return cmds
}

// resolveInterrupt approves or rejects a pending approval. It is not
// accepted when the interrupt is not pending (a blank or unknown ID) or its
// deadline has passed, or for a rejection message over
// MaxUserMessageBytes, as the spec's RPC returns False. A request that
// does not decode is refused by the engine before it reaches the session.
func (s *State) resolveInterrupt(req ResolveInterrupt) Result {
	if len(req.RejectionMessage) > MaxUserMessageBytes {
		return Result{}
	}
	i := s.findInterrupt(req.InterruptID)
	if i < 0 {
		return Result{}
	}
	in := s.Interrupts[i]
	if in.DeadlineUnixMs > 0 && req.NowMs >= in.DeadlineUnixMs {
		return Result{}
	}
	c := s.findCall(in.ToolCallID)
	if in.Kind == InterruptQuestion {
		// A question is answered with answer_question; resolve_interrupt
		// only declines it.
		if req.Approved || c < 0 || s.ToolCalls[c].Status != wire.ToolCallAwaitingAnswer {
			return Result{}
		}
		s.noteResolver(c, req.Via, req.By)
		return applied(s.endQuestion(i, c, QuestionDeclined, ""))
	}
	if c < 0 || s.ToolCalls[c].Status != wire.ToolCallAwaitingApproval {
		return Result{}
	}
	s.removeInterrupt(i)
	s.noteResolver(c, req.Via, req.By)
	rejection := ""
	if !req.Approved {
		rejection = req.RejectionMessage
	}
	var cmds []Command
	if in.DeadlineUnixMs > 0 {
		cmds = append(cmds, CancelTimer{InterruptID: in.InterruptID})
	}
	cmds = append(cmds, Emit{Event: newEvent(wire.EventInterruptResolved, s.ActiveTurnID, waitingStepAttempt, wire.InterruptResolvedPayload{
		InterruptID: in.InterruptID, Approved: req.Approved, RejectionMessage: rejection, Kind: string(in.Kind),
		ResolvedVia: s.ToolCalls[c].ResolvedVia, ResolvedBy: s.ToolCalls[c].ResolvedBy,
	}).forStep(toolStep(s.ActiveTurnID, in.ToolCallID))})
	if req.Approved {
		s.ToolCalls[c].Status = wire.ToolCallApproved
		return applied(append(cmds, s.runTool(s.ToolCalls[c])))
	}
	if rejection == "" {
		rejection = contract.DefaultRejectionToolResult
	}
	s.ToolCalls[c].RejectionMessage = rejection
	return applied(append(cmds, s.finishCall(c, wire.ToolCallRejected, waitingStepAttempt)...))
}

// noteResolver records on call c how and by whom its interrupt was
// answered, each cut to wire.MaxResolvedByBytes.
func (s *State) noteResolver(c int, via, by string) {
	s.ToolCalls[c].ResolvedVia, s.ToolCalls[c].ResolvedBy = cutUTF8(via, wire.MaxResolvedByBytes), cutUTF8(by, wire.MaxResolvedByBytes)
}

// deadlineTimerFired applies an approval deadline. A timer that fired
// early (or at the warning, see expiring) is armed again.
func (s *State) deadlineTimerFired(t DeadlineTimerFired) Result {
	i := s.findInterrupt(t.InterruptID)
	if i < 0 {
		return Result{}
	}
	in := s.Interrupts[i]
	if in.DeadlineUnixMs == 0 {
		return Result{}
	}
	if t.NowMs < in.DeadlineUnixMs {
		return applied(s.expiring(i, t.NowMs))
	}
	c := s.findCall(in.ToolCallID)
	if in.Kind == InterruptQuestion {
		if c < 0 || s.ToolCalls[c].Status != wire.ToolCallAwaitingAnswer {
			s.removeInterrupt(i)
			return applied(nil)
		}
		// The timer fired: nothing to cancel.
		in.DeadlineUnixMs = 0
		s.Interrupts[i] = in
		return applied(s.endQuestion(i, c, QuestionDeadlinePassed, QuestionDeadlinePassed))
	}
	s.removeInterrupt(i)
	cmds := []Command{Emit{Event: newEvent(wire.EventInterruptResolved, s.ActiveTurnID, waitingStepAttempt, wire.InterruptResolvedPayload{
		InterruptID: in.InterruptID, Approved: false, RejectionMessage: ApprovalDeadlinePassed, Kind: string(in.Kind),
	}).forStep(toolStep(s.ActiveTurnID, in.ToolCallID))}}
	if c < 0 || s.ToolCalls[c].Status != wire.ToolCallAwaitingApproval {
		return applied(cmds)
	}
	s.ToolCalls[c].RejectionMessage = ApprovalDeadlinePassed
	return applied(append(cmds, s.finishCall(c, wire.ToolCallRejected, waitingStepAttempt)...))
}

// ToolOutcome is what a tool Step returns when it ran to an outcome.
type ToolOutcome struct {
	// Output is set when the tool succeeded.
	Output *string `json:"output,omitempty"`
	// Error is a failure the model sees (ToolExecutionError).
	Error *string `json:"error,omitempty"`
	// OutputRef is the store reference of an output longer than
	// PreviewBytes; Output then holds its preview.
	OutputRef string `json:"output_ref,omitempty"`
	// Attempt is the attempt of the tool Step that ran the call.
	Attempt int `json:"attempt,omitempty"`
	// InputRequested is set when the tool asked the user a question
	// before it took any effect (ToolInputRequested), or a task asked one.
	InputRequested *InputRequest `json:"input_requested,omitempty"`
	// TaskStarted is set when the tool handed remote work to the session
	// (ToolTaskStarted); TaskPending when a poll asks to poll again.
	TaskStarted *TaskStart   `json:"task_started,omitempty"`
	TaskPending *TaskPending `json:"task_pending,omitempty"`
}

// TaskStart is a tool's ToolTaskStarted.
type TaskStart struct {
	TaskID              string `json:"task_id"`
	PollIntervalSeconds int    `json:"poll_interval_seconds"`
}

// TaskPending is a poll's ToolTaskPending.
type TaskPending struct {
	PollIntervalSeconds int    `json:"poll_interval_seconds"`
	Continuation        string `json:"continuation,omitempty"`
}

// InputRequest is a tool's question (ToolInputRequested).
type InputRequest struct {
	Question       string   `json:"question"`
	Choices        []string `json:"choices,omitempty"`
	AllowsFreeText bool     `json:"allows_free_text,omitempty"`
	Continuation   string   `json:"continuation,omitempty"`
}

// toolStepDone records the outcome of the tool Step of record c.
func (s *State) toolStepDone(c int, out ToolOutcome, nowMs int64) []Command {
	if out.InputRequested != nil && s.Control != controlNone && s.ToolCalls[c].TaskID == "" {
		// The tool asked before it took any effect: a steered or cancelled
		// turn asks no more.
		return s.rejectStopped(c, s.Control)
	}
	switch {
	case out.InputRequested != nil && out.Output == nil && out.Error == nil:
		return s.toolAsked(c, *out.InputRequested, out.Attempt, nowMs)
	case out.TaskStarted != nil && out.Output == nil && out.Error == nil:
		return s.taskStarted(c, *out.TaskStarted, out.Attempt)
	case out.Output != nil && out.Error == nil:
		s.ToolCalls[c].Output = *out.Output
		if out.OutputRef != "" {
			s.setOutputRef(s.ToolCalls[c].ToolCallID, out.OutputRef)
		}
		return s.finishCall(c, wire.ToolCallSucceeded, out.Attempt)
	case out.Error != nil && out.Output == nil:
		s.ToolCalls[c].Error = *out.Error
		return s.finishCall(c, wire.ToolCallFailed, out.Attempt)
	}
	// A tool Step never returns a malformed outcome (it fails its attempt
	// instead); treat one like a failure of the Step.
	return s.toolStepFailed(c, "the tool step returned a malformed outcome", false, out.Attempt)
}

// toolStepFailed applies RecordToolFailure (CallTool) or
// RecordToolOutcomeUnknown (CallSingleAttemptTool) once the Step's attempts
// are spent. notStarted reports that no attempt reached the tool; attempt
// is the Step's last attempt.
func (s *State) toolStepFailed(c int, detail string, notStarted bool, attempt int) []Command {
	if notStarted && len(s.ToolCalls[c].InputAnswers) > 0 && s.Options.Version >= AskedRerunVersion {
		// The tool ran before, up to its question: only its rerun never
		// started, so "safe to call again" would be false.
		notStarted = false
	}
	switch {
	case notStarted:
		s.ToolCalls[c].Error = ToolCallNotRunErrorPrefix + ": " + detail
		return s.finishCall(c, wire.ToolCallFailed, attempt)
	case s.ToolCalls[c].Effect == wire.EffectRead:
		s.ToolCalls[c].Error = detail
		return s.finishCall(c, wire.ToolCallFailed, attempt)
	default:
		s.ToolCalls[c].Error = detail
		return s.finishCall(c, wire.ToolCallOutcomeUnknown, attempt)
	}
}

// runningCall finds the approved (running) record a tool Step reports on,
// or -1 for a stale result.
func (s *State) runningCall(turnID, toolCallID string) int {
	if turnID != s.ActiveTurnID {
		return -1
	}
	c := s.findCall(toolCallID)
	if c < 0 || s.ToolCalls[c].Status != wire.ToolCallApproved {
		return -1
	}
	return c
}

// finishCall makes a record final, writes tool_call_finished, and resumes
// the turn once every record of the turn is final (ResumeTurn).
// attempt is the attempt of the Step that made it final.
func (s *State) finishCall(c int, status wire.ToolCallStatus, attempt int) []Command {
	rec := &s.ToolCalls[c]
	rec.Status = status
	cmds := []Command{Emit{Event: newEvent(wire.EventToolCallFinished, s.ActiveTurnID, attempt, wire.ToolCallFinishedPayload{
		ToolCallID: rec.ToolCallID, ToolName: rec.ToolName, Status: string(status),
	}).forStep(toolStep(s.ActiveTurnID, rec.ToolCallID))}}
	for _, other := range s.ToolCalls {
		if !other.Status.Final() {
			return cmds
		}
	}
	return append(cmds, s.toModel()...)
}

func (s *State) findCall(id string) int {
	for i, c := range s.ToolCalls {
		if c.ToolCallID == id {
			return i
		}
	}
	return -1
}

func (s *State) findInterrupt(id string) int {
	for i, in := range s.Interrupts {
		if in.InterruptID == id {
			return i
		}
	}
	return -1
}

func (s *State) removeInterrupt(i int) {
	s.Interrupts = append(s.Interrupts[:i:i], s.Interrupts[i+1:]...)
}

// Idle reports a turn boundary: no turn is active and nothing is running,
// so the session may continue as new once its queue is empty too.
func (s *State) Idle() bool { return s.Started && s.Phase == phaseNone }

// QueuedCount is the number of user messages waiting for a turn.
func (s *State) QueuedCount() int { return len(s.Queued) }

// ActiveStepTypes lists the Steps the session waits in, sorted, for the
// ActiveStepTypes search attribute: the spec's Step names only.
func (s *State) ActiveStepTypes() []string { return s.StepTypes(false) }

// StepTypes is ActiveStepTypes; legacy adds the names runs of older
// workers upserted (BuildUserMessage, RecordTurnFailure), so that their
// histories replay with the same upserts.
func (s *State) StepTypes(legacy bool) []string {
	var steps []string
	add := func(name string) {
		for _, have := range steps {
			if have == name {
				return
			}
		}
		steps = append(steps, name)
	}
	switch s.Phase {
	case phaseNone:
		if s.Started && !s.Finished() {
			add(wire.StepAwaitUserMessage)
		}
	case phaseCompacting:
		add(wire.StepCompactContext)
	case phaseApplyingControl:
		add(wire.StepApplyTurnControl)
	case phaseBuildingUser, phaseRunningModel, phaseRecordFailure:
		switch {
		case legacy && s.Phase == phaseBuildingUser:
			add(wire.StepBuildUserMessage)
		case legacy && s.Phase == phaseRecordFailure:
			add(wire.StepRecordTurnFailure)
		default:
			// The user message is built for RunModel, and a failed turn is
			// recorded on the way out of the Step that failed it.
			add(wire.StepRunModel)
		}
	case phaseRunningTools:
		add(wire.StepResumeTurn)
		for _, c := range s.ToolCalls {
			switch {
			case c.Status == wire.ToolCallAwaitingApproval:
				add(wire.StepAwaitToolApproval)
			case c.Status == wire.ToolCallAwaitingAnswer:
				add(wire.StepAwaitQuestionAnswer)
			case c.Status == wire.ToolCallWaitingForTimer:
				add(wire.StepAwaitTimer)
			case c.Status == wire.ToolCallWaitingForTask && c.CancellationReason != "":
				add(wire.StepCancelToolTask)
			case c.Status == wire.ToolCallWaitingForTask:
				add(wire.StepPollToolTask)
			case c.Status == wire.ToolCallApproved && contract.Effect(c.Effect).Retryable():
				add(wire.StepCallTool)
			case c.Status == wire.ToolCallApproved:
				add(wire.StepCallSingleAttemptTool)
			}
		}
	}
	// A sub-agent's person waits through this session too, so that lists
	// of sessions waiting for people show it.
	for _, in := range s.childInterrupts() {
		if in.Kind == wire.InterruptKindQuestion {
			add(wire.StepAwaitQuestionAnswer)
		} else {
			add(wire.StepAwaitToolApproval)
		}
	}
	sortStrings(steps)
	return steps
}

func sortStrings(v []string) {
	for i := 1; i < len(v); i++ {
		for j := i; j > 0 && v[j] < v[j-1]; j-- {
			v[j], v[j-1] = v[j-1], v[j]
		}
	}
}
