// The dex-agent-worker runner protocol, version 1.
//
// A runner is the agent loop of one agent framework: it turns a session's
// transcript into the next model call. The worker (the "host") runs every
// runner as a separate plugin process and talks to it over gRPC with this
// service. Go runners import github.com/dex-agents/dex-agent-worker/pluginapi
// and call pluginapi.Serve, which implements everything below; a runner in
// any other language implements this file directly.
//
// # Starting up (the handshake)
//
// The host launches the plugin binary with hashicorp/go-plugin. A plugin
// written without go-plugin must do the following:
//
//  1. Check the environment variable DEX_RUNNER_PLUGIN. If it is not
//     "9f1c7e2a-dex-runner-plugin", the binary was not started by the host:
//     print a short note to stderr and exit with status 1.
//  2. Read PLUGIN_PROTOCOL_VERSIONS (a comma-separated list such as "1").
//     This file is protocol version 1; exit with an error if "1" is missing.
//  3. Serve gRPC over mutual TLS. The host always sends its client
//     certificate (PEM) in PLUGIN_CLIENT_CERT. Generate a fresh self-signed
//     certificate for this process (DNS name "localhost", IsCA true, key
//     usages digital signature and cert sign, extended key usages serverAuth
//     and clientAuth), require client certificates and trust only
//     PLUGIN_CLIENT_CERT.
//  4. Listen on 127.0.0.1 (a port between PLUGIN_MIN_PORT and PLUGIN_MAX_PORT
//     when they are set) or on a unix socket, and register:
//       - this Runner service;
//       - the standard health service grpc.health.v1.Health, reporting
//         SERVING for the service name "plugin" (the host pings it).
//  5. Print exactly one line to stdout, then nothing more on stdout:
//       1|1|tcp|127.0.0.1:PORT|grpc|CERT
//     (or 1|1|unix|/path/to/socket|grpc|CERT), where the first field is
//     go-plugin's core protocol (always 1), the second this protocol's
//     version, and CERT the DER bytes of your certificate in standard base64
//     WITHOUT "=" padding.
//
// The host may also call go-plugin's own services plugin.GRPCController
// (Shutdown), plugin.GRPCStdio and plugin.GRPCBroker. They are optional: when
// they are missing the host logs a warning, and kills the process about two
// seconds after it asked it to stop.
//
// Environment: the plugin process sees ONLY the variables its configuration
// lists (plugins.<name>.env) plus the ones above. PATH, HOME and the rest are
// absent unless listed, so an interpreter started through "#!/usr/bin/env"
// needs PATH in that list.
//
// Logs: write them to stderr, one line each. The host copies every line into
// its own log, tagged with the plugin's name. A line that is a JSON object
// with "@level" (trace, debug, info, warn, error), "@message" and further
// keys (the format of hashicorp/go-hclog's JSON output) keeps its level and
// fields; any other line is logged at debug level. Never log secrets.
//
// Message size: a request carries the whole transcript and may be larger
// than gRPC's default 4 MB receive limit. Raise your server's maximum
// receive message size (the Go plugin side allows 2 GB).
//
// # Who sets what
//
// Every message says who sets it and when: the host sets the requests and
// what they carry (TurnContext, Message, ToolCall, ...); the runner sets the
// responses, the frames and what they carry. A runner hands back unchanged
// what it set earlier (run_state, framework_item, continuations,
// tool_source_reference, checkpoints). Fields marked "(host only)" are the
// host's bookkeeping: a runner may read them but needs none of them to
// answer correctly.
//
// # Calls
//
// The host calls Info once after the process starts, then Configure once per
// agent that uses the runner (again after every restart of the process),
// then the rest, concurrently, from durable Steps: every call may be
// repeated after a crash or retry, so keep no state between calls that the
// request does not carry. One process serves every agent that names it;
// every request names its agent (directly or as turn.agent).
//
// # Streaming calls
//
// RunModelStep, ExecuteDeferredToolCall, PollToolTask and SummarizeContext
// stream frames. Send any number of live frames (text deltas, reasoning
// deltas, events, heartbeats and, for tool calls, heartbeat checkpoints),
// then EXACTLY ONE outcome frame, then end the stream with status OK. Live
// frames are best effort: the host may drop them and a retry repeats them,
// so never put a result only in a live frame. A stream that ends without an
// outcome, sends a second outcome, or sends anything after the outcome fails
// the call as a malformed outcome. Hosts skip frame kinds they do not know,
// so later protocol versions can add live frames.
//
// # Errors
//
// A failure of the call itself is a gRPC error status; its message is what
// the worker reports and logs, so make it say what went wrong. The host
// reads these codes specially:
//   - UNAVAILABLE: the plugin is going away; the call is retried (and the
//     process restarted if it died).
//   - UNIMPLEMENTED: the runner does not implement this optional call.
//   - INVALID_ARGUMENT: reserved; the host reports it as "runner returned a
//     malformed outcome: <message>". Use it only for a response that breaks
//     this contract.
//   - FAILED_PRECONDITION: a permanent failure that retrying cannot fix
//     (a model provider's 400, 401, 403, 404 or 422): the Step fails at once,
//     without its remaining attempts.
//   - any code with a google.rpc.RetryInfo detail (RESOURCE_EXHAUSTED suits
//     a provider's 429): the call is retried after RetryInfo.retry_delay
//     (at most 1 hour) instead of the Step's backoff; send it when the
//     model provider said when to retry (Retry-After).
// Use UNKNOWN or INTERNAL for ordinary failures. A tool failure the model
// should see is NOT a gRPC error: send the ExecuteToolResponse.error outcome.
//
// # Encoding rules
//
// All strings are UTF-8 (protobuf requires it). Framework items, run states,
// continuations, checkpoints and tool arguments are opaque text: the host
// stores them and hands them back byte for byte, so put JSON text (or any
// UTF-8 text) in them, never raw binary. Fields named *_json, runner_config
// and input_schema hold JSON text. Enumerations travel as the plain strings
// listed on each field.

