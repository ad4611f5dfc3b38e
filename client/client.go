package client

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"time"
	"unicode/utf8"

	"github.com/google/uuid"
	commonpb "go.temporal.io/api/common/v1"
	enumspb "go.temporal.io/api/enums/v1"
	"go.temporal.io/api/serviceerror"
	taskqueuepb "go.temporal.io/api/taskqueue/v1"
	"go.temporal.io/api/workflowservice/v1"
	temporalclient "go.temporal.io/sdk/client"

	"github.com/dex-agents/dex-agent-worker/wire"
)

// AgentSessionClient starts agent sessions and calls their updates and
// queries with typed arguments. The session ID is the workflow ID.
//
//	sessions := client.New(temporalClient, "dex-agents")
//	id, err := sessions.StartSession(ctx, client.StartSessionOptions{FlowType: "OrdersAgent", InitialMessage: "refund order 7"})
//	snap, err := sessions.GetAgentSnapshot(ctx, id)
//	for _, in := range snap.PendingInterrupts {
//		sessions.ResolveInterrupt(ctx, id, client.ResolveInterruptRequest{InterruptID: in.InterruptID, Approved: true})
//	}
type AgentSessionClient struct {
	c         temporalclient.Client
	namespace string
	taskQueue string
	messages  MessageReader
}

// New wraps a connected Temporal client. taskQueue is the workers' task
// queue ("" means wire.DefaultTaskQueue). The caller keeps ownership of c. Dial
// c with DataConverter() so that large messages are not inflated by HTML
// escaping (any converter that writes "json/plain" works).
func New(c temporalclient.Client, namespace, taskQueue string) *AgentSessionClient {
	if taskQueue == "" {
		taskQueue = wire.DefaultTaskQueue
	}
	if namespace == "" {
		namespace = "default"
	}
	return &AgentSessionClient{c: c, namespace: namespace, taskQueue: taskQueue}
}

// StartSessionOptions name the session to start.
type StartSessionOptions struct {
	// FlowType is the agent's flow_type (its workflow type). Required.
	FlowType string
	// SessionID is the workflow ID; empty generates "session-<uuid>".
	SessionID string
	// InitialMessage starts the first turn when it is not blank: at most
	// wire.MaxInlineMessageBytes, or the beginning of a longer one stored first
	// and named by InitialMessageRef (see SendOptions.TextRef).
	InitialMessage string
	// InitialMessageRef is the message store reference of the whole
	// initial message.
	InitialMessageRef string
	// SessionSettings are the session's first settings: one JSON object of
	// at most wire.MaxSessionSettingsBytes (see wire.UpdateSessionSettings).
	SessionSettings json.RawMessage
	// APIToken names the API token on whose behalf the session starts: its
	// spend limits (the worker's config) apply. The HTTP API sets it.
	APIToken string
	// ActiveStepSearchMode chooses whether the session is searchable by
	// the Steps it waits in (wire.ActiveStepSearchTypes, the default here,
	// or wire.ActiveStepSearchDisabled); fixed when the session starts. A
	// session a raw Temporal client starts is searchable only when its
	// start input says active_step_types.
	ActiveStepSearchMode string
	// RequestID makes the start idempotent: a retried start with the same
	// request ID returns the same session instead of an error. Empty
	// generates one (no idempotency across calls).
	RequestID string

	// fork is set by ForkSession, and title to the parent's title.
	fork  *wire.ForkStart
	title string
}

// ErrSessionExists reports a session ID that is already in use by another start.
var ErrSessionExists = errors.New("session already exists")

// StartSession starts one session and returns its ID.
func (s *AgentSessionClient) StartSession(ctx context.Context, opts StartSessionOptions) (string, error) {
	id, _, err := s.start(ctx, opts, enumspb.WORKFLOW_ID_CONFLICT_POLICY_FAIL)
	return id, err
}

