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

// Code generated by protoc-gen-go. DO NOT EDIT.
// versions:
// 	protoc-gen-go v1.36.12
// 	protoc        v3.21.12
// source: dex/runner/v1/runner.proto

package runnerpb

import (
	protoreflect "google.golang.org/protobuf/reflect/protoreflect"
	protoimpl "google.golang.org/protobuf/runtime/protoimpl"
	reflect "reflect"
	sync "sync"
	unsafe "unsafe"
)

const (
	// Verify that this generated code is sufficiently up-to-date.
	_ = protoimpl.EnforceVersion(20 - protoimpl.MinVersion)
	// Verify that runtime/protoimpl is sufficiently up-to-date.
	_ = protoimpl.EnforceVersion(protoimpl.MaxVersion - 20)
)

// InfoRequest is empty.
//
// Set by the host, once after the process starts.
type InfoRequest struct {
	state         protoimpl.MessageState `protogen:"open.v1"`
	unknownFields protoimpl.UnknownFields
	sizeCache     protoimpl.SizeCache
}

func (x *InfoRequest) Reset() {
	*x = InfoRequest{}
	mi := &file_dex_runner_v1_runner_proto_msgTypes[0]
	ms := protoimpl.X.MessageStateOf(protoimpl.Pointer(x))
	ms.StoreMessageInfo(mi)
}

func (x *InfoRequest) String() string {
	return protoimpl.X.MessageStringOf(x)
}

func (*InfoRequest) ProtoMessage() {}

func (x *InfoRequest) ProtoReflect() protoreflect.Message {
	mi := &file_dex_runner_v1_runner_proto_msgTypes[0]
	if x != nil {
		ms := protoimpl.X.MessageStateOf(protoimpl.Pointer(x))
		if ms.LoadMessageInfo() == nil {
			ms.StoreMessageInfo(mi)
		}
		return ms
	}
	return mi.MessageOf(x)
}

// Deprecated: Use InfoRequest.ProtoReflect.Descriptor instead.
func (*InfoRequest) Descriptor() ([]byte, []int) {
	return file_dex_runner_v1_runner_proto_rawDescGZIP(), []int{0}
}

// InfoResponse describes the plugin.
//
// Set by the runner.
type InfoResponse struct {
	state protoimpl.MessageState `protogen:"open.v1"`
	// name is the plugin's name, for logs.
	Name string `protobuf:"bytes,1,opt,name=name,proto3" json:"name,omitempty"`
	// version is the plugin's own version, for logs.
	Version string `protobuf:"bytes,2,opt,name=version,proto3" json:"version,omitempty"`
	// protocol_versions lists the versions of this protocol the plugin speaks.
	// This file is version 1. Empty means [1].
	ProtocolVersions []int32 `protobuf:"varint,3,rep,packed,name=protocol_versions,json=protocolVersions,proto3" json:"protocol_versions,omitempty"`
	// capabilities lists the optional calls the plugin implements. The host
	// never makes an optional call whose capability is false.
	Capabilities  *Capabilities `protobuf:"bytes,4,opt,name=capabilities,proto3" json:"capabilities,omitempty"`
	unknownFields protoimpl.UnknownFields
	sizeCache     protoimpl.SizeCache
}

func (x *InfoResponse) Reset() {
	*x = InfoResponse{}
	mi := &file_dex_runner_v1_runner_proto_msgTypes[1]
	ms := protoimpl.X.MessageStateOf(protoimpl.Pointer(x))
	ms.StoreMessageInfo(mi)
}

func (x *InfoResponse) String() string {
	return protoimpl.X.MessageStringOf(x)
}

func (*InfoResponse) ProtoMessage() {}

func (x *InfoResponse) ProtoReflect() protoreflect.Message {
	mi := &file_dex_runner_v1_runner_proto_msgTypes[1]
	if x != nil {
		ms := protoimpl.X.MessageStateOf(protoimpl.Pointer(x))
		if ms.LoadMessageInfo() == nil {
			ms.StoreMessageInfo(mi)
		}
		return ms
	}
	return mi.MessageOf(x)
}

// Deprecated: Use InfoResponse.ProtoReflect.Descriptor instead.
func (*InfoResponse) Descriptor() ([]byte, []int) {
	return file_dex_runner_v1_runner_proto_rawDescGZIP(), []int{1}
}

func (x *InfoResponse) GetName() string {
	if x != nil {
		return x.Name
	}
	return ""
}

func (x *InfoResponse) GetVersion() string {
	if x != nil {
		return x.Version
	}
	return ""
}

func (x *InfoResponse) GetProtocolVersions() []int32 {
	if x != nil {
		return x.ProtocolVersions
	}
	return nil
}

func (x *InfoResponse) GetCapabilities() *Capabilities {
	if x != nil {
		return x.Capabilities
	}
	return nil
}

// Capabilities lists the optional calls a runner implements.
//
// Set by the runner, in InfoResponse.
type Capabilities struct {
	state protoimpl.MessageState `protogen:"open.v1"`
	// unfinished_turn_messages: BuildUnfinishedTurnMessages.
	UnfinishedTurnMessages bool `protobuf:"varint,1,opt,name=unfinished_turn_messages,json=unfinishedTurnMessages,proto3" json:"unfinished_turn_messages,omitempty"`
	// tool_task_polling: PollToolTask (and so task_started outcomes).
	ToolTaskPolling bool `protobuf:"varint,2,opt,name=tool_task_polling,json=toolTaskPolling,proto3" json:"tool_task_polling,omitempty"`
	// tool_task_cancelling: CancelToolTask.
	ToolTaskCancelling bool `protobuf:"varint,3,opt,name=tool_task_cancelling,json=toolTaskCancelling,proto3" json:"tool_task_cancelling,omitempty"`
	// input_token_estimation: EstimateInputTokens.
	InputTokenEstimation bool `protobuf:"varint,4,opt,name=input_token_estimation,json=inputTokenEstimation,proto3" json:"input_token_estimation,omitempty"`
	// compaction: SelectCompactionCutoff and SummarizeContext.
	Compaction bool `protobuf:"varint,5,opt,name=compaction,proto3" json:"compaction,omitempty"`
	// transcript_cache: the runner keeps the transcripts it was sent, so the
	// host may send only a session's new messages (TurnContext.cached_through).
	// The Go plugin SDK does this for every runner.
	TranscriptCache bool `protobuf:"varint,6,opt,name=transcript_cache,json=transcriptCache,proto3" json:"transcript_cache,omitempty"`
	unknownFields   protoimpl.UnknownFields
	sizeCache       protoimpl.SizeCache
}

func (x *Capabilities) Reset() {
	*x = Capabilities{}
	mi := &file_dex_runner_v1_runner_proto_msgTypes[2]
	ms := protoimpl.X.MessageStateOf(protoimpl.Pointer(x))
	ms.StoreMessageInfo(mi)
}

func (x *Capabilities) String() string {
	return protoimpl.X.MessageStringOf(x)
}

func (*Capabilities) ProtoMessage() {}

func (x *Capabilities) ProtoReflect() protoreflect.Message {
	mi := &file_dex_runner_v1_runner_proto_msgTypes[2]
	if x != nil {
		ms := protoimpl.X.MessageStateOf(protoimpl.Pointer(x))
		if ms.LoadMessageInfo() == nil {
			ms.StoreMessageInfo(mi)
		}
		return ms
	}
	return mi.MessageOf(x)
}

// Deprecated: Use Capabilities.ProtoReflect.Descriptor instead.
func (*Capabilities) Descriptor() ([]byte, []int) {
	return file_dex_runner_v1_runner_proto_rawDescGZIP(), []int{2}
}

func (x *Capabilities) GetUnfinishedTurnMessages() bool {
	if x != nil {
		return x.UnfinishedTurnMessages
	}
	return false
}

func (x *Capabilities) GetToolTaskPolling() bool {
	if x != nil {
		return x.ToolTaskPolling
	}
	return false
}

func (x *Capabilities) GetToolTaskCancelling() bool {
	if x != nil {
		return x.ToolTaskCancelling
	}
	return false
}

func (x *Capabilities) GetInputTokenEstimation() bool {
	if x != nil {
		return x.InputTokenEstimation
	}
	return false
}

func (x *Capabilities) GetCompaction() bool {
	if x != nil {
		return x.Compaction
	}
	return false
}

func (x *Capabilities) GetTranscriptCache() bool {
	if x != nil {
		return x.TranscriptCache
	}
	return false
}

// ConfigureRequest carries one agent's runner configuration.
//
// Set by the host, once per agent after each start of the process.
type ConfigureRequest struct {
	state protoimpl.MessageState `protogen:"open.v1"`
	// agent is the agent's name from the worker config.
	Agent string `protobuf:"bytes,1,opt,name=agent,proto3" json:"agent,omitempty"`
	// runner_config is the agent's runner_config as JSON text: an object, or
	// "null" when the config file has none.
	RunnerConfig string `protobuf:"bytes,2,opt,name=runner_config,json=runnerConfig,proto3" json:"runner_config,omitempty"`
	// protocol_version is the protocol version the host negotiated in the
	// handshake.
	ProtocolVersion int32 `protobuf:"varint,3,opt,name=protocol_version,json=protocolVersion,proto3" json:"protocol_version,omitempty"`
	unknownFields   protoimpl.UnknownFields
	sizeCache       protoimpl.SizeCache
}

func (x *ConfigureRequest) Reset() {
	*x = ConfigureRequest{}
	mi := &file_dex_runner_v1_runner_proto_msgTypes[3]
	ms := protoimpl.X.MessageStateOf(protoimpl.Pointer(x))
	ms.StoreMessageInfo(mi)
}

func (x *ConfigureRequest) String() string {
	return protoimpl.X.MessageStringOf(x)
}

func (*ConfigureRequest) ProtoMessage() {}

func (x *ConfigureRequest) ProtoReflect() protoreflect.Message {
	mi := &file_dex_runner_v1_runner_proto_msgTypes[3]
	if x != nil {
		ms := protoimpl.X.MessageStateOf(protoimpl.Pointer(x))
		if ms.LoadMessageInfo() == nil {
			ms.StoreMessageInfo(mi)
		}
		return ms
	}
	return mi.MessageOf(x)
}

// Deprecated: Use ConfigureRequest.ProtoReflect.Descriptor instead.
func (*ConfigureRequest) Descriptor() ([]byte, []int) {
	return file_dex_runner_v1_runner_proto_rawDescGZIP(), []int{3}
}

func (x *ConfigureRequest) GetAgent() string {
	if x != nil {
		return x.Agent
	}
	return ""
}

func (x *ConfigureRequest) GetRunnerConfig() string {
	if x != nil {
		return x.RunnerConfig
	}
	return ""
}

func (x *ConfigureRequest) GetProtocolVersion() int32 {
	if x != nil {
		return x.ProtocolVersion
	}
	return 0
}

// ConfigureResponse says what the runner offers the agent.
//
// Set by the runner.
type ConfigureResponse struct {
	state protoimpl.MessageState `protogen:"open.v1"`
	// tools lists the names of the tools the runner offers this agent's model
	// (its own tools, not the ones the host sends in the turn context). The
	// worker warns about tool_policies that name a tool not in this list, and
	// a call of a name that neither this list nor the turn's host tools hold
	// fails as "unknown tool <name>" without approval and never reaches the
	// runner. Empty means unknown: the worker then checks nothing.
	Tools []string `protobuf:"bytes,1,rep,name=tools,proto3" json:"tools,omitempty"`
	// setting_choices are the session settings this agent reads whose values
	// are a fixed list, such as the models a session may choose, so user
	// interfaces can offer them (the web page's model picker).
	SettingChoices []*SettingChoice `protobuf:"bytes,2,rep,name=setting_choices,json=settingChoices,proto3" json:"setting_choices,omitempty"`
	// tool_policies are the runner's own policies for its tools (a tool's
	// declared effect, the agent definition's policies), as it resolves them
	// where the worker config names no policy. `config validate` shows them;
	// the policy of each call is what DeferredToolCall.policy claims.
	ToolPolicies map[string]*ToolPolicy `protobuf:"bytes,3,rep,name=tool_policies,json=toolPolicies,proto3" json:"tool_policies,omitempty" protobuf_key:"bytes,1,opt,name=key" protobuf_val:"bytes,2,opt,name=value"`
	// default_tool_effect is the runner's effect for a tool of its own with
	// no policy; empty when the runner leaves it to the worker config.
	DefaultToolEffect string `protobuf:"bytes,4,opt,name=default_tool_effect,json=defaultToolEffect,proto3" json:"default_tool_effect,omitempty"`
	unknownFields     protoimpl.UnknownFields
	sizeCache         protoimpl.SizeCache
}

func (x *ConfigureResponse) Reset() {
	*x = ConfigureResponse{}
	mi := &file_dex_runner_v1_runner_proto_msgTypes[4]
	ms := protoimpl.X.MessageStateOf(protoimpl.Pointer(x))
	ms.StoreMessageInfo(mi)
}

func (x *ConfigureResponse) String() string {
	return protoimpl.X.MessageStringOf(x)
}

func (*ConfigureResponse) ProtoMessage() {}

func (x *ConfigureResponse) ProtoReflect() protoreflect.Message {
	mi := &file_dex_runner_v1_runner_proto_msgTypes[4]
	if x != nil {
		ms := protoimpl.X.MessageStateOf(protoimpl.Pointer(x))
		if ms.LoadMessageInfo() == nil {
			ms.StoreMessageInfo(mi)
		}
		return ms
	}
	return mi.MessageOf(x)
}

// Deprecated: Use ConfigureResponse.ProtoReflect.Descriptor instead.
func (*ConfigureResponse) Descriptor() ([]byte, []int) {
	return file_dex_runner_v1_runner_proto_rawDescGZIP(), []int{4}
}

func (x *ConfigureResponse) GetTools() []string {
	if x != nil {
		return x.Tools
	}
	return nil
}

func (x *ConfigureResponse) GetSettingChoices() []*SettingChoice {
	if x != nil {
		return x.SettingChoices
	}
	return nil
}

func (x *ConfigureResponse) GetToolPolicies() map[string]*ToolPolicy {
	if x != nil {
		return x.ToolPolicies
	}
	return nil
}

func (x *ConfigureResponse) GetDefaultToolEffect() string {
	if x != nil {
		return x.DefaultToolEffect
	}
	return ""
}

// SettingChoice is one session setting with a fixed list of values.
//
// Set by the runner, in ConfigureResponse.
type SettingChoice struct {
	state protoimpl.MessageState `protogen:"open.v1"`
	// key is the setting's top-level key in the session settings object.
	Key string `protobuf:"bytes,1,opt,name=key,proto3" json:"key,omitempty"`
	// values are the values a session may set, in the runner's order.
	Values []string `protobuf:"bytes,2,rep,name=values,proto3" json:"values,omitempty"`
	// default describes what applies without the setting, for display.
	Default       string `protobuf:"bytes,3,opt,name=default,proto3" json:"default,omitempty"`
	unknownFields protoimpl.UnknownFields
	sizeCache     protoimpl.SizeCache
}

func (x *SettingChoice) Reset() {
	*x = SettingChoice{}
	mi := &file_dex_runner_v1_runner_proto_msgTypes[5]
	ms := protoimpl.X.MessageStateOf(protoimpl.Pointer(x))
	ms.StoreMessageInfo(mi)
}

func (x *SettingChoice) String() string {
	return protoimpl.X.MessageStringOf(x)
}

func (*SettingChoice) ProtoMessage() {}

func (x *SettingChoice) ProtoReflect() protoreflect.Message {
	mi := &file_dex_runner_v1_runner_proto_msgTypes[5]
	if x != nil {
		ms := protoimpl.X.MessageStateOf(protoimpl.Pointer(x))
		if ms.LoadMessageInfo() == nil {
			ms.StoreMessageInfo(mi)
		}
		return ms
	}
	return mi.MessageOf(x)
}

// Deprecated: Use SettingChoice.ProtoReflect.Descriptor instead.
func (*SettingChoice) Descriptor() ([]byte, []int) {
	return file_dex_runner_v1_runner_proto_rawDescGZIP(), []int{5}
}

func (x *SettingChoice) GetKey() string {
	if x != nil {
		return x.Key
	}
	return ""
}

func (x *SettingChoice) GetValues() []string {
	if x != nil {
		return x.Values
	}
	return nil
}

func (x *SettingChoice) GetDefault() string {
	if x != nil {
		return x.Default
	}
	return ""
}

// ToolPolicy is the effect class of one tool and, optionally, an explicit
// approval rule.
//
// Set by the host in PolicySet (the operator's policies), and the runner in DeferredToolCall.policy (the policy it resolved).
type ToolPolicy struct {
	state protoimpl.MessageState `protogen:"open.v1"`
	// effect is "read", "idempotent_write", "non_idempotent_write" or
	// "unclassified".
	Effect string `protobuf:"bytes,1,opt,name=effect,proto3" json:"effect,omitempty"`
	// requires_approval overrides the effect's default approval rule when set
	// (non_idempotent_write and unclassified need approval by default).
	RequiresApproval *bool `protobuf:"varint,2,opt,name=requires_approval,json=requiresApproval,proto3,oneof" json:"requires_approval,omitempty"`
	unknownFields    protoimpl.UnknownFields
	sizeCache        protoimpl.SizeCache
}

func (x *ToolPolicy) Reset() {
	*x = ToolPolicy{}
	mi := &file_dex_runner_v1_runner_proto_msgTypes[6]
	ms := protoimpl.X.MessageStateOf(protoimpl.Pointer(x))
	ms.StoreMessageInfo(mi)
}

func (x *ToolPolicy) String() string {
	return protoimpl.X.MessageStringOf(x)
}

func (*ToolPolicy) ProtoMessage() {}

func (x *ToolPolicy) ProtoReflect() protoreflect.Message {
	mi := &file_dex_runner_v1_runner_proto_msgTypes[6]
	if x != nil {
		ms := protoimpl.X.MessageStateOf(protoimpl.Pointer(x))
		if ms.LoadMessageInfo() == nil {
			ms.StoreMessageInfo(mi)
		}
		return ms
	}
	return mi.MessageOf(x)
}

// Deprecated: Use ToolPolicy.ProtoReflect.Descriptor instead.
func (*ToolPolicy) Descriptor() ([]byte, []int) {
	return file_dex_runner_v1_runner_proto_rawDescGZIP(), []int{6}
}

func (x *ToolPolicy) GetEffect() string {
	if x != nil {
		return x.Effect
	}
	return ""
}

func (x *ToolPolicy) GetRequiresApproval() bool {
	if x != nil && x.RequiresApproval != nil {
		return *x.RequiresApproval
	}
	return false
}

// PolicySet is the session's tool policy configuration, sent with every turn
// so a runner can resolve policies without its own copy of the config.
//
// Set by the host, in TurnContext.policies.
type PolicySet struct {
	state protoimpl.MessageState `protogen:"open.v1"`
	// policies maps a tool name to its explicit policy.
	Policies map[string]*ToolPolicy `protobuf:"bytes,1,rep,name=policies,proto3" json:"policies,omitempty" protobuf_key:"bytes,1,opt,name=key" protobuf_val:"bytes,2,opt,name=value"`
	// default_effect is the effect of a tool that has no explicit policy and
	// no effect of its own (one of the effect strings above).
	DefaultEffect string `protobuf:"bytes,2,opt,name=default_effect,json=defaultEffect,proto3" json:"default_effect,omitempty"`
	unknownFields protoimpl.UnknownFields
	sizeCache     protoimpl.SizeCache
}

func (x *PolicySet) Reset() {
	*x = PolicySet{}
	mi := &file_dex_runner_v1_runner_proto_msgTypes[7]
	ms := protoimpl.X.MessageStateOf(protoimpl.Pointer(x))
	ms.StoreMessageInfo(mi)
}

func (x *PolicySet) String() string {
	return protoimpl.X.MessageStringOf(x)
}

func (*PolicySet) ProtoMessage() {}

func (x *PolicySet) ProtoReflect() protoreflect.Message {
	mi := &file_dex_runner_v1_runner_proto_msgTypes[7]
	if x != nil {
		ms := protoimpl.X.MessageStateOf(protoimpl.Pointer(x))
		if ms.LoadMessageInfo() == nil {
			ms.StoreMessageInfo(mi)
		}
		return ms
	}
	return mi.MessageOf(x)
}

// Deprecated: Use PolicySet.ProtoReflect.Descriptor instead.
func (*PolicySet) Descriptor() ([]byte, []int) {
	return file_dex_runner_v1_runner_proto_rawDescGZIP(), []int{7}
}

func (x *PolicySet) GetPolicies() map[string]*ToolPolicy {
	if x != nil {
		return x.Policies
	}
	return nil
}

func (x *PolicySet) GetDefaultEffect() string {
	if x != nil {
		return x.DefaultEffect
	}
	return ""
}

// FrameworkMessage is one item a runner asks the session to store.
//
// Set by the runner.
type FrameworkMessage struct {
	state protoimpl.MessageState `protogen:"open.v1"`
	// role is "user", "assistant" or "tool".
	Role string `protobuf:"bytes,1,opt,name=role,proto3" json:"role,omitempty"`
	// text is what people see.
	Text string `protobuf:"bytes,2,opt,name=text,proto3" json:"text,omitempty"`
	// framework_item is the framework's own encoding of the item (JSON text),
	// stored and handed back byte for byte. Empty when there is none.
	FrameworkItem string `protobuf:"bytes,3,opt,name=framework_item,json=frameworkItem,proto3" json:"framework_item,omitempty"`
	// tool_call_id links a tool message to its call.
	ToolCallId string `protobuf:"bytes,4,opt,name=tool_call_id,json=toolCallId,proto3" json:"tool_call_id,omitempty"`
	// tool_name names the tool of a tool message.
	ToolName string `protobuf:"bytes,5,opt,name=tool_name,json=toolName,proto3" json:"tool_name,omitempty"`
	// tool_status is the final status of the call a tool message reports
	// ("succeeded", "failed", "rejected", "outcome_unknown"), for display.
	ToolStatus    string `protobuf:"bytes,6,opt,name=tool_status,json=toolStatus,proto3" json:"tool_status,omitempty"`
	unknownFields protoimpl.UnknownFields
	sizeCache     protoimpl.SizeCache
}

func (x *FrameworkMessage) Reset() {
	*x = FrameworkMessage{}
	mi := &file_dex_runner_v1_runner_proto_msgTypes[8]
	ms := protoimpl.X.MessageStateOf(protoimpl.Pointer(x))
	ms.StoreMessageInfo(mi)
}

func (x *FrameworkMessage) String() string {
	return protoimpl.X.MessageStringOf(x)
}

func (*FrameworkMessage) ProtoMessage() {}

func (x *FrameworkMessage) ProtoReflect() protoreflect.Message {
	mi := &file_dex_runner_v1_runner_proto_msgTypes[8]
	if x != nil {
		ms := protoimpl.X.MessageStateOf(protoimpl.Pointer(x))
		if ms.LoadMessageInfo() == nil {
			ms.StoreMessageInfo(mi)
		}
		return ms
	}
	return mi.MessageOf(x)
}

// Deprecated: Use FrameworkMessage.ProtoReflect.Descriptor instead.
func (*FrameworkMessage) Descriptor() ([]byte, []int) {
	return file_dex_runner_v1_runner_proto_rawDescGZIP(), []int{8}
}

func (x *FrameworkMessage) GetRole() string {
	if x != nil {
		return x.Role
	}
	return ""
}

func (x *FrameworkMessage) GetText() string {
	if x != nil {
		return x.Text
	}
	return ""
}

func (x *FrameworkMessage) GetFrameworkItem() string {
	if x != nil {
		return x.FrameworkItem
	}
	return ""
}

func (x *FrameworkMessage) GetToolCallId() string {
	if x != nil {
		return x.ToolCallId
	}
	return ""
}

func (x *FrameworkMessage) GetToolName() string {
	if x != nil {
		return x.ToolName
	}
	return ""
}

func (x *FrameworkMessage) GetToolStatus() string {
	if x != nil {
		return x.ToolStatus
	}
	return ""
}

