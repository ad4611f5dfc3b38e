"""Run a Google ADK agent (``google.adk.agents.LlmAgent``) as a durable runner.

The agent you already wrote drops in: its model, instruction (with session
state templates), function tools and callbacks. Every RunModel Step runs the
agent through ADK's own ``Runner`` until the model's first complete
response, so one model call per Step with ADK's own request building, its
text streamed live; ADK would run the function calls next, but the Step
stops there and hands them to the session as deferred calls with their
effect class and approval. Each runs in ExecuteDeferredToolCall through the
agent's own tool (``tool.run_async``) with the idempotency key in
``tool_context.state["temp:idempotency_key"]``. A tool made with
``require_confirmation=True`` is a call that waits for approval.

Stored messages are ADK's own session events as JSON (the form ADK's
database session services keep), and each Step rebuilds an in-memory ADK
session from them: the session is the checkpoint, so session state that
events carry (``state_delta``) survives restarts too.

    agent = LlmAgent(name="orders", model="gemini-2.5-flash", instruction="...", tools=[lookup_order, refund_order])

    serve(GoogleADKRunner(lambda name, cfg: agent,
                          tool_effects={"lookup_order": "read", "refund_order": "non_idempotent_write"}))
"""

from __future__ import annotations

import json
import uuid
from collections.abc import Callable, Mapping, Sequence
from typing import Any

from google.adk.agents import LlmAgent
from google.adk.agents.callback_context import CallbackContext
from google.adk.agents.invocation_context import InvocationContext
from google.adk.agents.readonly_context import ReadonlyContext
from google.adk.agents.run_config import RunConfig, StreamingMode  # type: ignore[attr-defined]
from google.adk.apps import App
from google.adk.events.event import Event
from google.adk.models.llm_request import LlmRequest
from google.adk.models.llm_response import LlmResponse
from google.adk.plugins.base_plugin import BasePlugin
from google.adk.runners import Runner
from google.adk.sessions import InMemorySessionService, Session
from google.adk.tools.function_tool import FunctionTool
from google.adk.tools.long_running_tool import LongRunningFunctionTool
from google.adk.tools.tool_confirmation import ToolConfirmation
from google.adk.tools.tool_context import ToolContext
from google.genai import errors as genai_errors
from google.genai import types

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

__all__ = ["DexToolContext", "GoogleADKRunner"]

BuildAgent = Callable[[str, dict[str, Any]], LlmAgent]

_APP, _USER = "dex", "dex"
# The state keys a tool reads its call from. "temp:" keys are never
# stored in the session.
IDEMPOTENCY_KEY = "temp:idempotency_key"
CALL_KEY = "temp:dex_call"


