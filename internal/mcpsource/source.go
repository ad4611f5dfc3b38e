package mcpsource

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"sync"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/dex-agents/dex-agent-worker/pluginapi"
)

// The listing cache's limits (the spec's listing_ttl and
// listing_failure_backoff).
const (
	DefaultListingTTL            = 5 * time.Minute
	DefaultListingFailureBackoff = 30 * time.Second
)

// RefPrefix starts every source reference of an MCP tool.
const RefPrefix = "mcp:"

// Tool is one MCP tool as offered to a model.
type Tool struct {
	// Name is the offered name, "<server>__<tool>" (see [ToolName]). Key
	// tool policies by it.
	Name        string
	Description string
	// InputSchema is the tool's input JSON Schema as the server sent it.
	InputSchema json.RawMessage
	// Ref is the source reference a tool call record stores: [Source.Call]
	// routes the call by it, without a listing. It is "mcp:<server>/<tool>",
	// with the tool's MCP name unchanged.
	Ref string
	// Server and MCPName are the configured server and the tool's own name.
	Server, MCPName string
	// Effect is the effect the server's annotations give the tool:
	// readOnlyHint is read, else idempotentHint is idempotent_write
	// (whatever destructiveHint says). It is "" when the annotations say neither or
	// the server is not trusted, so the session's default effect
	// (unclassified, with approval, unless configured) applies.
	Effect pluginapi.Effect
	// TaskSupport is the tool's execution.taskSupport (MCP 2025-11-25):
	// "required", "optional", or "" (forbidden or not said).
	TaskSupport string
}

// Policy resolves the tool's policy in the session's policy set: a policy
// naming the tool wins, then the annotations' effect, then the default.
func (t Tool) Policy(set pluginapi.PolicySet) pluginapi.ToolPolicy {
	return set.Resolve(t.Name, t.Effect)
}

// Definition is the tool as the runner's turn context offers it.
func (t Tool) Definition() pluginapi.ToolDefinition {
	schema := t.InputSchema
	if len(schema) == 0 {
		schema = json.RawMessage(`{"type":"object"}`)
	}
	return pluginapi.ToolDefinition{Name: t.Name, Description: t.Description, InputSchema: schema, Effect: t.Effect}
}

// Ref returns the source reference of the tool mcpName of server.
func Ref(server, mcpName string) string { return RefPrefix + server + "/" + mcpName }

// ParseRef splits a source reference made by [Ref]. ok is false when ref is
// not an MCP source reference.
func ParseRef(ref string) (server, mcpName string, ok bool) {
	rest, found := strings.CutPrefix(ref, RefPrefix)
	if !found {
		return "", "", false
	}
	server, mcpName, ok = strings.Cut(rest, "/")
	if !ok || server == "" {
		return "", "", false
	}
	return server, mcpName, true
}

// Options configures a [Source]. The zero value is the spec's defaults.
type Options struct {
	// Logger gets the warnings (a server that cannot be listed, a dropped
	// duplicate name); nil discards them.
	Logger *slog.Logger
	// Now is the clock of the listing cache; nil is time.Now.
	Now func() time.Time
	// ListingTTL is how long a server's listing is fresh;
	// 0 is [DefaultListingTTL].
	ListingTTL time.Duration
	// ListingFailureBackoff is how long a server that could not be listed
	// is not listed again; 0 is [DefaultListingFailureBackoff].
	ListingFailureBackoff time.Duration
	// ListingWait bounds how long Tools and ToolsOf wait for listings
	// (the reference's tool_source_listing_timeout): a server whose first
	// listing takes longer offers no tools to that call, with a warning,
	// while its listing goes on in the background for later calls. 0 is
	// [DefaultListingWait]; Refresh waits for as long as its ctx allows.
	ListingWait time.Duration
	// ClientName and ClientVersion name the worker in the MCP handshake.
	ClientName, ClientVersion string
}

// DefaultListingWait is how long a model call waits for the MCP servers'
// listings: 10 seconds, as the reference's tool sources.
const DefaultListingWait = 10 * time.Second

var sdkLogger = slog.New(slog.DiscardHandler)