// Message is a stored FrameworkMessage with its sequence number.
//
// Set by the host, in TurnContext.messages and SummarizeContextRequest.messages.
type Message struct {
	state protoimpl.MessageState `protogen:"open.v1"`
	// sequence starts at 1 and never repeats within a session.
	Sequence int64 `protobuf:"varint,1,opt,name=sequence,proto3" json:"sequence,omitempty"`
	// role is "user", "assistant" or "tool".
	Role string `protobuf:"bytes,2,opt,name=role,proto3" json:"role,omitempty"`
	// text is what people see.
	Text string `protobuf:"bytes,3,opt,name=text,proto3" json:"text,omitempty"`
	// framework_item is exactly what a runner returned in
	// FrameworkMessage.framework_item.
	FrameworkItem string `protobuf:"bytes,4,opt,name=framework_item,json=frameworkItem,proto3" json:"framework_item,omitempty"`
	// tool_call_id links a tool message to its call.
	ToolCallId string `protobuf:"bytes,5,opt,name=tool_call_id,json=toolCallId,proto3" json:"tool_call_id,omitempty"`
	// tool_name names the tool of a tool message.
	ToolName string `protobuf:"bytes,6,opt,name=tool_name,json=toolName,proto3" json:"tool_name,omitempty"`
	// turn_id is the turn that stored the message ("turn-<n>").
	TurnId string `protobuf:"bytes,7,opt,name=turn_id,json=turnId,proto3" json:"turn_id,omitempty"`
	// tool_status is FrameworkMessage.tool_status.
	ToolStatus    string `protobuf:"bytes,8,opt,name=tool_status,json=toolStatus,proto3" json:"tool_status,omitempty"`
	unknownFields protoimpl.UnknownFields
	sizeCache     protoimpl.SizeCache
}

func (x *Message) Reset() {
	*x = Message{}
	mi := &file_dex_runner_v1_runner_proto_msgTypes[9]
	ms := protoimpl.X.MessageStateOf(protoimpl.Pointer(x))
	ms.StoreMessageInfo(mi)
}

func (x *Message) String() string {
	return protoimpl.X.MessageStringOf(x)
}

func (*Message) ProtoMessage() {}

func (x *Message) ProtoReflect() protoreflect.Message {
	mi := &file_dex_runner_v1_runner_proto_msgTypes[9]
	if x != nil {
		ms := protoimpl.X.MessageStateOf(protoimpl.Pointer(x))
		if ms.LoadMessageInfo() == nil {
			ms.StoreMessageInfo(mi)
		}
		return ms
	}
	return mi.MessageOf(x)
}

// Deprecated: Use Message.ProtoReflect.Descriptor instead.
func (*Message) Descriptor() ([]byte, []int) {
	return file_dex_runner_v1_runner_proto_rawDescGZIP(), []int{9}
}

func (x *Message) GetSequence() int64 {
	if x != nil {
		return x.Sequence
	}
	return 0
}

func (x *Message) GetRole() string {
	if x != nil {
		return x.Role
	}
	return ""
}

func (x *Message) GetText() string {
	if x != nil {
		return x.Text
	}
	return ""
}

func (x *Message) GetFrameworkItem() string {
	if x != nil {
		return x.FrameworkItem
	}
	return ""
}

func (x *Message) GetToolCallId() string {
	if x != nil {
		return x.ToolCallId
	}
	return ""
}

func (x *Message) GetToolName() string {
	if x != nil {
		return x.ToolName
	}
	return ""
}

func (x *Message) GetTurnId() string {
	if x != nil {
		return x.TurnId
	}
	return ""
}

func (x *Message) GetToolStatus() string {
	if x != nil {
		return x.ToolStatus
	}
	return ""
}

// ToolCall is the session's record of one deferred tool call of the active
// turn.
//
// Set by the host, in TurnContext.tool_calls and the tool requests.
type ToolCall struct {
	state protoimpl.MessageState `protogen:"open.v1"`
	// tool_call_id is the runner's ID of the call (DeferredToolCall.tool_call_id).
	ToolCallId string `protobuf:"bytes,1,opt,name=tool_call_id,json=toolCallId,proto3" json:"tool_call_id,omitempty"`
	// tool_name is the tool the model called.
	ToolName string `protobuf:"bytes,2,opt,name=tool_name,json=toolName,proto3" json:"tool_name,omitempty"`
	// arguments is the model's JSON argument text, unchanged.
	Arguments string `protobuf:"bytes,3,opt,name=arguments,proto3" json:"arguments,omitempty"`
	// effect is the resolved effect class (see ToolPolicy.effect).
	Effect string `protobuf:"bytes,4,opt,name=effect,proto3" json:"effect,omitempty"`
	// requires_approval tells whether the call waited for approval.
	RequiresApproval bool `protobuf:"varint,5,opt,name=requires_approval,json=requiresApproval,proto3" json:"requires_approval,omitempty"`
	// status is one of "awaiting_approval", "approved", "awaiting_answer",
	// "waiting_for_timer", "waiting_for_task", "rejected", "succeeded",
	// "failed", "outcome_unknown". Runners only see final records (the last
	// four) in RunModelStep.
	Status string `protobuf:"bytes,6,opt,name=status,proto3" json:"status,omitempty"`
	// deferral_order is the call's position among the turn's deferred calls.
	// (host only)
	DeferralOrder int32 `protobuf:"varint,7,opt,name=deferral_order,json=deferralOrder,proto3" json:"deferral_order,omitempty"`
	// output is the tool's output (status "succeeded").
	Output string `protobuf:"bytes,8,opt,name=output,proto3" json:"output,omitempty"`
	// error is the failure the model sees (status "failed").
	Error string `protobuf:"bytes,9,opt,name=error,proto3" json:"error,omitempty"`
	// rejection_message is the user's message (status "rejected").
	RejectionMessage string `protobuf:"bytes,10,opt,name=rejection_message,json=rejectionMessage,proto3" json:"rejection_message,omitempty"`
	// tool_source_reference is the opaque text the runner set on the
	// DeferredToolCall.
	ToolSourceReference string `protobuf:"bytes,11,opt,name=tool_source_reference,json=toolSourceReference,proto3" json:"tool_source_reference,omitempty"`
	// cancellation_reason says why the call was cancelled, or is empty.
	CancellationReason string `protobuf:"bytes,12,opt,name=cancellation_reason,json=cancellationReason,proto3" json:"cancellation_reason,omitempty"`
	// input_continuation is the continuation of the tool's last
	// ToolInputRequested: the tool reads it, with
	// ExecuteToolRequest.input_answers, when the call runs again after the
	// user answered.
	InputContinuation string `protobuf:"bytes,13,opt,name=input_continuation,json=inputContinuation,proto3" json:"input_continuation,omitempty"`
	// task_id is the handle of the tool task the call started, if any.
	TaskId string `protobuf:"bytes,14,opt,name=task_id,json=taskId,proto3" json:"task_id,omitempty"`
	// task_poll_interval_seconds is the wait before the task's next poll.
	TaskPollIntervalSeconds int32 `protobuf:"varint,15,opt,name=task_poll_interval_seconds,json=taskPollIntervalSeconds,proto3" json:"task_poll_interval_seconds,omitempty"`
	unknownFields           protoimpl.UnknownFields
	sizeCache               protoimpl.SizeCache
}

func (x *ToolCall) Reset() {
	*x = ToolCall{}
	mi := &file_dex_runner_v1_runner_proto_msgTypes[10]
	ms := protoimpl.X.MessageStateOf(protoimpl.Pointer(x))
	ms.StoreMessageInfo(mi)
}

func (x *ToolCall) String() string {
	return protoimpl.X.MessageStringOf(x)
}

func (*ToolCall) ProtoMessage() {}

func (x *ToolCall) ProtoReflect() protoreflect.Message {
	mi := &file_dex_runner_v1_runner_proto_msgTypes[10]
	if x != nil {
		ms := protoimpl.X.MessageStateOf(protoimpl.Pointer(x))
		if ms.LoadMessageInfo() == nil {
			ms.StoreMessageInfo(mi)
		}
		return ms
	}
	return mi.MessageOf(x)
}

// Deprecated: Use ToolCall.ProtoReflect.Descriptor instead.
func (*ToolCall) Descriptor() ([]byte, []int) {
	return file_dex_runner_v1_runner_proto_rawDescGZIP(), []int{10}
}

func (x *ToolCall) GetToolCallId() string {
	if x != nil {
		return x.ToolCallId
	}
	return ""
}

func (x *ToolCall) GetToolName() string {
	if x != nil {
		return x.ToolName
	}
	return ""
}

func (x *ToolCall) GetArguments() string {
	if x != nil {
		return x.Arguments
	}
	return ""
}

func (x *ToolCall) GetEffect() string {
	if x != nil {
		return x.Effect
	}
	return ""
}

func (x *ToolCall) GetRequiresApproval() bool {
	if x != nil {
		return x.RequiresApproval
	}
	return false
}

func (x *ToolCall) GetStatus() string {
	if x != nil {
		return x.Status
	}
	return ""
}

func (x *ToolCall) GetDeferralOrder() int32 {
	if x != nil {
		return x.DeferralOrder
	}
	return 0
}

func (x *ToolCall) GetOutput() string {
	if x != nil {
		return x.Output
	}
	return ""
}

func (x *ToolCall) GetError() string {
	if x != nil {
		return x.Error
	}
	return ""
}

func (x *ToolCall) GetRejectionMessage() string {
	if x != nil {
		return x.RejectionMessage
	}
	return ""
}

func (x *ToolCall) GetToolSourceReference() string {
	if x != nil {
		return x.ToolSourceReference
	}
	return ""
}

func (x *ToolCall) GetCancellationReason() string {
	if x != nil {
		return x.CancellationReason
	}
	return ""
}

func (x *ToolCall) GetInputContinuation() string {
	if x != nil {
		return x.InputContinuation
	}
	return ""
}

func (x *ToolCall) GetTaskId() string {
	if x != nil {
		return x.TaskId
	}
	return ""
}

func (x *ToolCall) GetTaskPollIntervalSeconds() int32 {
	if x != nil {
		return x.TaskPollIntervalSeconds
	}
	return 0
}

// Usage counts tokens of one model call.
//
// Set by the runner, with each outcome of a model call.
type Usage struct {
	state protoimpl.MessageState `protogen:"open.v1"`
	// input_tokens counts the tokens sent to the model.
	InputTokens int64 `protobuf:"varint,1,opt,name=input_tokens,json=inputTokens,proto3" json:"input_tokens,omitempty"`
	// output_tokens counts the tokens the model produced.
	OutputTokens int64 `protobuf:"varint,2,opt,name=output_tokens,json=outputTokens,proto3" json:"output_tokens,omitempty"`
	// cached_input_tokens counts input tokens served from a prompt cache.
	CachedInputTokens int64 `protobuf:"varint,3,opt,name=cached_input_tokens,json=cachedInputTokens,proto3" json:"cached_input_tokens,omitempty"`
	// reasoning_tokens counts the model's reasoning tokens.
	ReasoningTokens int64 `protobuf:"varint,4,opt,name=reasoning_tokens,json=reasoningTokens,proto3" json:"reasoning_tokens,omitempty"`
	// total_tokens is the provider's total. Leave it unset and the host
	// records input_tokens + output_tokens.
	TotalTokens *int64 `protobuf:"varint,5,opt,name=total_tokens,json=totalTokens,proto3,oneof" json:"total_tokens,omitempty"`
	// model_calls counts the model calls the step made. Leave it unset for
	// one call; 0 records none (an answer served without a model call).
	ModelCalls    *int64 `protobuf:"varint,6,opt,name=model_calls,json=modelCalls,proto3,oneof" json:"model_calls,omitempty"`
	unknownFields protoimpl.UnknownFields
	sizeCache     protoimpl.SizeCache
}

func (x *Usage) Reset() {
	*x = Usage{}
	mi := &file_dex_runner_v1_runner_proto_msgTypes[11]
	ms := protoimpl.X.MessageStateOf(protoimpl.Pointer(x))
	ms.StoreMessageInfo(mi)
}

func (x *Usage) String() string {
	return protoimpl.X.MessageStringOf(x)
}

func (*Usage) ProtoMessage() {}

func (x *Usage) ProtoReflect() protoreflect.Message {
	mi := &file_dex_runner_v1_runner_proto_msgTypes[11]
	if x != nil {
		ms := protoimpl.X.MessageStateOf(protoimpl.Pointer(x))
		if ms.LoadMessageInfo() == nil {
			ms.StoreMessageInfo(mi)
		}
		return ms
	}
	return mi.MessageOf(x)
}

// Deprecated: Use Usage.ProtoReflect.Descriptor instead.
func (*Usage) Descriptor() ([]byte, []int) {
	return file_dex_runner_v1_runner_proto_rawDescGZIP(), []int{11}
}

func (x *Usage) GetInputTokens() int64 {
	if x != nil {
		return x.InputTokens
	}
	return 0
}

func (x *Usage) GetOutputTokens() int64 {
	if x != nil {
		return x.OutputTokens
	}
	return 0
}

func (x *Usage) GetCachedInputTokens() int64 {
	if x != nil {
		return x.CachedInputTokens
	}
	return 0
}

func (x *Usage) GetReasoningTokens() int64 {
	if x != nil {
		return x.ReasoningTokens
	}
	return 0
}

func (x *Usage) GetTotalTokens() int64 {
	if x != nil && x.TotalTokens != nil {
		return *x.TotalTokens
	}
	return 0
}

func (x *Usage) GetModelCalls() int64 {
	if x != nil && x.ModelCalls != nil {
		return *x.ModelCalls
	}
	return 0
}

// ModelCallMetadata describes one model call for tracing. Leave a field
// empty when the framework does not expose it.
//
// Set by the runner, with each outcome of a model call.
type ModelCallMetadata struct {
	state protoimpl.MessageState `protogen:"open.v1"`
	// request_model is the model name the runner asked for.
	RequestModel string `protobuf:"bytes,1,opt,name=request_model,json=requestModel,proto3" json:"request_model,omitempty"`
	// response_model is the model name the provider reported.
	ResponseModel string `protobuf:"bytes,2,opt,name=response_model,json=responseModel,proto3" json:"response_model,omitempty"`
	// provider_name names the provider, such as "openai".
	ProviderName string `protobuf:"bytes,3,opt,name=provider_name,json=providerName,proto3" json:"provider_name,omitempty"`
	// response_id is the provider's ID of the response.
	ResponseId string `protobuf:"bytes,4,opt,name=response_id,json=responseId,proto3" json:"response_id,omitempty"`
	// finish_reasons are the provider's finish reasons.
	FinishReasons []string `protobuf:"bytes,5,rep,name=finish_reasons,json=finishReasons,proto3" json:"finish_reasons,omitempty"`
	unknownFields protoimpl.UnknownFields
	sizeCache     protoimpl.SizeCache
}

func (x *ModelCallMetadata) Reset() {
	*x = ModelCallMetadata{}
	mi := &file_dex_runner_v1_runner_proto_msgTypes[12]
	ms := protoimpl.X.MessageStateOf(protoimpl.Pointer(x))
	ms.StoreMessageInfo(mi)
}

func (x *ModelCallMetadata) String() string {
	return protoimpl.X.MessageStringOf(x)
}

func (*ModelCallMetadata) ProtoMessage() {}

func (x *ModelCallMetadata) ProtoReflect() protoreflect.Message {
	mi := &file_dex_runner_v1_runner_proto_msgTypes[12]
	if x != nil {
		ms := protoimpl.X.MessageStateOf(protoimpl.Pointer(x))
		if ms.LoadMessageInfo() == nil {
			ms.StoreMessageInfo(mi)
		}
		return ms
	}
	return mi.MessageOf(x)
}

// Deprecated: Use ModelCallMetadata.ProtoReflect.Descriptor instead.
func (*ModelCallMetadata) Descriptor() ([]byte, []int) {
	return file_dex_runner_v1_runner_proto_rawDescGZIP(), []int{12}
}

func (x *ModelCallMetadata) GetRequestModel() string {
	if x != nil {
		return x.RequestModel
	}
	return ""
}

func (x *ModelCallMetadata) GetResponseModel() string {
	if x != nil {
		return x.ResponseModel
	}
	return ""
}

func (x *ModelCallMetadata) GetProviderName() string {
	if x != nil {
		return x.ProviderName
	}
	return ""
}

func (x *ModelCallMetadata) GetResponseId() string {
	if x != nil {
		return x.ResponseId
	}
	return ""
}

func (x *ModelCallMetadata) GetFinishReasons() []string {
	if x != nil {
		return x.FinishReasons
	}
	return nil
}

// ToolDefinition is a tool the session (not the runner) executes, such as a
// built-in tool or a tool of an MCP server. Offer it to the model and defer
// its calls like the runner's own.
//
// Set by the host, in TurnContext.host_tools.
type ToolDefinition struct {
	state protoimpl.MessageState `protogen:"open.v1"`
	// name is the tool name the model calls.
	Name string `protobuf:"bytes,1,opt,name=name,proto3" json:"name,omitempty"`
	// description tells the model what the tool does.
	Description string `protobuf:"bytes,2,opt,name=description,proto3" json:"description,omitempty"`
	// input_schema is the tool's JSON Schema as JSON text.
	InputSchema string `protobuf:"bytes,3,opt,name=input_schema,json=inputSchema,proto3" json:"input_schema,omitempty"`
	// effect is the tool's own effect class, or empty.
	Effect        string `protobuf:"bytes,4,opt,name=effect,proto3" json:"effect,omitempty"`
	unknownFields protoimpl.UnknownFields
	sizeCache     protoimpl.SizeCache
}

func (x *ToolDefinition) Reset() {
	*x = ToolDefinition{}
	mi := &file_dex_runner_v1_runner_proto_msgTypes[13]
	ms := protoimpl.X.MessageStateOf(protoimpl.Pointer(x))
	ms.StoreMessageInfo(mi)
}

func (x *ToolDefinition) String() string {
	return protoimpl.X.MessageStringOf(x)
}

func (*ToolDefinition) ProtoMessage() {}

func (x *ToolDefinition) ProtoReflect() protoreflect.Message {
	mi := &file_dex_runner_v1_runner_proto_msgTypes[13]
	if x != nil {
		ms := protoimpl.X.MessageStateOf(protoimpl.Pointer(x))
		if ms.LoadMessageInfo() == nil {
			ms.StoreMessageInfo(mi)
		}
		return ms
	}
	return mi.MessageOf(x)
}

// Deprecated: Use ToolDefinition.ProtoReflect.Descriptor instead.
func (*ToolDefinition) Descriptor() ([]byte, []int) {
	return file_dex_runner_v1_runner_proto_rawDescGZIP(), []int{13}
}

func (x *ToolDefinition) GetName() string {
	if x != nil {
		return x.Name
	}
	return ""
}

func (x *ToolDefinition) GetDescription() string {
	if x != nil {
		return x.Description
	}
	return ""
}

func (x *ToolDefinition) GetInputSchema() string {
	if x != nil {
		return x.InputSchema
	}
	return ""
}

func (x *ToolDefinition) GetEffect() string {
	if x != nil {
		return x.Effect
	}
	return ""
}

// TurnContext is the committed session state a runner sees.
//
// Set by the host, in every turn-level request.
type TurnContext struct {
	state protoimpl.MessageState `protogen:"open.v1"`
	// agent names the agent this call is for.
	Agent string `protobuf:"bytes,1,opt,name=agent,proto3" json:"agent,omitempty"`
	// session_id is the session (one durable workflow) this turn belongs to.
	SessionId string `protobuf:"bytes,2,opt,name=session_id,json=sessionId,proto3" json:"session_id,omitempty"`
	// turn_id is "turn-<n>".
	TurnId string `protobuf:"bytes,3,opt,name=turn_id,json=turnId,proto3" json:"turn_id,omitempty"`
	// attempt is the one-based attempt of the Step that makes this call.
	Attempt int32 `protobuf:"varint,4,opt,name=attempt,proto3" json:"attempt,omitempty"`
	// messages holds every stored message in sequence order. The last user
	// message belongs to this turn.
	Messages []*Message `protobuf:"bytes,5,rep,name=messages,proto3" json:"messages,omitempty"`
	// run_state is empty for the turn's first model call; otherwise the
	// run_state of this turn's last ToolCallsRequested.
	RunState string `protobuf:"bytes,6,opt,name=run_state,json=runState,proto3" json:"run_state,omitempty"`
	// tool_calls holds every tool call record of this turn in deferral order.
	// When RunModelStep runs, every record is final.
	ToolCalls []*ToolCall `protobuf:"bytes,7,rep,name=tool_calls,json=toolCalls,proto3" json:"tool_calls,omitempty"`
	// policies resolves tool policies: an explicit policy, else the
	// runner's own policy for the tool, else policies.default_effect. The
	// session applies the same order to the policy a DeferredToolCall
	// claims (unless the plugin is declared trusts_tool_policies: false).
	Policies *PolicySet `protobuf:"bytes,8,opt,name=policies,proto3" json:"policies,omitempty"`
	// host_tools are tools the session runs: the MCP tools of the agent's
	// servers, named "<server>__<tool>", then the enabled built-ins. Offer
	// them after the runner's own tools (a runner tool with a host tool's
	// name fails the turn before this call) and defer their calls like the
	// runner's own, with the
	// policy the policies resolve for the definition's effect and no
	// tool_source_reference: the worker routes each call itself and refuses
	// a reference starting with "mcp:" that it did not set.
	HostTools []*ToolDefinition `protobuf:"bytes,9,rep,name=host_tools,json=hostTools,proto3" json:"host_tools,omitempty"`
	// cached_from and cached_through (to a runner with capability
	// transcript_cache): when cached_through is above zero, messages holds
	// only the messages after cached_through, and the runner process has
	// the messages from cached_from through cached_through from an earlier
	// call of this session; the transcript is those, then messages. A runner that no longer has them answers FAILED_PRECONDITION
	// with the message "transcript_cache_miss", and the host sends the whole
	// transcript again. Stored messages never change, so a runner may keep
	// what it was sent for as long as it likes.
	// (host only, unless the runner announces transcript_cache)
	CachedFrom int64 `protobuf:"varint,10,opt,name=cached_from,json=cachedFrom,proto3" json:"cached_from,omitempty"`
	// (host only, unless the runner announces transcript_cache)
	CachedThrough int64 `protobuf:"varint,11,opt,name=cached_through,json=cachedThrough,proto3" json:"cached_through,omitempty"`
	// session_settings_json is the session settings the turn started with:
	// JSON of one object, such as {"model":"fast"}; empty when there are
	// none. The application sets them; resolve what they name from what the
	// runner was configured with, never use a key or URL from them.
	SessionSettingsJson string `protobuf:"bytes,12,opt,name=session_settings_json,json=sessionSettingsJson,proto3" json:"session_settings_json,omitempty"`
	// context_summary, when set, replaces the messages through its
	// last_sequence: messages start after it. Put it first in the model's
	// input.
	ContextSummary *ContextSummary `protobuf:"bytes,13,opt,name=context_summary,json=contextSummary,proto3" json:"context_summary,omitempty"`
	// plan is the session's plan (write_todos), unset before the first one.
	// Show it to the model in every model call.
	Plan *Plan `protobuf:"bytes,14,opt,name=plan,proto3" json:"plan,omitempty"`
	// interaction_mode is the turn's: "chat", "planning" (offer only
	// write_todos; the session rejects any other call) or "executing".
	InteractionMode string `protobuf:"bytes,15,opt,name=interaction_mode,json=interactionMode,proto3" json:"interaction_mode,omitempty"`
	unknownFields   protoimpl.UnknownFields
	sizeCache       protoimpl.SizeCache
}

func (x *TurnContext) Reset() {
	*x = TurnContext{}
	mi := &file_dex_runner_v1_runner_proto_msgTypes[14]
	ms := protoimpl.X.MessageStateOf(protoimpl.Pointer(x))
	ms.StoreMessageInfo(mi)
}