// EnsureSession starts the session opts names unless a session with its ID
// is running already: then it returns that session's ID with created false
// (whatever its flow type; check it when the ID may be shared). Use it for
// IDs derived from an idempotency key, where the ID itself proves the
// session is the one an earlier call started. A session of that ID that
// has ended is ErrSessionExists. The engine answers a start repeated with
// the same RequestID as created, so leave RequestID empty to learn whether
// this call created the session.
func (s *AgentSessionClient) EnsureSession(ctx context.Context, opts StartSessionOptions) (id string, created bool, err error) {
	if opts.SessionID == "" {
		return "", false, errors.New("ensure session: a session ID is required")
	}
	return s.start(ctx, opts, enumspb.WORKFLOW_ID_CONFLICT_POLICY_USE_EXISTING)
}

// start starts a workflow; started is the engine's answer (true also for a
// start repeated with the same request ID).
func (s *AgentSessionClient) start(ctx context.Context, opts StartSessionOptions, conflict enumspb.WorkflowIdConflictPolicy) (id string, started bool, err error) {
	if opts.FlowType == "" {
		return "", false, errors.New("start session: flow type is required")
	}
	if err := wire.CheckActiveStepSearchMode(opts.ActiveStepSearchMode); err != nil {
		return "", false, fmt.Errorf("start session: %w", err)
	}
	id = opts.SessionID
	if id == "" {
		id = "session-" + uuid.NewString()
	}
	reqID := opts.RequestID
	if reqID == "" {
		reqID = uuid.NewString()
	}
	if opts.InitialMessageRef == "" && len(opts.InitialMessage) > wire.MaxInlineMessageBytes {
		ref, text, err := s.storeText(ctx, id, opts.InitialMessage)
		if err != nil {
			return "", false, fmt.Errorf("start session %s: the initial message: %w", id, err)
		}
		opts.InitialMessage, opts.InitialMessageRef = text, ref
	}
	var settings json.RawMessage
	if len(opts.SessionSettings) > 0 {
		text, err := wire.CheckSessionSettings(opts.SessionSettings, 0)
		if err != nil {
			return "", false, fmt.Errorf("start session %s: %w", id, err)
		}
		if text != "" {
			settings = json.RawMessage(text)
		}
	}
	search := opts.ActiveStepSearchMode
	if search == "" {
		// As the reference's start_session: the client asks for the
		// search; a session a raw Temporal client starts without the
		// field is not searchable (sessions of version 5 on).
		search = wire.ActiveStepSearchTypes
	}
	input, err := DataConverter().ToPayloads(wire.StartInput{InitialMessage: opts.InitialMessage, InitialMessageRef: opts.InitialMessageRef, SessionSettings: settings, APIToken: opts.APIToken, ActiveStepSearchMode: search, Fork: opts.fork})
	if err != nil {
		return "", false, err
	}
	// The title rides in the memo, which lists show with no query and
	// which continue-as-new carries on.
	var memo *commonpb.Memo
	title := opts.title
	if title == "" {
		title = wire.TitleOf(opts.InitialMessage)
	}
	if title != "" {
		p, err := DataConverter().ToPayload(title)
		if err != nil {
			return "", false, err
		}
		memo = &commonpb.Memo{Fields: map[string]*commonpb.Payload{wire.MemoTitle: p}}
	}
	resp, err := s.c.WorkflowService().StartWorkflowExecution(ctx, &workflowservice.StartWorkflowExecutionRequest{
		Namespace:                s.namespace,
		WorkflowId:               id,
		Memo:                     memo,
		WorkflowType:             &commonpb.WorkflowType{Name: opts.FlowType},
		TaskQueue:                &taskqueuepb.TaskQueue{Name: s.taskQueue, Kind: enumspb.TASK_QUEUE_KIND_NORMAL},
		Input:                    input,
		Identity:                 "dex-agent-worker client",
		RequestId:                reqID,
		WorkflowIdReusePolicy:    enumspb.WORKFLOW_ID_REUSE_POLICY_REJECT_DUPLICATE,
		WorkflowIdConflictPolicy: conflict,
	})
	var exists *serviceerror.WorkflowExecutionAlreadyStarted
	if errors.As(err, &exists) {
		return "", false, fmt.Errorf("%w: %s", ErrSessionExists, id)
	}
	if err != nil {
		return "", false, fmt.Errorf("start session %s: %w", id, err)
	}
	return id, resp.GetStarted(), nil
}

