"""Run a LangGraph graph (a compiled ``StateGraph``) as a durable runner.

The graph you already built drops in: LangChain's ``create_agent`` (or
LangGraph's prebuilt ReAct agent), or your own ``StateGraph`` with a model
node and a ``ToolNode``. Every RunModel Step runs the graph up to its tool
node (``interrupt_before``), so one model call per Step, its text streamed
live; the model's tool calls come back to the session as deferred calls
with their effect class and approval, and each runs in
ExecuteDeferredToolCall through the graph's own ``ToolNode``. The graph has
no checkpointer: the session is the checkpoint. Messages are stored as
LangChain's own message dicts, and the rest of the graph's state is carried
as the run state within a turn and on the turn's last message after it.

A tool's ``interrupt(...)`` becomes a session question; the answer resumes
it (``Command(resume=...)``), as LangGraph resumes a node: the tool runs
again from its start with the answer.

    def build(agent_name: str, runner_config: dict) -> CompiledStateGraph:
        return create_agent(model, tools=[lookup_order, refund_order])

    serve(LangGraphRunner(build, tool_effects={"lookup_order": "read", "refund_order": "non_idempotent_write"},
                          summary_model=model))

A tool reads its idempotency key from ``runtime.context`` (a
:class:`DexToolContext`, or what your ``context`` factory makes of it) or
from ``config["configurable"]["idempotency_key"]``.
"""

from __future__ import annotations

import json
import uuid
from collections.abc import Callable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from importlib import resources
from typing import Any, cast

from langchain_core.language_models import BaseChatModel
from langchain_core.messages import (
    AIMessage,
    AIMessageChunk,
    BaseMessage,
    HumanMessage,
    SystemMessage,
    ToolMessage,
    messages_from_dict,
    messages_to_dict,
)
from langchain_core.tools import BaseTool, StructuredTool
from langgraph.checkpoint.memory import InMemorySaver
from langgraph.graph import END, START, MessagesState, StateGraph
from langgraph.prebuilt import ToolNode
from langgraph.types import Command
from openai import APIStatusError
from pydantic import BaseModel

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

__all__ = ["DexToolContext", "LangGraphRunner", "session_tools"]

Graph = Any  # a CompiledStateGraph
BuildGraph = Callable[[str, dict[str, Any]], Graph]

# The key of the graph's other state on a turn's last stored message.
_STATE_KEY = "dex_graph_state"


def session_tools(*names: str) -> list[BaseTool]:
    """The session's built-in tools (``ask_user``, ``durable_wait``,
    ``write_todos``) as LangChain tools, to add to your graph's tools when
    the agent enables them (``built_in_tools``): the model sees them, and
    the session runs their calls (a question, a durable wait, the plan).
    With no names, all three."""
    defs = json.loads(resources.files("dex_runner").joinpath("builtin_tools.json").read_text())
    out: list[BaseTool] = []
    for d in defs:
        if names and d["name"] not in names:
            continue

        def never(**_: Any) -> str:
            raise RuntimeError("this tool is run by the session, not by the runner")

        out.append(
            StructuredTool.from_function(
                func=never, name=d["name"], description=d["description"], args_schema=d["input_schema"],
                metadata={"dex_session_tool": True},
            )
        )  # fmt: skip
    unknown = set(names) - {t.name for t in out}
    if unknown:
        raise ValueError(f"session_tools: {sorted(unknown)} are not built-in tools")
    return out