func (x *TurnContext) String() string {
	return protoimpl.X.MessageStringOf(x)
}

func (*TurnContext) ProtoMessage() {}

func (x *TurnContext) ProtoReflect() protoreflect.Message {
	mi := &file_dex_runner_v1_runner_proto_msgTypes[14]
	if x != nil {
		ms := protoimpl.X.MessageStateOf(protoimpl.Pointer(x))
		if ms.LoadMessageInfo() == nil {
			ms.StoreMessageInfo(mi)
		}
		return ms
	}
	return mi.MessageOf(x)
}

// Deprecated: Use TurnContext.ProtoReflect.Descriptor instead.
func (*TurnContext) Descriptor() ([]byte, []int) {
	return file_dex_runner_v1_runner_proto_rawDescGZIP(), []int{14}
}

func (x *TurnContext) GetAgent() string {
	if x != nil {
		return x.Agent
	}
	return ""
}

func (x *TurnContext) GetSessionId() string {
	if x != nil {
		return x.SessionId
	}
	return ""
}

func (x *TurnContext) GetTurnId() string {
	if x != nil {
		return x.TurnId
	}
	return ""
}

func (x *TurnContext) GetAttempt() int32 {
	if x != nil {
		return x.Attempt
	}
	return 0
}

func (x *TurnContext) GetMessages() []*Message {
	if x != nil {
		return x.Messages
	}
	return nil
}

func (x *TurnContext) GetRunState() string {
	if x != nil {
		return x.RunState
	}
	return ""
}

func (x *TurnContext) GetToolCalls() []*ToolCall {
	if x != nil {
		return x.ToolCalls
	}
	return nil
}

func (x *TurnContext) GetPolicies() *PolicySet {
	if x != nil {
		return x.Policies
	}
	return nil
}

func (x *TurnContext) GetHostTools() []*ToolDefinition {
	if x != nil {
		return x.HostTools
	}
	return nil
}

func (x *TurnContext) GetCachedFrom() int64 {
	if x != nil {
		return x.CachedFrom
	}
	return 0
}

func (x *TurnContext) GetCachedThrough() int64 {
	if x != nil {
		return x.CachedThrough
	}
	return 0
}

func (x *TurnContext) GetSessionSettingsJson() string {
	if x != nil {
		return x.SessionSettingsJson
	}
	return ""
}

func (x *TurnContext) GetContextSummary() *ContextSummary {
	if x != nil {
		return x.ContextSummary
	}
	return nil
}

func (x *TurnContext) GetPlan() *Plan {
	if x != nil {
		return x.Plan
	}
	return nil
}

func (x *TurnContext) GetInteractionMode() string {
	if x != nil {
		return x.InteractionMode
	}
	return ""
}

// Plan is a session's plan: the tasks of the last successful write_todos.
//
// Set by the host, in TurnContext.plan.
type Plan struct {
	state protoimpl.MessageState `protogen:"open.v1"`
	// revision counts the write_todos calls that changed it.
	Revision int32 `protobuf:"varint,1,opt,name=revision,proto3" json:"revision,omitempty"`
	// status is "active", "completed", "cleared" or "draft".
	Status        string      `protobuf:"bytes,2,opt,name=status,proto3" json:"status,omitempty"`
	Tasks         []*PlanTask `protobuf:"bytes,3,rep,name=tasks,proto3" json:"tasks,omitempty"`
	unknownFields protoimpl.UnknownFields
	sizeCache     protoimpl.SizeCache
}

func (x *Plan) Reset() {
	*x = Plan{}
	mi := &file_dex_runner_v1_runner_proto_msgTypes[15]
	ms := protoimpl.X.MessageStateOf(protoimpl.Pointer(x))
	ms.StoreMessageInfo(mi)
}

func (x *Plan) String() string {
	return protoimpl.X.MessageStringOf(x)
}

func (*Plan) ProtoMessage() {}

func (x *Plan) ProtoReflect() protoreflect.Message {
	mi := &file_dex_runner_v1_runner_proto_msgTypes[15]
	if x != nil {
		ms := protoimpl.X.MessageStateOf(protoimpl.Pointer(x))
		if ms.LoadMessageInfo() == nil {
			ms.StoreMessageInfo(mi)
		}
		return ms
	}
	return mi.MessageOf(x)
}

// Deprecated: Use Plan.ProtoReflect.Descriptor instead.
func (*Plan) Descriptor() ([]byte, []int) {
	return file_dex_runner_v1_runner_proto_rawDescGZIP(), []int{15}
}

func (x *Plan) GetRevision() int32 {
	if x != nil {
		return x.Revision
	}
	return 0
}

func (x *Plan) GetStatus() string {
	if x != nil {
		return x.Status
	}
	return ""
}

func (x *Plan) GetTasks() []*PlanTask {
	if x != nil {
		return x.Tasks
	}
	return nil
}

// PlanTask is one task of a plan.
//
// Set by the host, in Plan.tasks.
type PlanTask struct {
	state   protoimpl.MessageState `protogen:"open.v1"`
	Content string                 `protobuf:"bytes,1,opt,name=content,proto3" json:"content,omitempty"`
	// status is "pending", "in_progress" or "completed".
	Status        string `protobuf:"bytes,2,opt,name=status,proto3" json:"status,omitempty"`
	unknownFields protoimpl.UnknownFields
	sizeCache     protoimpl.SizeCache
}

func (x *PlanTask) Reset() {
	*x = PlanTask{}
	mi := &file_dex_runner_v1_runner_proto_msgTypes[16]
	ms := protoimpl.X.MessageStateOf(protoimpl.Pointer(x))
	ms.StoreMessageInfo(mi)
}

func (x *PlanTask) String() string {
	return protoimpl.X.MessageStringOf(x)
}

func (*PlanTask) ProtoMessage() {}

func (x *PlanTask) ProtoReflect() protoreflect.Message {
	mi := &file_dex_runner_v1_runner_proto_msgTypes[16]
	if x != nil {
		ms := protoimpl.X.MessageStateOf(protoimpl.Pointer(x))
		if ms.LoadMessageInfo() == nil {
			ms.StoreMessageInfo(mi)
		}
		return ms
	}
	return mi.MessageOf(x)
}

// Deprecated: Use PlanTask.ProtoReflect.Descriptor instead.
func (*PlanTask) Descriptor() ([]byte, []int) {
	return file_dex_runner_v1_runner_proto_rawDescGZIP(), []int{16}
}

func (x *PlanTask) GetContent() string {
	if x != nil {
		return x.Content
	}
	return ""
}

func (x *PlanTask) GetStatus() string {
	if x != nil {
		return x.Status
	}
	return ""
}

// ContextSummary is a summary that replaces a session's oldest messages.
//
// Set by the host, in TurnContext.context_summary.
type ContextSummary struct {
	state protoimpl.MessageState `protogen:"open.v1"`
	// generation counts the session's summaries: 1 for the first.
	Generation int32 `protobuf:"varint,1,opt,name=generation,proto3" json:"generation,omitempty"`
	// first_sequence and last_sequence are the messages it replaces.
	FirstSequence int64  `protobuf:"varint,2,opt,name=first_sequence,json=firstSequence,proto3" json:"first_sequence,omitempty"`
	LastSequence  int64  `protobuf:"varint,3,opt,name=last_sequence,json=lastSequence,proto3" json:"last_sequence,omitempty"`
	Text          string `protobuf:"bytes,4,opt,name=text,proto3" json:"text,omitempty"`
	// created_at is RFC 3339 in UTC.
	CreatedAt     string `protobuf:"bytes,5,opt,name=created_at,json=createdAt,proto3" json:"created_at,omitempty"`
	unknownFields protoimpl.UnknownFields
	sizeCache     protoimpl.SizeCache
}

func (x *ContextSummary) Reset() {
	*x = ContextSummary{}
	mi := &file_dex_runner_v1_runner_proto_msgTypes[17]
	ms := protoimpl.X.MessageStateOf(protoimpl.Pointer(x))
	ms.StoreMessageInfo(mi)
}

func (x *ContextSummary) String() string {
	return protoimpl.X.MessageStringOf(x)
}

func (*ContextSummary) ProtoMessage() {}

func (x *ContextSummary) ProtoReflect() protoreflect.Message {
	mi := &file_dex_runner_v1_runner_proto_msgTypes[17]
	if x != nil {
		ms := protoimpl.X.MessageStateOf(protoimpl.Pointer(x))
		if ms.LoadMessageInfo() == nil {
			ms.StoreMessageInfo(mi)
		}
		return ms
	}
	return mi.MessageOf(x)
}

// Deprecated: Use ContextSummary.ProtoReflect.Descriptor instead.
func (*ContextSummary) Descriptor() ([]byte, []int) {
	return file_dex_runner_v1_runner_proto_rawDescGZIP(), []int{17}
}

func (x *ContextSummary) GetGeneration() int32 {
	if x != nil {
		return x.Generation
	}
	return 0
}

func (x *ContextSummary) GetFirstSequence() int64 {
	if x != nil {
		return x.FirstSequence
	}
	return 0
}

func (x *ContextSummary) GetLastSequence() int64 {
	if x != nil {
		return x.LastSequence
	}
	return 0
}

func (x *ContextSummary) GetText() string {
	if x != nil {
		return x.Text
	}
	return ""
}

func (x *ContextSummary) GetCreatedAt() string {
	if x != nil {
		return x.CreatedAt
	}
	return ""
}

// TextDelta is a chunk of visible model text. Batch very small chunks: each
// frame is one event.
//
// Set by the runner, as a live frame.
type TextDelta struct {
	state protoimpl.MessageState `protogen:"open.v1"`
	// text is the chunk.
	Text          string `protobuf:"bytes,1,opt,name=text,proto3" json:"text,omitempty"`
	unknownFields protoimpl.UnknownFields
	sizeCache     protoimpl.SizeCache
}

func (x *TextDelta) Reset() {
	*x = TextDelta{}
	mi := &file_dex_runner_v1_runner_proto_msgTypes[18]
	ms := protoimpl.X.MessageStateOf(protoimpl.Pointer(x))
	ms.StoreMessageInfo(mi)
}

func (x *TextDelta) String() string {
	return protoimpl.X.MessageStringOf(x)
}

func (*TextDelta) ProtoMessage() {}

func (x *TextDelta) ProtoReflect() protoreflect.Message {
	mi := &file_dex_runner_v1_runner_proto_msgTypes[18]
	if x != nil {
		ms := protoimpl.X.MessageStateOf(protoimpl.Pointer(x))
		if ms.LoadMessageInfo() == nil {
			ms.StoreMessageInfo(mi)
		}
		return ms
	}
	return mi.MessageOf(x)
}

// Deprecated: Use TextDelta.ProtoReflect.Descriptor instead.
func (*TextDelta) Descriptor() ([]byte, []int) {
	return file_dex_runner_v1_runner_proto_rawDescGZIP(), []int{18}
}

func (x *TextDelta) GetText() string {
	if x != nil {
		return x.Text
	}
	return ""
}

// ReasoningDelta is a chunk of a provider-authored reasoning summary.
//
// Set by the runner, as a live frame.
type ReasoningDelta struct {
	state protoimpl.MessageState `protogen:"open.v1"`
	// text is the chunk.
	Text          string `protobuf:"bytes,1,opt,name=text,proto3" json:"text,omitempty"`
	unknownFields protoimpl.UnknownFields
	sizeCache     protoimpl.SizeCache
}

func (x *ReasoningDelta) Reset() {
	*x = ReasoningDelta{}
	mi := &file_dex_runner_v1_runner_proto_msgTypes[19]
	ms := protoimpl.X.MessageStateOf(protoimpl.Pointer(x))
	ms.StoreMessageInfo(mi)
}

func (x *ReasoningDelta) String() string {
	return protoimpl.X.MessageStringOf(x)
}

func (*ReasoningDelta) ProtoMessage() {}

func (x *ReasoningDelta) ProtoReflect() protoreflect.Message {
	mi := &file_dex_runner_v1_runner_proto_msgTypes[19]
	if x != nil {
		ms := protoimpl.X.MessageStateOf(protoimpl.Pointer(x))
		if ms.LoadMessageInfo() == nil {
			ms.StoreMessageInfo(mi)
		}
		return ms
	}
	return mi.MessageOf(x)
}

// Deprecated: Use ReasoningDelta.ProtoReflect.Descriptor instead.
func (*ReasoningDelta) Descriptor() ([]byte, []int) {
	return file_dex_runner_v1_runner_proto_rawDescGZIP(), []int{19}
}

func (x *ReasoningDelta) GetText() string {
	if x != nil {
		return x.Text
	}
	return ""
}

// Event is a live event: a standard type a runner may write, or a custom
// one.
//
// Set by the runner, as a live frame.
type Event struct {
	state protoimpl.MessageState `protogen:"open.v1"`
	// type names the event. The standard types a runner may write are
	// text_delta and reasoning_delta ({"text"}), and, for a tool the runner
	// runs itself inside RunModelStep, tool_call_started ({"tool_call_id",
	// "tool_name"}) and tool_call_finished ({"tool_call_id", "tool_name",
	// "status"}, a final status). Give a custom type a prefix of your
	// framework ("myframework.handoff") so it never collides with a standard
	// type. The host drops the session's own types (turn_completed,
	// usage_recorded, ...), unprefixed custom types, and standard events
	// without their fields.
	Type string `protobuf:"bytes,1,opt,name=type,proto3" json:"type,omitempty"`
	// payload_json is a JSON object as text ("" counts as "{}").
	PayloadJson   string `protobuf:"bytes,2,opt,name=payload_json,json=payloadJson,proto3" json:"payload_json,omitempty"`
	unknownFields protoimpl.UnknownFields
	sizeCache     protoimpl.SizeCache
}

func (x *Event) Reset() {
	*x = Event{}
	mi := &file_dex_runner_v1_runner_proto_msgTypes[20]
	ms := protoimpl.X.MessageStateOf(protoimpl.Pointer(x))
	ms.StoreMessageInfo(mi)
}

func (x *Event) String() string {
	return protoimpl.X.MessageStringOf(x)
}

func (*Event) ProtoMessage() {}

func (x *Event) ProtoReflect() protoreflect.Message {
	mi := &file_dex_runner_v1_runner_proto_msgTypes[20]
	if x != nil {
		ms := protoimpl.X.MessageStateOf(protoimpl.Pointer(x))
		if ms.LoadMessageInfo() == nil {
			ms.StoreMessageInfo(mi)
		}
		return ms
	}
	return mi.MessageOf(x)
}

// Deprecated: Use Event.ProtoReflect.Descriptor instead.
func (*Event) Descriptor() ([]byte, []int) {
	return file_dex_runner_v1_runner_proto_rawDescGZIP(), []int{20}
}

func (x *Event) GetType() string {
	if x != nil {
		return x.Type
	}
	return ""
}

func (x *Event) GetPayloadJson() string {
	if x != nil {
		return x.PayloadJson
	}
	return ""
}

// Heartbeat records liveness. The host already heartbeats in the
// background; send it from long loops that send no other frame.
//
// Set by the runner, as a live frame.
type Heartbeat struct {
	state         protoimpl.MessageState `protogen:"open.v1"`
	unknownFields protoimpl.UnknownFields
	sizeCache     protoimpl.SizeCache
}

func (x *Heartbeat) Reset() {
	*x = Heartbeat{}
	mi := &file_dex_runner_v1_runner_proto_msgTypes[21]
	ms := protoimpl.X.MessageStateOf(protoimpl.Pointer(x))
	ms.StoreMessageInfo(mi)
}

func (x *Heartbeat) String() string {
	return protoimpl.X.MessageStringOf(x)
}

func (*Heartbeat) ProtoMessage() {}

func (x *Heartbeat) ProtoReflect() protoreflect.Message {
	mi := &file_dex_runner_v1_runner_proto_msgTypes[21]
	if x != nil {
		ms := protoimpl.X.MessageStateOf(protoimpl.Pointer(x))
		if ms.LoadMessageInfo() == nil {
			ms.StoreMessageInfo(mi)
		}
		return ms
	}
	return mi.MessageOf(x)
}

// Deprecated: Use Heartbeat.ProtoReflect.Descriptor instead.
func (*Heartbeat) Descriptor() ([]byte, []int) {
	return file_dex_runner_v1_runner_proto_rawDescGZIP(), []int{21}
}

// HeartbeatCheckpoint records text that a retried attempt of the same tool
// call reads as ExecuteToolRequest.heartbeat_checkpoint, so it can resume
// remote work the earlier attempt started. Tool calls only. The last one
// sent wins.
//
// Set by the runner, as a live frame of a tool call.
type HeartbeatCheckpoint struct {
	state protoimpl.MessageState `protogen:"open.v1"`
	// text is the checkpoint, opaque to the host.
	Text          string `protobuf:"bytes,1,opt,name=text,proto3" json:"text,omitempty"`
	unknownFields protoimpl.UnknownFields
	sizeCache     protoimpl.SizeCache
}

func (x *HeartbeatCheckpoint) Reset() {
	*x = HeartbeatCheckpoint{}
	mi := &file_dex_runner_v1_runner_proto_msgTypes[22]
	ms := protoimpl.X.MessageStateOf(protoimpl.Pointer(x))
	ms.StoreMessageInfo(mi)
}

func (x *HeartbeatCheckpoint) String() string {
	return protoimpl.X.MessageStringOf(x)
}

func (*HeartbeatCheckpoint) ProtoMessage() {}

func (x *HeartbeatCheckpoint) ProtoReflect() protoreflect.Message {
	mi := &file_dex_runner_v1_runner_proto_msgTypes[22]
	if x != nil {
		ms := protoimpl.X.MessageStateOf(protoimpl.Pointer(x))
		if ms.LoadMessageInfo() == nil {
			ms.StoreMessageInfo(mi)
		}
		return ms
	}
	return mi.MessageOf(x)
}

// Deprecated: Use HeartbeatCheckpoint.ProtoReflect.Descriptor instead.
func (*HeartbeatCheckpoint) Descriptor() ([]byte, []int) {
	return file_dex_runner_v1_runner_proto_rawDescGZIP(), []int{22}
}

func (x *HeartbeatCheckpoint) GetText() string {
	if x != nil {
		return x.Text
	}
	return ""
}

// BuildUserMessageRequest asks for the framework's user item for text.
//
// Set by the host, for each user message.
type BuildUserMessageRequest struct {
	state protoimpl.MessageState `protogen:"open.v1"`
	// agent names the agent.
	Agent string `protobuf:"bytes,1,opt,name=agent,proto3" json:"agent,omitempty"`
	// text is what the user wrote.
	Text          string `protobuf:"bytes,2,opt,name=text,proto3" json:"text,omitempty"`
	unknownFields protoimpl.UnknownFields
	sizeCache     protoimpl.SizeCache
}

func (x *BuildUserMessageRequest) Reset() {
	*x = BuildUserMessageRequest{}
	mi := &file_dex_runner_v1_runner_proto_msgTypes[23]
	ms := protoimpl.X.MessageStateOf(protoimpl.Pointer(x))
	ms.StoreMessageInfo(mi)
}

func (x *BuildUserMessageRequest) String() string {
	return protoimpl.X.MessageStringOf(x)
}

func (*BuildUserMessageRequest) ProtoMessage() {}

func (x *BuildUserMessageRequest) ProtoReflect() protoreflect.Message {
	mi := &file_dex_runner_v1_runner_proto_msgTypes[23]
	if x != nil {
		ms := protoimpl.X.MessageStateOf(protoimpl.Pointer(x))
		if ms.LoadMessageInfo() == nil {
			ms.StoreMessageInfo(mi)
		}
		return ms
	}
	return mi.MessageOf(x)
}

// Deprecated: Use BuildUserMessageRequest.ProtoReflect.Descriptor instead.
func (*BuildUserMessageRequest) Descriptor() ([]byte, []int) {
	return file_dex_runner_v1_runner_proto_rawDescGZIP(), []int{23}
}

func (x *BuildUserMessageRequest) GetAgent() string {
	if x != nil {
		return x.Agent
	}
	return ""
}

func (x *BuildUserMessageRequest) GetText() string {
	if x != nil {
		return x.Text
	}
	return ""
}

// BuildUserMessageResponse holds the user message to store.
//
// Set by the runner.
type BuildUserMessageResponse struct {
	state protoimpl.MessageState `protogen:"open.v1"`
	// message must have role "user".
	Message       *FrameworkMessage `protobuf:"bytes,1,opt,name=message,proto3" json:"message,omitempty"`
	unknownFields protoimpl.UnknownFields
	sizeCache     protoimpl.SizeCache
}

func (x *BuildUserMessageResponse) Reset() {
	*x = BuildUserMessageResponse{}
	mi := &file_dex_runner_v1_runner_proto_msgTypes[24]
	ms := protoimpl.X.MessageStateOf(protoimpl.Pointer(x))
	ms.StoreMessageInfo(mi)
}

func (x *BuildUserMessageResponse) String() string {
	return protoimpl.X.MessageStringOf(x)
}

func (*BuildUserMessageResponse) ProtoMessage() {}

func (x *BuildUserMessageResponse) ProtoReflect() protoreflect.Message {
	mi := &file_dex_runner_v1_runner_proto_msgTypes[24]
	if x != nil {
		ms := protoimpl.X.MessageStateOf(protoimpl.Pointer(x))
		if ms.LoadMessageInfo() == nil {
			ms.StoreMessageInfo(mi)
		}
		return ms
	}
	return mi.MessageOf(x)
}

// Deprecated: Use BuildUserMessageResponse.ProtoReflect.Descriptor instead.
func (*BuildUserMessageResponse) Descriptor() ([]byte, []int) {
	return file_dex_runner_v1_runner_proto_rawDescGZIP(), []int{24}
}

func (x *BuildUserMessageResponse) GetMessage() *FrameworkMessage {
	if x != nil {
		return x.Message
	}
	return nil
}

// RunModelStepRequest asks for one model call.
//
// Set by the host, for each model call of a turn.
type RunModelStepRequest struct {
	state protoimpl.MessageState `protogen:"open.v1"`
	// turn is the committed session state; turn.agent names the agent.
	Turn          *TurnContext `protobuf:"bytes,1,opt,name=turn,proto3" json:"turn,omitempty"`
	unknownFields protoimpl.UnknownFields
	sizeCache     protoimpl.SizeCache
}

func (x *RunModelStepRequest) Reset() {
	*x = RunModelStepRequest{}
	mi := &file_dex_runner_v1_runner_proto_msgTypes[25]
	ms := protoimpl.X.MessageStateOf(protoimpl.Pointer(x))
	ms.StoreMessageInfo(mi)
}

func (x *RunModelStepRequest) String() string {
	return protoimpl.X.MessageStringOf(x)
}

func (*RunModelStepRequest) ProtoMessage() {}

func (x *RunModelStepRequest) ProtoReflect() protoreflect.Message {
	mi := &file_dex_runner_v1_runner_proto_msgTypes[25]
	if x != nil {
		ms := protoimpl.X.MessageStateOf(protoimpl.Pointer(x))
		if ms.LoadMessageInfo() == nil {
			ms.StoreMessageInfo(mi)
		}
		return ms
	}
	return mi.MessageOf(x)
}

// Deprecated: Use RunModelStepRequest.ProtoReflect.Descriptor instead.
func (*RunModelStepRequest) Descriptor() ([]byte, []int) {
	return file_dex_runner_v1_runner_proto_rawDescGZIP(), []int{25}
}

func (x *RunModelStepRequest) GetTurn() *TurnContext {
	if x != nil {
		return x.Turn
	}
	return nil
}

// RunModelStepFrame is one frame of the RunModelStep stream.
//
// Set by the runner, streamed.
type RunModelStepFrame struct {
	state protoimpl.MessageState `protogen:"open.v1"`
	// Types that are valid to be assigned to Frame:
	//
	//	*RunModelStepFrame_TextDelta
	//	*RunModelStepFrame_ReasoningDelta
	//	*RunModelStepFrame_Event
	//	*RunModelStepFrame_Heartbeat
	//	*RunModelStepFrame_Outcome
	Frame         isRunModelStepFrame_Frame `protobuf_oneof:"frame"`
	unknownFields protoimpl.UnknownFields
	sizeCache     protoimpl.SizeCache
}

