package client

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/base64"
	"errors"
	"fmt"
	"slices"
	"strings"
	"unicode"
	"unicode/utf8"

	commonpb "go.temporal.io/api/common/v1"
	enumspb "go.temporal.io/api/enums/v1"
	"go.temporal.io/api/serviceerror"
	workflowpb "go.temporal.io/api/workflow/v1"
	"go.temporal.io/api/workflowservice/v1"
	"go.temporal.io/sdk/converter"

	"github.com/dex-agents/dex-agent-worker/wire"
)

// ListSessionsOptions choose the sessions ListSessions lists.
type ListSessionsOptions struct {
	// WaitingFor lists sessions that wait for any of these kinds
	// (wire.WaitingForApproval...; see wire.ParseWaitingFor). Empty lists sessions
	// whatever they wait for. Only running sessions wait, so with any
	// kind closed sessions are never listed, whatever Status says.
	WaitingFor []string
	// FlowTypes lists sessions of these flow types (workflow types) only;
	// empty lists every workflow type in the namespace.
	FlowTypes []string
	// SessionPrefix lists only sessions inside this prefix, by the rule of
	// InSessionScope ("" lists every session).
	SessionPrefix string
	// Status is wire.ListRunning ("" too) or wire.ListAll.
	Status string
	// PageSize is 1 to wire.MaxListPageSize; 0 means wire.DefaultListPageSize.
	PageSize int
	// PageToken continues a list: the NextPageToken of the page before,
	// with the same options otherwise (PageSize may change).
	PageToken string
}

// ErrInvalidListOptions reports options ListSessions refuses before it
// asks the engine (an unknown waiting kind, a bad page size, a name that
// cannot be quoted in a visibility query).
var ErrInvalidListOptions = errors.New("invalid session list")

// ErrInvalidPageToken reports a page token that is not a NextPageToken of
// the same list.
var ErrInvalidPageToken = errors.New("invalid page token")

// ErrNoSearchAttribute reports a namespace without the ActiveStepTypes
// search attribute, which WaitingFor needs.
var ErrNoSearchAttribute = errors.New("the namespace has no ActiveStepTypes search attribute")

// ListSessions lists sessions from Temporal's visibility store, newest
// first: for instance every running session that waits for a person
// (WaitingFor approval and question) across agents, in one call.
// Visibility is eventually consistent: a session shows what it waits for
// shortly (usually within a second) after it starts waiting.
func (s *AgentSessionClient) ListSessions(ctx context.Context, opts ListSessionsOptions) (wire.SessionsPage, error) {
	page := wire.SessionsPage{Sessions: []wire.SessionSummary{}}
	q, err := SessionsQuery(opts)
	if err != nil {
		return page, err
	}
	size := opts.PageSize
	if size == 0 {
		size = wire.DefaultListPageSize
	}
	token, err := openPageToken(opts.PageToken, q)
	if err != nil {
		return page, err
	}
	resp, err := s.c.WorkflowService().ListWorkflowExecutions(ctx, &workflowservice.ListWorkflowExecutionsRequest{
		Namespace:     s.namespace,
		PageSize:      int32(size),
		NextPageToken: token,
		Query:         q,
	})
	if err != nil {
		var invalid *serviceerror.InvalidArgument
		switch {
		case errors.As(err, &invalid) && strings.Contains(invalid.Error(), wire.SearchAttributeActiveStepTypes):
			return page, fmt.Errorf("list sessions: %w (%s); add it with: temporal operator search-attribute create --name %s --type KeywordList",
				ErrNoSearchAttribute, invalid.Error(), wire.SearchAttributeActiveStepTypes)
		case errors.As(err, &invalid) && len(token) > 0:
			return page, fmt.Errorf("list sessions: %w: %s", ErrInvalidPageToken, invalid.Error())
		}
		return page, fmt.Errorf("list sessions: %w", err)
	}
	for _, e := range resp.GetExecutions() {
		sum := summarize(e)
		if !InSessionScope(opts.SessionPrefix, sum.SessionID) {
			continue // the query already keeps to the prefix; this is the exact rule
		}
		if len(opts.FlowTypes) > 0 && !slices.Contains(opts.FlowTypes, sum.FlowType) {
			continue
		}
		page.Sessions = append(page.Sessions, sum)
	}
	if t := resp.GetNextPageToken(); len(t) > 0 {
		page.NextPageToken = sealPageToken(t, q)
	}
	return page, nil
}

