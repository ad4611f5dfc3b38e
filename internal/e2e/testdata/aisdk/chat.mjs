// Drives a session with the AI SDK's own chat client: AbstractChat (what
// useChat wraps), DefaultChatTransport and the approval flow of
// addToolApprovalResponse + lastAssistantMessageIsCompleteWithApprovalResponses.
//
//   node chat.mjs BASE TOKEN SESSION_ID STEPS...
//
// Steps run in order:
//   send:TEXT      sendMessage({text}) and wait until its stream ends
//   approve        answer the pending approval (approved) and wait for the
//                  automatic request's stream to end
//   reject:REASON  answer it rejected, with a reason
//   resume         a new chat (as after a page reload) resumes the stream
// Every step prints one JSON line: {"step", "status", "messages", "error"};
// text changes print {"text": ...} lines while a stream runs.
// DEX_AI_PACKAGE=ai7 runs AI SDK 7 (the package is installed as ai7).
const { AbstractChat, DefaultChatTransport, lastAssistantMessageIsCompleteWithApprovalResponses } = await import(
  process.env.DEX_AI_PACKAGE || "ai"
);

const [base, token, sessionId, ...steps] = process.argv.slice(2);
const chunks = process.env.DEX_UI_CHUNKS;

class State {
  constructor() {
    this.status = "ready";
    this.error = undefined;
    this.messages = [];
  }
  pushMessage(m) {
    this.messages = this.messages.concat(m);
    this.report();
  }
  popMessage() {
    this.messages = this.messages.slice(0, -1);
  }
  replaceMessage(i, m) {
    this.messages = [...this.messages.slice(0, i), m, ...this.messages.slice(i + 1)];
    this.report();
  }
  snapshot(v) {
    return structuredClone(v);
  }
  report() {
    const last = this.messages[this.messages.length - 1];
    if (!last || last.role !== "assistant") return;
    const text = last.parts.filter((p) => p.type === "text").map((p) => p.text).join("");
    if (text !== this.lastText) {
      this.lastText = text;
      console.log(JSON.stringify({ text }));
    }
  }
}

function newChat(messages = []) {
  const state = new State();
  state.messages = messages;
  const errors = [];
  const headers = { Authorization: `Bearer ${token}` };
  if (chunks) headers["X-Dex-UI-Chunks"] = chunks;
  const chat = new (class extends AbstractChat {})({
    id: sessionId,
    state,
    transport: new DefaultChatTransport({
      api: `${base}/v1/ui/sessions/${encodeURIComponent(sessionId)}/chat`,
      headers,
      // Only the last message: the session holds the conversation.
      prepareSendMessagesRequest: ({ messages, id, trigger, messageId }) => ({
        body: { id, trigger, messageId, messages: messages.slice(-1) },
      }),
      prepareReconnectToStreamRequest: ({ id }) => ({
        api: `${base}/v1/ui/sessions/${encodeURIComponent(id)}/stream`,
      }),
    }),
    sendAutomaticallyWhen: lastAssistantMessageIsCompleteWithApprovalResponses,
    onError: (e) => errors.push(String(e && e.message ? e.message : e)),
  });
  return { chat, state, errors };
}

async function idle(state) {
  // The automatic request after an approval runs in the background.
  for (let i = 0; i < 600; i++) {
    await new Promise((r) => setTimeout(r, 100));
    if (state.status === "ready" || state.status === "error") return;
  }
  throw new Error("the chat did not become ready in 60 s");
}

function pendingApproval(state) {
  for (const m of state.messages) {
    for (const p of m.parts) {
      if (p.state === "approval-requested") return p.approval.id;
    }
  }
  throw new Error("no tool part waits for an approval");
}

let { chat, state, errors } = newChat();
for (const step of steps) {
  const [name, ...rest] = step.split(":");
  const arg = rest.join(":");
  if (name === "send") {
    await chat.sendMessage({ text: arg });
    await idle(state);
  } else if (name === "approve" || name === "reject") {
    await chat.addToolApprovalResponse({
      id: pendingApproval(state),
      approved: name === "approve",
      reason: name === "reject" ? arg : undefined,
    });
    await new Promise((r) => setTimeout(r, 200));
    await idle(state);
  } else if (name === "resume") {
    // A reload: the page has the messages before the running turn.
    const before = state.messages.filter((m, i) => !(i === state.messages.length - 1 && m.role === "assistant"));
    ({ chat, state, errors } = newChat(before));
    await chat.resumeStream();
    await idle(state);
  } else {
    throw new Error(`unknown step ${step}`);
  }
  console.log(JSON.stringify({ step, status: state.status, errors, messages: state.messages }));
}