// Code generated by protoc-gen-go-grpc. DO NOT EDIT.
// versions:
// - protoc-gen-go-grpc v1.6.2
// - protoc             v3.21.12
// source: dex/runner/v1/runner.proto

package runnerpb

import (
	context "context"
	grpc "google.golang.org/grpc"
	codes "google.golang.org/grpc/codes"
	status "google.golang.org/grpc/status"
)

// This is a compile-time assertion to ensure that this generated file
// is compatible with the grpc package it is being compiled against.
// Requires gRPC-Go v1.64.0 or later.
const _ = grpc.SupportPackageIsVersion9

const (
	Runner_Info_FullMethodName                        = "/dex.runner.v1.Runner/Info"
	Runner_Configure_FullMethodName                   = "/dex.runner.v1.Runner/Configure"
	Runner_BuildUserMessage_FullMethodName            = "/dex.runner.v1.Runner/BuildUserMessage"
	Runner_RunModelStep_FullMethodName                = "/dex.runner.v1.Runner/RunModelStep"
	Runner_ExecuteDeferredToolCall_FullMethodName     = "/dex.runner.v1.Runner/ExecuteDeferredToolCall"
	Runner_BuildUnfinishedTurnMessages_FullMethodName = "/dex.runner.v1.Runner/BuildUnfinishedTurnMessages"
	Runner_PollToolTask_FullMethodName                = "/dex.runner.v1.Runner/PollToolTask"
	Runner_CancelToolTask_FullMethodName              = "/dex.runner.v1.Runner/CancelToolTask"
	Runner_EstimateInputTokens_FullMethodName         = "/dex.runner.v1.Runner/EstimateInputTokens"
	Runner_SelectCompactionCutoff_FullMethodName      = "/dex.runner.v1.Runner/SelectCompactionCutoff"
	Runner_SummarizeContext_FullMethodName            = "/dex.runner.v1.Runner/SummarizeContext"
)