// SendUserMessage queues one user message. It returns false for blank text.
func (s *AgentSessionClient) SendUserMessage(ctx context.Context, sessionID, text string) (bool, error) {
	return s.SendUserMessageWithOptions(ctx, sessionID, text, SendOptions{})
}

// SendOptions tune SendUserMessageWithOptions.
type SendOptions struct {
	// MessageID names the message so that sending it again is harmless: it
	// is the ID of the send_user_message update, and the engine applies one
	// update per ID within a session's run, answering a repeat with the
	// first send's result. Use it to retry a send whose answer was lost (a
	// timeout, a dropped connection). Empty: every call is a new message.
	// See CheckMessageID for the allowed form.
	MessageID string
	// TextRef sends a text over wire.MaxInlineMessageBytes by reference: the
	// message store reference of the whole text, which the caller stored
	// first (the HTTP API does); text is then its beginning, for display.
	TextRef string
	// PlanMode starts a planning turn (see wire.SendUserMessageRequest).
	PlanMode bool
	// Mode is the send mode (wire.SendModeQueue, the default, wire.SendModeSteer,
	// wire.SendModeInterrupt, wire.SendModeRejectIfBusy).
	Mode string
}

// MaxMessageIDLength bounds SendOptions.MessageID.
const MaxMessageIDLength = 128

// CheckMessageID reports whether id can name a message: 1 to
// MaxMessageIDLength letters, digits, '-', '_', '.' or ':' (a UUID or a
// ULID fits).
func CheckMessageID(id string) error {
	if id == "" || len(id) > MaxMessageIDLength {
		return fmt.Errorf("message ID must be 1 to %d characters", MaxMessageIDLength)
	}
	for _, c := range id {
		if !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '-' || c == '_' || c == '.' || c == ':') {
			return fmt.Errorf("message ID %q has %q: use letters, digits, '-', '_', '.' and ':'", id, c)
		}
	}
	return nil
}

// SendUserMessageWithOptions is SendUserMessage with options, such as a
// message ID that makes a retried send apply once.
func (s *AgentSessionClient) SendUserMessageWithOptions(ctx context.Context, sessionID, text string, opts SendOptions) (bool, error) {
	if opts.MessageID != "" {
		if err := CheckMessageID(opts.MessageID); err != nil {
			return false, sessionError(wire.UpdateSendUserMessage, sessionID, err)
		}
	}
	if err := wire.CheckSendMode(opts.Mode); err != nil {
		return false, sessionError(wire.UpdateSendUserMessage, sessionID, err)
	}
	if opts.TextRef == "" && len(text) > wire.MaxInlineMessageBytes {
		ref, preview, err := s.storeText(ctx, sessionID, text)
		if err != nil {
			return false, sessionError(wire.UpdateSendUserMessage, sessionID, err)
		}
		text, opts.TextRef = preview, ref
	}
	return s.update(ctx, sessionID, wire.UpdateSendUserMessage, opts.MessageID, wire.SendUserMessageRequest{Text: text, TextRef: opts.TextRef, PlanMode: opts.PlanMode, Mode: opts.Mode})
}

// ErrMessageTooLarge reports a message over wire.MaxMessageBytes.
var ErrMessageTooLarge = errors.New("message too large")

// ErrNoMessageStore reports a message over wire.MaxInlineMessageBytes sent by a
// client without a message store to send it by reference through.
var ErrNoMessageStore = errors.New("no message store")

