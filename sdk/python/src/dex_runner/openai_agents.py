"""Run an OpenAI Agents SDK agent (``agents.Agent``) as a durable runner.

The agent you already wrote drops in: its instructions, model and model
settings, function tools and handoffs. Every model call is one RunModel
Step (the agent's ``Model.stream_response``, one request, its text
streamed live); every tool call the
model makes comes back to the session as a deferred call with its effect
class and approval, and runs in ExecuteDeferredToolCall through the tool's
own ``on_invoke_tool``. A handoff is a deferred call too: once it is
recorded, the next model call runs the agent it names, and because the
transcript holds the handoff, the active agent survives restarts. The
session's own tools (ask_user, durable_wait, write_todos, MCP tools) are
offered too; the session runs their calls.

    def build(agent_name: str, runner_config: dict[str, Any]) -> Agent:
        return Agent(name="orders", instructions="...", tools=[lookup_order, refund_order])

    serve(OpenAIAgentsRunner(build, tool_effects={"lookup_order": "read", "refund_order": "non_idempotent_write"}))

Stored messages are the SDK's own Responses input items (JSON), so the
model sees exactly what the SDK would send. A tool reads its call's
idempotency key from ``ctx.context`` when it takes a
``RunContextWrapper[DexToolContext]``, or from the context your
``context_factory`` builds from a :class:`DexToolContext`.
"""

from __future__ import annotations

import json
import re
from collections.abc import AsyncIterator, Callable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from typing import Any

from agents import Agent, FunctionTool, Handoff, ModelProvider, RunContextWrapper, handoff
from agents.items import ModelResponse
from agents.models.interface import Model, ModelTracing
from agents.models.multi_provider import MultiProvider
from agents.tool_context import ToolContext
from agents.usage import Usage
from openai import APIStatusError
from openai.types.responses import (
    Response,
    ResponseCompletedEvent,
    ResponseOutputItemDoneEvent,
    ResponseReasoningSummaryTextDeltaEvent,
    ResponseTextDeltaEvent,
)

