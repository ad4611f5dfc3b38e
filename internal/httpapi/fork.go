package httpapi

import (
	"context"
	"errors"
	"net/http"
	"strconv"
	"strings"

	"github.com/google/uuid"

	"github.com/dex-agents/dex-agent-worker/client"
)

// ForkRequest is the body of POST /v1/sessions/{id}/fork.
type ForkRequest struct {
	// AtSequence is the fork point: the fork begins with the session's
	// messages 1..at_sequence (0: none). Required.
	AtSequence *int64 `json:"at_sequence"`
	// SessionID is the fork's ID; empty generates one in the token's scope.
	SessionID string `json:"session_id,omitempty"`
	// InitialMessage, when set, starts the fork's first turn.
	InitialMessage string `json:"initial_message,omitempty"`
	// Rewind closes the original once the fork started.
	Rewind bool `json:"rewind,omitempty"`
}

// EditRequest is the body of POST /v1/sessions/{id}/messages/{sequence}/edit.
type EditRequest struct {
	Text string `json:"text"`
	// SessionID is the new branch's ID; empty generates one.
	SessionID string `json:"session_id,omitempty"`
	// Rewind closes the original once the new branch started.
	Rewind bool `json:"rewind,omitempty"`
}

// fork answers 201 {"session_id": "...", "parent_session_id": "...",
// "at_sequence": N}; 400 names the nearest valid fork points.
func (s *Server) fork(w http.ResponseWriter, r *http.Request, id string, tok *scopedToken) {
	var req ForkRequest
	if err := decodeBodyLimit(w, r, &req, MaxMessageBodyBytes); err != nil {
		s.fail(w, r, err)
		return
	}
	if req.AtSequence == nil || *req.AtSequence < 0 {
		s.fail(w, r, errorf(http.StatusBadRequest, "bad_request", `send {"at_sequence": N}, the last message the fork keeps (0 keeps none)`))
		return
	}
	at := *req.AtSequence
	if err := s.checkMessageSize("initial_message", len(req.InitialMessage)); err != nil {
		s.fail(w, r, err)
		return
	}
	s.startFork(w, r, id, tok, req.SessionID, func(ctx context.Context, fork string) (string, error) {
		return s.sessions.ForkSession(ctx, id, client.ForkOptions{AtSequence: at, SessionID: fork, InitialMessage: req.InitialMessage, APIToken: tok.Name, Rewind: req.Rewind})
	}, at)
}

// edit answers as fork: a fork before the user message at {sequence},
// whose first turn sends the new text.
func (s *Server) edit(w http.ResponseWriter, r *http.Request, id string, tok *scopedToken) {
	seq, err := strconv.ParseInt(r.PathValue("sequence"), 10, 64)
	if err != nil || seq < 1 {
		s.fail(w, r, errorf(http.StatusBadRequest, "bad_request", "the message sequence %q is not a number from 1", r.PathValue("sequence")))
		return
	}
	var req EditRequest
	if err := decodeBodyLimit(w, r, &req, MaxMessageBodyBytes); err != nil {
		s.fail(w, r, err)
		return
	}
	if strings.TrimSpace(req.Text) == "" {
		s.fail(w, r, errorf(http.StatusBadRequest, "bad_request", `send {"text": "..."}, the message's new text`))
		return
	}
	if err := s.checkMessageSize("text", len(req.Text)); err != nil {
		s.fail(w, r, err)
		return
	}
	s.startFork(w, r, id, tok, req.SessionID, func(ctx context.Context, fork string) (string, error) {
		return s.sessions.EditMessage(ctx, id, seq, req.Text, client.ForkOptions{SessionID: fork, APIToken: tok.Name, Rewind: req.Rewind})
	}, seq-1)
}

// startFork checks the new session's ID against the token, runs start and
// answers.
func (s *Server) startFork(w http.ResponseWriter, r *http.Request, id string, tok *scopedToken, fork string, start func(context.Context, string) (string, error), at int64) {
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
	got, err := start(ctx, fork)
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
	writeJSON(w, http.StatusCreated, map[string]any{"session_id": got, "parent_session_id": id, "at_sequence": at})
}

// branches answers 200 with wire.Branches: the forks the token may see.
func (s *Server) branches(w http.ResponseWriter, r *http.Request, id string, tok *scopedToken) {
	ctx, cancel := context.WithTimeout(r.Context(), s.opts.UpdateTimeout)
	defer cancel()
	b, err := s.sessions.ListBranches(ctx, id)
	if err != nil {
		s.fail(w, r, err)
		return
	}
	if !tok.allowsSession(b.RootSessionID) {
		// The root is another scope's: the caller sees its own forks only.
		b.RootSessionID = ""
	}
	visible := b.Branches[:0]
	for _, br := range b.Branches {
		if tok.allowsSession(br.SessionID) {
			if !tok.allowsSession(br.ParentSessionID) {
				br.ParentSessionID = "" // another scope's session
			}
			visible = append(visible, br)
		}
	}
	b.Branches = visible
	writeJSON(w, http.StatusOK, b)
}
