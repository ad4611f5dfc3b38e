"""Run a Pydantic AI agent (``pydantic_ai.Agent``) as a durable runner.

The agent you already wrote drops in: its model, instructions and system
prompts, function tools (``@agent.tool``, ``tools=[...]``, function
toolsets), deps and output type. Every RunModel Step drives the agent node
by node (``Agent.iter``) through one model request, its text streamed live,
and stops before any tool runs: the response's tool calls come back to the
session as deferred calls with their effect class and approval, and each
runs in ExecuteDeferredToolCall through the agent's own toolset. The next
Step resumes the run with the framework's deferred-tool results
(``DeferredToolResults``); a rejected call is a ``ToolDenied``. A turn ends
with the agent's output, validated by the framework: text, or your
structured output type as JSON.

    agent = Agent("openai:gpt-5-mini", deps_type=Deps, instructions="...")

    @agent.tool
    def refund_order(ctx: RunContext[Deps], order_id: str) -> str:
        return ctx.deps.payments.refund(order_id, idempotency_key=ctx.deps.dex.idempotency_key)

    serve(PydanticAIRunner(lambda name, cfg: agent, deps=lambda dex: Deps(payments, dex),
                           tool_effects={"refund_order": "non_idempotent_write"}))

Stored messages are Pydantic AI's own message JSON (one ``ModelRequest``
or ``ModelResponse`` each, as ``ModelMessagesTypeAdapter`` writes them), so
the model sees exactly what the framework would send. The session's own
tools (ask_user, durable_wait, write_todos, MCP tools) are offered beside
the agent's, as external tools the session runs.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from dataclasses import replace
from typing import Any

import pydantic
import pydantic_core
from pydantic_ai import Agent, DeferredToolResults, RunContext, ToolDenied
from pydantic_ai.capabilities import PrepareTools
from pydantic_ai.direct import model_request
from pydantic_ai.exceptions import ModelHTTPError, UserError
from pydantic_ai.messages import (
    ModelMessage,
    ModelRequest,
    ModelResponse,
    PartDeltaEvent,
    PartStartEvent,
    SystemPromptPart,
    TextPart,
    TextPartDelta,
    ThinkingPart,
    ThinkingPartDelta,
    ToolCallPart,
    ToolReturnPart,
    UserPromptPart,
)
from pydantic_ai.models import Model, infer_model
from pydantic_ai.tools import ToolDefinition
from pydantic_ai.toolsets import AbstractToolset, CombinedToolset, ExternalToolset, FunctionToolset
from pydantic_ai.usage import RunUsage
from pydantic_graph import End

from dex_runner import pb
from dex_runner.check import check_tool_effects
from dex_runner.context import (
    SUMMARY_INSTRUCTIONS,
    SUMMARY_OMISSION_FORMAT,
    estimate_tokens,
    fit_summary_input,
    plan_note,
    select_cutoff,
    summary_note,
    unanswered_calls,
)
from dex_runner.outcome import describe_tool_call_outcome
from dex_runner.runner import (
    PERMANENT_HTTP_STATUSES,
    CallContext,
    DexToolContext,
    InfoResult,
    ToolCallContext,
    permanent,
    resolve_policy,
)

__all__ = ["DexToolContext", "PydanticAIRunner"]

BuildAgent = Callable[[str, dict[str, Any]], Agent[Any, Any]]

_MESSAGE: pydantic.TypeAdapter[ModelMessage] = pydantic.TypeAdapter(ModelMessage)

# The most model requests one Step makes: the first, plus the retries the
# framework asks for when the output fails validation (bounded by the
# agent's own output retries too).
_MAX_REQUESTS_PER_STEP = 4


class PydanticAIRunner:
    """A runner over Pydantic AI agents: ``build`` makes an agent from its
    name and runner_config; ``deps`` makes the run's deps from the call's
    DexToolContext (the idempotency key is set inside a tool call)."""

    def __init__(
        self,
        build: BuildAgent,
        *,
        tool_effects: Mapping[str, str] | None = None,
        deps: Callable[[DexToolContext], Any] | None = None,
        name: str = "dex-runner-pydantic-ai",
        version: str = "0.1.0",
    ) -> None:
        self._build = build
        self._effects = dict(tool_effects or {})
        check_tool_effects(self._effects)
        self._deps = deps or (lambda c: c)
        self._name, self._version = name, version
        self._agents: dict[str, Agent[Any, Any]] = {}
        self._defs: dict[str, dict[str, ToolDefinition]] = {}

    async def info(self, req: pb.InfoRequest) -> InfoResult:
        return InfoResult(self._name, self._version)

    async def configure(self, req: pb.ConfigureRequest) -> pb.ConfigureResponse:
        cfg = json.loads(req.runner_config or "{}")
        if not isinstance(cfg, dict):
            raise ValueError("runner_config must be a JSON object")
        agent = self._build(req.agent, cfg)
        problem = _unsupported(agent)
        if problem:
            raise ValueError(f"agent {agent.name or req.agent!r}: {problem}")
        ctx = self._run_context(agent, DexToolContext("", 0, "", "", "", req.agent))
        tools = await CombinedToolset(agent.toolsets).get_tools(ctx)
        defs = {name: t.tool_def for name, t in tools.items()}
        self._agents[req.agent], self._defs[req.agent] = agent, defs
        policies = {name: self._own_policy(d) for name, d in defs.items()}
        return pb.ConfigureResponse(tools=list(defs), tool_policies=policies)

    def _own_policy(self, d: ToolDefinition) -> pb.ToolPolicy:
        p = pb.ToolPolicy(effect=self._effects.get(d.name, ""))
        if d.kind == "unapproved":
            p.requires_approval = True
        return p

    def _agent(self, name: str) -> Agent[Any, Any]:
        agent = self._agents.get(name)
        if agent is None:
            raise permanent(f"agent {name!r} is not configured in this runner")
        return agent

    def _run_context(self, agent: Agent[Any, Any], dex: DexToolContext) -> RunContext[Any]:
        return RunContext(deps=self._deps(dex), model=_model(agent), usage=RunUsage())

    async def build_user_message(self, req: pb.BuildUserMessageRequest) -> pb.BuildUserMessageResponse:
        msg = ModelRequest(parts=[UserPromptPart(content=req.text)])
        return pb.BuildUserMessageResponse(
            message=pb.FrameworkMessage(role="user", text=req.text, framework_item=_dump(msg))
        )

    async def run_model_step(self, req: pb.RunModelStepRequest, ctx: CallContext) -> pb.RunModelStepResponse:
        turn = req.turn
        agent = self._agent(turn.agent)
        history = _model_input(turn, [h for h in map(_stored_message, turn.messages) if h is not None])
        # The calls of the last response the session settled and no earlier
        # Step stored a result of: the framework's deferred-tool results.
        settled = unanswered_calls(turn, _opens)
        results = _deferred_results(settled) if settled else None
        host = [d for d in turn.host_tools if turn.interaction_mode != "planning" or d.name == "write_todos"]
        toolsets: list[AbstractToolset[Any]] = []
        if host:
            toolsets.append(ExternalToolset([_external(d) for d in host]))
        capabilities = []
        if turn.interaction_mode == "planning":
            # A planning turn offers only write_todos.
            capabilities.append(PrepareTools(_only_write_todos))
        deps = self._deps(DexToolContext("", 0, turn.session_id, turn.turn_id, "", turn.agent))
        history = await _with_system_prompts(agent, deps, history)
        new: list[ModelMessage] = []
        responses: list[ModelResponse] = []
        calls: list[ToolCallPart] = []
        output: Any = None
        usage = pb.Usage()
        with _provider_errors():
            async with agent.iter(
                None, message_history=history, deferred_tool_results=results, deps=deps, toolsets=toolsets,
                capabilities=capabilities,
            ) as run:  # fmt: skip
                node: Any = run.next_node
                requested = False
                while True:
                    if isinstance(node, End):
                        new = list(run.new_messages())
                        output = node.data.output
                        break
                    if Agent.is_model_request_node(node):
                        if len(responses) == _MAX_REQUESTS_PER_STEP:
                            raise permanent(f"the agent's output failed validation {len(responses)} times in a row")
                        stream: Any
                        async with node.stream(run.ctx) as stream:
                            async for event in stream:
                                _write_delta(event, ctx)
                        requested = True
                    elif Agent.is_call_tools_node(node) and not requested:
                        # The history's last response, resumed with the
                        # deferred-tool results: the framework applies them.
                        pass
                    elif Agent.is_call_tools_node(node):
                        responses.append(node.model_response)
                        _add_usage(usage, node.model_response)
                        calls = [p for p in node.model_response.tool_calls if not _is_output_tool(run, p)]
                        if calls:
                            new = list(run.new_messages())
                            break
                    node = await run.next(node)
        # The run resent the history's trailing request (the turn's message)
        # as its first: it is stored already.
        while new and isinstance(new[0], ModelRequest) and _is_prompt_only(new[0]):
            new.pop(0)
        messages = _framework_messages(new, settled)
        last = responses[-1] if responses else None
        meta = pb.ModelCallMetadata(request_model=_model_name(agent))
        if last is not None:
            meta.response_id, meta.response_model = last.provider_response_id or "", last.model_name or ""
            meta.provider_name = last.provider_name or ""
        if calls:
            deferred = [
                pb.DeferredToolCall(
                    tool_call_id=p.tool_call_id, tool_name=p.tool_name, arguments=p.args_as_json_str(),
                    policy=self._claim(turn, host, p.tool_name),
                )
                for p in calls
            ]  # fmt: skip
            return pb.RunModelStepResponse(
                tool_calls_requested=pb.ToolCallsRequested(
                    run_state="pydantic_ai", tool_calls=deferred, new_messages=messages, usage=usage, metadata=meta
                )
            )
        answer = _output_text(output)
        for m in reversed(messages):
            if m.role == "assistant":
                m.text = answer
                break
        else:
            messages.append(pb.FrameworkMessage(role="assistant", text=answer))
        return pb.RunModelStepResponse(
            turn_completed=pb.TurnCompleted(new_messages=messages, usage=usage, metadata=meta)
        )

    def _claim(self, turn: pb.TurnContext, host: Sequence[pb.ToolDefinition], name: str) -> pb.ToolPolicy:
        for d in host:
            if d.name == name:
                # A tool the session runs (a built-in, an MCP tool).
                return resolve_policy(turn, name, d.effect)
        own = self._defs.get(turn.agent, {}).get(name)
        if own is not None:
            return resolve_policy(turn, name, own=self._own_policy(own))
        # Not a tool of the agent: the worker fails it as unknown.
        return pb.ToolPolicy(effect="unclassified", requires_approval=False)

    async def execute_deferred_tool_call(
        self, req: pb.ExecuteToolRequest, ctx: ToolCallContext
    ) -> pb.ExecuteToolResponse:
        agent = self._agent(req.agent)
        call = req.tool_call
        dex = DexToolContext(
            req.idempotency_key, req.attempt, req.session_id, req.turn_id, call.tool_call_id, req.agent
        )
        run_ctx = RunContext(
            deps=self._deps(dex), model=_model(agent), usage=RunUsage(), tool_name=call.tool_name,
            tool_call_id=call.tool_call_id,
        )  # fmt: skip
        toolset = CombinedToolset(agent.toolsets)
        tool = (await toolset.get_tools(run_ctx)).get(call.tool_name)
        if tool is None:
            return pb.ExecuteToolResponse(error=pb.ToolExecutionError(message=f"unknown tool {call.tool_name}"))
        try:
            args = tool.args_validator.validate_json(call.arguments or "{}")
        except pydantic.ValidationError as e:
            return pb.ExecuteToolResponse(
                error=pb.ToolExecutionError(message=f"invalid arguments for {call.tool_name}: {e}")
            )
        out = await toolset.call_tool(call.tool_name, args, run_ctx, tool)
        text = out if isinstance(out, str) else pydantic_core.to_json(out).decode()
        return pb.ExecuteToolResponse(result=pb.ToolResult(output=text))

    async def build_unfinished_turn_messages(
        self, req: pb.BuildUnfinishedTurnMessagesRequest
    ) -> pb.BuildUnfinishedTurnMessagesResponse:
        """The results of the last response's calls that no later model call
        stored, so the transcript never holds a call without its result."""
        turn = req.turn
        settled = unanswered_calls(turn, _opens, final_only=True)
        parts = [
            ToolReturnPart(
                tool_name=c.tool_name, content=describe_tool_call_outcome(c), tool_call_id=c.tool_call_id,
                outcome="denied" if c.status == "rejected" else "success",
            )
            for c in settled
        ]  # fmt: skip
        return pb.BuildUnfinishedTurnMessagesResponse(
            messages=_framework_messages([ModelRequest(parts=parts)], settled)
        )

    async def select_compaction_cutoff(self, req: pb.CompactionCutoffRequest) -> pb.CompactionCutoffResponse:
        """Cuts only where every tool call has its result."""
        through = select_cutoff(req.turn.messages, req.retained_token_budget, _opens, _closes)
        return pb.CompactionCutoffResponse(through_sequence=through)

    async def summarize_context(self, req: pb.SummarizeContextRequest, ctx: CallContext) -> pb.SummarizeContextResponse:
        """One request to the agent's model, with the summary instructions and
        no tools, over the earlier summary and the messages."""
        agent = self._agent(req.turn.agent)
        msgs = [m for m in req.messages if m.framework_item]
        head: list[ModelMessage] = []
        if req.previous_summary:
            head.append(ModelRequest(parts=[UserPromptPart(content=summary_note(req.previous_summary))]))

        def build(rest: Sequence[pb.Message], omitted: int) -> list[ModelMessage]:
            note: list[ModelMessage] = []
            if omitted:
                note.append(ModelRequest(parts=[UserPromptPart(content=SUMMARY_OMISSION_FORMAT % omitted)]))
            out = head + note + [_load(m.framework_item) for m in rest]
            # A summary request ends with a request: the conversation so far,
            # then the instructions to summarize it.
            out.append(ModelRequest(parts=[UserPromptPart(content=SUMMARY_INSTRUCTIONS)]))
            return out

        def size(rest: Sequence[pb.Message], omitted: int) -> int:
            return estimate_tokens(pydantic_core.to_json(build(rest, omitted)).decode())

        try:
            omitted, rest = fit_summary_input(msgs, req.input_token_budget, size, _opens, _closes)
        except ValueError as e:
            raise permanent(str(e)) from e
        messages = build(rest, omitted)
        last = messages[-1]
        assert isinstance(last, ModelRequest)
        messages[-1] = replace(last, instructions=SUMMARY_INSTRUCTIONS)
        with _provider_errors():
            resp = await model_request(_model(agent), messages)
        text = "".join(p.content for p in resp.parts if isinstance(p, TextPart))
        usage = pb.Usage()
        _add_usage(usage, resp)
        meta = pb.ModelCallMetadata(
            request_model=_model_name(agent), response_id=resp.provider_response_id or "",
            response_model=resp.model_name or "", provider_name=resp.provider_name or "",
        )  # fmt: skip
        return pb.SummarizeContextResponse(summary=text, usage=usage, metadata=meta)


@contextmanager
def _provider_errors() -> Iterator[None]:
    """A provider's answer a retry cannot fix (400, 401, 403, 404, 422), and
    the framework's UserError (a mistake in how the agent is used, which
    the same input repeats), fail the Step at once; anything else is
    retried."""
    try:
        yield
    except ModelHTTPError as e:
        if e.status_code in PERMANENT_HTTP_STATUSES:
            raise permanent(f"the model provider answered {e.status_code}: {e.body}") from e
        raise
    except UserError as e:
        raise permanent(f"pydantic_ai: {e}") from e


def _unsupported(agent: Agent[Any, Any]) -> str:
    """What of the agent this adapter does not run yet, or "": better a
    clear refusal at configure than a feature left out silently."""
    for ts in agent.toolsets:
        if not isinstance(ts, FunctionToolset):
            return (
                f"toolset {type(ts).__name__} is not supported yet: only function tools run here "
                "(declare MCP servers in the worker config's mcp_servers instead)"
            )
    if agent.end_strategy == "exhaustive":
        return "end_strategy 'exhaustive' is not supported: it would run tools inside a model call's Step"
    return ""


def _is_output_tool(run: Any, part: ToolCallPart) -> bool:
    """Whether the call is of the agent's output tools (its output type),
    which the framework validates itself, in the run."""
    toolset = getattr(run.ctx.deps.output_schema, "toolset", None)
    return toolset is not None and part.tool_name in toolset.processors


def _only_write_todos(ctx: RunContext[Any], defs: list[ToolDefinition]) -> list[ToolDefinition]:
    return [d for d in defs if d.name == "write_todos" and d.kind == "external"]


def _external(d: pb.ToolDefinition) -> ToolDefinition:
    """A tool the session runs (TurnContext.host_tools), offered to the model
    as an external tool: the run never executes it."""
    schema = json.loads(d.input_schema or '{"type": "object"}')
    return ToolDefinition(name=d.name, description=d.description, parameters_json_schema=schema, kind="external")


def _deferred_results(calls: Sequence[pb.ToolCall]) -> DeferredToolResults:
    """The session's settled calls as the framework's deferred-tool results:
    a rejected call is denied with the rejection's text; every other call's
    result is the text the contract gives the model."""
    results = DeferredToolResults()
    for c in calls:
        text = describe_tool_call_outcome(c)
        if c.status == "rejected":
            results.approvals[c.tool_call_id] = ToolDenied(text)
        else:
            results.calls[c.tool_call_id] = text
    return results


def _framework_messages(new: Sequence[ModelMessage], settled: Sequence[pb.ToolCall]) -> list[pb.FrameworkMessage]:
    """The run's new messages as stored messages: a request of tool results
    is stored as one message per result (role "tool", linked to its call);
    a response is one assistant message with its text."""
    status = {c.tool_call_id: c.status for c in settled}
    out: list[pb.FrameworkMessage] = []
    for m in new:
        if isinstance(m, ModelResponse):
            text = "".join(p.content for p in m.parts if isinstance(p, TextPart))
            out.append(pb.FrameworkMessage(role="assistant", text=text, framework_item=_dump(m)))
            continue
        rest = []
        for part in m.parts:
            if isinstance(part, ToolReturnPart) and part.tool_call_id in status:
                one = ModelRequest(parts=[part])
                out.append(
                    pb.FrameworkMessage(
                        role="tool", text=part.model_response_str(), framework_item=_dump(one),
                        tool_call_id=part.tool_call_id, tool_name=part.tool_name, tool_status=status[part.tool_call_id],
                    )
                )  # fmt: skip
            else:
                rest.append(part)
        if rest:
            # The framework's own bookkeeping (the output tool's return):
            # stored, not shown.
            out.append(pb.FrameworkMessage(role="assistant", framework_item=_dump(replace(m, parts=rest))))
    return out


def _is_prompt_only(m: ModelRequest) -> bool:
    return all(isinstance(p, UserPromptPart | SystemPromptPart) for p in m.parts)


async def _with_system_prompts(agent: Agent[Any, Any], deps: Any, history: list[ModelMessage]) -> list[ModelMessage]:
    """The history with the agent's system prompts in its first request.
    The framework adds them only to a run without history, and the session
    always has one, so they are made again for each request (the
    framework's own first request, built without calling the model) and
    never stored."""
    if not history or not isinstance(history[0], ModelRequest):
        return history
    if any(isinstance(p, SystemPromptPart) for m in history if isinstance(m, ModelRequest) for p in m.parts):
        return history
    parts: list[SystemPromptPart] = []
    async with agent.iter("", deps=deps) as run:
        first = run.next_node
        node = first if isinstance(first, End) else await run.next(first)
        if Agent.is_model_request_node(node):
            parts = [p for p in node.request.parts if isinstance(p, SystemPromptPart)]
    if not parts:
        return history
    return [replace(history[0], parts=[*parts, *history[0].parts]), *history[1:]]


def _model_input(turn: pb.TurnContext, history: list[ModelMessage]) -> list[ModelMessage]:
    """The run's message history: the context summary first, then the
    stored messages, with the plan note just before the turn's message."""
    out: list[ModelMessage] = []
    if turn.HasField("context_summary"):
        out.append(ModelRequest(parts=[UserPromptPart(content=summary_note(turn.context_summary.text))]))
    note = plan_note(turn)
    at = len(history)
    if note:
        prompts = [i for i, m in enumerate(history) if isinstance(m, ModelRequest) and _is_prompt_only(m)]
        at = prompts[-1] if prompts else 0
    out += history[:at]
    if note:
        out.append(ModelRequest(parts=[UserPromptPart(content=note)]))
    return out + history[at:]


def _write_delta(event: Any, ctx: CallContext) -> None:
    if isinstance(event, PartStartEvent):
        if isinstance(event.part, TextPart) and event.part.content:
            ctx.write_text_delta(event.part.content)
        elif isinstance(event.part, ThinkingPart) and event.part.content:
            ctx.write_reasoning_delta(event.part.content)
    elif isinstance(event, PartDeltaEvent):
        if isinstance(event.delta, TextPartDelta) and event.delta.content_delta:
            ctx.write_text_delta(event.delta.content_delta)
        elif isinstance(event.delta, ThinkingPartDelta) and event.delta.content_delta:
            ctx.write_reasoning_delta(event.delta.content_delta)


def _add_usage(total: pb.Usage, resp: ModelResponse) -> None:
    u = resp.usage
    total.model_calls += 1
    total.input_tokens += u.input_tokens
    total.output_tokens += u.output_tokens
    total.total_tokens += u.input_tokens + u.output_tokens
    total.cached_input_tokens += u.cache_read_tokens
    total.reasoning_tokens += int(u.details.get("reasoning_tokens", 0))


def _output_text(output: Any) -> str:
    if isinstance(output, str):
        return output
    return pydantic_core.to_json(output, indent=2).decode()


def _opens(m: pb.Message) -> list[str]:
    if m.role != "assistant" or not m.framework_item:
        return []
    msg = _load(m.framework_item)
    return [p.tool_call_id for p in msg.parts if isinstance(p, ToolCallPart)] if isinstance(msg, ModelResponse) else []


def _closes(m: pb.Message) -> list[str]:
    if not m.framework_item or m.role == "user":
        return []
    msg = _load(m.framework_item)
    if not isinstance(msg, ModelRequest):
        return []
    return [p.tool_call_id for p in msg.parts if isinstance(p, ToolReturnPart)]


def _stored_message(m: pb.Message) -> ModelMessage | None:
    """A stored message as the framework's message: its framework item, or
    for a text the session stored without one (a user message whose
    BuildUserMessage failed, a turn-failure note), the text itself."""
    if m.framework_item:
        return _load(m.framework_item)
    if m.role == "user" and m.text:
        return ModelRequest(parts=[UserPromptPart(content=m.text)])
    if m.role == "assistant" and m.text:
        return ModelResponse(parts=[TextPart(content=m.text)])
    return None


def _dump(m: ModelMessage) -> str:
    return _MESSAGE.dump_json(m).decode()


def _load(item: str) -> ModelMessage:
    return _MESSAGE.validate_json(item)


def _model(agent: Agent[Any, Any]) -> Model:
    m = agent.model
    if m is None:
        raise permanent("the agent has no model: give Agent(model=...) in your build function")
    return m if isinstance(m, Model) else infer_model(m)


def _model_name(agent: Agent[Any, Any]) -> str:
    m = agent.model
    if isinstance(m, str):
        return m
    return str(getattr(m, "model_name", "") or "")
