package contract

import (
	"context"
	"encoding/json"
	"errors"
	"time"
)

// ProtocolVersion is the runner wire protocol this package speaks. It changes
// only when the wire format breaks.
const ProtocolVersion = 1

// Runner is the contract every framework runner implements: the agent loop
// that turns a session's transcript into the next model call. The session
// calls it from durable Steps, so every method may run again after a crash or
// a retry. Keep a Runner stateless between calls and derive everything from
// the request. One plugin process serves every agent that names it; each
// request names its agent.
//
// Lifecycle: Info is called once after the plugin process starts; Configure
// once per agent before any other call for that agent (an error stops the
// worker start with its message); then the session calls the rest from its
// Steps, concurrently.
type Runner interface {
	// Info reports the plugin's name and version.
	Info(ctx context.Context, req *InfoRequest) (*InfoResponse, error)
	// Configure receives one agent's runner_config (JSON) from the worker's
	// config file. Return an error that names the problem for bad config,
	// and list the tools the runner offers the agent in the response.
	Configure(ctx context.Context, req *ConfigureRequest) (*ConfigureResponse, error)
	// BuildUserMessage turns user text into the framework's user item. The
	// session stores it as the turn's first message. It must return RoleUser.
	BuildUserMessage(ctx context.Context, req *BuildUserMessageRequest) (*BuildUserMessageResponse, error)
	// RunModelStep makes at most one model call and returns exactly one
	// outcome: TurnCompleted or ToolCallsRequested. It never runs a tool that
	// it can defer. Any error fails the attempt; the session retries it.
	RunModelStep(ctx context.Context, req *RunModelStepRequest) (*RunModelStepResponse, error)
	// ExecuteDeferredToolCall runs one approved tool call once. Return a
	// *ToolExecutionError (or a response with Error set) for a failure the
	// model should see; any other error is a Step failure that the tool's
	// effect class decides how to retry. Calls of one model response run in
	// parallel, so this method may run concurrently with itself.
	ExecuteDeferredToolCall(ctx context.Context, req *ExecuteToolRequest) (*ExecuteToolResponse, error)
}

// UnfinishedTurnMessageBuilder is implemented by runners that store items
// as they appear (ToolCallsRequested.NewMessages). When a turn fails, the
// session stores the messages it returns before the turn-failure note.
type UnfinishedTurnMessageBuilder interface {
	BuildUnfinishedTurnMessages(ctx context.Context, req *BuildUnfinishedTurnMessagesRequest) (*BuildUnfinishedTurnMessagesResponse, error)
}

// BuildUnfinishedTurnMessagesRequest carries the failed turn.
type BuildUnfinishedTurnMessagesRequest struct {
	// Turn is the failed turn's state; Turn.Agent names the agent.
	Turn TurnContext
}

// BuildUnfinishedTurnMessagesResponse holds the messages to store, in
// order, before the turn-failure note.
type BuildUnfinishedTurnMessagesResponse struct {
	Messages []FrameworkMessage
}

// ToolTaskPoller is implemented by runners whose tools start remote work
// (ToolTaskStarted) that the session polls.
type ToolTaskPoller interface {
	PollToolTask(ctx context.Context, req *PollToolTaskRequest) (*ExecuteToolResponse, error)
}

// ToolTaskCanceller stops a tool task's remote work, best effort. It must be
// idempotent by task ID.
type ToolTaskCanceller interface {
	CancelToolTask(ctx context.Context, req *CancelToolTaskRequest) (*CancelToolTaskResponse, error)
}

// CancelToolTaskResponse is the answer of CancelToolTask. It has no fields
// yet.
type CancelToolTaskResponse struct{}

// InputTokenEstimator estimates the size of the next model input.
type InputTokenEstimator interface {
	EstimateInputTokens(ctx context.Context, req *EstimateInputTokensRequest) (*EstimateInputTokensResponse, error)
}

// EstimateInputTokensRequest carries the turn whose next model input is
// estimated.
type EstimateInputTokensRequest struct {
	// Turn is the committed session state; Turn.Agent names the agent.
	Turn TurnContext
}

// EstimateInputTokensResponse holds the estimate.
type EstimateInputTokensResponse struct {
	// InputTokens is the estimated size of the next model input.
	InputTokens int64
}

// Compactor summarizes old context so long sessions fit the model.
type Compactor interface {
	SelectCompactionCutoff(ctx context.Context, req *CompactionCutoffRequest) (*CompactionCutoffResponse, error)
	SummarizeContext(ctx context.Context, req *SummarizeContextRequest) (*SummarizeContextResponse, error)
}

