package sessionflow

import (
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/dex-agents/dex-agent-worker/wire"

	enumspb "go.temporal.io/api/enums/v1"
	"go.temporal.io/sdk/temporal"
	"go.temporal.io/sdk/workflow"

	"github.com/dex-agents/dex-agent-worker/internal/approvaldigest"
	"github.com/dex-agents/dex-agent-worker/internal/session"
	"github.com/dex-agents/dex-agent-worker/internal/tracing"
)

// Runtime is what a worker fixes for one agent's workflow type.
type Runtime struct {
	// Options are the settings this worker gives the sessions it starts.
	// A session records them in its history when it starts and keeps them
	// for its whole life (continue-as-new carries them), so it never
	// replays with settings other than its own.
	Options session.Options
	Events  EventSink
	// MaxUpdatesPerRun continues the session as new at a turn boundary once
	// a run accepted this many updates (Temporal allows 2,000 per run).
	MaxUpdatesPerRun int
	// Tracer traces the turns (nil: none). It never shapes a command, so
	// workers with and without tracing serve one session.
	Tracer Tracer
	// Approvals signs approval interrupts and checks the digest a
	// resolve_interrupt carries (nil: approvals carry no digest). It is
	// used only outside the history: on the snapshot query, the live
	// interrupt_raised event and the update's validator, which the engine
	// does not run on replay; so a changed key changes no replay.
	Approvals *approvaldigest.Signer
	// ModelCalls is the fast path of a turn's cancel (nil: none): when
	// the session cancels a model call's Step, the worker running it ends
	// the call at once instead of at its next heartbeat. It is called
	// outside replay only and never shapes a command; the engine's
	// activity cancel stays the guarantee.
	ModelCalls ModelCallCanceller
}

// ModelCallCanceller ends the model calls of a cancelled turn wherever
// they run (this process, or others through the event backend).
type ModelCallCanceller interface {
	CancelModelCalls(sessionID, runID, turnID string)
}

// Tracer traces turns from workflow code (internal/tracing/temporaltrace).
type Tracer interface {
	// WithTurn returns ctx under which the Steps started join the turn's
	// trace.
	WithTurn(ctx workflow.Context, sessionID, firstRunID, turnID string) workflow.Context
	// TurnEnded writes a turn's root span; it is called outside replay.
	TurnEnded(t tracing.Turn)
}

// TurnMark is when the active turn started, for its trace's root; it
// passes through continue-as-new.
type TurnMark struct {
	TurnID    string `json:"turn_id"`
	StartedMs int64  `json:"started_ms"`
}

// EventSink receives the live events the session writes from workflow code.
// It is called once per event, never during replay. origin names the run
// and index counts its events from 1, the same on every worker that runs
// the run's workflow tasks: a task that runs again (its worker died before
// completing it) publishes the same pairs, which the sink stores once.
type EventSink interface {
	Publish(sessionID string, e session.Event, origin string, index uint64)
}

// StreamSink is an EventSink that also writes an event into another
// session's stream: a sub-agent's events go to the streams of the sessions
// above it too, with the sub-agent's session ID.
type StreamSink interface {
	PublishTo(stream, sessionID string, e session.Event, origin string, index uint64)
}

// mirror writes a sub-agent's event into its ancestors' streams.
func (l *loop) mirror(e session.Event, origin string, index uint64) {
	ss, ok := l.rt.Events.(StreamSink)
	if !ok || l.st.SubAgent == nil {
		return
	}
	for _, up := range l.st.SubAgent.Lineage {
		ss.PublishTo(up, l.st.SessionID, e, origin, index)
	}
}

// ChangeSink is an EventSink that also feeds the change feed (a session
// started, renamed or archived, ended: wire.ChangeSession*), which lists
// of sessions watch. It is called outside replay only, and never shapes a
// command.
type ChangeSink interface {
	Changed(sessionID, changeType string)
}

// changed announces a change of the session outside replay.
func (l *loop) changed(changeType string) {
	if c, ok := l.rt.Events.(ChangeSink); ok && !workflow.IsReplaying(l.ctx) {
		c.Changed(l.st.SessionID, changeType)
	}
}

// WorkflowInput is the workflow input: wire.StartInput on the wire, plus
// the carried state after continue-as-new.
type WorkflowInput struct {
	InitialMessage    string          `json:"initial_message,omitempty"`
	InitialMessageRef string          `json:"initial_message_ref,omitempty"`
	SessionSettings   json.RawMessage `json:"session_settings,omitempty"`
	APIToken          string          `json:"api_token,omitempty"`
	// ActiveStepSearchMode is wire.StartInput's.
	ActiveStepSearchMode string `json:"active_step_search_mode,omitempty"`
	// Fork and SubAgent are wire.StartInput's.
	Fork      *wire.ForkStart     `json:"fork,omitempty"`
	SubAgent  *wire.SubAgentStart `json:"sub_agent,omitempty"`
	Continued *session.State      `json:"continued,omitempty"`
	// Turn is the active turn's start, carried through continue-as-new.
	Turn *TurnMark `json:"trace_turn,omitempty"`
}

var activeStepTypesKey = temporal.NewSearchAttributeKeyKeywordList(wire.SearchAttributeActiveStepTypes)

// Workflow returns the session workflow function for one agent.
func Workflow(rt Runtime) func(workflow.Context, WorkflowInput) error {
	if rt.MaxUpdatesPerRun <= 0 {
		rt.MaxUpdatesPerRun = 1500
	}
	return func(ctx workflow.Context, in WorkflowInput) error {
		return run(ctx, rt, in)
	}
}

type pendingFuture struct {
	future workflow.Future
	done   func(workflow.Future)
	// interruptID is set for approval deadline timers.
	interruptID string
	cancel      workflow.CancelFunc
	// key is the StepKey of a Step or timer a turn control may cancel.
	key string
}

type loop struct {
	ctx     workflow.Context
	rt      Runtime
	st      *session.State
	pending []session.Command
	futures []*pendingFuture
	updates int
	steps   []string
	// legacySteps upserts the Step names of older workers (see
	// specStepNamesChangeID).
	legacySteps bool
	// failure ends the session's run with an error (FailSession).
	failure error
	// emits counts the run's Emit commands, replayed ones too, so an
	// event has the same index on every worker (EventSink).
	emits uint64
	// turn is when the turn the last BuildUserMessage built started.
	turn TurnMark
	// reports and controls are the sub-agent signals: a child's reports
	// to this session, its parent's orders to it.
	reports, controls workflow.ReceiveChannel
}