class LangGraphRunner:
    """A runner over LangGraph graphs: ``build`` makes an agent's compiled
    graph from its name and runner_config; ``context`` makes the graph's
    runtime context from a :class:`DexToolContext`; ``summary_model`` (a
    chat model, or a function of the agent's name that returns one) writes
    compaction summaries: without it the runner has no compaction
    capability."""

    def __init__(
        self,
        build: BuildGraph,
        *,
        tool_effects: Mapping[str, str] | None = None,
        context: Callable[[DexToolContext], Any] | None = None,
        summary_model: BaseChatModel | Callable[[str], BaseChatModel] | None = None,
        name: str = "dex-runner-langgraph",
        version: str = "0.1.0",
    ) -> None:
        self._build = build
        self._effects = dict(tool_effects or {})
        check_tool_effects(self._effects)
        self._context = context or (lambda c: c)
        self._summary_model = summary_model
        if summary_model is None:
            # No summary model, no compaction capability.
            setattr(self, "select_compaction_cutoff", None)  # noqa: B010
            setattr(self, "summarize_context", None)  # noqa: B010
        self._name, self._version = name, version
        self._graphs: dict[str, Graph] = {}
        self._tool_nodes: dict[str, dict[str, ToolNode]] = {}

    async def info(self, req: pb.InfoRequest) -> InfoResult:
        return InfoResult(self._name, self._version)

    async def configure(self, req: pb.ConfigureRequest) -> pb.ConfigureResponse:
        cfg = json.loads(req.runner_config or "{}")
        if not isinstance(cfg, dict):
            raise ValueError("runner_config must be a JSON object")
        graph = self._build(req.agent, cfg)
        builder = getattr(graph, "builder", None)
        if builder is None or not hasattr(graph, "astream"):
            raise ValueError(
                "build must return a compiled LangGraph graph (StateGraph(...).compile() or create_agent(...))"
            )
        if getattr(graph, "checkpointer", None) not in (None, False):
            raise ValueError("compile the graph without a checkpointer: the session is its checkpoint")
        nodes = {n: spec.runnable for n, spec in builder.nodes.items() if isinstance(spec.runnable, ToolNode)}
        self._graphs[req.agent], self._tool_nodes[req.agent] = graph, nodes
        names: list[str] = []
        policies: dict[str, pb.ToolPolicy] = {}
        for node in nodes.values():
            for name, tool in node.tools_by_name.items():
                if _is_session_tool(tool) or name in names:
                    continue
                names.append(name)
                policies[name] = pb.ToolPolicy(effect=self._effects.get(name, ""))
        return pb.ConfigureResponse(tools=names, tool_policies=policies)

    def _graph(self, agent: str) -> Graph:
        graph = self._graphs.get(agent)
        if graph is None:
            raise permanent(f"agent {agent!r} is not configured in this runner")
        return graph

    async def build_user_message(self, req: pb.BuildUserMessageRequest) -> pb.BuildUserMessageResponse:
        return pb.BuildUserMessageResponse(
            message=pb.FrameworkMessage(role="user", text=req.text, framework_item=_dump(HumanMessage(req.text)))
        )

    async def run_model_step(self, req: pb.RunModelStepRequest, ctx: CallContext) -> pb.RunModelStepResponse:
        turn = req.turn
        graph = self._graph(turn.agent)
        tool_nodes = list(self._tool_nodes[turn.agent])
        stored = [m for m in turn.messages if m.framework_item]
        history = [h for h in map(_stored_message, turn.messages) if h is not None]
        new_messages: list[pb.FrameworkMessage] = []
        for rec in unanswered_calls(turn, _opens):
            msg = _tool_message(rec)
            history.append(msg)
            new_messages.append(_framework_tool_message(msg, rec))
        state = _graph_state(turn, stored)
        dex = DexToolContext("", 0, turn.session_id, turn.turn_id, "", turn.agent)
        config = {"configurable": _configurable(dex)}
        produced: list[BaseMessage] = []
        final: dict[str, Any] = {}
        stopped = False
        with _provider_errors():
            async for mode, data in graph.astream(
                {**state, "messages": _model_input(turn, history)}, config, context=self._context(dex),
                stream_mode=["messages", "updates", "values"], interrupt_before=tool_nodes,
            ):  # fmt: skip
                if mode == "messages":
                    chunk, meta = data
                    if isinstance(chunk, AIMessageChunk) and meta.get("langgraph_node") not in tool_nodes:
                        if chunk.text:
                            ctx.write_text_delta(chunk.text)
                elif mode == "updates":
                    for node, update in data.items():
                        if node == "__interrupt__":
                            if update:
                                raise permanent(
                                    "the graph called interrupt() outside a tool: only a tool's interrupt() "
                                    "becomes a session question"
                                )
                            stopped = True
                        elif isinstance(update, dict):
                            produced.extend(m for m in update.get("messages") or [] if isinstance(m, BaseMessage))
                elif mode == "values":
                    final = data
        usage = pb.Usage()
        meta = pb.ModelCallMetadata()
        for m in produced:
            if isinstance(m, AIMessage):
                _add_usage(usage, m)
                rm = m.response_metadata or {}
                meta.response_id = str(rm.get("id") or "")
                meta.response_model = meta.request_model = str(rm.get("model_name") or "")
                meta.provider_name = str(rm.get("model_provider") or "")
        for m in produced:
            if isinstance(m, ToolMessage):
                # A result the graph made itself (a structured-output tool).
                new_messages.append(
                    pb.FrameworkMessage(
                        role="tool", text=m.text, framework_item=_dump(m), tool_call_id=m.tool_call_id,
                        tool_name=m.name or "", tool_status="succeeded" if m.status == "success" else "failed",
                    )
                )  # fmt: skip
                continue
            new_messages.append(
                pb.FrameworkMessage(
                    role="assistant" if isinstance(m, AIMessage) else "user", text=m.text, framework_item=_dump(m)
                )
            )
        rest = _carried_state(final)
        last = next((m for m in reversed(produced) if isinstance(m, AIMessage)), None)
        if last is not None and last.tool_calls and (stopped or not final):
            calls = [
                pb.DeferredToolCall(
                    tool_call_id=str(c["id"]), tool_name=c["name"], arguments=json.dumps(c["args"]),
                    policy=self._claim(turn, c["name"]),
                )
                for c in last.tool_calls
            ]  # fmt: skip
            return pb.RunModelStepResponse(
                tool_calls_requested=pb.ToolCallsRequested(
                    run_state=json.dumps({_STATE_KEY: rest}), tool_calls=calls, new_messages=new_messages,
                    usage=usage, metadata=meta,
                )
            )  # fmt: skip
        if new_messages and rest:
            # The graph's other state lives on the turn's last message.
            item = json.loads(new_messages[-1].framework_item)
            item[_STATE_KEY] = rest
            new_messages[-1].framework_item = json.dumps(item)
        return pb.RunModelStepResponse(
            turn_completed=pb.TurnCompleted(new_messages=new_messages, usage=usage, metadata=meta)
        )

    def _claim(self, turn: pb.TurnContext, name: str) -> pb.ToolPolicy:
        for d in turn.host_tools:
            if d.name == name:
                return resolve_policy(turn, name, d.effect)
        for node in self._tool_nodes.get(turn.agent, {}).values():
            if name in node.tools_by_name:
                return resolve_policy(turn, name, own=pb.ToolPolicy(effect=self._effects.get(name, "")))
        return pb.ToolPolicy(effect="unclassified", requires_approval=False)

    async def execute_deferred_tool_call(
        self, req: pb.ExecuteToolRequest, ctx: ToolCallContext
    ) -> pb.ExecuteToolResponse:
        call = req.tool_call
        node = next(
            (n for n in self._tool_nodes.get(req.agent, {}).values() if call.tool_name in n.tools_by_name), None
        )
        if node is None:
            self._graph(req.agent)
            return pb.ExecuteToolResponse(error=pb.ToolExecutionError(message=f"unknown tool {call.tool_name}"))
        try:
            args = json.loads(call.arguments or "{}")
        except json.JSONDecodeError:
            return pb.ExecuteToolResponse(
                error=pb.ToolExecutionError(message=f"invalid arguments for {call.tool_name}: not JSON")
            )
        dex = DexToolContext(
            req.idempotency_key, req.attempt, req.session_id, req.turn_id, call.tool_call_id, req.agent
        )
        ai = AIMessage(content="", tool_calls=[{"name": call.tool_name, "args": args, "id": call.tool_call_id}])
        context = self._context(dex)
        # The graph's own ToolNode, in a graph of its own: the tool gets
        # its runtime (context, config, the call's ID) as in the agent's
        # graph. A checkpointer of this call only lets interrupt() resume
        # with the session's answers.
        answers = list(req.input_answers)
        one = StateGraph(MessagesState, context_schema=type(context))
        one.add_node("tools", node)
        one.add_edge(START, "tools")
        one.add_edge("tools", END)
        thread = {"configurable": {**_configurable(dex), "thread_id": str(uuid.uuid4())}}
        app: Any = one.compile(checkpointer=InMemorySaver() if answers else None)
        out = await app.ainvoke({"messages": [ai]}, thread, context=context)
        while True:
            interrupts = out.get("__interrupt__") if isinstance(out, dict) else None
            if not interrupts:
                break
            if not answers:
                return _question(interrupts[0].value)
            out = await app.ainvoke(Command(resume=answers.pop(0)), thread, context=context)
        msgs = [m for m in out["messages"] if isinstance(m, ToolMessage)]
        if not msgs:
            raise RuntimeError(f"the tool node returned no message for {call.tool_name}")
        msg = msgs[-1]
        if msg.status == "error":
            return pb.ExecuteToolResponse(error=pb.ToolExecutionError(message=msg.text))
        return pb.ExecuteToolResponse(result=pb.ToolResult(output=msg.text))

    async def build_unfinished_turn_messages(
        self, req: pb.BuildUnfinishedTurnMessagesRequest
    ) -> pb.BuildUnfinishedTurnMessagesResponse:
        """The results of the last response's calls that no later model call
        stored, so the transcript never holds a call without its result."""
        turn = req.turn
        out = [_framework_tool_message(_tool_message(c), c) for c in unanswered_calls(turn, _opens, final_only=True)]
        return pb.BuildUnfinishedTurnMessagesResponse(messages=out)

    async def select_compaction_cutoff(self, req: pb.CompactionCutoffRequest) -> pb.CompactionCutoffResponse:
        through = select_cutoff(req.turn.messages, req.retained_token_budget, _opens, closes_by_tool_message)
        return pb.CompactionCutoffResponse(through_sequence=through)

    async def summarize_context(self, req: pb.SummarizeContextRequest, ctx: CallContext) -> pb.SummarizeContextResponse:
        if self._summary_model is None:
            raise permanent("this runner has no summary_model")
        model = (
            self._summary_model
            if isinstance(self._summary_model, BaseChatModel)
            else self._summary_model(req.turn.agent)
        )
        msgs = [m for m in req.messages if m.framework_item]
        head: list[BaseMessage] = [SystemMessage(SUMMARY_INSTRUCTIONS)]
        if req.previous_summary:
            head.append(HumanMessage(summary_note(req.previous_summary)))

        def build(rest: Sequence[pb.Message], omitted: int) -> list[BaseMessage]:
            note: list[BaseMessage] = [HumanMessage(SUMMARY_OMISSION_FORMAT % omitted)] if omitted else []
            return [*head, *note, *(_load(m.framework_item) for m in rest), HumanMessage(SUMMARY_INSTRUCTIONS)]

        def size(rest: Sequence[pb.Message], omitted: int) -> int:
            return estimate_tokens(json.dumps(messages_to_dict(build(rest, omitted))))

        try:
            omitted, rest = fit_summary_input(msgs, req.input_token_budget, size, _opens, closes_by_tool_message)
        except ValueError as e:
            raise permanent(str(e)) from e
        with _provider_errors():
            resp = await model.ainvoke(build(rest, omitted))
        usage = pb.Usage()
        if isinstance(resp, AIMessage):
            _add_usage(usage, resp)
        rm = resp.response_metadata or {}
        meta = pb.ModelCallMetadata(response_id=str(rm.get("id") or ""), response_model=str(rm.get("model_name") or ""))
        return pb.SummarizeContextResponse(summary=resp.text, usage=usage, metadata=meta)


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