class GoogleADKRunner:
    """A runner over Google ADK agents: ``build`` makes an agent's root
    ``LlmAgent`` from its name and runner_config."""

    def __init__(
        self,
        build: BuildAgent,
        *,
        tool_effects: Mapping[str, str] | None = None,
        name: str = "dex-runner-google-adk",
        version: str = "0.1.0",
    ) -> None:
        self._build = build
        self._effects = dict(tool_effects or {})
        check_tool_effects(self._effects)
        self._name, self._version = name, version
        self._agents: dict[str, LlmAgent] = {}
        self._tools: dict[str, dict[str, Any]] = {}

    async def info(self, req: pb.InfoRequest) -> InfoResult:
        return InfoResult(self._name, self._version)

    async def configure(self, req: pb.ConfigureRequest) -> pb.ConfigureResponse:
        cfg = json.loads(req.runner_config or "{}")
        if not isinstance(cfg, dict):
            raise ValueError("runner_config must be a JSON object")
        agent = self._build(req.agent, cfg)
        if not isinstance(agent, LlmAgent):
            raise ValueError("build must return a google.adk LlmAgent")
        if agent.sub_agents:
            raise ValueError(f"agent {agent.name!r}: sub_agents are not supported yet")
        if agent.output_schema is not None:
            raise ValueError(f"agent {agent.name!r}: output_schema is not supported yet")
        session = await _session(InMemorySessionService(), "configure", [])
        ic = InvocationContext(
            session_service=InMemorySessionService(), session=session, agent=agent, invocation_id="configure",
            run_config=RunConfig(),
        )  # fmt: skip
        tools: dict[str, Any] = {}
        for t in await agent.canonical_tools(ReadonlyContext(ic)):
            if isinstance(t, LongRunningFunctionTool):
                raise ValueError(f"agent {agent.name!r}: long-running tool {t.name!r} is not supported yet")
            if not isinstance(t, FunctionTool):
                raise ValueError(
                    f"agent {agent.name!r}: tool {t.name!r} is a {type(t).__name__}: only function tools run here "
                    "(declare MCP servers in the worker config's mcp_servers instead)"
                )
            tools[t.name] = t
        self._agents[req.agent], self._tools[req.agent] = agent, tools
        return pb.ConfigureResponse(tools=list(tools), tool_policies={n: self._own_policy(t) for n, t in tools.items()})

    def _own_policy(self, t: Any) -> pb.ToolPolicy:
        p = pb.ToolPolicy(effect=self._effects.get(t.name, ""))
        rule = getattr(t, "_require_confirmation", False)
        if rule is True or callable(rule):
            # A rule that is a function asks for approval of every call: it
            # needs ADK's tool context, which only the tool Step has.
            p.requires_approval = True
        return p

    def _agent(self, name: str) -> LlmAgent:
        agent = self._agents.get(name)
        if agent is None:
            raise permanent(f"agent {name!r} is not configured in this runner")
        return agent

    async def build_user_message(self, req: pb.BuildUserMessageRequest) -> pb.BuildUserMessageResponse:
        event = Event(
            author="user",
            invocation_id=f"e-{uuid.uuid4()}",
            content=types.Content(role="user", parts=[types.Part(text=req.text)]),
        )
        return pb.BuildUserMessageResponse(
            message=pb.FrameworkMessage(role="user", text=req.text, framework_item=_dump(event))
        )

    async def run_model_step(self, req: pb.RunModelStepRequest, ctx: CallContext) -> pb.RunModelStepResponse:
        turn = req.turn
        agent = self._agent(turn.agent)
        events = [e for e in (_stored_event(m, agent.name) for m in turn.messages) if e is not None]
        settled = unanswered_calls(turn, _opens)
        new_messages: list[pb.FrameworkMessage] = []
        if settled:
            # The session's results as one function-response event, as ADK
            # writes them after running a response's calls.
            parts = [
                types.Part(function_response=types.FunctionResponse(
                    id=c.tool_call_id, name=c.tool_name, response={"result": describe_tool_call_outcome(c)},
                ))
                for c in settled
            ]  # fmt: skip
            invocation = next((e.invocation_id for e in reversed(events) if e.get_function_calls()), "")
            results = Event(
                author=agent.name, invocation_id=invocation, content=types.Content(role="user", parts=parts)
            )
            events.append(results)
            for i, c in enumerate(settled):
                new_messages.append(
                    pb.FrameworkMessage(
                        role="tool", text=describe_tool_call_outcome(c),
                        framework_item=_dump(results) if i == 0 else "", tool_call_id=c.tool_call_id,
                        tool_name=c.tool_name, tool_status=c.status,
                    )
                )  # fmt: skip
        service = InMemorySessionService()
        session = await _session(service, turn.session_id, _model_input(turn, events))
        known = {e.id for e in session.events}
        app = App(name=_APP, root_agent=agent, plugins=[_SessionTools(turn)])
        runner = Runner(app=app, session_service=service)
        calls: list[types.FunctionCall] = []
        try:
            with _provider_errors():
                async for event in runner.run_async(
                    user_id=_USER, session_id=session.id, run_config=RunConfig(streaming_mode=StreamingMode.SSE)
                ):
                    if event.partial:
                        _write_delta(event, ctx)
                        continue
                    _raise_error_event(event)
                    if event.author != agent.name or event.get_function_responses():
                        continue
                    calls = list(event.get_function_calls())
                    if calls or event.is_final_response():
                        # ADK would run the calls next: they are the session's.
                        break
        finally:
            await runner.close()
        stored = await service.get_session(app_name=_APP, user_id=_USER, session_id=session.id)
        produced = [e for e in (stored.events if stored else []) if e.id not in known and not e.partial]
        usage = pb.Usage()
        meta = pb.ModelCallMetadata(request_model=_model_name(agent))
        for e in produced:
            if e.author == agent.name and e.content and not e.get_function_responses():
                _add_usage(usage, e)
                meta.response_model = e.model_version or meta.response_model
            text = "".join(p.text or "" for p in (e.content.parts or []) if not p.thought) if e.content else ""
            new_messages.append(pb.FrameworkMessage(role="assistant", text=text, framework_item=_dump(e)))
        if not calls:
            return pb.RunModelStepResponse(
                turn_completed=pb.TurnCompleted(new_messages=new_messages, usage=usage, metadata=meta)
            )
        deferred = [
            pb.DeferredToolCall(
                tool_call_id=str(c.id), tool_name=str(c.name), arguments=json.dumps(c.args or {}),
                policy=self._claim(turn, str(c.name)),
            )
            for c in calls
        ]  # fmt: skip
        return pb.RunModelStepResponse(
            tool_calls_requested=pb.ToolCallsRequested(
                run_state="google_adk", tool_calls=deferred, new_messages=new_messages, usage=usage, metadata=meta
            )
        )

    def _claim(self, turn: pb.TurnContext, name: str) -> pb.ToolPolicy:
        for d in turn.host_tools:
            if d.name == name:
                return resolve_policy(turn, name, d.effect)
        own = self._tools.get(turn.agent, {}).get(name)
        if own is not None:
            return resolve_policy(turn, name, own=self._own_policy(own))
        return pb.ToolPolicy(effect="unclassified", requires_approval=False)

    async def execute_deferred_tool_call(
        self, req: pb.ExecuteToolRequest, ctx: ToolCallContext
    ) -> pb.ExecuteToolResponse:
        agent = self._agent(req.agent)
        call = req.tool_call
        tool = self._tools[req.agent].get(call.tool_name)
        if tool is None:
            return pb.ExecuteToolResponse(error=pb.ToolExecutionError(message=f"unknown tool {call.tool_name}"))
        try:
            args = json.loads(call.arguments or "{}")
        except json.JSONDecodeError:
            return pb.ExecuteToolResponse(
                error=pb.ToolExecutionError(message=f"invalid arguments for {call.tool_name}: not JSON")
            )
        service = InMemorySessionService()
        session = await _session(service, req.session_id, [])
        ic = InvocationContext(
            session_service=service, session=session, agent=agent, invocation_id=f"e-{req.turn_id}",
            run_config=RunConfig(),
        )  # fmt: skip
        # The session approved the call: a confirmation tool runs confirmed.
        tc = ToolContext(ic, function_call_id=call.tool_call_id, tool_confirmation=ToolConfirmation(confirmed=True))
        tc.state[IDEMPOTENCY_KEY] = req.idempotency_key
        tc.state[CALL_KEY] = {
            "idempotency_key": req.idempotency_key, "attempt": req.attempt, "session_id": req.session_id,
            "turn_id": req.turn_id, "tool_call_id": call.tool_call_id, "agent": req.agent,
        }  # fmt: skip
        out = await tool.run_async(args=args, tool_context=tc)
        if isinstance(out, dict) and set(out) == {"error"}:
            return pb.ExecuteToolResponse(error=pb.ToolExecutionError(message=str(out["error"])))
        text = out if isinstance(out, str) else json.dumps(out, default=str)
        return pb.ExecuteToolResponse(result=pb.ToolResult(output=text))

    async def build_unfinished_turn_messages(
        self, req: pb.BuildUnfinishedTurnMessagesRequest
    ) -> pb.BuildUnfinishedTurnMessagesResponse:
        """The results of the last response's calls that no later model call
        stored, so the transcript never holds a call without its result."""
        turn = req.turn
        settled = unanswered_calls(turn, _opens, final_only=True)
        if not settled:
            return pb.BuildUnfinishedTurnMessagesResponse()
        agent = self._agent(turn.agent)
        parts = [
            types.Part(function_response=types.FunctionResponse(
                id=c.tool_call_id, name=c.tool_name, response={"result": describe_tool_call_outcome(c)},
            ))
            for c in settled
        ]  # fmt: skip
        event = Event(author=agent.name, invocation_id="", content=types.Content(role="user", parts=parts))
        return pb.BuildUnfinishedTurnMessagesResponse(
            messages=[
                pb.FrameworkMessage(
                    role="tool", text=describe_tool_call_outcome(c), framework_item=_dump(event) if i == 0 else "",
                    tool_call_id=c.tool_call_id, tool_name=c.tool_name, tool_status=c.status,
                )
                for i, c in enumerate(settled)
            ]
        )  # fmt: skip

    async def select_compaction_cutoff(self, req: pb.CompactionCutoffRequest) -> pb.CompactionCutoffResponse:
        through = select_cutoff(req.turn.messages, req.retained_token_budget, _opens, closes_by_tool_message)
        return pb.CompactionCutoffResponse(through_sequence=through)

    async def summarize_context(self, req: pb.SummarizeContextRequest, ctx: CallContext) -> pb.SummarizeContextResponse:
        """One request to the agent's model, with the summary instructions and
        no tools, over the earlier summary and the messages."""
        agent = self._agent(req.turn.agent)
        # Cut points over every message (a function-response event for
        # several calls is stored on the first call's message only).
        msgs = list(req.messages)
        head = [_user(summary_note(req.previous_summary))] if req.previous_summary else []

        def build(rest: Sequence[pb.Message], omitted: int) -> list[types.Content]:
            note = [_user(SUMMARY_OMISSION_FORMAT % omitted)] if omitted else []
            contents = [
                c for c in (_content(_load(m.framework_item)) for m in rest if m.framework_item) if c is not None
            ]
            return [*head, *note, *contents, _user(SUMMARY_INSTRUCTIONS)]

        def size(rest: Sequence[pb.Message], omitted: int) -> int:
            return estimate_tokens(
                json.dumps([c.model_dump(mode="json", exclude_none=True) for c in build(rest, omitted)])
            )

        try:
            omitted, rest = fit_summary_input(msgs, req.input_token_budget, size, _opens, closes_by_tool_message)
        except ValueError as e:
            raise permanent(str(e)) from e
        request = LlmRequest(
            model=_model_name(agent), contents=build(rest, omitted),
            config=types.GenerateContentConfig(system_instruction=SUMMARY_INSTRUCTIONS),
        )  # fmt: skip
        text, usage, meta = "", pb.Usage(), pb.ModelCallMetadata(request_model=_model_name(agent))
        with _provider_errors():
            async for resp in agent.canonical_model.generate_content_async(request, stream=False):
                if resp.content:
                    text += "".join(p.text or "" for p in resp.content.parts or [] if not p.thought)
                if resp.usage_metadata:
                    _add_usage_metadata(usage, resp.usage_metadata)
                meta.response_model = resp.model_version or meta.response_model
        return pb.SummarizeContextResponse(summary=text, usage=usage, metadata=meta)