func run(ctx workflow.Context, rt Runtime, in WorkflowInput) error {
	info := workflow.GetInfo(ctx)
	l := &loop{ctx: ctx, rt: rt}
	opts, err := sessionOptions(ctx, rt, in.Continued)
	if err != nil {
		return err
	}
	if in.Turn != nil {
		l.turn = *in.Turn
	}
	if in.Continued != nil {
		l.st = in.Continued
		l.st.Options = opts
	} else {
		// The start input is in history: a disabled search stays disabled
		// on replay and through continue-as-new (it is in the options).
		// From SearchOptInVersion, a start input without a mode (a raw
		// Temporal client's) is not searchable either: the reference's
		// start_flow does not turn the search on; its start_session does,
		// as client.StartSession does.
		if in.ActiveStepSearchMode == wire.ActiveStepSearchDisabled ||
			in.ActiveStepSearchMode == "" && opts.Version >= session.SearchOptInVersion {
			opts.SearchAttributes = false
		}
		l.st = session.New(info.WorkflowExecution.ID, opts)
		l.apply(session.Start{InitialMessage: in.InitialMessage, InitialMessageRef: in.InitialMessageRef, SessionSettings: string(in.SessionSettings), APIToken: in.APIToken, Fork: in.Fork, SubAgent: in.SubAgent})
		l.changed(wire.ChangeSessionStarted)
	}
	// Runs of older workers upserted non-spec Step names; theirs replay
	// with them.
	l.legacySteps = workflow.GetVersion(ctx, specStepNamesChangeID, workflow.DefaultVersion, 1) == workflow.DefaultVersion
	if err := l.registerHandlers(); err != nil {
		return err
	}
	l.reports = workflow.GetSignalChannel(ctx, wire.SignalSubAgentReport)
	l.controls = workflow.GetSignalChannel(ctx, wire.SignalSubAgentControl)
	if in.Continued != nil {
		l.apply(session.Continued{NowMs: l.now()})
	}
	for {
		if err := workflow.Await(ctx, func() bool {
			return len(l.pending) > 0 || l.signalled() || l.anyReady() || l.finished() || l.shouldContinueAsNew()
		}); err != nil {
			return err
		}
		l.receiveSignals()
		if len(l.pending) == 0 && !l.anyReady() && l.finished() {
			// close_session: nothing is left to run.
			workflow.GetLogger(ctx).Info("session closed", "turn_count", l.st.TurnCount)
			l.changed(wire.ChangeSessionEnded)
			return nil
		}
		if len(l.pending) == 0 && !l.anyReady() && l.shouldContinueAsNew() {
			if l.upgradeDue() {
				// A turn boundary after the deployment's current version
				// changed: the next run starts on the current version
				// (and is pinned there), with the queued messages.
				l.holdTurns()
				workflow.GetLogger(ctx).Info("continuing as new on the current worker version", "turn_count", l.st.TurnCount, "queued", l.st.QueuedCount())
				return workflow.NewContinueAsNewErrorWithOptions(ctx,
					workflow.ContinueAsNewErrorOptions{InitialVersioningBehavior: workflow.ContinueAsNewVersioningBehaviorAutoUpgrade},
					info.WorkflowType.Name, WorkflowInput{Continued: l.st})
			}
			workflow.GetLogger(ctx).Info("continuing as new", "turn_count", l.st.TurnCount, "updates", l.updates)
			return workflow.NewContinueAsNewError(ctx, info.WorkflowType.Name, WorkflowInput{Continued: l.st})
		}
		l.dispatch()
		if l.failure != nil {
			l.changed(wire.ChangeSessionEnded)
			return l.failure
		}
		l.collect()
		if l.shouldContinueMidTurn() {
			// Between Steps of a long turn: the new run starts the Steps
			// the turn waits on again (none of them started here).
			l.emitPending()
			workflow.GetLogger(ctx).Info("continuing as new inside a turn", "turn", l.st.ActiveTurnID,
				"history_events", info.GetCurrentHistoryLength(), "history_bytes", info.GetCurrentHistorySize())
			turn := l.turn
			return workflow.NewContinueAsNewError(ctx, info.WorkflowType.Name, WorkflowInput{Continued: l.st, Turn: &turn})
		}
		l.dispatch()
		l.upsertSteps()
	}
}

// settingsChangeID names the change that records a session's settings in
// its history. Histories from before it have no marker for it: they were
// made with the settings of the worker that ran them, which replay uses.
const settingsChangeID = "record-session-settings"

// specStepNamesChangeID names the change that keeps ActiveStepTypes to the
// spec's Step names.
const specStepNamesChangeID = "active-step-types-spec-names"

// sessionOptions returns the session's settings: the ones carried through
// continue-as-new when they were recorded, else the worker's current
// settings, recorded once in history with a side effect so that every
// replay uses them, whatever the worker's config says by then.
func sessionOptions(ctx workflow.Context, rt Runtime, continued *session.State) (session.Options, error) {
	current := rt.Options
	if continued != nil {
		// The agent, its policies and the deadline were fixed when the
		// session started; only what older states lack comes from the worker.
		current.Agent = continued.Options.Agent
		current.Policies = continued.Options.Policies
		current.InterruptDeadlineMs = continued.Options.InterruptDeadlineMs
	}
	if workflow.GetVersion(ctx, settingsChangeID, workflow.DefaultVersion, 1) == workflow.DefaultVersion {
		// Those workers had no recovery budget: a Step's failure replays
		// as it ran.
		current.Recovery = nil
		return current, nil
	}
	if continued != nil && continued.Options.Version >= session.SettingsVersion {
		return continued.Options, nil
	}
	current.Version = session.CurrentVersion
	var opts session.Options
	if err := workflow.SideEffect(ctx, func(workflow.Context) any { return current }).Get(&opts); err != nil {
		return session.Options{}, err
	}
	return opts, nil
}

