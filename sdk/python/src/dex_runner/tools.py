"""Function tools: a plain (async or sync) Python function becomes a tool
with a JSON Schema derived from its type hints and an effect class, and a
:class:`ToolSet` runs the calls the session approved.

    @function_tool(effect="read")
    async def lookup_order(ctx: ToolContext, order_id: Annotated[str, "The order's ID"]) -> str:
        return orders[order_id].summary()

A parameter typed :class:`ToolContext` receives the call's idempotency key,
attempt, session, turn and tool call IDs, its event writer, heartbeat
checkpoints and the answers to the tool's questions. A tool asks the user
by raising :class:`ToolInputRequested` (only while it has taken no effect),
starts remote work with :class:`ToolTaskStarted`, and fails in a way the
model sees with :class:`ToolExecutionError`. A str result is the output;
any other result is serialized as JSON.
"""

from __future__ import annotations

import asyncio
import dataclasses
import enum
import inspect
import json
import types
import typing
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass, field
from typing import Annotated, Any, Literal, get_args, get_origin, get_type_hints

from dex_runner import pb
from dex_runner.check import EFFECTS
from dex_runner.runner import ToolCallContext, resolve_policy


class ToolExecutionError(Exception):
    """A tool failure the model sees as the call's error."""


class ToolInputRequested(Exception):
    """Raised by a tool, before it takes any effect, to ask the user. The
    session runs the tool again with the answers in
    :attr:`ToolContext.input_answers` and ``continuation`` in
    :attr:`ToolContext.input_continuation`."""

    def __init__(
        self, question: str, choices: Sequence[str] = (), allows_free_text: bool = False, continuation: str = ""
    ) -> None:
        super().__init__(question)
        self.question, self.choices = question, list(choices)
        self.allows_free_text, self.continuation = allows_free_text, continuation


class ToolTaskStarted(Exception):
    """Raised by a tool that started remote work the runner polls
    (poll_tool_task); only when :attr:`ToolContext.supports_tool_tasks`."""

    def __init__(self, task_id: str, poll_interval_seconds: int = 0) -> None:
        super().__init__(task_id)
        self.task_id, self.poll_interval_seconds = task_id, poll_interval_seconds


@dataclass(frozen=True)
class ToolContext:
    """What a tool function gets about its call."""

    idempotency_key: str
    attempt: int
    session_id: str
    turn_id: str
    tool_call_id: str
    input_answers: tuple[str, ...]
    input_continuation: str
    heartbeat_checkpoint: str
    supports_tool_tasks: bool
    live: ToolCallContext = field(repr=False)


class ToolDefinitionError(ValueError):
    """A function that cannot be a tool: its message names the problem."""


@dataclass(frozen=True)
class FunctionTool:
    """A tool: its definition for the model, its policy, and the function."""

    name: str
    description: str
    parameters: dict[str, Any]
    effect: str
    requires_approval: bool | None
    fn: Callable[..., Any] = field(repr=False)
    context_param: str | None = None

    def definition(self) -> pb.ToolDefinition:
        return pb.ToolDefinition(
            name=self.name, description=self.description, input_schema=json.dumps(self.parameters), effect=self.effect
        )

    def policy(self) -> pb.ToolPolicy:
        p = pb.ToolPolicy(effect=self.effect)
        if self.requires_approval is not None:
            p.requires_approval = self.requires_approval
        return p


