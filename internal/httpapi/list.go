package httpapi

import (
	"context"
	"errors"
	"net/http"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"sync"

	"github.com/dex-agents/dex-agent-worker/client"
	"github.com/dex-agents/dex-agent-worker/wire"
)

// sessionListQuery is the parsed query of GET /v1/sessions.
type sessionListQuery struct {
	// Pending: include=pending, each waiting session's pending interrupts.
	Pending    bool
	WaitingFor []string
	Agent      string // "" for every agent the token may use
	Status     string // wire.ListRunning or wire.ListAll
	PageSize   int
	PageToken  string
}

// parseSessionListQuery parses GET /v1/sessions'
// ?waiting_for=approval,question&agent=NAME&status=all&page_size=N&page_token=T.
// waiting_for may repeat (its lists add up); the others are given once.
func parseSessionListQuery(q url.Values) (sessionListQuery, error) {
	out := sessionListQuery{Status: wire.ListRunning, PageSize: wire.DefaultListPageSize}
	for key, vs := range q {
		switch key {
		case "waiting_for":
		case "agent", "status", "page_size", "page_token", "include":
			if len(vs) > 1 {
				return out, errorf(http.StatusBadRequest, "bad_request", "give %s once", key)
			}
		default:
			return out, errorf(http.StatusBadRequest, "bad_request", "unknown query parameter %q (want waiting_for, agent, status, page_size, page_token, include)", key)
		}
	}
	for _, v := range q["waiting_for"] {
		kinds, err := wire.ParseWaitingFor(v)
		if err != nil {
			return out, errorf(http.StatusBadRequest, "bad_request", "%s", err.Error())
		}
		if v != "" && len(kinds) == 0 {
			return out, errorf(http.StatusBadRequest, "bad_request", "waiting_for is blank: want one or more of %s", strings.Join(wire.WaitingForKinds(), ", "))
		}
		for _, k := range kinds {
			if !slices.Contains(out.WaitingFor, k) {
				out.WaitingFor = append(out.WaitingFor, k)
			}
		}
	}
	if q.Has("agent") {
		out.Agent = q.Get("agent")
		if out.Agent == "" {
			return out, errorf(http.StatusBadRequest, "bad_request", "agent is empty: name an agent, or leave agent out for all of them")
		}
	}
	switch v := q.Get("status"); v {
	case "", wire.ListRunning:
	case wire.ListAll:
		out.Status = wire.ListAll
	default:
		return out, errorf(http.StatusBadRequest, "bad_request", "status %q: want %q (the default) or %q", v, wire.ListRunning, wire.ListAll)
	}
	switch v := q.Get("include"); v {
	case "":
	case "pending":
		out.Pending = true
	default:
		return out, errorf(http.StatusBadRequest, "bad_request", "include %q: want \"pending\"", v)
	}
	if q.Has("page_size") {
		n, err := strconv.Atoi(q.Get("page_size"))
		if err != nil || n < 1 || n > wire.MaxListPageSize {
			return out, errorf(http.StatusBadRequest, "bad_request", "page_size must be an integer from 1 to %d", wire.MaxListPageSize)
		}
		out.PageSize = n
	}
	if q.Has("page_token") {
		out.PageToken = q.Get("page_token")
		if err := client.CheckPageToken(out.PageToken); err != nil || out.PageToken == "" {
			return out, errorf(http.StatusBadRequest, "bad_request", "page_token is not a next_page_token of this list")
		}
	}
	return out, nil
}

// listSessions answers GET /v1/sessions: the sessions the token may reach
// (its agents, its session prefix), newest first, from Temporal's
// visibility store.
func (s *Server) listSessions(w http.ResponseWriter, r *http.Request, tok *scopedToken) {
	q, err := parseSessionListQuery(r.URL.Query())
	if err != nil {
		s.fail(w, r, err)
		return
	}
	if page, ok := s.sessionsPage(w, r, tok, q); ok {
		writeJSON(w, http.StatusOK, page)
	}
}

