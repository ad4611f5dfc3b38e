"""dex_runner: write dex-agent-worker runner plugins in Python.

A runner is the agent loop of one agent framework: it turns a session's
transcript into the next model call. The worker runs it as a plugin
process and talks to it over gRPC (runner contract v1,
proto/dex/runner/v1/runner.proto). Implement :class:`Runner` and call
:func:`serve` from the plugin's main module.
"""

from dex_runner import pb
from dex_runner.events import RUNNER_EVENT_TYPES, check_event
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
    "MAGIC_COOKIE_KEY",
    "MAGIC_COOKIE_VALUE",
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
    "function_tool",
    "pb",
    "permanent",
    "resolve_policy",
    "serve",
    "serve_async",
]