// RunnerClient is the client API for Runner service.
//
// For semantics around ctx use and closing/ending streaming RPCs, please refer to https://pkg.go.dev/google.golang.org/grpc/?tab=doc#ClientConn.NewStream.
//
// Runner is the agent loop of one framework. See the file comment for the
// order in which the host calls it.
type RunnerClient interface {
	// Info describes the plugin. Called once after every process start.
	Info(ctx context.Context, in *InfoRequest, opts ...grpc.CallOption) (*InfoResponse, error)
	// Configure receives one agent's runner_config from the worker's config
	// file. Called once per agent before any other call for that agent, and
	// again after every restart of the process. Return an error status whose
	// message names the problem for bad config: the worker refuses to start
	// and shows that message. The response lists the tools the runner offers
	// the agent.
	Configure(ctx context.Context, in *ConfigureRequest, opts ...grpc.CallOption) (*ConfigureResponse, error)
	// BuildUserMessage turns user text into the framework's user item. The
	// session stores it as the turn's first message. Its role must be "user".
	BuildUserMessage(ctx context.Context, in *BuildUserMessageRequest, opts ...grpc.CallOption) (*BuildUserMessageResponse, error)
	// RunModelStep makes at most one model call. It streams live frames, then
	// one outcome: the turn's final answer, or tool calls to defer. It never
	// runs a tool it can defer. An error status fails the attempt; the
	// session retries it.
	RunModelStep(ctx context.Context, in *RunModelStepRequest, opts ...grpc.CallOption) (grpc.ServerStreamingClient[RunModelStepFrame], error)
	// ExecuteDeferredToolCall runs one approved tool call once. It streams live
	// frames, then one outcome. Calls of one model response run in parallel.
	// An error status is a Step failure that the tool's effect class decides
	// how to retry; a failure the model should see is the `error` outcome.
	ExecuteDeferredToolCall(ctx context.Context, in *ExecuteToolRequest, opts ...grpc.CallOption) (grpc.ServerStreamingClient[ToolCallFrame], error)
	// BuildUnfinishedTurnMessages (optional, capability
	// unfinished_turn_messages) returns the messages to store when a turn
	// fails, before the turn-failure note. Runners that store items as they
	// appear (ToolCallsRequested.new_messages) must implement it.
	BuildUnfinishedTurnMessages(ctx context.Context, in *BuildUnfinishedTurnMessagesRequest, opts ...grpc.CallOption) (*BuildUnfinishedTurnMessagesResponse, error)
	// PollToolTask (optional, capability tool_task_polling) polls remote work
	// that a tool call started (ExecuteToolResponse.task_started). It streams
	// like ExecuteDeferredToolCall; its outcome may also be task_pending.
	PollToolTask(ctx context.Context, in *PollToolTaskRequest, opts ...grpc.CallOption) (grpc.ServerStreamingClient[ToolCallFrame], error)
	// CancelToolTask (optional, capability tool_task_cancelling) stops a tool
	// task's remote work, best effort. It must be idempotent by task_id.
	CancelToolTask(ctx context.Context, in *CancelToolTaskRequest, opts ...grpc.CallOption) (*CancelToolTaskResponse, error)
	// EstimateInputTokens (optional, capability input_token_estimation)
	// estimates the size of the next model input.
	EstimateInputTokens(ctx context.Context, in *EstimateInputTokensRequest, opts ...grpc.CallOption) (*EstimateInputTokensResponse, error)
	// SelectCompactionCutoff (optional, capability compaction) names the newest
	// stored message that a summary may replace.
	SelectCompactionCutoff(ctx context.Context, in *CompactionCutoffRequest, opts ...grpc.CallOption) (*CompactionCutoffResponse, error)
	// SummarizeContext (optional, capability compaction) summarizes old
	// messages. It streams live frames, then one outcome with the summary.
	SummarizeContext(ctx context.Context, in *SummarizeContextRequest, opts ...grpc.CallOption) (grpc.ServerStreamingClient[SummarizeContextFrame], error)
}

type runnerClient struct {
	cc grpc.ClientConnInterface
}

func NewRunnerClient(cc grpc.ClientConnInterface) RunnerClient {
	return &runnerClient{cc}
}

func (c *runnerClient) Info(ctx context.Context, in *InfoRequest, opts ...grpc.CallOption) (*InfoResponse, error) {
	cOpts := append([]grpc.CallOption{grpc.StaticMethod()}, opts...)
	out := new(InfoResponse)
	err := c.cc.Invoke(ctx, Runner_Info_FullMethodName, in, out, cOpts...)
	if err != nil {
		return nil, err
	}
	return out, nil
}

func (c *runnerClient) Configure(ctx context.Context, in *ConfigureRequest, opts ...grpc.CallOption) (*ConfigureResponse, error) {
	cOpts := append([]grpc.CallOption{grpc.StaticMethod()}, opts...)
	out := new(ConfigureResponse)
	err := c.cc.Invoke(ctx, Runner_Configure_FullMethodName, in, out, cOpts...)
	if err != nil {
		return nil, err
	}
	return out, nil
}

func (c *runnerClient) BuildUserMessage(ctx context.Context, in *BuildUserMessageRequest, opts ...grpc.CallOption) (*BuildUserMessageResponse, error) {
	cOpts := append([]grpc.CallOption{grpc.StaticMethod()}, opts...)
	out := new(BuildUserMessageResponse)
	err := c.cc.Invoke(ctx, Runner_BuildUserMessage_FullMethodName, in, out, cOpts...)
	if err != nil {
		return nil, err
	}
	return out, nil
}