// Source is the host side of a set of MCP servers: it lists their tools
// for the turn context and runs the calls a tool Step routes to it. It is
// safe for concurrent use. Close it to stop its background listings.
type Source struct {
	servers []*server
	byName  map[string]*server
	states  map[string]*listState
	log     *slog.Logger
	now     func() time.Time
	ttl     time.Duration
	backoff time.Duration
	wait    time.Duration
	impl    *mcp.Implementation

	mu     sync.Mutex
	closed bool
	cancel map[*context.CancelFunc]struct{} // of running listings
	wg     sync.WaitGroup
}

// New returns a Source over servers, in their order (which decides the
// duplicate names dropped). It fails on an invalid or repeated server.
func New(servers []Server, opts Options) (*Source, error) {
	s := &Source{
		byName:  map[string]*server{},
		states:  map[string]*listState{},
		log:     opts.Logger,
		now:     opts.Now,
		ttl:     opts.ListingTTL,
		backoff: opts.ListingFailureBackoff,
		wait:    opts.ListingWait,
		impl:    &mcp.Implementation{Name: opts.ClientName, Version: opts.ClientVersion},
		cancel:  map[*context.CancelFunc]struct{}{},
	}
	if s.log == nil {
		s.log = slog.New(slog.DiscardHandler)
	}
	if s.now == nil {
		s.now = time.Now
	}
	if s.ttl <= 0 {
		s.ttl = DefaultListingTTL
	}
	if s.backoff <= 0 {
		s.backoff = DefaultListingFailureBackoff
	}
	if s.wait <= 0 {
		s.wait = DefaultListingWait
	}
	if s.impl.Name == "" {
		s.impl.Name = "dex-agent-worker"
	}
	if s.impl.Version == "" {
		s.impl.Version = "dev"
	}
	for _, cfg := range servers {
		if err := cfg.Validate(); err != nil {
			return nil, err
		}
		if _, dup := s.byName[cfg.Name]; dup {
			return nil, fmt.Errorf("mcp server %q is configured twice", cfg.Name)
		}
		srv := newServer(cfg)
		s.servers = append(s.servers, srv)
		s.byName[cfg.Name] = srv
		s.states[cfg.Name] = &listState{}
	}
	return s, nil
}

// Close stops the background listings and waits for them.
func (s *Source) Close() {
	s.mu.Lock()
	s.closed = true
	for c := range s.cancel {
		(*c)()
	}
	s.mu.Unlock()
	s.wg.Wait()
}

// listState is one server's listing cache.
type listState struct {
	mu       sync.Mutex
	tools    []Tool // nil when the server has none or its last listing failed
	listedAt time.Time
	ok       bool // the last listing succeeded
	tried    bool // a listing finished at least once
	failedAt time.Time
	running  chan struct{} // closed when the running listing ends
}

// Tools returns every configured server's tools, in server order, with
// names made unique (a later duplicate is dropped with a warning). A server
// is listed on its own: its first listing is awaited; after the listing TTL
// it is listed again in the background while its earlier tools are
// returned. A server that cannot be listed is left out with a warning and
// not listed again for the failure backoff, then in the background. One
// listing per server runs at a time. Tools fails only when ctx ends while
// it waits for a first listing.
func (s *Source) Tools(ctx context.Context) ([]Tool, error) {
	return s.tools(ctx, s.servers, false)
}

// ToolsOf returns the tools of the named servers, in the order given, as
// [Source.Tools] does for all of them: an agent's tools, when several
// agents share one Source and its listing caches. It fails on a name that
// is not configured.
func (s *Source) ToolsOf(ctx context.Context, servers []string) ([]Tool, error) {
	list := make([]*server, 0, len(servers))
	for _, name := range servers {
		srv := s.byName[name]
		if srv == nil {
			return nil, fmt.Errorf("mcp: server %q is not configured", name)
		}
		list = append(list, srv)
	}
	return s.tools(ctx, list, false)
}

// Refresh lists every server again now (joining a listing already
// running) and returns the tools as [Source.Tools] does.
func (s *Source) Refresh(ctx context.Context) ([]Tool, error) {
	return s.tools(ctx, s.servers, true)
}