// A page token is base64url of: pageTokenVersion, the first 8 bytes of
// the SHA-256 of the list's visibility query, and the engine's token. The
// digest ties a token to the list it continues: a token of another list
// (other kinds, agents or scope) or a mangled one is ErrInvalidPageToken
// before the engine sees it.
const pageTokenVersion = 1

func pageTokenDigest(query string) []byte {
	sum := sha256.Sum256([]byte(query))
	return sum[:8]
}

func sealPageToken(engine []byte, query string) string {
	b := append([]byte{pageTokenVersion}, pageTokenDigest(query)...)
	return base64.RawURLEncoding.EncodeToString(append(b, engine...))
}

// CheckPageToken reports whether token has the form of a NextPageToken
// ("" is none); ListSessions also checks that it continues the same list.
func CheckPageToken(token string) error {
	_, err := decodePageToken(token)
	return err
}

func decodePageToken(token string) ([]byte, error) {
	if token == "" {
		return nil, nil
	}
	if len(token) > wire.MaxPageTokenLength {
		return nil, fmt.Errorf("%w: it is longer than %d characters", ErrInvalidPageToken, wire.MaxPageTokenLength)
	}
	b, err := base64.RawURLEncoding.DecodeString(token)
	if err != nil || len(b) < 10 || b[0] != pageTokenVersion {
		return nil, fmt.Errorf("%w: it is not a next page token", ErrInvalidPageToken)
	}
	return b, nil
}

// openPageToken returns the engine's token in token, a token of the list
// that query makes.
func openPageToken(token, query string) ([]byte, error) {
	b, err := decodePageToken(token)
	if err != nil || b == nil {
		return nil, err
	}
	if !bytes.Equal(b[1:9], pageTokenDigest(query)) {
		return nil, fmt.Errorf("%w: it continues another list (other waiting kinds, agents, status or scope)", ErrInvalidPageToken)
	}
	return b[9:], nil
}

func summarize(e *workflowpb.WorkflowExecutionInfo) wire.SessionSummary {
	sum := wire.SessionSummary{
		SessionID:       e.GetExecution().GetWorkflowId(),
		RunID:           e.GetExecution().GetRunId(),
		FlowType:        e.GetType().GetName(),
		Status:          statusName(e.GetStatus()),
		WaitingFor:      []string{},
		ActiveStepTypes: []string{},
	}
	if t := e.GetStartTime(); t != nil {
		sum.StartedAt = t.AsTime()
	}
	if p := e.GetMemo().GetFields()[wire.MemoTitle]; p != nil {
		var title string
		if DataConverter().FromPayload(p, &title) == nil {
			sum.Title = title
		}
	}
	if p := e.GetMemo().GetFields()[wire.MemoArchived]; p != nil {
		var archived bool
		if DataConverter().FromPayload(p, &archived) == nil {
			sum.Archived = archived
		}
	}
	if p := e.GetMemo().GetFields()[wire.MemoParent]; p != nil {
		var parent string
		if DataConverter().FromPayload(p, &parent) == nil {
			sum.ParentSessionID = parent
		}
	}
	if t := e.GetCloseTime(); t != nil && e.GetStatus() != enumspb.WORKFLOW_EXECUTION_STATUS_RUNNING {
		at := t.AsTime()
		sum.ClosedAt = &at
	}
	if e.GetStatus() != enumspb.WORKFLOW_EXECUTION_STATUS_RUNNING {
		return sum // a closed session waits for nothing, whatever it last upserted
	}
	sum.ActiveStepTypes = keywordList(e.GetSearchAttributes().GetIndexedFields()[wire.SearchAttributeActiveStepTypes])
	for _, kind := range wire.WaitingForKinds() {
		if step, _ := wire.WaitingForStep(kind); slices.Contains(sum.ActiveStepTypes, step) {
			sum.WaitingFor = append(sum.WaitingFor, kind)
		}
	}
	return sum
}