from dex_runner import pb
from dex_runner.check import check_tool_effects
from dex_runner.context import (
    SUMMARY_INSTRUCTIONS,
    SUMMARY_OMISSION_FORMAT,
    closes_by_tool_message,
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

__all__ = ["DexToolContext", "OpenAIAgentsRunner"]

BuildAgent = Callable[[str, dict[str, Any]], Agent[Any]]

# A handoff changes the active agent and nothing else: a read.
_HANDOFF_POLICY = pb.ToolPolicy(effect="read", requires_approval=False)


class OpenAIAgentsRunner:
    """A runner over OpenAI Agents SDK agents: ``build`` makes an agent's
    root ``Agent`` from its name and runner_config."""

    def __init__(
        self,
        build: BuildAgent,
        *,
        tool_effects: Mapping[str, str] | None = None,
        model_provider: ModelProvider | None = None,
        context_factory: Callable[[DexToolContext], Any] | None = None,
        name: str = "dex-runner-openai-agents",
        version: str = "0.1.0",
    ) -> None:
        self._build = build
        self._effects = dict(tool_effects or {})
        check_tool_effects(self._effects)
        self._provider = model_provider or MultiProvider()
        self._context_factory = context_factory or (lambda c: c)
        self._name, self._version = name, version
        self._agents: dict[str, Agent[Any]] = {}

    async def info(self, req: pb.InfoRequest) -> InfoResult:
        return InfoResult(self._name, self._version)

    async def configure(self, req: pb.ConfigureRequest) -> pb.ConfigureResponse:
        cfg = json.loads(req.runner_config or "{}")
        if not isinstance(cfg, dict):
            raise ValueError("runner_config must be a JSON object")
        root = self._build(req.agent, cfg)
        for agent in _graph(root):
            problem = _unsupported(agent)
            if problem:
                raise ValueError(f"agent {agent.name!r}: {problem}")
        self._agents[req.agent] = root
        names: list[str] = []
        policies: dict[str, pb.ToolPolicy] = {}
        for agent in _graph(root):
            for t in agent.tools:
                if isinstance(t, FunctionTool) and t.name not in names:
                    names.append(t.name)
                    policies[t.name] = self._own_policy(t)
            for h in _handoffs(agent):
                if h.tool_name not in names:
                    names.append(h.tool_name)
                    policies[h.tool_name] = _HANDOFF_POLICY
        return pb.ConfigureResponse(tools=names, tool_policies=policies)

    def _own_policy(self, t: FunctionTool) -> pb.ToolPolicy:
        p = pb.ToolPolicy(effect=self._effects.get(t.name, ""))
        if t.needs_approval is True or callable(t.needs_approval):
            # A rule that is a function is decided per call (_call_policy);
            # configure reports the strict answer.
            p.requires_approval = True
        return p

    async def _call_policy(self, t: FunctionTool, args: str, call_id: str) -> pb.ToolPolicy:
        """The tool's own policy for one call: a needs_approval function
        gets the call's arguments; one that fails asks for approval."""
        p = self._own_policy(t)
        rule = t.needs_approval
        if callable(rule):
            try:
                parsed = json.loads(args or "{}")
                p.requires_approval = bool(await rule(RunContextWrapper(context=None), parsed, call_id))
            except Exception:
                p.requires_approval = True
        return p

    def _root(self, agent: str) -> Agent[Any]:
        root = self._agents.get(agent)
        if root is None:
            raise permanent(f"agent {agent!r} is not configured in this runner")
        return root

    async def build_user_message(self, req: pb.BuildUserMessageRequest) -> pb.BuildUserMessageResponse:
        item = {"role": "user", "content": req.text}
        return pb.BuildUserMessageResponse(
            message=pb.FrameworkMessage(role="user", text=req.text, framework_item=json.dumps(item))
        )

    async def run_model_step(self, req: pb.RunModelStepRequest, ctx: CallContext) -> pb.RunModelStepResponse:
        turn = req.turn
        root = self._root(turn.agent)
        items: list[Any] = [i for i in map(_stored_item, turn.messages) if i is not None]
        new_messages: list[pb.FrameworkMessage] = []
        for rec in unanswered_calls(turn, _opens):
            out = describe_tool_call_outcome(rec)
            item = {"type": "function_call_output", "call_id": rec.tool_call_id, "output": out}
            items.append(item)
            new_messages.append(
                pb.FrameworkMessage(
                    role="tool", text=out, framework_item=json.dumps(item), tool_call_id=rec.tool_call_id,
                    tool_name=rec.tool_name, tool_status=rec.status,
                )
            )  # fmt: skip
        summary = turn.context_summary.text if turn.HasField("context_summary") else ""
        agent = _active_agent(root, items, _summary_agent(summary), _not_succeeded(turn.messages, new_messages))
        run_ctx: RunContextWrapper[Any] = RunContextWrapper(context=None)
        system = await agent.get_system_prompt(run_ctx)
        tools = [t for t in await agent.get_all_tools(run_ctx) if isinstance(t, FunctionTool)]
        handoffs = _handoffs(agent)
        host = list(turn.host_tools)
        if turn.interaction_mode == "planning":
            # A planning turn offers only write_todos.
            tools, handoffs, host = [], [], [d for d in host if d.name == "write_todos"]
        tools += [_host_tool(d) for d in host]
        model = self._model(agent)
        final = await _stream(
            model.stream_response(
                system, _model_input(turn, items), agent.model_settings, list(tools), None, handoffs,
                ModelTracing.DISABLED, previous_response_id=None, conversation_id=None, prompt=None,
            ),
            ctx,
        )  # fmt: skip
        resp = ModelResponse(output=list(final.output), usage=Usage(), response_id=final.id)
        calls: list[pb.DeferredToolCall] = []
        for out_item in resp.to_input_items():
            d: dict[str, Any] = json.loads(json.dumps(out_item, default=str))
            kind = d.get("type")
            if kind == "function_call":
                name = str(d.get("name", ""))
                calls.append(
                    pb.DeferredToolCall(
                        tool_call_id=str(d["call_id"]), tool_name=name, arguments=str(d.get("arguments") or "{}"),
                        policy=await self._claim(turn, agent, name, str(d.get("arguments") or "{}"), str(d["call_id"])),
                    )
                )  # fmt: skip
                new_messages.append(pb.FrameworkMessage(role="assistant", framework_item=json.dumps(d)))
                continue
            new_messages.append(
                pb.FrameworkMessage(role="assistant", text=_message_text(d), framework_item=json.dumps(d))
            )
        usage = _usage(final)
        meta = pb.ModelCallMetadata(
            request_model=_model_name(agent), response_id=resp.response_id or "", provider_name=_provider_name(model)
        )
        if not calls:
            return pb.RunModelStepResponse(
                turn_completed=pb.TurnCompleted(new_messages=new_messages, usage=usage, metadata=meta)
            )
        state = json.dumps({"active_agent": agent.name})
        return pb.RunModelStepResponse(
            tool_calls_requested=pb.ToolCallsRequested(
                run_state=state, tool_calls=calls, new_messages=new_messages, usage=usage, metadata=meta
            )
        )

    async def select_compaction_cutoff(self, req: pb.CompactionCutoffRequest) -> pb.CompactionCutoffResponse:
        """Cuts only between whole responses: never between a function call
        and its output."""
        through = select_cutoff(req.turn.messages, req.retained_token_budget, _opens, closes_by_tool_message)
        return pb.CompactionCutoffResponse(through_sequence=through)

    async def summarize_context(self, req: pb.SummarizeContextRequest, ctx: CallContext) -> pb.SummarizeContextResponse:
        """One call of the active agent's model, with the summary
        instructions and no tools, over the earlier summary and the
        messages. The summary ends with the agent a handoff made active,
        so a handoff the summary replaces still holds."""
        turn = req.turn
        root = self._root(turn.agent)
        msgs = [m for m in req.messages if m.framework_item]
        agent = _active_agent(
            root, [json.loads(m.framework_item) for m in msgs], _summary_agent(req.previous_summary),
            _not_succeeded(msgs, []),
        )  # fmt: skip
        model = self._model(agent)
        head: list[Any] = []
        if req.previous_summary:
            head.append({"role": "user", "content": summary_note(req.previous_summary)})

        def build(rest: Sequence[pb.Message], omitted: int) -> list[Any]:
            note = [{"role": "user", "content": SUMMARY_OMISSION_FORMAT % omitted}] if omitted else []
            return head + note + [json.loads(m.framework_item) for m in rest]

        def size(rest: Sequence[pb.Message], omitted: int) -> int:
            out = agent.model_settings.max_tokens or 0
            return estimate_tokens(SUMMARY_INSTRUCTIONS + json.dumps(build(rest, omitted))) + out

        try:
            omitted, rest = fit_summary_input(msgs, req.input_token_budget, size, _opens, closes_by_tool_message)
        except ValueError as e:
            raise permanent(str(e)) from e
        final = await _stream(
            model.stream_response(
                SUMMARY_INSTRUCTIONS, build(rest, omitted), agent.model_settings, [], None, [],
                ModelTracing.DISABLED, previous_response_id=None, conversation_id=None, prompt=None,
            ),
            ctx,
        )  # fmt: skip
        text = "".join(_message_text(json.loads(json.dumps(i, default=str))) for i in _output_items(final))
        if agent is not root:
            text += "\n\n" + _ACTIVE_AGENT_FORMAT % agent.name
        meta = pb.ModelCallMetadata(
            request_model=_model_name(agent), response_id=final.id or "", provider_name=_provider_name(model)
        )
        return pb.SummarizeContextResponse(summary=text, usage=_usage(final), metadata=meta)

    def _model(self, agent: Agent[Any]) -> Model:
        if isinstance(agent.model, Model):
            return agent.model
        return self._provider.get_model(agent.model)

    async def _claim(
        self, turn: pb.TurnContext, agent: Agent[Any], name: str, args: str, call_id: str
    ) -> pb.ToolPolicy:
        for d in turn.host_tools:
            if d.name == name:
                # A tool the session runs (a built-in, an MCP tool).
                return resolve_policy(turn, name, d.effect)
        if any(h.tool_name == name for h in _handoffs(agent)):
            return resolve_policy(turn, name, own=_HANDOFF_POLICY)
        for t in agent.tools:
            if isinstance(t, FunctionTool) and t.name == name:
                return resolve_policy(turn, name, own=await self._call_policy(t, args, call_id))
        # Not a tool of the agent: the worker fails it as unknown.
        return pb.ToolPolicy(effect="unclassified", requires_approval=False)

    async def execute_deferred_tool_call(
        self, req: pb.ExecuteToolRequest, ctx: ToolCallContext
    ) -> pb.ExecuteToolResponse:
        root = self._root(req.agent)
        call = req.tool_call
        for agent in _graph(root):
            for h in _handoffs(agent):
                if h.tool_name == call.tool_name:
                    target = next(a for a in _graph(root) if a.name == h.agent_name)
                    return pb.ExecuteToolResponse(result=pb.ToolResult(output=h.get_transfer_message(target)))
            for t in agent.tools:
                if isinstance(t, FunctionTool) and t.name == call.tool_name:
                    dex = DexToolContext(
                        idempotency_key=req.idempotency_key, attempt=req.attempt, session_id=req.session_id,
                        turn_id=req.turn_id, tool_call_id=call.tool_call_id, agent=req.agent,
                    )  # fmt: skip
                    tool_ctx: ToolContext[Any] = ToolContext(
                        context=self._context_factory(dex), tool_name=t.name, tool_call_id=call.tool_call_id,
                        tool_arguments=call.arguments, agent=agent,
                    )  # fmt: skip
                    # The tool's own invoker, without the SDK's failure
                    # handler: a tool that raises fails the Step, which the
                    # session retries or records by the tool's effect class,
                    # instead of a "succeeded" call the model is told to try
                    # again (a second write under a new idempotency key).
                    invoke = getattr(t.on_invoke_tool, "_invoke_tool_impl", t.on_invoke_tool)
                    out = await invoke(tool_ctx, call.arguments)
                    text = out if isinstance(out, str) else json.dumps(out, default=str)
                    return pb.ExecuteToolResponse(result=pb.ToolResult(output=text))
        return pb.ExecuteToolResponse(error=pb.ToolExecutionError(message=f"unknown tool {call.tool_name}"))

    async def build_unfinished_turn_messages(
        self, req: pb.BuildUnfinishedTurnMessagesRequest
    ) -> pb.BuildUnfinishedTurnMessagesResponse:
        """The outputs of the last response's calls that no later model call
        stored, so the transcript never holds a call without its output."""
        turn = req.turn
        out = []
        for rec in unanswered_calls(turn, _opens, final_only=True):
            text = describe_tool_call_outcome(rec)
            item = {"type": "function_call_output", "call_id": rec.tool_call_id, "output": text}
            out.append(
                pb.FrameworkMessage(
                    role="tool", text=text, framework_item=json.dumps(item),
                    tool_call_id=rec.tool_call_id, tool_name=rec.tool_name, tool_status=rec.status,
                )
            )  # fmt: skip
        return pb.BuildUnfinishedTurnMessagesResponse(messages=out)


def _unsupported(agent: Agent[Any]) -> str:
    """What of the agent this adapter does not run yet, or "": better a
    clear refusal at configure than a feature silently left out."""
    for t in agent.tools:
        if not isinstance(t, FunctionTool):
            kind = type(t).__name__
            return f"tool {getattr(t, 'name', kind)!r} is a {kind}: only function tools run here yet"
    if agent.mcp_servers:
        return "mcp_servers are not supported yet: declare the MCP servers in the worker config (mcp_servers) instead"
    if agent.output_type not in (None, str):
        return "a structured output_type is not supported yet"
    if agent.input_guardrails or agent.output_guardrails:
        return "guardrails are not supported yet"
    for h in _handoffs(agent):
        if h.input_filter is not None:
            return f"handoff {h.tool_name!r}: input_filter is not supported yet"
    return ""


def _provider_name(model: Model) -> str:
    name = type(model).__name__
    return "openai" if name.startswith("OpenAI") else ""


def _host_tool(d: pb.ToolDefinition) -> FunctionTool:
    """A tool the session runs (TurnContext.host_tools: ask_user,
    durable_wait, write_todos, MCP tools), offered to the model like the
    agent's own. The worker routes its calls itself; the runner never runs
    it."""

    async def never(ctx: ToolContext[Any], args: str) -> str:
        raise RuntimeError(f"{d.name} is run by the session, not by the runner")

    return FunctionTool(
        name=d.name,
        description=d.description,
        params_json_schema=json.loads(d.input_schema or '{"type": "object"}'),
        on_invoke_tool=never,
        strict_json_schema=False,
    )


def _handoffs(agent: Agent[Any]) -> list[Handoff[Any, Any]]:
    return [h if isinstance(h, Handoff) else handoff(h) for h in agent.handoffs]


def _graph(root: Agent[Any]) -> list[Agent[Any]]:
    """The root agent and every agent a handoff reaches, once each."""
    seen: list[Agent[Any]] = []
    todo = [root]
    while todo:
        a = todo.pop(0)
        if any(a is s for s in seen):
            continue
        seen.append(a)
        for h in a.handoffs:
            if isinstance(h, Agent):
                todo.append(h)
            else:
                # A handoff(agent) object keeps its agent by weak reference.
                ref = getattr(h, "_agent_ref", None)
                target = ref() if ref is not None else None
                if isinstance(target, Agent):
                    todo.append(target)
    return seen


def _active_agent(root: Agent[Any], items: list[Any], start: str = "", failed: set[str] | None = None) -> Agent[Any]:
    """The agent the transcript's last completed handoff reached, else the
    one the context summary names (start), else root: the active agent is
    derived from the stored items, so it survives any restart. A handoff
    whose call did not succeed (failed: rejected, failed or
    outcome_unknown call IDs) changes nothing."""
    graph = {a.name: a for a in _graph(root)}
    outputs = {i.get("call_id") for i in items if isinstance(i, dict) and i.get("type") == "function_call_output"}
    outputs -= failed or set()
    active = graph.get(start, root)
    for i in items:
        if not isinstance(i, dict) or i.get("type") != "function_call" or i.get("call_id") not in outputs:
            continue
        for h in _handoffs(active):
            if h.tool_name == i.get("name") and h.agent_name in graph:
                active = graph[h.agent_name]
                break
    return active


# The last line of a summary made while a handoff's agent was active.
_ACTIVE_AGENT_FORMAT = "[Dex] Active agent: %s"
_ACTIVE_AGENT_RE = re.compile(r"\n\[Dex\] Active agent: (.+)\Z")


def _not_succeeded(stored: Sequence[pb.Message], new: Sequence[pb.FrameworkMessage]) -> set[str]:
    """The call IDs whose result is not a success: a rejected, failed or
    outcome-unknown handoff changes no agent."""
    out = {m.tool_call_id for m in stored if m.role == "tool" and m.tool_status not in ("", "succeeded")}
    return out | {m.tool_call_id for m in new if m.role == "tool" and m.tool_status not in ("", "succeeded")}


def _summary_agent(summary: str) -> str:
    m = _ACTIVE_AGENT_RE.search(summary)
    return m.group(1) if m else ""


def _model_input(turn: pb.TurnContext, items: list[Any]) -> list[Any]:
    """The model's input: the context summary first, then the stored items,
    with the plan note just before the turn's user message."""
    out: list[Any] = []
    if turn.HasField("context_summary"):
        out.append({"role": "user", "content": summary_note(turn.context_summary.text)})
    note = plan_note(turn)
    at = len(items)
    if note:
        at = max((i for i, it in enumerate(items) if isinstance(it, dict) and it.get("role") == "user"), default=0)
    out += items[:at]
    if note:
        out.append({"role": "user", "content": note})
    return out + items[at:]


def _stored_item(m: pb.Message) -> Any:
    """A stored message as a Responses input item: its framework item, or
    for a text the session stored without one (a user message whose
    BuildUserMessage failed, a turn-failure note), the text itself."""
    if m.framework_item:
        return json.loads(m.framework_item)
    if m.role in ("user", "assistant") and m.text:
        return {"role": m.role, "content": m.text}
    return None


def _opens(m: pb.Message) -> list[str]:
    if m.role != "assistant" or '"function_call"' not in m.framework_item:
        return []
    d = json.loads(m.framework_item)
    return [str(d.get("call_id"))] if isinstance(d, dict) and d.get("type") == "function_call" else []


@contextmanager
def _provider_errors() -> Iterator[None]:
    """A provider's answer a retry cannot fix (400, 401, 403, 404, 422)
    fails the Step at once; anything else is retried."""
    try:
        yield
    except APIStatusError as e:
        if e.status_code in PERMANENT_HTTP_STATUSES:
            raise permanent(f"the model provider answered {e.status_code}: {e.message}") from e
        raise


async def _stream(stream: AsyncIterator[Any], ctx: CallContext) -> Response:
    """Drains one streamed model call, writing its text and reasoning live,
    and returns the completed response."""
    with _provider_errors():
        return await _drain(stream, ctx)


async def _drain(stream: AsyncIterator[Any], ctx: CallContext) -> Response:
    final: Response | None = None
    streamed: list[Any] = []
    async for event in stream:
        if isinstance(event, ResponseTextDeltaEvent):
            ctx.write_text_delta(event.delta)
        elif isinstance(event, ResponseReasoningSummaryTextDeltaEvent):
            ctx.write_reasoning_delta(event.delta)
        elif isinstance(event, ResponseOutputItemDoneEvent):
            streamed.append(event.item)
        elif isinstance(event, ResponseCompletedEvent):
            final = event.response
        elif event.type in ("response.incomplete", "response.failed", "error"):
            raise RuntimeError(f"the model's response ended with {event.type}")
    if final is None:
        raise RuntimeError("the model's stream ended without response.completed")
    if not final.output:
        final.output = streamed
    return final


def _output_items(final: Response) -> list[Any]:
    return list(ModelResponse(output=list(final.output), usage=Usage(), response_id=final.id).to_input_items())


def _usage(final: Response) -> pb.Usage:
    usage = pb.Usage(model_calls=1)
    u = final.usage
    if u is not None:
        usage.input_tokens, usage.output_tokens, usage.total_tokens = u.input_tokens, u.output_tokens, u.total_tokens
        usage.cached_input_tokens = getattr(u.input_tokens_details, "cached_tokens", 0) or 0
        usage.reasoning_tokens = getattr(u.output_tokens_details, "reasoning_tokens", 0) or 0
    return usage


def _message_text(item: dict[str, Any]) -> str:
    if item.get("type") not in (None, "message") or item.get("role") != "assistant":
        return ""
    content = item.get("content")
    if isinstance(content, str):
        return content
    parts = [c.get("text", "") for c in content or [] if isinstance(c, dict) and c.get("type") == "output_text"]
    return "".join(parts)


def _model_name(agent: Agent[Any]) -> str:
    m = agent.model
    if isinstance(m, str):
        return m
    return str(getattr(m, "model", "") or "")
