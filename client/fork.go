package client

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"strings"

	"github.com/google/uuid"
	enumspb "go.temporal.io/api/enums/v1"
	"go.temporal.io/api/serviceerror"

	"github.com/dex-agents/dex-agent-worker/pluginapi"
	"github.com/dex-agents/dex-agent-worker/wire"
)

// MessageForker is a MessageStore that can fork a session's messages
// (transcript.Reader is one): it shares the parent's stored messages
// 1..at with fork, copies the blobs named, and returns the fork's start.
type MessageForker interface {
	MessageStore
	ForkMessages(ctx context.Context, fork, parent string, at int64, blobs []string) (wire.ForkStart, error)
	// DropFork removes what ForkMessages stored for a fork whose session
	// never started.
	DropFork(ctx context.Context, fork string) error
	// ForkOrigin returns the parent and fork point of a fork, and false
	// for a session that is not one.
	ForkOrigin(ctx context.Context, session string) (wire.ForkOrigin, bool, error)
	// ForkBranches lists the root of session's conversation and at most
	// limit forks of it.
	ForkBranches(ctx context.Context, session string, limit int) (wire.Branches, error)
}

// ForkOptions name a fork.
type ForkOptions struct {
	// AtSequence is the fork point: the fork's transcript begins as the
	// parent's messages 1..AtSequence. Required.
	AtSequence int64
	// SessionID is the fork's ID; empty generates "session-<uuid>". A fork
	// repeated with the same ID and point returns the same fork.
	SessionID string
	// InitialMessage, when not blank, starts the fork's first turn (edit
	// and resend: fork before a user message and send the new text).
	InitialMessage string
	// APIToken names the API token on whose behalf the fork starts.
	APIToken string
	// Rewind closes the parent once the fork started (close_session: its
	// running turn and queued messages still finish).
	Rewind bool
}

// ErrForkPoint reports a fork point that cannot be forked at; its text
// names the nearest points that can.
var ErrForkPoint = errors.New("invalid fork point")

// forkScan is how many messages around a fork point are read to check it
// (the next one decides) and, when it is refused, to find the nearest
// valid points (forkScanWide).
const (
	forkScan     = 1
	forkScanWide = 64
)