func (l *loop) registerHandlers() error {
	// check_worker_version only wakes the session: the main loop then sees
	// whether a newer worker version is current (upgradeDue).
	wake := workflow.GetSignalChannel(l.ctx, wire.SignalCheckWorkerVersion)
	workflow.Go(l.ctx, func(ctx workflow.Context) {
		for {
			wake.Receive(ctx, nil)
		}
	})
	if err := workflow.SetQueryHandler(l.ctx, wire.QueryAgentSnapshot, func() (wire.Snapshot, error) {
		snap := l.st.Snapshot()
		if l.rt.Approvals != nil {
			for i, in := range snap.PendingInterrupts {
				if in.SessionID == "" {
					// A sub-agent's carries the child's own digest.
					snap.PendingInterrupts[i].Digest = l.approvalDigest(in.InterruptID)
				}
			}
		}
		return snap, nil
	}); err != nil {
		return err
	}
	if err := workflow.SetQueryHandler(l.ctx, wire.QueryListAgentMessages, func(req wire.ListMessagesRequest) (wire.MessagesPage, error) {
		return l.st.ListMessages(req), nil
	}); err != nil {
		return err
	}
	if err := workflow.SetQueryHandler(l.ctx, wire.QueryForkPoint, func(req wire.ForkPointRequest) (wire.ForkPoint, error) {
		return l.st.ForkPoint(req.AtSequence), nil
	}); err != nil {
		return err
	}
	// The updates answer false where the spec's RPCs return False (blank
	// text, a message over the limit, an interrupt that is not pending), so
	// they need no validator: a request that does not decode is refused by
	// the engine.
	if err := workflow.SetUpdateHandlerWithOptions(l.ctx, wire.UpdateSendUserMessage,
		func(ctx workflow.Context, req wire.SendUserMessageRequest) (bool, error) {
			l.updates++
			return l.request(session.SendUserMessage{Text: req.Text, TextRef: req.TextRef, PlanMode: req.PlanMode, Mode: req.Mode})
		},
		workflow.UpdateHandlerOptions{Validator: func(ctx workflow.Context, req wire.SendUserMessageRequest) error {
			return wire.CheckSendMode(req.Mode)
		}},
	); err != nil {
		return err
	}
	if err := workflow.SetUpdateHandler(l.ctx, wire.UpdateSteerUserMessage,
		func(ctx workflow.Context, req wire.SteerUserMessageRequest) (bool, error) {
			l.updates++
			return l.request(session.SteerUserMessage{MessageID: req.MessageID, Text: req.Text, TextRef: req.TextRef, PlanMode: req.PlanMode})
		},
	); err != nil {
		return err
	}
	if err := workflow.SetUpdateHandler(l.ctx, wire.UpdateDeleteQueuedMessage,
		func(ctx workflow.Context, req wire.DeleteQueuedMessageRequest) (bool, error) {
			l.updates++
			return l.request(session.DeleteQueuedMessage{MessageID: req.MessageID})
		},
	); err != nil {
		return err
	}
	if err := workflow.SetUpdateHandler(l.ctx, wire.UpdateCancelTurn,
		func(ctx workflow.Context, req wire.CancelTurnRequest) (bool, error) {
			l.updates++
			return l.request(session.CancelTurn{TurnID: req.TurnID})
		},
	); err != nil {
		return err
	}
	if err := workflow.SetUpdateHandler(l.ctx, wire.UpdateCloseSession,
		func(ctx workflow.Context, req wire.CloseSessionRequest) (bool, error) {
			l.updates++
			return l.request(session.CloseSession{})
		},
	); err != nil {
		return err
	}
	// set_session_metadata writes what lists show (title, archived) to the
	// memo; the session's state and commands are untouched. Histories from
	// before it never hold one, so it needs no version.
	if err := workflow.SetUpdateHandlerWithOptions(l.ctx, wire.UpdateSessionMetadata,
		func(ctx workflow.Context, req wire.SessionMetadataRequest) (bool, error) {
			l.updates++
			memo := map[string]any{}
			if req.Title != nil {
				memo[wire.MemoTitle] = wire.TitleOf(*req.Title)
			}
			if req.Archived != nil {
				memo[wire.MemoArchived] = *req.Archived
			}
			if err := workflow.UpsertMemo(ctx, memo); err != nil {
				return false, err
			}
			l.changed(wire.ChangeSessionUpdated)
			return true, nil
		},
		workflow.UpdateHandlerOptions{Validator: func(ctx workflow.Context, req wire.SessionMetadataRequest) error {
			if err := wire.CheckSessionMetadata(req); err != nil {
				return temporal.NewApplicationError(wire.UpdateSessionMetadata+": "+err.Error(), "InvalidSessionMetadata")
			}
			return nil
		}},
	); err != nil {
		return err
	}
	if err := workflow.SetUpdateHandler(l.ctx, wire.UpdateExecutePlan,
		func(ctx workflow.Context, req wire.ExecutePlanRequest) (bool, error) {
			l.updates++
			return l.request(session.ExecutePlan{Revision: req.Revision})
		},
	); err != nil {
		return err
	}
	if err := workflow.SetUpdateHandler(l.ctx, wire.UpdateSessionSettings,
		func(ctx workflow.Context, req wire.UpdateSessionSettingsRequest) (bool, error) {
			l.updates++
			return l.apply(session.UpdateSessionSettings{Settings: string(req.SessionSettings)}), nil
		},
	); err != nil {
		return err
	}
	if err := workflow.SetUpdateHandler(l.ctx, wire.UpdateAnswerQuestion,
		func(ctx workflow.Context, req wire.AnswerQuestionRequest) (bool, error) {
			l.updates++
			return l.apply(session.AnswerQuestion{InterruptID: req.InterruptID, Answer: req.Answer, NowMs: workflow.Now(ctx).UnixMilli(), Via: req.ResolvedVia, By: req.ResolvedBy}), nil
		},
	); err != nil {
		return err
	}
	if err := workflow.SetUpdateHandlerWithOptions(l.ctx, wire.UpdateExtendInterrupt,
		func(ctx workflow.Context, req wire.ExtendInterruptRequest) (wire.ExtendInterruptResult, error) {
			l.updates++
			ok := l.apply(session.ExtendInterrupt{InterruptID: req.InterruptID, ExtendBySeconds: req.ExtendBySeconds, NowMs: workflow.Now(ctx).UnixMilli()})
			out := wire.ExtendInterruptResult{Extended: ok}
			if ok {
				out.Deadline = l.st.InterruptDeadline(req.InterruptID)
			}
			return out, nil
		},
		workflow.UpdateHandlerOptions{Validator: func(ctx workflow.Context, req wire.ExtendInterruptRequest) error {
			refusal, _ := l.st.CheckExtend(session.ExtendInterrupt{InterruptID: req.InterruptID, ExtendBySeconds: req.ExtendBySeconds, NowMs: workflow.Now(ctx).UnixMilli()})
			if refusal != "" {
				return temporal.NewApplicationError("extend_interrupt: "+refusal, wire.InterruptNotExtendedErrorType)
			}
			return nil
		}},
	); err != nil {
		return err
	}
	return workflow.SetUpdateHandlerWithOptions(l.ctx, wire.UpdateResolveInterrupt,
		func(ctx workflow.Context, req wire.ResolveInterruptRequest) (bool, error) {
			l.updates++
			return l.apply(session.ResolveInterrupt{
				InterruptID: req.InterruptID, Approved: req.Approved, RejectionMessage: req.RejectionMessage,
				NowMs: workflow.Now(ctx).UnixMilli(), Via: req.ResolvedVia, By: req.ResolvedBy,
			}), nil
		},
		workflow.UpdateHandlerOptions{Validator: func(ctx workflow.Context, req wire.ResolveInterruptRequest) error {
			return l.checkDigest(req)
		}},
	)
}