func (c *runnerClient) RunModelStep(ctx context.Context, in *RunModelStepRequest, opts ...grpc.CallOption) (grpc.ServerStreamingClient[RunModelStepFrame], error) {
	cOpts := append([]grpc.CallOption{grpc.StaticMethod()}, opts...)
	stream, err := c.cc.NewStream(ctx, &Runner_ServiceDesc.Streams[0], Runner_RunModelStep_FullMethodName, cOpts...)
	if err != nil {
		return nil, err
	}
	x := &grpc.GenericClientStream[RunModelStepRequest, RunModelStepFrame]{ClientStream: stream}
	if err := x.ClientStream.SendMsg(in); err != nil {
		return nil, err
	}
	if err := x.ClientStream.CloseSend(); err != nil {
		return nil, err
	}
	return x, nil
}

// This type alias is provided for backwards compatibility with existing code that references the prior non-generic stream type by name.
type Runner_RunModelStepClient = grpc.ServerStreamingClient[RunModelStepFrame]

func (c *runnerClient) ExecuteDeferredToolCall(ctx context.Context, in *ExecuteToolRequest, opts ...grpc.CallOption) (grpc.ServerStreamingClient[ToolCallFrame], error) {
	cOpts := append([]grpc.CallOption{grpc.StaticMethod()}, opts...)
	stream, err := c.cc.NewStream(ctx, &Runner_ServiceDesc.Streams[1], Runner_ExecuteDeferredToolCall_FullMethodName, cOpts...)
	if err != nil {
		return nil, err
	}
	x := &grpc.GenericClientStream[ExecuteToolRequest, ToolCallFrame]{ClientStream: stream}
	if err := x.ClientStream.SendMsg(in); err != nil {
		return nil, err
	}
	if err := x.ClientStream.CloseSend(); err != nil {
		return nil, err
	}
	return x, nil
}

// This type alias is provided for backwards compatibility with existing code that references the prior non-generic stream type by name.
type Runner_ExecuteDeferredToolCallClient = grpc.ServerStreamingClient[ToolCallFrame]

func (c *runnerClient) BuildUnfinishedTurnMessages(ctx context.Context, in *BuildUnfinishedTurnMessagesRequest, opts ...grpc.CallOption) (*BuildUnfinishedTurnMessagesResponse, error) {
	cOpts := append([]grpc.CallOption{grpc.StaticMethod()}, opts...)
	out := new(BuildUnfinishedTurnMessagesResponse)
	err := c.cc.Invoke(ctx, Runner_BuildUnfinishedTurnMessages_FullMethodName, in, out, cOpts...)
	if err != nil {
		return nil, err
	}
	return out, nil
}

func (c *runnerClient) PollToolTask(ctx context.Context, in *PollToolTaskRequest, opts ...grpc.CallOption) (grpc.ServerStreamingClient[ToolCallFrame], error) {
	cOpts := append([]grpc.CallOption{grpc.StaticMethod()}, opts...)
	stream, err := c.cc.NewStream(ctx, &Runner_ServiceDesc.Streams[2], Runner_PollToolTask_FullMethodName, cOpts...)
	if err != nil {
		return nil, err
	}
	x := &grpc.GenericClientStream[PollToolTaskRequest, ToolCallFrame]{ClientStream: stream}
	if err := x.ClientStream.SendMsg(in); err != nil {
		return nil, err
	}
	if err := x.ClientStream.CloseSend(); err != nil {
		return nil, err
	}
	return x, nil
}

// This type alias is provided for backwards compatibility with existing code that references the prior non-generic stream type by name.
type Runner_PollToolTaskClient = grpc.ServerStreamingClient[ToolCallFrame]

func (c *runnerClient) CancelToolTask(ctx context.Context, in *CancelToolTaskRequest, opts ...grpc.CallOption) (*CancelToolTaskResponse, error) {
	cOpts := append([]grpc.CallOption{grpc.StaticMethod()}, opts...)
	out := new(CancelToolTaskResponse)
	err := c.cc.Invoke(ctx, Runner_CancelToolTask_FullMethodName, in, out, cOpts...)
	if err != nil {
		return nil, err
	}
	return out, nil
}

func (c *runnerClient) EstimateInputTokens(ctx context.Context, in *EstimateInputTokensRequest, opts ...grpc.CallOption) (*EstimateInputTokensResponse, error) {
	cOpts := append([]grpc.CallOption{grpc.StaticMethod()}, opts...)
	out := new(EstimateInputTokensResponse)
	err := c.cc.Invoke(ctx, Runner_EstimateInputTokens_FullMethodName, in, out, cOpts...)
	if err != nil {
		return nil, err
	}
	return out, nil
}

func (c *runnerClient) SelectCompactionCutoff(ctx context.Context, in *CompactionCutoffRequest, opts ...grpc.CallOption) (*CompactionCutoffResponse, error) {
	cOpts := append([]grpc.CallOption{grpc.StaticMethod()}, opts...)
	out := new(CompactionCutoffResponse)
	err := c.cc.Invoke(ctx, Runner_SelectCompactionCutoff_FullMethodName, in, out, cOpts...)
	if err != nil {
		return nil, err
	}
	return out, nil
}

