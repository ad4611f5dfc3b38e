// Command taskserver is a small MCP server for the tests of the tasks
// extension (io.modelcontextprotocol/tasks, SEP-2663, MCP 2026-07-28),
// which no server on npm speaks yet. It serves over stdio, or over
// Streamable HTTP (stateless) with -http ADDR.
//
// Its tool "job" answers a client that declares the extension with a task
// handle; tasks/get reports the task working for -polls polls, then
// completed with "job <name> done" (or failed, for the name "fail";
// cancelled once tasks/cancel came; input_required for the name "ask",
// with a question it cannot take; for the name "choose", a question of
// one enum field that tasks/update answers, and then completed with the
// answer).
// Without the extension, "job" answers at once. Every request is logged
// as one JSON line to -log, so tests count tools/call, tasks/get and
// tasks/cancel.
package main

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"log"
	"net/http"
	"os"
	"sync"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

const extension = "io.modelcontextprotocol/tasks"

type taskState struct {
	name      string
	polls     int
	cancelled bool
	// answer is what tasks/update brought for a "choose" task's question:
	// the queue, or "declined".
	answer string
}

type server struct {
	polls    int
	interval int64 // pollIntervalMs
	logf     *os.File

	mu    sync.Mutex
	tasks map[string]*taskState
	next  int
}

func (s *server) record(method string, fields map[string]any) {
	fields["method"] = method
	b, _ := json.Marshal(fields)
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.logf != nil {
		fmt.Fprintln(s.logf, string(b))
	}
}

type taskParams struct {
	mcp.ParamsBase
	TaskID string `json:"taskId"`
}

type taskResult struct {
	mcp.ResultBase
	ResultType     string         `json:"resultType"`
	TaskID         string         `json:"taskId"`
	Status         string         `json:"status"`
	StatusMessage  string         `json:"statusMessage,omitempty"`
	CreatedAt      string         `json:"createdAt"`
	LastUpdatedAt  string         `json:"lastUpdatedAt"`
	TTLMs          int64          `json:"ttlMs"`
	PollIntervalMs int64          `json:"pollIntervalMs"`
	Result         map[string]any `json:"result,omitempty"`
	Error          map[string]any `json:"error,omitempty"`
	InputRequests  map[string]any `json:"inputRequests,omitempty"`
}

type updateParams struct {
	mcp.ParamsBase
	TaskID         string `json:"taskId"`
	InputResponses map[string]struct {
		Action  string         `json:"action"`
		Content map[string]any `json:"content"`
	} `json:"inputResponses"`
}

type ack struct {
	mcp.ResultBase
	ResultType string `json:"resultType"`
}

func declaresTasks(meta mcp.Meta) bool {
	caps, _ := meta["io.modelcontextprotocol/clientCapabilities"].(map[string]any)
	ext, _ := caps["extensions"].(map[string]any)
	_, ok := ext[extension]
	return ok
}

func (s *server) view(id string, t *taskState) *taskResult {
	r := &taskResult{ResultType: "complete", TaskID: id, Status: "working", CreatedAt: "2026-12-01T00:00:00Z",
		LastUpdatedAt: "2026-12-01T00:00:00Z", TTLMs: 600000, PollIntervalMs: s.interval}
	switch {
	case t.cancelled:
		r.Status, r.StatusMessage = "cancelled", "cancelled by the client"
	case t.polls <= s.polls:
		r.StatusMessage = fmt.Sprintf("poll %d", t.polls)
	case t.name == "fail":
		r.Status, r.Error = "failed", map[string]any{"code": -32001, "message": "the job broke"}
	case t.name == "choose" && t.answer == "":
		r.Status, r.InputRequests = "input_required", map[string]any{"queue-" + id: map[string]any{
			"method": "elicitation/create", "params": map[string]any{"message": "Which queue?", "requestedSchema": map[string]any{
				"type": "object", "properties": map[string]any{"queue": map[string]any{"type": "string", "enum": []string{"fast", "slow"}}}}}}}
	case t.name == "choose":
		r.Status, r.Result = "completed", map[string]any{"content": []any{map[string]any{"type": "text", "text": "job choose: " + t.answer}}}
	case t.name == "ask":
		r.Status, r.InputRequests = "input_required", map[string]any{"k1": map[string]any{
			"method": "elicitation/create", "params": map[string]any{"message": "Which queue?", "requestedSchema": map[string]any{"type": "object"}}}}
	default:
		r.Status, r.Result = "completed", map[string]any{"content": []any{map[string]any{"type": "text", "text": "job " + t.name + " done"}}}
	}
	return r
}