// approvalDigest signs a pending approval interrupt; "" for a question or
// an interrupt that is not pending.
func (l *loop) approvalDigest(interruptID string) string {
	sub, ok := l.st.ApprovalSubject(interruptID)
	if !ok {
		return ""
	}
	return l.rt.Approvals.Sign(approvaldigest.Subject(sub)) //workflowcheck:ignore (an HMAC: deterministic; used only by queries, live events and validators)
}

// checkDigest refuses a resolve_interrupt of an approval whose digest is
// not the call's the session holds (or, when the operator requires
// digests, one without any). It runs in the update's validator, so a
// refused request leaves no trace in the history.
func (l *loop) checkDigest(req wire.ResolveInterruptRequest) error {
	if l.rt.Approvals == nil {
		return nil
	}
	sub, ok := l.st.ApprovalSubject(req.InterruptID)
	if !ok {
		return nil // a question, or not pending: the handler answers
	}
	matches := req.Digest != "" && l.rt.Approvals.Verify(approvaldigest.Subject(sub), req.Digest) //workflowcheck:ignore (an HMAC, in a validator, which replay does not run)
	switch {
	case req.Digest == "" && l.rt.Approvals.Required:
		return temporal.NewApplicationError(fmt.Sprintf(
			"resolve_interrupt: approval %s needs its digest (this worker requires approval digests): send the digest of the interrupt shown to the user", req.InterruptID),
			wire.ApprovalDigestErrorType)
	case req.Digest != "" && !matches:
		return temporal.NewApplicationError(fmt.Sprintf(
			"resolve_interrupt: the digest does not match approval %s: the approval shown was for another call, tool or arguments than %s now waits on; show the interrupt again and resolve that one", req.InterruptID, sub.ToolName),
			wire.ApprovalDigestErrorType)
	}
	return nil
}

// signalled reports a sub-agent signal not applied yet.
func (l *loop) signalled() bool { return l.reports.Len() > 0 || l.controls.Len() > 0 }

// receiveSignals applies the sub-agent signals that arrived, before any
// future: a child's last report comes before its workflow's close.
func (l *loop) receiveSignals() {
	for {
		var r wire.SubAgentReport
		if !l.reports.ReceiveAsync(&r) {
			break
		}
		l.apply(session.SubAgentReported{Report: r, NowMs: l.now()})
		if r.Kind == wire.SubAgentInterruptRaised || r.Kind == wire.SubAgentInterruptResolved {
			// Lists of sessions waiting for people show this one now.
			l.changed(r.Kind)
		}
	}
	for {
		var c wire.SubAgentControl
		if !l.controls.ReceiveAsync(&c) {
			break
		}
		l.apply(session.ParentControl{Control: c})
	}
}

func (l *loop) anyReady() bool {
	for _, f := range l.futures {
		if f.future.IsReady() {
			return true
		}
	}
	return false
}

func (l *loop) shouldContinueAsNew() bool {
	if !l.st.Idle() || len(l.futures) > 0 {
		return false
	}
	if l.upgradeDue() {
		// Queued messages wait for the next run, on the new version.
		return workflow.AllHandlersFinished(l.ctx)
	}
	if l.st.QueuedCount() > 0 {
		return false
	}
	if !workflow.GetInfo(l.ctx).GetContinueAsNewSuggested() && l.updates < l.rt.MaxUpdatesPerRun {
		return false
	}
	return workflow.AllHandlersFinished(l.ctx)
}

// upgradeDue reports that the session should move to the worker
// deployment's current version at its next turn boundary: the engine says
// the target version changed since this run's version was pinned. It is
// false for sessions without worker versioning. The flag comes from the
// history, so a replay sees it as the run did.
func (l *loop) upgradeDue() bool {
	return l.st.HoldTurns || workflow.GetInfo(l.ctx).GetTargetWorkerDeploymentVersionChanged()
}

// holdTurns stops the session from starting turns in this run once an
// upgrade is due, before it applies the next input: a message that would
// start a turn is queued for the next run, on the new version. The turn
// that runs finishes here, on the version that started it.
func (l *loop) holdTurns() {
	if !l.st.HoldTurns && l.upgradeDue() {
		l.st.Apply(session.HoldTurns{})
	}
}

// MidTurnHistoryBytes continues a session that keeps its messages in the
// store as new between two Steps of a turn once its history passes this
// size (the engine terminates a run at about 50 MB), or when the engine
// suggests it.
const MidTurnHistoryBytes = 20 << 20

// shouldContinueMidTurn reports a Step boundary inside a turn where the run
// should continue as new: no Step runs (a deadline timer may wait; the new
// run arms it again), no update handler runs, and the history is long.
// Sessions without the store keep continuing only between turns, as their
// recorded histories did.
func (l *loop) shouldContinueMidTurn() bool {
	if !l.st.Options.Messages.Store || l.st.Idle() || !l.st.Started {
		return false
	}
	for _, f := range l.futures {
		if f.interruptID == "" {
			return false
		}
	}
	info := workflow.GetInfo(l.ctx)
	if !info.GetContinueAsNewSuggested() && info.GetCurrentHistorySize() < MidTurnHistoryBytes {
		return false
	}
	return workflow.AllHandlersFinished(l.ctx)
}

// emitPending writes the live events among the pending commands before
// the run ends; the other commands are re-created by the next run.
func (l *loop) emitPending() {
	for _, c := range l.pending {
		if e, ok := c.(session.Emit); ok {
			l.exec(e)
		}
	}
	l.pending = nil
}

// collect applies every finished future, in the order they were started,
// after the signals that arrived before them.
func (l *loop) collect() {
	l.receiveSignals()
	for i := 0; i < len(l.futures); {
		f := l.futures[i]
		if !f.future.IsReady() {
			i++
			continue
		}
		l.futures = append(l.futures[:i:i], l.futures[i+1:]...)
		f.done(f.future)
	}
}

func (l *loop) dispatch() {
	for len(l.pending) > 0 {
		cmd := l.pending[0]
		l.pending = l.pending[1:]
		l.exec(cmd)
	}
}

func (l *loop) add(f workflow.Future, done func(workflow.Future)) {
	l.futures = append(l.futures, &pendingFuture{future: f, done: done})
}

// addKeyed adds the future of a Step or timer that CancelStep may cancel.
func (l *loop) addKeyed(f workflow.Future, key string, cancel workflow.CancelFunc, done func(workflow.Future)) {
	l.futures = append(l.futures, &pendingFuture{future: f, done: done, key: key, cancel: cancel})
}