// storeText stores a text too long to send inline in the client's message
// store and returns its reference and the preview to send with it.
func (s *AgentSessionClient) storeText(ctx context.Context, sessionID, text string) (ref, preview string, err error) {
	if len(text) > wire.MaxMessageBytes {
		return "", "", fmt.Errorf("%w: the message is %d bytes; one message may be at most %d", ErrMessageTooLarge, len(text), wire.MaxMessageBytes)
	}
	st, ok := s.messages.(MessageStore)
	if !ok {
		return "", "", fmt.Errorf("%w: the message is %d bytes; at most %d travel inline, and a longer one is sent by reference through a message store (WithMessages)", ErrNoMessageStore, len(text), wire.MaxInlineMessageBytes)
	}
	ref, err = st.PutBlob(ctx, sessionID, []byte(text))
	if err != nil {
		return "", "", fmt.Errorf("store a %d-byte message: %w", len(text), err)
	}
	return ref, previewText(text), nil
}

// previewText is the beginning of a text sent by reference, for display:
// 2 KiB, cut at a character boundary.
func previewText(text string) string {
	const n = wire.PreviewBytes
	if len(text) <= n {
		return text
	}
	cut := n
	for cut > 0 && !utf8.RuneStart(text[cut]) {
		cut--
	}
	return text[:cut]
}

// UpdateSessionSettings replaces the session's settings with settings, one
// JSON object ({} clears them). The next turn starts with them; a running
// turn keeps the settings it started with. Settings that are not one
// object, or over wire.MaxSessionSettingsBytes of compact JSON, are
// wire.ErrInvalidSessionSettings and are not sent. It returns false before the
// session started.
func (s *AgentSessionClient) UpdateSessionSettings(ctx context.Context, sessionID string, settings json.RawMessage) (bool, error) {
	if len(bytes.TrimSpace(settings)) == 0 || string(bytes.TrimSpace(settings)) == "null" {
		return false, sessionError(wire.UpdateSessionSettings, sessionID, fmt.Errorf("%w: give an object ({} clears them)", wire.ErrInvalidSessionSettings))
	}
	text, err := wire.CheckSessionSettings(settings, 0)
	if err != nil {
		return false, sessionError(wire.UpdateSessionSettings, sessionID, err)
	}
	if text == "" {
		text = "{}"
	}
	return s.update(ctx, sessionID, wire.UpdateSessionSettings, "", wire.UpdateSessionSettingsRequest{SessionSettings: json.RawMessage(text)})
}

// ResolveInterrupt approves or rejects a pending interrupt. It returns
// false when the interrupt is unknown, already resolved, or past its deadline.
//
// An interrupt a sub-agent raised is listed in its parent's
// pending_interrupts with the child's session ID: resolving it through the
// parent (req.SessionID naming the child, or the parent not holding the
// ID itself) resolves it in the child, once the parent lists it.
func (s *AgentSessionClient) ResolveInterrupt(ctx context.Context, sessionID string, req wire.ResolveInterruptRequest) (bool, error) {
	var ok bool
	err := s.routed(ctx, sessionID, req.SessionID, req.InterruptID, func(target string) error {
		return s.updateInto(ctx, target, wire.UpdateResolveInterrupt, "", req, &ok)
	}, func() bool { return ok })
	return ok, err
}