// InfoRequest is the input of Info. It has no fields yet.
type InfoRequest struct{}

// InfoResponse describes a plugin.
type InfoResponse struct {
	Name    string
	Version string
}

// Capabilities lists the optional interfaces a runner implements. Serve
// computes it by type assertion; the host reads it from Info.
type Capabilities struct {
	UnfinishedTurnMessages bool `json:"unfinished_turn_messages"`
	ToolTaskPolling        bool `json:"tool_task_polling"`
	ToolTaskCancelling     bool `json:"tool_task_cancelling"`
	InputTokenEstimation   bool `json:"input_token_estimation"`
	Compaction             bool `json:"compaction"`
	// TranscriptCache: the plugin keeps the transcripts it was sent, so
	// the host may send only a session's new messages
	// (TurnContext.CachedThrough). Serve sets it for every runner.
	TranscriptCache bool `json:"transcript_cache"`
}

// CapabilitiesOf reports which optional interfaces r implements.
func CapabilitiesOf(r Runner) Capabilities {
	_, unfinished := r.(UnfinishedTurnMessageBuilder)
	_, poll := r.(ToolTaskPoller)
	_, cancel := r.(ToolTaskCanceller)
	_, estimate := r.(InputTokenEstimator)
	_, compact := r.(Compactor)
	return Capabilities{
		UnfinishedTurnMessages: unfinished,
		ToolTaskPolling:        poll,
		ToolTaskCancelling:     cancel,
		InputTokenEstimation:   estimate,
		Compaction:             compact,
	}
}

// ConfigureRequest carries one agent's runner configuration.
type ConfigureRequest struct {
	// Agent is the agent's name from the worker config.
	Agent string
	// RunnerConfig is the agent's runner_config as JSON (an object, or null).
	RunnerConfig []byte
	// ProtocolVersion is the wire protocol version the host negotiated.
	ProtocolVersion int
}

// ConfigureResponse says what the runner offers the configured agent.
type ConfigureResponse struct {
	// Tools lists the names of the tools the runner offers this agent's
	// model: its own tools, not the host's tools that arrive in the turn
	// context. The worker warns at start-up (and `config validate` reports)
	// when the agent's tool_policies name a tool that is not in the list.
	// A call of a name that neither this list nor the turn's HostTools
	// hold fails as "unknown tool <name>", without approval, and never
	// reaches the runner. Leave it empty when the runner cannot tell (its
	// tools change at run time): empty means unknown, and nothing is
	// checked. Names must be non-empty and unique.
	Tools []string
	// SettingChoices are the session settings the agent reads whose values
	// are a fixed list, such as the models a session may choose; user
	// interfaces offer them (the web page's model picker). Keys must be
	// non-empty and unique, values non-empty.
	SettingChoices []SettingChoice
	// ToolPolicies are the runner's own policies for its tools (a tool's
	// declared effect, the agent definition's policies): what it claims in
	// DeferredToolCall.Policy where the worker config names no policy.
	// `config validate` shows them as the effective policy's source.
	ToolPolicies map[string]ToolPolicy
	// DefaultToolEffect is the runner's effect for its tools that have no
	// policy; empty leaves it to the agent's default_tool_effect.
	DefaultToolEffect Effect
}

// SettingChoice is one session setting with a fixed list of values.
type SettingChoice struct {
	// Key is the setting's top-level key in the session settings object.
	Key string `json:"key"`
	// Values are the values a session may set, in the runner's order.
	Values []string `json:"values"`
	// Default describes what applies without the setting, for display.
	Default string `json:"default,omitempty"`
}

// BuildUserMessageRequest asks for the framework's user item for Text.
type BuildUserMessageRequest struct {
	Agent string
	Text  string
}

// BuildUserMessageResponse holds the user message to store.
type BuildUserMessageResponse struct {
	Message FrameworkMessage
}