func (x *RunModelStepFrame) Reset() {
	*x = RunModelStepFrame{}
	mi := &file_dex_runner_v1_runner_proto_msgTypes[26]
	ms := protoimpl.X.MessageStateOf(protoimpl.Pointer(x))
	ms.StoreMessageInfo(mi)
}

func (x *RunModelStepFrame) String() string {
	return protoimpl.X.MessageStringOf(x)
}

func (*RunModelStepFrame) ProtoMessage() {}

func (x *RunModelStepFrame) ProtoReflect() protoreflect.Message {
	mi := &file_dex_runner_v1_runner_proto_msgTypes[26]
	if x != nil {
		ms := protoimpl.X.MessageStateOf(protoimpl.Pointer(x))
		if ms.LoadMessageInfo() == nil {
			ms.StoreMessageInfo(mi)
		}
		return ms
	}
	return mi.MessageOf(x)
}

// Deprecated: Use RunModelStepFrame.ProtoReflect.Descriptor instead.
func (*RunModelStepFrame) Descriptor() ([]byte, []int) {
	return file_dex_runner_v1_runner_proto_rawDescGZIP(), []int{26}
}

func (x *RunModelStepFrame) GetFrame() isRunModelStepFrame_Frame {
	if x != nil {
		return x.Frame
	}
	return nil
}

func (x *RunModelStepFrame) GetTextDelta() *TextDelta {
	if x != nil {
		if x, ok := x.Frame.(*RunModelStepFrame_TextDelta); ok {
			return x.TextDelta
		}
	}
	return nil
}

func (x *RunModelStepFrame) GetReasoningDelta() *ReasoningDelta {
	if x != nil {
		if x, ok := x.Frame.(*RunModelStepFrame_ReasoningDelta); ok {
			return x.ReasoningDelta
		}
	}
	return nil
}

func (x *RunModelStepFrame) GetEvent() *Event {
	if x != nil {
		if x, ok := x.Frame.(*RunModelStepFrame_Event); ok {
			return x.Event
		}
	}
	return nil
}

func (x *RunModelStepFrame) GetHeartbeat() *Heartbeat {
	if x != nil {
		if x, ok := x.Frame.(*RunModelStepFrame_Heartbeat); ok {
			return x.Heartbeat
		}
	}
	return nil
}

func (x *RunModelStepFrame) GetOutcome() *RunModelStepResponse {
	if x != nil {
		if x, ok := x.Frame.(*RunModelStepFrame_Outcome); ok {
			return x.Outcome
		}
	}
	return nil
}

type isRunModelStepFrame_Frame interface {
	isRunModelStepFrame_Frame()
}

type RunModelStepFrame_TextDelta struct {
	// text_delta is a chunk of visible model text.
	TextDelta *TextDelta `protobuf:"bytes,1,opt,name=text_delta,json=textDelta,proto3,oneof"`
}

type RunModelStepFrame_ReasoningDelta struct {
	// reasoning_delta is a chunk of a reasoning summary.
	ReasoningDelta *ReasoningDelta `protobuf:"bytes,2,opt,name=reasoning_delta,json=reasoningDelta,proto3,oneof"`
}

type RunModelStepFrame_Event struct {
	// event is a custom live event.
	Event *Event `protobuf:"bytes,3,opt,name=event,proto3,oneof"`
}

type RunModelStepFrame_Heartbeat struct {
	// heartbeat records liveness.
	Heartbeat *Heartbeat `protobuf:"bytes,4,opt,name=heartbeat,proto3,oneof"`
}

type RunModelStepFrame_Outcome struct {
	// outcome is the last frame.
	Outcome *RunModelStepResponse `protobuf:"bytes,15,opt,name=outcome,proto3,oneof"`
}

func (*RunModelStepFrame_TextDelta) isRunModelStepFrame_Frame() {}

func (*RunModelStepFrame_ReasoningDelta) isRunModelStepFrame_Frame() {}

func (*RunModelStepFrame_Event) isRunModelStepFrame_Frame() {}

func (*RunModelStepFrame_Heartbeat) isRunModelStepFrame_Frame() {}

func (*RunModelStepFrame_Outcome) isRunModelStepFrame_Frame() {}

// RunModelStepResponse holds exactly one outcome.
//
// Set by the runner, as the last frame.
type RunModelStepResponse struct {
	state protoimpl.MessageState `protogen:"open.v1"`
	// Types that are valid to be assigned to Outcome:
	//
	//	*RunModelStepResponse_TurnCompleted
	//	*RunModelStepResponse_ToolCallsRequested
	Outcome       isRunModelStepResponse_Outcome `protobuf_oneof:"outcome"`
	unknownFields protoimpl.UnknownFields
	sizeCache     protoimpl.SizeCache
}

func (x *RunModelStepResponse) Reset() {
	*x = RunModelStepResponse{}
	mi := &file_dex_runner_v1_runner_proto_msgTypes[27]
	ms := protoimpl.X.MessageStateOf(protoimpl.Pointer(x))
	ms.StoreMessageInfo(mi)
}

func (x *RunModelStepResponse) String() string {
	return protoimpl.X.MessageStringOf(x)
}

func (*RunModelStepResponse) ProtoMessage() {}

func (x *RunModelStepResponse) ProtoReflect() protoreflect.Message {
	mi := &file_dex_runner_v1_runner_proto_msgTypes[27]
	if x != nil {
		ms := protoimpl.X.MessageStateOf(protoimpl.Pointer(x))
		if ms.LoadMessageInfo() == nil {
			ms.StoreMessageInfo(mi)
		}
		return ms
	}
	return mi.MessageOf(x)
}

// Deprecated: Use RunModelStepResponse.ProtoReflect.Descriptor instead.
func (*RunModelStepResponse) Descriptor() ([]byte, []int) {
	return file_dex_runner_v1_runner_proto_rawDescGZIP(), []int{27}
}

func (x *RunModelStepResponse) GetOutcome() isRunModelStepResponse_Outcome {
	if x != nil {
		return x.Outcome
	}
	return nil
}

func (x *RunModelStepResponse) GetTurnCompleted() *TurnCompleted {
	if x != nil {
		if x, ok := x.Outcome.(*RunModelStepResponse_TurnCompleted); ok {
			return x.TurnCompleted
		}
	}
	return nil
}

func (x *RunModelStepResponse) GetToolCallsRequested() *ToolCallsRequested {
	if x != nil {
		if x, ok := x.Outcome.(*RunModelStepResponse_ToolCallsRequested); ok {
			return x.ToolCallsRequested
		}
	}
	return nil
}

type isRunModelStepResponse_Outcome interface {
	isRunModelStepResponse_Outcome()
}

type RunModelStepResponse_TurnCompleted struct {
	// turn_completed ends the turn with the final answer.
	TurnCompleted *TurnCompleted `protobuf:"bytes,1,opt,name=turn_completed,json=turnCompleted,proto3,oneof"`
}

type RunModelStepResponse_ToolCallsRequested struct {
	// tool_calls_requested defers tool calls to the session's tool Steps.
	ToolCallsRequested *ToolCallsRequested `protobuf:"bytes,2,opt,name=tool_calls_requested,json=toolCallsRequested,proto3,oneof"`
}

func (*RunModelStepResponse_TurnCompleted) isRunModelStepResponse_Outcome() {}

func (*RunModelStepResponse_ToolCallsRequested) isRunModelStepResponse_Outcome() {}

// TurnCompleted ends the turn with the final answer.
//
// Set by the runner.
type TurnCompleted struct {
	state protoimpl.MessageState `protogen:"open.v1"`
	// new_messages holds the turn's items the session has not stored yet, in
	// order; the session appends them in one commit.
	NewMessages []*FrameworkMessage `protobuf:"bytes,1,rep,name=new_messages,json=newMessages,proto3" json:"new_messages,omitempty"`
	// usage covers this model call only.
	Usage *Usage `protobuf:"bytes,2,opt,name=usage,proto3" json:"usage,omitempty"`
	// metadata is optional.
	Metadata      *ModelCallMetadata `protobuf:"bytes,3,opt,name=metadata,proto3" json:"metadata,omitempty"`
	unknownFields protoimpl.UnknownFields
	sizeCache     protoimpl.SizeCache
}

func (x *TurnCompleted) Reset() {
	*x = TurnCompleted{}
	mi := &file_dex_runner_v1_runner_proto_msgTypes[28]
	ms := protoimpl.X.MessageStateOf(protoimpl.Pointer(x))
	ms.StoreMessageInfo(mi)
}

func (x *TurnCompleted) String() string {
	return protoimpl.X.MessageStringOf(x)
}

func (*TurnCompleted) ProtoMessage() {}

func (x *TurnCompleted) ProtoReflect() protoreflect.Message {
	mi := &file_dex_runner_v1_runner_proto_msgTypes[28]
	if x != nil {
		ms := protoimpl.X.MessageStateOf(protoimpl.Pointer(x))
		if ms.LoadMessageInfo() == nil {
			ms.StoreMessageInfo(mi)
		}
		return ms
	}
	return mi.MessageOf(x)
}

// Deprecated: Use TurnCompleted.ProtoReflect.Descriptor instead.
func (*TurnCompleted) Descriptor() ([]byte, []int) {
	return file_dex_runner_v1_runner_proto_rawDescGZIP(), []int{28}
}

func (x *TurnCompleted) GetNewMessages() []*FrameworkMessage {
	if x != nil {
		return x.NewMessages
	}
	return nil
}

func (x *TurnCompleted) GetUsage() *Usage {
	if x != nil {
		return x.Usage
	}
	return nil
}

func (x *TurnCompleted) GetMetadata() *ModelCallMetadata {
	if x != nil {
		return x.Metadata
	}
	return nil
}

// ToolCallsRequested defers tool calls to the session's tool Steps.
//
// Set by the runner.
type ToolCallsRequested struct {
	state protoimpl.MessageState `protogen:"open.v1"`
	// run_state must be non-empty; the next RunModelStep of this turn gets it
	// back as turn.run_state to continue after the tools.
	RunState string `protobuf:"bytes,1,opt,name=run_state,json=runState,proto3" json:"run_state,omitempty"`
	// tool_calls in model order. Each tool_call_id must be non-empty, contain
	// no "/", and be unique within the turn.
	ToolCalls []*DeferredToolCall `protobuf:"bytes,2,rep,name=tool_calls,json=toolCalls,proto3" json:"tool_calls,omitempty"`
	// new_messages are stored in the commit that records the tool calls. A
	// runner that sets them must implement BuildUnfinishedTurnMessages.
	NewMessages []*FrameworkMessage `protobuf:"bytes,3,rep,name=new_messages,json=newMessages,proto3" json:"new_messages,omitempty"`
	// usage covers this model call only.
	Usage *Usage `protobuf:"bytes,4,opt,name=usage,proto3" json:"usage,omitempty"`
	// metadata is optional.
	Metadata      *ModelCallMetadata `protobuf:"bytes,5,opt,name=metadata,proto3" json:"metadata,omitempty"`
	unknownFields protoimpl.UnknownFields
	sizeCache     protoimpl.SizeCache
}

func (x *ToolCallsRequested) Reset() {
	*x = ToolCallsRequested{}
	mi := &file_dex_runner_v1_runner_proto_msgTypes[29]
	ms := protoimpl.X.MessageStateOf(protoimpl.Pointer(x))
	ms.StoreMessageInfo(mi)
}

func (x *ToolCallsRequested) String() string {
	return protoimpl.X.MessageStringOf(x)
}

func (*ToolCallsRequested) ProtoMessage() {}

func (x *ToolCallsRequested) ProtoReflect() protoreflect.Message {
	mi := &file_dex_runner_v1_runner_proto_msgTypes[29]
	if x != nil {
		ms := protoimpl.X.MessageStateOf(protoimpl.Pointer(x))
		if ms.LoadMessageInfo() == nil {
			ms.StoreMessageInfo(mi)
		}
		return ms
	}
	return mi.MessageOf(x)
}

// Deprecated: Use ToolCallsRequested.ProtoReflect.Descriptor instead.
func (*ToolCallsRequested) Descriptor() ([]byte, []int) {
	return file_dex_runner_v1_runner_proto_rawDescGZIP(), []int{29}
}

func (x *ToolCallsRequested) GetRunState() string {
	if x != nil {
		return x.RunState
	}
	return ""
}

func (x *ToolCallsRequested) GetToolCalls() []*DeferredToolCall {
	if x != nil {
		return x.ToolCalls
	}
	return nil
}

func (x *ToolCallsRequested) GetNewMessages() []*FrameworkMessage {
	if x != nil {
		return x.NewMessages
	}
	return nil
}

func (x *ToolCallsRequested) GetUsage() *Usage {
	if x != nil {
		return x.Usage
	}
	return nil
}

func (x *ToolCallsRequested) GetMetadata() *ModelCallMetadata {
	if x != nil {
		return x.Metadata
	}
	return nil
}

// DeferredToolCall is one tool call the model asked for.
//
// Set by the runner, in ToolCallsRequested.
type DeferredToolCall struct {
	state protoimpl.MessageState `protogen:"open.v1"`
	// tool_call_id identifies the call within the turn.
	ToolCallId string `protobuf:"bytes,1,opt,name=tool_call_id,json=toolCallId,proto3" json:"tool_call_id,omitempty"`
	// tool_name is the tool the model called.
	ToolName string `protobuf:"bytes,2,opt,name=tool_name,json=toolName,proto3" json:"tool_name,omitempty"`
	// arguments is the model's JSON argument text, passed on unchanged.
	Arguments string `protobuf:"bytes,3,opt,name=arguments,proto3" json:"arguments,omitempty"`
	// policy is the runner's claim for the call (see TurnContext.policies),
	// with its own policy for the tool where the config's policies are
	// silent. Its effect must be one of the four effect strings. The session
	// records the config's policy for the tool when there is one, else this
	// claim (a plugin declared trusts_tool_policies: false may only make a
	// call stricter), else the agent's default effect.
	Policy *ToolPolicy `protobuf:"bytes,4,opt,name=policy,proto3" json:"policy,omitempty"`
	// tool_source_reference is opaque text stored on the call's record, so
	// the tool Step can find the tool without listing it again.
	ToolSourceReference string `protobuf:"bytes,5,opt,name=tool_source_reference,json=toolSourceReference,proto3" json:"tool_source_reference,omitempty"`
	unknownFields       protoimpl.UnknownFields
	sizeCache           protoimpl.SizeCache
}

func (x *DeferredToolCall) Reset() {
	*x = DeferredToolCall{}
	mi := &file_dex_runner_v1_runner_proto_msgTypes[30]
	ms := protoimpl.X.MessageStateOf(protoimpl.Pointer(x))
	ms.StoreMessageInfo(mi)
}

func (x *DeferredToolCall) String() string {
	return protoimpl.X.MessageStringOf(x)
}

func (*DeferredToolCall) ProtoMessage() {}

func (x *DeferredToolCall) ProtoReflect() protoreflect.Message {
	mi := &file_dex_runner_v1_runner_proto_msgTypes[30]
	if x != nil {
		ms := protoimpl.X.MessageStateOf(protoimpl.Pointer(x))
		if ms.LoadMessageInfo() == nil {
			ms.StoreMessageInfo(mi)
		}
		return ms
	}
	return mi.MessageOf(x)
}

// Deprecated: Use DeferredToolCall.ProtoReflect.Descriptor instead.
func (*DeferredToolCall) Descriptor() ([]byte, []int) {
	return file_dex_runner_v1_runner_proto_rawDescGZIP(), []int{30}
}

func (x *DeferredToolCall) GetToolCallId() string {
	if x != nil {
		return x.ToolCallId
	}
	return ""
}

func (x *DeferredToolCall) GetToolName() string {
	if x != nil {
		return x.ToolName
	}
	return ""
}

func (x *DeferredToolCall) GetArguments() string {
	if x != nil {
		return x.Arguments
	}
	return ""
}

func (x *DeferredToolCall) GetPolicy() *ToolPolicy {
	if x != nil {
		return x.Policy
	}
	return nil
}

func (x *DeferredToolCall) GetToolSourceReference() string {
	if x != nil {
		return x.ToolSourceReference
	}
	return ""
}

// ExecuteToolRequest asks the runner to run one approved tool call.
//
// Set by the host, for each approved tool call (again with the answers after a question).
type ExecuteToolRequest struct {
	state protoimpl.MessageState `protogen:"open.v1"`
	// agent names the agent.
	Agent string `protobuf:"bytes,1,opt,name=agent,proto3" json:"agent,omitempty"`
	// session_id is the session the call belongs to.
	SessionId string `protobuf:"bytes,2,opt,name=session_id,json=sessionId,proto3" json:"session_id,omitempty"`
	// turn_id is the turn the call belongs to.
	TurnId string `protobuf:"bytes,3,opt,name=turn_id,json=turnId,proto3" json:"turn_id,omitempty"`
	// tool_call is the approved record.
	ToolCall *ToolCall `protobuf:"bytes,4,opt,name=tool_call,json=toolCall,proto3" json:"tool_call,omitempty"`
	// idempotency_key is "<session_id>/<turn_id>/<tool_call_id>", the same on
	// every attempt. Pass it to the system the tool writes to.
	IdempotencyKey string `protobuf:"bytes,5,opt,name=idempotency_key,json=idempotencyKey,proto3" json:"idempotency_key,omitempty"`
	// attempt is one-based.
	Attempt int32 `protobuf:"varint,6,opt,name=attempt,proto3" json:"attempt,omitempty"`
	// heartbeat_checkpoint is the text an earlier attempt saved, or empty.
	HeartbeatCheckpoint string `protobuf:"bytes,7,opt,name=heartbeat_checkpoint,json=heartbeatCheckpoint,proto3" json:"heartbeat_checkpoint,omitempty"`
	// input_answers are the user's answers to the questions this call asked.
	InputAnswers []string `protobuf:"bytes,8,rep,name=input_answers,json=inputAnswers,proto3" json:"input_answers,omitempty"`
	// supports_tool_tasks tells whether a task_started outcome is allowed.
	SupportsToolTasks bool `protobuf:"varint,9,opt,name=supports_tool_tasks,json=supportsToolTasks,proto3" json:"supports_tool_tasks,omitempty"`
	unknownFields     protoimpl.UnknownFields
	sizeCache         protoimpl.SizeCache
}

func (x *ExecuteToolRequest) Reset() {
	*x = ExecuteToolRequest{}
	mi := &file_dex_runner_v1_runner_proto_msgTypes[31]
	ms := protoimpl.X.MessageStateOf(protoimpl.Pointer(x))
	ms.StoreMessageInfo(mi)
}

func (x *ExecuteToolRequest) String() string {
	return protoimpl.X.MessageStringOf(x)
}

func (*ExecuteToolRequest) ProtoMessage() {}

func (x *ExecuteToolRequest) ProtoReflect() protoreflect.Message {
	mi := &file_dex_runner_v1_runner_proto_msgTypes[31]
	if x != nil {
		ms := protoimpl.X.MessageStateOf(protoimpl.Pointer(x))
		if ms.LoadMessageInfo() == nil {
			ms.StoreMessageInfo(mi)
		}
		return ms
	}
	return mi.MessageOf(x)
}

// Deprecated: Use ExecuteToolRequest.ProtoReflect.Descriptor instead.
func (*ExecuteToolRequest) Descriptor() ([]byte, []int) {
	return file_dex_runner_v1_runner_proto_rawDescGZIP(), []int{31}
}

func (x *ExecuteToolRequest) GetAgent() string {
	if x != nil {
		return x.Agent
	}
	return ""
}

func (x *ExecuteToolRequest) GetSessionId() string {
	if x != nil {
		return x.SessionId
	}
	return ""
}

func (x *ExecuteToolRequest) GetTurnId() string {
	if x != nil {
		return x.TurnId
	}
	return ""
}

func (x *ExecuteToolRequest) GetToolCall() *ToolCall {
	if x != nil {
		return x.ToolCall
	}
	return nil
}

func (x *ExecuteToolRequest) GetIdempotencyKey() string {
	if x != nil {
		return x.IdempotencyKey
	}
	return ""
}

func (x *ExecuteToolRequest) GetAttempt() int32 {
	if x != nil {
		return x.Attempt
	}
	return 0
}

func (x *ExecuteToolRequest) GetHeartbeatCheckpoint() string {
	if x != nil {
		return x.HeartbeatCheckpoint
	}
	return ""
}

func (x *ExecuteToolRequest) GetInputAnswers() []string {
	if x != nil {
		return x.InputAnswers
	}
	return nil
}

func (x *ExecuteToolRequest) GetSupportsToolTasks() bool {
	if x != nil {
		return x.SupportsToolTasks
	}
	return false
}

// PollToolTaskRequest polls one tool task.
//
// Set by the host, after each poll interval of a tool task.
type PollToolTaskRequest struct {
	state protoimpl.MessageState `protogen:"open.v1"`
	// agent names the agent.
	Agent string `protobuf:"bytes,1,opt,name=agent,proto3" json:"agent,omitempty"`
	// session_id is the session the call belongs to.
	SessionId string `protobuf:"bytes,2,opt,name=session_id,json=sessionId,proto3" json:"session_id,omitempty"`
	// turn_id is the turn the call belongs to.
	TurnId string `protobuf:"bytes,3,opt,name=turn_id,json=turnId,proto3" json:"turn_id,omitempty"`
	// tool_call is the record of the call that started the task.
	ToolCall *ToolCall `protobuf:"bytes,4,opt,name=tool_call,json=toolCall,proto3" json:"tool_call,omitempty"`
	// task_id is ToolTaskStarted.task_id.
	TaskId string `protobuf:"bytes,5,opt,name=task_id,json=taskId,proto3" json:"task_id,omitempty"`
	// continuation is the continuation stored by the last pending poll or
	// question.
	Continuation string `protobuf:"bytes,6,opt,name=continuation,proto3" json:"continuation,omitempty"`
	// pending_answer is the user's resolution of the task's last question, on
	// the first poll after it only; absent otherwise.
	PendingAnswer *QuestionAnswer `protobuf:"bytes,7,opt,name=pending_answer,json=pendingAnswer,proto3" json:"pending_answer,omitempty"`
	// attempt is one-based.
	Attempt       int32 `protobuf:"varint,8,opt,name=attempt,proto3" json:"attempt,omitempty"`
	unknownFields protoimpl.UnknownFields
	sizeCache     protoimpl.SizeCache
}

func (x *PollToolTaskRequest) Reset() {
	*x = PollToolTaskRequest{}
	mi := &file_dex_runner_v1_runner_proto_msgTypes[32]
	ms := protoimpl.X.MessageStateOf(protoimpl.Pointer(x))
	ms.StoreMessageInfo(mi)
}

func (x *PollToolTaskRequest) String() string {
	return protoimpl.X.MessageStringOf(x)
}

func (*PollToolTaskRequest) ProtoMessage() {}

func (x *PollToolTaskRequest) ProtoReflect() protoreflect.Message {
	mi := &file_dex_runner_v1_runner_proto_msgTypes[32]
	if x != nil {
		ms := protoimpl.X.MessageStateOf(protoimpl.Pointer(x))
		if ms.LoadMessageInfo() == nil {
			ms.StoreMessageInfo(mi)
		}
		return ms
	}
	return mi.MessageOf(x)
}

// Deprecated: Use PollToolTaskRequest.ProtoReflect.Descriptor instead.
func (*PollToolTaskRequest) Descriptor() ([]byte, []int) {
	return file_dex_runner_v1_runner_proto_rawDescGZIP(), []int{32}
}

func (x *PollToolTaskRequest) GetAgent() string {
	if x != nil {
		return x.Agent
	}
	return ""
}

func (x *PollToolTaskRequest) GetSessionId() string {
	if x != nil {
		return x.SessionId
	}
	return ""
}

func (x *PollToolTaskRequest) GetTurnId() string {
	if x != nil {
		return x.TurnId
	}
	return ""
}

