"""The demo's scripted model (runner_config model: {provider: scripted}):
a local server that speaks Anthropic's Messages API, streamed, as the
Claude Code harness calls it, and answers without a key, word by word. It
reads the conversation as a model would and knows three moves:

- "refund order 7": look the order up, then refund what is left (an approval);
- "where is order 7?": look it up and describe it;
- anything else: say what it can do.
"""

from __future__ import annotations

import json
import re
import threading
import uuid
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

HELP = 'I look orders up and refund them. Try "where is order 7?" or "refund order 7".'


def respond(messages: list[dict[str, Any]]) -> dict[str, Any]:
    """The scripted answer to the conversation: {"text": ...} or
    {"tool": name, "input": {...}}."""
    at, asked = 0, ""
    for i, m in enumerate(messages):
        if m.get("role") != "user":
            continue
        blocks = m["content"] if isinstance(m["content"], list) else [{"type": "text", "text": m["content"]}]
        texts = [b.get("text", "") for b in blocks if b.get("type") == "text"]
        said = " ".join(t for t in texts if not t.startswith(("<system-reminder>", "[Dex]", "Continue from")))
        if said.strip() and not any(b.get("type") == "tool_result" for b in blocks):
            at, asked = i, said
    results: list[tuple[str, str]] = []
    names = {}
    for m in messages[at:]:
        for b in m["content"] if isinstance(m["content"], list) else []:
            if b.get("type") == "tool_use":
                names[b["id"]] = b["name"].rsplit("__", 1)[-1]
            if b.get("type") == "tool_result":
                c = b.get("content")
                text = c if isinstance(c, str) else "".join(x.get("text", "") for x in c or [])
                text = re.sub(r"\s*<system-reminder>.*?</system-reminder>\s*", "", text, flags=re.DOTALL)
                results.append((names.get(b["tool_use_id"], ""), text))
    order = re.search(r"order\s*#?(\d+)", asked, re.IGNORECASE)
    if order is None:
        return {"text": HELP}
    if not results:
        return {"tool": "mcp__orders__lookup_order", "input": {"order_id": order.group(1)}}
    name, text = results[-1]
    totals = re.search(r"\$([\d.]+), \$([\d.]+) refunded", text)
    if name == "lookup_order" and "refund" in asked.lower() and totals:
        left = round(float(totals.group(1)) * 100) - round(float(totals.group(2)) * 100)
        return {"tool": "mcp__orders__refund_order", "input": {"order_id": order.group(1), "amount_cents": left}}
    return {"text": text}


def _events(answer: dict[str, Any], model: str) -> list[tuple[str, dict[str, Any]]]:
    msg: dict[str, Any] = {"id": f"msg_{uuid.uuid4().hex[:12]}", "type": "message", "role": "assistant", "model": model,
           "content": [], "stop_reason": None, "stop_sequence": None,
           "usage": {"input_tokens": 0, "output_tokens": 0}}  # fmt: skip
    out: list[tuple[str, dict[str, Any]]] = [("message_start", {"type": "message_start", "message": msg})]
    if "tool" in answer:
        block = {"type": "tool_use", "id": f"toolu_{uuid.uuid4().hex[:12]}", "name": answer["tool"], "input": {}}
        deltas = [{"type": "input_json_delta", "partial_json": json.dumps(answer["input"])}]
        stop = "tool_use"
    else:
        block = {"type": "text", "text": ""}
        words = re.findall(r"\S+\s*", answer["text"])
        deltas = [{"type": "text_delta", "text": w} for w in words]
        stop = "end_turn"
    out.append(("content_block_start", {"type": "content_block_start", "index": 0, "content_block": block}))
    out += [("content_block_delta", {"type": "content_block_delta", "index": 0, "delta": d}) for d in deltas]
    out.append(("content_block_stop", {"type": "content_block_stop", "index": 0}))
    out.append(("message_delta", {"type": "message_delta", "delta": {"stop_reason": stop, "stop_sequence": None},
                                  "usage": {"output_tokens": len(deltas)}}))  # fmt: skip
    out.append(("message_stop", {"type": "message_stop"}))
    return out


class _Handler(BaseHTTPRequestHandler):
    def do_POST(self) -> None:
        body = json.loads(self.rfile.read(int(self.headers.get("content-length", "0"))) or b"{}")
        if not self.path.startswith("/v1/messages") or "count_tokens" in self.path:
            self.send_response(404)
            self.end_headers()
            return
        events = _events(respond(body.get("messages") or []), str(body.get("model", "claude-sonnet-4-5")))
        self.send_response(200)
        self.send_header("content-type", "text/event-stream")
        self.end_headers()
        for name, data in events:
            self.wfile.write(f"event: {name}\ndata: {json.dumps(data)}\n\n".encode())
            self.wfile.flush()

    def log_message(self, *_: Any) -> None:
        pass


class ScriptedAnthropic:
    """The scripted model's server, on a free local port, in a thread."""

    def __init__(self) -> None:
        self._server = ThreadingHTTPServer(("127.0.0.1", 0), _Handler)
        self._server.daemon_threads = True
        threading.Thread(target=self._server.serve_forever, daemon=True).start()
        self.url = f"http://127.0.0.1:{self._server.server_address[1]}"