def function_tool(
    effect: str = "unclassified",
    *,
    requires_approval: bool | None = None,
    name: str | None = None,
    description: str | None = None,
) -> Callable[[Callable[..., Any]], FunctionTool]:
    """Makes a tool of a function: the name defaults to the function's, the
    description to its docstring, the JSON Schema to its type hints (str,
    int, float, bool, None, list, dict, Literal, Enum, unions, dataclasses,
    TypedDict and Annotated[T, "description"])."""
    if effect not in EFFECTS:
        raise ToolDefinitionError(f"effect {effect!r} is not one of {', '.join(EFFECTS)}")

    def wrap(fn: Callable[..., Any]) -> FunctionTool:
        hints = get_type_hints(fn, include_extras=True)
        props: dict[str, Any] = {}
        required: list[str] = []
        context_param = None
        for pname, param in inspect.signature(fn).parameters.items():
            hint = hints.get(pname)
            if hint is None:
                raise ToolDefinitionError(f"tool {fn.__name__}: parameter {pname} has no type hint")
            if hint is ToolContext:
                context_param = pname
                continue
            if param.kind in (param.VAR_POSITIONAL, param.VAR_KEYWORD):
                raise ToolDefinitionError(f"tool {fn.__name__}: *{pname} cannot be a tool parameter")
            props[pname] = json_schema(hint, f"tool {fn.__name__}: parameter {pname}")
            if param.default is inspect.Parameter.empty:
                required.append(pname)
        schema: dict[str, Any] = {
            "type": "object",
            "properties": props,
            "required": required,
            "additionalProperties": False,
        }
        return FunctionTool(
            name=name or fn.__name__,
            description=description if description is not None else inspect.cleandoc(fn.__doc__ or ""),
            parameters=schema,
            effect=effect,
            requires_approval=requires_approval,
            fn=fn,
            context_param=context_param,
        )

    return wrap


_SCALARS: dict[Any, dict[str, Any]] = {
    str: {"type": "string"},
    int: {"type": "integer"},
    float: {"type": "number"},
    bool: {"type": "boolean"},
    type(None): {"type": "null"},
}


def json_schema(hint: Any, where: str) -> dict[str, Any]:
    """The JSON Schema of a type hint."""
    origin, args = get_origin(hint), get_args(hint)
    if origin is Annotated:
        schema = json_schema(args[0], where)
        desc = next((a for a in args[1:] if isinstance(a, str)), None)
        return {**schema, "description": desc} if desc else schema
    if hint in _SCALARS:
        return dict(_SCALARS[hint])
    if hint is Any:
        return {}
    if origin is Literal:
        return {"enum": list(args)}
    if isinstance(hint, type) and issubclass(hint, enum.Enum):
        return {"enum": [m.value for m in hint]}
    if origin in (typing.Union, types.UnionType):
        return {"anyOf": [json_schema(a, where) for a in args]}
    if origin in (list, Sequence) or hint is list:
        return {"type": "array", "items": json_schema(args[0], where) if args else {}}
    if origin is dict or hint is dict:
        return {"type": "object", "additionalProperties": json_schema(args[1], where) if len(args) == 2 else {}}
    if dataclasses.is_dataclass(hint) and isinstance(hint, type):
        return _object_schema(hint, {f.name for f in dataclasses.fields(hint) if _required_field(f)}, where)
    if typing.is_typeddict(hint):
        return _object_schema(hint, set(getattr(hint, "__required_keys__", set())), where)
    raise ToolDefinitionError(f"{where}: type {hint!r} has no JSON Schema")


def _required_field(f: dataclasses.Field[Any]) -> bool:
    return f.default is dataclasses.MISSING and f.default_factory is dataclasses.MISSING


def _object_schema(cls: type, required: set[str], where: str) -> dict[str, Any]:
    hints = get_type_hints(cls, include_extras=True)
    props = {k: json_schema(v, f"{where}.{k}") for k, v in hints.items()}
    return {
        "type": "object",
        "properties": props,
        "required": [k for k in hints if k in required],
        "additionalProperties": False,
    }


def _convert(hint: Any, value: Any) -> Any:
    """value (decoded JSON) as the parameter's type: dataclasses and enums
    are built; everything else is passed as decoded."""
    origin, args = get_origin(hint), get_args(hint)
    if origin is Annotated:
        return _convert(args[0], value)
    if isinstance(hint, type) and issubclass(hint, enum.Enum):
        return hint(value)
    if dataclasses.is_dataclass(hint) and isinstance(hint, type) and isinstance(value, dict):
        hints = get_type_hints(hint, include_extras=True)
        return hint(**{k: _convert(hints[k], v) for k, v in value.items() if k in hints})
    if origin is list and args and isinstance(value, list):
        return [_convert(args[0], v) for v in value]
    return value