func main() {
	httpAddr := flag.String("http", "", "serve Streamable HTTP on this address instead of stdio")
	polls := flag.Int("polls", 2, "polls a task reports working before it ends")
	logPath := flag.String("log", "", "append one JSON line per request to this file")
	interval := flag.Int64("interval", 100, "the pollIntervalMs the server suggests")
	flag.Parse()
	s := &server{polls: *polls, interval: *interval, tasks: map[string]*taskState{}}
	if *logPath != "" {
		f, err := os.OpenFile(*logPath, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
		if err != nil {
			log.Fatal(err)
		}
		s.logf = f
	}
	srv := mcp.NewServer(&mcp.Implementation{Name: "taskserver", Version: "1"},
		&mcp.ServerOptions{Capabilities: &mcp.ServerCapabilities{Tools: &mcp.ToolCapabilities{}, Extensions: map[string]any{extension: map[string]any{}}}})
	srv.AddTool(&mcp.Tool{Name: "job", Description: "Runs a job as a task.", InputSchema: map[string]any{"type": "object"},
		Annotations: &mcp.ToolAnnotations{ReadOnlyHint: true}},
		func(ctx context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: "job ran at once"}}}, nil
		})
	srv.AddReceivingMiddleware(func(next mcp.MethodHandler) mcp.MethodHandler {
		return func(ctx context.Context, method string, req mcp.Request) (mcp.Result, error) {
			if method != "tools/call" {
				return next(ctx, method, req)
			}
			p := req.GetParams().(*mcp.CallToolParamsRaw)
			key, _ := p.Meta["io.superdurable.dex/idempotencyKey"].(string)
			var args struct{ Name string }
			_ = json.Unmarshal(p.Arguments, &args)
			tasks := declaresTasks(p.Meta)
			s.record("tools/call", map[string]any{"key": key, "name": args.Name, "tasks": tasks})
			if !tasks {
				return next(ctx, method, req)
			}
			s.mu.Lock()
			s.next++
			id := fmt.Sprintf("task-%d-%s", s.next, args.Name)
			t := &taskState{name: args.Name}
			s.tasks[id] = t
			r := s.view(id, t)
			s.mu.Unlock()
			r.ResultType = "task"
			return r, nil
		}
	})
	if err := mcp.AddReceivingCustomMethod(srv, "tasks/get", func(ctx context.Context, _ *mcp.ServerSession, p *taskParams) (*taskResult, error) {
		s.record("tasks/get", map[string]any{"task": p.TaskID})
		s.mu.Lock()
		defer s.mu.Unlock()
		t := s.tasks[p.TaskID]
		if t == nil {
			return nil, &jsonrpc.Error{Code: -32602, Message: "unknown task " + p.TaskID}
		}
		t.polls++
		return s.view(p.TaskID, t), nil
	}); err != nil {
		log.Fatal(err)
	}
	if err := mcp.AddReceivingCustomMethod(srv, "tasks/update", func(ctx context.Context, _ *mcp.ServerSession, p *updateParams) (*ack, error) {
		s.mu.Lock()
		defer s.mu.Unlock()
		t := s.tasks[p.TaskID]
		if t == nil {
			return nil, &jsonrpc.Error{Code: -32602, Message: "unknown task " + p.TaskID}
		}
		for key, r := range p.InputResponses {
			if key != "queue-"+p.TaskID || t.answer != "" {
				continue // not outstanding: ignored
			}
			switch r.Action {
			case "accept":
				t.answer = fmt.Sprintf("%v", r.Content["queue"])
			default:
				t.answer = r.Action
			}
		}
		if s.logf != nil {
			b, _ := json.Marshal(map[string]any{"method": "tasks/update", "task": p.TaskID, "responses": p.InputResponses})
			fmt.Fprintln(s.logf, string(b))
		}
		return &ack{ResultType: "complete"}, nil
	}); err != nil {
		log.Fatal(err)
	}
	if err := mcp.AddReceivingCustomMethod(srv, "tasks/cancel", func(ctx context.Context, _ *mcp.ServerSession, p *taskParams) (*ack, error) {
		s.record("tasks/cancel", map[string]any{"task": p.TaskID})
		s.mu.Lock()
		defer s.mu.Unlock()
		if t := s.tasks[p.TaskID]; t != nil {
			t.cancelled = true
		}
		return &ack{ResultType: "complete"}, nil
	}); err != nil {
		log.Fatal(err)
	}
	if *httpAddr != "" {
		h := mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return srv }, &mcp.StreamableHTTPOptions{Stateless: true})
		log.Fatal(http.ListenAndServe(*httpAddr, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			if name := r.Header.Get("Mcp-Name"); name != "" {
				s.record("header", map[string]any{"mcp_name": name})
			}
			h.ServeHTTP(w, r)
		})))
	}
	if err := srv.Run(context.Background(), &mcp.StdioTransport{}); err != nil {
		log.Fatal(err)
	}
}