def _is_session_tool(tool: BaseTool) -> bool:
    return bool((tool.metadata or {}).get("dex_session_tool"))


def _question(value: Any) -> pb.ExecuteToolResponse:
    """A tool's interrupt(value) as the session's question: a string is the
    question; a dict may give question, choices and allows_free_text."""
    if isinstance(value, dict) and isinstance(value.get("question"), str):
        choices = [str(c) for c in value.get("choices") or []]
        free = bool(value.get("allows_free_text", not choices))
        q = pb.ToolInputRequested(question=value["question"], choices=choices, allows_free_text=free)
    else:
        text = value if isinstance(value, str) else json.dumps(value, default=str)
        q = pb.ToolInputRequested(question=text, allows_free_text=True)
    return pb.ExecuteToolResponse(input_requested=q)


def _configurable(dex: DexToolContext) -> dict[str, Any]:
    return {
        "idempotency_key": dex.idempotency_key, "session_id": dex.session_id, "turn_id": dex.turn_id,
        "tool_call_id": dex.tool_call_id, "attempt": dex.attempt, "agent": dex.agent,
    }  # fmt: skip


def _tool_message(rec: pb.ToolCall) -> ToolMessage:
    status = "success" if rec.status == "succeeded" else "error"
    return ToolMessage(
        describe_tool_call_outcome(rec), tool_call_id=rec.tool_call_id, name=rec.tool_name, status=status
    )