func (x *PollToolTaskRequest) GetToolCall() *ToolCall {
	if x != nil {
		return x.ToolCall
	}
	return nil
}

func (x *PollToolTaskRequest) GetTaskId() string {
	if x != nil {
		return x.TaskId
	}
	return ""
}

func (x *PollToolTaskRequest) GetContinuation() string {
	if x != nil {
		return x.Continuation
	}
	return ""
}

func (x *PollToolTaskRequest) GetPendingAnswer() *QuestionAnswer {
	if x != nil {
		return x.PendingAnswer
	}
	return nil
}

func (x *PollToolTaskRequest) GetAttempt() int32 {
	if x != nil {
		return x.Attempt
	}
	return 0
}

// QuestionAnswer is how a user resolved a question.
//
// Set by the host, in PollToolTaskRequest.pending_answer.
type QuestionAnswer struct {
	state protoimpl.MessageState `protogen:"open.v1"`
	// resolution is "answered", "declined" or "deadline_passed".
	Resolution string `protobuf:"bytes,1,opt,name=resolution,proto3" json:"resolution,omitempty"`
	// answer is the user's answer when resolution is "answered".
	Answer        string `protobuf:"bytes,2,opt,name=answer,proto3" json:"answer,omitempty"`
	unknownFields protoimpl.UnknownFields
	sizeCache     protoimpl.SizeCache
}

func (x *QuestionAnswer) Reset() {
	*x = QuestionAnswer{}
	mi := &file_dex_runner_v1_runner_proto_msgTypes[33]
	ms := protoimpl.X.MessageStateOf(protoimpl.Pointer(x))
	ms.StoreMessageInfo(mi)
}

func (x *QuestionAnswer) String() string {
	return protoimpl.X.MessageStringOf(x)
}

func (*QuestionAnswer) ProtoMessage() {}

func (x *QuestionAnswer) ProtoReflect() protoreflect.Message {
	mi := &file_dex_runner_v1_runner_proto_msgTypes[33]
	if x != nil {
		ms := protoimpl.X.MessageStateOf(protoimpl.Pointer(x))
		if ms.LoadMessageInfo() == nil {
			ms.StoreMessageInfo(mi)
		}
		return ms
	}
	return mi.MessageOf(x)
}

// Deprecated: Use QuestionAnswer.ProtoReflect.Descriptor instead.
func (*QuestionAnswer) Descriptor() ([]byte, []int) {
	return file_dex_runner_v1_runner_proto_rawDescGZIP(), []int{33}
}

func (x *QuestionAnswer) GetResolution() string {
	if x != nil {
		return x.Resolution
	}
	return ""
}

func (x *QuestionAnswer) GetAnswer() string {
	if x != nil {
		return x.Answer
	}
	return ""
}

// ToolCallFrame is one frame of an ExecuteDeferredToolCall or PollToolTask
// stream.
//
// Set by the runner, streamed.
type ToolCallFrame struct {
	state protoimpl.MessageState `protogen:"open.v1"`
	// Types that are valid to be assigned to Frame:
	//
	//	*ToolCallFrame_TextDelta
	//	*ToolCallFrame_ReasoningDelta
	//	*ToolCallFrame_Event
	//	*ToolCallFrame_Heartbeat
	//	*ToolCallFrame_HeartbeatCheckpoint
	//	*ToolCallFrame_Outcome
	Frame         isToolCallFrame_Frame `protobuf_oneof:"frame"`
	unknownFields protoimpl.UnknownFields
	sizeCache     protoimpl.SizeCache
}

func (x *ToolCallFrame) Reset() {
	*x = ToolCallFrame{}
	mi := &file_dex_runner_v1_runner_proto_msgTypes[34]
	ms := protoimpl.X.MessageStateOf(protoimpl.Pointer(x))
	ms.StoreMessageInfo(mi)
}

func (x *ToolCallFrame) String() string {
	return protoimpl.X.MessageStringOf(x)
}

func (*ToolCallFrame) ProtoMessage() {}

func (x *ToolCallFrame) ProtoReflect() protoreflect.Message {
	mi := &file_dex_runner_v1_runner_proto_msgTypes[34]
	if x != nil {
		ms := protoimpl.X.MessageStateOf(protoimpl.Pointer(x))
		if ms.LoadMessageInfo() == nil {
			ms.StoreMessageInfo(mi)
		}
		return ms
	}
	return mi.MessageOf(x)
}

// Deprecated: Use ToolCallFrame.ProtoReflect.Descriptor instead.
func (*ToolCallFrame) Descriptor() ([]byte, []int) {
	return file_dex_runner_v1_runner_proto_rawDescGZIP(), []int{34}
}

func (x *ToolCallFrame) GetFrame() isToolCallFrame_Frame {
	if x != nil {
		return x.Frame
	}
	return nil
}

func (x *ToolCallFrame) GetTextDelta() *TextDelta {
	if x != nil {
		if x, ok := x.Frame.(*ToolCallFrame_TextDelta); ok {
			return x.TextDelta
		}
	}
	return nil
}

func (x *ToolCallFrame) GetReasoningDelta() *ReasoningDelta {
	if x != nil {
		if x, ok := x.Frame.(*ToolCallFrame_ReasoningDelta); ok {
			return x.ReasoningDelta
		}
	}
	return nil
}

func (x *ToolCallFrame) GetEvent() *Event {
	if x != nil {
		if x, ok := x.Frame.(*ToolCallFrame_Event); ok {
			return x.Event
		}
	}
	return nil
}

func (x *ToolCallFrame) GetHeartbeat() *Heartbeat {
	if x != nil {
		if x, ok := x.Frame.(*ToolCallFrame_Heartbeat); ok {
			return x.Heartbeat
		}
	}
	return nil
}

func (x *ToolCallFrame) GetHeartbeatCheckpoint() *HeartbeatCheckpoint {
	if x != nil {
		if x, ok := x.Frame.(*ToolCallFrame_HeartbeatCheckpoint); ok {
			return x.HeartbeatCheckpoint
		}
	}
	return nil
}

func (x *ToolCallFrame) GetOutcome() *ExecuteToolResponse {
	if x != nil {
		if x, ok := x.Frame.(*ToolCallFrame_Outcome); ok {
			return x.Outcome
		}
	}
	return nil
}

type isToolCallFrame_Frame interface {
	isToolCallFrame_Frame()
}

type ToolCallFrame_TextDelta struct {
	// text_delta is a chunk of visible text.
	TextDelta *TextDelta `protobuf:"bytes,1,opt,name=text_delta,json=textDelta,proto3,oneof"`
}

type ToolCallFrame_ReasoningDelta struct {
	// reasoning_delta is a chunk of a reasoning summary.
	ReasoningDelta *ReasoningDelta `protobuf:"bytes,2,opt,name=reasoning_delta,json=reasoningDelta,proto3,oneof"`
}

type ToolCallFrame_Event struct {
	// event is a custom live event.
	Event *Event `protobuf:"bytes,3,opt,name=event,proto3,oneof"`
}

type ToolCallFrame_Heartbeat struct {
	// heartbeat records liveness.
	Heartbeat *Heartbeat `protobuf:"bytes,4,opt,name=heartbeat,proto3,oneof"`
}

type ToolCallFrame_HeartbeatCheckpoint struct {
	// heartbeat_checkpoint saves resumable progress.
	HeartbeatCheckpoint *HeartbeatCheckpoint `protobuf:"bytes,5,opt,name=heartbeat_checkpoint,json=heartbeatCheckpoint,proto3,oneof"`
}

type ToolCallFrame_Outcome struct {
	// outcome is the last frame.
	Outcome *ExecuteToolResponse `protobuf:"bytes,15,opt,name=outcome,proto3,oneof"`
}

func (*ToolCallFrame_TextDelta) isToolCallFrame_Frame() {}

func (*ToolCallFrame_ReasoningDelta) isToolCallFrame_Frame() {}

func (*ToolCallFrame_Event) isToolCallFrame_Frame() {}

func (*ToolCallFrame_Heartbeat) isToolCallFrame_Frame() {}

func (*ToolCallFrame_HeartbeatCheckpoint) isToolCallFrame_Frame() {}

func (*ToolCallFrame_Outcome) isToolCallFrame_Frame() {}

// ExecuteToolResponse holds exactly one outcome of a tool call or poll.
//
// Set by the runner, as the last frame.
type ExecuteToolResponse struct {
	state protoimpl.MessageState `protogen:"open.v1"`
	// Types that are valid to be assigned to Outcome:
	//
	//	*ExecuteToolResponse_Result
	//	*ExecuteToolResponse_Error
	//	*ExecuteToolResponse_InputRequested
	//	*ExecuteToolResponse_TaskStarted
	//	*ExecuteToolResponse_TaskPending
	Outcome       isExecuteToolResponse_Outcome `protobuf_oneof:"outcome"`
	unknownFields protoimpl.UnknownFields
	sizeCache     protoimpl.SizeCache
}

func (x *ExecuteToolResponse) Reset() {
	*x = ExecuteToolResponse{}
	mi := &file_dex_runner_v1_runner_proto_msgTypes[35]
	ms := protoimpl.X.MessageStateOf(protoimpl.Pointer(x))
	ms.StoreMessageInfo(mi)
}

func (x *ExecuteToolResponse) String() string {
	return protoimpl.X.MessageStringOf(x)
}

func (*ExecuteToolResponse) ProtoMessage() {}

func (x *ExecuteToolResponse) ProtoReflect() protoreflect.Message {
	mi := &file_dex_runner_v1_runner_proto_msgTypes[35]
	if x != nil {
		ms := protoimpl.X.MessageStateOf(protoimpl.Pointer(x))
		if ms.LoadMessageInfo() == nil {
			ms.StoreMessageInfo(mi)
		}
		return ms
	}
	return mi.MessageOf(x)
}

// Deprecated: Use ExecuteToolResponse.ProtoReflect.Descriptor instead.
func (*ExecuteToolResponse) Descriptor() ([]byte, []int) {
	return file_dex_runner_v1_runner_proto_rawDescGZIP(), []int{35}
}

func (x *ExecuteToolResponse) GetOutcome() isExecuteToolResponse_Outcome {
	if x != nil {
		return x.Outcome
	}
	return nil
}

func (x *ExecuteToolResponse) GetResult() *ToolResult {
	if x != nil {
		if x, ok := x.Outcome.(*ExecuteToolResponse_Result); ok {
			return x.Result
		}
	}
	return nil
}

func (x *ExecuteToolResponse) GetError() *ToolExecutionError {
	if x != nil {
		if x, ok := x.Outcome.(*ExecuteToolResponse_Error); ok {
			return x.Error
		}
	}
	return nil
}

func (x *ExecuteToolResponse) GetInputRequested() *ToolInputRequested {
	if x != nil {
		if x, ok := x.Outcome.(*ExecuteToolResponse_InputRequested); ok {
			return x.InputRequested
		}
	}
	return nil
}

func (x *ExecuteToolResponse) GetTaskStarted() *ToolTaskStarted {
	if x != nil {
		if x, ok := x.Outcome.(*ExecuteToolResponse_TaskStarted); ok {
			return x.TaskStarted
		}
	}
	return nil
}

func (x *ExecuteToolResponse) GetTaskPending() *ToolTaskPending {
	if x != nil {
		if x, ok := x.Outcome.(*ExecuteToolResponse_TaskPending); ok {
			return x.TaskPending
		}
	}
	return nil
}

type isExecuteToolResponse_Outcome interface {
	isExecuteToolResponse_Outcome()
}

type ExecuteToolResponse_Result struct {
	// result: the call succeeded.
	Result *ToolResult `protobuf:"bytes,1,opt,name=result,proto3,oneof"`
}

type ExecuteToolResponse_Error struct {
	// error: a failure the model sees; the call is recorded failed and not
	// retried.
	Error *ToolExecutionError `protobuf:"bytes,2,opt,name=error,proto3,oneof"`
}

type ExecuteToolResponse_InputRequested struct {
	// input_requested asks the user a question before the tool takes any
	// effect; the call runs again with the answer in input_answers.
	InputRequested *ToolInputRequested `protobuf:"bytes,3,opt,name=input_requested,json=inputRequested,proto3,oneof"`
}

type ExecuteToolResponse_TaskStarted struct {
	// task_started hands remote work to the session, which polls it with
	// PollToolTask. Only when supports_tool_tasks was true.
	TaskStarted *ToolTaskStarted `protobuf:"bytes,4,opt,name=task_started,json=taskStarted,proto3,oneof"`
}

type ExecuteToolResponse_TaskPending struct {
	// task_pending asks to be polled again. PollToolTask only.
	TaskPending *ToolTaskPending `protobuf:"bytes,5,opt,name=task_pending,json=taskPending,proto3,oneof"`
}

func (*ExecuteToolResponse_Result) isExecuteToolResponse_Outcome() {}

func (*ExecuteToolResponse_Error) isExecuteToolResponse_Outcome() {}

func (*ExecuteToolResponse_InputRequested) isExecuteToolResponse_Outcome() {}

func (*ExecuteToolResponse_TaskStarted) isExecuteToolResponse_Outcome() {}

func (*ExecuteToolResponse_TaskPending) isExecuteToolResponse_Outcome() {}

// ToolResult is a successful tool output.
//
// Set by the runner.
type ToolResult struct {
	state protoimpl.MessageState `protogen:"open.v1"`
	// output is the model-visible output text.
	Output        string `protobuf:"bytes,1,opt,name=output,proto3" json:"output,omitempty"`
	unknownFields protoimpl.UnknownFields
	sizeCache     protoimpl.SizeCache
}

func (x *ToolResult) Reset() {
	*x = ToolResult{}
	mi := &file_dex_runner_v1_runner_proto_msgTypes[36]
	ms := protoimpl.X.MessageStateOf(protoimpl.Pointer(x))
	ms.StoreMessageInfo(mi)
}

func (x *ToolResult) String() string {
	return protoimpl.X.MessageStringOf(x)
}

func (*ToolResult) ProtoMessage() {}

func (x *ToolResult) ProtoReflect() protoreflect.Message {
	mi := &file_dex_runner_v1_runner_proto_msgTypes[36]
	if x != nil {
		ms := protoimpl.X.MessageStateOf(protoimpl.Pointer(x))
		if ms.LoadMessageInfo() == nil {
			ms.StoreMessageInfo(mi)
		}
		return ms
	}
	return mi.MessageOf(x)
}

// Deprecated: Use ToolResult.ProtoReflect.Descriptor instead.
func (*ToolResult) Descriptor() ([]byte, []int) {
	return file_dex_runner_v1_runner_proto_rawDescGZIP(), []int{36}
}

func (x *ToolResult) GetOutput() string {
	if x != nil {
		return x.Output
	}
	return ""
}

// ToolExecutionError is a tool failure the model should see.
//
// Set by the runner.
type ToolExecutionError struct {
	state protoimpl.MessageState `protogen:"open.v1"`
	// message is what the model sees.
	Message       string `protobuf:"bytes,1,opt,name=message,proto3" json:"message,omitempty"`
	unknownFields protoimpl.UnknownFields
	sizeCache     protoimpl.SizeCache
}

func (x *ToolExecutionError) Reset() {
	*x = ToolExecutionError{}
	mi := &file_dex_runner_v1_runner_proto_msgTypes[37]
	ms := protoimpl.X.MessageStateOf(protoimpl.Pointer(x))
	ms.StoreMessageInfo(mi)
}

func (x *ToolExecutionError) String() string {
	return protoimpl.X.MessageStringOf(x)
}

func (*ToolExecutionError) ProtoMessage() {}

func (x *ToolExecutionError) ProtoReflect() protoreflect.Message {
	mi := &file_dex_runner_v1_runner_proto_msgTypes[37]
	if x != nil {
		ms := protoimpl.X.MessageStateOf(protoimpl.Pointer(x))
		if ms.LoadMessageInfo() == nil {
			ms.StoreMessageInfo(mi)
		}
		return ms
	}
	return mi.MessageOf(x)
}

// Deprecated: Use ToolExecutionError.ProtoReflect.Descriptor instead.
func (*ToolExecutionError) Descriptor() ([]byte, []int) {
	return file_dex_runner_v1_runner_proto_rawDescGZIP(), []int{37}
}

func (x *ToolExecutionError) GetMessage() string {
	if x != nil {
		return x.Message
	}
	return ""
}

// ToolInputRequested asks the user a question for a tool call.
//
// Set by the runner.
type ToolInputRequested struct {
	state protoimpl.MessageState `protogen:"open.v1"`
	// question is the text shown to the user.
	Question string `protobuf:"bytes,1,opt,name=question,proto3" json:"question,omitempty"`
	// choices the user may pick from; may be empty.
	Choices []string `protobuf:"bytes,2,rep,name=choices,proto3" json:"choices,omitempty"`
	// allows_free_text lets the user answer with other text.
	AllowsFreeText bool `protobuf:"varint,3,opt,name=allows_free_text,json=allowsFreeText,proto3" json:"allows_free_text,omitempty"`
	// continuation is opaque text handed back with the answer.
	Continuation  string `protobuf:"bytes,4,opt,name=continuation,proto3" json:"continuation,omitempty"`
	unknownFields protoimpl.UnknownFields
	sizeCache     protoimpl.SizeCache
}

func (x *ToolInputRequested) Reset() {
	*x = ToolInputRequested{}
	mi := &file_dex_runner_v1_runner_proto_msgTypes[38]
	ms := protoimpl.X.MessageStateOf(protoimpl.Pointer(x))
	ms.StoreMessageInfo(mi)
}

func (x *ToolInputRequested) String() string {
	return protoimpl.X.MessageStringOf(x)
}

func (*ToolInputRequested) ProtoMessage() {}

func (x *ToolInputRequested) ProtoReflect() protoreflect.Message {
	mi := &file_dex_runner_v1_runner_proto_msgTypes[38]
	if x != nil {
		ms := protoimpl.X.MessageStateOf(protoimpl.Pointer(x))
		if ms.LoadMessageInfo() == nil {
			ms.StoreMessageInfo(mi)
		}
		return ms
	}
	return mi.MessageOf(x)
}

// Deprecated: Use ToolInputRequested.ProtoReflect.Descriptor instead.
func (*ToolInputRequested) Descriptor() ([]byte, []int) {
	return file_dex_runner_v1_runner_proto_rawDescGZIP(), []int{38}
}

func (x *ToolInputRequested) GetQuestion() string {
	if x != nil {
		return x.Question
	}
	return ""
}

func (x *ToolInputRequested) GetChoices() []string {
	if x != nil {
		return x.Choices
	}
	return nil
}

func (x *ToolInputRequested) GetAllowsFreeText() bool {
	if x != nil {
		return x.AllowsFreeText
	}
	return false
}

func (x *ToolInputRequested) GetContinuation() string {
	if x != nil {
		return x.Continuation
	}
	return ""
}

// ToolTaskStarted reports remote work the session polls.
//
// Set by the runner.
type ToolTaskStarted struct {
	state protoimpl.MessageState `protogen:"open.v1"`
	// task_id must be non-empty.
	TaskId string `protobuf:"bytes,1,opt,name=task_id,json=taskId,proto3" json:"task_id,omitempty"`
	// poll_interval_seconds is the wait before the first poll (0: the session's default).
	PollIntervalSeconds int32 `protobuf:"varint,2,opt,name=poll_interval_seconds,json=pollIntervalSeconds,proto3" json:"poll_interval_seconds,omitempty"`
	unknownFields       protoimpl.UnknownFields
	sizeCache           protoimpl.SizeCache
}

func (x *ToolTaskStarted) Reset() {
	*x = ToolTaskStarted{}
	mi := &file_dex_runner_v1_runner_proto_msgTypes[39]
	ms := protoimpl.X.MessageStateOf(protoimpl.Pointer(x))
	ms.StoreMessageInfo(mi)
}

func (x *ToolTaskStarted) String() string {
	return protoimpl.X.MessageStringOf(x)
}

func (*ToolTaskStarted) ProtoMessage() {}

func (x *ToolTaskStarted) ProtoReflect() protoreflect.Message {
	mi := &file_dex_runner_v1_runner_proto_msgTypes[39]
	if x != nil {
		ms := protoimpl.X.MessageStateOf(protoimpl.Pointer(x))
		if ms.LoadMessageInfo() == nil {
			ms.StoreMessageInfo(mi)
		}
		return ms
	}
	return mi.MessageOf(x)
}

// Deprecated: Use ToolTaskStarted.ProtoReflect.Descriptor instead.
func (*ToolTaskStarted) Descriptor() ([]byte, []int) {
	return file_dex_runner_v1_runner_proto_rawDescGZIP(), []int{39}
}

func (x *ToolTaskStarted) GetTaskId() string {
	if x != nil {
		return x.TaskId
	}
	return ""
}

func (x *ToolTaskStarted) GetPollIntervalSeconds() int32 {
	if x != nil {
		return x.PollIntervalSeconds
	}
	return 0
}

// ToolTaskPending asks for another poll.
//
// Set by the runner (PollToolTask only).
type ToolTaskPending struct {
	state protoimpl.MessageState `protogen:"open.v1"`
	// poll_interval_seconds is the wait before the next poll (0: the session's default).
	PollIntervalSeconds int32 `protobuf:"varint,1,opt,name=poll_interval_seconds,json=pollIntervalSeconds,proto3" json:"poll_interval_seconds,omitempty"`
	// continuation is handed back in the next PollToolTaskRequest.
	Continuation  string `protobuf:"bytes,2,opt,name=continuation,proto3" json:"continuation,omitempty"`
	unknownFields protoimpl.UnknownFields
	sizeCache     protoimpl.SizeCache
}

func (x *ToolTaskPending) Reset() {
	*x = ToolTaskPending{}
	mi := &file_dex_runner_v1_runner_proto_msgTypes[40]
	ms := protoimpl.X.MessageStateOf(protoimpl.Pointer(x))
	ms.StoreMessageInfo(mi)
}

func (x *ToolTaskPending) String() string {
	return protoimpl.X.MessageStringOf(x)
}

func (*ToolTaskPending) ProtoMessage() {}

func (x *ToolTaskPending) ProtoReflect() protoreflect.Message {
	mi := &file_dex_runner_v1_runner_proto_msgTypes[40]
	if x != nil {
		ms := protoimpl.X.MessageStateOf(protoimpl.Pointer(x))
		if ms.LoadMessageInfo() == nil {
			ms.StoreMessageInfo(mi)
		}
		return ms
	}
	return mi.MessageOf(x)
}

// Deprecated: Use ToolTaskPending.ProtoReflect.Descriptor instead.
func (*ToolTaskPending) Descriptor() ([]byte, []int) {
	return file_dex_runner_v1_runner_proto_rawDescGZIP(), []int{40}
}

func (x *ToolTaskPending) GetPollIntervalSeconds() int32 {
	if x != nil {
		return x.PollIntervalSeconds
	}
	return 0
}

func (x *ToolTaskPending) GetContinuation() string {
	if x != nil {
		return x.Continuation
	}
	return ""
}

// CancelToolTaskRequest cancels one tool task's remote work.
//
// Set by the host, when a turn with a running task is cancelled.
type CancelToolTaskRequest struct {
	state protoimpl.MessageState `protogen:"open.v1"`
	// agent names the agent.
	Agent string `protobuf:"bytes,1,opt,name=agent,proto3" json:"agent,omitempty"`
	// session_id is the session the task belongs to.
	SessionId string `protobuf:"bytes,2,opt,name=session_id,json=sessionId,proto3" json:"session_id,omitempty"`
	// tool_call is the record of the call that started the task.
	ToolCall *ToolCall `protobuf:"bytes,3,opt,name=tool_call,json=toolCall,proto3" json:"tool_call,omitempty"`
	// task_id is ToolTaskStarted.task_id.
	TaskId        string `protobuf:"bytes,4,opt,name=task_id,json=taskId,proto3" json:"task_id,omitempty"`
	unknownFields protoimpl.UnknownFields
	sizeCache     protoimpl.SizeCache
}

