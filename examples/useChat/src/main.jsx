// A chat page whose useChat (AI SDK 6) talks to a dex-agent-worker session:
// the session is the backend, with nothing in between but the worker's UI
// message stream routes (POST /v1/ui/sessions/{id}/chat, GET .../stream).
// Approvals are the AI SDK's own (addToolApprovalResponse); questions,
// plans and usage arrive as data-dex-* parts.
import { useState } from 'react';
import { createRoot } from 'react-dom/client';
import { useChat } from '@ai-sdk/react';
import { DefaultChatTransport, lastAssistantMessageIsCompleteWithApprovalResponses } from 'ai';

// The page is served with the API on the same origin (server.mjs proxies
// /v1 to the worker).
const API = '';

function api(token, path, body) {
  return fetch(`${API}${path}`, {
    method: 'POST',
    headers: { Authorization: `Bearer ${token}`, 'Content-Type': 'application/json' },
    body: JSON.stringify(body),
  }).then(async (res) => {
    const data = await res.json().catch(() => ({}));
    if (!res.ok) throw new Error(data.error?.message || `${path} answered ${res.status}`);
    return data;
  });
}

function Setup({ onReady }) {
  const [token, setToken] = useState(sessionStorage.getItem('dex-token') || '');
  const [agent, setAgent] = useState('orders');
  const [session, setSession] = useState(new URLSearchParams(location.search).get('session') || '');
  const [error, setError] = useState('');
  async function start(e) {
    e.preventDefault();
    setError('');
    try {
      sessionStorage.setItem('dex-token', token);
      const id = session || (await api(token, '/v1/sessions', { agent })).session_id;
      history.replaceState(null, '', `?session=${encodeURIComponent(id)}`);
      onReady({ token, id });
    } catch (err) {
      setError(String(err.message || err));
    }
  }
  return (
    <form onSubmit={start} className="setup">
      <label>API token <input name="token" type="password" value={token} onChange={(e) => setToken(e.target.value)} required /></label>
      <label>Agent <input name="agent" value={agent} onChange={(e) => setAgent(e.target.value)} /></label>
      <label>Session (empty: a new one) <input name="session" value={session} onChange={(e) => setSession(e.target.value)} /></label>
      <button type="submit">Open chat</button>
      {error && <p className="error" role="alert">{error}</p>}
    </form>
  );
}

function ToolPart({ part, onApproval }) {
  const name = part.type.slice('tool-'.length);
  return (
    <div className={`tool ${part.state}`} data-tool={name} data-state={part.state}>
      <code>{name}({JSON.stringify(part.input)})</code>
      {part.state === 'input-available' && <span> running…</span>}
      {part.state === 'approval-requested' && (
        <span>
          {' '}
          <button onClick={() => onApproval({ id: part.approval.id, approved: true })}>Approve</button>
          <button onClick={() => onApproval({ id: part.approval.id, approved: false, reason: 'The user rejected it.' })}>Reject</button>
        </span>
      )}
      {part.state === 'approval-responded' && <span> {part.approval.approved ? 'approved' : 'rejected'}…</span>}
      {part.state === 'output-available' && <pre className="output">{String(part.output)}</pre>}
      {part.state === 'output-error' && <pre className="error">{part.errorText}</pre>}
      {part.state === 'output-denied' && <span> not run (rejected)</span>}
    </div>
  );
}

function Question({ data, token, session }) {
  const [answer, setAnswer] = useState('');
  const send = (body) => api(token, `/v1/sessions/${encodeURIComponent(session)}/questions/${encodeURIComponent(data.interrupt_id)}`, body).catch((e) => alert(e.message));
  if (data.status !== 'pending') return <div className="question">{data.question} ({data.status})</div>;
  return (
    <div className="question">
      <p>{data.question}</p>
      {data.choices.map((c) => <button key={c} onClick={() => send({ answer: c })}>{c}</button>)}
      {data.allows_free_text && (
        <span>
          <input value={answer} onChange={(e) => setAnswer(e.target.value)} />
          <button onClick={() => send({ answer })}>Answer</button>
        </span>
      )}
      <button onClick={() => send({ decline: true })}>Decline</button>
    </div>
  );
}

function Part({ part, token, session, onApproval }) {
  if (part.type === 'text') {
    // A part a retried model call replaced is not the answer.
    if (part.providerMetadata?.dex?.superseded) return null;
    return <p className="text">{part.text}</p>;
  }
  if (part.type === 'reasoning') return <details><summary>reasoning</summary>{part.text}</details>;
  if (part.type.startsWith('tool-')) return <ToolPart part={part} onApproval={onApproval} />;
  if (part.type === 'data-dex-question') return <Question data={part.data} token={token} session={session} />;
  if (part.type === 'data-dex-plan') {
    return (
      <ol className="plan">
        {(part.data.tasks || []).map((t, i) => <li key={i} data-status={t.status}>{t.content} ({t.status})</li>)}
      </ol>
    );
  }
  if (part.type === 'data-dex-usage') {
    const u = part.data.session || {};
    return <small className="usage">session: {u.input_tokens ?? 0} in / {u.output_tokens ?? 0} out tokens</small>;
  }
  return null;
}

function Chat({ token, id }) {
  const [input, setInput] = useState('');
  const { messages, sendMessage, addToolApprovalResponse, status, error } = useChat({
    id,
    // Resume the running turn after a reload (204: none runs).
    resume: true,
    transport: new DefaultChatTransport({
      api: `${API}/v1/ui/sessions/${encodeURIComponent(id)}/chat`,
      headers: { Authorization: `Bearer ${token}` },
      // The session keeps the conversation: send only the new message.
      prepareSendMessagesRequest: ({ messages, id, trigger, messageId }) => ({
        body: { id, trigger, messageId, messages: messages.slice(-1) },
      }),
      prepareReconnectToStreamRequest: ({ id }) => ({ api: `${API}/v1/ui/sessions/${encodeURIComponent(id)}/stream` }),
    }),
    // An answered approval sends the response at once; the turn goes on.
    sendAutomaticallyWhen: lastAssistantMessageIsCompleteWithApprovalResponses,
  });
  return (
    <main>
      <p className="session">Session <code>{id}</code> · <span className="status" data-status={status}>{status}</span></p>
      {messages.map((m) => (
        <div key={m.id} className={`message ${m.role}`} data-role={m.role}>
          {m.parts.map((p, i) => <Part key={i} part={p} token={token} session={id} onApproval={addToolApprovalResponse} />)}
        </div>
      ))}
      {error && <p className="error" role="alert">{String(error.message || error)}</p>}
      <form
        onSubmit={(e) => {
          e.preventDefault();
          if (!input.trim()) return;
          sendMessage({ text: input });
          setInput('');
        }}
      >
        <input name="message" value={input} onChange={(e) => setInput(e.target.value)} placeholder="refund order 7" disabled={status !== 'ready'} />
        <button type="submit" disabled={status !== 'ready'}>Send</button>
      </form>
    </main>
  );
}

function App() {
  const [chat, setChat] = useState(null);
  return chat ? <Chat {...chat} /> : <Setup onReady={setChat} />;
}

createRoot(document.getElementById('root')).render(<App />);
