// Package pluginapi is the only package a framework runner imports. A
// runner is the agent loop of one agent framework: given a session's
// transcript it makes the next model call and says what happens next. The
// dex-agent-worker runs every runner as its own plugin process (with
// hashicorp/go-plugin over gRPC) and calls it from durable Steps.
//
// # Writing a runner
//
// Implement [Runner] and call [Serve] from main:
//
//	package main
//
//	import "github.com/dex-agents/dex-agent-worker/pluginapi"
//
//	func main() { pluginapi.Serve(pluginapi.ServeOptions{Runner: &myRunner{}}) }
//
// Build the binary and name it in the worker's config (relative paths are
// resolved against the config file's directory):
//
//	plugins:
//	  myrunner:
//	    command: ./bin/myrunner
//	    env: [OPENAI_API_KEY] # the only variables the plugin sees
//	    # sha256: the binary's SHA-256 in hex (optional; a mismatch refuses to start it)
//	agents:
//	  - name: support
//	    flow_type: SupportAgent # the Temporal workflow type of its sessions
//	    runner: myrunner
//	    runner_config: {model: gpt-5-mini} # handed to Configure as JSON
//
// `dex-agent-worker config validate --config FILE` starts the plugin and
// configures every agent, as the worker does at start-up. The
// "Quickstart: a plugin in its own module" of docs/runners.md walks
// through it all.
//
// The worker calls Info once per process start, Configure once per agent
// (and again after a restart of the process), then the rest concurrently,
// for every agent that names the runner. Each request names its agent.
// Configure's response lists the tools the runner offers the agent, so the
// worker can warn about tool_policies that name a tool it does not offer.
//
// # Rules every runner follows
//
//   - Be stateless between calls. Steps are durable: after a crash or a
//     retry the same call runs again, possibly in a new process. Everything
//     a call needs is in its request; what must survive goes into the
//     outcome (framework items, RunState, continuations, checkpoints).
//   - Framework items ([FrameworkMessage.Item]), RunState and continuations
//     are your own encoding, stored and handed back byte for byte. Use JSON
//     text; it must be valid UTF-8.
//   - RunModelStep makes at most one model call and returns exactly one
//     outcome: [TurnCompleted], or [ToolCallsRequested] to defer tool calls
//     (with a RunState that continues the turn). Never run a tool you can
//     defer: the session runs it in its own Step, with the retry rules and
//     approvals of its [Effect] class; resolve each call's policy with
//     [TurnContext.ResolvePolicy].
//   - ExecuteDeferredToolCall runs one approved call once. Return a
//     [*ToolExecutionError] (or set [ExecuteToolResponse.Error]) for a
//     failure the model should see; any other error fails the Step.
//   - Stream live output through the request's [EventWriter]: text and
//     reasoning deltas, custom events, heartbeats and, in tool calls,
//     heartbeat checkpoints. Writes never block and are best effort; never
//     put a result only in an event. Writes after the call returned are
//     dropped.
//   - A response that breaks these rules (no outcome, two outcomes, an empty
//     RunState, a tool call ID with '/', a string that is not UTF-8, ...)
//     fails the call with "runner returned a malformed outcome: ...".
//
// Optional features are small interfaces the worker finds by type
// assertion: [UnfinishedTurnMessageBuilder], [ToolTaskPoller],
// [ToolTaskCanceller], [InputTokenEstimator] and [Compactor]. Serve reports
// which ones a runner implements ([CapabilitiesOf]), and the worker never
// makes a call the runner lacks.
//
// # The transcript cache
//
// A long session's transcript is megabytes, and every model call needs
// it. Serve keeps the transcript each session was last sent (all sessions
// together at most [DefaultTranscriptCacheBytes], or
// DEX_RUNNER_TRANSCRIPT_CACHE_BYTES if the plugin's environment sets it;
// 0 turns it off) and reports capability TranscriptCache, so the worker
// sends only a session's new messages; Serve puts the whole transcript
// back together before it calls the Runner, which always sees every
// message. Stored messages never change, so this is safe; a plugin that
// restarted or dropped a session's transcript answers
// [ErrTranscriptNotCached] and the worker sends it whole.
//
// # Logs and environment
//
// Never print to stdout before [Serve] runs, not even in an init function:
// the first line on stdout is the go-plugin handshake, and the worker
// refuses to start a plugin whose first line is anything else ("the plugin
// printed to stdout before pluginapi.Serve: ..."). Write logs to os.Stderr:
// each line reaches the worker's log tagged with the plugin's name. JSON lines in hashicorp/go-hclog's format (an "@level"
// and an "@message" key) keep their level and fields. The process sees
// only the environment variables its config lists (plus go-plugin's
// handshake variables), and the worker removes their values from what it
// logs of the plugin's output; still, never log a secret.
//
// # Testing a runner
//
// Package runnertest drives a runner through whole turns in a unit test,
// with no engine: the model calls, approvals and questions the test
// answers, the approved tool calls, the records handed back. Underneath it
// serves the runner in process with [RunnerPlugin] and go-plugin's
// plugin.TestPluginGRPCConn, so every call crosses the same gRPC code as
// in production (see the examples). [ParseVector] reads the contract's
// shared test vectors. For what only the session does (approvals through
// the API, a worker killed mid-call), use package agenttest of the
// worker's module.
//
// # Packages
//
// The contract's values and interfaces (Runner, ToolCall, TurnContext, the
// requests and responses) are defined in package contract, which imports
// only the standard library, so the worker's core can use them without
// gRPC; pluginapi gives every one of them the same name here, so a runner
// imports pluginapi alone. Package otelenv starts the tracer provider the
// worker's environment asks for, for runners that export spans.
//
// # Other languages
//
// proto/dex/runner/v1/runner.proto in this repository is the wire contract.
// Its file comment says what a plugin without go-plugin must do for the
// handshake.
package pluginapi

//go:generate go run ./internal/gencontract ./contract contract_aliases.go