func (x *CancelToolTaskRequest) Reset() {
	*x = CancelToolTaskRequest{}
	mi := &file_dex_runner_v1_runner_proto_msgTypes[41]
	ms := protoimpl.X.MessageStateOf(protoimpl.Pointer(x))
	ms.StoreMessageInfo(mi)
}

func (x *CancelToolTaskRequest) String() string {
	return protoimpl.X.MessageStringOf(x)
}

func (*CancelToolTaskRequest) ProtoMessage() {}

func (x *CancelToolTaskRequest) ProtoReflect() protoreflect.Message {
	mi := &file_dex_runner_v1_runner_proto_msgTypes[41]
	if x != nil {
		ms := protoimpl.X.MessageStateOf(protoimpl.Pointer(x))
		if ms.LoadMessageInfo() == nil {
			ms.StoreMessageInfo(mi)
		}
		return ms
	}
	return mi.MessageOf(x)
}

// Deprecated: Use CancelToolTaskRequest.ProtoReflect.Descriptor instead.
func (*CancelToolTaskRequest) Descriptor() ([]byte, []int) {
	return file_dex_runner_v1_runner_proto_rawDescGZIP(), []int{41}
}

func (x *CancelToolTaskRequest) GetAgent() string {
	if x != nil {
		return x.Agent
	}
	return ""
}

func (x *CancelToolTaskRequest) GetSessionId() string {
	if x != nil {
		return x.SessionId
	}
	return ""
}

func (x *CancelToolTaskRequest) GetToolCall() *ToolCall {
	if x != nil {
		return x.ToolCall
	}
	return nil
}

func (x *CancelToolTaskRequest) GetTaskId() string {
	if x != nil {
		return x.TaskId
	}
	return ""
}

// CancelToolTaskResponse is empty.
//
// Set by the runner.
type CancelToolTaskResponse struct {
	state         protoimpl.MessageState `protogen:"open.v1"`
	unknownFields protoimpl.UnknownFields
	sizeCache     protoimpl.SizeCache
}

func (x *CancelToolTaskResponse) Reset() {
	*x = CancelToolTaskResponse{}
	mi := &file_dex_runner_v1_runner_proto_msgTypes[42]
	ms := protoimpl.X.MessageStateOf(protoimpl.Pointer(x))
	ms.StoreMessageInfo(mi)
}

func (x *CancelToolTaskResponse) String() string {
	return protoimpl.X.MessageStringOf(x)
}

func (*CancelToolTaskResponse) ProtoMessage() {}

func (x *CancelToolTaskResponse) ProtoReflect() protoreflect.Message {
	mi := &file_dex_runner_v1_runner_proto_msgTypes[42]
	if x != nil {
		ms := protoimpl.X.MessageStateOf(protoimpl.Pointer(x))
		if ms.LoadMessageInfo() == nil {
			ms.StoreMessageInfo(mi)
		}
		return ms
	}
	return mi.MessageOf(x)
}

// Deprecated: Use CancelToolTaskResponse.ProtoReflect.Descriptor instead.
func (*CancelToolTaskResponse) Descriptor() ([]byte, []int) {
	return file_dex_runner_v1_runner_proto_rawDescGZIP(), []int{42}
}

// BuildUnfinishedTurnMessagesRequest carries the failed turn.
//
// Set by the host, when a turn fails or stops after items appeared.
type BuildUnfinishedTurnMessagesRequest struct {
	state protoimpl.MessageState `protogen:"open.v1"`
	// turn is the failed turn's state; turn.agent names the agent.
	Turn          *TurnContext `protobuf:"bytes,1,opt,name=turn,proto3" json:"turn,omitempty"`
	unknownFields protoimpl.UnknownFields
	sizeCache     protoimpl.SizeCache
}

func (x *BuildUnfinishedTurnMessagesRequest) Reset() {
	*x = BuildUnfinishedTurnMessagesRequest{}
	mi := &file_dex_runner_v1_runner_proto_msgTypes[43]
	ms := protoimpl.X.MessageStateOf(protoimpl.Pointer(x))
	ms.StoreMessageInfo(mi)
}

func (x *BuildUnfinishedTurnMessagesRequest) String() string {
	return protoimpl.X.MessageStringOf(x)
}

func (*BuildUnfinishedTurnMessagesRequest) ProtoMessage() {}

func (x *BuildUnfinishedTurnMessagesRequest) ProtoReflect() protoreflect.Message {
	mi := &file_dex_runner_v1_runner_proto_msgTypes[43]
	if x != nil {
		ms := protoimpl.X.MessageStateOf(protoimpl.Pointer(x))
		if ms.LoadMessageInfo() == nil {
			ms.StoreMessageInfo(mi)
		}
		return ms
	}
	return mi.MessageOf(x)
}

// Deprecated: Use BuildUnfinishedTurnMessagesRequest.ProtoReflect.Descriptor instead.
func (*BuildUnfinishedTurnMessagesRequest) Descriptor() ([]byte, []int) {
	return file_dex_runner_v1_runner_proto_rawDescGZIP(), []int{43}
}

func (x *BuildUnfinishedTurnMessagesRequest) GetTurn() *TurnContext {
	if x != nil {
		return x.Turn
	}
	return nil
}

// BuildUnfinishedTurnMessagesResponse holds the messages to store.
//
// Set by the runner.
type BuildUnfinishedTurnMessagesResponse struct {
	state protoimpl.MessageState `protogen:"open.v1"`
	// messages are stored in order before the turn-failure note.
	Messages      []*FrameworkMessage `protobuf:"bytes,1,rep,name=messages,proto3" json:"messages,omitempty"`
	unknownFields protoimpl.UnknownFields
	sizeCache     protoimpl.SizeCache
}

func (x *BuildUnfinishedTurnMessagesResponse) Reset() {
	*x = BuildUnfinishedTurnMessagesResponse{}
	mi := &file_dex_runner_v1_runner_proto_msgTypes[44]
	ms := protoimpl.X.MessageStateOf(protoimpl.Pointer(x))
	ms.StoreMessageInfo(mi)
}

func (x *BuildUnfinishedTurnMessagesResponse) String() string {
	return protoimpl.X.MessageStringOf(x)
}

func (*BuildUnfinishedTurnMessagesResponse) ProtoMessage() {}

func (x *BuildUnfinishedTurnMessagesResponse) ProtoReflect() protoreflect.Message {
	mi := &file_dex_runner_v1_runner_proto_msgTypes[44]
	if x != nil {
		ms := protoimpl.X.MessageStateOf(protoimpl.Pointer(x))
		if ms.LoadMessageInfo() == nil {
			ms.StoreMessageInfo(mi)
		}
		return ms
	}
	return mi.MessageOf(x)
}

// Deprecated: Use BuildUnfinishedTurnMessagesResponse.ProtoReflect.Descriptor instead.
func (*BuildUnfinishedTurnMessagesResponse) Descriptor() ([]byte, []int) {
	return file_dex_runner_v1_runner_proto_rawDescGZIP(), []int{44}
}

func (x *BuildUnfinishedTurnMessagesResponse) GetMessages() []*FrameworkMessage {
	if x != nil {
		return x.Messages
	}
	return nil
}

// EstimateInputTokensRequest carries the turn whose next input is estimated.
//
// Set by the host, before a model call of an agent with compaction.
type EstimateInputTokensRequest struct {
	state protoimpl.MessageState `protogen:"open.v1"`
	// turn is the committed session state; turn.agent names the agent.
	Turn          *TurnContext `protobuf:"bytes,1,opt,name=turn,proto3" json:"turn,omitempty"`
	unknownFields protoimpl.UnknownFields
	sizeCache     protoimpl.SizeCache
}

func (x *EstimateInputTokensRequest) Reset() {
	*x = EstimateInputTokensRequest{}
	mi := &file_dex_runner_v1_runner_proto_msgTypes[45]
	ms := protoimpl.X.MessageStateOf(protoimpl.Pointer(x))
	ms.StoreMessageInfo(mi)
}

func (x *EstimateInputTokensRequest) String() string {
	return protoimpl.X.MessageStringOf(x)
}

func (*EstimateInputTokensRequest) ProtoMessage() {}

func (x *EstimateInputTokensRequest) ProtoReflect() protoreflect.Message {
	mi := &file_dex_runner_v1_runner_proto_msgTypes[45]
	if x != nil {
		ms := protoimpl.X.MessageStateOf(protoimpl.Pointer(x))
		if ms.LoadMessageInfo() == nil {
			ms.StoreMessageInfo(mi)
		}
		return ms
	}
	return mi.MessageOf(x)
}

// Deprecated: Use EstimateInputTokensRequest.ProtoReflect.Descriptor instead.
func (*EstimateInputTokensRequest) Descriptor() ([]byte, []int) {
	return file_dex_runner_v1_runner_proto_rawDescGZIP(), []int{45}
}

func (x *EstimateInputTokensRequest) GetTurn() *TurnContext {
	if x != nil {
		return x.Turn
	}
	return nil
}

// EstimateInputTokensResponse holds the estimate.
//
// Set by the runner.
type EstimateInputTokensResponse struct {
	state protoimpl.MessageState `protogen:"open.v1"`
	// input_tokens is the estimated size of the next model input.
	InputTokens   int64 `protobuf:"varint,1,opt,name=input_tokens,json=inputTokens,proto3" json:"input_tokens,omitempty"`
	unknownFields protoimpl.UnknownFields
	sizeCache     protoimpl.SizeCache
}

func (x *EstimateInputTokensResponse) Reset() {
	*x = EstimateInputTokensResponse{}
	mi := &file_dex_runner_v1_runner_proto_msgTypes[46]
	ms := protoimpl.X.MessageStateOf(protoimpl.Pointer(x))
	ms.StoreMessageInfo(mi)
}

func (x *EstimateInputTokensResponse) String() string {
	return protoimpl.X.MessageStringOf(x)
}

func (*EstimateInputTokensResponse) ProtoMessage() {}

func (x *EstimateInputTokensResponse) ProtoReflect() protoreflect.Message {
	mi := &file_dex_runner_v1_runner_proto_msgTypes[46]
	if x != nil {
		ms := protoimpl.X.MessageStateOf(protoimpl.Pointer(x))
		if ms.LoadMessageInfo() == nil {
			ms.StoreMessageInfo(mi)
		}
		return ms
	}
	return mi.MessageOf(x)
}

// Deprecated: Use EstimateInputTokensResponse.ProtoReflect.Descriptor instead.
func (*EstimateInputTokensResponse) Descriptor() ([]byte, []int) {
	return file_dex_runner_v1_runner_proto_rawDescGZIP(), []int{46}
}

func (x *EstimateInputTokensResponse) GetInputTokens() int64 {
	if x != nil {
		return x.InputTokens
	}
	return 0
}

// CompactionCutoffRequest asks which stored messages a summary may replace.
//
// Set by the host, when the next input is over the compaction threshold.
type CompactionCutoffRequest struct {
	state protoimpl.MessageState `protogen:"open.v1"`
	// turn is the committed session state; turn.agent names the agent.
	Turn *TurnContext `protobuf:"bytes,1,opt,name=turn,proto3" json:"turn,omitempty"`
	// retained_token_budget is how many tokens of the newest messages the
	// summary must leave in the model's input.
	RetainedTokenBudget int64 `protobuf:"varint,3,opt,name=retained_token_budget,json=retainedTokenBudget,proto3" json:"retained_token_budget,omitempty"`
	unknownFields       protoimpl.UnknownFields
	sizeCache           protoimpl.SizeCache
}

func (x *CompactionCutoffRequest) Reset() {
	*x = CompactionCutoffRequest{}
	mi := &file_dex_runner_v1_runner_proto_msgTypes[47]
	ms := protoimpl.X.MessageStateOf(protoimpl.Pointer(x))
	ms.StoreMessageInfo(mi)
}

func (x *CompactionCutoffRequest) String() string {
	return protoimpl.X.MessageStringOf(x)
}

func (*CompactionCutoffRequest) ProtoMessage() {}

func (x *CompactionCutoffRequest) ProtoReflect() protoreflect.Message {
	mi := &file_dex_runner_v1_runner_proto_msgTypes[47]
	if x != nil {
		ms := protoimpl.X.MessageStateOf(protoimpl.Pointer(x))
		if ms.LoadMessageInfo() == nil {
			ms.StoreMessageInfo(mi)
		}
		return ms
	}
	return mi.MessageOf(x)
}

// Deprecated: Use CompactionCutoffRequest.ProtoReflect.Descriptor instead.
func (*CompactionCutoffRequest) Descriptor() ([]byte, []int) {
	return file_dex_runner_v1_runner_proto_rawDescGZIP(), []int{47}
}

func (x *CompactionCutoffRequest) GetTurn() *TurnContext {
	if x != nil {
		return x.Turn
	}
	return nil
}

func (x *CompactionCutoffRequest) GetRetainedTokenBudget() int64 {
	if x != nil {
		return x.RetainedTokenBudget
	}
	return 0
}

// CompactionCutoffResponse names the newest message the summary replaces.
//
// Set by the runner.
type CompactionCutoffResponse struct {
	state protoimpl.MessageState `protogen:"open.v1"`
	// through_sequence is a stored sequence after the turn's current summary;
	// 0 means nothing may be compacted.
	ThroughSequence int64 `protobuf:"varint,1,opt,name=through_sequence,json=throughSequence,proto3" json:"through_sequence,omitempty"`
	unknownFields   protoimpl.UnknownFields
	sizeCache       protoimpl.SizeCache
}

func (x *CompactionCutoffResponse) Reset() {
	*x = CompactionCutoffResponse{}
	mi := &file_dex_runner_v1_runner_proto_msgTypes[48]
	ms := protoimpl.X.MessageStateOf(protoimpl.Pointer(x))
	ms.StoreMessageInfo(mi)
}

func (x *CompactionCutoffResponse) String() string {
	return protoimpl.X.MessageStringOf(x)
}

func (*CompactionCutoffResponse) ProtoMessage() {}

func (x *CompactionCutoffResponse) ProtoReflect() protoreflect.Message {
	mi := &file_dex_runner_v1_runner_proto_msgTypes[48]
	if x != nil {
		ms := protoimpl.X.MessageStateOf(protoimpl.Pointer(x))
		if ms.LoadMessageInfo() == nil {
			ms.StoreMessageInfo(mi)
		}
		return ms
	}
	return mi.MessageOf(x)
}

// Deprecated: Use CompactionCutoffResponse.ProtoReflect.Descriptor instead.
func (*CompactionCutoffResponse) Descriptor() ([]byte, []int) {
	return file_dex_runner_v1_runner_proto_rawDescGZIP(), []int{48}
}

func (x *CompactionCutoffResponse) GetThroughSequence() int64 {
	if x != nil {
		return x.ThroughSequence
	}
	return 0
}

// SummarizeContextRequest asks for a summary of messages.
//
// Set by the host, after SelectCompactionCutoff named messages to replace.
type SummarizeContextRequest struct {
	state protoimpl.MessageState `protogen:"open.v1"`
	// turn is the committed session state; turn.agent names the agent.
	Turn *TurnContext `protobuf:"bytes,1,opt,name=turn,proto3" json:"turn,omitempty"`
	// messages are the messages to summarize, in sequence order.
	Messages []*Message `protobuf:"bytes,2,rep,name=messages,proto3" json:"messages,omitempty"`
	// previous_summary is the summary these messages follow, or empty.
	PreviousSummary string `protobuf:"bytes,3,opt,name=previous_summary,json=previousSummary,proto3" json:"previous_summary,omitempty"`
	// input_token_budget bounds the summary call's input: leave out the
	// oldest messages past it, and say so.
	InputTokenBudget int64 `protobuf:"varint,4,opt,name=input_token_budget,json=inputTokenBudget,proto3" json:"input_token_budget,omitempty"`
	unknownFields    protoimpl.UnknownFields
	sizeCache        protoimpl.SizeCache
}

func (x *SummarizeContextRequest) Reset() {
	*x = SummarizeContextRequest{}
	mi := &file_dex_runner_v1_runner_proto_msgTypes[49]
	ms := protoimpl.X.MessageStateOf(protoimpl.Pointer(x))
	ms.StoreMessageInfo(mi)
}

func (x *SummarizeContextRequest) String() string {
	return protoimpl.X.MessageStringOf(x)
}

func (*SummarizeContextRequest) ProtoMessage() {}

func (x *SummarizeContextRequest) ProtoReflect() protoreflect.Message {
	mi := &file_dex_runner_v1_runner_proto_msgTypes[49]
	if x != nil {
		ms := protoimpl.X.MessageStateOf(protoimpl.Pointer(x))
		if ms.LoadMessageInfo() == nil {
			ms.StoreMessageInfo(mi)
		}
		return ms
	}
	return mi.MessageOf(x)
}

// Deprecated: Use SummarizeContextRequest.ProtoReflect.Descriptor instead.
func (*SummarizeContextRequest) Descriptor() ([]byte, []int) {
	return file_dex_runner_v1_runner_proto_rawDescGZIP(), []int{49}
}

func (x *SummarizeContextRequest) GetTurn() *TurnContext {
	if x != nil {
		return x.Turn
	}
	return nil
}

func (x *SummarizeContextRequest) GetMessages() []*Message {
	if x != nil {
		return x.Messages
	}
	return nil
}

func (x *SummarizeContextRequest) GetPreviousSummary() string {
	if x != nil {
		return x.PreviousSummary
	}
	return ""
}

func (x *SummarizeContextRequest) GetInputTokenBudget() int64 {
	if x != nil {
		return x.InputTokenBudget
	}
	return 0
}

// SummarizeContextFrame is one frame of the SummarizeContext stream.
//
// Set by the runner, streamed.
type SummarizeContextFrame struct {
	state protoimpl.MessageState `protogen:"open.v1"`
	// Types that are valid to be assigned to Frame:
	//
	//	*SummarizeContextFrame_TextDelta
	//	*SummarizeContextFrame_ReasoningDelta
	//	*SummarizeContextFrame_Event
	//	*SummarizeContextFrame_Heartbeat
	//	*SummarizeContextFrame_Outcome
	Frame         isSummarizeContextFrame_Frame `protobuf_oneof:"frame"`
	unknownFields protoimpl.UnknownFields
	sizeCache     protoimpl.SizeCache
}

func (x *SummarizeContextFrame) Reset() {
	*x = SummarizeContextFrame{}
	mi := &file_dex_runner_v1_runner_proto_msgTypes[50]
	ms := protoimpl.X.MessageStateOf(protoimpl.Pointer(x))
	ms.StoreMessageInfo(mi)
}

func (x *SummarizeContextFrame) String() string {
	return protoimpl.X.MessageStringOf(x)
}

func (*SummarizeContextFrame) ProtoMessage() {}

func (x *SummarizeContextFrame) ProtoReflect() protoreflect.Message {
	mi := &file_dex_runner_v1_runner_proto_msgTypes[50]
	if x != nil {
		ms := protoimpl.X.MessageStateOf(protoimpl.Pointer(x))
		if ms.LoadMessageInfo() == nil {
			ms.StoreMessageInfo(mi)
		}
		return ms
	}
	return mi.MessageOf(x)
}

// Deprecated: Use SummarizeContextFrame.ProtoReflect.Descriptor instead.
func (*SummarizeContextFrame) Descriptor() ([]byte, []int) {
	return file_dex_runner_v1_runner_proto_rawDescGZIP(), []int{50}
}

func (x *SummarizeContextFrame) GetFrame() isSummarizeContextFrame_Frame {
	if x != nil {
		return x.Frame
	}
	return nil
}

func (x *SummarizeContextFrame) GetTextDelta() *TextDelta {
	if x != nil {
		if x, ok := x.Frame.(*SummarizeContextFrame_TextDelta); ok {
			return x.TextDelta
		}
	}
	return nil
}

func (x *SummarizeContextFrame) GetReasoningDelta() *ReasoningDelta {
	if x != nil {
		if x, ok := x.Frame.(*SummarizeContextFrame_ReasoningDelta); ok {
			return x.ReasoningDelta
		}
	}
	return nil
}

func (x *SummarizeContextFrame) GetEvent() *Event {
	if x != nil {
		if x, ok := x.Frame.(*SummarizeContextFrame_Event); ok {
			return x.Event
		}
	}
	return nil
}

func (x *SummarizeContextFrame) GetHeartbeat() *Heartbeat {
	if x != nil {
		if x, ok := x.Frame.(*SummarizeContextFrame_Heartbeat); ok {
			return x.Heartbeat
		}
	}
	return nil
}

func (x *SummarizeContextFrame) GetOutcome() *SummarizeContextResponse {
	if x != nil {
		if x, ok := x.Frame.(*SummarizeContextFrame_Outcome); ok {
			return x.Outcome
		}
	}
	return nil
}

type isSummarizeContextFrame_Frame interface {
	isSummarizeContextFrame_Frame()
}

type SummarizeContextFrame_TextDelta struct {
	// text_delta is a chunk of visible summary text.
	TextDelta *TextDelta `protobuf:"bytes,1,opt,name=text_delta,json=textDelta,proto3,oneof"`
}

type SummarizeContextFrame_ReasoningDelta struct {
	// reasoning_delta is a chunk of a reasoning summary.
	ReasoningDelta *ReasoningDelta `protobuf:"bytes,2,opt,name=reasoning_delta,json=reasoningDelta,proto3,oneof"`
}

type SummarizeContextFrame_Event struct {
	// event is a custom live event.
	Event *Event `protobuf:"bytes,3,opt,name=event,proto3,oneof"`
}

type SummarizeContextFrame_Heartbeat struct {
	// heartbeat records liveness.
	Heartbeat *Heartbeat `protobuf:"bytes,4,opt,name=heartbeat,proto3,oneof"`
}

type SummarizeContextFrame_Outcome struct {
	// outcome is the last frame.
	Outcome *SummarizeContextResponse `protobuf:"bytes,15,opt,name=outcome,proto3,oneof"`
}

func (*SummarizeContextFrame_TextDelta) isSummarizeContextFrame_Frame() {}

func (*SummarizeContextFrame_ReasoningDelta) isSummarizeContextFrame_Frame() {}

func (*SummarizeContextFrame_Event) isSummarizeContextFrame_Frame() {}

func (*SummarizeContextFrame_Heartbeat) isSummarizeContextFrame_Frame() {}

func (*SummarizeContextFrame_Outcome) isSummarizeContextFrame_Frame() {}

// SummarizeContextResponse holds the summary and the model call's usage.
//
// Set by the runner, as the last frame.
type SummarizeContextResponse struct {
	state protoimpl.MessageState `protogen:"open.v1"`
	// summary replaces the summarized messages in later model inputs.
	Summary string `protobuf:"bytes,1,opt,name=summary,proto3" json:"summary,omitempty"`
	// usage covers the summarizing model call.
	Usage *Usage `protobuf:"bytes,2,opt,name=usage,proto3" json:"usage,omitempty"`
	// metadata names the summarizing model call (for tracing and pricing).
	Metadata      *ModelCallMetadata `protobuf:"bytes,3,opt,name=metadata,proto3" json:"metadata,omitempty"`
	unknownFields protoimpl.UnknownFields
	sizeCache     protoimpl.SizeCache
}

func (x *SummarizeContextResponse) Reset() {
	*x = SummarizeContextResponse{}
	mi := &file_dex_runner_v1_runner_proto_msgTypes[51]
	ms := protoimpl.X.MessageStateOf(protoimpl.Pointer(x))
	ms.StoreMessageInfo(mi)
}

func (x *SummarizeContextResponse) String() string {
	return protoimpl.X.MessageStringOf(x)
}

func (*SummarizeContextResponse) ProtoMessage() {}

func (x *SummarizeContextResponse) ProtoReflect() protoreflect.Message {
	mi := &file_dex_runner_v1_runner_proto_msgTypes[51]
	if x != nil {
		ms := protoimpl.X.MessageStateOf(protoimpl.Pointer(x))
		if ms.LoadMessageInfo() == nil {
			ms.StoreMessageInfo(mi)
		}
		return ms
	}
	return mi.MessageOf(x)
}

