// The contract's messages as TypeScript types, generated from runner.proto
// (src/gen, made by install.sh with proto-loader-gen-types; never edited by
// hand). Field names are the proto's own (tool_call_id); 64-bit integers
// are numbers; a oneof names its set field in a virtual property (frame,
// outcome).
//
// What a runner receives is the "output" form (every field present, with
// its default); what it returns is the "input" form (fields optional).

export type { InfoRequest__Output as InfoRequest } from "./gen/dex/runner/v1/InfoRequest";
export type { ConfigureRequest__Output as ConfigureRequest } from "./gen/dex/runner/v1/ConfigureRequest";
export type { BuildUserMessageRequest__Output as BuildUserMessageRequest } from "./gen/dex/runner/v1/BuildUserMessageRequest";
export type { RunModelStepRequest__Output as RunModelStepRequest } from "./gen/dex/runner/v1/RunModelStepRequest";
export type { ExecuteToolRequest__Output as ExecuteToolRequest } from "./gen/dex/runner/v1/ExecuteToolRequest";
export type { PollToolTaskRequest__Output as PollToolTaskRequest } from "./gen/dex/runner/v1/PollToolTaskRequest";
export type { CancelToolTaskRequest__Output as CancelToolTaskRequest } from "./gen/dex/runner/v1/CancelToolTaskRequest";
export type { BuildUnfinishedTurnMessagesRequest__Output as BuildUnfinishedTurnMessagesRequest } from "./gen/dex/runner/v1/BuildUnfinishedTurnMessagesRequest";
export type { EstimateInputTokensRequest__Output as EstimateInputTokensRequest } from "./gen/dex/runner/v1/EstimateInputTokensRequest";
export type { CompactionCutoffRequest__Output as CompactionCutoffRequest } from "./gen/dex/runner/v1/CompactionCutoffRequest";
export type { SummarizeContextRequest__Output as SummarizeContextRequest } from "./gen/dex/runner/v1/SummarizeContextRequest";

export type { TurnContext__Output as TurnContext } from "./gen/dex/runner/v1/TurnContext";
export type { Message__Output as Message } from "./gen/dex/runner/v1/Message";
export type { ToolCall__Output as ToolCall } from "./gen/dex/runner/v1/ToolCall";
export type { PolicySet__Output as PolicySet } from "./gen/dex/runner/v1/PolicySet";
export type { ToolDefinition__Output as ToolDefinition } from "./gen/dex/runner/v1/ToolDefinition";
export type { Plan__Output as Plan } from "./gen/dex/runner/v1/Plan";
export type { PlanTask__Output as PlanTask } from "./gen/dex/runner/v1/PlanTask";
export type { ContextSummary__Output as ContextSummary } from "./gen/dex/runner/v1/ContextSummary";
export type { QuestionAnswer__Output as QuestionAnswer } from "./gen/dex/runner/v1/QuestionAnswer";

export type { InfoResponse } from "./gen/dex/runner/v1/InfoResponse";
export type { Capabilities } from "./gen/dex/runner/v1/Capabilities";
export type { ConfigureResponse } from "./gen/dex/runner/v1/ConfigureResponse";
export type { SettingChoice } from "./gen/dex/runner/v1/SettingChoice";
export type { BuildUserMessageResponse } from "./gen/dex/runner/v1/BuildUserMessageResponse";
export type { RunModelStepResponse } from "./gen/dex/runner/v1/RunModelStepResponse";
export type { TurnCompleted } from "./gen/dex/runner/v1/TurnCompleted";
export type { ToolCallsRequested } from "./gen/dex/runner/v1/ToolCallsRequested";
export type { DeferredToolCall } from "./gen/dex/runner/v1/DeferredToolCall";
export type { ToolPolicy } from "./gen/dex/runner/v1/ToolPolicy";
export type { FrameworkMessage } from "./gen/dex/runner/v1/FrameworkMessage";
export type { Usage } from "./gen/dex/runner/v1/Usage";
export type { ModelCallMetadata } from "./gen/dex/runner/v1/ModelCallMetadata";
export type { ExecuteToolResponse } from "./gen/dex/runner/v1/ExecuteToolResponse";
export type { ToolResult } from "./gen/dex/runner/v1/ToolResult";
export type { ToolExecutionError } from "./gen/dex/runner/v1/ToolExecutionError";
export type { ToolInputRequested } from "./gen/dex/runner/v1/ToolInputRequested";
export type { ToolTaskStarted } from "./gen/dex/runner/v1/ToolTaskStarted";
export type { ToolTaskPending } from "./gen/dex/runner/v1/ToolTaskPending";
export type { CancelToolTaskResponse } from "./gen/dex/runner/v1/CancelToolTaskResponse";
export type { BuildUnfinishedTurnMessagesResponse } from "./gen/dex/runner/v1/BuildUnfinishedTurnMessagesResponse";
export type { EstimateInputTokensResponse } from "./gen/dex/runner/v1/EstimateInputTokensResponse";
export type { CompactionCutoffResponse } from "./gen/dex/runner/v1/CompactionCutoffResponse";
export type { SummarizeContextResponse } from "./gen/dex/runner/v1/SummarizeContextResponse";