class _SessionTools(BasePlugin):
    """Offers the model the session's tools (TurnContext.host_tools) beside
    the agent's; a planning turn offers only write_todos."""

    def __init__(self, turn: pb.TurnContext) -> None:
        super().__init__(name="dex_session_tools")
        self._turn = turn

    async def before_model_callback(
        self, *, callback_context: CallbackContext, llm_request: LlmRequest
    ) -> LlmResponse | None:
        turn = self._turn
        planning = turn.interaction_mode == "planning"
        config = llm_request.config
        if planning:
            for t in config.tools or []:
                if isinstance(t, types.Tool) and t.function_declarations:
                    t.function_declarations = []
            config.tools = [t for t in config.tools or [] if not isinstance(t, types.Tool) or t.function_declarations]
        decls = [
            types.FunctionDeclaration(
                name=d.name, description=d.description, parameters_json_schema=json.loads(d.input_schema or "{}")
            )
            for d in turn.host_tools
            if not planning or d.name == "write_todos"
        ]
        if decls:
            config.tools = [*(config.tools or []), types.Tool(function_declarations=decls)]
        return None


async def _session(service: InMemorySessionService, session_id: str, events: Sequence[Event]) -> Session:
    session = await service.create_session(app_name=_APP, user_id=_USER, session_id=session_id or "dex")
    for e in events:
        await service.append_event(session, e)
    return session


