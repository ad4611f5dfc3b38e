package client

import (
	"context"
	"errors"
	"fmt"

	"go.temporal.io/sdk/temporal"

	"github.com/dex-agents/dex-agent-worker/wire"
)

// ErrSessionClosed reports a request that a session closed with
// CloseSession refuses: a new message, or a steer with new text.
var ErrSessionClosed = errors.New("session closed")

// SteerUserMessage steers the running turn with a queued message (by its
// ID, from wire.Snapshot.QueuedMessages) or with new text: the turn ends at its
// next safe Step boundary (a started model call or tool runs to its end;
// calls that have not started are recorded rejected), and the next turn
// starts with every steered message. While no turn runs, text is queued
// and starts the next turn at once. It returns false for a message that is
// no longer queued (reload the snapshot), blank text, or both or neither
// of messageID and text.
func (s *AgentSessionClient) SteerUserMessage(ctx context.Context, sessionID string, req wire.SteerUserMessageRequest) (bool, error) {
	if req.TextRef == "" && len(req.Text) > wire.MaxInlineMessageBytes {
		ref, preview, err := s.storeText(ctx, sessionID, req.Text)
		if err != nil {
			return false, sessionError(wire.UpdateSteerUserMessage, sessionID, err)
		}
		req.Text, req.TextRef = preview, ref
	}
	return s.update(ctx, sessionID, wire.UpdateSteerUserMessage, "", req)
}

// DeleteQueuedMessage deletes a queued message; false when it is no longer
// queued.
func (s *AgentSessionClient) DeleteQueuedMessage(ctx context.Context, sessionID, messageID string) (bool, error) {
	return s.update(ctx, sessionID, wire.UpdateDeleteQueuedMessage, "", wire.DeleteQueuedMessageRequest{MessageID: messageID})
}

// CancelTurn stops the turn turnID now (wire.SessionState.ActiveTurnID): a
// running model call is cancelled and its answer dropped, every wait is
// recorded rejected, started tool tasks are abandoned, and a tool that has
// started runs to its end. It returns true when the request is recorded
// (the turn may still complete first, when its model call already
// returned the final answer), also for a second call for the same turn;
// false when no turn is active or turnID names another turn.
func (s *AgentSessionClient) CancelTurn(ctx context.Context, sessionID, turnID string) (bool, error) {
	return s.update(ctx, sessionID, wire.UpdateCancelTurn, "", wire.CancelTurnRequest{TurnID: turnID})
}

// CloseSession closes the session: its running turn and the messages it
// already took still run, new messages are refused (ErrSessionClosed), and
// then its workflow completes. A closed session stays readable
// (GetAgentSnapshot, ListAgentMessages) for the namespace's retention.
func (s *AgentSessionClient) CloseSession(ctx context.Context, sessionID string) (bool, error) {
	return s.update(ctx, sessionID, wire.UpdateCloseSession, "", wire.CloseSessionRequest{})
}

// TerminateSession ends the session's workflow at once, whatever runs:
// running Steps are abandoned (a started write may have taken effect), and
// nothing is recorded for the turn. It is for operators; prefer CancelTurn
// and CloseSession. The session stays readable.
func (s *AgentSessionClient) TerminateSession(ctx context.Context, sessionID, reason string) error {
	if reason == "" {
		reason = "terminated by an operator"
	}
	if err := s.c.TerminateWorkflow(ctx, sessionID, "", reason); err != nil {
		return fmt.Errorf("terminate session %s: %w", sessionID, err)
	}
	return nil
}

// closedError turns a session's session_closed refusal into
// ErrSessionClosed.
func closedError(err error) error {
	var app *temporal.ApplicationError
	if errors.As(err, &app) && app.Type() == wire.SessionClosedErrorType {
		return fmt.Errorf("%w: %s", ErrSessionClosed, app.Message())
	}
	return err
}

// SetSessionMetadata sets what lists show of a session: its title, its
// archived flag, or both (see wire.SessionMetadataRequest). It never
// changes what the session does. A request that sets nothing or a blank
// title is refused with the reason.
func (s *AgentSessionClient) SetSessionMetadata(ctx context.Context, sessionID string, req wire.SessionMetadataRequest) (bool, error) {
	if err := wire.CheckSessionMetadata(req); err != nil {
		return false, sessionError(wire.UpdateSessionMetadata, sessionID, err)
	}
	var ok bool
	err := s.updateInto(ctx, sessionID, wire.UpdateSessionMetadata, "", req, &ok)
	return ok, err
}
