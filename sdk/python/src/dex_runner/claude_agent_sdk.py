"""Run a Claude Agent SDK agent (``claude_agent_sdk.ClaudeAgentOptions``) as a durable runner.

The agent you already wrote drops in: its options (system prompt, model,
in-process MCP tools made with the SDK's ``tool`` decorator) drive the
Claude Code harness that the SDK bundles, and every RunModel Step is one
bounded run of that harness:

- **Reads run inside the harness.** A call whose policy is ``read`` without
  approval runs in the Step, as the harness runs it, and the harness goes
  on to its next model call (at most ``max_model_calls`` per Step). Its
  result is stored as a tool message, but it has no tool call record.
- **Everything else is deferred.** A ``PreToolUse`` hook answers "defer"
  for a write, an unclassified tool, a call that needs approval, and the
  session's own tools (ask_user, write_todos, MCP servers of the worker
  config): the harness stops, and the Step hands the call to the session,
  which gives it its effect class, approval and idempotency key. A write of
  the agent's own runs in ExecuteDeferredToolCall, through the tool's own
  handler, with :func:`current_deferred_tool_execution` set.
- **The session is the checkpoint.** Stored messages are the harness's own
  transcript entries (JSON). Each Step hands them to the harness through a
  ``SessionStore`` and resumes: a new turn sends the user's message; after
  a deferred call, the harness takes the call up again, the hook lets it
  through, and the adapter's stand-in for the tool returns the session's
  recorded result, so the write never runs twice.

The harness stops at the first deferred call of a response: a second call
in the same response that needs the session is refused with a note, and
the model may call it again. A Step that fails after a harness read repeats
the read on its retry.

    @tool("lookup_order", "Looks up an order.", {"order_id": str})
    async def lookup_order(args): ...

    options = ClaudeAgentOptions(system_prompt="...", model="claude-sonnet-4-5",
                                 mcp_servers={"orders": create_sdk_mcp_server("orders", tools=[lookup_order, ...])})

    serve(ClaudeAgentSDKRunner(lambda name, cfg: options, servers={"orders": [lookup_order, refund_order]},
                               tool_effects={"lookup_order": "read", "refund_order": "non_idempotent_write"}))
"""

from __future__ import annotations

import contextvars
import dataclasses
import json
import re
import shutil
import tempfile
import uuid
from collections.abc import AsyncIterator, Callable, Mapping, Sequence
from datetime import UTC, datetime
from typing import Any, cast