// TurnContext is the committed session state a runner sees in RunModelStep.
type TurnContext struct {
	Agent     string
	SessionID string
	// TurnID is "turn-<n>".
	TurnID string
	// Attempt is the one-based attempt of the Step that makes this call.
	Attempt int
	// Messages holds every stored message in sequence order. The last user
	// message belongs to this turn.
	Messages []Message
	// RunState is "" for the turn's first model call; otherwise the
	// FrameworkRunState of this turn's last ToolCallsRequested.
	RunState string
	// ToolCalls holds every tool call record of this turn in deferral order.
	// When RunModelStep runs, every record is final.
	ToolCalls []ToolCall
	// Policies resolves tool policies; see ResolvePolicy.
	Policies PolicySet
	// HostTools are tools the session runs (the MCP tools of the agent's
	// servers, named "<server>__<tool>", then the enabled built-ins). Offer
	// them after the runner's own tools and defer their calls like the
	// runner's own, with the policy Policies.Resolve(name,
	// definition.Effect) and no tool source reference: the worker routes
	// each call itself, and refuses a reference starting with "mcp:" that
	// it did not set. A runner tool (ConfigureResponse.Tools) with a host
	// tool's name fails the turn before the model call.
	HostTools []ToolDefinition
	// SessionSettings are the settings the turn started with: JSON of one
	// object, such as {"model":"fast"}; empty (or {}) when there are none.
	// The application sets them; resolve what they name (a model, a
	// credential) from what the runner was configured with, never use a
	// key or URL from them.
	SessionSettings json.RawMessage
	// ContextSummary, when set, replaces the messages through its
	// LastSequence: Messages start after it. Put it first in the model's
	// input.
	ContextSummary *ContextSummary
	// Plan is the session's plan (write_todos), nil before the first one.
	// Show it to the model in every model call (Stepwise adds a note).
	Plan *Plan
	// InteractionMode is the turn's: "chat", "planning" (offer only
	// write_todos; the session rejects any other call) or "executing" (an
	// approved plan runs).
	InteractionMode string

	// CachedFrom and CachedThrough are for hosts. When CachedThrough is
	// above zero, Messages holds only the messages after it, and the
	// plugin, which has capability TranscriptCache, was sent the messages
	// from CachedFrom through CachedThrough in an earlier call of the
	// session. Serve puts the whole transcript back together before it
	// calls the Runner, so a Runner never sees them set. A plugin that no
	// longer has those messages answers ErrTranscriptNotCached.
	CachedFrom, CachedThrough int64
}

// ContextSummary is a summary that replaces a session's oldest messages
// (compaction).
type ContextSummary struct {
	// Generation counts the summaries of the session: 1 for the first.
	Generation int
	// FirstSequence and LastSequence are the messages it replaces.
	FirstSequence, LastSequence int64
	Text                        string
	// CreatedAt is when it was recorded, RFC 3339 in UTC.
	CreatedAt string
}

// IsResuming reports whether this model call continues a turn after tool calls.
func (t *TurnContext) IsResuming() bool { return t.RunState != "" }

// ToolCall returns the record of one tool call of this turn.
func (t *TurnContext) ToolCall(id string) (ToolCall, bool) {
	for _, c := range t.ToolCalls {
		if c.ToolCallID == id {
			return c, true
		}
	}
	return ToolCall{}, false
}

// ResolvePolicy returns the policy for a tool: the explicit policy, else
// frameworkEffect (pass "" when the framework has no metadata), else the
// default effect.
func (t *TurnContext) ResolvePolicy(toolName string, frameworkEffect Effect) ToolPolicy {
	return t.Policies.Resolve(toolName, frameworkEffect)
}

// EventWriter writes live events for the Step that owns it. Writes never
// block and are best effort: a retry can repeat them and a consumer can miss
// them, so never put a durable result only in an event. Writes after the
// call returned are dropped. Safe for concurrent use.
type EventWriter interface {
	// WriteTextDelta writes a chunk of visible model text. Batch very small
	// chunks: every call is one event.
	WriteTextDelta(text string)
	// WriteReasoningDelta writes a chunk of a provider-authored reasoning summary.
	WriteReasoningDelta(text string)
	// WriteEvent writes one event whose payload marshals to a JSON object.
	// eventType is a standard type a runner may write (see
	// RunnerEventTypes; prefer the typed writers: the methods above, and
	// WriteToolCallStarted and WriteToolCallFinished), or a custom type
	// with an adapter prefix ("myframework.handoff") so it never collides
	// with a standard type. A standard type the session writes itself, a
	// custom type without a prefix, and a standard event that lacks its
	// fields are refused with an error.
	WriteEvent(eventType string, payload any) error
	// Heartbeat records liveness. The host already heartbeats in the
	// background; call it from long loops that hold no other output.
	Heartbeat()
}

// ToolEventWriter is the EventWriter of a tool call, with heartbeat checkpoints.
type ToolEventWriter interface {
	EventWriter
	// SaveHeartbeatCheckpoint records text that a retried attempt reads as
	// ExecuteToolRequest.HeartbeatCheckpoint, so it can resume remote work
	// the earlier attempt started.
	SaveHeartbeatCheckpoint(text string)
}

// RunModelStepRequest asks for one model call.
type RunModelStepRequest struct {
	Turn TurnContext
	// Events writes text deltas and events for this attempt.
	Events EventWriter
}