// apply applies one input to the session and queues its commands; it
// reports whether the input was accepted.
func (l *loop) apply(in session.Input) bool {
	l.holdTurns()
	r := l.st.Apply(in)
	l.pending = append(l.pending, r.Commands...)
	return r.Accepted
}

// request applies a client's request: false where the session does not
// take it, an error where it refuses it (a closed session).
func (l *loop) request(in session.Input) (bool, error) {
	l.holdTurns()
	r := l.st.Apply(in)
	l.pending = append(l.pending, r.Commands...)
	if r.Refusal != "" {
		return false, temporal.NewApplicationError(r.Refusal, wire.SessionClosedErrorType)
	}
	return r.Accepted, nil
}

// finished reports a closed session with nothing left to run.
func (l *loop) finished() bool {
	return l.st.Finished() && len(l.futures) == 0 && workflow.AllHandlersFinished(l.ctx)
}

func (l *loop) now() int64 { return workflow.Now(l.ctx).UnixMilli() }

// exec turns one command into an engine call: an activity or local
// activity whose result is applied when its future is ready, a timer, or
// a live event. It reads the session's state for one thing only: the
// active turn's ID, which keys the timers of tool tasks and durable waits
// (StartTaskTimer, StartWaitTimer) and goes into the input their firing
// applies.
func (l *loop) exec(cmd session.Command) {
	switch c := cmd.(type) {
	case session.FailSession:
		l.failure = temporal.NewNonRetryableApplicationError(c.Reason, "InvalidStartSessionSettings", nil)
	case session.Emit:
		l.emits++
		if l.rt.Events != nil && !workflow.IsReplaying(l.ctx) {
			e := c.Event
			// The same step_execution_id as the Step's own events
			// (run ID / activity ID); turn-level events use the turn.
			step := e.Step
			if step == "" {
				step = e.TurnID
			}
			run := workflow.GetInfo(l.ctx).WorkflowExecution.RunID
			e.Step = run + "/" + step
			if l.rt.Approvals != nil && e.Type == wire.EventInterruptRaised {
				e.Payload = l.signRaised(e.Payload)
			}
			if ss, ok := l.rt.Events.(StreamSink); ok && l.st.SubAgent != nil {
				// A sub-agent's own stream, quietly: lists follow its
				// parent, which announces what the child waits on.
				ss.PublishTo(l.st.SessionID, l.st.SessionID, e, "wf:"+run, l.emits)
			} else {
				l.rt.Events.Publish(l.st.SessionID, e, "wf:"+run, l.emits)
			}
			l.mirror(e, "wf:"+run, l.emits)
		}
		if l.rt.Tracer != nil && !workflow.IsReplaying(l.ctx) {
			l.traceTurnEnd(c.Event)
		}
	case session.BuildUserMessage:
		if l.turn.TurnID != c.Input.TurnID {
			l.turn = TurnMark{TurnID: c.Input.TurnID, StartedMs: l.now()}
		}
		if upgradeProbe {
			// The upgrade test's "new workflow code" (upgradeprobe.go).
			_ = workflow.SideEffect(l.ctx, func(workflow.Context) any { return "dexupgradeprobe " + c.Input.TurnID })
		}
		ctx := workflow.WithLocalActivityOptions(l.stepCtx(c.Input.TurnID), localOptions())
		f := workflow.ExecuteLocalActivity(ctx, wire.StepBuildUserMessage, c.Input)
		turn := c.Input.TurnID
		l.add(f, func(f workflow.Future) {
			var out session.BuildUserMessageOutput
			if err := f.Get(l.ctx, &out); err != nil {
				l.apply(session.UserMessageFailed{TurnID: turn, Reason: errorText(err), Attempt: attemptOf(err, localOptions().RetryPolicy.MaximumAttempts)})
				return
			}
			l.apply(session.UserMessageBuilt{TurnID: turn, Message: out.Message, Stored: out.Stored, Attempt: out.Attempt})
		})
	case session.RunModel:
		ctx, cancel := workflow.WithCancel(workflow.WithActivityOptions(l.stepCtx(c.Input.TurnID), activityOptions(c.Limits, "")))
		f := workflow.ExecuteActivity(l.modelQueue(ctx), wire.StepRunModel, c.Input)
		turn := c.Input.TurnID
		l.addKeyed(f, session.StepKey(c, turn), cancel, func(f workflow.Future) {
			var out session.ModelOutcome
			if err := f.Get(l.ctx, &out); err != nil {
				l.apply(session.ModelStepFailed{TurnID: turn, Reason: "RunModel failed: " + errorText(err), Attempt: attemptOf(err, c.Limits.MaximumAttempts), Stop: stepStop(err)})
				return
			}
			l.apply(session.ModelStepDone{TurnID: turn, Outcome: out, NowMs: l.now()})
		})
	case session.CompactContext:
		ctx, cancel := workflow.WithCancel(workflow.WithActivityOptions(l.stepCtx(c.Input.Turn.TurnID), activityOptions(c.Limits, "")))
		f := workflow.ExecuteActivity(l.modelQueue(ctx), wire.StepCompactContext, c.Input)
		turn := c.Input.Turn.TurnID
		l.addKeyed(f, session.StepKey(c, turn), cancel, func(f workflow.Future) {
			var out session.CompactOutcome
			if err := f.Get(l.ctx, &out); err != nil {
				l.apply(session.CompactionFailed{TurnID: turn, Reason: "CompactContext failed: " + errorText(err), Attempt: attemptOf(err, c.Limits.MaximumAttempts), Stop: stepStop(err)})
				return
			}
			l.apply(session.ContextCompacted{TurnID: turn, Outcome: out, NowMs: l.now()})
		})
	case session.RunTool:
		opts := activityOptions(c.Limits, c.ActivityID)
		// A cancel reaches the Step only before its started marker; the
		// workflow waits for the Step's own answer (a result, or not run).
		opts.WaitForCancellation = true
		ctx, cancel := workflow.WithCancel(workflow.WithActivityOptions(l.stepCtx(c.Input.TurnID), opts))
		f := workflow.ExecuteActivity(ctx, c.Step, c.Input)
		turn, call := c.Input.TurnID, c.Input.ToolCall.ToolCallID
		l.addKeyed(f, session.StepKey(c, turn), cancel, func(f workflow.Future) {
			var out session.ToolOutcome
			if err := f.Get(l.ctx, &out); err != nil {
				l.apply(session.ToolStepFailed{TurnID: turn, ToolCallID: call, Detail: errorText(err), NotStarted: toolNotStarted(err), Attempt: attemptOf(err, c.Limits.MaximumAttempts), Stop: stepStop(err)})
				return
			}
			l.apply(session.ToolStepDone{TurnID: turn, ToolCallID: call, Outcome: out, NowMs: l.now()})
		})
	case session.StartTimer:
		tctx, cancel := workflow.WithCancel(l.ctx)
		f := workflow.NewTimer(tctx, time.Duration(c.DelayMs)*time.Millisecond)
		id := c.InterruptID
		l.futures = append(l.futures, &pendingFuture{future: f, interruptID: id, cancel: cancel, done: func(f workflow.Future) {
			if err := f.Get(l.ctx, nil); err != nil {
				return // cancelled
			}
			l.apply(session.DeadlineTimerFired{InterruptID: id, NowMs: l.now()})
		}})
	case session.StartTaskTimer:
		tctx, cancel := workflow.WithCancel(l.ctx)
		f := workflow.NewTimer(tctx, time.Duration(c.DelayMs)*time.Millisecond)
		turn, call := l.st.ActiveTurnID, c.ToolCallID
		l.addKeyed(f, session.StepKey(c, turn), cancel, func(f workflow.Future) {
			if err := f.Get(l.ctx, nil); err != nil {
				return
			}
			l.apply(session.TaskPollTimerFired{TurnID: turn, ToolCallID: call})
		})
	case session.RunPoll:
		ctx, cancel := workflow.WithCancel(workflow.WithActivityOptions(l.stepCtx(c.Input.TurnID), activityOptions(c.Limits, c.ActivityID)))
		f := workflow.ExecuteActivity(ctx, wire.StepPollToolTask, c.Input)
		turn, call := c.Input.TurnID, c.Input.ToolCall.ToolCallID
		l.addKeyed(f, session.StepKey(c, turn), cancel, func(f workflow.Future) {
			var out session.ToolOutcome
			if err := f.Get(l.ctx, &out); err != nil {
				l.apply(session.TaskPollFailed{TurnID: turn, ToolCallID: call, Detail: errorText(err), Attempt: attemptOf(err, c.Limits.MaximumAttempts)})
				return
			}
			l.apply(session.TaskPollDone{TurnID: turn, ToolCallID: call, Outcome: out, NowMs: l.now()})
		})
	case session.StartWaitTimer:
		tctx, cancel := workflow.WithCancel(l.ctx)
		f := workflow.NewTimer(tctx, time.Duration(c.DelayMs)*time.Millisecond)
		turn, call := l.st.ActiveTurnID, c.ToolCallID
		l.addKeyed(f, session.StepKey(c, turn), cancel, func(f workflow.Future) {
			if err := f.Get(l.ctx, nil); err != nil {
				return
			}
			l.apply(session.WaitTimerFired{TurnID: turn, ToolCallID: call, NowMs: l.now()})
		})
	case session.CancelTimer:
		l.cancelTimer(c.InterruptID)
	case session.StartChild:
		l.startChild(c)
	case session.SendNotification:
		ctx := workflow.WithActivityOptions(l.stepCtx(l.st.ActiveTurnID), notificationOptions(c.ActivityID))
		f := workflow.ExecuteActivity(ctx, session.StepSendNotification, c.Input)
		in := c.Input
		l.add(f, func(f workflow.Future) {
			if err := f.Get(l.ctx, nil); err != nil {
				l.apply(session.NotificationFailed{Input: in, Reason: errorText(err)})
			}
		})
	case session.StartEscalationTimer:
		tctx, cancel := workflow.WithCancel(l.ctx)
		f := workflow.NewTimer(tctx, time.Duration(c.DelayMs)*time.Millisecond)
		id, rule := c.InterruptID, c.Rule
		l.addKeyed(f, session.StepKey(c, ""), cancel, func(f workflow.Future) {
			if err := f.Get(l.ctx, nil); err != nil {
				return // cancelled: the interrupt was answered
			}
			l.apply(session.EscalationTimerFired{InterruptID: id, Rule: rule})
		})
	case session.SignalChild:
		f := workflow.SignalExternalWorkflow(l.ctx, c.ChildSessionID, "", wire.SignalSubAgentControl, c.Control)
		child := c.ChildSessionID
		l.add(f, func(f workflow.Future) {
			if err := f.Get(l.ctx, nil); err != nil {
				workflow.GetLogger(l.ctx).Info("the sub-agent was not signalled (it has ended)", "child_session_id", child, "error", err)
			}
		})
	case session.ReportToParent:
		report := c.Report
		if in := report.Interrupt; in != nil && l.rt.Approvals != nil && in.Kind == string(session.InterruptApproval) && in.SessionID == l.st.SessionID {
			// The parent lists the approval with this session's digest, so
			// a resolve through it passes this session's check.
			signed := *in
			signed.Digest = l.approvalDigest(in.InterruptID)
			report.Interrupt = &signed
		}
		f := workflow.SignalExternalWorkflow(l.ctx, c.ParentSessionID, "", wire.SignalSubAgentReport, report)
		parent := c.ParentSessionID
		l.add(f, func(f workflow.Future) {
			if err := f.Get(l.ctx, nil); err != nil {
				workflow.GetLogger(l.ctx).Warn("the parent session was not told", "parent_session_id", parent, "kind", report.Kind, "error", err)
			}
		})
	case session.ReadSubAgentAnswer:
		ctx := workflow.WithLocalActivityOptions(l.stepCtx(c.Input.TurnID), localOptions())
		f := workflow.ExecuteLocalActivity(ctx, session.StepReadSubAgentAnswer, c.Input)
		in := c.Input
		l.add(f, func(f workflow.Future) {
			var out session.SubAgentAnswer
			bg := in.Note != ""
			if err := f.Get(l.ctx, &out); err != nil {
				l.apply(session.SubAgentAnswerRead{TurnID: in.TurnID, ToolCallID: in.ToolCallID, Error: errorText(err), Background: bg})
				return
			}
			l.apply(session.SubAgentAnswerRead{TurnID: in.TurnID, ToolCallID: in.ToolCallID, Output: out.Output, OutputRef: out.OutputRef, Background: bg})
		})
	case session.CancelStep:
		if turn, ok := session.ModelStepTurn(c.Key); ok && l.rt.ModelCalls != nil && !workflow.IsReplaying(l.ctx) {
			l.rt.ModelCalls.CancelModelCalls(l.st.SessionID, workflow.GetInfo(l.ctx).WorkflowExecution.RunID, turn)
		}
		for _, f := range l.futures {
			if f.key == c.Key && f.cancel != nil {
				// The future stays: it resolves with the Step's answer (a
				// tool Step) or as cancelled, which the session ignores.
				f.cancel()
			}
		}
	case session.CancelTask:
		ctx := workflow.WithActivityOptions(l.stepCtx(c.Input.TurnID), activityOptions(c.Limits, c.ActivityID))
		f := workflow.ExecuteActivity(ctx, wire.StepCancelToolTask, c.Input)
		turn, call := c.Input.TurnID, c.Input.ToolCall.ToolCallID
		l.add(f, func(f workflow.Future) {
			var out session.TaskCancelOutcome
			if err := f.Get(l.ctx, &out); err != nil {
				l.apply(session.TaskCancelDone{TurnID: turn, ToolCallID: call, Detail: errorText(err), Attempt: attemptOf(err, c.Limits.MaximumAttempts)})
				return
			}
			l.apply(session.TaskCancelDone{TurnID: turn, ToolCallID: call, Attempt: out.Attempt})
		})
	case session.RecordTurnFailure:
		opts := localOptions()
		if c.Input.Turn.Store != nil {
			// With the store, the failure record is where the turn's last
			// messages (the user's text, the note) are stored: wait out a
			// store outage of up to an hour rather than lose them.
			opts.ScheduleToCloseTimeout = time.Hour
			opts.RetryPolicy = &temporal.RetryPolicy{InitialInterval: time.Second, BackoffCoefficient: 2, MaximumInterval: time.Minute}
		}
		ctx := workflow.WithLocalActivityOptions(l.stepCtx(c.Input.Turn.TurnID), opts)
		step := wire.StepRecordTurnFailure
		if c.Step != "" {
			step = c.Step
		}
		f := workflow.ExecuteLocalActivity(ctx, step, c.Input)
		turn := c.Input.Turn.TurnID
		l.add(f, func(f workflow.Future) {
			var out session.TurnFailureOutput
			if err := f.Get(l.ctx, &out); err != nil {
				workflow.GetLogger(l.ctx).Warn("RecordTurnFailure could not reach the runner; storing the note as plain text", "error", err)
				l.apply(session.TurnFailureRecordFailed{TurnID: turn, Attempt: attemptOf(err, localOptions().RetryPolicy.MaximumAttempts)})
				return
			}
			l.apply(session.TurnFailureRecorded{TurnID: turn, Messages: out.Messages, Stored: out.Stored, Attempt: out.Attempt})
		})
	}
}