func (c *runnerClient) SummarizeContext(ctx context.Context, in *SummarizeContextRequest, opts ...grpc.CallOption) (grpc.ServerStreamingClient[SummarizeContextFrame], error) {
	cOpts := append([]grpc.CallOption{grpc.StaticMethod()}, opts...)
	stream, err := c.cc.NewStream(ctx, &Runner_ServiceDesc.Streams[3], Runner_SummarizeContext_FullMethodName, cOpts...)
	if err != nil {
		return nil, err
	}
	x := &grpc.GenericClientStream[SummarizeContextRequest, SummarizeContextFrame]{ClientStream: stream}
	if err := x.ClientStream.SendMsg(in); err != nil {
		return nil, err
	}
	if err := x.ClientStream.CloseSend(); err != nil {
		return nil, err
	}
	return x, nil
}

// This type alias is provided for backwards compatibility with existing code that references the prior non-generic stream type by name.
type Runner_SummarizeContextClient = grpc.ServerStreamingClient[SummarizeContextFrame]

// RunnerServer is the server API for Runner service.
// All implementations must embed UnimplementedRunnerServer
// for forward compatibility.
//
// Runner is the agent loop of one framework. See the file comment for the
// order in which the host calls it.
type RunnerServer interface {
	// Info describes the plugin. Called once after every process start.
	Info(context.Context, *InfoRequest) (*InfoResponse, error)
	// Configure receives one agent's runner_config from the worker's config
	// file. Called once per agent before any other call for that agent, and
	// again after every restart of the process. Return an error status whose
	// message names the problem for bad config: the worker refuses to start
	// and shows that message. The response lists the tools the runner offers
	// the agent.
	Configure(context.Context, *ConfigureRequest) (*ConfigureResponse, error)
	// BuildUserMessage turns user text into the framework's user item. The
	// session stores it as the turn's first message. Its role must be "user".
	BuildUserMessage(context.Context, *BuildUserMessageRequest) (*BuildUserMessageResponse, error)
	// RunModelStep makes at most one model call. It streams live frames, then
	// one outcome: the turn's final answer, or tool calls to defer. It never
	// runs a tool it can defer. An error status fails the attempt; the
	// session retries it.
	RunModelStep(*RunModelStepRequest, grpc.ServerStreamingServer[RunModelStepFrame]) error
	// ExecuteDeferredToolCall runs one approved tool call once. It streams live
	// frames, then one outcome. Calls of one model response run in parallel.
	// An error status is a Step failure that the tool's effect class decides
	// how to retry; a failure the model should see is the `error` outcome.
	ExecuteDeferredToolCall(*ExecuteToolRequest, grpc.ServerStreamingServer[ToolCallFrame]) error
	// BuildUnfinishedTurnMessages (optional, capability
	// unfinished_turn_messages) returns the messages to store when a turn
	// fails, before the turn-failure note. Runners that store items as they
	// appear (ToolCallsRequested.new_messages) must implement it.
	BuildUnfinishedTurnMessages(context.Context, *BuildUnfinishedTurnMessagesRequest) (*BuildUnfinishedTurnMessagesResponse, error)
	// PollToolTask (optional, capability tool_task_polling) polls remote work
	// that a tool call started (ExecuteToolResponse.task_started). It streams
	// like ExecuteDeferredToolCall; its outcome may also be task_pending.
	PollToolTask(*PollToolTaskRequest, grpc.ServerStreamingServer[ToolCallFrame]) error
	// CancelToolTask (optional, capability tool_task_cancelling) stops a tool
	// task's remote work, best effort. It must be idempotent by task_id.
	CancelToolTask(context.Context, *CancelToolTaskRequest) (*CancelToolTaskResponse, error)
	// EstimateInputTokens (optional, capability input_token_estimation)
	// estimates the size of the next model input.
	EstimateInputTokens(context.Context, *EstimateInputTokensRequest) (*EstimateInputTokensResponse, error)
	// SelectCompactionCutoff (optional, capability compaction) names the newest
	// stored message that a summary may replace.
	SelectCompactionCutoff(context.Context, *CompactionCutoffRequest) (*CompactionCutoffResponse, error)
	// SummarizeContext (optional, capability compaction) summarizes old
	// messages. It streams live frames, then one outcome with the summary.
	SummarizeContext(*SummarizeContextRequest, grpc.ServerStreamingServer[SummarizeContextFrame]) error
	mustEmbedUnimplementedRunnerServer()
}

