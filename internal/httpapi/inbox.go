package httpapi

import (
	"context"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"sync"

	"github.com/dex-agents/dex-agent-worker/client"
	"github.com/dex-agents/dex-agent-worker/wire"
)

// inbox answers GET /v1/inbox?kind=approval,question&agent=NAME&page_size=N&page_token=T:
// every approval and question the token's sessions wait on, sub-agents'
// included (listed through their parent), newest session first. A page
// holds the interrupts of up to page_size sessions.
func (s *Server) inbox(w http.ResponseWriter, r *http.Request, tok *scopedToken) {
	q := sessionListQuery{Status: wire.ListRunning, PageSize: wire.DefaultListPageSize}
	v := r.URL.Query()
	for key, vals := range v {
		switch key {
		case "kind":
		case "agent", "page_size", "page_token":
			if len(vals) > 1 {
				s.fail(w, r, errorf(http.StatusBadRequest, "bad_request", "give %s once", key))
				return
			}
		default:
			s.fail(w, r, errorf(http.StatusBadRequest, "bad_request", "unknown query parameter %q (want kind, agent, page_size, page_token)", key))
			return
		}
	}
	for _, k := range v["kind"] {
		for _, kind := range strings.Split(k, ",") {
			kind = strings.TrimSpace(kind)
			switch kind {
			case wire.InterruptKindApproval, wire.InterruptKindQuestion:
				if !slices.Contains(q.WaitingFor, kind) {
					q.WaitingFor = append(q.WaitingFor, kind)
				}
			default:
				s.fail(w, r, errorf(http.StatusBadRequest, "bad_request", "kind %q: want approval or question", kind))
				return
			}
		}
	}
	if len(q.WaitingFor) == 0 {
		q.WaitingFor = []string{wire.InterruptKindApproval, wire.InterruptKindQuestion}
	}
	if v.Has("agent") {
		if q.Agent = v.Get("agent"); q.Agent == "" {
			s.fail(w, r, errorf(http.StatusBadRequest, "bad_request", "agent is empty: name an agent, or leave agent out for all of them"))
			return
		}
	}
	if v.Has("page_size") {
		n, err := strconv.Atoi(v.Get("page_size"))
		if err != nil || n < 1 || n > wire.MaxListPageSize {
			s.fail(w, r, errorf(http.StatusBadRequest, "bad_request", "page_size must be an integer from 1 to %d", wire.MaxListPageSize))
			return
		}
		q.PageSize = n
	}
	if v.Has("page_token") {
		q.PageToken = v.Get("page_token")
		if err := client.CheckPageToken(q.PageToken); err != nil || q.PageToken == "" {
			s.fail(w, r, errorf(http.StatusBadRequest, "bad_request", "page_token is not a next_page_token of the inbox"))
			return
		}
	}
	page, ok := s.sessionsPage(w, r, tok, q)
	if !ok {
		return
	}
	ctx, cancel := context.WithTimeout(r.Context(), s.opts.UpdateTimeout)
	defer cancel()
	items := make([][]wire.InboxItem, len(page.Sessions))
	sem := make(chan struct{}, 4)
	var wg sync.WaitGroup
	for i, sum := range page.Sessions {
		// A sub-agent's waits are listed through its parent.
		if sum.ParentSessionID != "" {
			continue
		}
		wg.Add(1)
		go func(i int, sum wire.SessionSummary) {
			defer wg.Done()
			sem <- struct{}{}
			defer func() { <-sem }()
			snap, err := s.sessions.GetAgentSnapshot(ctx, sum.SessionID)
			if err != nil {
				return
			}
			s.fillApprovalTexts(&snap)
			for _, in := range snap.PendingInterrupts {
				if !slices.Contains(q.WaitingFor, in.Kind) {
					continue
				}
				it := wire.InboxItem{SessionID: sum.SessionID, Title: sum.Title, Agent: sum.Agent, InterruptID: in.InterruptID, Kind: in.Kind,
					ToolCallID: in.ToolCallID, ToolName: in.ToolName, ApprovalText: in.ApprovalText, Arguments: in.Arguments,
					Question: in.Question, Choices: in.Choices, AllowsFreeText: in.AllowsFreeText, Deadline: in.Deadline, Digest: in.Digest}
				if in.SessionID != "" && in.SessionID != sum.SessionID {
					it.HolderSessionID = in.SessionID
				}
				items[i] = append(items[i], it)
			}
		}(i, sum)
	}
	wg.Wait()
	out := wire.InboxPage{Items: []wire.InboxItem{}, NextPageToken: page.NextPageToken}
	for _, its := range items {
		out.Items = append(out.Items, its...)
	}
	writeJSON(w, http.StatusOK, out)
}