import jsonschema
from claude_agent_sdk import (
    ClaudeAgentOptions,
    ClaudeSDKClient,
    HookMatcher,
    ResultMessage,
    SdkMcpTool,
    SessionKey,
    SessionStore,
    SessionStoreEntry,
    StreamEvent,
    create_sdk_mcp_server,
    tool,
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

__all__ = [
    "ClaudeAgentSDKRunner",
    "DexToolContext",
    "current_deferred_tool_execution",
]

BuildOptions = Callable[[str, dict[str, Any]], ClaudeAgentOptions]

#: The in-process MCP server that offers the model the session's tools.
SESSION_SERVER = "dex"
#: The note a refused second deferred call of one response gets.
ONE_DEFERRED_CALL_NOTE = (
    "The tool call was not run: this agent runs one call that needs the session at a time. "
    "Call it again after the previous call's result."
)
#: The note a planning turn's other calls get.
PLANNING_ONLY_NOTE = "The tool call was not run: a planning turn can only call write_todos."
_RUN_STATE = "claude_agent_sdk"
# The environment every harness process gets: no traffic besides the model
# calls, and no retries of its own (the session retries the Step).
_QUIET_ENV = {
    "CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC": "1",
    "DISABLE_TELEMETRY": "1",
    "DISABLE_ERROR_REPORTING": "1",
    "DISABLE_AUTOUPDATER": "1",
    "CLAUDE_CODE_MAX_RETRIES": "0",
}
# Transcript entry types a stored message keeps: the conversation, and the
# harness's record of a deferred call (which lets it take the call up again).
_KEPT = ("user", "assistant")

_current: contextvars.ContextVar[DexToolContext | None] = contextvars.ContextVar(
    "dex_claude_deferred_tool_execution", default=None
)


def current_deferred_tool_execution() -> DexToolContext | None:
    """The session's call a tool handler runs for: its idempotency key and
    place. None outside ExecuteDeferredToolCall (a read that runs inside
    the harness has no session call)."""
    return _current.get()


class ClaudeAgentSDKRunner:
    """A runner over Claude Agent SDK agents.

    ``build`` makes an agent's options from its name and runner_config.
    ``servers`` names the in-process MCP servers of those options and their
    tools (the ``tool``-decorated functions): the adapter needs the
    functions themselves to run a write in its own Step and to hand the
    harness a recorded result, and an SDK server keeps them out of reach.
    ``tool_effects`` gives a tool's effect class where the worker config's
    tool_policies are silent; a tool whose MCP annotations say
    ``readOnlyHint`` is a read. ``max_model_calls`` bounds one Step's
    model calls (a Step runs reads inside the harness).
    """

    def __init__(
        self,
        build: BuildOptions,
        *,
        servers: Mapping[str, Sequence[SdkMcpTool[Any]]],
        tool_effects: Mapping[str, str] | None = None,
        max_model_calls: int = 8,
        name: str = "dex-runner-claude-agent-sdk",
        version: str = "0.1.0",
    ) -> None:
        if max_model_calls < 1:
            raise ValueError("max_model_calls must be at least 1")
        self._build = build
        self._servers = {s: list(ts) for s, ts in servers.items()}
        self._effects = dict(tool_effects or {})
        check_tool_effects(self._effects)
        self._max_calls = max_model_calls
        self._name, self._version = name, version
        self._options: dict[str, ClaudeAgentOptions] = {}
        # agent -> bare tool name -> (server, tool)
        self._tools: dict[str, dict[str, tuple[str, SdkMcpTool[Any]]]] = {}

    async def info(self, req: pb.InfoRequest) -> InfoResult:
        return InfoResult(self._name, self._version)

    async def configure(self, req: pb.ConfigureRequest) -> pb.ConfigureResponse:
        cfg = json.loads(req.runner_config or "{}")
        if not isinstance(cfg, dict):
            raise ValueError("runner_config must be a JSON object")
        options = self._build(req.agent, cfg)
        if not isinstance(options, ClaudeAgentOptions):
            raise ValueError("build must return claude_agent_sdk.ClaudeAgentOptions")
        if options.tools:
            raise ValueError(
                f"agent {req.agent!r}: options.tools lists Claude Code's built-in tools {options.tools!r}: they act on "
                "the runner's machine outside any Step, so this adapter runs none (leave tools unset)"
            )
        for field in ("resume", "session_id", "session_store", "can_use_tool", "agents", "output_format"):
            if getattr(options, field, None):
                raise ValueError(f"agent {req.agent!r}: options.{field} is not supported here (the session owns it)")
        if options.continue_conversation or options.fork_session:
            raise ValueError(f"agent {req.agent!r}: the session owns the conversation: unset continue_conversation")
        if not isinstance(options.mcp_servers, dict):
            raise ValueError(f"agent {req.agent!r}: options.mcp_servers must be a dict of in-process servers")
        tools: dict[str, tuple[str, SdkMcpTool[Any]]] = {}
        for server, conf in options.mcp_servers.items():
            if server == SESSION_SERVER:
                raise ValueError(f"agent {req.agent!r}: the MCP server name {SESSION_SERVER!r} is the session's")
            if not isinstance(conf, dict) or conf.get("type") != "sdk":
                raise ValueError(
                    f"agent {req.agent!r}: MCP server {server!r} is not an in-process SDK server: declare it in the "
                    "worker config's mcp_servers instead, so its calls are the session's Steps"
                )
            if server not in self._servers:
                raise ValueError(
                    f"agent {req.agent!r}: pass the tools of the in-process MCP server {server!r} as "
                    f"servers={{{server!r}: [...]}}"
                )
            for t in self._servers[server]:
                if t.name in tools:
                    raise ValueError(f"agent {req.agent!r}: two MCP servers have a tool {t.name!r}")
                tools[t.name] = (server, t)
        self._options[req.agent], self._tools[req.agent] = options, tools
        return pb.ConfigureResponse(
            tools=list(tools), tool_policies={n: self._own_policy(t) for n, (_, t) in tools.items()}
        )

    def _own_policy(self, t: SdkMcpTool[Any]) -> pb.ToolPolicy:
        effect = self._effects.get(t.name, "")
        if not effect and t.annotations is not None and getattr(t.annotations, "read_only_hint", None):
            effect = "read"
        return pb.ToolPolicy(effect=effect)

    def _agent(self, name: str) -> ClaudeAgentOptions:
        options = self._options.get(name)
        if options is None:
            raise permanent(f"agent {name!r} is not configured in this runner")
        return options

    async def build_user_message(self, req: pb.BuildUserMessageRequest) -> pb.BuildUserMessageResponse:
        entry = {"type": "user", "message": {"role": "user", "content": req.text}}
        return pb.BuildUserMessageResponse(
            message=pb.FrameworkMessage(role="user", text=req.text, framework_item=_dump([entry]))
        )

    def _policy(self, turn: pb.TurnContext, name: str) -> pb.ToolPolicy:
        for d in turn.host_tools:
            if d.name == name:
                return resolve_policy(turn, name, d.effect)
        own = self._tools.get(turn.agent, {}).get(name)
        if own is not None:
            return resolve_policy(turn, name, own=self._own_policy(own[1]))
        return pb.ToolPolicy(effect="unclassified")

    async def run_model_step(self, req: pb.RunModelStepRequest, ctx: CallContext) -> pb.RunModelStepResponse:
        turn = req.turn
        options = self._agent(turn.agent)
        tools = self._tools[turn.agent]
        for d in turn.host_tools:
            if d.name in tools:
                raise permanent(f"the agent's tool {d.name!r} has the name of a session tool: rename one")
        entries = _transcript(turn)
        settled = {c.tool_call_id: c for c in unanswered_calls(turn, _opens)}
        pending = _pending_deferred(entries)
        prompt: str | None = None
        if pending is not None and pending in settled:
            # The session ran the call the harness deferred: resume, and the
            # harness takes it up again with the recorded result.
            entries = _without_deferrals(entries, keep=pending)
        else:
            entries = _without_deferrals(entries, keep=None)
            at = len(entries)
            while at > 0 and _is_user_text(entries[at - 1]):
                at -= 1
            if at == len(entries):
                raise permanent("the transcript ends with neither a user message nor a deferred call's result")
            prompt = "\n\n".join(_text(e) for e in entries[at:])
            entries = entries[:at]
        note = turn_summary(turn)
        if note:
            entries = [_user_entry(note), *entries]
        step = _Step(self, turn, settled)
        sid = str(uuid.uuid4())
        store = _Store(_chain(entries, sid, options))
        planning = turn.interaction_mode == "planning"
        system = _system_prompt(options.system_prompt, plan_note(turn))
        servers: dict[str, Any] = {s: _server(s, [t for n, (sv, t) in tools.items() if sv == s], step)
                                   for s in dict(options.mcp_servers)}  # type: ignore[arg-type]  # fmt: skip
        host = [d for d in turn.host_tools if not planning or d.name == "write_todos"]
        if host:
            servers[SESSION_SERVER] = create_sdk_mcp_server(
                SESSION_SERVER, tools=[tool(d.name, d.description, _schema_of(d))(step.host_tool(d.name)) for d in host]
            )
        disallowed = list(options.disallowed_tools)
        if planning:
            disallowed += [_mcp_name(sv, n) for n, (sv, _) in tools.items()]
        hooks = dict(options.hooks or {})
        hooks["PreToolUse"] = [*hooks.get("PreToolUse", []), HookMatcher(matcher=None, hooks=[step.pre_tool_use])]
        config_dir = tempfile.mkdtemp(prefix="dex-claude-")
        cwd = options.cwd or config_dir
        run = dataclasses.replace(
            options, tools=[], mcp_servers=servers, system_prompt=system, allowed_tools=[],
            disallowed_tools=disallowed, hooks=hooks, session_store=cast(SessionStore, store),
            resume=sid if entries else None, session_id=None if entries else sid, max_turns=self._max_calls,
            include_partial_messages=True, setting_sources=[], strict_mcp_config=True,
            cwd=cwd, permission_mode="default",
            env={**options.env, **_QUIET_ENV, "CLAUDE_CONFIG_DIR": config_dir},
        )  # fmt: skip
        result: ResultMessage | None = None
        try:
            async with ClaudeSDKClient(options=run) as client:
                if prompt is not None:
                    await client.query(_user_input(prompt, sid))
                async for m in client.receive_response():
                    if isinstance(m, StreamEvent):
                        _write_delta(m.event, ctx)
                    elif isinstance(m, ResultMessage):
                        result = m
        finally:
            shutil.rmtree(config_dir, ignore_errors=True)
        if result is None:
            raise RuntimeError("the Claude Code harness ended without a result")
        _raise_error_result(result, self._max_calls)
        produced = [e for e in store.appended if _keep(e)]
        if prompt is not None:
            # The harness's own record of the user's message: the session
            # stored it already.
            produced = produced[1:] if produced and _is_user_text(produced[0]) else produced
        new_messages = step.messages(produced)
        usage, meta = _usage(result, produced), pb.ModelCallMetadata(request_model=options.model or "")
        meta.response_model = next(
            (str(e["message"].get("model")) for e in reversed(produced) if e.get("type") == "assistant"), ""
        )
        deferred = result.deferred_tool_use
        if deferred is None:
            return pb.RunModelStepResponse(
                turn_completed=pb.TurnCompleted(new_messages=new_messages, usage=usage, metadata=meta)
            )
        name = _bare(deferred.name)
        call = pb.DeferredToolCall(
            tool_call_id=deferred.id, tool_name=name, arguments=json.dumps(deferred.input or {}),
            policy=self._policy(turn, name),
        )  # fmt: skip
        return pb.RunModelStepResponse(
            tool_calls_requested=pb.ToolCallsRequested(
                run_state=_RUN_STATE, tool_calls=[call], new_messages=new_messages, usage=usage, metadata=meta
            )
        )

    async def execute_deferred_tool_call(
        self, req: pb.ExecuteToolRequest, ctx: ToolCallContext
    ) -> pb.ExecuteToolResponse:
        call = req.tool_call
        found = self._tools.get(req.agent, {}).get(call.tool_name)
        if found is None:
            return pb.ExecuteToolResponse(error=pb.ToolExecutionError(message=f"unknown tool {call.tool_name}"))
        t = found[1]
        try:
            args = json.loads(call.arguments or "{}")
            jsonschema.validate(instance=args, schema=_input_schema(t))
        except (json.JSONDecodeError, jsonschema.ValidationError) as e:
            return pb.ExecuteToolResponse(
                error=pb.ToolExecutionError(message=f"invalid arguments for {call.tool_name}: {_first_line(e)}")
            )
        token = _current.set(
            DexToolContext(
                idempotency_key=req.idempotency_key, attempt=req.attempt, session_id=req.session_id,
                turn_id=req.turn_id, tool_call_id=call.tool_call_id, agent=req.agent,
            )
        )  # fmt: skip
        try:
            out = await t.handler(args)
        finally:
            _current.reset(token)
        text = _content_text(out.get("content", []))
        if out.get("is_error"):
            return pb.ExecuteToolResponse(error=pb.ToolExecutionError(message=text))
        return pb.ExecuteToolResponse(result=pb.ToolResult(output=text))

    async def build_unfinished_turn_messages(
        self, req: pb.BuildUnfinishedTurnMessagesRequest
    ) -> pb.BuildUnfinishedTurnMessagesResponse:
        """The results of the calls no later model call stored, so the
        transcript never holds a call without its result."""
        settled = unanswered_calls(req.turn, _opens, final_only=True)
        return pb.BuildUnfinishedTurnMessagesResponse(messages=[_result_message(c) for c in settled])

    async def select_compaction_cutoff(self, req: pb.CompactionCutoffRequest) -> pb.CompactionCutoffResponse:
        through = select_cutoff(req.turn.messages, req.retained_token_budget, _opens, closes_by_tool_message)
        return pb.CompactionCutoffResponse(through_sequence=through)

    async def summarize_context(self, req: pb.SummarizeContextRequest, ctx: CallContext) -> pb.SummarizeContextResponse:
        """One harness run with the summary instructions as its system
        prompt, no tools and one model call, over the earlier summary and
        the messages as text."""
        options = self._agent(req.turn.agent)
        head = [summary_note(req.previous_summary)] if req.previous_summary else []

        def build(rest: Sequence[pb.Message], omitted: int) -> str:
            note = [SUMMARY_OMISSION_FORMAT % omitted] if omitted else []
            return "\n\n".join([*head, *note, *(_render(m) for m in rest)])

        try:
            omitted, rest = fit_summary_input(
                list(req.messages), req.input_token_budget, lambda r, o: estimate_tokens(build(r, o)), _opens,
                closes_by_tool_message,
            )  # fmt: skip
        except ValueError as e:
            raise permanent(str(e)) from e
        config_dir = tempfile.mkdtemp(prefix="dex-claude-")
        run = dataclasses.replace(
            options, tools=[], mcp_servers={}, system_prompt=SUMMARY_INSTRUCTIONS, allowed_tools=[], hooks=None,
            max_turns=1, include_partial_messages=False, setting_sources=[], strict_mcp_config=True,
            cwd=options.cwd or config_dir, env={**options.env, **_QUIET_ENV, "CLAUDE_CONFIG_DIR": config_dir},
        )  # fmt: skip
        result: ResultMessage | None = None
        try:
            async with ClaudeSDKClient(options=run) as client:
                await client.query(build(rest, omitted))
                async for m in client.receive_response():
                    if isinstance(m, ResultMessage):
                        result = m
        finally:
            shutil.rmtree(config_dir, ignore_errors=True)
        if result is None:
            raise RuntimeError("the Claude Code harness ended without a result")
        _raise_error_result(result, 1)
        usage = _usage(result, [])
        usage.model_calls = 1
        return pb.SummarizeContextResponse(
            summary=result.result or "", usage=usage, metadata=pb.ModelCallMetadata(request_model=options.model or "")
        )


class _Step:
    """One RunModel Step's decisions: which calls run inside the harness,
    which one is deferred, and the recorded results the harness gets."""

    def __init__(self, runner: ClaudeAgentSDKRunner, turn: pb.TurnContext, settled: dict[str, pb.ToolCall]) -> None:
        self.runner, self.turn, self.settled = runner, turn, settled
        self.deferred: str | None = None
        # Recorded results the stand-ins hand out: (tool, canonical args).
        self.replay: dict[tuple[str, str], pb.ToolCall] = {}
        # tool_use id -> (tool, status) of the calls the harness ran.
        self.ran: dict[str, tuple[str, str]] = {}

    async def pre_tool_use(self, inp: Any, tool_use_id: str | None, _: Any) -> Any:
        name = _bare(str(inp.get("tool_name", "")))
        tid = tool_use_id or ""
        done = self.settled.get(tid)
        if done is not None:
            self.replay[(name, _canonical(inp.get("tool_input") or {}))] = done
            self.ran[tid] = (name, done.status)
            return _decision("allow")
        if self.turn.interaction_mode == "planning" and name != "write_todos":
            self.ran[tid] = (name, "failed")
            return _decision("deny", PLANNING_ONLY_NOTE)
        own = name in self.runner._tools.get(self.turn.agent, {})
        policy = self.runner._policy(self.turn, name)
        if own and policy.effect == "read" and not policy.requires_approval:
            self.ran[tid] = (name, "succeeded")
            return _decision("allow")
        if self.deferred is not None:
            self.ran[tid] = (name, "failed")
            return _decision("deny", ONE_DEFERRED_CALL_NOTE)
        self.deferred = tid
        return _decision("defer")

    def own_tool(self, t: SdkMcpTool[Any]) -> Callable[[dict[str, Any]], Any]:
        async def handler(args: dict[str, Any]) -> dict[str, Any]:
            done = self.replay.pop((t.name, _canonical(args)), None)
            if done is not None:
                return _recorded(done)
            # Only a read reaches here: the hook defers everything else.
            return await t.handler(args)

        return handler

    def host_tool(self, name: str) -> Callable[[dict[str, Any]], Any]:
        async def handler(args: dict[str, Any]) -> dict[str, Any]:
            done = self.replay.pop((name, _canonical(args)), None)
            if done is None:
                return {
                    "content": [{"type": "text", "text": f"{name} runs only as the session's call"}],
                    "is_error": True,
                }
            return _recorded(done)

        return handler

    def messages(self, produced: list[dict[str, Any]]) -> list[pb.FrameworkMessage]:
        """The Step's entries as stored messages: an assistant message per
        model response, a tool message per result; an entry of neither
        kind rides with the message before it."""
        out: list[pb.FrameworkMessage] = []
        groups: list[list[dict[str, Any]]] = []
        for e in produced:
            head = groups[-1][0] if groups else None
            if _tool_results(e) or head is None:
                groups.append([e])
            elif e.get("type") == "assistant" and (
                head.get("type") != "assistant" or head["message"].get("id") != e["message"].get("id")
            ):
                groups.append([e])
            else:
                groups[-1].append(e)
        for g in groups:
            results = _tool_results(g[0])
            if results:
                tid = str(results[0].get("tool_use_id", ""))
                name, status = self.ran.get(tid, ("", "succeeded"))
                if results[0].get("is_error") and status == "succeeded":
                    status = "failed"
                out.append(
                    pb.FrameworkMessage(
                        role="tool", text=_content_text(results[0].get("content")), framework_item=_dump(g),
                        tool_call_id=tid, tool_name=name, tool_status=status,
                    )
                )  # fmt: skip
                continue
            text = "".join(_text(e) for e in g if e.get("type") == "assistant")
            out.append(pb.FrameworkMessage(role="assistant", text=text, framework_item=_dump(g)))
        return out


class _Store:
    """The SessionStore of one Step: it loads the transcript the session
    stored and keeps what the harness appends."""

    def __init__(self, entries: list[dict[str, Any]]) -> None:
        self.entries = entries
        self.appended: list[dict[str, Any]] = []

    async def append(self, key: SessionKey, entries: list[SessionStoreEntry]) -> None:
        if key.get("subpath"):
            return
        self.appended.extend(dict(e) for e in entries)

    async def load(self, key: SessionKey) -> list[SessionStoreEntry] | None:
        if key.get("subpath"):
            return None
        return [SessionStoreEntry(**e) for e in self.entries] or None  # type: ignore[typeddict-item]


def turn_summary(turn: pb.TurnContext) -> str:
    return summary_note(turn.context_summary.text) if turn.HasField("context_summary") else ""


def _transcript(turn: pb.TurnContext) -> list[dict[str, Any]]:
    """The stored messages' transcript entries, in order. A message the
    session stored without an item (a turn-failure note) is its text."""
    out: list[dict[str, Any]] = []
    for m in turn.messages:
        if m.framework_item:
            out += _load(m.framework_item)
        elif m.role == "user" and m.text:
            out.append(_user_entry(m.text))
        elif m.role == "assistant" and m.text:
            out.append(
                {"type": "assistant", "message": {"id": f"msg_dex_{m.sequence}", "role": "assistant", "type": "message",
                 "content": [{"type": "text", "text": m.text}]}}
            )  # fmt: skip
    return out


def _pending_deferred(entries: list[dict[str, Any]]) -> str | None:
    """The call the harness deferred last, when nothing came after it."""
    for e in reversed(entries):
        if e.get("type") == "attachment":
            a = e.get("attachment") or {}
            if a.get("type") == "hook_deferred_tool":
                return str(a.get("toolUseID", ""))
            continue
        return None
    return None


def _without_deferrals(entries: list[dict[str, Any]], keep: str | None) -> list[dict[str, Any]]:
    return [
        e
        for e in entries
        if e.get("type") != "attachment"
        or (
            (e.get("attachment") or {}).get("type") == "hook_deferred_tool" and e["attachment"].get("toolUseID") == keep
        )
    ]


def _keep(e: dict[str, Any]) -> bool:
    if e.get("type") in _KEPT:
        return not e.get("isSidechain") and (e.get("message") or {}).get("model") != "<synthetic>"
    return e.get("type") == "attachment" and (e.get("attachment") or {}).get("type") == "hook_deferred_tool"


def _chain(entries: list[dict[str, Any]], sid: str, options: ClaudeAgentOptions) -> list[dict[str, Any]]:
    """The entries as one session's transcript: each with the session's ID
    and the one before it as its parent."""
    out: list[dict[str, Any]] = []
    parent: str | None = None
    now = datetime.now(UTC).isoformat().replace("+00:00", "Z")
    seen: set[str] = set()
    for e in entries:
        e = dict(e)
        u = str(e.get("uuid") or "")
        if not u or u in seen:
            u = str(uuid.uuid4())
        seen.add(u)
        e.update(uuid=u, parentUuid=parent, sessionId=sid, isSidechain=False)
        e.setdefault("timestamp", now)
        e.setdefault("userType", "external")
        e.setdefault("cwd", str(options.cwd or "/"))
        out.append(e)
        parent = u
    return out


def _user_entry(text: str) -> dict[str, Any]:
    return {"type": "user", "message": {"role": "user", "content": text}}


def _user_input(text: str, sid: str) -> AsyncIterator[dict[str, Any]]:
    async def one() -> AsyncIterator[dict[str, Any]]:
        yield {
            "type": "user", "message": {"role": "user", "content": text}, "parent_tool_use_id": None,
            "session_id": sid, "client_composed": True,
        }  # fmt: skip

    return one()


def _is_user_text(e: dict[str, Any]) -> bool:
    if e.get("type") != "user":
        return False
    c = (e.get("message") or {}).get("content")
    return isinstance(c, str) or (isinstance(c, list) and all(b.get("type") == "text" for b in c))


def _text(e: dict[str, Any]) -> str:
    c = (e.get("message") or {}).get("content")
    if isinstance(c, str):
        return c
    return "".join(str(b.get("text", "")) for b in c or [] if b.get("type") == "text")


def _tool_results(e: dict[str, Any]) -> list[dict[str, Any]]:
    if e.get("type") != "user":
        return []
    c = (e.get("message") or {}).get("content")
    return [b for b in c if b.get("type") == "tool_result"] if isinstance(c, list) else []


def _opens(m: pb.Message) -> list[str]:
    if m.role != "assistant" or "tool_use" not in m.framework_item:
        return []
    return [
        str(b.get("id"))
        for e in _load(m.framework_item)
        if e.get("type") == "assistant"
        for b in (e.get("message") or {}).get("content") or []
        if isinstance(b, dict) and b.get("type") == "tool_use"
    ]


def _result_message(c: pb.ToolCall) -> pb.FrameworkMessage:
    text = describe_tool_call_outcome(c)
    entry = {
        "type": "user",
        "message": {"role": "user", "content": [
            {"type": "tool_result", "tool_use_id": c.tool_call_id, "content": text,
             **({"is_error": True} if c.status != "succeeded" else {})},
        ]},
    }  # fmt: skip
    return pb.FrameworkMessage(
        role="tool", text=text, framework_item=_dump([entry]), tool_call_id=c.tool_call_id, tool_name=c.tool_name,
        tool_status=c.status,
    )  # fmt: skip


def _recorded(c: pb.ToolCall) -> dict[str, Any]:
    out: dict[str, Any] = {"content": [{"type": "text", "text": describe_tool_call_outcome(c)}]}
    if c.status != "succeeded":
        out["is_error"] = True
    return out


def _decision(kind: str, reason: str = "") -> dict[str, Any]:
    out: dict[str, Any] = {"hookEventName": "PreToolUse", "permissionDecision": kind}
    if reason:
        out["permissionDecisionReason"] = reason
    return {"hookSpecificOutput": out}


def _server(name: str, tools: list[SdkMcpTool[Any]], step: _Step) -> Any:
    wrapped = [
        SdkMcpTool(name=t.name, description=t.description, input_schema=t.input_schema, handler=step.own_tool(t),
                   annotations=t.annotations)
        for t in tools
    ]  # fmt: skip
    return create_sdk_mcp_server(name, tools=wrapped)


def _schema_of(d: pb.ToolDefinition) -> dict[str, Any]:
    schema = json.loads(d.input_schema or "{}")
    return schema if isinstance(schema, dict) and schema else {"type": "object", "properties": {}}


_REMINDER = re.compile(r"<system-reminder>.*?</system-reminder>", re.DOTALL)
_JSON_TYPES = {str: "string", int: "integer", float: "number", bool: "boolean", list: "array", dict: "object"}


def _input_schema(t: SdkMcpTool[Any]) -> dict[str, Any]:
    s = t.input_schema
    if isinstance(s, dict) and ("type" in s or "properties" in s):
        return s
    if isinstance(s, dict):
        return {
            "type": "object",
            "properties": {k: {"type": _JSON_TYPES.get(v, "string")} for k, v in s.items()},
            "required": list(s),
        }
    return {"type": "object"}


def _mcp_name(server: str, name: str) -> str:
    return f"mcp__{server}__{name}"


def _bare(name: str) -> str:
    """A tool's own name: "mcp__<server>__<tool>" is <tool>."""
    if name.startswith("mcp__"):
        parts = name.split("__", 2)
        if len(parts) == 3:
            return parts[2]
    return name


def _system_prompt(system: Any, note: str) -> Any:
    if not note:
        return system
    if system is None:
        return note
    if isinstance(system, str):
        return system + "\n\n" + note
    if isinstance(system, dict) and system.get("type") == "preset":
        return {**system, "append": (str(system.get("append") or "") + "\n\n" + note).strip()}
    if isinstance(system, dict) and system.get("type") == "custom":
        return {**system, "prompt": str(system.get("prompt") or "") + "\n\n" + note}
    raise permanent("a plan needs a system prompt this adapter can append to (a string, a preset or a custom one)")


def _write_delta(event: dict[str, Any], ctx: CallContext) -> None:
    if event.get("type") != "content_block_delta":
        return
    d = event.get("delta") or {}
    if d.get("type") == "text_delta" and d.get("text"):
        ctx.write_text_delta(str(d["text"]))
    elif d.get("type") == "thinking_delta" and d.get("thinking"):
        ctx.write_reasoning_delta(str(d["thinking"]))


def _usage(result: ResultMessage, produced: list[dict[str, Any]]) -> pb.Usage:
    u = result.usage or {}
    usage = pb.Usage(
        input_tokens=int(u.get("input_tokens") or 0) + int(u.get("cache_read_input_tokens") or 0)
        + int(u.get("cache_creation_input_tokens") or 0),
        output_tokens=int(u.get("output_tokens") or 0),
        cached_input_tokens=int(u.get("cache_read_input_tokens") or 0),
    )  # fmt: skip
    usage.model_calls = len({str(e["message"].get("id")) for e in produced if e.get("type") == "assistant"})
    return usage


def _raise_error_result(result: ResultMessage, max_calls: int) -> None:
    status = result.api_error_status
    if status:
        message = f"the model provider answered {status}: {result.result or ''}".rstrip(": ")
        if status in PERMANENT_HTTP_STATUSES:
            raise permanent(message)
        raise RuntimeError(message)
    if result.subtype == "error_max_turns":
        raise permanent(
            f"the model made more than {max_calls} calls in one Step (reads run inside the harness): "
            "raise max_model_calls"
        )
    if result.is_error or result.subtype.startswith("error"):
        errors = "; ".join(result.errors or []) or result.result or result.subtype
        raise RuntimeError(f"the Claude Code harness failed: {errors}")


def _render(m: pb.Message) -> str:
    """A stored message as text, for the summary call."""
    if m.role == "tool":
        return f"Tool result ({m.tool_name or 'tool'}): {m.text}"
    if m.role == "user":
        return f"User: {m.text}"
    calls = [
        f"{_bare(str(b.get('name')))}({json.dumps(b.get('input') or {})})"
        for e in (_load(m.framework_item) if m.framework_item else [])
        if e.get("type") == "assistant"
        for b in (e.get("message") or {}).get("content") or []
        if isinstance(b, dict) and b.get("type") == "tool_use"
    ]
    line = f"Assistant: {m.text}" if m.text else "Assistant:"
    return line + ("".join(f"\nAssistant called {c}" for c in calls))


def _content_text(content: Any) -> str:
    """A tool result's text, without the harness's reminders."""
    if not isinstance(content, str):
        content = "".join(
            str(b.get("text", "")) for b in content or [] if isinstance(b, dict) and b.get("type") == "text"
        )
    return _REMINDER.sub("", content).strip()


def _canonical(args: Any) -> str:
    return json.dumps(args, sort_keys=True, separators=(",", ":"))


def _first_line(e: Exception) -> str:
    return str(getattr(e, "message", None) or e).splitlines()[0]


def _dump(entries: list[dict[str, Any]]) -> str:
    return json.dumps(entries, separators=(",", ":"))


def _load(item: str) -> list[dict[str, Any]]:
    v = json.loads(item)
    return v if isinstance(v, list) else [v]