// ErrTranscriptNotCached is a plugin's answer to a call whose turn names
// cached messages (TurnContext.CachedThrough) the plugin does not
// have (it restarted, or dropped them for room): send the whole transcript.
var ErrTranscriptNotCached = errors.New("the runner plugin does not have the cached transcript")

// RunModelStepResponse holds exactly one outcome.
type RunModelStepResponse struct {
	TurnCompleted      *TurnCompleted
	ToolCallsRequested *ToolCallsRequested
}

// TurnCompleted ends the turn with the final answer.
type TurnCompleted struct {
	// NewMessages holds the turn's items the session has not stored yet, in
	// order; the session appends them in one commit.
	NewMessages []FrameworkMessage
	// Usage covers this model call only.
	Usage    Usage
	Metadata *ModelCallMetadata
}

// ToolCallsRequested defers tool calls to the session's tool Steps.
type ToolCallsRequested struct {
	// RunState must be non-empty and continue the turn after the tools.
	RunState string
	// ToolCalls in model order. IDs must be non-empty, contain no '/', and be
	// unique within the turn.
	ToolCalls []DeferredToolCall
	// NewMessages are stored in the commit that records the tool calls. A
	// runner that sets them must implement UnfinishedTurnMessageBuilder.
	NewMessages []FrameworkMessage
	Usage       Usage
	Metadata    *ModelCallMetadata
}

// DeferredToolCall is one tool call the model asked for.
type DeferredToolCall struct {
	ToolCallID string
	ToolName   string
	// Arguments is the model's JSON argument text, passed on unchanged.
	Arguments string
	// Policy is the runner's claim for the call, from
	// TurnContext.ResolvePolicy with the runner's own policy for the tool
	// as frameworkEffect. The session records the config's tool_policies
	// entry when there is one; else this claim (unless the plugin is
	// declared trusts_tool_policies: false, when a claim may only make the
	// call stricter); else the agent's default_tool_effect.
	Policy ToolPolicy
	// ToolSourceReference is opaque text stored on the call's record, so the
	// tool Step can find the tool without listing it again.
	ToolSourceReference string
}

// ExecuteToolRequest asks a runner to run one approved tool call.
type ExecuteToolRequest struct {
	Agent     string
	SessionID string
	TurnID    string
	// ToolCall is the approved record.
	ToolCall ToolCall
	// IdempotencyKey is "<session_id>/<turn_id>/<tool_call_id>", the same on
	// every attempt. Pass it to the system the tool writes to.
	IdempotencyKey string
	// Attempt is one-based.
	Attempt int
	// HeartbeatCheckpoint is the text an earlier attempt saved, or "".
	HeartbeatCheckpoint string
	// InputAnswers are the user's answers to the questions this call asked.
	InputAnswers []string
	// SupportsToolTasks tells a tool whether returning TaskStarted works.
	SupportsToolTasks bool
	Events            ToolEventWriter
}

// ExecuteToolResponse holds exactly one outcome of a tool call or poll.
type ExecuteToolResponse struct {
	// Result is the tool's output: the call succeeded.
	Result *ToolResult
	// Error is a failure the model sees; the call is recorded failed and not retried.
	Error *ToolExecutionError
	// InputRequested asks the user a question before the tool takes any effect.
	InputRequested *ToolInputRequested
	// TaskStarted hands remote work to the session, which polls it.
	TaskStarted *ToolTaskStarted
	// TaskPending (polls only) asks to be polled again.
	TaskPending *ToolTaskPending
}

// ToolResult is a successful tool output.
type ToolResult struct {
	Output string
}

// ToolExecutionError is a tool failure the model should see. Return it as
// the error of ExecuteDeferredToolCall or in ExecuteToolResponse.Error.
type ToolExecutionError struct {
	Message string
}

func (e *ToolExecutionError) Error() string { return e.Message }

// ToolInputRequested asks the user a question for a tool call, before the
// tool takes any effect. The session raises a question interrupt
// "<tool_call_id>-input-<n>"; once the user answers, the call runs again
// with the answers in ExecuteToolRequest.InputAnswers and Continuation in
// ToolCall.InputContinuation. A decline or a passed deadline records the
// call rejected. A function tool may return it as its error.
type ToolInputRequested struct {
	Question string
	// Choices, when set, are the answers to pick from; AllowsFreeText
	// also takes other text.
	Choices        []string
	AllowsFreeText bool
	// Continuation is opaque text the call gets back on its next run.
	Continuation string
}

// Error makes a ToolInputRequested returnable as a tool function's error.
func (q *ToolInputRequested) Error() string { return "the tool asks: " + q.Question }