// ForkSession starts a new session whose transcript is the parent's
// messages 1..opts.AtSequence, on the parent's agent. The message store
// shares the parent's stored chunks with it, so a fork costs the same at
// any depth. The fork inherits the transcript, the context summary that
// ends at or before the fork point, and the session settings; never a
// pending approval, a queued message, a running turn, the usage or the
// plan. No tool call runs again: calls up to the fork point are in the
// transcript with their results.
//
// A fork point between a tool call and its result is ErrForkPoint, naming
// the nearest valid points; so is one whose messages retention deleted
// while a summary covers past it. The client needs a MessageForker
// (WithMessages).
func (s *AgentSessionClient) ForkSession(ctx context.Context, parentID string, opts ForkOptions) (string, error) {
	forker, ok := s.messages.(MessageForker)
	if !ok {
		return "", fmt.Errorf("fork session %s: %w: forking needs the message store (WithMessages with a store that forks)", parentID, ErrNoMessageStore)
	}
	if opts.AtSequence < 0 {
		return "", fmt.Errorf("fork session %s: %w: at_sequence %d (0 forks before the first message)", parentID, ErrForkPoint, opts.AtSequence)
	}
	var p wire.ForkPoint
	if err := s.query(ctx, parentID, wire.QueryForkPoint, &p, wire.ForkPointRequest{AtSequence: opts.AtSequence}); err != nil {
		return "", err
	}
	if err := s.checkForkPoint(ctx, parentID, p, opts.AtSequence); err != nil {
		return "", fmt.Errorf("fork session %s at %d: %w", parentID, opts.AtSequence, err)
	}
	desc, err := s.c.DescribeWorkflowExecution(ctx, parentID, "")
	if err != nil {
		return "", sessionError("describe", parentID, err)
	}
	flowType := desc.GetWorkflowExecutionInfo().GetType().GetName()
	// A branch keeps the conversation's title.
	var title string
	if p := desc.GetWorkflowExecutionInfo().GetMemo().GetFields()[wire.MemoTitle]; p != nil {
		_ = DataConverter().FromPayload(p, &title)
	}
	id := opts.SessionID
	if id == "" {
		id = "session-" + uuid.NewString()
	} else {
		// A session of that ID: the same fork made before, or another
		// session, whose ID the store must not share messages with.
		var nf *serviceerror.NotFound
		_, derr := s.c.DescribeWorkflowExecution(ctx, id, "")
		switch {
		case derr == nil:
			o, ok, err := forker.ForkOrigin(ctx, id)
			if err != nil {
				return "", err
			}
			if ok && o.ParentSessionID == parentID && o.AtSequence == opts.AtSequence {
				// The same fork, made before (its first message too).
				if opts.Rewind {
					if _, err := s.CloseSession(ctx, parentID); err != nil {
						return id, fmt.Errorf("fork %s exists; closing the parent %s to rewind failed (close it again): %w", id, parentID, err)
					}
				}
				return id, nil
			}
			return "", fmt.Errorf("%w: %s", ErrSessionExists, id)
		case !errors.As(derr, &nf):
			return "", sessionError("describe", id, derr)
		}
	}
	var blobs []string
	if p.Summary != nil && p.Summary.TextRef != "" {
		blobs = append(blobs, p.Summary.TextRef)
	}
	start, err := forker.ForkMessages(ctx, id, parentID, opts.AtSequence, blobs)
	if err != nil {
		// The store may have shared the messages before the step that
		// failed (a summary's text to copy).
		return "", s.dropFork(ctx, forker, id, fmt.Errorf("fork session %s at %d into %s: %w", parentID, opts.AtSequence, id, err))
	}
	// The parent's retention may have moved since the query: the fork
	// must not miss a message its summary does not cover.
	covered := max(p.FirstSequence, 1)
	if p.Summary != nil {
		covered = max(covered, p.Summary.LastSequence+1)
	}
	if opts.AtSequence > 0 && start.FromSequence > covered {
		return "", s.dropFork(ctx, forker, id, fmt.Errorf("fork session %s at %d: %w: retention deleted messages before %d while the fork was made; fork again",
			parentID, opts.AtSequence, ErrForkPoint, start.FromSequence))
	}
	start.Summary = p.Summary
	_, _, err = s.start(ctx, StartSessionOptions{
		FlowType: flowType, SessionID: id, InitialMessage: opts.InitialMessage, SessionSettings: p.SessionSettings,
		APIToken: opts.APIToken, RequestID: "fork-" + parentID + "-" + strconv.FormatInt(opts.AtSequence, 10) + "-" + id,
		fork: &start, title: title,
	}, enumspb.WORKFLOW_ID_CONFLICT_POLICY_FAIL)
	if err != nil && !errors.Is(err, ErrSessionExists) {
		return "", s.dropFork(ctx, forker, id, err)
	}
	if err != nil || !opts.Rewind {
		return id, err
	}
	if _, err := s.CloseSession(ctx, parentID); err != nil {
		return id, fmt.Errorf("fork %s started; closing the parent %s to rewind failed (close it again): %w", id, parentID, err)
	}
	return id, nil
}

// dropFork removes what the store shared with fork, whose start failed
// with err, once the engine says it has no session of that ID (a start
// whose answer was lost may have started it). It returns err.
func (s *AgentSessionClient) dropFork(ctx context.Context, forker MessageForker, fork string, err error) error {
	var nf *serviceerror.NotFound
	if _, derr := s.c.DescribeWorkflowExecution(ctx, fork, ""); errors.As(derr, &nf) {
		if _, found, oerr := forker.ForkOrigin(ctx, fork); oerr == nil && found {
			if drop := forker.DropFork(ctx, fork); drop != nil {
				return fmt.Errorf("%w (and the messages shared with it could not be dropped: %v)", err, drop)
			}
		}
	}
	return err
}