def _model_input(turn: pb.TurnContext, events: list[Event]) -> list[Event]:
    """The session's events for the run: the context summary first, then
    the stored events, with the plan note just before the turn's message."""
    out: list[Event] = []
    if turn.HasField("context_summary"):
        out.append(_note(summary_note(turn.context_summary.text)))
    note = plan_note(turn)
    at = len(events)
    if note:
        at = max((i for i, e in enumerate(events) if e.author == "user" and _is_text(e)), default=0)
    out += events[:at]
    if note:
        out.append(_note(note))
    return out + events[at:]


def _note(text: str) -> Event:
    return Event(author="user", invocation_id=f"e-{uuid.uuid4()}", content=_user(text))


def _user(text: str) -> types.Content:
    return types.Content(role="user", parts=[types.Part(text=text)])


def _is_text(e: Event) -> bool:
    return bool(e.content and e.content.parts and all(p.text is not None for p in e.content.parts))


def _content(e: Event) -> types.Content | None:
    """An event's content as a model input, without ADK's call IDs (as ADK
    sends it)."""
    if e.content is None:
        return None
    c = e.content.model_copy(deep=True)
    for p in c.parts or []:
        if p.function_call:
            p.function_call.id = None
        if p.function_response:
            p.function_response.id = None
    return c


