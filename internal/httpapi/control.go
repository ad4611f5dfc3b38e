package httpapi

import (
	"go.temporal.io/api/serviceerror"

	"context"
	"errors"
	"net/http"
	"strings"

	"github.com/dex-agents/dex-agent-worker/client"
	"github.com/dex-agents/dex-agent-worker/internal/events"
	"github.com/dex-agents/dex-agent-worker/wire"
)

// Turn control and the session lifecycle: steer, delete a queued message,
// cancel the running turn, close, and (operator tokens only) terminate.

// SteerRequest is the body of POST /v1/sessions/{id}/steer: exactly one of
// message_id (a queued message, from the snapshot's queued_messages) and
// text.
type SteerRequest struct {
	MessageID string `json:"message_id,omitempty"`
	Text      string `json:"text,omitempty"`
	PlanMode  bool   `json:"plan_mode,omitempty"`
}

// CancelRequest is the body of POST /v1/sessions/{id}/cancel.
type CancelRequest struct {
	TurnID string `json:"turn_id"`
}

// TerminateRequest is the body of POST /v1/sessions/{id}/terminate.
type TerminateRequest struct {
	Reason string `json:"reason,omitempty"`
}

// steer answers 200 {"accepted": bool}: false for a message no longer
// queued, blank text, or while no turn runs for a message ID.
func (s *Server) steer(w http.ResponseWriter, r *http.Request, id string) {
	var req SteerRequest
	if err := decodeBodyLimit(w, r, &req, MaxMessageBodyBytes); err != nil {
		s.fail(w, r, err)
		return
	}
	if (req.MessageID == "") == (req.Text == "") {
		s.fail(w, r, errorf(http.StatusBadRequest, "bad_request", `send exactly one of "message_id" (a queued message) and "text"`))
		return
	}
	if err := s.checkMessageSize("the message", len(req.Text)); err != nil {
		s.fail(w, r, err)
		return
	}
	ctx, cancel := context.WithTimeout(r.Context(), s.opts.UpdateTimeout)
	defer cancel()
	ok, err := s.sessions.SteerUserMessage(ctx, id, wire.SteerUserMessageRequest{MessageID: req.MessageID, Text: req.Text, PlanMode: req.PlanMode})
	if err != nil {
		s.failControl(w, r, id, "reload the snapshot before you retry: a steer by text may have been applied", err)
		return
	}
	writeJSON(w, http.StatusOK, map[string]bool{"accepted": ok})
}

// deleteQueued answers 200 {"deleted": bool}.
func (s *Server) deleteQueued(w http.ResponseWriter, r *http.Request, id string) {
	msg := r.PathValue("message_id")
	if msg == "" || len(msg) > 256 {
		s.fail(w, r, errorf(http.StatusBadRequest, "bad_request", "message ID must be 1 to 256 characters"))
		return
	}
	ctx, cancel := context.WithTimeout(r.Context(), s.opts.UpdateTimeout)
	defer cancel()
	ok, err := s.sessions.DeleteQueuedMessage(ctx, id, msg)
	if err != nil {
		s.failControl(w, r, id, "a retry is safe", err)
		return
	}
	writeJSON(w, http.StatusOK, map[string]bool{"deleted": ok})
}

// cancelTurn answers 200 {"accepted": bool}: true when the cancel is
// recorded (also for a second cancel of the same turn).
func (s *Server) cancelTurn(w http.ResponseWriter, r *http.Request, id string) {
	var req CancelRequest
	if err := decodeBody(w, r, &req); err != nil {
		s.fail(w, r, err)
		return
	}
	if strings.TrimSpace(req.TurnID) == "" {
		s.fail(w, r, errorf(http.StatusBadRequest, "bad_request", `send {"turn_id": "..."}, the running turn (snapshot.state.active_turn_id)`))
		return
	}
	ctx, cancel := context.WithTimeout(r.Context(), s.opts.UpdateTimeout)
	defer cancel()
	ok, err := s.sessions.CancelTurn(ctx, id, req.TurnID)
	if err != nil {
		s.failControl(w, r, id, "a retry is safe (a second cancel of a turn changes nothing)", err)
		return
	}
	writeJSON(w, http.StatusOK, map[string]bool{"accepted": ok})
}

// closeSession answers 200 {"accepted": bool}.
func (s *Server) closeSession(w http.ResponseWriter, r *http.Request, id string) {
	if err := decodeOptionalBody(w, r); err != nil {
		s.fail(w, r, err)
		return
	}
	ctx, cancel := context.WithTimeout(r.Context(), s.opts.UpdateTimeout)
	defer cancel()
	ok, err := s.sessions.CloseSession(ctx, id)
	if err != nil {
		s.failControl(w, r, id, "a retry is safe", err)
		return
	}
	writeJSON(w, http.StatusOK, map[string]bool{"accepted": ok})
}

// terminate ends the session's workflow at once; operator tokens only.
func (s *Server) terminate(w http.ResponseWriter, r *http.Request, id string, tok *scopedToken) {
	if !tok.Operator {
		s.fail(w, r, errorf(http.StatusForbidden, "forbidden", "terminate needs an operator token (operator: true in http.auth.tokens)"))
		return
	}
	var req TerminateRequest
	if err := decodeBody(w, r, &req); err != nil {
		s.fail(w, r, err)
		return
	}
	if len(req.Reason) > 1024 {
		s.fail(w, r, errorf(http.StatusBadRequest, "bad_request", "reason is over 1024 bytes"))
		return
	}
	ctx, cancel := context.WithTimeout(r.Context(), s.opts.UpdateTimeout)
	defer cancel()
	reason := req.Reason
	if reason == "" {
		reason = "terminated through the HTTP API by token " + tok.Name
	}
	if err := s.sessions.TerminateSession(ctx, id, reason); err != nil {
		s.fail(w, r, updateError(id, "a retry is safe", err))
		return
	}
	s.log.Info("session terminated", "session_id", id, "token", tok.Name)
	if f, ok := s.opts.Broker.(events.ChangeFeed); ok {
		// Workflow code does not run for a terminated session: say it here.
		f.Announce(events.Change{SessionID: id, Type: wire.ChangeSessionEnded})
	}
	writeJSON(w, http.StatusOK, map[string]bool{"terminated": true})
}

// failControl answers the error of a turn control or lifecycle update: 409
// session_closed for a closed session.
func (s *Server) failControl(w http.ResponseWriter, r *http.Request, id, retry string, err error) {
	var nf *serviceerror.NotFound
	if errors.Is(err, client.ErrSessionClosed) && !errors.As(err, &nf) {
		no := false
		s.fail(w, r, &apiError{status: http.StatusConflict, code: "session_closed", msg: "session " + id + " was closed and takes no new messages", mayStillApply: &no})
		return
	}
	s.failUpdate(w, r, id, retry, err)
}

// decodeOptionalBody accepts an empty body or an empty JSON object.
func decodeOptionalBody(w http.ResponseWriter, r *http.Request) error {
	if r.ContentLength == 0 {
		return nil
	}
	var v struct{}
	return decodeBody(w, r, &v)
}