// EditMessage is edit and resend: it forks the session before its user
// message at sequence and starts the fork's first turn with text instead.
// A sequence that is not a user message is ErrForkPoint.
func (s *AgentSessionClient) EditMessage(ctx context.Context, sessionID string, sequence int64, text string, opts ForkOptions) (string, error) {
	if s.messages == nil {
		return "", fmt.Errorf("edit message %d of %s: %w", sequence, sessionID, ErrNoMessageStore)
	}
	if strings.TrimSpace(text) == "" {
		return "", fmt.Errorf("edit message %d of %s: the new text is blank", sequence, sessionID)
	}
	var p wire.ForkPoint
	if err := s.query(ctx, sessionID, wire.QueryForkPoint, &p, wire.ForkPointRequest{AtSequence: sequence - 1}); err != nil {
		return "", err
	}
	if sequence < p.FirstSequence || sequence > p.LastSequence {
		return "", fmt.Errorf("edit message %d of %s: %w: the session holds messages %d to %d", sequence, sessionID, ErrForkPoint, p.FirstSequence, p.LastSequence)
	}
	msgs, err := s.messages.ReadMessages(ctx, sessionID, sequence, max(p.WindowFirstSequence, sequence), sequence)
	if err != nil {
		return "", fmt.Errorf("edit message %d of %s: %w", sequence, sessionID, err)
	}
	if len(msgs) != 1 || msgs[0].Role != pluginapi.RoleUser {
		return "", fmt.Errorf("edit message %d of %s: %w: only a user message can be edited", sequence, sessionID, ErrForkPoint)
	}
	opts.AtSequence, opts.InitialMessage = sequence-1, text
	return s.ForkSession(ctx, sessionID, opts)
}

// MaxBranches is the most forks ListBranches returns.
const MaxBranches = 200

// ListBranches lists the conversation a session belongs to: its root and
// the forks of it and of its forks, oldest first, at most MaxBranches.
func (s *AgentSessionClient) ListBranches(ctx context.Context, sessionID string) (wire.Branches, error) {
	forker, ok := s.messages.(MessageForker)
	if !ok {
		return wire.Branches{}, fmt.Errorf("list the branches of %s: %w", sessionID, ErrNoMessageStore)
	}
	return forker.ForkBranches(ctx, sessionID, MaxBranches)
}

// checkForkPoint refuses a fork point between a tool call and its result,
// past the last message, or before messages retention deleted.
func (s *AgentSessionClient) checkForkPoint(ctx context.Context, parentID string, p wire.ForkPoint, at int64) error {
	switch {
	case !p.Store:
		return errors.New("the session keeps no messages in the message store; only such sessions fork")
	case at == 0:
		// Before the first message: the fork holds none.
		return nil
	case at > p.LastSequence:
		return fmt.Errorf("%w: the session has %d messages", ErrForkPoint, p.LastSequence)
	case at < p.FirstSequence:
		return fmt.Errorf("%w: messages before %d were deleted by retention; the earliest fork point is %d", ErrForkPoint, p.FirstSequence, max(p.FirstSequence, p.SummaryLastSequence))
	case p.SummaryAfter && p.FirstSequence > 1:
		return fmt.Errorf("%w: the context summary covers messages up to %d and retention deleted those before %d, so a fork before %d would miss them; the earliest fork point is %d",
			ErrForkPoint, p.SummaryLastSequence, p.FirstSequence, p.SummaryLastSequence, p.SummaryLastSequence)
	}
	roles := map[int64]pluginapi.Role{}
	var from, to int64
	read := func(scan int64) error {
		from, to = max(p.FirstSequence, at-scan), min(p.LastSequence, at+scan)
		msgs, err := s.messages.ReadMessages(ctx, parentID, from, min(max(p.WindowFirstSequence, from), to+1), to)
		if err != nil {
			return fmt.Errorf("read messages %d..%d around the fork point: %w", from, to, err)
		}
		for _, m := range msgs {
			roles[m.Sequence] = m.Role
		}
		return nil
	}
	valid := func(k int64) bool {
		if k == p.LastSequence {
			return !p.ResultsPending
		}
		role, ok := roles[k+1]
		return ok && role != pluginapi.RoleTool
	}
	if err := read(forkScan); err != nil {
		return err
	}
	if valid(at) {
		return nil
	}
	if err := read(forkScanWide); err != nil {
		return err
	}
	var near []string
	for k := at - 1; k >= from; k-- {
		if valid(k) {
			near = append(near, strconv.FormatInt(k, 10))
			break
		}
	}
	for k := at + 1; k <= to; k++ {
		if valid(k) {
			near = append(near, strconv.FormatInt(k, 10))
			break
		}
	}
	hint := "no valid point is near it"
	if len(near) > 0 {
		hint = "the nearest valid points are " + strings.Join(near, " and ")
	}
	return fmt.Errorf("%w: message %d is followed by the result of a tool call it holds (a fork there would hold calls without results); %s", ErrForkPoint, at, hint)
}