def _write_delta(event: Event, ctx: CallContext) -> None:
    for p in (event.content.parts or []) if event.content else []:
        if p.text:
            if p.thought:
                ctx.write_reasoning_delta(p.text)
            else:
                ctx.write_text_delta(p.text)


def _add_usage(total: pb.Usage, e: Event) -> None:
    total.model_calls += 1
    if e.usage_metadata:
        _add_usage_metadata(total, e.usage_metadata, count=False)


def _add_usage_metadata(total: pb.Usage, u: types.GenerateContentResponseUsageMetadata, count: bool = True) -> None:
    if count:
        total.model_calls += 1
    total.input_tokens += u.prompt_token_count or 0
    total.output_tokens += u.candidates_token_count or 0
    total.total_tokens += u.total_token_count or 0
    total.cached_input_tokens += u.cached_content_token_count or 0
    total.reasoning_tokens += u.thoughts_token_count or 0


def _provider_errors() -> Any:
    from contextlib import contextmanager

    @contextmanager
    def guard() -> Any:
        try:
            yield
        except genai_errors.APIError as e:
            if e.code in PERMANENT_HTTP_STATUSES:
                raise permanent(f"the model provider answered {e.code}: {e.message}") from e
            raise

    return guard()


# ADK's error codes (a provider's status) a retry cannot fix.
_PERMANENT_ERROR_CODES = frozenset(
    {"INVALID_ARGUMENT", "UNAUTHENTICATED", "PERMISSION_DENIED", "NOT_FOUND", "400", "401", "403", "404", "422"}
)


def _raise_error_event(event: Event) -> None:
    """ADK turns a failed model call into an event with an error code and
    no content (an event with content may carry the provider's finish
    reason as its code): the Step fails, permanently for a client error."""
    if not event.error_code or (event.content and event.content.parts):
        return
    message = f"the model call failed: {event.error_code}: {event.error_message or ''}".rstrip(": ")
    if str(event.error_code) in _PERMANENT_ERROR_CODES:
        raise permanent(message)
    raise RuntimeError(message)


def _opens(m: pb.Message) -> list[str]:
    if m.role != "assistant" or "function_call" not in m.framework_item:
        return []
    return [str(c.id) for c in _load(m.framework_item).get_function_calls()]


def _stored_event(m: pb.Message, agent: str) -> Event | None:
    """A stored message as an ADK event: its framework item, or for a text
    the session stored without one (a user message whose BuildUserMessage
    failed, a turn-failure note), the text itself. A tool message without
    an item shares the event stored on its call's first result."""
    if m.framework_item:
        return _load(m.framework_item)
    if m.role == "user" and m.text:
        return Event(author="user", invocation_id="", content=_user(m.text))
    if m.role == "assistant" and m.text:
        return Event(
            author=agent, invocation_id="", content=types.Content(role="model", parts=[types.Part(text=m.text)])
        )
    return None


def _dump(e: Event) -> str:
    return e.model_dump_json(exclude_none=True)


def _load(item: str) -> Event:
    return Event.model_validate_json(item)


def _model_name(agent: LlmAgent) -> str:
    m = agent.model
    return m if isinstance(m, str) else str(getattr(m, "model", "") or "")
