// @dex-agents/runner: the TypeScript SDK of the dex-agent-worker runner
// contract v1 (proto/dex/runner/v1/runner.proto). Implement Runner and
// call serve from the program's main module:
//
//     import { serve, Runner } from "@dex-agents/runner";
//     class MyRunner implements Runner { ... }
//     serve(new MyRunner());

export * from "./types";
export { status } from "@grpc/grpc-js";
export { Runner, CallContext, ToolCallContext, InfoResult, RunnerError, permanent, capabilitiesOf, protocolVersion } from "./runner";
export { serve, ServeOptions, magicCookieKey, magicCookieValue, protoDir, loadOptions, loadService, runnerServiceDefinition, newServer } from "./serve";
export { runnerService, ServiceState } from "./service";
export { resolvePolicy, effects } from "./policy";
export { checkEvent, runnerEventTypes } from "./events";
export {
  defaultRejectionToolResult,
  outcomeUnknownToolResult,
  modelCallLimitToolResultFormat,
  describeToolCallOutcome,
  isFinal,
  finalStatuses,
} from "./outcome";
export { logger, log, setLogModule, Level, Fields } from "./log";
export { makeCert, handshakeCert, PluginCert } from "./tls";