// Deprecated: Use SummarizeContextResponse.ProtoReflect.Descriptor instead.
func (*SummarizeContextResponse) Descriptor() ([]byte, []int) {
	return file_dex_runner_v1_runner_proto_rawDescGZIP(), []int{51}
}

func (x *SummarizeContextResponse) GetSummary() string {
	if x != nil {
		return x.Summary
	}
	return ""
}

func (x *SummarizeContextResponse) GetUsage() *Usage {
	if x != nil {
		return x.Usage
	}
	return nil
}

func (x *SummarizeContextResponse) GetMetadata() *ModelCallMetadata {
	if x != nil {
		return x.Metadata
	}
	return nil
}

var File_dex_runner_v1_runner_proto protoreflect.FileDescriptor

const file_dex_runner_v1_runner_proto_rawDesc = "" +
	"\n" +
	"\x1adex/runner/v1/runner.proto\x12\rdex.runner.v1\"\r\n" +
	"\vInfoRequest\"\xaa\x01\n" +
	"\fInfoResponse\x12\x12\n" +
	"\x04name\x18\x01 \x01(\tR\x04name\x12\x18\n" +
	"\aversion\x18\x02 \x01(\tR\aversion\x12+\n" +
	"\x11protocol_versions\x18\x03 \x03(\x05R\x10protocolVersions\x12?\n" +
	"\fcapabilities\x18\x04 \x01(\v2\x1b.dex.runner.v1.CapabilitiesR\fcapabilities\"\xa7\x02\n" +
	"\fCapabilities\x128\n" +
	"\x18unfinished_turn_messages\x18\x01 \x01(\bR\x16unfinishedTurnMessages\x12*\n" +
	"\x11tool_task_polling\x18\x02 \x01(\bR\x0ftoolTaskPolling\x120\n" +
	"\x14tool_task_cancelling\x18\x03 \x01(\bR\x12toolTaskCancelling\x124\n" +
	"\x16input_token_estimation\x18\x04 \x01(\bR\x14inputTokenEstimation\x12\x1e\n" +
	"\n" +
	"compaction\x18\x05 \x01(\bR\n" +
	"compaction\x12)\n" +
	"\x10transcript_cache\x18\x06 \x01(\bR\x0ftranscriptCache\"x\n" +
	"\x10ConfigureRequest\x12\x14\n" +
	"\x05agent\x18\x01 \x01(\tR\x05agent\x12#\n" +
	"\rrunner_config\x18\x02 \x01(\tR\frunnerConfig\x12)\n" +
	"\x10protocol_version\x18\x03 \x01(\x05R\x0fprotocolVersion\"\xd5\x02\n" +
	"\x11ConfigureResponse\x12\x14\n" +
	"\x05tools\x18\x01 \x03(\tR\x05tools\x12E\n" +
	"\x0fsetting_choices\x18\x02 \x03(\v2\x1c.dex.runner.v1.SettingChoiceR\x0esettingChoices\x12W\n" +
	"\rtool_policies\x18\x03 \x03(\v22.dex.runner.v1.ConfigureResponse.ToolPoliciesEntryR\ftoolPolicies\x12.\n" +
	"\x13default_tool_effect\x18\x04 \x01(\tR\x11defaultToolEffect\x1aZ\n" +
	"\x11ToolPoliciesEntry\x12\x10\n" +
	"\x03key\x18\x01 \x01(\tR\x03key\x12/\n" +
	"\x05value\x18\x02 \x01(\v2\x19.dex.runner.v1.ToolPolicyR\x05value:\x028\x01\"S\n" +
	"\rSettingChoice\x12\x10\n" +
	"\x03key\x18\x01 \x01(\tR\x03key\x12\x16\n" +
	"\x06values\x18\x02 \x03(\tR\x06values\x12\x18\n" +
	"\adefault\x18\x03 \x01(\tR\adefault\"l\n" +
	"\n" +
	"ToolPolicy\x12\x16\n" +
	"\x06effect\x18\x01 \x01(\tR\x06effect\x120\n" +
	"\x11requires_approval\x18\x02 \x01(\bH\x00R\x10requiresApproval\x88\x01\x01B\x14\n" +
	"\x12_requires_approval\"\xce\x01\n" +
	"\tPolicySet\x12B\n" +
	"\bpolicies\x18\x01 \x03(\v2&.dex.runner.v1.PolicySet.PoliciesEntryR\bpolicies\x12%\n" +
	"\x0edefault_effect\x18\x02 \x01(\tR\rdefaultEffect\x1aV\n" +
	"\rPoliciesEntry\x12\x10\n" +
	"\x03key\x18\x01 \x01(\tR\x03key\x12/\n" +
	"\x05value\x18\x02 \x01(\v2\x19.dex.runner.v1.ToolPolicyR\x05value:\x028\x01\"\xc1\x01\n" +
	"\x10FrameworkMessage\x12\x12\n" +
	"\x04role\x18\x01 \x01(\tR\x04role\x12\x12\n" +
	"\x04text\x18\x02 \x01(\tR\x04text\x12%\n" +
	"\x0eframework_item\x18\x03 \x01(\tR\rframeworkItem\x12 \n" +
	"\ftool_call_id\x18\x04 \x01(\tR\n" +
	"toolCallId\x12\x1b\n" +
	"\ttool_name\x18\x05 \x01(\tR\btoolName\x12\x1f\n" +
	"\vtool_status\x18\x06 \x01(\tR\n" +
	"toolStatus\"\xed\x01\n" +
	"\aMessage\x12\x1a\n" +
	"\bsequence\x18\x01 \x01(\x03R\bsequence\x12\x12\n" +
	"\x04role\x18\x02 \x01(\tR\x04role\x12\x12\n" +
	"\x04text\x18\x03 \x01(\tR\x04text\x12%\n" +
	"\x0eframework_item\x18\x04 \x01(\tR\rframeworkItem\x12 \n" +
	"\ftool_call_id\x18\x05 \x01(\tR\n" +
	"toolCallId\x12\x1b\n" +
	"\ttool_name\x18\x06 \x01(\tR\btoolName\x12\x17\n" +
	"\aturn_id\x18\a \x01(\tR\x06turnId\x12\x1f\n" +
	"\vtool_status\x18\b \x01(\tR\n" +
	"toolStatus\"\xb0\x04\n" +
	"\bToolCall\x12 \n" +
	"\ftool_call_id\x18\x01 \x01(\tR\n" +
	"toolCallId\x12\x1b\n" +
	"\ttool_name\x18\x02 \x01(\tR\btoolName\x12\x1c\n" +
	"\targuments\x18\x03 \x01(\tR\targuments\x12\x16\n" +
	"\x06effect\x18\x04 \x01(\tR\x06effect\x12+\n" +
	"\x11requires_approval\x18\x05 \x01(\bR\x10requiresApproval\x12\x16\n" +
	"\x06status\x18\x06 \x01(\tR\x06status\x12%\n" +
	"\x0edeferral_order\x18\a \x01(\x05R\rdeferralOrder\x12\x16\n" +
	"\x06output\x18\b \x01(\tR\x06output\x12\x14\n" +
	"\x05error\x18\t \x01(\tR\x05error\x12+\n" +
	"\x11rejection_message\x18\n" +
	" \x01(\tR\x10rejectionMessage\x122\n" +
	"\x15tool_source_reference\x18\v \x01(\tR\x13toolSourceReference\x12/\n" +
	"\x13cancellation_reason\x18\f \x01(\tR\x12cancellationReason\x12-\n" +
	"\x12input_continuation\x18\r \x01(\tR\x11inputContinuation\x12\x17\n" +
	"\atask_id\x18\x0e \x01(\tR\x06taskId\x12;\n" +
	"\x1atask_poll_interval_seconds\x18\x0f \x01(\x05R\x17taskPollIntervalSeconds\"\x99\x02\n" +
	"\x05Usage\x12!\n" +
	"\finput_tokens\x18\x01 \x01(\x03R\vinputTokens\x12#\n" +
	"\routput_tokens\x18\x02 \x01(\x03R\foutputTokens\x12.\n" +
	"\x13cached_input_tokens\x18\x03 \x01(\x03R\x11cachedInputTokens\x12)\n" +
	"\x10reasoning_tokens\x18\x04 \x01(\x03R\x0freasoningTokens\x12&\n" +
	"\ftotal_tokens\x18\x05 \x01(\x03H\x00R\vtotalTokens\x88\x01\x01\x12$\n" +
	"\vmodel_calls\x18\x06 \x01(\x03H\x01R\n" +
	"modelCalls\x88\x01\x01B\x0f\n" +
	"\r_total_tokensB\x0e\n" +
	"\f_model_calls\"\xcc\x01\n" +
	"\x11ModelCallMetadata\x12#\n" +
	"\rrequest_model\x18\x01 \x01(\tR\frequestModel\x12%\n" +
	"\x0eresponse_model\x18\x02 \x01(\tR\rresponseModel\x12#\n" +
	"\rprovider_name\x18\x03 \x01(\tR\fproviderName\x12\x1f\n" +
	"\vresponse_id\x18\x04 \x01(\tR\n" +
	"responseId\x12%\n" +
	"\x0efinish_reasons\x18\x05 \x03(\tR\rfinishReasons\"\x81\x01\n" +
	"\x0eToolDefinition\x12\x12\n" +
	"\x04name\x18\x01 \x01(\tR\x04name\x12 \n" +
	"\vdescription\x18\x02 \x01(\tR\vdescription\x12!\n" +
	"\finput_schema\x18\x03 \x01(\tR\vinputSchema\x12\x16\n" +
	"\x06effect\x18\x04 \x01(\tR\x06effect\"\x8a\x05\n" +
	"\vTurnContext\x12\x14\n" +
	"\x05agent\x18\x01 \x01(\tR\x05agent\x12\x1d\n" +
	"\n" +
	"session_id\x18\x02 \x01(\tR\tsessionId\x12\x17\n" +
	"\aturn_id\x18\x03 \x01(\tR\x06turnId\x12\x18\n" +
	"\aattempt\x18\x04 \x01(\x05R\aattempt\x122\n" +
	"\bmessages\x18\x05 \x03(\v2\x16.dex.runner.v1.MessageR\bmessages\x12\x1b\n" +
	"\trun_state\x18\x06 \x01(\tR\brunState\x126\n" +
	"\n" +
	"tool_calls\x18\a \x03(\v2\x17.dex.runner.v1.ToolCallR\ttoolCalls\x124\n" +
	"\bpolicies\x18\b \x01(\v2\x18.dex.runner.v1.PolicySetR\bpolicies\x12<\n" +
	"\n" +
	"host_tools\x18\t \x03(\v2\x1d.dex.runner.v1.ToolDefinitionR\thostTools\x12\x1f\n" +
	"\vcached_from\x18\n" +
	" \x01(\x03R\n" +
	"cachedFrom\x12%\n" +
	"\x0ecached_through\x18\v \x01(\x03R\rcachedThrough\x122\n" +
	"\x15session_settings_json\x18\f \x01(\tR\x13sessionSettingsJson\x12F\n" +
	"\x0fcontext_summary\x18\r \x01(\v2\x1d.dex.runner.v1.ContextSummaryR\x0econtextSummary\x12'\n" +
	"\x04plan\x18\x0e \x01(\v2\x13.dex.runner.v1.PlanR\x04plan\x12)\n" +
	"\x10interaction_mode\x18\x0f \x01(\tR\x0finteractionMode\"i\n" +
	"\x04Plan\x12\x1a\n" +
	"\brevision\x18\x01 \x01(\x05R\brevision\x12\x16\n" +
	"\x06status\x18\x02 \x01(\tR\x06status\x12-\n" +
	"\x05tasks\x18\x03 \x03(\v2\x17.dex.runner.v1.PlanTaskR\x05tasks\"<\n" +
	"\bPlanTask\x12\x18\n" +
	"\acontent\x18\x01 \x01(\tR\acontent\x12\x16\n" +
	"\x06status\x18\x02 \x01(\tR\x06status\"\xaf\x01\n" +
	"\x0eContextSummary\x12\x1e\n" +
	"\n" +
	"generation\x18\x01 \x01(\x05R\n" +
	"generation\x12%\n" +
	"\x0efirst_sequence\x18\x02 \x01(\x03R\rfirstSequence\x12#\n" +
	"\rlast_sequence\x18\x03 \x01(\x03R\flastSequence\x12\x12\n" +
	"\x04text\x18\x04 \x01(\tR\x04text\x12\x1d\n" +
	"\n" +
	"created_at\x18\x05 \x01(\tR\tcreatedAt\"\x1f\n" +
	"\tTextDelta\x12\x12\n" +
	"\x04text\x18\x01 \x01(\tR\x04text\"$\n" +
	"\x0eReasoningDelta\x12\x12\n" +
	"\x04text\x18\x01 \x01(\tR\x04text\">\n" +
	"\x05Event\x12\x12\n" +
	"\x04type\x18\x01 \x01(\tR\x04type\x12!\n" +
	"\fpayload_json\x18\x02 \x01(\tR\vpayloadJson\"\v\n" +
	"\tHeartbeat\")\n" +
	"\x13HeartbeatCheckpoint\x12\x12\n" +
	"\x04text\x18\x01 \x01(\tR\x04text\"C\n" +
	"\x17BuildUserMessageRequest\x12\x14\n" +
	"\x05agent\x18\x01 \x01(\tR\x05agent\x12\x12\n" +
	"\x04text\x18\x02 \x01(\tR\x04text\"U\n" +
	"\x18BuildUserMessageResponse\x129\n" +
	"\amessage\x18\x01 \x01(\v2\x1f.dex.runner.v1.FrameworkMessageR\amessage\"E\n" +
	"\x13RunModelStepRequest\x12.\n" +
	"\x04turn\x18\x01 \x01(\v2\x1a.dex.runner.v1.TurnContextR\x04turn\"\xca\x02\n" +
	"\x11RunModelStepFrame\x129\n" +
	"\n" +
	"text_delta\x18\x01 \x01(\v2\x18.dex.runner.v1.TextDeltaH\x00R\ttextDelta\x12H\n" +
	"\x0freasoning_delta\x18\x02 \x01(\v2\x1d.dex.runner.v1.ReasoningDeltaH\x00R\x0ereasoningDelta\x12,\n" +
	"\x05event\x18\x03 \x01(\v2\x14.dex.runner.v1.EventH\x00R\x05event\x128\n" +
	"\theartbeat\x18\x04 \x01(\v2\x18.dex.runner.v1.HeartbeatH\x00R\theartbeat\x12?\n" +
	"\aoutcome\x18\x0f \x01(\v2#.dex.runner.v1.RunModelStepResponseH\x00R\aoutcomeB\a\n" +
	"\x05frame\"\xbf\x01\n" +
	"\x14RunModelStepResponse\x12E\n" +
	"\x0eturn_completed\x18\x01 \x01(\v2\x1c.dex.runner.v1.TurnCompletedH\x00R\rturnCompleted\x12U\n" +
	"\x14tool_calls_requested\x18\x02 \x01(\v2!.dex.runner.v1.ToolCallsRequestedH\x00R\x12toolCallsRequestedB\t\n" +
	"\aoutcome\"\xbd\x01\n" +
	"\rTurnCompleted\x12B\n" +
	"\fnew_messages\x18\x01 \x03(\v2\x1f.dex.runner.v1.FrameworkMessageR\vnewMessages\x12*\n" +
	"\x05usage\x18\x02 \x01(\v2\x14.dex.runner.v1.UsageR\x05usage\x12<\n" +
	"\bmetadata\x18\x03 \x01(\v2 .dex.runner.v1.ModelCallMetadataR\bmetadata\"\x9f\x02\n" +
	"\x12ToolCallsRequested\x12\x1b\n" +
	"\trun_state\x18\x01 \x01(\tR\brunState\x12>\n" +
	"\n" +
	"tool_calls\x18\x02 \x03(\v2\x1f.dex.runner.v1.DeferredToolCallR\ttoolCalls\x12B\n" +
	"\fnew_messages\x18\x03 \x03(\v2\x1f.dex.runner.v1.FrameworkMessageR\vnewMessages\x12*\n" +
	"\x05usage\x18\x04 \x01(\v2\x14.dex.runner.v1.UsageR\x05usage\x12<\n" +
	"\bmetadata\x18\x05 \x01(\v2 .dex.runner.v1.ModelCallMetadataR\bmetadata\"\xd6\x01\n" +
	"\x10DeferredToolCall\x12 \n" +
	"\ftool_call_id\x18\x01 \x01(\tR\n" +
	"toolCallId\x12\x1b\n" +
	"\ttool_name\x18\x02 \x01(\tR\btoolName\x12\x1c\n" +
	"\targuments\x18\x03 \x01(\tR\targuments\x121\n" +
	"\x06policy\x18\x04 \x01(\v2\x19.dex.runner.v1.ToolPolicyR\x06policy\x122\n" +
	"\x15tool_source_reference\x18\x05 \x01(\tR\x13toolSourceReference\"\xe3\x02\n" +
	"\x12ExecuteToolRequest\x12\x14\n" +
	"\x05agent\x18\x01 \x01(\tR\x05agent\x12\x1d\n" +
	"\n" +
	"session_id\x18\x02 \x01(\tR\tsessionId\x12\x17\n" +
	"\aturn_id\x18\x03 \x01(\tR\x06turnId\x124\n" +
	"\ttool_call\x18\x04 \x01(\v2\x17.dex.runner.v1.ToolCallR\btoolCall\x12'\n" +
	"\x0fidempotency_key\x18\x05 \x01(\tR\x0eidempotencyKey\x12\x18\n" +
	"\aattempt\x18\x06 \x01(\x05R\aattempt\x121\n" +
	"\x14heartbeat_checkpoint\x18\a \x01(\tR\x13heartbeatCheckpoint\x12#\n" +
	"\rinput_answers\x18\b \x03(\tR\finputAnswers\x12.\n" +
	"\x13supports_tool_tasks\x18\t \x01(\bR\x11supportsToolTasks\"\xb6\x02\n" +
	"\x13PollToolTaskRequest\x12\x14\n" +
	"\x05agent\x18\x01 \x01(\tR\x05agent\x12\x1d\n" +
	"\n" +
	"session_id\x18\x02 \x01(\tR\tsessionId\x12\x17\n" +
	"\aturn_id\x18\x03 \x01(\tR\x06turnId\x124\n" +
	"\ttool_call\x18\x04 \x01(\v2\x17.dex.runner.v1.ToolCallR\btoolCall\x12\x17\n" +
	"\atask_id\x18\x05 \x01(\tR\x06taskId\x12\"\n" +
	"\fcontinuation\x18\x06 \x01(\tR\fcontinuation\x12D\n" +
	"\x0epending_answer\x18\a \x01(\v2\x1d.dex.runner.v1.QuestionAnswerR\rpendingAnswer\x12\x18\n" +
	"\aattempt\x18\b \x01(\x05R\aattempt\"H\n" +
	"\x0eQuestionAnswer\x12\x1e\n" +
	"\n" +
	"resolution\x18\x01 \x01(\tR\n" +
	"resolution\x12\x16\n" +
	"\x06answer\x18\x02 \x01(\tR\x06answer\"\x9e\x03\n" +
	"\rToolCallFrame\x129\n" +
	"\n" +
	"text_delta\x18\x01 \x01(\v2\x18.dex.runner.v1.TextDeltaH\x00R\ttextDelta\x12H\n" +
	"\x0freasoning_delta\x18\x02 \x01(\v2\x1d.dex.runner.v1.ReasoningDeltaH\x00R\x0ereasoningDelta\x12,\n" +
	"\x05event\x18\x03 \x01(\v2\x14.dex.runner.v1.EventH\x00R\x05event\x128\n" +
	"\theartbeat\x18\x04 \x01(\v2\x18.dex.runner.v1.HeartbeatH\x00R\theartbeat\x12W\n" +
	"\x14heartbeat_checkpoint\x18\x05 \x01(\v2\".dex.runner.v1.HeartbeatCheckpointH\x00R\x13heartbeatCheckpoint\x12>\n" +
	"\aoutcome\x18\x0f \x01(\v2\".dex.runner.v1.ExecuteToolResponseH\x00R\aoutcomeB\a\n" +
	"\x05frame\"\xe8\x02\n" +
	"\x13ExecuteToolResponse\x123\n" +
	"\x06result\x18\x01 \x01(\v2\x19.dex.runner.v1.ToolResultH\x00R\x06result\x129\n" +
	"\x05error\x18\x02 \x01(\v2!.dex.runner.v1.ToolExecutionErrorH\x00R\x05error\x12L\n" +
	"\x0finput_requested\x18\x03 \x01(\v2!.dex.runner.v1.ToolInputRequestedH\x00R\x0einputRequested\x12C\n" +
	"\ftask_started\x18\x04 \x01(\v2\x1e.dex.runner.v1.ToolTaskStartedH\x00R\vtaskStarted\x12C\n" +
	"\ftask_pending\x18\x05 \x01(\v2\x1e.dex.runner.v1.ToolTaskPendingH\x00R\vtaskPendingB\t\n" +
	"\aoutcome\"$\n" +
	"\n" +
	"ToolResult\x12\x16\n" +
	"\x06output\x18\x01 \x01(\tR\x06output\".\n" +
	"\x12ToolExecutionError\x12\x18\n" +
	"\amessage\x18\x01 \x01(\tR\amessage\"\x98\x01\n" +
	"\x12ToolInputRequested\x12\x1a\n" +
	"\bquestion\x18\x01 \x01(\tR\bquestion\x12\x18\n" +
	"\achoices\x18\x02 \x03(\tR\achoices\x12(\n" +
	"\x10allows_free_text\x18\x03 \x01(\bR\x0eallowsFreeText\x12\"\n" +
	"\fcontinuation\x18\x04 \x01(\tR\fcontinuation\"^\n" +
	"\x0fToolTaskStarted\x12\x17\n" +
	"\atask_id\x18\x01 \x01(\tR\x06taskId\x122\n" +
	"\x15poll_interval_seconds\x18\x02 \x01(\x05R\x13pollIntervalSeconds\"i\n" +
	"\x0fToolTaskPending\x122\n" +
	"\x15poll_interval_seconds\x18\x01 \x01(\x05R\x13pollIntervalSeconds\x12\"\n" +
	"\fcontinuation\x18\x02 \x01(\tR\fcontinuation\"\x9b\x01\n" +
	"\x15CancelToolTaskRequest\x12\x14\n" +
	"\x05agent\x18\x01 \x01(\tR\x05agent\x12\x1d\n" +
	"\n" +
	"session_id\x18\x02 \x01(\tR\tsessionId\x124\n" +
	"\ttool_call\x18\x03 \x01(\v2\x17.dex.runner.v1.ToolCallR\btoolCall\x12\x17\n" +
	"\atask_id\x18\x04 \x01(\tR\x06taskId\"\x18\n" +
	"\x16CancelToolTaskResponse\"T\n" +
	"\"BuildUnfinishedTurnMessagesRequest\x12.\n" +
	"\x04turn\x18\x01 \x01(\v2\x1a.dex.runner.v1.TurnContextR\x04turn\"b\n" +
	"#BuildUnfinishedTurnMessagesResponse\x12;\n" +
	"\bmessages\x18\x01 \x03(\v2\x1f.dex.runner.v1.FrameworkMessageR\bmessages\"L\n" +
	"\x1aEstimateInputTokensRequest\x12.\n" +
	"\x04turn\x18\x01 \x01(\v2\x1a.dex.runner.v1.TurnContextR\x04turn\"@\n" +
	"\x1bEstimateInputTokensResponse\x12!\n" +
	"\finput_tokens\x18\x01 \x01(\x03R\vinputTokens\"\x83\x01\n" +
	"\x17CompactionCutoffRequest\x12.\n" +
	"\x04turn\x18\x01 \x01(\v2\x1a.dex.runner.v1.TurnContextR\x04turn\x122\n" +
	"\x15retained_token_budget\x18\x03 \x01(\x03R\x13retainedTokenBudgetJ\x04\b\x02\x10\x03\"E\n" +
	"\x18CompactionCutoffResponse\x12)\n" +
	"\x10through_sequence\x18\x01 \x01(\x03R\x0fthroughSequence\"\xd6\x01\n" +
	"\x17SummarizeContextRequest\x12.\n" +
	"\x04turn\x18\x01 \x01(\v2\x1a.dex.runner.v1.TurnContextR\x04turn\x122\n" +
	"\bmessages\x18\x02 \x03(\v2\x16.dex.runner.v1.MessageR\bmessages\x12)\n" +
	"\x10previous_summary\x18\x03 \x01(\tR\x0fpreviousSummary\x12,\n" +
	"\x12input_token_budget\x18\x04 \x01(\x03R\x10inputTokenBudget\"\xd2\x02\n" +
	"\x15SummarizeContextFrame\x129\n" +
	"\n" +
	"text_delta\x18\x01 \x01(\v2\x18.dex.runner.v1.TextDeltaH\x00R\ttextDelta\x12H\n" +
	"\x0freasoning_delta\x18\x02 \x01(\v2\x1d.dex.runner.v1.ReasoningDeltaH\x00R\x0ereasoningDelta\x12,\n" +
	"\x05event\x18\x03 \x01(\v2\x14.dex.runner.v1.EventH\x00R\x05event\x128\n" +
	"\theartbeat\x18\x04 \x01(\v2\x18.dex.runner.v1.HeartbeatH\x00R\theartbeat\x12C\n" +
	"\aoutcome\x18\x0f \x01(\v2'.dex.runner.v1.SummarizeContextResponseH\x00R\aoutcomeB\a\n" +
	"\x05frame\"\x9e\x01\n" +
	"\x18SummarizeContextResponse\x12\x18\n" +
	"\asummary\x18\x01 \x01(\tR\asummary\x12*\n" +
	"\x05usage\x18\x02 \x01(\v2\x14.dex.runner.v1.UsageR\x05usage\x12<\n" +
	"\bmetadata\x18\x03 \x01(\v2 .dex.runner.v1.ModelCallMetadataR\bmetadata2\xab\b\n" +
	"\x06Runner\x12?\n" +
	"\x04Info\x12\x1a.dex.runner.v1.InfoRequest\x1a\x1b.dex.runner.v1.InfoResponse\x12N\n" +
	"\tConfigure\x12\x1f.dex.runner.v1.ConfigureRequest\x1a .dex.runner.v1.ConfigureResponse\x12c\n" +
	"\x10BuildUserMessage\x12&.dex.runner.v1.BuildUserMessageRequest\x1a'.dex.runner.v1.BuildUserMessageResponse\x12V\n" +
	"\fRunModelStep\x12\".dex.runner.v1.RunModelStepRequest\x1a .dex.runner.v1.RunModelStepFrame0\x01\x12\\\n" +
	"\x17ExecuteDeferredToolCall\x12!.dex.runner.v1.ExecuteToolRequest\x1a\x1c.dex.runner.v1.ToolCallFrame0\x01\x12\x84\x01\n" +
	"\x1bBuildUnfinishedTurnMessages\x121.dex.runner.v1.BuildUnfinishedTurnMessagesRequest\x1a2.dex.runner.v1.BuildUnfinishedTurnMessagesResponse\x12R\n" +
	"\fPollToolTask\x12\".dex.runner.v1.PollToolTaskRequest\x1a\x1c.dex.runner.v1.ToolCallFrame0\x01\x12]\n" +
	"\x0eCancelToolTask\x12$.dex.runner.v1.CancelToolTaskRequest\x1a%.dex.runner.v1.CancelToolTaskResponse\x12l\n" +
	"\x13EstimateInputTokens\x12).dex.runner.v1.EstimateInputTokensRequest\x1a*.dex.runner.v1.EstimateInputTokensResponse\x12i\n" +
	"\x16SelectCompactionCutoff\x12&.dex.runner.v1.CompactionCutoffRequest\x1a'.dex.runner.v1.CompactionCutoffResponse\x12b\n" +
	"\x10SummarizeContext\x12&.dex.runner.v1.SummarizeContextRequest\x1a$.dex.runner.v1.SummarizeContextFrame0\x01BMZKgithub.com/dex-agents/dex-agent-worker/pluginapi/internal/runnerpb;runnerpbb\x06proto3"