def _framework_tool_message(msg: ToolMessage, rec: pb.ToolCall) -> pb.FrameworkMessage:
    return pb.FrameworkMessage(
        role="tool", text=msg.text, framework_item=_dump(msg), tool_call_id=rec.tool_call_id,
        tool_name=rec.tool_name, tool_status=rec.status,
    )  # fmt: skip


def _graph_state(turn: pb.TurnContext, stored: Sequence[pb.Message]) -> dict[str, Any]:
    """The graph's state besides its messages: the run state within a turn,
    else what the last turn left on its last message."""
    if turn.run_state:
        state = json.loads(turn.run_state).get(_STATE_KEY) or {}
        return cast(dict[str, Any], state)
    for m in reversed(stored):
        if _STATE_KEY in m.framework_item:
            state = json.loads(m.framework_item).get(_STATE_KEY)
            if isinstance(state, dict):
                return state
    return {}


def _carried_state(values: Mapping[str, Any]) -> dict[str, Any]:
    """The graph's final state besides its messages, as JSON values: a
    Pydantic model is carried as its JSON form."""
    out: dict[str, Any] = {}
    for k, v in values.items():
        if k == "messages" or k.startswith("__") or v is None:
            continue
        if isinstance(v, BaseModel):
            v = v.model_dump(mode="json")
        try:
            json.dumps(v)
        except TypeError as e:
            raise permanent(f"the graph's state key {k!r} is not JSON: {e}") from e
        out[k] = v
    return out