// sessionsPage reads one page of the sessions q asks for, within the
// token's scope; false when it answered with an error.
func (s *Server) sessionsPage(w http.ResponseWriter, r *http.Request, tok *scopedToken, q sessionListQuery) (wire.SessionsPage, bool) {
	// The token's scope is part of the visibility query: only the flow
	// types of the agents it may use, only IDs inside its prefix.
	var flowTypes []string
	if q.Agent != "" {
		a, ok := s.byName[q.Agent]
		if !ok {
			s.fail(w, r, errorf(http.StatusBadRequest, "bad_request", "unknown agent %q (%s)", q.Agent, s.startableAgents(tok)))
			return wire.SessionsPage{}, false
		}
		if !tok.allowsAgent(a.Name) {
			s.fail(w, r, errorf(http.StatusForbidden, "forbidden", "this token may not list sessions of agent %s", a.Name))
			return wire.SessionsPage{}, false
		}
		flowTypes = []string{a.FlowType}
	} else {
		for _, a := range s.opts.Agents {
			if tok.allowsAgent(a.Name) {
				flowTypes = append(flowTypes, a.FlowType)
			}
		}
	}
	if len(flowTypes) == 0 {
		return wire.SessionsPage{Sessions: []wire.SessionSummary{}}, true
	}
	ctx, cancel := context.WithTimeout(r.Context(), s.opts.UpdateTimeout)
	defer cancel()
	page, err := s.sessions.ListSessions(ctx, client.ListSessionsOptions{
		WaitingFor:    q.WaitingFor,
		FlowTypes:     flowTypes,
		SessionPrefix: tok.SessionPrefix,
		Status:        q.Status,
		PageSize:      q.PageSize,
		PageToken:     q.PageToken,
	})
	switch {
	case errors.Is(err, client.ErrInvalidPageToken):
		reason := err.Error()
		if _, after, ok := strings.Cut(reason, client.ErrInvalidPageToken.Error()+": "); ok {
			reason = after
		}
		s.fail(w, r, errorf(http.StatusBadRequest, "bad_request", "page_token is not a next_page_token of this list: %s", reason))
		return wire.SessionsPage{}, false
	case errors.Is(err, client.ErrInvalidListOptions):
		s.fail(w, r, errorf(http.StatusBadRequest, "bad_request", "%s", strings.TrimPrefix(err.Error(), client.ErrInvalidListOptions.Error()+": ")))
		return wire.SessionsPage{}, false
	case errors.Is(err, client.ErrNoSearchAttribute):
		s.log.Error("list sessions", "error", err)
		s.fail(w, r, errorf(http.StatusServiceUnavailable, "unavailable", "the Temporal namespace has no %s search attribute (see the worker's log)", wire.SearchAttributeActiveStepTypes))
		return wire.SessionsPage{}, false
	case err != nil:
		s.fail(w, r, err)
		return wire.SessionsPage{}, false
	}
	// The scope again, by this API's own rule, on what the engine found.
	kept := page.Sessions[:0]
	for _, sum := range page.Sessions {
		a, ok := s.byFlow[sum.FlowType]
		if !ok || !tok.allowsAgent(a.Name) || !tok.allowsSession(sum.SessionID) {
			continue
		}
		sum.Agent = a.Name
		kept = append(kept, sum)
	}
	page.Sessions = kept
	if q.Pending {
		s.addPending(ctx, page.Sessions)
	}
	return page, true
}

// addPending fills each waiting session's Pending from its snapshot, four
// at a time: what a person is asked, with the approval text. A session
// whose snapshot cannot be read is left without them.
func (s *Server) addPending(ctx context.Context, sessions []wire.SessionSummary) {
	sem := make(chan struct{}, 4)
	var wg sync.WaitGroup
	for i := range sessions {
		if len(sessions[i].WaitingFor) == 0 {
			continue
		}
		wg.Add(1)
		go func(sum *wire.SessionSummary) {
			defer wg.Done()
			sem <- struct{}{}
			defer func() { <-sem }()
			snap, err := s.sessions.GetAgentSnapshot(ctx, sum.SessionID)
			if err != nil {
				return
			}
			view := BrowserSnapshot(snap)
			s.fillApprovalTexts(&view)
			for _, in := range view.PendingInterrupts {
				p := wire.PendingSummary{
					InterruptID: in.InterruptID, Kind: in.Kind, ToolName: in.ToolName, ApprovalText: in.ApprovalText,
					Question: in.Question, Deadline: in.Deadline, Choices: in.Choices, Digest: in.Digest,
				}
				if in.SessionID != "" && in.SessionID != sum.SessionID {
					p.HolderSessionID = in.SessionID
				}
				sum.Pending = append(sum.Pending, p)
			}
		}(&sessions[i])
	}
	wg.Wait()
}