// startChild starts a sub-agent's session as a child workflow. The
// parent-close policy is explicit: a parent that ends (terminated, failed,
// timed out) asks its children to cancel, so none outlives it without an
// owner; a parent that closes (close_session) has settled its children's
// calls first.
func (l *loop) startChild(c session.StartChild) {
	opts := workflow.ChildWorkflowOptions{
		WorkflowID:        c.WorkflowID,
		ParentClosePolicy: enumspb.PARENT_CLOSE_POLICY_REQUEST_CANCEL,
		// A child ID is unique to its parent's call: an ID already used
		// fails the start, never attaches to another session.
		WorkflowIDReusePolicy: enumspb.WORKFLOW_ID_REUSE_POLICY_REJECT_DUPLICATE,
		// Lists show the parent; the child's title is its task.
		Memo: map[string]any{wire.MemoParent: l.st.SessionID, wire.MemoTitle: wire.TitleOf(c.Input.InitialMessage)},
	}
	ctx := workflow.WithChildOptions(l.ctx, opts)
	in := WorkflowInput{
		InitialMessage: c.Input.InitialMessage, APIToken: c.Input.APIToken,
		ActiveStepSearchMode: c.Input.ActiveStepSearchMode, SubAgent: c.Input.SubAgent,
	}
	if in.ActiveStepSearchMode == "" {
		in.ActiveStepSearchMode = wire.ActiveStepSearchDisabled
	}
	f := workflow.ExecuteChildWorkflow(ctx, c.FlowType, in)
	call, child := c.ToolCallID, c.WorkflowID
	l.add(f.GetChildWorkflowExecution(), func(started workflow.Future) {
		if err := started.Get(l.ctx, nil); err != nil {
			l.apply(session.ChildStartFailed{ToolCallID: call, Reason: errorText(err)})
		}
	})
	l.add(f, func(f workflow.Future) {
		reason := ""
		if err := f.Get(l.ctx, nil); err != nil {
			reason = childEnd(err)
		}
		l.apply(session.ChildClosed{ToolCallID: call, ChildSessionID: child, Reason: reason})
	})
}