class ToolSet:
    """An agent's function tools: their definitions and policies for the
    model call, and the runner's ExecuteDeferredToolCall."""

    def __init__(self, tools: Sequence[FunctionTool]) -> None:
        self._tools: dict[str, FunctionTool] = {}
        for t in tools:
            if t.name in self._tools:
                raise ToolDefinitionError(f"two tools are named {t.name!r}")
            self._tools[t.name] = t

    def __contains__(self, name: object) -> bool:
        return name in self._tools

    def names(self) -> list[str]:
        return list(self._tools)

    def definitions(self) -> list[pb.ToolDefinition]:
        return [t.definition() for t in self._tools.values()]

    def policies(self) -> dict[str, pb.ToolPolicy]:
        """The runner's own policies, for ConfigureResponse.tool_policies."""
        return {n: t.policy() for n, t in self._tools.items()}

    def claim(self, turn: pb.TurnContext, name: str) -> pb.ToolPolicy:
        """The policy to claim for a call of name (resolve_policy with the
        tool's own policy)."""
        t = self._tools.get(name)
        return resolve_policy(turn, name, own=t.policy() if t is not None else None)

    async def execute(self, req: pb.ExecuteToolRequest, live: ToolCallContext) -> pb.ExecuteToolResponse:
        """Runs one approved call once and maps what the tool did to the
        contract's outcome."""
        call = req.tool_call
        t = self._tools.get(call.tool_name)
        if t is None:
            return _error(f"unknown tool {call.tool_name}")
        try:
            args = json.loads(call.arguments or "{}")
        except json.JSONDecodeError:
            return _error(f"invalid arguments for {call.tool_name}: arguments are not valid JSON")
        if not isinstance(args, dict):
            return _error(f"invalid arguments for {call.tool_name}: arguments are not a JSON object")
        hints = get_type_hints(t.fn, include_extras=True)
        unknown = sorted(set(args) - set(t.parameters["properties"]))
        missing = [p for p in t.parameters["required"] if p not in args]
        if unknown or missing:
            what = (f"unknown {', '.join(unknown)}" if unknown else "") + ("; " if unknown and missing else "")
            what += f"missing {', '.join(missing)}" if missing else ""
            return _error(f"invalid arguments for {call.tool_name}: {what}")
        kwargs = {k: _convert(hints[k], v) for k, v in args.items()}
        if t.context_param:
            kwargs[t.context_param] = ToolContext(
                idempotency_key=req.idempotency_key,
                attempt=req.attempt,
                session_id=req.session_id,
                turn_id=req.turn_id,
                tool_call_id=call.tool_call_id,
                input_answers=tuple(req.input_answers),
                input_continuation=call.input_continuation,
                heartbeat_checkpoint=req.heartbeat_checkpoint,
                supports_tool_tasks=req.supports_tool_tasks,
                live=live,
            )
        try:
            if inspect.iscoroutinefunction(t.fn):
                out = await t.fn(**kwargs)
            else:
                out = await asyncio.to_thread(t.fn, **kwargs)
            if isinstance(out, Awaitable):
                out = await out
        except ToolExecutionError as err:
            return _error(str(err))
        except ToolInputRequested as q:
            return pb.ExecuteToolResponse(
                input_requested=pb.ToolInputRequested(
                    question=q.question,
                    choices=q.choices,
                    allows_free_text=q.allows_free_text,
                    continuation=q.continuation,
                )
            )
        except ToolTaskStarted as s:
            return pb.ExecuteToolResponse(
                task_started=pb.ToolTaskStarted(task_id=s.task_id, poll_interval_seconds=s.poll_interval_seconds)
            )
        text = out if isinstance(out, str) else json.dumps(out, ensure_ascii=False, default=_jsonable)
        return pb.ExecuteToolResponse(result=pb.ToolResult(output=text))


def _error(message: str) -> pb.ExecuteToolResponse:
    return pb.ExecuteToolResponse(error=pb.ToolExecutionError(message=message))


def _jsonable(v: Any) -> Any:
    if dataclasses.is_dataclass(v) and not isinstance(v, type):
        return dataclasses.asdict(v)
    if isinstance(v, enum.Enum):
        return v.value
    raise TypeError(f"{type(v).__name__} is not JSON serializable")