// ToolTaskStarted reports remote work the session polls: the call waits
// in waiting_for_task, and PollToolTask Steps poll it every
// PollIntervalSeconds (1 s to a day). Only a runner that implements
// ToolTaskPoller may return it (ExecuteToolRequest.SupportsToolTasks); a
// Stepwise tool returns it as its error.
type ToolTaskStarted struct {
	TaskID              string
	PollIntervalSeconds int
}

// Error makes a ToolTaskStarted returnable as a tool function's error.
func (t *ToolTaskStarted) Error() string { return "the tool started task " + t.TaskID }

// ToolTaskPending asks for another poll.
type ToolTaskPending struct {
	PollIntervalSeconds int
	Continuation        string
}

// PollToolTaskRequest polls one tool task.
type PollToolTaskRequest struct {
	Agent     string
	SessionID string
	TurnID    string
	ToolCall  ToolCall
	TaskID    string
	// Continuation is the continuation stored by the last pending poll or question.
	Continuation string
	// PendingAnswer is the user's resolution of the task's last question, on
	// the first poll after it only.
	PendingAnswer *QuestionAnswer
	Attempt       int
	Events        ToolEventWriter
}

// QuestionAnswer is how a user resolved a question.
type QuestionAnswer struct {
	// Resolution is "answered", "declined" or "deadline_passed".
	Resolution string `json:"resolution"`
	Answer     string `json:"answer,omitempty"`
}

// Resolutions of a tool task's question (QuestionAnswer.Resolution).
const (
	QuestionAnswered       = "answered"
	QuestionDeclined       = "declined"
	QuestionDeadlinePassed = "deadline_passed"
)

// CancelToolTaskRequest cancels one tool task's remote work.
type CancelToolTaskRequest struct {
	Agent     string
	SessionID string
	ToolCall  ToolCall
	TaskID    string
}

// CompactionCutoffRequest asks which stored messages a summary may replace.
type CompactionCutoffRequest struct {
	Turn TurnContext
	// RetainedTokenBudget is how many tokens of the newest messages the
	// summary must leave in the model's input (the policy's keep_ratio of
	// its context window).
	RetainedTokenBudget int64
}

// CompactionCutoffResponse names the newest message the summary replaces:
// a sequence after the turn's current summary, or 0 for none.
type CompactionCutoffResponse struct {
	ThroughSequence int64
}

// SummarizeContextRequest asks for a summary of Messages. Turn carries the
// agent, the session settings and the current summary (which Messages
// follow); its own Messages are empty.
type SummarizeContextRequest struct {
	Turn            TurnContext
	Messages        []Message
	PreviousSummary string
	// InputTokenBudget bounds the summary call's input (the policy's
	// context window): leave out the oldest messages past it, and say so.
	InputTokenBudget int64
	Events           EventWriter
}

// SummarizeContextResponse holds the summary text and the model call's usage.
type SummarizeContextResponse struct {
	Summary string
	Usage   Usage
	// Metadata names the summary call, as RunModelStep's outcomes do; the
	// worker prices the call by its model.
	Metadata *ModelCallMetadata
}

// PermanentError marks a failure that retrying cannot fix, such as a model
// provider answering 400 or 401: the session fails the Step at once instead
// of retrying it. Wrap the cause with Permanent.
type PermanentError struct {
	Err error
}

func (e *PermanentError) Error() string { return e.Err.Error() }

func (e *PermanentError) Unwrap() error { return e.Err }

// Permanent marks err as permanent; nil stays nil.
func Permanent(err error) error {
	if err == nil {
		return nil
	}
	return &PermanentError{Err: err}
}

// MaxRetryAfter bounds the delay a RetryAfterError asks for.
const MaxRetryAfter = time.Hour

// RetryAfterError is a failure that says when to try again, such as a
// model provider's 429 or 503 with Retry-After: the session's next attempt
// of the Step waits Delay (Temporal's NextRetryDelay) instead of its retry
// policy's backoff. The Step's timeouts and attempts still bound it. Wrap
// the cause with RetryAfter.
type RetryAfterError struct {
	Err   error
	Delay time.Duration
}

func (e *RetryAfterError) Error() string { return e.Err.Error() }

func (e *RetryAfterError) Unwrap() error { return e.Err }

// RetryAfter marks err as retryable after d (cut to MaxRetryAfter); nil
// stays nil, and a d of zero or less leaves err as it is.
func RetryAfter(err error, d time.Duration) error {
	if err == nil || d <= 0 {
		return err
	}
	return &RetryAfterError{Err: err, Delay: min(d, MaxRetryAfter)}
}