// keywordList decodes a KeywordList search attribute (a JSON list, or one
// keyword).
func keywordList(p *commonpb.Payload) []string {
	out := []string{}
	if p == nil {
		return out
	}
	dc := converter.GetDefaultDataConverter()
	var list []string
	if err := dc.FromPayload(p, &list); err == nil {
		return append(out, list...)
	}
	var one string
	if err := dc.FromPayload(p, &one); err == nil && one != "" {
		out = append(out, one)
	}
	return out
}

func statusName(st enumspb.WorkflowExecutionStatus) string {
	switch st {
	case enumspb.WORKFLOW_EXECUTION_STATUS_RUNNING:
		return "running"
	case enumspb.WORKFLOW_EXECUTION_STATUS_COMPLETED:
		return "completed"
	case enumspb.WORKFLOW_EXECUTION_STATUS_FAILED:
		return "failed"
	case enumspb.WORKFLOW_EXECUTION_STATUS_CANCELED:
		return "canceled"
	case enumspb.WORKFLOW_EXECUTION_STATUS_TERMINATED:
		return "terminated"
	case enumspb.WORKFLOW_EXECUTION_STATUS_CONTINUED_AS_NEW:
		return "continued_as_new"
	case enumspb.WORKFLOW_EXECUTION_STATUS_TIMED_OUT:
		return "timed_out"
	}
	return "unknown"
}

// sessionSeparators may follow a session prefix in a session ID.
const sessionSeparators = "-_:."

// InSessionScope reports whether a session ID is inside a session prefix
// (an API token's session_prefix). An empty prefix reaches every session.
// Otherwise the ID must equal the prefix or continue it after a separator
// ("-", "_", ":" or "."), so prefix "u1" reaches "u1", "u1-abc" and "u1.x"
// but not "u10-abc"; a prefix that already ends in a separator ("acme-")
// reaches every ID that starts with it. (internal/httpapi.InSessionScope
// is the same rule.)
func InSessionScope(prefix, id string) bool {
	rest, ok := strings.CutPrefix(id, prefix)
	switch {
	case !ok:
		return false
	case prefix == "" || rest == "":
		return true
	case strings.ContainsRune(sessionSeparators, rune(prefix[len(prefix)-1])):
		return true
	}
	return strings.ContainsRune(sessionSeparators, rune(rest[0]))
}