func (s *Source) tools(ctx context.Context, servers []*server, refresh bool) ([]Tool, error) {
	waits := map[string]chan struct{}{}
	for _, srv := range servers {
		if ch := s.plan(ctx, srv, refresh); ch != nil {
			waits[srv.Name] = ch
		}
	}
	var bound <-chan time.Time
	if !refresh && len(waits) > 0 {
		t := time.NewTimer(s.wait)
		defer t.Stop()
		bound = t.C
	}
	late := map[string]bool{}
wait:
	for _, srv := range servers {
		ch := waits[srv.Name]
		if ch == nil {
			continue
		}
		select {
		case <-ch:
		case <-ctx.Done():
			return nil, ctx.Err()
		case <-bound:
			for _, srv := range servers {
				if ch := waits[srv.Name]; ch != nil && !closed(ch) {
					late[srv.Name] = true
					s.log.Warn("mcp: a server's listing took longer than the listing wait; its tools are left out of this model call",
						"server", srv.Name, "listing_wait", s.wait)
				}
			}
			break wait
		}
	}
	var out []Tool
	seen := map[string]string{}
	for _, srv := range servers {
		if late[srv.Name] {
			continue
		}
		st := s.states[srv.Name]
		st.mu.Lock()
		tools := st.tools
		st.mu.Unlock()
		for _, t := range tools {
			if first, dup := seen[t.Name]; dup {
				s.log.Warn("mcp: two tools have the same name; the later one is left out",
					"tool", t.Name, "offered", first, "left_out", t.Ref)
				continue
			}
			seen[t.Name] = t.Ref
			out = append(out, t)
		}
	}
	return out, nil
}

// closed reports whether ch is closed, without waiting.
func closed(ch chan struct{}) bool {
	select {
	case <-ch:
		return true
	default:
		return false
	}
}

// plan decides what a Tools call does about one server and returns a
// channel to wait on when the call must await its listing.
func (s *Source) plan(ctx context.Context, srv *server, refresh bool) chan struct{} {
	st := s.states[srv.Name]
	st.mu.Lock()
	defer st.mu.Unlock()
	now := s.now()
	switch {
	case st.running != nil:
		if refresh || !st.tried {
			return st.running
		}
		return nil
	case refresh || !st.tried:
		return s.start(ctx, srv, st)
	case !st.ok && now.Sub(st.failedAt) < s.backoff:
		return nil
	case !st.ok || now.Sub(st.listedAt) >= s.ttl:
		s.start(ctx, srv, st) // in the background
		return nil
	}
	return nil
}

// start runs a listing of srv in the background; st.mu is held.
func (s *Source) start(ctx context.Context, srv *server, st *listState) chan struct{} {
	done := make(chan struct{})
	s.mu.Lock()
	if s.closed {
		s.mu.Unlock()
		close(done)
		return done
	}
	// The listing outlives the call that started it: it keeps ctx's values
	// and ends with Close or its own timeouts.
	lctx, cancel := context.WithCancel(context.WithoutCancel(ctx))
	s.cancel[&cancel] = struct{}{}
	s.wg.Add(1)
	s.mu.Unlock()
	st.running = done
	go func() {
		defer s.wg.Done()
		tools, err := s.list(lctx, srv)
		s.mu.Lock()
		delete(s.cancel, &cancel)
		s.mu.Unlock()
		cancel()
		st.mu.Lock()
		st.tried = true
		st.running = nil
		if err != nil {
			st.ok, st.tools, st.failedAt = false, nil, s.now()
			s.log.Warn("mcp: a server could not be listed; its tools are left out",
				"server", srv.Name, "retry_after", s.backoff, "error", err.Error())
		} else {
			st.ok, st.tools, st.listedAt = true, tools, s.now()
		}
		st.mu.Unlock()
		close(done)
	}()
	return done
}