// childEnd says how a child workflow ended without completing.
func childEnd(err error) string {
	var canceled *temporal.CanceledError
	var terminated *temporal.TerminatedError
	var timeout *temporal.TimeoutError
	switch {
	case errors.As(err, &terminated):
		return "it was terminated"
	case errors.As(err, &canceled):
		return "it was cancelled"
	case errors.As(err, &timeout):
		return "it timed out"
	}
	return errorText(err)
}

// stepCtx is the context a Step of turn starts with: under the turn's
// trace when tracing is on.
func (l *loop) stepCtx(turn string) workflow.Context {
	if l.rt.Tracer == nil || turn == "" {
		return l.ctx
	}
	return l.rt.Tracer.WithTurn(l.ctx, l.st.SessionID, workflow.GetInfo(l.ctx).FirstRunID, turn)
}

// The events that end a turn, and the outcome its root span records.
var turnEnds = map[string]string{
	wire.EventTurnCompleted: "completed",
	wire.EventTurnFailed:    "failed",
	wire.EventTurnCancelled: "cancelled",
	wire.EventTurnSteered:   "steered",
}

// traceTurnEnd writes the root span of the turn e ends.
func (l *loop) traceTurnEnd(e session.Event) {
	outcome := turnEnds[e.Type]
	if outcome == "" || e.TurnID == "" {
		return
	}
	info := workflow.GetInfo(l.ctx)
	end := workflow.Now(l.ctx)
	start := info.WorkflowStartTime
	if l.turn.TurnID == e.TurnID {
		start = time.UnixMilli(l.turn.StartedMs)
	}
	t := tracing.Turn{
		SessionID: l.st.SessionID, FirstRunID: info.FirstRunID, RunID: info.WorkflowExecution.RunID,
		TurnID: e.TurnID, Agent: l.st.Options.Agent, Start: start, End: end, Outcome: outcome,
	}
	t.TurnNumber, _ = strconv.Atoi(strings.TrimPrefix(e.TurnID, "turn-"))
	if outcome == "failed" {
		var p wire.TurnFailedPayload
		err := json.Unmarshal(e.Payload, &p) //workflowcheck:ignore
		if err == nil {
			t.Error = p.Error
		}
	}
	l.rt.Tracer.TurnEnded(t)
}