// UnimplementedRunnerServer must be embedded to have
// forward compatible implementations.
//
// NOTE: this should be embedded by value instead of pointer to avoid a nil
// pointer dereference when methods are called.
type UnimplementedRunnerServer struct{}

func (UnimplementedRunnerServer) Info(context.Context, *InfoRequest) (*InfoResponse, error) {
	return nil, status.Error(codes.Unimplemented, "method Info not implemented")
}
func (UnimplementedRunnerServer) Configure(context.Context, *ConfigureRequest) (*ConfigureResponse, error) {
	return nil, status.Error(codes.Unimplemented, "method Configure not implemented")
}
func (UnimplementedRunnerServer) BuildUserMessage(context.Context, *BuildUserMessageRequest) (*BuildUserMessageResponse, error) {
	return nil, status.Error(codes.Unimplemented, "method BuildUserMessage not implemented")
}
func (UnimplementedRunnerServer) RunModelStep(*RunModelStepRequest, grpc.ServerStreamingServer[RunModelStepFrame]) error {
	return status.Error(codes.Unimplemented, "method RunModelStep not implemented")
}
func (UnimplementedRunnerServer) ExecuteDeferredToolCall(*ExecuteToolRequest, grpc.ServerStreamingServer[ToolCallFrame]) error {
	return status.Error(codes.Unimplemented, "method ExecuteDeferredToolCall not implemented")
}
func (UnimplementedRunnerServer) BuildUnfinishedTurnMessages(context.Context, *BuildUnfinishedTurnMessagesRequest) (*BuildUnfinishedTurnMessagesResponse, error) {
	return nil, status.Error(codes.Unimplemented, "method BuildUnfinishedTurnMessages not implemented")
}
func (UnimplementedRunnerServer) PollToolTask(*PollToolTaskRequest, grpc.ServerStreamingServer[ToolCallFrame]) error {
	return status.Error(codes.Unimplemented, "method PollToolTask not implemented")
}
func (UnimplementedRunnerServer) CancelToolTask(context.Context, *CancelToolTaskRequest) (*CancelToolTaskResponse, error) {
	return nil, status.Error(codes.Unimplemented, "method CancelToolTask not implemented")
}
func (UnimplementedRunnerServer) EstimateInputTokens(context.Context, *EstimateInputTokensRequest) (*EstimateInputTokensResponse, error) {
	return nil, status.Error(codes.Unimplemented, "method EstimateInputTokens not implemented")
}
func (UnimplementedRunnerServer) SelectCompactionCutoff(context.Context, *CompactionCutoffRequest) (*CompactionCutoffResponse, error) {
	return nil, status.Error(codes.Unimplemented, "method SelectCompactionCutoff not implemented")
}
func (UnimplementedRunnerServer) SummarizeContext(*SummarizeContextRequest, grpc.ServerStreamingServer[SummarizeContextFrame]) error {
	return status.Error(codes.Unimplemented, "method SummarizeContext not implemented")
}
func (UnimplementedRunnerServer) mustEmbedUnimplementedRunnerServer() {}
func (UnimplementedRunnerServer) testEmbeddedByValue()                {}

// UnsafeRunnerServer may be embedded to opt out of forward compatibility for this service.
// Use of this interface is not recommended, as added methods to RunnerServer will
// result in compilation errors.
type UnsafeRunnerServer interface {
	mustEmbedUnimplementedRunnerServer()
}

func RegisterRunnerServer(s grpc.ServiceRegistrar, srv RunnerServer) {
	// If the following call panics, it indicates UnimplementedRunnerServer was
	// embedded by pointer and is nil.  This will cause panics if an
	// unimplemented method is ever invoked, so we test this at initialization
	// time to prevent it from happening at runtime later due to I/O.
	if t, ok := srv.(interface{ testEmbeddedByValue() }); ok {
		t.testEmbeddedByValue()
	}
	s.RegisterService(&Runner_ServiceDesc, srv)
}

func _Runner_Info_Handler(srv interface{}, ctx context.Context, dec func(interface{}) error, interceptor grpc.UnaryServerInterceptor) (interface{}, error) {
	in := new(InfoRequest)
	if err := dec(in); err != nil {
		return nil, err
	}
	if interceptor == nil {
		return srv.(RunnerServer).Info(ctx, in)
	}
	info := &grpc.UnaryServerInfo{
		Server:     srv,
		FullMethod: Runner_Info_FullMethodName,
	}
	handler := func(ctx context.Context, req interface{}) (interface{}, error) {
		return srv.(RunnerServer).Info(ctx, req.(*InfoRequest))
	}
	return interceptor(ctx, in, info, handler)
}