// routed runs an interrupt's request (do) in the session that holds it:
// sessionID itself, or the sub-agent below it that raised it. holder is
// the request's SessionID; without it, a request the session does not take
// (done false) goes to the sub-agent its pending_interrupts name for the
// ID, when exactly one does.
func (s *AgentSessionClient) routed(ctx context.Context, sessionID, holder, interruptID string, do func(target string) error, done func() bool) error {
	if holder == "" || holder == sessionID {
		if err := do(sessionID); err != nil || done() || holder == sessionID {
			return err
		}
	}
	snap, err := s.GetAgentSnapshot(ctx, sessionID)
	if err != nil {
		return err
	}
	target := ""
	for _, in := range snap.PendingInterrupts {
		if in.InterruptID != interruptID || in.SessionID == "" || in.SessionID == sessionID || holder != "" && in.SessionID != holder {
			continue
		}
		if target != "" && target != in.SessionID {
			return fmt.Errorf("interrupt %s is pending in sub-agents %s and %s: name one with session_id", interruptID, target, in.SessionID)
		}
		target = in.SessionID
	}
	if target == "" {
		return nil // not pending here or below: done() stays false
	}
	return do(target)
}

// ExecutePlan runs the plan revision the user approved. It returns true
// only while the session waits for a user message, its plan has that
// revision and is a draft or active, and nothing is queued; the session
// then starts an executing turn.
func (s *AgentSessionClient) ExecutePlan(ctx context.Context, sessionID string, revision int) (bool, error) {
	return s.update(ctx, sessionID, wire.UpdateExecutePlan, "", wire.ExecutePlanRequest{Revision: revision})
}

// AnswerQuestion answers a pending question (an ask_user call). It returns
// false, as the spec's RPC does, for an unknown or no longer pending
// question, a blank answer, or an answer outside the question's choices
// when free text is not allowed. Decline a question with ResolveInterrupt
// and Approved false.
func (s *AgentSessionClient) AnswerQuestion(ctx context.Context, sessionID string, req wire.AnswerQuestionRequest) (bool, error) {
	var ok bool
	err := s.routed(ctx, sessionID, req.SessionID, req.InterruptID, func(target string) error {
		return s.updateInto(ctx, target, wire.UpdateAnswerQuestion, "", req, &ok)
	}, func() bool { return ok })
	return ok, err
}

// update calls an update and waits for its result; an empty updateID lets
// the SDK pick a new one.
func (s *AgentSessionClient) update(ctx context.Context, sessionID, name, updateID string, arg any) (bool, error) {
	var ok bool
	err := s.updateInto(ctx, sessionID, name, updateID, arg, &ok)
	return ok, err
}

// ExtendInterrupt moves a pending interrupt's deadline seconds later. It
// answers Extended false for an interrupt that is not pending, and fails
// with an application error of wire.InterruptNotExtendedErrorType (the message
// says why) when the agent's limits refuse the extension.
func (s *AgentSessionClient) ExtendInterrupt(ctx context.Context, sessionID string, req wire.ExtendInterruptRequest) (wire.ExtendInterruptResult, error) {
	var out wire.ExtendInterruptResult
	err := s.routed(ctx, sessionID, req.SessionID, req.InterruptID, func(target string) error {
		return s.updateInto(ctx, target, wire.UpdateExtendInterrupt, "", req, &out)
	}, func() bool { return out.Extended })
	return out, err
}

// updateRetries bounds the retries of an update whose workflow task failed
// before the workflow accepted it (WorkflowNotReady).
const updateRetries = 5