// list connects to srv and lists all its tools.
func (s *Source) list(ctx context.Context, srv *server) ([]Tool, error) {
	tracker := &callTracker{listing: true}
	ctx = context.WithValue(ctx, trackerKey{}, tracker)
	conn, err := s.connect(ctx, srv, tracker, nil)
	if err != nil {
		return nil, err
	}
	defer conn.close()
	lctx, cancel := context.WithTimeout(ctx, srv.connectionTimeout())
	defer cancel()
	var tools []Tool
	for t, err := range conn.session.Tools(lctx, nil) {
		if err != nil {
			return nil, srv.errorf("mcp server %q: tools/list: %v", srv.Name, err)
		}
		schema, err := json.Marshal(t.InputSchema)
		if err != nil {
			return nil, srv.errorf("mcp server %q: tool %q: input schema: %v", srv.Name, t.Name, err)
		}
		tools = append(tools, Tool{
			Name:        ToolName(srv.Name, t.Name),
			Description: t.Description,
			InputSchema: schema,
			Ref:         Ref(srv.Name, t.Name),
			Server:      srv.Name,
			MCPName:     t.Name,
			Effect:      effectOf(srv, t.Annotations),
		})
	}
	// What the SDK's Tool leaves out: execution.taskSupport.
	support := taskSupportOf(tracker.rawListPages())
	for i := range tools {
		tools[i].TaskSupport = support[tools[i].MCPName]
	}
	return tools, nil
}

// taskSupportOf reads each tool's execution.taskSupport from raw
// tools/list results.
func taskSupportOf(pages []json.RawMessage) map[string]string {
	out := map[string]string{}
	for _, p := range pages {
		var page struct {
			Tools []struct {
				Name      string `json:"name"`
				Execution struct {
					TaskSupport string `json:"taskSupport"`
				} `json:"execution"`
			} `json:"tools"`
		}
		if json.Unmarshal(p, &page) != nil {
			continue
		}
		for _, t := range page.Tools {
			if ts := t.Execution.TaskSupport; ts == "required" || ts == "optional" {
				out[t.Name] = ts
			}
		}
	}
	return out
}

func effectOf(srv *server, a *mcp.ToolAnnotations) pluginapi.Effect {
	if a == nil || !srv.Trusted() {
		return ""
	}
	switch {
	case a.ReadOnlyHint:
		return pluginapi.EffectRead
	case a.IdempotentHint: // whatever destructiveHint says
		return pluginapi.EffectIdempotentWrite
	}
	return ""
}

// connect opens a new connection to srv with the server's connection
// attempts, each bounded by its connection timeout.
func (s *Source) connect(ctx context.Context, srv *server, tracker *callTracker, progress func(context.Context, *mcp.ProgressNotificationClientRequest)) (*connection, error) {
	var last error
	attempts := srv.connectionAttempts()
	for i := range attempts {
		if i > 0 {
			select {
			case <-time.After(time.Duration(i) * 200 * time.Millisecond):
			case <-ctx.Done():
				return nil, srv.errorf("mcp server %q: connecting: %v (after %d attempts: %v)", srv.Name, ctx.Err(), i, last)
			}
		}
		conn, err := s.connectOnce(ctx, srv, tracker, progress)
		if err == nil {
			return conn, nil
		}
		last = err
		if ctx.Err() != nil {
			break
		}
	}
	return nil, srv.errorf("mcp server %q: %d connection attempts failed: %v", srv.Name, attempts, last)
}

func (s *Source) connectOnce(ctx context.Context, srv *server, tracker *callTracker, progress func(context.Context, *mcp.ProgressNotificationClientRequest)) (*connection, error) {
	if tracker == nil {
		tracker = &callTracker{}
	}
	transport, httpClient := srv.transport(tracker)
	client := mcp.NewClient(s.impl, &mcp.ClientOptions{
		Logger: sdkLogger, // the SDK's own logs could carry server output
		// No roots, sampling or elicitation; the tasks extension.
		Capabilities:                &mcp.ClientCapabilities{Extensions: map[string]any{TasksExtension: map[string]any{}}},
		MultiRoundTrip:              &mcp.MultiRoundTripOptions{Disabled: true},
		ProgressNotificationHandler: progress,
	})
	registerTaskMethods(client)
	cctx, cancel := context.WithTimeout(ctx, srv.connectionTimeout())
	defer cancel()
	session, err := client.Connect(cctx, transport, nil)
	if err != nil {
		if httpClient != nil {
			httpClient.CloseIdleConnections()
		}
		if errors.Is(cctx.Err(), context.DeadlineExceeded) && ctx.Err() == nil {
			return nil, fmt.Errorf("handshake timed out after %s: %w", srv.connectionTimeout(), err)
		}
		return nil, err
	}
	return &connection{session: session, httpClient: httpClient, tracker: tracker}, nil
}