def _model_input(turn: pb.TurnContext, history: list[BaseMessage]) -> list[BaseMessage]:
    """The graph's input messages: the context summary first, then the
    stored messages, with the plan note just before the turn's message."""
    out: list[BaseMessage] = []
    if turn.HasField("context_summary"):
        out.append(HumanMessage(summary_note(turn.context_summary.text)))
    note = plan_note(turn)
    at = len(history)
    if note:
        at = max((i for i, m in enumerate(history) if isinstance(m, HumanMessage)), default=0)
    out += history[:at]
    if note:
        out.append(HumanMessage(note))
    return out + history[at:]


def _add_usage(total: pb.Usage, m: AIMessage) -> None:
    total.model_calls += 1
    u = m.usage_metadata
    if u:
        total.input_tokens += u.get("input_tokens", 0)
        total.output_tokens += u.get("output_tokens", 0)
        total.total_tokens += u.get("total_tokens", 0)
        total.cached_input_tokens += (u.get("input_token_details") or {}).get("cache_read", 0) or 0
        total.reasoning_tokens += (u.get("output_token_details") or {}).get("reasoning", 0) or 0


def _opens(m: pb.Message) -> list[str]:
    if m.role != "assistant" or '"tool_calls"' not in m.framework_item:
        return []
    msg = _load(m.framework_item)
    return [str(c["id"]) for c in msg.tool_calls] if isinstance(msg, AIMessage) else []


def _stored_message(m: pb.Message) -> BaseMessage | None:
    """A stored message as a LangChain message: its framework item, or for
    a text the session stored without one (a user message whose
    BuildUserMessage failed, a turn-failure note), the text itself."""
    if m.framework_item:
        return _load(m.framework_item)
    if m.role == "user" and m.text:
        return HumanMessage(m.text)
    if m.role == "assistant" and m.text:
        return AIMessage(m.text)
    return None


def _dump(m: BaseMessage) -> str:
    return json.dumps(messages_to_dict([m])[0])


def _load(item: str) -> BaseMessage:
    d = json.loads(item)
    d.pop(_STATE_KEY, None)
    return messages_from_dict([d])[0]
