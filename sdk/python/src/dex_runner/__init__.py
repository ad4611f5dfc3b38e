"""dex_runner: write dex-agent-worker runner plugins in Python.

A runner is the agent loop of one agent framework: it turns a session's
transcript into the next model call. The worker runs it as a plugin
process and talks to it over gRPC (runner contract v1,
proto/dex/runner/v1/runner.proto). Implement :class:`Runner` and call
:func:`serve` from the plugin's main module.
"""

from dex_runner import pb
from dex_runner.events import RUNNER_EVENT_TYPES, check_event
from dex_runner.outcome import (
    DEFAULT_REJECTION_TOOL_RESULT,
    MODEL_CALL_LIMIT_TOOL_RESULT_FORMAT,
    OUTCOME_UNKNOWN_TOOL_RESULT,
    describe_tool_call_outcome,
    is_final,
)
from dex_runner.runner import (
    PROTOCOL_VERSION,
    CallContext,
    InfoResult,
    Runner,
    RunnerError,
    ToolCallContext,
    capabilities_of,
    permanent,
    resolve_policy,
)
from dex_runner.serve import MAGIC_COOKIE_KEY, MAGIC_COOKIE_VALUE, serve, serve_async
from dex_runner.tools import (
    FunctionTool,
    ToolContext,
    ToolDefinitionError,
    ToolExecutionError,
    ToolInputRequested,
    ToolSet,
    ToolTaskStarted,
    function_tool,
)

__version__ = "0.1.0"

__all__ = [
    "DEFAULT_REJECTION_TOOL_RESULT",
    "MAGIC_COOKIE_KEY",
    "MAGIC_COOKIE_VALUE",
    "MODEL_CALL_LIMIT_TOOL_RESULT_FORMAT",
    "OUTCOME_UNKNOWN_TOOL_RESULT",
    "PROTOCOL_VERSION",
    "RUNNER_EVENT_TYPES",
    "CallContext",
    "FunctionTool",
    "InfoResult",
    "Runner",
    "RunnerError",
    "ToolCallContext",
    "ToolContext",
    "ToolDefinitionError",
    "ToolExecutionError",
    "ToolInputRequested",
    "ToolSet",
    "ToolTaskStarted",
    "capabilities_of",
    "check_event",
    "describe_tool_call_outcome",
    "function_tool",
    "is_final",
    "pb",
    "permanent",
    "resolve_policy",
    "serve",
    "serve_async",
]