var (
	file_dex_runner_v1_runner_proto_rawDescOnce sync.Once
	file_dex_runner_v1_runner_proto_rawDescData []byte
)

func file_dex_runner_v1_runner_proto_rawDescGZIP() []byte {
	file_dex_runner_v1_runner_proto_rawDescOnce.Do(func() {
		file_dex_runner_v1_runner_proto_rawDescData = protoimpl.X.CompressGZIP(unsafe.Slice(unsafe.StringData(file_dex_runner_v1_runner_proto_rawDesc), len(file_dex_runner_v1_runner_proto_rawDesc)))
	})
	return file_dex_runner_v1_runner_proto_rawDescData
}

var file_dex_runner_v1_runner_proto_msgTypes = make([]protoimpl.MessageInfo, 54)
var file_dex_runner_v1_runner_proto_goTypes = []any{
	(*InfoRequest)(nil),                         // 0: dex.runner.v1.InfoRequest
	(*InfoResponse)(nil),                        // 1: dex.runner.v1.InfoResponse
	(*Capabilities)(nil),                        // 2: dex.runner.v1.Capabilities
	(*ConfigureRequest)(nil),                    // 3: dex.runner.v1.ConfigureRequest
	(*ConfigureResponse)(nil),                   // 4: dex.runner.v1.ConfigureResponse
	(*SettingChoice)(nil),                       // 5: dex.runner.v1.SettingChoice
	(*ToolPolicy)(nil),                          // 6: dex.runner.v1.ToolPolicy
	(*PolicySet)(nil),                           // 7: dex.runner.v1.PolicySet
	(*FrameworkMessage)(nil),                    // 8: dex.runner.v1.FrameworkMessage
	(*Message)(nil),                             // 9: dex.runner.v1.Message
	(*ToolCall)(nil),                            // 10: dex.runner.v1.ToolCall
	(*Usage)(nil),                               // 11: dex.runner.v1.Usage
	(*ModelCallMetadata)(nil),                   // 12: dex.runner.v1.ModelCallMetadata
	(*ToolDefinition)(nil),                      // 13: dex.runner.v1.ToolDefinition
	(*TurnContext)(nil),                         // 14: dex.runner.v1.TurnContext
	(*Plan)(nil),                                // 15: dex.runner.v1.Plan
	(*PlanTask)(nil),                            // 16: dex.runner.v1.PlanTask
	(*ContextSummary)(nil),                      // 17: dex.runner.v1.ContextSummary
	(*TextDelta)(nil),                           // 18: dex.runner.v1.TextDelta
	(*ReasoningDelta)(nil),                      // 19: dex.runner.v1.ReasoningDelta
	(*Event)(nil),                               // 20: dex.runner.v1.Event
	(*Heartbeat)(nil),                           // 21: dex.runner.v1.Heartbeat
	(*HeartbeatCheckpoint)(nil),                 // 22: dex.runner.v1.HeartbeatCheckpoint
	(*BuildUserMessageRequest)(nil),             // 23: dex.runner.v1.BuildUserMessageRequest
	(*BuildUserMessageResponse)(nil),            // 24: dex.runner.v1.BuildUserMessageResponse
	(*RunModelStepRequest)(nil),                 // 25: dex.runner.v1.RunModelStepRequest
	(*RunModelStepFrame)(nil),                   // 26: dex.runner.v1.RunModelStepFrame
	(*RunModelStepResponse)(nil),                // 27: dex.runner.v1.RunModelStepResponse
	(*TurnCompleted)(nil),                       // 28: dex.runner.v1.TurnCompleted
	(*ToolCallsRequested)(nil),                  // 29: dex.runner.v1.ToolCallsRequested
	(*DeferredToolCall)(nil),                    // 30: dex.runner.v1.DeferredToolCall
	(*ExecuteToolRequest)(nil),                  // 31: dex.runner.v1.ExecuteToolRequest
	(*PollToolTaskRequest)(nil),                 // 32: dex.runner.v1.PollToolTaskRequest
	(*QuestionAnswer)(nil),                      // 33: dex.runner.v1.QuestionAnswer
	(*ToolCallFrame)(nil),                       // 34: dex.runner.v1.ToolCallFrame
	(*ExecuteToolResponse)(nil),                 // 35: dex.runner.v1.ExecuteToolResponse
	(*ToolResult)(nil),                          // 36: dex.runner.v1.ToolResult
	(*ToolExecutionError)(nil),                  // 37: dex.runner.v1.ToolExecutionError
	(*ToolInputRequested)(nil),                  // 38: dex.runner.v1.ToolInputRequested
	(*ToolTaskStarted)(nil),                     // 39: dex.runner.v1.ToolTaskStarted
	(*ToolTaskPending)(nil),                     // 40: dex.runner.v1.ToolTaskPending
	(*CancelToolTaskRequest)(nil),               // 41: dex.runner.v1.CancelToolTaskRequest
	(*CancelToolTaskResponse)(nil),              // 42: dex.runner.v1.CancelToolTaskResponse
	(*BuildUnfinishedTurnMessagesRequest)(nil),  // 43: dex.runner.v1.BuildUnfinishedTurnMessagesRequest
	(*BuildUnfinishedTurnMessagesResponse)(nil), // 44: dex.runner.v1.BuildUnfinishedTurnMessagesResponse
	(*EstimateInputTokensRequest)(nil),          // 45: dex.runner.v1.EstimateInputTokensRequest
	(*EstimateInputTokensResponse)(nil),         // 46: dex.runner.v1.EstimateInputTokensResponse
	(*CompactionCutoffRequest)(nil),             // 47: dex.runner.v1.CompactionCutoffRequest
	(*CompactionCutoffResponse)(nil),            // 48: dex.runner.v1.CompactionCutoffResponse
	(*SummarizeContextRequest)(nil),             // 49: dex.runner.v1.SummarizeContextRequest
	(*SummarizeContextFrame)(nil),               // 50: dex.runner.v1.SummarizeContextFrame
	(*SummarizeContextResponse)(nil),            // 51: dex.runner.v1.SummarizeContextResponse
	nil,                                         // 52: dex.runner.v1.ConfigureResponse.ToolPoliciesEntry
	nil,                                         // 53: dex.runner.v1.PolicySet.PoliciesEntry
}
var file_dex_runner_v1_runner_proto_depIdxs = []int32{
	2,  // 0: dex.runner.v1.InfoResponse.capabilities:type_name -> dex.runner.v1.Capabilities
	5,  // 1: dex.runner.v1.ConfigureResponse.setting_choices:type_name -> dex.runner.v1.SettingChoice
	52, // 2: dex.runner.v1.ConfigureResponse.tool_policies:type_name -> dex.runner.v1.ConfigureResponse.ToolPoliciesEntry
	53, // 3: dex.runner.v1.PolicySet.policies:type_name -> dex.runner.v1.PolicySet.PoliciesEntry
	9,  // 4: dex.runner.v1.TurnContext.messages:type_name -> dex.runner.v1.Message
	10, // 5: dex.runner.v1.TurnContext.tool_calls:type_name -> dex.runner.v1.ToolCall
	7,  // 6: dex.runner.v1.TurnContext.policies:type_name -> dex.runner.v1.PolicySet
	13, // 7: dex.runner.v1.TurnContext.host_tools:type_name -> dex.runner.v1.ToolDefinition
	17, // 8: dex.runner.v1.TurnContext.context_summary:type_name -> dex.runner.v1.ContextSummary
	15, // 9: dex.runner.v1.TurnContext.plan:type_name -> dex.runner.v1.Plan
	16, // 10: dex.runner.v1.Plan.tasks:type_name -> dex.runner.v1.PlanTask
	8,  // 11: dex.runner.v1.BuildUserMessageResponse.message:type_name -> dex.runner.v1.FrameworkMessage
	14, // 12: dex.runner.v1.RunModelStepRequest.turn:type_name -> dex.runner.v1.TurnContext
	18, // 13: dex.runner.v1.RunModelStepFrame.text_delta:type_name -> dex.runner.v1.TextDelta
	19, // 14: dex.runner.v1.RunModelStepFrame.reasoning_delta:type_name -> dex.runner.v1.ReasoningDelta
	20, // 15: dex.runner.v1.RunModelStepFrame.event:type_name -> dex.runner.v1.Event
	21, // 16: dex.runner.v1.RunModelStepFrame.heartbeat:type_name -> dex.runner.v1.Heartbeat
	27, // 17: dex.runner.v1.RunModelStepFrame.outcome:type_name -> dex.runner.v1.RunModelStepResponse
	28, // 18: dex.runner.v1.RunModelStepResponse.turn_completed:type_name -> dex.runner.v1.TurnCompleted
	29, // 19: dex.runner.v1.RunModelStepResponse.tool_calls_requested:type_name -> dex.runner.v1.ToolCallsRequested
	8,  // 20: dex.runner.v1.TurnCompleted.new_messages:type_name -> dex.runner.v1.FrameworkMessage
	11, // 21: dex.runner.v1.TurnCompleted.usage:type_name -> dex.runner.v1.Usage
	12, // 22: dex.runner.v1.TurnCompleted.metadata:type_name -> dex.runner.v1.ModelCallMetadata
	30, // 23: dex.runner.v1.ToolCallsRequested.tool_calls:type_name -> dex.runner.v1.DeferredToolCall
	8,  // 24: dex.runner.v1.ToolCallsRequested.new_messages:type_name -> dex.runner.v1.FrameworkMessage
	11, // 25: dex.runner.v1.ToolCallsRequested.usage:type_name -> dex.runner.v1.Usage
	12, // 26: dex.runner.v1.ToolCallsRequested.metadata:type_name -> dex.runner.v1.ModelCallMetadata
	6,  // 27: dex.runner.v1.DeferredToolCall.policy:type_name -> dex.runner.v1.ToolPolicy
	10, // 28: dex.runner.v1.ExecuteToolRequest.tool_call:type_name -> dex.runner.v1.ToolCall
	10, // 29: dex.runner.v1.PollToolTaskRequest.tool_call:type_name -> dex.runner.v1.ToolCall
	33, // 30: dex.runner.v1.PollToolTaskRequest.pending_answer:type_name -> dex.runner.v1.QuestionAnswer
	18, // 31: dex.runner.v1.ToolCallFrame.text_delta:type_name -> dex.runner.v1.TextDelta
	19, // 32: dex.runner.v1.ToolCallFrame.reasoning_delta:type_name -> dex.runner.v1.ReasoningDelta
	20, // 33: dex.runner.v1.ToolCallFrame.event:type_name -> dex.runner.v1.Event
	21, // 34: dex.runner.v1.ToolCallFrame.heartbeat:type_name -> dex.runner.v1.Heartbeat
	22, // 35: dex.runner.v1.ToolCallFrame.heartbeat_checkpoint:type_name -> dex.runner.v1.HeartbeatCheckpoint
	35, // 36: dex.runner.v1.ToolCallFrame.outcome:type_name -> dex.runner.v1.ExecuteToolResponse
	36, // 37: dex.runner.v1.ExecuteToolResponse.result:type_name -> dex.runner.v1.ToolResult
	37, // 38: dex.runner.v1.ExecuteToolResponse.error:type_name -> dex.runner.v1.ToolExecutionError
	38, // 39: dex.runner.v1.ExecuteToolResponse.input_requested:type_name -> dex.runner.v1.ToolInputRequested
	39, // 40: dex.runner.v1.ExecuteToolResponse.task_started:type_name -> dex.runner.v1.ToolTaskStarted
	40, // 41: dex.runner.v1.ExecuteToolResponse.task_pending:type_name -> dex.runner.v1.ToolTaskPending
	10, // 42: dex.runner.v1.CancelToolTaskRequest.tool_call:type_name -> dex.runner.v1.ToolCall
	14, // 43: dex.runner.v1.BuildUnfinishedTurnMessagesRequest.turn:type_name -> dex.runner.v1.TurnContext
	8,  // 44: dex.runner.v1.BuildUnfinishedTurnMessagesResponse.messages:type_name -> dex.runner.v1.FrameworkMessage
	14, // 45: dex.runner.v1.EstimateInputTokensRequest.turn:type_name -> dex.runner.v1.TurnContext
	14, // 46: dex.runner.v1.CompactionCutoffRequest.turn:type_name -> dex.runner.v1.TurnContext
	14, // 47: dex.runner.v1.SummarizeContextRequest.turn:type_name -> dex.runner.v1.TurnContext
	9,  // 48: dex.runner.v1.SummarizeContextRequest.messages:type_name -> dex.runner.v1.Message
	18, // 49: dex.runner.v1.SummarizeContextFrame.text_delta:type_name -> dex.runner.v1.TextDelta
	19, // 50: dex.runner.v1.SummarizeContextFrame.reasoning_delta:type_name -> dex.runner.v1.ReasoningDelta
	20, // 51: dex.runner.v1.SummarizeContextFrame.event:type_name -> dex.runner.v1.Event
	21, // 52: dex.runner.v1.SummarizeContextFrame.heartbeat:type_name -> dex.runner.v1.Heartbeat
	51, // 53: dex.runner.v1.SummarizeContextFrame.outcome:type_name -> dex.runner.v1.SummarizeContextResponse
	11, // 54: dex.runner.v1.SummarizeContextResponse.usage:type_name -> dex.runner.v1.Usage
	12, // 55: dex.runner.v1.SummarizeContextResponse.metadata:type_name -> dex.runner.v1.ModelCallMetadata
	6,  // 56: dex.runner.v1.ConfigureResponse.ToolPoliciesEntry.value:type_name -> dex.runner.v1.ToolPolicy
	6,  // 57: dex.runner.v1.PolicySet.PoliciesEntry.value:type_name -> dex.runner.v1.ToolPolicy
	0,  // 58: dex.runner.v1.Runner.Info:input_type -> dex.runner.v1.InfoRequest
	3,  // 59: dex.runner.v1.Runner.Configure:input_type -> dex.runner.v1.ConfigureRequest
	23, // 60: dex.runner.v1.Runner.BuildUserMessage:input_type -> dex.runner.v1.BuildUserMessageRequest
	25, // 61: dex.runner.v1.Runner.RunModelStep:input_type -> dex.runner.v1.RunModelStepRequest
	31, // 62: dex.runner.v1.Runner.ExecuteDeferredToolCall:input_type -> dex.runner.v1.ExecuteToolRequest
	43, // 63: dex.runner.v1.Runner.BuildUnfinishedTurnMessages:input_type -> dex.runner.v1.BuildUnfinishedTurnMessagesRequest
	32, // 64: dex.runner.v1.Runner.PollToolTask:input_type -> dex.runner.v1.PollToolTaskRequest
	41, // 65: dex.runner.v1.Runner.CancelToolTask:input_type -> dex.runner.v1.CancelToolTaskRequest
	45, // 66: dex.runner.v1.Runner.EstimateInputTokens:input_type -> dex.runner.v1.EstimateInputTokensRequest
	47, // 67: dex.runner.v1.Runner.SelectCompactionCutoff:input_type -> dex.runner.v1.CompactionCutoffRequest
	49, // 68: dex.runner.v1.Runner.SummarizeContext:input_type -> dex.runner.v1.SummarizeContextRequest
	1,  // 69: dex.runner.v1.Runner.Info:output_type -> dex.runner.v1.InfoResponse
	4,  // 70: dex.runner.v1.Runner.Configure:output_type -> dex.runner.v1.ConfigureResponse
	24, // 71: dex.runner.v1.Runner.BuildUserMessage:output_type -> dex.runner.v1.BuildUserMessageResponse
	26, // 72: dex.runner.v1.Runner.RunModelStep:output_type -> dex.runner.v1.RunModelStepFrame
	34, // 73: dex.runner.v1.Runner.ExecuteDeferredToolCall:output_type -> dex.runner.v1.ToolCallFrame
	44, // 74: dex.runner.v1.Runner.BuildUnfinishedTurnMessages:output_type -> dex.runner.v1.BuildUnfinishedTurnMessagesResponse
	34, // 75: dex.runner.v1.Runner.PollToolTask:output_type -> dex.runner.v1.ToolCallFrame
	42, // 76: dex.runner.v1.Runner.CancelToolTask:output_type -> dex.runner.v1.CancelToolTaskResponse
	46, // 77: dex.runner.v1.Runner.EstimateInputTokens:output_type -> dex.runner.v1.EstimateInputTokensResponse
	48, // 78: dex.runner.v1.Runner.SelectCompactionCutoff:output_type -> dex.runner.v1.CompactionCutoffResponse
	50, // 79: dex.runner.v1.Runner.SummarizeContext:output_type -> dex.runner.v1.SummarizeContextFrame
	69, // [69:80] is the sub-list for method output_type
	58, // [58:69] is the sub-list for method input_type
	58, // [58:58] is the sub-list for extension type_name
	58, // [58:58] is the sub-list for extension extendee
	0,  // [0:58] is the sub-list for field type_name
}

func init() { file_dex_runner_v1_runner_proto_init() }
func file_dex_runner_v1_runner_proto_init() {
	if File_dex_runner_v1_runner_proto != nil {
		return
	}
	file_dex_runner_v1_runner_proto_msgTypes[6].OneofWrappers = []any{}
	file_dex_runner_v1_runner_proto_msgTypes[11].OneofWrappers = []any{}
	file_dex_runner_v1_runner_proto_msgTypes[26].OneofWrappers = []any{
		(*RunModelStepFrame_TextDelta)(nil),
		(*RunModelStepFrame_ReasoningDelta)(nil),
		(*RunModelStepFrame_Event)(nil),
		(*RunModelStepFrame_Heartbeat)(nil),
		(*RunModelStepFrame_Outcome)(nil),
	}
	file_dex_runner_v1_runner_proto_msgTypes[27].OneofWrappers = []any{
		(*RunModelStepResponse_TurnCompleted)(nil),
		(*RunModelStepResponse_ToolCallsRequested)(nil),
	}
	file_dex_runner_v1_runner_proto_msgTypes[34].OneofWrappers = []any{
		(*ToolCallFrame_TextDelta)(nil),
		(*ToolCallFrame_ReasoningDelta)(nil),
		(*ToolCallFrame_Event)(nil),
		(*ToolCallFrame_Heartbeat)(nil),
		(*ToolCallFrame_HeartbeatCheckpoint)(nil),
		(*ToolCallFrame_Outcome)(nil),
	}
	file_dex_runner_v1_runner_proto_msgTypes[35].OneofWrappers = []any{
		(*ExecuteToolResponse_Result)(nil),
		(*ExecuteToolResponse_Error)(nil),
		(*ExecuteToolResponse_InputRequested)(nil),
		(*ExecuteToolResponse_TaskStarted)(nil),
		(*ExecuteToolResponse_TaskPending)(nil),
	}
	file_dex_runner_v1_runner_proto_msgTypes[50].OneofWrappers = []any{
		(*SummarizeContextFrame_TextDelta)(nil),
		(*SummarizeContextFrame_ReasoningDelta)(nil),
		(*SummarizeContextFrame_Event)(nil),
		(*SummarizeContextFrame_Heartbeat)(nil),
		(*SummarizeContextFrame_Outcome)(nil),
	}
	type x struct{}
	out := protoimpl.TypeBuilder{
		File: protoimpl.DescBuilder{
			GoPackagePath: reflect.TypeOf(x{}).PkgPath(),
			RawDescriptor: unsafe.Slice(unsafe.StringData(file_dex_runner_v1_runner_proto_rawDesc), len(file_dex_runner_v1_runner_proto_rawDesc)),
			NumEnums:      0,
			NumMessages:   54,
			NumExtensions: 0,
			NumServices:   1,
		},
		GoTypes:           file_dex_runner_v1_runner_proto_goTypes,
		DependencyIndexes: file_dex_runner_v1_runner_proto_depIdxs,
		MessageInfos:      file_dex_runner_v1_runner_proto_msgTypes,
	}.Build()
	File_dex_runner_v1_runner_proto = out.File
	file_dex_runner_v1_runner_proto_goTypes = nil
	file_dex_runner_v1_runner_proto_depIdxs = nil
}