func _Runner_Configure_Handler(srv interface{}, ctx context.Context, dec func(interface{}) error, interceptor grpc.UnaryServerInterceptor) (interface{}, error) {
	in := new(ConfigureRequest)
	if err := dec(in); err != nil {
		return nil, err
	}
	if interceptor == nil {
		return srv.(RunnerServer).Configure(ctx, in)
	}
	info := &grpc.UnaryServerInfo{
		Server:     srv,
		FullMethod: Runner_Configure_FullMethodName,
	}
	handler := func(ctx context.Context, req interface{}) (interface{}, error) {
		return srv.(RunnerServer).Configure(ctx, req.(*ConfigureRequest))
	}
	return interceptor(ctx, in, info, handler)
}

func _Runner_BuildUserMessage_Handler(srv interface{}, ctx context.Context, dec func(interface{}) error, interceptor grpc.UnaryServerInterceptor) (interface{}, error) {
	in := new(BuildUserMessageRequest)
	if err := dec(in); err != nil {
		return nil, err
	}
	if interceptor == nil {
		return srv.(RunnerServer).BuildUserMessage(ctx, in)
	}
	info := &grpc.UnaryServerInfo{
		Server:     srv,
		FullMethod: Runner_BuildUserMessage_FullMethodName,
	}
	handler := func(ctx context.Context, req interface{}) (interface{}, error) {
		return srv.(RunnerServer).BuildUserMessage(ctx, req.(*BuildUserMessageRequest))
	}
	return interceptor(ctx, in, info, handler)
}

func _Runner_RunModelStep_Handler(srv interface{}, stream grpc.ServerStream) error {
	m := new(RunModelStepRequest)
	if err := stream.RecvMsg(m); err != nil {
		return err
	}
	return srv.(RunnerServer).RunModelStep(m, &grpc.GenericServerStream[RunModelStepRequest, RunModelStepFrame]{ServerStream: stream})
}

// This type alias is provided for backwards compatibility with existing code that references the prior non-generic stream type by name.
type Runner_RunModelStepServer = grpc.ServerStreamingServer[RunModelStepFrame]

func _Runner_ExecuteDeferredToolCall_Handler(srv interface{}, stream grpc.ServerStream) error {
	m := new(ExecuteToolRequest)
	if err := stream.RecvMsg(m); err != nil {
		return err
	}
	return srv.(RunnerServer).ExecuteDeferredToolCall(m, &grpc.GenericServerStream[ExecuteToolRequest, ToolCallFrame]{ServerStream: stream})
}

// This type alias is provided for backwards compatibility with existing code that references the prior non-generic stream type by name.
type Runner_ExecuteDeferredToolCallServer = grpc.ServerStreamingServer[ToolCallFrame]

func _Runner_BuildUnfinishedTurnMessages_Handler(srv interface{}, ctx context.Context, dec func(interface{}) error, interceptor grpc.UnaryServerInterceptor) (interface{}, error) {
	in := new(BuildUnfinishedTurnMessagesRequest)
	if err := dec(in); err != nil {
		return nil, err
	}
	if interceptor == nil {
		return srv.(RunnerServer).BuildUnfinishedTurnMessages(ctx, in)
	}
	info := &grpc.UnaryServerInfo{
		Server:     srv,
		FullMethod: Runner_BuildUnfinishedTurnMessages_FullMethodName,
	}
	handler := func(ctx context.Context, req interface{}) (interface{}, error) {
		return srv.(RunnerServer).BuildUnfinishedTurnMessages(ctx, req.(*BuildUnfinishedTurnMessagesRequest))
	}
	return interceptor(ctx, in, info, handler)
}

func _Runner_PollToolTask_Handler(srv interface{}, stream grpc.ServerStream) error {
	m := new(PollToolTaskRequest)
	if err := stream.RecvMsg(m); err != nil {
		return err
	}
	return srv.(RunnerServer).PollToolTask(m, &grpc.GenericServerStream[PollToolTaskRequest, ToolCallFrame]{ServerStream: stream})
}

// This type alias is provided for backwards compatibility with existing code that references the prior non-generic stream type by name.
type Runner_PollToolTaskServer = grpc.ServerStreamingServer[ToolCallFrame]

