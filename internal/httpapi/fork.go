package httpapi

import (
	"context"
	"errors"
	"net/http"

	"github.com/google/uuid"

	"github.com/dex-agents/dex-agent-worker/client"
)

// ForkRequest is the body of POST /v1/sessions/{id}/fork.
type ForkRequest struct {
	// AtSequence is the fork point: the fork begins with the session's
	// messages 1..at_sequence.
	AtSequence int64 `json:"at_sequence"`
	// SessionID is the fork's ID; empty generates one in the token's scope.
	SessionID string `json:"session_id,omitempty"`
	// InitialMessage, when set, starts the fork's first turn.
	InitialMessage string `json:"initial_message,omitempty"`
}

// fork answers 201 {"session_id": "...", "parent_session_id": "...",
// "at_sequence": N}; 400 names the nearest valid fork points.
func (s *Server) fork(w http.ResponseWriter, r *http.Request, id string, tok *scopedToken) {
	var req ForkRequest
	if err := decodeBodyLimit(w, r, &req, MaxMessageBodyBytes); err != nil {
		s.fail(w, r, err)
		return
	}
	if req.AtSequence < 1 {
		s.fail(w, r, errorf(http.StatusBadRequest, "bad_request", `send {"at_sequence": N}, the last message the fork keeps (sequences start at 1)`))
		return
	}
	if err := s.checkMessageSize("initial_message", len(req.InitialMessage)); err != nil {
		s.fail(w, r, err)
		return
	}
	fork := req.SessionID
	if fork == "" {
		fork = sessionIDIn(tok.SessionPrefix, "session-"+uuid.NewString())
	}
	if err := checkSessionID(fork); err != nil {
		s.fail(w, r, err)
		return
	}
	if !tok.allowsSession(fork) {
		s.fail(w, r, errorf(http.StatusForbidden, "forbidden", "session IDs of this token must %s", tok.scopeRule()))
		return
	}
	ctx, cancel := context.WithTimeout(r.Context(), s.opts.UpdateTimeout)
	defer cancel()
	got, err := s.sessions.ForkSession(ctx, id, client.ForkOptions{AtSequence: req.AtSequence, SessionID: fork, InitialMessage: req.InitialMessage, APIToken: tok.Name})
	switch {
	case errors.Is(err, client.ErrForkPoint):
		s.fail(w, r, errorf(http.StatusBadRequest, "invalid_fork_point", "%s", err.Error()))
		return
	case errors.Is(err, client.ErrSessionExists):
		s.fail(w, r, errorf(http.StatusConflict, "conflict", "session %s already exists", fork))
		return
	case err != nil:
		s.fail(w, r, err)
		return
	}
	s.cacheMu.Lock()
	if agent, ok := s.agentOf[id]; ok {
		s.agentOf[got] = agent
	}
	s.cacheMu.Unlock()
	writeJSON(w, http.StatusCreated, map[string]any{"session_id": got, "parent_session_id": id, "at_sequence": req.AtSequence})
}
