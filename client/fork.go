package client

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"strings"

	"github.com/google/uuid"
	enumspb "go.temporal.io/api/enums/v1"

	"github.com/dex-agents/dex-agent-worker/pluginapi"
	"github.com/dex-agents/dex-agent-worker/wire"
)

// MessageForker is a MessageStore that can fork a session's messages
// (transcript.Reader is one): it shares the parent's stored messages
// 1..at with fork, copies the blobs named, and returns the fork's start.
type MessageForker interface {
	MessageStore
	ForkMessages(ctx context.Context, fork, parent string, at int64, blobs []string) (wire.ForkStart, error)
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
}

// ErrForkPoint reports a fork point that cannot be forked at; its text
// names the nearest points that can.
var ErrForkPoint = errors.New("invalid fork point")

// forkScan is how many messages around a fork point are read to check it
// and to find the nearest valid points.
const forkScan = 64

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
	if opts.AtSequence < 1 {
		return "", fmt.Errorf("fork session %s: %w: at_sequence %d (sequences start at 1)", parentID, ErrForkPoint, opts.AtSequence)
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
	id := opts.SessionID
	if id == "" {
		id = "session-" + uuid.NewString()
	}
	var blobs []string
	if p.Summary != nil && p.Summary.TextRef != "" {
		blobs = append(blobs, p.Summary.TextRef)
	}
	start, err := forker.ForkMessages(ctx, id, parentID, opts.AtSequence, blobs)
	if err != nil {
		return "", fmt.Errorf("fork session %s at %d into %s: %w", parentID, opts.AtSequence, id, err)
	}
	start.Summary = p.Summary
	id, _, err = s.start(ctx, StartSessionOptions{
		FlowType: flowType, SessionID: id, InitialMessage: opts.InitialMessage, SessionSettings: p.SessionSettings,
		APIToken: opts.APIToken, RequestID: "fork-" + parentID + "-" + strconv.FormatInt(opts.AtSequence, 10) + "-" + id,
		fork: &start,
	}, enumspb.WORKFLOW_ID_CONFLICT_POLICY_FAIL)
	return id, err
}

// checkForkPoint refuses a fork point between a tool call and its result,
// past the last message, or before messages retention deleted.
func (s *AgentSessionClient) checkForkPoint(ctx context.Context, parentID string, p wire.ForkPoint, at int64) error {
	switch {
	case !p.Store:
		return errors.New("the session keeps no messages in the message store; only such sessions fork")
	case at > p.LastSequence:
		return fmt.Errorf("%w: the session has %d messages", ErrForkPoint, p.LastSequence)
	case at < p.FirstSequence:
		return fmt.Errorf("%w: messages before %d were deleted by retention; the earliest fork point is %d", ErrForkPoint, p.FirstSequence, max(p.FirstSequence, p.SummaryLastSequence))
	case p.SummaryAfter && p.FirstSequence > 1:
		return fmt.Errorf("%w: the context summary covers messages up to %d and retention deleted those before %d, so a fork before %d would miss them; the earliest fork point is %d",
			ErrForkPoint, p.SummaryLastSequence, p.FirstSequence, p.SummaryLastSequence, p.SummaryLastSequence)
	}
	from := max(p.FirstSequence, at-forkScan)
	to := min(p.LastSequence, at+forkScan)
	msgs, err := s.messages.ReadMessages(ctx, parentID, from, min(max(p.WindowFirstSequence, from), to+1), to)
	if err != nil {
		return fmt.Errorf("read messages %d..%d around the fork point: %w", from, to, err)
	}
	roles := make(map[int64]pluginapi.Role, len(msgs))
	for _, m := range msgs {
		roles[m.Sequence] = m.Role
	}
	valid := func(k int64) bool {
		if k == p.LastSequence {
			return !p.ToolsRunning
		}
		role, ok := roles[k+1]
		return ok && role != pluginapi.RoleTool
	}
	if valid(at) {
		return nil
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