func (s *AgentSessionClient) updateInto(ctx context.Context, sessionID, name, updateID string, arg, out any) error {
	// One ID for every attempt: an attempt the engine did accept after all
	// answers the retry with its own outcome, so the update applies once.
	if updateID == "" {
		updateID = uuid.NewString()
	}
	var h temporalclient.WorkflowUpdateHandle
	var err error
	for attempt := 0; ; attempt++ {
		h, err = s.c.UpdateWorkflow(ctx, temporalclient.UpdateWorkflowOptions{
			UpdateID:     updateID,
			WorkflowID:   sessionID,
			UpdateName:   name,
			Args:         []any{arg},
			WaitForStage: temporalclient.WorkflowUpdateStageCompleted,
		})
		// The workflow task that carried the update failed before the
		// workflow accepted it (such as a close racing an activity's
		// result): the update did not apply, and the engine says to retry.
		var notReady *serviceerror.WorkflowNotReady
		if !errors.As(err, &notReady) || attempt == updateRetries {
			break
		}
		select {
		case <-ctx.Done():
			return sessionError(name, sessionID, err)
		case <-time.After(time.Duration(50<<attempt) * time.Millisecond):
		}
	}
	var nf *serviceerror.NotFound
	if errors.As(err, &nf) {
		if how := s.endedHow(ctx, sessionID); how != "" {
			// The engine keeps the ended workflow: say how it ended.
			return &SessionError{Verb: verbs[name], SessionID: sessionID,
				errs: []error{fmt.Errorf("the session %s: it takes no messages or answers", how), ErrSessionClosed, err}}
		}
	}
	if err != nil {
		return sessionError(name, sessionID, err)
	}
	if err := h.Get(ctx, out); err != nil {
		return sessionError(name, sessionID, closedError(err))
	}
	return nil
}

// endedHow says how session id ended ("was closed", "was terminated",
// ...) while the engine keeps the ended workflow, or "".
func (s *AgentSessionClient) endedHow(ctx context.Context, sessionID string) string {
	d, err := s.c.WorkflowService().DescribeWorkflowExecution(ctx, &workflowservice.DescribeWorkflowExecutionRequest{
		Namespace: s.namespace, Execution: &commonpb.WorkflowExecution{WorkflowId: sessionID},
	})
	if err != nil {
		return ""
	}
	return EndedHow(d.GetWorkflowExecutionInfo().GetStatus())
}

// EndedHow words how a session whose workflow has status ended, for
// people ("was closed", "was terminated", ...); "" while it runs.
func EndedHow(status enumspb.WorkflowExecutionStatus) string {
	switch status {
	case enumspb.WORKFLOW_EXECUTION_STATUS_COMPLETED:
		return "was closed"
	case enumspb.WORKFLOW_EXECUTION_STATUS_TERMINATED:
		return "was terminated"
	case enumspb.WORKFLOW_EXECUTION_STATUS_CANCELED:
		return "was cancelled"
	case enumspb.WORKFLOW_EXECUTION_STATUS_FAILED:
		return "ended with an error"
	case enumspb.WORKFLOW_EXECUTION_STATUS_TIMED_OUT:
		return "timed out"
	}
	return ""
}

// GetAgentSnapshot returns the snapshot a UI renders. Closed sessions are
// served while a worker runs.
func (s *AgentSessionClient) GetAgentSnapshot(ctx context.Context, sessionID string) (wire.Snapshot, error) {
	var snap wire.Snapshot
	if err := s.query(ctx, sessionID, wire.QueryAgentSnapshot, &snap); err != nil {
		return snap, err
	}
	return snap, s.fillSnapshot(ctx, sessionID, &snap)
}

// ListAgentMessages returns one page of stored messages, oldest first.
// A zero Limit reads wire.DefaultMessagesPageSize (50); the query clamps
// any other to 1..200.
func (s *AgentSessionClient) ListAgentMessages(ctx context.Context, sessionID string, req wire.ListMessagesRequest) (wire.MessagesPage, error) {
	if req.Limit == 0 {
		req.Limit = wire.DefaultMessagesPageSize
	}
	var page wire.MessagesPage
	if err := s.query(ctx, sessionID, wire.QueryListAgentMessages, &page, req); err != nil {
		return page, err
	}
	return s.fillPage(ctx, sessionID, req, page)
}

func (s *AgentSessionClient) query(ctx context.Context, sessionID, name string, out any, args ...any) error {
	v, err := s.c.QueryWorkflow(ctx, sessionID, "", name, args...)
	if err != nil {
		return sessionError(name, sessionID, err)
	}
	if err := v.Get(out); err != nil {
		return sessionError(name, sessionID, fmt.Errorf("decode the answer: %w", err))
	}
	return nil
}