func _Runner_CancelToolTask_Handler(srv interface{}, ctx context.Context, dec func(interface{}) error, interceptor grpc.UnaryServerInterceptor) (interface{}, error) {
	in := new(CancelToolTaskRequest)
	if err := dec(in); err != nil {
		return nil, err
	}
	if interceptor == nil {
		return srv.(RunnerServer).CancelToolTask(ctx, in)
	}
	info := &grpc.UnaryServerInfo{
		Server:     srv,
		FullMethod: Runner_CancelToolTask_FullMethodName,
	}
	handler := func(ctx context.Context, req interface{}) (interface{}, error) {
		return srv.(RunnerServer).CancelToolTask(ctx, req.(*CancelToolTaskRequest))
	}
	return interceptor(ctx, in, info, handler)
}

func _Runner_EstimateInputTokens_Handler(srv interface{}, ctx context.Context, dec func(interface{}) error, interceptor grpc.UnaryServerInterceptor) (interface{}, error) {
	in := new(EstimateInputTokensRequest)
	if err := dec(in); err != nil {
		return nil, err
	}
	if interceptor == nil {
		return srv.(RunnerServer).EstimateInputTokens(ctx, in)
	}
	info := &grpc.UnaryServerInfo{
		Server:     srv,
		FullMethod: Runner_EstimateInputTokens_FullMethodName,
	}
	handler := func(ctx context.Context, req interface{}) (interface{}, error) {
		return srv.(RunnerServer).EstimateInputTokens(ctx, req.(*EstimateInputTokensRequest))
	}
	return interceptor(ctx, in, info, handler)
}

func _Runner_SelectCompactionCutoff_Handler(srv interface{}, ctx context.Context, dec func(interface{}) error, interceptor grpc.UnaryServerInterceptor) (interface{}, error) {
	in := new(CompactionCutoffRequest)
	if err := dec(in); err != nil {
		return nil, err
	}
	if interceptor == nil {
		return srv.(RunnerServer).SelectCompactionCutoff(ctx, in)
	}
	info := &grpc.UnaryServerInfo{
		Server:     srv,
		FullMethod: Runner_SelectCompactionCutoff_FullMethodName,
	}
	handler := func(ctx context.Context, req interface{}) (interface{}, error) {
		return srv.(RunnerServer).SelectCompactionCutoff(ctx, req.(*CompactionCutoffRequest))
	}
	return interceptor(ctx, in, info, handler)
}

func _Runner_SummarizeContext_Handler(srv interface{}, stream grpc.ServerStream) error {
	m := new(SummarizeContextRequest)
	if err := stream.RecvMsg(m); err != nil {
		return err
	}
	return srv.(RunnerServer).SummarizeContext(m, &grpc.GenericServerStream[SummarizeContextRequest, SummarizeContextFrame]{ServerStream: stream})
}

// This type alias is provided for backwards compatibility with existing code that references the prior non-generic stream type by name.
type Runner_SummarizeContextServer = grpc.ServerStreamingServer[SummarizeContextFrame]

// Runner_ServiceDesc is the grpc.ServiceDesc for Runner service.
// It's only intended for direct use with grpc.RegisterService,
// and not to be introspected or modified (even as a copy)
var Runner_ServiceDesc = grpc.ServiceDesc{
	ServiceName: "dex.runner.v1.Runner",
	HandlerType: (*RunnerServer)(nil),
	Methods: []grpc.MethodDesc{
		{
			MethodName: "Info",
			Handler:    _Runner_Info_Handler,
		},
		{
			MethodName: "Configure",
			Handler:    _Runner_Configure_Handler,
		},
		{
			MethodName: "BuildUserMessage",
			Handler:    _Runner_BuildUserMessage_Handler,
		},
		{
			MethodName: "BuildUnfinishedTurnMessages",
			Handler:    _Runner_BuildUnfinishedTurnMessages_Handler,
		},
		{
			MethodName: "CancelToolTask",
			Handler:    _Runner_CancelToolTask_Handler,
		},
		{
			MethodName: "EstimateInputTokens",
			Handler:    _Runner_EstimateInputTokens_Handler,
		},
		{
			MethodName: "SelectCompactionCutoff",
			Handler:    _Runner_SelectCompactionCutoff_Handler,
		},
	},
	Streams: []grpc.StreamDesc{
		{
			StreamName:    "RunModelStep",
			Handler:       _Runner_RunModelStep_Handler,
			ServerStreams: true,
		},
		{
			StreamName:    "ExecuteDeferredToolCall",
			Handler:       _Runner_ExecuteDeferredToolCall_Handler,
			ServerStreams: true,
		},
		{
			StreamName:    "PollToolTask",
			Handler:       _Runner_PollToolTask_Handler,
			ServerStreams: true,
		},
		{
			StreamName:    "SummarizeContext",
			Handler:       _Runner_SummarizeContext_Handler,
			ServerStreams: true,
		},
	},
	Metadata: "dex/runner/v1/runner.proto",
}