// SessionsQuery returns the visibility query of a session list. Every
// condition is in the query (but for the part of a session prefix from a
// backslash or double quote on, which the store cannot match), so the
// engine pages through exactly the sessions listed; ListSessions applies
// the prefix and flow types again to what comes back.
func SessionsQuery(opts ListSessionsOptions) (string, error) {
	if opts.PageSize < 0 || opts.PageSize > wire.MaxListPageSize {
		return "", fmt.Errorf("%w: page size must be 1 to %d", ErrInvalidListOptions, wire.MaxListPageSize)
	}
	var conds []string
	if len(opts.FlowTypes) > 0 {
		list, err := quoteList(opts.FlowTypes)
		if err != nil {
			return "", fmt.Errorf("%w: flow type %v", ErrInvalidListOptions, err)
		}
		conds = append(conds, "WorkflowType IN ("+list+")")
	}
	if p := opts.SessionPrefix; p != "" {
		cond, err := prefixCondition(p)
		if err != nil {
			return "", fmt.Errorf("%w: session prefix %v", ErrInvalidListOptions, err)
		}
		if cond != "" {
			conds = append(conds, cond)
		}
	}
	if len(opts.WaitingFor) > 0 {
		var steps []string
		for _, kind := range opts.WaitingFor {
			step, ok := wire.WaitingForStep(kind)
			if !ok {
				return "", fmt.Errorf("%w: waiting_for %q: want one or more of %s", ErrInvalidListOptions, kind, strings.Join(wire.WaitingForKinds(), ", "))
			}
			if !slices.Contains(steps, step) {
				steps = append(steps, step)
			}
		}
		list, _ := quoteList(steps)
		conds = append(conds, wire.SearchAttributeActiveStepTypes+" IN ("+list+")")
	}
	switch {
	case opts.Status == "" || opts.Status == wire.ListRunning || len(opts.WaitingFor) > 0 && opts.Status == wire.ListAll:
		conds = append(conds, "ExecutionStatus = 'Running'")
	case opts.Status == wire.ListAll:
		conds = append(conds, "ExecutionStatus != 'ContinuedAsNew'")
	default:
		return "", fmt.Errorf("%w: status %q: want %q or %q", ErrInvalidListOptions, opts.Status, wire.ListRunning, wire.ListAll)
	}
	return strings.Join(conds, " AND "), nil
}

func quoteList(values []string) (string, error) {
	out := make([]string, len(values))
	for i, v := range values {
		q, err := quote(v)
		if err != nil {
			return "", err
		}
		out[i] = q
	}
	return strings.Join(out, ", "), nil
}

// unmatchable are the characters Temporal's SQL visibility store cannot
// match in a value (v1.32 writes them with MySQL escapes, which SQLite and
// PostgreSQL read literally): a value with one never matches.
const unmatchable = `\"`

// prefixCondition is the query condition of a session prefix: the ID
// equals the prefix or continues it after a separator (or starts with it,
// for a prefix that ends in one). For a prefix with a character the store
// cannot match, it is the STARTS_WITH of the part before that character
// ("" when there is none), and ListSessions' own filter keeps the rule.
func prefixCondition(p string) (string, error) {
	if i := strings.IndexAny(p, unmatchable); i >= 0 {
		if _, err := quote(strings.ReplaceAll(strings.ReplaceAll(p, `\`, "x"), `"`, "x")); err != nil {
			return "", err
		}
		if i == 0 {
			return "", nil
		}
		q, _ := quote(p[:i])
		return "WorkflowId STARTS_WITH " + q, nil
	}
	qp, err := quote(p)
	if err != nil {
		return "", err
	}
	if strings.ContainsRune(sessionSeparators, rune(p[len(p)-1])) {
		return "WorkflowId STARTS_WITH " + qp, nil
	}
	alts := []string{"WorkflowId = " + qp}
	for _, sep := range sessionSeparators {
		qs, err := quote(p + string(sep))
		if err != nil {
			return "", err
		}
		alts = append(alts, "WorkflowId STARTS_WITH "+qs)
	}
	return "(" + strings.Join(alts, " OR ") + ")", nil
}

// quote makes a string literal of the visibility query language: single
// quotes, with "'" escaped by a backslash. It refuses what the visibility
// store cannot match faithfully: empty text, invalid UTF-8, control
// characters, a backslash or a double quote, and more than 512 bytes.
func quote(v string) (string, error) {
	switch {
	case v == "":
		return "", errors.New("is empty")
	case len(v) > 512:
		return "", fmt.Errorf("%.20q... is longer than 512 bytes", v)
	case !utf8.ValidString(v):
		return "", fmt.Errorf("%q is not UTF-8", v)
	case strings.ContainsFunc(v, unicode.IsControl):
		return "", fmt.Errorf("%q has a control character", v)
	case strings.ContainsAny(v, unmatchable):
		return "", fmt.Errorf("%q has a backslash or a double quote, which Temporal's SQL visibility store cannot match", v)
	}
	return "'" + strings.ReplaceAll(v, "'", `\'`) + "'", nil
}
