// Command testplugin is the runner plugin the runnerhost tests launch. What
// it does is chosen by the request:
//
//   - Configure fails with runner_config's "fail" text when it has one, and
//     otherwise remembers the config, writes a line to stderr and reports
//     runner_config's "tools" as the agent's tools. Its "exit_status" is the
//     status the process exits with when the host stops it.
//   - RunModelStep with the last message "hang" sends a "test.pid" event
//     with its process ID and waits until the call is cancelled; any other
//     text completes the turn with "pid=<pid> config=<the agent's config>".
//   - ExecuteDeferredToolCall runs tool "env" (output: the sorted
//     environment as JSON, also logged to both stderr streams), "pid"
//     and "cwd" (its working directory)
//     (output: the process ID).
//
// It implements the ToolTaskPoller optional interface and no other. With
// the arguments "print-before-serve LINE" it prints LINE to stdout before it
// calls pluginapi.Serve, which breaks the handshake. With "contract-version
// N" it answers the handshake as a runner of contract version N would, and
// waits to be killed.
package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"slices"
	"strconv"
	"sync"
	"sync/atomic"

	"github.com/dex-agents/dex-agent-worker/pluginapi"
)

// realStderr is the process's stderr; pluginapi.Serve pipes os.Stderr to
// the host's sync stream once it runs.
var realStderr = os.Stderr

func main() {
	// Run as "testplugin print-before-serve LINE", it breaks the rule that a
	// plugin prints nothing to stdout before Serve.
	if len(os.Args) == 3 && os.Args[1] == "print-before-serve" {
		fmt.Println(os.Args[2])
	}
	// Run as "testplugin contract-version N", it is a runner of another
	// contract version: its handshake line names N, which the host refuses
	// before it connects.
	if len(os.Args) == 3 && os.Args[1] == "contract-version" {
		fmt.Printf("1|%s|tcp|127.0.0.1:1|grpc|\n", os.Args[2])
		select {}
	}
	pluginapi.Serve(pluginapi.ServeOptions{Runner: &runner{configs: map[string]string{}}})
	os.Exit(int(exitStatus.Load()))
}

// exitStatus is the status the process exits with once Serve returns (the
// host asked it to stop): the latest runner_config "exit_status".
var exitStatus atomic.Int32

type runner struct {
	mu      sync.Mutex
	configs map[string]string
}

func (r *runner) Info(context.Context, *pluginapi.InfoRequest) (*pluginapi.InfoResponse, error) {
	return &pluginapi.InfoResponse{Name: "testplugin", Version: "1.2.3"}, nil
}

func (r *runner) Configure(_ context.Context, req *pluginapi.ConfigureRequest) (*pluginapi.ConfigureResponse, error) {
	var cfg struct {
		Fail       string   `json:"fail"`
		Tools      []string `json:"tools"`
		ExitStatus int32    `json:"exit_status"`
	}
	if err := json.Unmarshal(req.RunnerConfig, &cfg); err != nil {
		return nil, fmt.Errorf("runner_config: %w", err)
	}
	if cfg.Fail != "" {
		return nil, errors.New(cfg.Fail)
	}
	r.mu.Lock()
	r.configs[req.Agent] = string(req.RunnerConfig)
	r.mu.Unlock()
	exitStatus.Store(cfg.ExitStatus)
	fmt.Fprintf(os.Stderr, "configured agent %s (protocol %d)\n", req.Agent, req.ProtocolVersion)
	return &pluginapi.ConfigureResponse{Tools: cfg.Tools}, nil
}

func (r *runner) BuildUserMessage(_ context.Context, req *pluginapi.BuildUserMessageRequest) (*pluginapi.BuildUserMessageResponse, error) {
	return &pluginapi.BuildUserMessageResponse{Message: pluginapi.FrameworkMessage{Role: pluginapi.RoleUser, Text: req.Text}}, nil
}

func (r *runner) RunModelStep(ctx context.Context, req *pluginapi.RunModelStepRequest) (*pluginapi.RunModelStepResponse, error) {
	r.mu.Lock()
	cfg, ok := r.configs[req.Turn.Agent]
	r.mu.Unlock()
	if !ok {
		return nil, fmt.Errorf("agent %q is not configured", req.Turn.Agent)
	}
	last := ""
	if n := len(req.Turn.Messages); n > 0 {
		last = req.Turn.Messages[n-1].Text
	}
	if last == "hang" {
		if err := req.Events.WriteEvent("test.pid", map[string]int{"pid": os.Getpid()}); err != nil {
			return nil, err
		}
		<-ctx.Done()
		return nil, ctx.Err()
	}
	req.Events.WriteTextDelta("thinking")
	return &pluginapi.RunModelStepResponse{TurnCompleted: &pluginapi.TurnCompleted{
		NewMessages: []pluginapi.FrameworkMessage{{
			Role: pluginapi.RoleAssistant,
			Text: fmt.Sprintf("pid=%d config=%s", os.Getpid(), cfg),
		}},
	}}, nil
}

func (r *runner) ExecuteDeferredToolCall(_ context.Context, req *pluginapi.ExecuteToolRequest) (*pluginapi.ExecuteToolResponse, error) {
	switch req.ToolCall.ToolName {
	case "env":
		env := os.Environ()
		slices.Sort(env)
		out, err := json.Marshal(env)
		if err != nil {
			return nil, err
		}
		fmt.Fprintf(os.Stderr, "env dump %s\n", out)
		line, _ := json.Marshal(map[string]any{"@level": "info", "@message": "env dump", "env": env})
		fmt.Fprintf(realStderr, "%s\n", line)
		return &pluginapi.ExecuteToolResponse{Result: &pluginapi.ToolResult{Output: string(out)}}, nil
	case "pid":
		return &pluginapi.ExecuteToolResponse{Result: &pluginapi.ToolResult{Output: strconv.Itoa(os.Getpid())}}, nil
	case "cwd":
		dir, err := os.Getwd()
		if err != nil {
			return nil, err
		}
		return &pluginapi.ExecuteToolResponse{Result: &pluginapi.ToolResult{Output: dir}}, nil
	}
	return nil, &pluginapi.ToolExecutionError{Message: "unknown tool " + req.ToolCall.ToolName}
}

func (r *runner) PollToolTask(context.Context, *pluginapi.PollToolTaskRequest) (*pluginapi.ExecuteToolResponse, error) {
	return &pluginapi.ExecuteToolResponse{TaskPending: &pluginapi.ToolTaskPending{PollIntervalSeconds: 1}}, nil
}