func (l *loop) cancelTimer(interruptID string) {
	for i, f := range l.futures {
		if f.interruptID == interruptID {
			f.cancel()
			l.futures = append(l.futures[:i:i], l.futures[i+1:]...)
			return
		}
	}
}

func (l *loop) upsertSteps() {
	if !l.st.Options.SearchAttributes {
		return
	}
	steps := l.st.StepTypes(l.legacySteps)
	if equalStrings(steps, l.steps) {
		return
	}
	l.steps = steps
	if err := workflow.UpsertTypedSearchAttributes(l.ctx, activeStepTypesKey.ValueSet(steps)); err != nil {
		workflow.GetLogger(l.ctx).Warn("upsert ActiveStepTypes failed", "error", err)
	}
}

func equalStrings(a, b []string) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}

// modelQueue puts a model call on the session's model task queue, if it
// has one.
func (l *loop) modelQueue(ctx workflow.Context) workflow.Context {
	if q := l.st.Options.ModelTaskQueue; q != "" {
		opts := workflow.GetActivityOptions(ctx)
		opts.TaskQueue = q
		return workflow.WithActivityOptions(ctx, opts)
	}
	return ctx
}

func activityOptions(lim session.Limits, id string) workflow.ActivityOptions {
	return workflow.ActivityOptions{
		ActivityID:             id,
		StartToCloseTimeout:    lim.StartToClose,
		HeartbeatTimeout:       lim.Heartbeat,
		ScheduleToCloseTimeout: lim.ScheduleToClose,
		RetryPolicy: &temporal.RetryPolicy{
			InitialInterval:    lim.InitialRetryWait,
			BackoffCoefficient: 2,
			MaximumAttempts:    lim.MaximumAttempts,
		},
	}
}

// notificationOptions bound a SendNotification Step: a few tries over ten
// minutes; a notification that cannot go out is reported, never waited on.
func notificationOptions(id string) workflow.ActivityOptions {
	return workflow.ActivityOptions{
		ActivityID:             id,
		StartToCloseTimeout:    time.Minute,
		HeartbeatTimeout:       10 * time.Second,
		ScheduleToCloseTimeout: 10 * time.Minute,
		RetryPolicy: &temporal.RetryPolicy{
			InitialInterval: 2 * time.Second, BackoffCoefficient: 2, MaximumInterval: time.Minute, MaximumAttempts: 5,
			NonRetryableErrorTypes: []string{wire.NotificationRefusedErrorType},
		},
	}
}

func localOptions() workflow.LocalActivityOptions {
	return workflow.LocalActivityOptions{
		StartToCloseTimeout:    time.Minute,
		ScheduleToCloseTimeout: 3 * time.Minute,
		RetryPolicy:            &temporal.RetryPolicy{InitialInterval: 200 * time.Millisecond, MaximumAttempts: 3},
	}
}

// toolNotStarted reports whether a failed tool Step never reached the tool
// in any attempt: its last heartbeat details lack the started marker.
func toolNotStarted(err error) bool {
	// A tool Step is cancelled only by a turn control, which reaches it
	// before its started marker or not at all (the tool then runs and the
	// Step returns its result).
	var canceled *temporal.CanceledError
	if errors.As(err, &canceled) {
		return true
	}
	var app *temporal.ApplicationError
	if errors.As(err, &app) && app.Type() == wire.ToolNotStartedErrorType {
		return true
	}
	var timeout *temporal.TimeoutError
	if errors.As(err, &timeout) {
		if !timeout.HasLastHeartbeatDetails() {
			return true
		}
		var hb session.StepHeartbeat
		if timeout.LastHeartbeatDetails(&hb) != nil {
			return false
		}
		return !hb.Started
	}
	return false
}

// stepStop says what stopped a failed Step: its retry policy's attempts,
// its schedule-to-close timeout, or neither.
func stepStop(err error) session.StepStop {
	var act *temporal.ActivityError
	if errors.As(err, &act) {
		switch act.RetryState() {
		case enumspb.RETRY_STATE_MAXIMUM_ATTEMPTS_REACHED:
			return session.StopAttempts
		case enumspb.RETRY_STATE_TIMEOUT:
			return session.StopTimeout
		}
	}
	var timeout *temporal.TimeoutError
	if errors.As(err, &timeout) && timeout.TimeoutType() == enumspb.TIMEOUT_TYPE_SCHEDULE_TO_CLOSE {
		return session.StopTimeout
	}
	return session.StopOther
}

// attemptOf returns the attempt of a Step that failed: from its error's
// details, or the heartbeat details of one that timed out; else the last
// attempt its retry policy allows when the retries ran out, or 1.
func attemptOf(err error, maxAttempts int32) int {
	var app *temporal.ApplicationError
	if errors.As(err, &app) && app.HasDetails() {
		var f session.StepFailure
		if app.Details(&f) == nil && f.Attempt > 0 {
			return f.Attempt
		}
	}
	var timeout *temporal.TimeoutError
	if errors.As(err, &timeout) && timeout.HasLastHeartbeatDetails() {
		var hb session.StepHeartbeat
		if timeout.LastHeartbeatDetails(&hb) == nil && hb.Attempt > 0 {
			return hb.Attempt
		}
	}
	var act *temporal.ActivityError
	if errors.As(err, &act) && act.RetryState() == enumspb.RETRY_STATE_MAXIMUM_ATTEMPTS_REACHED && maxAttempts > 0 {
		return int(maxAttempts)
	}
	return 1
}

// errorText renders an activity failure for people and models: the
// innermost cause, without the SDK's wrapping and error type.
func errorText(err error) string {
	var app *temporal.ApplicationError
	if errors.As(err, &app) {
		if cause := errors.Unwrap(app); cause != nil {
			return app.Message() + ": " + errorText(cause)
		}
		return app.Message()
	}
	var timeout *temporal.TimeoutError
	if errors.As(err, &timeout) {
		return "the step timed out (" + timeout.TimeoutType().String() + ")"
	}
	var canceled *temporal.CanceledError
	if errors.As(err, &canceled) {
		return "the step was cancelled"
	}
	return err.Error()
}

// signRaised adds the digest to an approval's interrupt_raised payload.
func (l *loop) signRaised(raw json.RawMessage) json.RawMessage {
	var p wire.InterruptRaisedPayload
	err := json.Unmarshal(raw, &p) //workflowcheck:ignore (a fixed struct; outside replay)
	if err != nil || p.Kind != string(session.InterruptApproval) {
		return raw
	}
	if p.Digest = l.approvalDigest(p.InterruptID); p.Digest == "" {
		return raw
	}
	b, err := json.Marshal(p) //workflowcheck:ignore (a fixed struct; outside replay)
	if err != nil {
		return raw
	}
	return b
}
