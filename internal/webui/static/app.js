// Dex Agents web chat. Plain JavaScript, no dependencies, no build step.
//
// It talks to the worker's HTTP API (docs/http-api.md) with the bearer
// token the user gives it, and renders a session live: it loads the snapshot,
// then reads the session's Server-Sent Events over fetch() (EventSource
// cannot send an Authorization header) from the snapshot's resume token.
//
// Data is always rendered with textContent / DOM nodes, never as HTML.
'use strict';

(() => {
  // ---------------------------------------------------------------- storage

  const TOKEN_KEY = 'dex.apiToken';           // sessionStorage: this tab only
  const RECENT_KEY = 'dex.recentSessions';    // localStorage: IDs and titles, no secrets
  const AGENT_KEY = 'dex.lastAgent';
  const MAX_RECENT = 20;

  const store = {
    get(kind, key) {
      try { return window[kind].getItem(key); } catch { return null; }
    },
    set(kind, key, value) {
      try { window[kind].setItem(key, value); } catch { /* storage disabled */ }
    },
    remove(kind, key) {
      try { window[kind].removeItem(key); } catch { /* storage disabled */ }
    },
  };

  // ---------------------------------------------------------------- helpers

  const $ = (id) => document.getElementById(id);

  function el(tag, attrs, ...children) {
    const node = document.createElement(tag);
    if (attrs) {
      for (const [k, v] of Object.entries(attrs)) {
        if (v === undefined || v === null || v === false) continue;
        if (k === 'class') node.className = v;
        else if (k === 'text') node.textContent = v;
        else if (k === 'dataset') Object.assign(node.dataset, v);
        else if (k.startsWith('on')) node.addEventListener(k.slice(2), v);
        else node.setAttribute(k, v === true ? '' : String(v));
      }
    }
    for (const c of children) {
      if (c === undefined || c === null || c === false) continue;
      node.append(c instanceof Node ? c : String(c));
    }
    return node;
  }

  const SVG_NS = 'http://www.w3.org/2000/svg';
  // icon builds a small stroke icon from path data (constant strings only).
  function icon(paths, cls) {
    const svg = document.createElementNS(SVG_NS, 'svg');
    svg.setAttribute('viewBox', '0 0 24 24');
    svg.setAttribute('aria-hidden', 'true');
    svg.setAttribute('focusable', 'false');
    if (cls) svg.setAttribute('class', cls);
    for (const d of paths) {
      const p = document.createElementNS(SVG_NS, 'path');
      p.setAttribute('d', d);
      svg.append(p);
    }
    return svg;
  }
  const ICONS = {
    tool: ['M14.7 6.3a4 4 0 0 0-5.4 5.4L4 17l3 3 5.3-5.3a4 4 0 0 0 5.4-5.4l-2.5 2.5-2.4-.6-.6-2.4z'],
    check: ['M5 12.5l4.5 4.5L19 7.5'],
    x: ['M6 6l12 12M18 6L6 18'],
    clock: ['M12 7v5l3 2', 'M12 3a9 9 0 1 0 0 18 9 9 0 0 0 0-18z'],
    shield: ['M12 3l7 3v6c0 4.5-3 7.5-7 9-4-1.5-7-4.5-7-9V6z', 'M9 12l2 2 4-4'],
    bot: ['M12 4v3', 'M6 7h12a2 2 0 0 1 2 2v8a2 2 0 0 1-2 2H6a2 2 0 0 1-2-2V9a2 2 0 0 1 2-2z', 'M9 12.5v1', 'M15 12.5v1', 'M2 12v3M22 12v3'],
    gauge: ['M4 19h16', 'M7 16v-4', 'M12 16V8', 'M17 16v-7'],
    spark: ['M12 3v4M12 17v4M3 12h4M17 12h4M6 6l2.5 2.5M15.5 15.5L18 18M6 18l2.5-2.5M15.5 8.5L18 6'],
    trash: ['M5 7h14M10 11v6M14 11v6M6 7l1 13h10l1-13M9 7V4h6v3'],
    stop: ['M8 8h8v8H8z', 'M12 3a9 9 0 1 0 0 18 9 9 0 0 0 0-18z'],
    steer: ['M5 19c0-7 4-11 11-11h3', 'M15 4l4 4-4 4'],
    copy: ['M9 9h11v11H9z', 'M5 15V5a1 1 0 0 1 1-1h9'],
    edit: ['M4 20h4L19 9l-4-4L4 16z', 'M13.5 6.5l4 4'],
  };

  function randomID() {
    const b = new Uint8Array(16);
    crypto.getRandomValues(b);
    return Array.from(b, (x) => x.toString(16).padStart(2, '0')).join('');
  }

  const sleep = (ms, signal) => new Promise((resolve) => {
    const onAbort = () => { clearTimeout(t); resolve(); };
    const t = setTimeout(() => { if (signal) signal.removeEventListener('abort', onAbort); resolve(); }, ms);
    if (signal) signal.addEventListener('abort', onAbort, { once: true });
  });

  const numberFormat = new Intl.NumberFormat();
  const fmt = (n) => numberFormat.format(Number(n) || 0);

  function prettyJSON(text) {
    if (text === undefined || text === null || text === '') return '';
    if (typeof text !== 'string') return JSON.stringify(text, null, 2);
    try { return JSON.stringify(JSON.parse(text), null, 2); } catch { return text; }
  }

  function oneLine(text, max) {
    const s = String(text || '').replace(/\s+/g, ' ').trim();
    return s.length > max ? s.slice(0, max - 1) + '…' : s;
  }

  function relativeTime(ms) {
    const abs = Math.abs(ms);
    const units = [['day', 86400000], ['hour', 3600000], ['minute', 60000], ['second', 1000]];
    const rtf = new Intl.RelativeTimeFormat(undefined, { numeric: 'auto' });
    for (const [unit, size] of units) {
      if (abs >= size || unit === 'second') return rtf.format(Math.round(ms / size), unit);
    }
    return '';
  }

  function formatDeadline(deadline) {
    const t = Date.parse(deadline);
    if (!deadline || Number.isNaN(t)) return null;
    const d = new Date(t);
    const sameDay = d.toDateString() === new Date().toDateString();
    const abs = d.toLocaleString(undefined, sameDay
      ? { hour: '2-digit', minute: '2-digit' }
      : { month: 'short', day: 'numeric', hour: '2-digit', minute: '2-digit' });
    const left = t - Date.now();
    return { expired: left <= 0, text: left <= 0 ? `Expired ${relativeTime(left)}` : `Respond by ${abs} (${relativeTime(left)})`, iso: d.toISOString() };
  }

  // ---------------------------------------------------------------- API

  class APIError extends Error {
    constructor(status, code, message) {
      super(message || `Request failed (${status})`);
      this.status = status;
      this.code = code || '';
    }
  }

  const apiURL = (path) => new URL(path.replace(/^\//, ''), document.baseURI).toString();
  const sessionPath = (id, rest) => `v1/sessions/${encodeURIComponent(id)}${rest || ''}`;

  async function api(method, path, body, headers) {
    const h = { Accept: 'application/json', ...authHeaders(), ...(headers || {}) };
    if (body !== undefined) h['Content-Type'] = 'application/json';
    let res;
    try {
      res = await fetch(apiURL(path), {
        method, headers: h, cache: 'no-store', credentials: 'same-origin',
        body: body === undefined ? undefined : JSON.stringify(body),
      });
    } catch {
      throw new APIError(0, 'network', 'The server cannot be reached.');
    }
    let data = null;
    try { data = await res.json(); } catch { /* empty or not JSON */ }
    if (!res.ok) {
      const e = data && data.error ? data.error : {};
      const err = new APIError(res.status, e.code, e.message);
      if (res.status === 401) signOut('That token was not accepted. Paste a valid API token.');
      throw err;
    }
    return data || {};
  }

  // ---------------------------------------------------------------- state

  const app = {
    token: '',
    agents: [],
    session: null, // see newSession
  };

  // A session's snapshot lists the tool calls of the active turn only; once
  // the turn ends, the stored tool messages carry just the output. The page
  // keeps the last full record of each call in sessionStorage (this tab
  // only), so a reload still shows arguments and final statuses.
  const RECORDS_PREFIX = 'dex.toolRecords:';
  const MAX_RECORDS = 300;
  const MAX_FIELD = 20000;

  function loadRecords(id) {
    const m = new Map();
    try {
      const list = JSON.parse(store.get('sessionStorage', RECORDS_PREFIX + id) || '[]');
      if (Array.isArray(list)) for (const r of list) if (r && r.tool_call_id) m.set(r.tool_call_id, r);
    } catch { /* ignore a damaged cache */ }
    return m;
  }

  function saveRecords(s) {
    if (!s.recordsDirty) return;
    s.recordsDirty = false;
    const cut = (v) => (typeof v === 'string' && v.length > MAX_FIELD ? v.slice(0, MAX_FIELD) + '…' : v);
    const list = [...s.records.values()].slice(-MAX_RECORDS).map((r) => ({
      ...r, arguments: cut(r.arguments), output: cut(r.output), error: cut(r.error),
    }));
    store.set('sessionStorage', RECORDS_PREFIX + s.id, JSON.stringify(list));
  }

  const RECORD_FIELDS = ['display_text', 'tool_name', 'arguments', 'effect', 'requires_approval', 'status', 'deferral_order', 'output', 'error', 'rejection_message', 'cancellation_reason'];
  function mergeRecord(s, c) {
    if (!c || !c.tool_call_id) return;
    const old = s.records.get(c.tool_call_id) || { tool_call_id: c.tool_call_id };
    const next = { ...old };
    for (const k of RECORD_FIELDS) {
      const v = c[k];
      if (v === undefined || v === null || v === '') continue;
      if (k === 'status' && rank(v) < rank(old.status)) continue;
      next[k] = v;
    }
    if (RECORD_FIELDS.some((k) => next[k] !== old[k])) {
      s.records.set(c.tool_call_id, next);
      s.recordsDirty = true;
    }
  }

  // Notes of turns a steer or a Stop ended (turn_steered, turn_cancelled)
  // are known from live events only; the page keeps them in sessionStorage
  // (this tab only), so a reload still shows them.
  const NOTES_PREFIX = 'dex.turnNotes:';
  const MAX_NOTES = 100;

  function loadNotes(id) {
    const m = new Map();
    try {
      const list = JSON.parse(store.get('sessionStorage', NOTES_PREFIX + id) || '[]');
      if (Array.isArray(list)) for (const n of list) if (n && typeof n.turn === 'string' && typeof n.kind === 'string') m.set(n.turn, n);
    } catch { /* ignore a damaged cache */ }
    return m;
  }

  function addNote(s, turn, kind, p) {
    if (!turn) return;
    s.notes.set(turn, { turn, kind, steered: Number(p.steered_message_count) || 0 });
    store.set('sessionStorage', NOTES_PREFIX + s.id, JSON.stringify([...s.notes.values()].slice(-MAX_NOTES)));
  }

  function noteText(n) {
    if (n.kind === DEX_EVENTS.TURN_CANCELLED) return 'You stopped this turn. Anything it had not started was cancelled.';
    const many = n.steered > 1 ? `your ${n.steered} new messages` : 'your new message';
    return `You steered the conversation: the agent stopped this turn at a safe step and moved on to ${many}.`;
  }

  // newSession holds everything about the open session. Live state from
  // events is merged with the latest snapshot when rendering.
  function newSession(id, agent) {
    return {
      id,
      agent: agent || '',
      snapshot: null,
      loadError: null,
      lastEventId: '',
      abort: new AbortController(),
      live: new Map(),        // turn_id -> live turn (see liveTurn)
      tools: new Map(),       // tool_call_id -> what events told about the call
      records: loadRecords(id), // tool_call_id -> last known full record (survives a reload)
      recordsDirty: false,
      interrupts: new Map(),  // interrupt_id -> pending interrupt
      childInterrupts: [],    // what sub-agents wait on (pending_interrupts with another session_id)
      children: new Map(),    // child session_id -> what its events told (see childView)
      resolved: new Set(),    // interrupt IDs resolved since (events or clicks)
      usage: null,
      sending: [],            // optimistic user messages {key, text, mode}
      notes: loadNotes(id),   // turn_id -> {turn, kind, steered}: turns a steer or Stop ended
      queuedBusy: new Map(),  // queued message_id -> 'steering' | 'deleting'
      stopping: '',           // the turn a Stop was sent for
      dismissedError: '',
      reload: { running: null, again: false, timer: 0 },
    };
  }

  // ---------------------------------------------------------------- auth

  // On a loopback address the page signs the browser in with an HttpOnly
  // cookie (POST /v1/auth/cookie) instead of keeping the token in the tab:
  // every tab is signed in until the browser quits, and no script reads the
  // token. app.token is then COOKIE.
  const COOKIE = '\u0000cookie';
  const LOOPBACK = ['127.0.0.1', 'localhost', '[::1]', '::1'].includes(location.hostname);

  function authHeaders() {
    const h = { 'X-Dex-Client': 'web' };
    if (app.token && app.token !== COOKIE) h.Authorization = `Bearer ${app.token}`;
    return h;
  }

  // cookieSignIn trades token for the sign-in cookie; false when the
  // server gives none (not on a loopback address, an older server).
  async function cookieSignIn(token) {
    if (!LOOPBACK) return false;
    try {
      const res = await fetch(apiURL('/v1/auth/cookie'), {
        method: 'POST', cache: 'no-store', credentials: 'same-origin',
        headers: { Authorization: `Bearer ${token}`, 'X-Dex-Client': 'web' },
      });
      return res.status === 204;
    } catch { return false; }
  }

  // cookieSignedIn reports whether the browser's sign-in cookie still works.
  async function cookieSignedIn() {
    if (!LOOPBACK) return false;
    try {
      const res = await fetch(apiURL('/v1/auth/cookie'), { cache: 'no-store', credentials: 'same-origin', headers: { Accept: 'application/json', 'X-Dex-Client': 'web' } });
      return res.ok && (await res.json()).signed_in === true;
    } catch { return false; }
  }

  function readTokenFromFragment() {
    const hash = location.hash.replace(/^#/, '');
    if (!hash) return;
    const params = new URLSearchParams(hash);
    const token = params.get('token');
    if (token === null) return;
    params.delete('token');
    const rest = params.toString();
    // Remove the token from the address bar and the history entry.
    history.replaceState(history.state, '', location.pathname + location.search + (rest ? `#${rest}` : ''));
    return token.trim();
  }

  function signOut(message) {
    closeSession();
    if (app.token === COOKIE) {
      fetch(apiURL('/v1/auth/logout'), { method: 'POST', cache: 'no-store', credentials: 'same-origin', headers: { 'X-Dex-Client': 'web' } }).catch(() => {});
    }
    app.token = '';
    stopChanges();
    store.remove('sessionStorage', TOKEN_KEY);
    Object.assign(inbox, { sessions: [], next: '', pages: 1, loadedAt: 0, error: '' });
    convs.sessions = [];
    renderInbox();
    $('sign-out').hidden = true;
    $('signin-error').textContent = message || '';
    showView('signin');
    $('token-input').value = '';
    $('token-input').focus();
  }

  async function signIn(token) {
    app.token = token;
    $('sign-out').hidden = false;
    try {
      await loadAgents();
    } catch (err) {
      if (err.status === 401) return; // signOut already showed the form
      toast(`Could not load agents: ${err.message}`, 'error');
    }
    route();
    if (document.body.dataset.view !== 'inbox') loadInbox(false);
    loadConversations();
    followChanges();
  }

  // ---------------------------------------------------------------- eval report

  // The report view renders a report.json of eval run, read in the
  // browser: every value goes in as text, never as markup.
  function showReportError(msg) {
    $('report-error').textContent = msg;
    $('report-body').hidden = true;
  }

  function reportNode(tag, cls, text) {
    return el(tag, { class: cls || undefined, text });
  }

  function reportNumber(v) {
    if (typeof v !== 'number') return String(v);
    if (v >= 1e300) return 'inf';
    return String(Math.round(v * 1000) / 1000);
  }

  function renderReport(r) {
    $('report-error').textContent = '';
    const m = r.metrics || {};
    const passed = r.passed !== false;
    $('report-summary').textContent = `${r.agent || '?'} against ${r.dataset || '?'}: ${m.cases || 0} case(s), ${m.cases_changed || 0} changed, ` +
      `${m.diverged || 0} diverged, ${m.failures || 0} failed. Checks ${passed ? 'passed' : 'FAILED'}.`;
    $('report-summary').dataset.passed = String(passed);
    const checks = $('report-checks').querySelector('tbody');
    checks.replaceChildren();
    for (const c of r.checks || []) {
      const tr = reportNode('tr', c.failed ? 'failed' : '');
      tr.append(reportNode('td', 'mono', c.check), reportNode('td', '', reportNumber(c.value)), reportNode('td', '', c.failed ? 'failed' : 'ok'));
      checks.append(tr);
    }
    $('report-checks').hidden = !(r.checks || []).length;
    const metrics = $('report-metrics').querySelector('tbody');
    metrics.replaceChildren();
    for (const k of Object.keys(m).sort()) {
      const tr = reportNode('tr');
      tr.append(reportNode('td', 'mono', k), reportNode('td', '', reportNumber(m[k])));
      metrics.append(tr);
    }
    const list = $('report-cases');
    list.replaceChildren();
    for (const c of r.cases) {
      const li = reportNode('li', 'report-case');
      li.dataset.status = c.status || '';
      li.dataset.testid = 'report-case';
      const head = reportNode('div', 'report-case-head');
      head.append(reportNode('span', 'mono', c.case || '?'), reportNode('span', `badge status-${c.status || 'unknown'}`, c.status || '?'));
      li.append(head);
      const rec = c.recorded || {}, run = c.replayed || {};
      li.append(reportNode('p', 'report-totals', `Turns ${rec.turns || 0} → ${run.turns || 0}, model calls ${rec.model_calls || 0} → ${run.model_calls || 0}, ` +
        `tokens ${rec.total_tokens || 0} → ${run.total_tokens || 0}, Step time ${rec.latency_ms || 0} ms → ${run.latency_ms || 0} ms`));
      const items = reportNode('ul', 'report-changes');
      const add = (text) => { const x = reportNode('li', '', text); x.dataset.testid = 'report-change'; items.append(x); };
      if (c.error) add(`error: ${c.error}`);
      if (c.diverged_at) {
        const d = c.diverged_at;
        add(d.kind === 'call' ? `diverged at call ${d.tool} ${d.arguments}: not in the record, so it was not run`
          : `diverged at ${d.kind} ${d.tool || ''} ${d.arguments || d.question || ''}: the record has no answer, so it was ${d.kind === 'question' ? 'declined' : 'rejected and not run'}`);
      }
      for (const x of c.calls || []) {
        const args = x.change === 'changed' ? `${x.recorded_arguments} → ${x.replayed_arguments}` : (x.replayed_arguments || x.recorded_arguments || '');
        add(`call ${x.index} ${x.change}: ${x.tool} ${args}${x.write ? ' (a write)' : ''}`);
      }
      for (const a of c.approvals || []) add(`approval ${a.change}: ${a.tool} ${a.arguments}`);
      for (const d of c.decisions || []) add(`rule decision on ${d.tool} ${d.arguments}: ${d.recorded || 'none'} → ${d.replayed || 'none'}`);
      for (const a of c.answers || []) {
        if (!a.exact) add(`answer of turn ${a.turn} changed (similarity ${reportNumber(a.similarity)}): “${a.recorded || ''}” → “${a.replayed || ''}”`);
      }
      for (const u of c.unanswered || []) add(`${u.kind} with no recorded answer: ${u.tool || ''} ${u.arguments || u.question || ''}`);
      if (!items.children.length) items.append(reportNode('li', 'muted', 'No difference from the record.'));
      li.append(items);
      list.append(li);
    }
    $('report-body').hidden = false;
  }

  // ---------------------------------------------------------------- views

  function showView(name) {
    $('signin-view').hidden = name !== 'signin';
    $('start-view').hidden = name !== 'start';
    $('inbox-view').hidden = name !== 'inbox';
    $('report-view').hidden = name !== 'report';
    $('session-view').hidden = name !== 'session';
    if (name === 'inbox') $('inbox-link').setAttribute('aria-current', 'page'); else $('inbox-link').removeAttribute('aria-current');
    document.body.dataset.view = name;
    const composerOn = name === 'session' && !!app.session;
    $('message-input').disabled = !composerOn;
    updateSendButton();
    if (name !== 'session') setConnection('idle');
  }

  function toast(message, kind) {
    const t = el('div', { class: `toast ${kind || 'info'}`, 'data-testid': 'toast' },
      el('span', { text: message }),
      el('button', { type: 'button', class: 'icon-button tiny', 'aria-label': 'Dismiss', onclick: () => t.remove() }, icon(ICONS.x)));
    $('toasts').append(t);
    setTimeout(() => t.remove(), kind === 'error' ? 9000 : 5000);
  }

  function setConnection(state, detail) {
    const labels = { idle: 'Not connected', connecting: 'Connecting…', live: 'Live', reconnecting: 'Reconnecting…' };
    const c = $('connection');
    c.dataset.state = state;
    $('connection-label').textContent = detail || labels[state] || state;
    c.title = state === 'live' ? 'Receiving live updates' : '';
  }

  // ---------------------------------------------------------------- agents

  async function loadAgents() {
    const sel = $('agent-select');
    const data = await api('GET', 'v1/agents');
    app.agents = Array.isArray(data.agents) ? data.agents : [];
    sel.replaceChildren();
    if (!app.agents.length) {
      sel.append(el('option', { value: '', text: 'No agents available' }));
      $('agent-hint').textContent = 'This token may not use any agent.';
    } else {
      if (app.agents.length > 1) sel.append(el('option', { value: '', text: 'Choose an agent…' }));
      for (const a of app.agents) {
        sel.append(el('option', { value: a.name, text: a.flow_type && a.flow_type !== a.name ? `${a.name} — ${a.flow_type}` : a.name }));
      }
      const last = store.get('localStorage', AGENT_KEY);
      if (last && app.agents.some((a) => a.name === last)) sel.value = last;
      $('agent-hint').textContent = '';
    }
    updateStartButton();
  }

  function updateStartButton() {
    $('start-button').disabled = !$('agent-select').value || app.starting;
  }

  async function startSession(e) {
    e.preventDefault();
    const agent = $('agent-select').value;
    if (!agent || app.starting) return;
    const text = $('start-message').value.trim();
    app.starting = true;
    updateStartButton();
    $('start-button').textContent = 'Starting…';
    $('start-error').textContent = '';
    try {
      const body = { agent };
      if (text) body.initial_message = text;
      const data = await api('POST', 'v1/sessions', body, { 'Idempotency-Key': randomID() });
      store.set('localStorage', AGENT_KEY, agent);
      $('start-message').value = '';
      rememberSession(data.session_id, agent, text);
      navigate(data.session_id, agent);
    } catch (err) {
      if (err.status !== 401) $('start-error').textContent = `Could not start the session: ${err.message}`;
    } finally {
      app.starting = false;
      $('start-button').textContent = 'Start session';
      updateStartButton();
    }
  }

  // ---------------------------------------------------------------- recent

  function recentSessions() {
    try {
      const list = JSON.parse(store.get('localStorage', RECENT_KEY) || '[]');
      return Array.isArray(list) ? list.filter((r) => r && typeof r.id === 'string') : [];
    } catch { return []; }
  }

  function rememberSession(id, agent, title) {
    const list = recentSessions();
    const old = list.find((r) => r.id === id);
    const entry = {
      id,
      agent: agent || (old && old.agent) || '',
      title: title || (old && old.title) || '',
      at: Date.now(),
    };
    const next = [entry, ...list.filter((r) => r.id !== id)].slice(0, MAX_RECENT);
    store.set('localStorage', RECENT_KEY, JSON.stringify(next));
    renderRecent();
  }

  function forgetSession(id) {
    store.set('localStorage', RECENT_KEY, JSON.stringify(recentSessions().filter((r) => r.id !== id)));
    renderRecent();
  }

  // The conversation list: the sessions the token may see, newest first,
  // from the server (GET /v1/sessions?status=all, with their titles), and
  // the ones this browser opened that the engine's visibility store does
  // not show yet. It refreshes itself; the search filters it by title and
  // agent.
  // 30 a page; dex.convPageSize in localStorage sets another (1 to 100).
  const CONV_PAGE = Math.min(100, Math.max(1, Number(store.get('localStorage', 'dex.convPageSize')) || 30));
  // titles and archived hold what this page set, until the list shows it
  // (the engine's visibility store trails a change by a moment).
  const convs = { sessions: [], next: '', pages: 1, loadedAt: 0, running: null, failed: false, titles: new Map(), archived: new Map() };
  const CONV_MAX_PAGES = 10;

  async function loadConversations() {
    if (!app.token || convs.running) return convs.running;
    convs.running = (async () => {
      try {
        // The pages shown so far, read again from the first (the list
        // moves as sessions start).
        const all = [];
        let token = '';
        let pages = 0;
        do {
          const q = new URLSearchParams({ status: 'all', page_size: String(CONV_PAGE) });
          if (token) q.set('page_token', token);
          const data = await api('GET', `v1/sessions?${q}`);
          for (const x of Array.isArray(data.sessions) ? data.sessions : []) {
            // A sub-agent's session shows in its parent's card, not here.
            if (x && x.session_id && !x.parent_session_id && !all.some((o) => o.session_id === x.session_id)) all.push(x);
          }
          token = data.next_page_token || '';
          pages++;
        } while (token && pages < Math.min(convs.pages, CONV_MAX_PAGES));
        convs.sessions = all;
        convs.next = token;
        for (const x of convs.sessions) {
          if (convs.titles.get(x.session_id) === x.title) convs.titles.delete(x.session_id);
          if (convs.archived.get(x.session_id) === !!x.archived) convs.archived.delete(x.session_id);
        }
        convs.failed = false;
      } catch (err) {
        convs.failed = true; // the list below falls back to this browser's
      } finally {
        convs.loadedAt = Date.now();
        convs.running = null;
        renderRecent();
      }
    })();
    return convs.running;
  }

  const CONV_STATUS = { running: '', completed: 'Closed', terminated: 'Ended', failed: 'Ended', canceled: 'Ended', timed_out: 'Ended' };

  function renderRecent() {
    const local = recentSessions();
    const localByID = new Map(local.map((r) => [r.id, r]));
    const list = [];
    const seen = new Set();
    for (const x of convs.sessions) {
      const l = localByID.get(x.session_id);
      const started = Date.parse(x.started_at);
      const waiting = (x.waiting_for || []).some((w) => w === 'approval' || w === 'question');
      const archived = convs.archived.has(x.session_id) ? convs.archived.get(x.session_id) : !!x.archived;
      list.push({ id: x.session_id, agent: x.agent || (l && l.agent) || '', title: convs.titles.get(x.session_id) || x.title || (l && l.title) || '',
        at: Number.isNaN(started) ? (l && l.at) : started, status: archived ? 'Archived' : waiting ? 'Needs you' : CONV_STATUS[x.status] || '', server: true, archived });
      seen.add(x.session_id);
    }
    for (const r of local) if (!seen.has(r.id)) list.push(r);
    const query = ($('conv-search').value || '').trim().toLowerCase();
    const withArchived = $('show-archived').checked;
    const shown = list.filter((r) => (withArchived || !r.archived) && (!query || `${r.title} ${r.agent}`.toLowerCase().includes(query)));
    const ul = $('recent-list');
    ul.replaceChildren();
    const current = app.session && app.session.id;
    for (const r of shown) {
      const open = el('a', {
        class: 'recent-link', href: `?session=${encodeURIComponent(r.id)}`,
        'aria-current': r.id === current ? 'page' : undefined,
        onclick: (e) => { e.preventDefault(); navigate(r.id, r.agent); },
      },
      el('span', { class: 'recent-title', text: r.title ? oneLine(r.title, 60) : r.id }),
      el('span', { class: 'recent-meta', text: [r.agent, r.status, r.at ? relativeTime(r.at - Date.now()) : ''].filter(Boolean).join(' · ') }));
      // Only this browser's own entries can be removed from the list.
      const remove = r.server ? '' : el('button', {
        type: 'button', class: 'icon-button tiny recent-remove', 'aria-label': `Remove ${r.title || r.id} from recent sessions`,
        title: 'Remove from this list', onclick: () => forgetSession(r.id),
      }, icon(ICONS.x));
      ul.append(el('li', { class: 'recent-item', 'data-testid': 'recent-session', 'data-session-id': r.id, 'data-status': r.status || '', 'data-source': r.server ? 'server' : 'browser' }, open, remove));
    }
    $('recent-empty').hidden = shown.length > 0;
    $('conv-more').hidden = !convs.next || convs.pages >= CONV_MAX_PAGES;
    $('recent-empty').textContent = query && list.length ? 'No conversation matches.' : 'Sessions you start or open appear here.';
  }

  // renameCurrentSession sets the open session's title.
  async function renameCurrentSession() {
    const s = app.session;
    if (!s) return;
    const row = convs.sessions.find((x) => x.session_id === s.id);
    const title = window.prompt('Title of this conversation', convs.titles.get(s.id) || (row && row.title) || '');
    if (title === null || !title.trim()) return;
    try {
      await api('PUT', sessionPath(s.id, '/title'), { title });
      convs.titles.set(s.id, title.trim().split('\n')[0].slice(0, 80));
      renderRecent();
    } catch (err) {
      if (err.status !== 401) toast(`Could not rename it: ${err.message}`, 'error');
    }
  }

  // archiveCurrentSession archives the open session, or takes it back.
  async function archiveCurrentSession() {
    const s = app.session;
    if (!s) return;
    const row = convs.sessions.find((x) => x.session_id === s.id);
    const now = convs.archived.has(s.id) ? convs.archived.get(s.id) : !!(row && row.archived);
    try {
      await api('PUT', sessionPath(s.id, '/archived'), { archived: !now });
      convs.archived.set(s.id, !now);
      toast(now ? 'Back in the conversation list.' : 'Archived: the list shows it with "Show archived".', 'info');
      renderArchiveButton();
      renderRecent();
    } catch (err) {
      if (err.status !== 401) toast(`Could not ${now ? 'unarchive' : 'archive'} it: ${err.message}`, 'error');
    }
  }

  function renderArchiveButton() {
    const s = app.session;
    if (!s) return;
    const row = convs.sessions.find((x) => x.session_id === s.id);
    const archived = convs.archived.has(s.id) ? convs.archived.get(s.id) : !!(row && row.archived);
    const label = archived ? 'Unarchive' : 'Archive';
    if ($('archive-session').textContent !== label) $('archive-session').textContent = label;
  }

  // closeCurrentSession closes the open session after the user confirms.
  async function closeCurrentSession() {
    const s = app.session;
    if (!s || !window.confirm('Close this conversation? Its running turn finishes, then it takes no new messages.')) return;
    try {
      await api('POST', sessionPath(s.id, '/close'), {});
      toast('The conversation is closing.', 'info');
    } catch (err) {
      if (err.status !== 401) toast(`Could not close it: ${err.message}`, 'error');
    }
    await reloadNow(s);
    loadConversations();
  }

  // ---------------------------------------------------------------- inbox ("Needs you")

  // The inbox lists the sessions the token may see that wait for a person
  // (GET /v1/sessions?waiting_for=approval,question), newest first. The
  // list comes from the engine's visibility store, which trails a session
  // by a moment, so it refreshes itself.
  const INBOX_REFRESH_MS = 5000;
  const INBOX_BADGE_MS = 30000;
  const INBOX_MAX_PAGES = 5;
  const WAITING_LABEL = { approval: 'Approval needed', question: 'Question for you', timer: 'Waiting on a timer', task: 'Waiting on a tool task', user: 'Waiting for a message' };
  const inbox = { sessions: [], next: '', pages: 1, loadedAt: 0, running: null, error: '', busy: new Set() };

  async function loadInbox(userAsked, more) {
    if (!app.token) return undefined;
    if (inbox.running) return inbox.running;
    inbox.running = (async () => {
      try {
        const want = more ? inbox.pages + 1 : Math.max(1, inbox.pages);
        const all = [];
        let token = '';
        let pages = 0;
        do {
          // The open inbox shows what each session asks (include=pending:
          // a snapshot per session, so fewer per page); the badge needs
          // only the count.
          const detailed = document.body.dataset.view === 'inbox';
          const q = new URLSearchParams({ waiting_for: 'approval,question', page_size: detailed ? '20' : '50' });
          if (detailed) q.set('include', 'pending');
          if (token) q.set('page_token', token);
          const data = await api('GET', `v1/sessions?${q}`);
          for (const x of Array.isArray(data.sessions) ? data.sessions : []) {
            // A sub-agent's wait is its parent's too: the parent is listed.
            if (x && x.session_id && !x.parent_session_id && !all.some((o) => o.session_id === x.session_id)) all.push(x);
          }
          token = data.next_page_token || '';
          pages++;
        } while (token && pages < Math.min(want, INBOX_MAX_PAGES));
        // A session the open session's events just added stays until
        // the list catches up with it (or ten seconds pass).
        const now = Date.now();
        const s = app.session;
        for (const x of inbox.sessions) {
          if (x.provisional > now && !all.some((o) => o.session_id === x.session_id) &&
            (x.fromFeed || (s && x.session_id === s.id && s.interrupts.size))) all.unshift(x);
        }
        inbox.sessions = all;
        inbox.next = token;
        inbox.pages = pages;
        inbox.error = '';
      } catch (err) {
        if (err.status === 401) return;
        inbox.error = `Could not load the sessions that need you: ${err.message}`;
        if (userAsked) toast(inbox.error, 'error');
      } finally {
        inbox.loadedAt = Date.now();
        inbox.running = null;
      }
      renderInbox();
    })();
    return inbox.running;
  }

  // inboxFromEvents keeps the Needs-you count live from the open
  // session's events: the session joins or leaves the list at once, and
  // the list is read again once the engine's visibility store has caught
  // up (it trails an event by a moment).
  function inboxFromEvents(s) {
    const kinds = [...new Set([...s.interrupts.values()].map((it) => (it.kind === 'question' ? 'question' : 'approval')))];
    const i = inbox.sessions.findIndex((x) => x.session_id === s.id);
    if (kinds.length && i < 0) inbox.sessions = [{ session_id: s.id, agent: s.agent, waiting_for: kinds, started_at: '', provisional: Date.now() + 10000 }, ...inbox.sessions];
    else if (!kinds.length && i >= 0) inbox.sessions = inbox.sessions.filter((x) => x.session_id !== s.id);
    renderInbox();
    clearTimeout(inbox.soon);
    inbox.soon = setTimeout(() => loadInbox(false), 1500);
  }

  // ---------------------------------------------------------------- change feed

  // The change feed (GET /v1/sessions/changes) says when any session the
  // token may see changes: the Needs-you count moves at once when a
  // session raises an interrupt, and the conversation list is read again
  // when a session starts, runs a turn, is renamed or ends, wherever that
  // happened (this page, another browser, the terminal chat, the CLI).
  // While it is connected, the lists are polled only now and then, as a
  // safety net.
  const changes = { live: false, abort: null, soonList: 0, laterList: 0, soonInbox: 0, laterInbox: 0 };
  const CHANGES_POLL_MS = 60000;

  function stopChanges() {
    if (changes.abort) changes.abort.abort();
    changes.abort = null;
    changes.live = false;
    document.body.dataset.changes = 'off';
  }

  // Reads the list again in a moment, and once more a little later: the
  // list comes from the engine's visibility store, which trails a change.
  function listSoon() {
    clearTimeout(changes.soonList); clearTimeout(changes.laterList);
    changes.soonList = setTimeout(loadConversations, 700);
    changes.laterList = setTimeout(loadConversations, 3000);
  }

  function inboxSoon() {
    clearTimeout(changes.soonInbox); clearTimeout(changes.laterInbox);
    changes.soonInbox = setTimeout(() => loadInbox(false), 700);
    changes.laterInbox = setTimeout(() => loadInbox(false), 3000);
  }

  function applyChange(c) {
    const open = app.session && app.session.id === c.session_id;
    switch (c.type) {
      case DEX_CHANGES.RESYNC:
        loadConversations(); loadInbox(false);
        return;
      case DEX_EVENTS.INTERRUPT_RAISED:
        // Needs you now, before the list can show it; the open session
        // counts from its own events (inboxFromEvents).
        if (!open && !inbox.sessions.some((x) => x.session_id === c.session_id)) {
          inbox.sessions = [{ session_id: c.session_id, waiting_for: [], started_at: '', provisional: Date.now() + 10000, fromFeed: true }, ...inbox.sessions];
          renderInbox();
        }
        inboxSoon(); listSoon();
        return;
      case DEX_EVENTS.INTERRUPT_RESOLVED:
        // One of its interrupts is answered: it may wait on others, so
        // the list says; a session only this feed added leaves at once.
        inbox.sessions = inbox.sessions.filter((x) => !(x.fromFeed && x.session_id === c.session_id));
        renderInbox();
        inboxSoon(); listSoon();
        return;
      case DEX_CHANGES.SESSION_ENDED:
        inbox.sessions = inbox.sessions.filter((x) => x.session_id !== c.session_id);
        renderInbox();
        inboxSoon(); listSoon();
        if (open) reloadNow(app.session);
        return;
      default:
        listSoon();
    }
  }

  async function followChanges() {
    stopChanges();
    if (document.hidden) return; // it starts when the tab shows
    const ctrl = new AbortController();
    changes.abort = ctrl;
    let backoff = 1000;
    while (app.token && !ctrl.signal.aborted) {
      const conn = new AbortController();
      const stop = () => conn.abort();
      ctrl.signal.addEventListener('abort', stop, { once: true });
      let watchdog = 0;
      const pet = () => { clearTimeout(watchdog); watchdog = setTimeout(stop, KEEPALIVE_TIMEOUT_MS); };
      try {
        pet();
        const res = await fetch(apiURL('/v1/sessions/changes'), { headers: { Accept: 'text/event-stream', ...authHeaders() }, cache: 'no-store', credentials: 'same-origin', signal: conn.signal });
        if (res.status === 401) return;
        if (!res.ok || !res.body) throw new APIError(res.status, '', `changes: HTTP ${res.status}`);
        changes.live = true;
        document.body.dataset.changes = 'live';
        backoff = 1000;
        // What changed while the feed was away.
        loadConversations(); loadInbox(false);
        await readSSE(res.body, conn.signal, {
          activity: pet,
          event(_id, data) {
            let c;
            try { c = JSON.parse(data); } catch { return; }
            if (c && typeof c.type === 'string') applyChange(c);
          },
          retry() {},
        });
      } catch (err) {
        // Reconnect below.
      } finally {
        clearTimeout(watchdog);
        ctrl.signal.removeEventListener('abort', stop);
        changes.live = false;
        document.body.dataset.changes = 'off';
      }
      if (ctrl.signal.aborted) return;
      await sleep(Math.round(backoff * (0.8 + Math.random() * 0.4)), ctrl.signal).catch(() => {});
      backoff = Math.min(backoff * 2, 30000);
    }
  }

  function renderInbox() {
    const n = inbox.sessions.length;
    const count = $('inbox-count');
    count.hidden = n === 0;
    const countText = inbox.next ? `${n}+` : String(n);
    if (count.textContent !== countText) count.textContent = countText;
    count.setAttribute('aria-label', `${countText} ${n === 1 ? 'session waits' : 'sessions wait'} for you`);
    $('inbox-error').textContent = inbox.error;
    $('inbox-updated').textContent = inbox.loadedAt
      ? `Updated ${new Date(inbox.loadedAt).toLocaleTimeString(undefined, { hour: '2-digit', minute: '2-digit', second: '2-digit' })}` : '';
    $('inbox-empty').hidden = n > 0 || !!inbox.error || !inbox.loadedAt;
    $('inbox-more').hidden = !inbox.next || inbox.pages >= INBOX_MAX_PAGES;
    const titles = new Map(recentSessions().map((r) => [r.id, r.title]));
    const rows = inbox.sessions.map((x) => {
      const started = Date.parse(x.started_at);
      return {
        id: x.session_id, agent: x.agent || x.flow_type || '', title: titles.get(x.session_id) || '',
        waiting: (x.waiting_for || []).filter((w) => w === 'approval' || w === 'question'),
        asks: (x.pending || []).map((p) => p.kind === 'question' ? (p.question || 'A question') : (p.approval_text || `Approve ${p.tool_name}`)),
        pending: x.pending || [],
        started: Number.isNaN(started) ? '' : relativeTime(started - Date.now()),
      };
    });
    const list = $('inbox-list');
    const sig = JSON.stringify([rows, app.session && app.session.id, [...inbox.busy]]);
    if (list.dataset.sig === sig) return;
    list.dataset.sig = sig;
    list.replaceChildren(...rows.map((r) => el('li', { class: 'inbox-item', 'data-testid': 'inbox-item', 'data-session-id': r.id, 'data-waiting-for': r.waiting.join(' ') },
      inboxActions(r),
      el('a', {
        class: 'inbox-open', href: `?session=${encodeURIComponent(r.id)}`,
        onclick: (e) => { e.preventDefault(); navigate(r.id, r.agent); },
      },
      el('span', { class: 'inbox-icon', 'aria-hidden': 'true' }, icon(r.waiting.includes('approval') ? ICONS.shield : ICONS.clock)),
      el('span', { class: 'inbox-main' },
        el('span', { class: 'inbox-title', text: r.title ? oneLine(r.title, 80) : r.agent || r.id }),
        ...r.asks.map((a) => el('span', { class: 'inbox-pending', 'data-testid': 'inbox-pending', text: oneLine(a, 120) })),
        el('span', { class: 'inbox-meta' },
          el('span', { text: [r.title ? r.agent : '', r.started ? `started ${r.started}` : ''].filter(Boolean).join(' · ') }),
          el('code', { class: 'inbox-id', text: r.id }))),
      el('span', { class: 'inbox-chips' }, ...r.waiting.map((w) => el('span', { class: `wait-chip wait-${w}`, 'data-testid': 'inbox-waiting', text: WAITING_LABEL[w] || w })))))));
  }

  // inboxActions answers a row's approvals and questions with choices in
  // place: Approve and Reject, or a button per choice and Decline. A
  // free-text question is answered in its session.
  function inboxActions(r) {
    const boxes = r.pending.filter((p) => p.kind !== 'question' || (p.choices || []).length).map((p) => {
      const key = `${r.id}/${p.holder_session_id || ''}/${p.interrupt_id}`;
      const busy = inbox.busy.has(key);
      const act = (body, path) => inboxAnswer(r.id, p, key, path, body);
      const buttons = p.kind === 'question'
        ? [...(p.choices || []).map((c) => el('button', { type: 'button', class: 'button', 'data-testid': 'inbox-choice', disabled: busy,
          onclick: () => act({ answer: c }, 'questions') }, c)),
        el('button', { type: 'button', class: 'button ghost', 'data-testid': 'inbox-decline', disabled: busy, onclick: () => act({ decline: true }, 'questions') }, 'Decline')]
        : [el('button', { type: 'button', class: 'button success', 'data-testid': 'inbox-approve', disabled: busy,
          onclick: () => act({ approved: true, digest: p.digest || undefined }, 'interrupts') }, icon(ICONS.check), 'Approve'),
        el('button', { type: 'button', class: 'button danger-outline', 'data-testid': 'inbox-reject', disabled: busy,
          onclick: () => act({ approved: false, digest: p.digest || undefined }, 'interrupts') }, icon(ICONS.x), 'Reject')];
      return el('div', { class: 'inbox-act', 'data-testid': 'inbox-act', 'data-interrupt-id': p.interrupt_id },
        el('span', { class: 'inbox-act-text', text: oneLine(p.kind === 'question' ? p.question || 'A question' : p.approval_text || `Approve ${p.tool_name}`, 120) }),
        el('span', { class: 'inbox-act-buttons' }, ...buttons));
    });
    return boxes.length ? el('div', { class: 'inbox-actions' }, ...boxes) : '';
  }

  async function inboxAnswer(sessionID, p, key, path, body) {
    inbox.busy.add(key);
    renderInbox();
    try {
      if (p.holder_session_id) body.session_id = p.holder_session_id;
      const res = await api('POST', sessionPath(sessionID, `/${path}/${encodeURIComponent(p.interrupt_id)}`), body);
      if (res.resolved === false || res.answered === false) toast(res.reason ? `Not answered: ${res.reason}.` : 'It is no longer pending.', 'info');
      else toast(body.approved === true ? 'Approved.' : body.approved === false ? 'Rejected.' : 'Answered.', 'info');
      for (const x of inbox.sessions) if (x.session_id === sessionID) x.pending = (x.pending || []).filter((q) => q !== p);
    } catch (err) {
      if (err.status !== 401) toast(`Could not answer: ${err.message}`, 'error');
    } finally {
      inbox.busy.delete(key);
      renderInbox();
      loadInbox(false);
    }
  }

  // ---------------------------------------------------------------- routing

  function navigate(id, agent, view) {
    const url = new URL(location.href);
    if (id) url.searchParams.set('session', id); else url.searchParams.delete('session');
    if (view && !id) url.searchParams.set('view', view); else url.searchParams.delete('view');
    url.hash = '';
    if (url.toString() !== location.href) history.pushState(null, '', url.pathname + url.search);
    closeSidebar();
    route(agent);
  }

  function route(agentHint) {
    if (!app.token) { showView('signin'); return; }
    const params = new URL(location.href).searchParams;
    const id = params.get('session');
    if (!id && params.get('view') === 'report') {
      closeSession();
      showView('report');
      document.title = 'Eval report · Dex Agents';
      return;
    }
    if (!id && params.get('view') === 'inbox') {
      closeSession();
      showView('inbox');
      renderRecent();
      document.title = 'Needs you · Dex Agents';
      loadInbox(false);
      return;
    }
    if (!id) {
      closeSession();
      showView('start');
      renderRecent();
      document.title = 'Dex Agents';
      if (!$('agent-select').value) $('agent-select').focus(); else $('start-message').focus();
      return;
    }
    if (app.session && app.session.id === id) { showView('session'); return; }
    openSession(id, agentHint);
  }

  // ---------------------------------------------------------------- session

  function closeSession() {
    const s = app.session;
    if (!s) return;
    s.abort.abort();
    clearTimeout(s.reload.timer);
    app.session = null;
    rendered.clear();
    $('messages').replaceChildren();
    $('stop-button').hidden = true;
    $('steer-button').hidden = true;
    $('branch-picker-wrap').hidden = true;
  }

  async function openSession(id, agentHint) {
    closeSession();
    const s = newSession(id, agentHint);
    app.session = s;
    rendered.clear();
    $('messages').replaceChildren();
    $('session-title').textContent = agentHint || 'Session';
    $('session-id').textContent = id;
    $('usage').textContent = '';
    $('session-status').textContent = '';
    $('session-status').dataset.status = '';
    $('error-banner').hidden = true;
    $('plan-panel').hidden = true;
    $('plan-tasks').replaceChildren();
    $('plan-tasks').dataset.sig = '';
    setPlanMode(false);
    $('transcript-loading').hidden = false;
    showView('session');
    renderRecent();
    setConnection('connecting');
    try {
      await loadSnapshot(s, true);
    } catch (err) {
      if (app.session !== s) return;
      $('transcript-loading').hidden = true;
      if (err.status === 401) return;
      if (err.status === 404 || err.status === 403) {
        toast(err.status === 404 ? `Session ${id} was not found.` : `This token may not open session ${id}.`, 'error');
        navigate('');
        return;
      }
      toast(`Could not load the session: ${err.message}`, 'error');
    }
    if (app.session !== s) return;
    rememberSession(id, s.agent);
    $('message-input').focus();
    streamEvents(s);
    loadBranches(s);
  }

  // loadSnapshot fetches the snapshot and merges it. With resetStream, the
  // stream restarts from the snapshot's resume token and live text is
  // dropped (the token replays the active turn, which rebuilds it).
  async function loadSnapshot(s, resetStream) {
    const asked = Date.now();
    const data = await api('GET', sessionPath(s.id, '/snapshot'));
    if (app.session !== s) return;
    const snap = data.snapshot || {};
    // An ended session (closed, terminated) is read-only: its snapshot is
    // its state when it ended.
    s.ended = data.ended || '';
    if (resetStream) {
      s.live.clear();
      s.tools.clear();
      s.lastEventId = data.resume_token || '';
    }
    applySnapshot(s, snap, asked);
  }

  // applySnapshot merges a snapshot read from asked on (ms): an interrupt
  // an event raised after that is kept, as the snapshot may predate it.
  function applySnapshot(s, snap, asked) {
    s.snapshot = snap;
    if (snap.agent) s.agent = snap.agent;
    s.loadError = null;
    // Usage: keep whichever is newer (events can run ahead of a snapshot).
    if (snap.usage && (!s.usage || usageRank(snap.usage) >= usageRank(s.usage))) s.usage = snap.usage;
    for (const c of snap.tool_calls || []) mergeRecord(s, c);
    const newer = [...s.interrupts.values()].filter((it) => it.seenAt && asked && it.seenAt > asked);
    s.interrupts.clear();
    for (const it of newer) if (!s.resolved.has(it.interrupt_id)) s.interrupts.set(it.interrupt_id, it);
    s.childInterrupts = [];
    for (const it of snap.pending_interrupts || []) {
      if (s.ended) continue;
      // A sub-agent's interrupt shows in its card, answered through this
      // session (the server routes it to the child).
      if (it.session_id && it.session_id !== s.id) { s.childInterrupts.push(it); continue; }
      if (!s.resolved.has(it.interrupt_id)) s.interrupts.set(it.interrupt_id, it);
    }
    // Replace the live text of finished turns with the stored messages.
    const st = snap.state || {};
    const active = st.active_turn_id || '';
    if (s.stopping && s.stopping !== active) s.stopping = '';
    const queuedIDs = new Set((snap.queued_messages || []).map((q) => q.message_id));
    for (const id of s.queuedBusy.keys()) if (!queuedIDs.has(id)) s.queuedBusy.delete(id);
    const storedTurns = new Set((snap.messages || []).map((m) => m.turn_id).filter(Boolean));
    for (const [turnID, lt] of s.live) {
      if (turnID !== active && (lt.finished || storedTurns.has(turnID))) s.live.delete(turnID);
    }
    // Drop optimistic messages the server now has.
    if (s.sending.length) {
      const texts = new Set([
        ...(snap.messages || []).filter((m) => m.role === 'user').map((m) => m.text),
        ...(snap.queued_messages || []).map((m) => m.text),
        ...(snap.steered_messages || []).map((m) => m.text),
      ]);
      s.sending = s.sending.filter((m) => !m.acked || !texts.has(m.text));
    }
    $('transcript-loading').hidden = true;
    scheduleRender();
  }

  function usageRank(u) { return (Number(u.model_calls) || 0) * 1e12 + (Number(u.total_tokens) || 0); }

  // scheduleReload reloads the snapshot soon, coalescing bursts of events.
  function scheduleReload(s, delay) {
    if (!s || app.session !== s) return;
    clearTimeout(s.reload.timer);
    s.reload.timer = setTimeout(() => reloadNow(s), delay === undefined ? 60 : delay);
  }

  async function reloadNow(s) {
    if (s.reload.running) { s.reload.again = true; return s.reload.running; }
    s.reload.running = (async () => {
      try {
        do {
          s.reload.again = false;
          try { await loadSnapshot(s, false); } catch (err) {
            if (err.status !== 401 && app.session === s) console.warn('snapshot reload failed:', err.message);
          }
        } while (s.reload.again && app.session === s);
      } finally { s.reload.running = null; }
    })();
    return s.reload.running;
  }

  // ---------------------------------------------------------------- events (SSE over fetch)

  const KEEPALIVE_TIMEOUT_MS = 75000;

  async function streamEvents(s) {
    let backoff = 500;
    let retryOverride = 0;
    let reloadedFor400 = 0;
    let emptyEnds = 0;
    while (app.session === s && !s.abort.signal.aborted && !s.ended) {
      const ctrl = new AbortController();
      const stop = () => ctrl.abort();
      s.abort.signal.addEventListener('abort', stop, { once: true });
      let watchdog = 0;
      const pet = () => { clearTimeout(watchdog); watchdog = setTimeout(stop, KEEPALIVE_TIMEOUT_MS); };
      let gotEvent = false;
      let mustReset = false;
      try {
        const headers = { Accept: 'text/event-stream', ...authHeaders() };
        if (s.lastEventId) headers['Last-Event-ID'] = s.lastEventId;
        pet();
        const res = await fetch(apiURL(sessionPath(s.id, '/events?sub_agents=true')), { headers, cache: 'no-store', credentials: 'same-origin', signal: ctrl.signal });
        if (res.status === 400) {
          // The resume token is no longer valid: reload the snapshot and
          // reopen from its token.
          res.body && res.body.cancel().catch(() => {});
          if (++reloadedFor400 > 1) await sleep(Math.min(backoff *= 2, 15000), s.abort.signal);
          await loadSnapshot(s, true);
          continue;
        }
        if (res.status === 401) { signOut('That token was not accepted. Paste a valid API token.'); return; }
        if (!res.ok || !res.body) throw new APIError(res.status, '', `events: HTTP ${res.status}`);
        setConnection('live');
        await readSSE(res.body, ctrl.signal, {
          activity: pet,
          event(id, data) {
            if (id !== null) s.lastEventId = id;
            if (!data) return;
            let ev;
            try { ev = JSON.parse(data); } catch { return; }
            gotEvent = true;
            applyEvent(s, ev);
          },
          retry(ms) { retryOverride = ms; },
          comment(text) { if (/reload the snapshot/i.test(text)) mustReset = true; },
        });
        // The server ended the stream: reconnect. An end without any event
        // twice in a row, or one that says so, means the position is lost
        // (trimmed): start again from a new snapshot.
        if (!gotEvent) emptyEnds++;
        if (mustReset || emptyEnds >= 2) {
          emptyEnds = 0;
          await loadSnapshot(s, true).catch(() => {});
        }
      } catch (err) {
        if (s.abort.signal.aborted || app.session !== s) return;
        if (err && err.status === 401) return;
      } finally {
        clearTimeout(watchdog);
        s.abort.signal.removeEventListener('abort', stop);
      }
      if (s.abort.signal.aborted || app.session !== s) return;
      if (gotEvent) { backoff = 500; reloadedFor400 = 0; emptyEnds = 0; }
      const wait = Math.round((retryOverride || backoff) * (0.8 + Math.random() * 0.4));
      backoff = Math.min(backoff * 2, 15000);
      await countdown(s, wait);
      // After a gap, refresh the snapshot; the stream continues from the
      // last event ID.
      if (app.session === s && !s.abort.signal.aborted) reloadNow(s);
    }
  }

  async function countdown(s, ms) {
    const end = Date.now() + ms;
    while (!s.abort.signal.aborted && Date.now() < end) {
      const left = Math.ceil((end - Date.now()) / 1000);
      setConnection('reconnecting', left > 1 ? `Reconnecting in ${left} s…` : 'Reconnecting…');
      await sleep(Math.min(1000, end - Date.now()), s.abort.signal);
    }
    if (!s.abort.signal.aborted) setConnection('reconnecting', 'Reconnecting…');
  }

  // readSSE parses a text/event-stream body as the HTML standard describes:
  // lines end with CRLF, LF or CR; a blank line dispatches the event; lines
  // starting with ':' are comments; fields are id, data, event and retry.
  async function readSSE(body, signal, on) {
    const reader = body.getReader();
    const decoder = new TextDecoder('utf-8');
    let buf = '';
    let first = true;
    let data = [];
    let idBuf = null;
    let hasField = false;
    const onAbort = () => reader.cancel().catch(() => {});
    signal.addEventListener('abort', onAbort, { once: true });
    const line = (l) => {
      if (l === '') {
        if (hasField) on.event(idBuf, data.length ? data.join('\n') : '');
        data = []; idBuf = null; hasField = false;
        return;
      }
      if (l[0] === ':') { if (on.comment) on.comment(l.slice(1).trim()); return; } // keep-alive and notes
      const i = l.indexOf(':');
      const field = i < 0 ? l : l.slice(0, i);
      let value = i < 0 ? '' : l.slice(i + 1);
      if (value[0] === ' ') value = value.slice(1);
      switch (field) {
        case 'data': data.push(value); hasField = true; break;
        case 'id': if (!value.includes('\0')) { idBuf = value; hasField = true; } break;
        case 'retry': if (/^\d+$/.test(value)) on.retry(Number(value)); break;
        default: break; // 'event' and unknown fields: the JSON carries the type
      }
    };
    try {
      for (;;) {
        const { value, done } = await reader.read();
        if (done) break;
        on.activity();
        buf += decoder.decode(value, { stream: true });
        if (first && buf.length) { if (buf[0] === '\uFEFF') buf = buf.slice(1); first = false; }
        let start = 0;
        for (let i = 0; i < buf.length; i++) {
          const c = buf[i];
          if (c !== '\n' && c !== '\r') continue;
          if (c === '\r' && i === buf.length - 1) break; // maybe CRLF split across chunks
          line(buf.slice(start, i));
          if (c === '\r' && buf[i + 1] === '\n') i++;
          start = i + 1;
        }
        buf = buf.slice(start);
      }
    } finally {
      signal.removeEventListener('abort', onAbort);
    }
  }

  // ---------------------------------------------------------------- event rules

  const STATUS_RANK = {
    deferred: 0, awaiting_approval: 1, awaiting_answer: 1, waiting_for_timer: 1,
    // A tool task starts when the call's Step ran: it follows running.
    approved: 2, running: 3, waiting_for_task: 3.2, completed: 3.5,
    succeeded: 4, failed: 4, rejected: 4, outcome_unknown: 4,
  };
  const rank = (st) => (st in STATUS_RANK ? STATUS_RANK[st] : -1);

  function liveTurn(s, turnID) {
    let lt = s.live.get(turnID);
    if (!lt) {
      lt = { id: turnID, started: false, finished: false, order: [], steps: new Map(), tools: new Set() };
      s.live.set(turnID, lt);
    }
    return lt;
  }

  // step returns the live text of (turn, step execution) for this attempt:
  // a higher attempt restarts the text; a lower attempt's text is dropped.
  function step(lt, stepID, attempt) {
    const key = stepID || '-';
    const n = Number(attempt) || 0;
    let st = lt.steps.get(key);
    if (!st) {
      st = { key, attempt: n, text: '', reasoning: '' };
      lt.steps.set(key, st);
      lt.order.push({ kind: 'text', key });
      return st;
    }
    if (n > st.attempt) { st.attempt = n; st.text = ''; st.reasoning = ''; return st; }
    if (n < st.attempt) return null;
    return st;
  }

  function noteTool(s, lt, id, patch) {
    if (!id) return;
    const t = s.tools.get(id) || { tool_call_id: id, status: '' };
    for (const [k, v] of Object.entries(patch)) {
      if (v === undefined || v === null) continue;
      if (k === 'status') { if (rank(v) >= rank(t.status)) t.status = v; } else t[k] = v;
    }
    s.tools.set(id, t);
    if (lt && !t.turn) t.turn = lt.id;
    if (lt && !lt.tools.has(id)) { lt.tools.add(id); lt.order.push({ kind: 'tool', id }); }
  }

  function applyEvent(s, ev) {
    if (!ev || typeof ev !== 'object') return;
    let p = {};
    if (typeof ev.payload === 'string') { try { p = ev.payload ? JSON.parse(ev.payload) : {}; } catch { p = {}; } }
    else if (ev.payload && typeof ev.payload === 'object') p = ev.payload;
    if (ev.session_id && ev.session_id !== s.id) { applyChildEvent(s, ev, p); return; }
    const turnID = ev.turn_id || '';
    const active = s.snapshot && s.snapshot.state ? s.snapshot.state.active_turn_id || '' : '';
    const lt = turnID ? liveTurn(s, turnID) : null;
    switch (ev.type) {
      case DEX_EVENTS.TURN_STARTED:
        if (lt) lt.started = true;
        if (turnID !== active) scheduleReload(s); // shows the turn's user message
        break;
      case DEX_EVENTS.TURN_COMPLETED: case DEX_EVENTS.TURN_FAILED: case DEX_EVENTS.TURN_STEERED: case DEX_EVENTS.TURN_CANCELLED:
        if (lt) lt.finished = true;
        if (ev.type === DEX_EVENTS.TURN_STEERED || ev.type === DEX_EVENTS.TURN_CANCELLED) addNote(s, turnID, ev.type, p);
        if (s.stopping === turnID) s.stopping = '';
        scheduleReload(s, 0);
        break;
      case DEX_EVENTS.TEXT_DELTA: case DEX_EVENTS.REASONING_DELTA: {
        if (!lt || typeof p.text !== 'string') break;
        const st = step(lt, ev.step_execution_id, ev.attempt);
        if (!st) break;
        if (ev.type === DEX_EVENTS.TEXT_DELTA) st.text += p.text; else st.reasoning += p.text;
        break;
      }
      case DEX_EVENTS.TOOL_CALL_DEFERRED:
        noteTool(s, lt, p.tool_call_id, { tool_name: p.tool_name, effect: p.effect, requires_approval: p.requires_approval, status: 'deferred' });
        scheduleReload(s); // the arguments are in the snapshot
        break;
      case DEX_EVENTS.TOOL_CALL_STARTED:
        noteTool(s, lt, p.tool_call_id, { tool_name: p.tool_name, status: 'running' });
        break;
      case DEX_EVENTS.TOOL_CALL_FINISHED:
        noteTool(s, lt, p.tool_call_id, { tool_name: p.tool_name, status: p.status || 'succeeded' });
        scheduleReload(s); // the output is in the snapshot
        break;
      case DEX_EVENTS.INTERRUPT_RAISED:
        if (p.interrupt_id && !s.resolved.has(p.interrupt_id)) s.interrupts.set(p.interrupt_id, { ...p, seenAt: Date.now() });
        inboxFromEvents(s);
        if (p.kind === 'approval' || !p.kind) noteTool(s, lt, p.tool_call_id, { tool_name: p.tool_name, status: 'awaiting_approval' });
        if (p.kind === 'question') noteTool(s, lt, p.tool_call_id, { tool_name: p.tool_name, status: 'awaiting_answer' });
        scheduleReload(s);
        break;
      case DEX_EVENTS.INTERRUPT_EXTENDED: {
        const it = s.interrupts.get(p.interrupt_id);
        if (it && p.deadline) { it.deadline = p.deadline; scheduleRender(); }
        scheduleReload(s);
        break;
      }
      case DEX_EVENTS.INTERRUPT_RESOLVED: {
        const it = s.interrupts.get(p.interrupt_id);
        s.resolved.add(p.interrupt_id);
        s.interrupts.delete(p.interrupt_id);
        inboxFromEvents(s);
        const callID = (it && it.tool_call_id) || p.interrupt_id;
        if (p.cancellation_reason) {
          // A steer or a Stop removed it: the call did not run.
          noteTool(s, null, callID, { status: 'rejected', cancellation_reason: p.cancellation_reason });
          const u = uiState(callID);
          u.rejecting = false;
          u.busy = '';
        } else if (p.kind === 'approval' || !p.kind) {
          noteTool(s, null, callID, { status: p.approved ? 'approved' : 'rejected', rejection_message: p.rejection_message || undefined });
        }
        scheduleReload(s);
        break;
      }
      case DEX_EVENTS.USAGE_RECORDED:
        if (p.session) s.usage = p.session;
        break;
      case DEX_EVENTS.PLAN_UPDATED: case DEX_EVENTS.PLAN_EXECUTION_STARTED:
        // The event names the revision; the tasks are in the snapshot.
        scheduleReload(s, 0);
        break;
      case DEX_EVENTS.TOOL_TASK_STARTED:
        noteTool(s, lt, p.tool_call_id, { tool_name: p.tool_name, status: 'waiting_for_task', task_id: p.task_id });
        scheduleReload(s);
        break;
      default:
        break; // custom (dotted) and other events: nothing to show
    }
    scheduleRender();
  }

  // childOf returns the child session of this one that session belongs to:
  // itself, or a session below it (its ID starts with the child's).
  function childOf(s, session) {
    for (const id of s.children.keys()) if (session === id || session.startsWith(`${id}.sub-`)) return id;
    const m = session.slice(s.id.length).match(/^\.sub-\d+/);
    return session.startsWith(s.id) && m ? s.id + m[0] : '';
  }

  function childView(s, id) {
    let c = s.children.get(id);
    if (!c) { c = { id, text: '', step: '', attempt: 0, tools: new Map(), status: 'running' }; s.children.set(id, c); }
    return c;
  }

  // applyChildEvent folds a sub-agent's event (in this session's stream)
  // into its card: its text, its tool calls, and what it waits on (the
  // snapshot lists that; it is reloaded).
  function applyChildEvent(s, ev, p) {
    const id = childOf(s, ev.session_id);
    if (!id) return;
    const c = childView(s, id);
    const own = ev.session_id === id;
    switch (ev.type) {
      case DEX_EVENTS.TEXT_DELTA:
        if (!own || typeof p.text !== 'string') break;
        if (ev.step_execution_id !== c.step || (Number(ev.attempt) || 0) > c.attempt) { c.step = ev.step_execution_id; c.attempt = Number(ev.attempt) || 0; c.text = ''; }
        else if ((Number(ev.attempt) || 0) < c.attempt) break;
        c.text = (c.text + p.text).slice(-4000);
        break;
      case DEX_EVENTS.TOOL_CALL_DEFERRED: case DEX_EVENTS.TOOL_CALL_STARTED: case DEX_EVENTS.TOOL_CALL_FINISHED: {
        if (!own || !p.tool_call_id) break;
        const t = c.tools.get(p.tool_call_id) || { tool_call_id: p.tool_call_id, tool_name: p.tool_name, status: '' };
        const next = ev.type === DEX_EVENTS.TOOL_CALL_DEFERRED ? 'deferred' : ev.type === DEX_EVENTS.TOOL_CALL_STARTED ? 'running' : p.status || 'succeeded';
        if (rank(next) >= rank(t.status)) t.status = next;
        if (p.tool_name) t.tool_name = p.tool_name;
        c.tools.set(p.tool_call_id, t);
        break;
      }
      case DEX_EVENTS.INTERRUPT_RAISED: case DEX_EVENTS.INTERRUPT_RESOLVED:
        if (own && p.tool_call_id && ev.type === DEX_EVENTS.INTERRUPT_RAISED) {
          const t = c.tools.get(p.tool_call_id) || { tool_call_id: p.tool_call_id, tool_name: p.tool_name, status: '' };
          t.status = p.kind === 'question' ? 'awaiting_answer' : 'awaiting_approval';
          c.tools.set(p.tool_call_id, t);
        }
        // The parent lists it once it heard from the child: read it twice.
        scheduleReload(s, 150);
        setTimeout(() => scheduleReload(s), 1200);
        break;
      case DEX_EVENTS.TURN_COMPLETED: case DEX_EVENTS.TURN_FAILED: case DEX_EVENTS.TURN_CANCELLED:
        if (own) scheduleReload(s, 150);
        break;
      default:
        return;
    }
    scheduleRender();
  }

  // ---------------------------------------------------------------- actions

  // sendMessage sends the composer's text: queued (Send; it waits for the
  // running turn to end) or, with mode 'steer', steered (the running turn
  // ends at its next safe step and the next turn starts with it).
  async function sendMessage(e, mode) {
    if (e) e.preventDefault();
    const s = app.session;
    const input = $('message-input');
    const text = input.value.trim();
    if (!s || !text) return;
    const steer = mode === 'steer';
    const planMode = $('plan-mode').checked;
    const pending = { key: `p${randomID()}`, text, acked: false, mode: steer ? 'steer' : 'queue' };
    s.sending.push(pending);
    input.value = '';
    autoGrow();
    updateSendButton();
    scheduleRender(true);
    try {
      const body = planMode ? { text, plan_mode: true } : { text };
      const res = await api('POST', sessionPath(s.id, steer ? '/steer' : '/messages'), body);
      if (res.accepted === false) {
        s.sending = s.sending.filter((m) => m !== pending);
        toast(planMode ? 'The planning message was not accepted: plan mode may be off for this agent.'
          : steer ? 'The turn could not be steered: it may have ended, or the session was started by an older worker.' : 'The message was not accepted.', 'error');
        if (!input.value) { input.value = text; autoGrow(); updateSendButton(); }
      } else {
        pending.acked = true;
        if (planMode) setPlanMode(false); // plan mode is per message; a message to a draft revises it anyway
        // Normally the next snapshot shows it; never leave a ghost behind.
        setTimeout(() => { s.sending = s.sending.filter((m) => m !== pending); scheduleRender(); }, 8000);
        if (!(recentSessions().find((r) => r.id === s.id) || {}).title) rememberSession(s.id, s.agent, text);
      }
      await reloadNow(s);
    } catch (err) {
      s.sending = s.sending.filter((m) => m !== pending);
      if (err.code === 'session_closed') {
        toast(err.message, 'info');
        if (!input.value) { input.value = text; autoGrow(); updateSendButton(); }
        await reloadNow(s);
      } else if (err.status !== 401) {
        toast(`Could not ${steer ? 'steer with' : 'send'} the message: ${err.message}`, 'error');
        if (!input.value) { input.value = text; autoGrow(); updateSendButton(); }
      }
    }
    scheduleRender();
  }

  // activeTurn is the running turn that Stop and Steer act on, or ''.
  function activeTurn(s) {
    const st = (s && s.snapshot && s.snapshot.state) || {};
    if (!st.active_turn_id || st.accepts_turn_control === false || st.closed) return '';
    return st.active_turn_id;
  }

  // stopTurn cancels the running turn (cancel_turn): a running model call
  // stops, every wait is cancelled, and no new turn starts for it.
  async function stopTurn(s) {
    const turn = activeTurn(s);
    if (!turn || s.stopping === turn) return;
    s.stopping = turn;
    scheduleRender();
    try {
      const res = await api('POST', sessionPath(s.id, '/cancel'), { turn_id: turn });
      if (res.accepted === false) {
        s.stopping = '';
        toast('This turn can no longer be stopped: it has ended.', 'info');
      }
    } catch (err) {
      s.stopping = '';
      if (err.status !== 401) toast(`Could not stop the turn: ${err.message}`, 'error');
    } finally {
      scheduleReload(s, 0);
      scheduleRender();
    }
  }

  // steerQueued steers the running turn with a queued message (by its
  // ID); deleteQueued takes a queued message back.
  async function steerQueued(s, q) {
    if (s.queuedBusy.has(q.message_id)) return;
    s.queuedBusy.set(q.message_id, 'steering');
    scheduleRender();
    try {
      const res = await api('POST', sessionPath(s.id, '/steer'), { message_id: q.message_id });
      if (res.accepted === false) {
        s.queuedBusy.delete(q.message_id);
        toast('That message is no longer queued, or no turn runs to steer.', 'info');
      }
    } catch (err) {
      s.queuedBusy.delete(q.message_id);
      if (err.status !== 401) toast(`Could not steer with the message: ${err.message}. The page reloaded the session; choose again.`, 'error');
    } finally {
      await reloadNow(s);
      scheduleRender();
    }
  }

  async function deleteQueued(s, q) {
    if (s.queuedBusy.has(q.message_id)) return;
    s.queuedBusy.set(q.message_id, 'deleting');
    scheduleRender();
    try {
      const res = await api('DELETE', sessionPath(s.id, `/queued/${encodeURIComponent(q.message_id)}`));
      if (res.deleted === false) {
        s.queuedBusy.delete(q.message_id);
        toast('That message is no longer queued: the session has taken it.', 'info');
      } else {
        toast('Queued message deleted.', 'info');
      }
    } catch (err) {
      s.queuedBusy.delete(q.message_id);
      if (err.status !== 401) toast(`Could not delete the message: ${err.message}`, 'error');
    } finally {
      await reloadNow(s);
      scheduleRender();
    }
  }

  // executePlan runs the plan's current revision (execute_plan).
  async function executePlan(s) {
    const p = s.snapshot && s.snapshot.plan;
    if (!p || s.executingPlan) return;
    s.executingPlan = true;
    scheduleRender();
    try {
      const res = await api('POST', sessionPath(s.id, '/plan/execute'), { revision: p.revision });
      await reloadNow(s);
      if (res.executed === false) toast(`Plan revision ${p.revision} did not run: ${planRefusal(s.snapshot || {}, p.revision)}.`, 'info');
    } catch (err) {
      if (err.status !== 401) toast(`Could not execute the plan: ${err.message}`, 'error');
    } finally {
      s.executingPlan = false;
      scheduleRender();
    }
  }

  // planRefusal says why the session did not take execute_plan.
  function planRefusal(snap, revision) {
    const st = snap.state || {};
    const p = snap.plan;
    if (!p) return 'the session has no plan';
    if (st.active_turn_id && st.interaction_mode === 'executing') return 'the plan is executing already';
    if (st.active_turn_id) return 'a turn is running; try again once it ends';
    if (snap.queued_message_count || (snap.queued_messages || []).length) return 'messages are queued';
    if (p.revision !== revision) return `the plan changed (now revision ${p.revision})`;
    if (p.status !== 'draft' && p.status !== 'active') return `the plan is ${p.status}`;
    return 'plan mode may be off for this agent';
  }

  function setPlanMode(on) {
    $('plan-mode').checked = on;
    $('composer').classList.toggle('plan-mode', on);
    const s = app.session;
    const agent = s && s.agent;
    const placeholder = on ? 'Describe what to plan…' : agent ? `Message ${agent}…` : 'Send a message';
    if ($('message-input').placeholder !== placeholder) $('message-input').placeholder = placeholder;
  }

  async function resolveInterrupt(s, it, approved, reason) {
    const ui = uiState(it.tool_call_id);
    ui.busy = approved ? 'approving' : 'rejecting';
    scheduleRender();
    try {
      const body = { approved };
      if (!approved && reason) body.rejection_message = reason;
      // The digest binds the approval to the call shown (a 409 otherwise).
      if (it.digest) body.digest = it.digest;
      if (it.session_id && it.session_id !== s.id) body.session_id = it.session_id;
      const res = await api('POST', sessionPath(s.id, `/interrupts/${encodeURIComponent(it.interrupt_id)}`), body);
      if (res.resolved === false) {
        toast(res.reason ? `Not ${approved ? 'approved' : 'rejected'}: ${res.reason}.` : 'This request is no longer pending.', 'info');
      } else if (it.session_id && it.session_id !== s.id) {
        // A sub-agent's: its card shows the call going on.
        s.childInterrupts = s.childInterrupts.filter((x) => !(x.session_id === it.session_id && x.interrupt_id === it.interrupt_id));
      } else {
        s.resolved.add(it.interrupt_id);
        s.interrupts.delete(it.interrupt_id);
        noteTool(s, null, it.tool_call_id, { status: approved ? 'approved' : 'rejected', rejection_message: reason || undefined });
        ui.rejecting = false;
        ui.reason = '';
      }
    } catch (err) {
      if (err.status !== 401) toast(`Could not ${approved ? 'approve' : 'reject'}: ${err.message}`, 'error');
    } finally {
      ui.busy = '';
      scheduleReload(s, 0);
      scheduleRender();
    }
  }

  // answerQuestion answers a question (ask_user) with text, or declines it.
  async function answerQuestion(s, it, answer, decline) {
    const ui = uiState(it.tool_call_id);
    ui.busy = decline ? 'declining' : 'answering';
    scheduleRender();
    try {
      const body = decline ? { decline: true } : { answer };
      if (it.session_id && it.session_id !== s.id) body.session_id = it.session_id;
      const res = await api('POST', sessionPath(s.id, `/questions/${encodeURIComponent(it.interrupt_id)}`), body);
      if (res.answered === false) {
        const pending = ((s.snapshot && s.snapshot.pending_interrupts) || []).some((p) => p.interrupt_id === it.interrupt_id);
        const fallback = pending && !decline ? 'The answer was not taken: pick one of the choices.' : 'This question is no longer pending.';
        toast(res.reason ? `Not ${decline ? 'declined' : 'answered'}: ${res.reason}.` : fallback, 'info');
      } else if (it.session_id && it.session_id !== s.id) {
        s.childInterrupts = s.childInterrupts.filter((x) => !(x.session_id === it.session_id && x.interrupt_id === it.interrupt_id));
      } else {
        s.resolved.add(it.interrupt_id);
        s.interrupts.delete(it.interrupt_id);
        ui.answer = '';
      }
    } catch (err) {
      if (err.status !== 401) toast(`Could not ${decline ? 'decline' : 'answer'}: ${err.message}`, 'error');
    } finally {
      ui.busy = '';
      scheduleReload(s, 0);
      scheduleRender();
    }
  }

  // ---------------------------------------------------------------- rendering

  const rendered = new Map(); // item key -> element
  const ui = new Map();       // tool_call_id -> {rejecting, reason, busy, argsOpen}
  function uiState(id) {
    let u = ui.get(id);
    if (!u) { u = { rejecting: false, reason: '', busy: '' }; ui.set(id, u); }
    return u;
  }

  let renderQueued = false;
  let forceScroll = false;
  function scheduleRender(scrollToEnd) {
    if (scrollToEnd) forceScroll = true;
    if (renderQueued) return;
    renderQueued = true;
    requestAnimationFrame(() => { renderQueued = false; render(); });
  }

  // toolView merges a call's snapshot record with what events told.
  function toolView(s, id, message) {
    const snapCall = ((s.snapshot && s.snapshot.tool_calls) || []).find((c) => c.tool_call_id === id);
    const ev = s.tools.get(id);
    const rec = s.records.get(id);
    const v = { ...(rec || {}), ...(ev || {}), ...(snapCall || {}), tool_call_id: id };
    // The most advanced status wins: events can run ahead of a snapshot.
    let status = '';
    for (const c of [rec, snapCall, ev]) if (c && c.status && rank(c.status) > rank(status)) status = c.status;
    // A stored result without a known record: the call finished, how is not
    // in the browser snapshot.
    if (rank(status) < 4 && message) status = message.tool_status || 'completed';
    v.status = status || 'deferred';
    for (const k of ['display_text', 'arguments', 'effect', 'output', 'error', 'rejection_message', 'wait_until', 'task_id', 'task_poll_interval_seconds']) {
      if (!v[k]) for (const c of [snapCall, ev, rec]) if (c && c[k]) { v[k] = c[k]; break; }
    }
    v.tool_name = v.tool_name || (message && message.tool_name) || 'tool';
    if (rank(v.status) === 4 || v.status === 'completed') mergeRecord(s, { ...v, status: v.status === 'completed' ? '' : v.status });
    for (const it of s.interrupts.values()) {
      if (it.tool_call_id === id) { v.interrupt = it; break; }
    }
    if (!v.child_session_id) {
      for (const c of [snapCall, ev, rec]) if (c && c.child_session_id) { v.child_session_id = c.child_session_id; break; }
    }
    return v;
  }

  // buildItems lays out the transcript: the stored messages in order, with
  // the live text of a running turn in the place of the stored message it
  // matches (so nothing jumps when the stored copy arrives), then what is
  // still streaming, the tool calls not stored yet, and queued messages.
  function buildItems(s) {
    const snap = s.snapshot || {};
    const st = snap.state || {};
    const items = [];
    const shown = new Set();
    const messages = snap.messages || [];
    const active = st.active_turn_id || '';
    const running = !s.ended && (!!active || (!!st.status && st.status !== 'waiting_for_user_message' && st.status !== 'closed'));
    const storedTurns = new Set(messages.map((m) => m.turn_id).filter(Boolean));
    // A finished turn the snapshot already stores shows its stored messages
    // only; its live state goes with the next snapshot.
    const stale = (turnID) => turnID !== active && storedTurns.has(turnID);
    const toolMessages = new Map();
    for (const m of messages) if (m.role === 'tool' && m.tool_call_id) toolMessages.set(m.tool_call_id, m);
    // write_todos calls show in the plan panel, not as cards (unless they
    // failed: then the card says why).
    const planWrite = (id, m) => {
      const v = toolView(s, id, m);
      return v.tool_name === 'write_todos' && v.status !== 'failed';
    };

    const liveItem = (lt, key, step, streaming) => ({
      kind: 'message', key: `l${lt.id}/${key}`, role: 'assistant', text: step.text, reasoning: step.reasoning,
      source: 'live', streaming, turn: lt.id, step: key, attempt: step.attempt,
    });

    // Match live segments to stored assistant messages of their turn, in order.
    const claimed = new Map(); // message sequence -> live item
    const placed = new Set();  // live item keys placed at a stored message
    for (const lt of s.live.values()) {
      if (stale(lt.id)) continue;
      const stored = messages.filter((m) => m.role === 'assistant' && m.turn_id === lt.id);
      let j = 0;
      for (const o of lt.order) {
        if (o.kind !== 'text') continue;
        const step = lt.steps.get(o.key);
        if (!step || (!step.text && !step.reasoning)) continue;
        const want = step.text.trim();
        const k = stored.findIndex((m, i) => i >= j && (m.text || '').trim() === want);
        if (k < 0) continue;
        const item = liveItem(lt, o.key, step, false);
        claimed.set(stored[k].sequence, item);
        placed.add(item.key);
        j = k + 1;
      }
    }

    // The compaction marker goes after the last message the summary covers
    // (first, when that message is older than the ones loaded).
    const cs = snap.context_summary;
    const marker = cs ? { kind: 'summary', key: 'summary', summary: cs } : null;
    if (marker && (!messages.length || messages[0].sequence > cs.last_sequence)) items.push(marker);
    for (const m of messages) {
      if (marker && m.sequence === cs.last_sequence + 1 && !items.includes(marker)) items.push(marker);
      if (m.role === 'user') {
        // "[Dex] …" messages are the worker's notes to the model (what a
        // failed, stopped or steered turn had done; an approved plan).
        const host = /^\[Dex\] /.test(m.text || '');
        items.push({ kind: 'message', key: `m${m.sequence}`, role: host ? 'host' : 'user', text: host ? m.text.slice(6) : m.text || '', source: 'stored', turnOf: m.turn_id, sequence: m.sequence });
      } else if (m.role === 'assistant') {
        const live = claimed.get(m.sequence);
        if (live) items.push(live);
        else if (m.text) items.push({ kind: 'message', key: `m${m.sequence}`, role: 'assistant', text: m.text, source: 'stored', turnOf: m.turn_id });
      } else if (m.role === 'tool') {
        const id = m.tool_call_id || `m${m.sequence}`;
        if (!shown.has(id)) { shown.add(id); if (!planWrite(id, m)) items.push({ kind: 'tool', key: `t${id}`, id, message: m, turnOf: m.turn_id }); }
      }
    }
    for (const lt of s.live.values()) {
      if (stale(lt.id)) continue;
      lt.order.forEach((o, i) => {
        if (o.kind === 'text') {
          const step = lt.steps.get(o.key);
          if (!step || (!step.text && !step.reasoning) || placed.has(`l${lt.id}/${o.key}`)) return;
          // The caret shows while this is the turn's newest output.
          const streaming = !lt.finished && running && i === lt.order.length - 1 && st.status !== 'running_tools' && s.interrupts.size === 0;
          items.push(liveItem(lt, o.key, step, streaming));
        } else if (o.kind === 'tool' && !shown.has(o.id)) {
          shown.add(o.id);
          if (!planWrite(o.id, toolMessages.get(o.id))) items.push({ kind: 'tool', key: `t${o.id}`, id: o.id, message: toolMessages.get(o.id), turnOf: lt.id });
        }
      });
    }
    // Calls not shown yet (waiting for approval, running) go last.
    const rest = [...(snap.tool_calls || [])].filter((c) => !shown.has(c.tool_call_id))
      .sort((a, b) => (a.deferral_order || 0) - (b.deferral_order || 0));
    for (const c of rest) { shown.add(c.tool_call_id); if (!planWrite(c.tool_call_id)) items.push({ kind: 'tool', key: `t${c.tool_call_id}`, id: c.tool_call_id }); }
    for (const [id, t] of s.tools) {
      if (shown.has(id) || (t.turn && stale(t.turn))) continue;
      shown.add(id);
      if (!planWrite(id)) items.push({ kind: 'tool', key: `t${id}`, id });
    }
    // A note after the last item of each turn a steer or a Stop ended.
    for (const n of s.notes.values()) {
      if (n.turn === active) continue;
      let at = -1;
      items.forEach((it, i) => { if ((it.turnOf || it.turn) === n.turn) at = i; });
      if (at < 0) continue; // the turn is older than the messages loaded
      items.splice(at + 1, 0, { kind: 'note', key: `n${n.turn}`, note: n, turnOf: n.turn });
    }
    // Steered messages start the next turn; queued ones wait for it.
    (snap.steered_messages || []).forEach((q, i) => {
      items.push({ kind: 'message', key: `s${q.message_id || i}`, role: 'user', text: q.text || '', source: 'steered' });
    });
    (snap.queued_messages || []).forEach((q, i) => {
      items.push({ kind: 'message', key: `q${q.message_id || i}`, role: 'user', text: q.text || '', source: 'queued', queued: q });
    });
    for (const p of s.sending) {
      items.push({ kind: 'message', key: p.key, role: 'user', text: p.text, source: p.mode === 'steer' ? 'steering' : 'sending' });
    }
    if (running && s.interrupts.size === 0 && s.childInterrupts.length === 0) {
      const last = items[items.length - 1];
      const streamingText = last && last.kind === 'message' && last.source === 'live' && last.streaming && last.text;
      if (!streamingText) items.push({ kind: 'activity', key: 'activity', status: st.status });
    }
    if (!items.length && s.snapshot) items.push({ kind: 'empty', key: 'empty' });
    return items;
  }

  function render() {
    const s = app.session;
    if (!s || !s.snapshot) return;
    const snap = s.snapshot;
    const st = snap.state || {};
    const transcript = $('transcript');
    const nearEnd = transcript.scrollHeight - transcript.scrollTop - transcript.clientHeight < 120;

    // Header.
    $('session-title').textContent = s.agent || 'Session';
    // The Plan switch, for agents whose plan mode is on (GET /v1/agents
    // says; an agent it does not list keeps the switch).
    const agentInfo = app.agents.find((a) => a.name === s.agent);
    const planOff = !!agentInfo && agentInfo.plan_mode_enabled === false;
    $('plan-mode').closest('.plan-switch').hidden = planOff;
    if (planOff && $('plan-mode').checked) setPlanMode(false);
    const placeholder = $('plan-mode').checked ? 'Describe what to plan…' : s.agent ? `Message ${s.agent}…` : 'Send a message';
    if ($('message-input').placeholder !== placeholder) $('message-input').placeholder = placeholder;
    document.title = `${s.agent || 'Session'} · Dex Agents`;
    const badge = $('session-status');
    let status = st.status || 'waiting_for_user_message';
    const waitingOn = [...s.interrupts.values(), ...s.childInterrupts];
    if (waitingOn.length) status = waitingOn.some((it) => it.kind !== 'question') ? 'needs_approval' : 'needs_answer';
    const labels = {
      waiting_for_user_message: 'Ready', running_model: 'Thinking', running_tools: 'Running tools', needs_approval: 'Needs approval',
      needs_answer: 'Question for you',
      compacting_context: 'Compacting context',
    };
    badge.dataset.status = status;
    let label = labels[status] || status.replace(/_/g, ' ');
    if (status === 'running_model' && st.active_turn_id && st.interaction_mode === 'planning') label = 'Planning';
    if (st.active_turn_id && st.turn_control === 'steered') label = 'Steering…';
    if (st.active_turn_id && (st.turn_control === 'turn_cancelled' || s.stopping === st.active_turn_id)) label = 'Stopping…';
    const ended = endedReason(s);
    if (ended) {
      badge.dataset.status = 'closed';
      label = s.ended ? 'Closed' : 'Closing';
    }
    badge.textContent = label;
    renderTurnControls(s);
    renderEnded(s, ended);
    renderArchiveButton();
    renderUsage(s.usage || snap.usage, snap.spend);
    renderModelPicker(s, snap);
    renderPlan(s, snap);

    // Error banner.
    const errText = st.last_turn_error || '';
    const banner = $('error-banner');
    banner.hidden = !errText || s.dismissedError === errText;
    // Retry sends the failed turn's message again, once no turn runs.
    $('retry-turn').hidden = banner.hidden || !!activeTurn(s) || !!endedReason(s);
    $('error-text').textContent = errText;

    // Transcript.
    const list = $('messages');
    const items = buildItems(s);
    const keep = new Set();
    let prev = null;
    for (const item of items) {
      keep.add(item.key);
      let node = rendered.get(item.key);
      if (!node || node.dataset.kind !== item.kind) {
        if (node) node.remove();
        node = createItem(item);
        rendered.set(item.key, node);
      }
      updateItem(node, item, s);
      const want = prev ? prev.nextSibling : list.firstChild;
      if (want !== node) list.insertBefore(node, want);
      prev = node;
    }
    for (const [key, node] of rendered) {
      if (!keep.has(key)) { node.remove(); rendered.delete(key); }
    }
    if (forceScroll || nearEnd) transcript.scrollTop = transcript.scrollHeight;
    forceScroll = false;
    saveRecords(s);
  }

  const PLAN_LABEL = { draft: 'Draft', active: 'Active', completed: 'Completed', cleared: 'Cleared' };
  const TASK_LABEL = { pending: 'pending', in_progress: 'in progress', completed: 'completed' };

  // renderPlan shows the session's plan (write_todos) as a checklist, with
  // "Execute plan" while it is a draft and the session waits for a message.
  function renderPlan(s, snap) {
    const panel = $('plan-panel');
    const p = snap.plan;
    const tasks = (p && p.tasks) || [];
    if (!p || (p.status === 'cleared' && !tasks.length)) { panel.hidden = true; return; }
    panel.hidden = false;
    panel.dataset.status = p.status;
    panel.dataset.revision = String(p.revision);
    const st = snap.state || {};
    const done = tasks.filter((t) => t.status === 'completed').length;
    const statusText = PLAN_LABEL[p.status] || p.status;
    if ($('plan-status').textContent !== statusText) $('plan-status').textContent = statusText;
    const meta = `Revision ${p.revision} · ${done} of ${tasks.length} done`;
    if ($('plan-meta').textContent !== meta) $('plan-meta').textContent = meta;
    const list = $('plan-tasks');
    const sig = JSON.stringify(tasks);
    if (list.dataset.sig !== sig) {
      list.dataset.sig = sig;
      list.replaceChildren(...tasks.map((t) => el('li', { class: 'plan-task', 'data-testid': 'plan-task', 'data-status': t.status },
        el('span', { class: 'task-box', 'aria-hidden': 'true' }, t.status === 'completed' ? icon(ICONS.check) : ''),
        el('span', { class: 'task-text', text: t.content }),
        el('span', { class: 'visually-hidden', text: ` (${TASK_LABEL[t.status] || t.status})` }))));
    }
    const waiting = (st.status || 'waiting_for_user_message') === 'waiting_for_user_message' && !st.active_turn_id &&
      !snap.queued_message_count && !(snap.queued_messages || []).length;
    const button = $('execute-plan');
    button.hidden = !(p.status === 'draft' && waiting);
    button.disabled = !!s.executingPlan;
    const executeText = s.executingPlan ? 'Starting…' : 'Execute plan';
    if (button.textContent !== executeText) button.textContent = executeText;
    let hint = '';
    if (p.status === 'draft' && waiting) hint = 'Review the plan: execute it, or send a message to revise it.';
    else if (p.status === 'draft') hint = 'The agent is drafting the plan…';
    else if (st.active_turn_id && st.interaction_mode === 'executing') hint = 'The agent is executing the plan.';
    if ($('plan-hint').textContent !== hint) $('plan-hint').textContent = hint;
  }

  function renderUsage(u, spend) {
    const node = $('usage');
    if (!u) { node.textContent = ''; node.hidden = true; return; }
    node.hidden = false;
    const calls = Number(u.model_calls) || 0;
    const parts = [
      icon(ICONS.gauge),
      el('span', { class: 'usage-value', 'data-testid': 'usage-tokens', text: `${fmt(u.total_tokens)} tokens` }),
      el('span', { class: 'usage-sep', 'aria-hidden': 'true', text: '·' }),
      el('span', { class: 'usage-value', 'data-testid': 'usage-calls', text: `${fmt(calls)} model ${calls === 1 ? 'call' : 'calls'}` }),
    ];
    if (spend && Number(spend.cost_micros) > 0) {
      parts.push(el('span', { class: 'usage-sep', 'aria-hidden': 'true', text: '·' }),
        el('span', { class: 'usage-value', 'data-testid': 'usage-cost', text: dollars(spend.cost_micros) }));
    }
    const left = budgetLeft(spend);
    if (left) {
      parts.push(el('span', { class: 'usage-sep', 'aria-hidden': 'true', text: '·' }),
        el('span', { class: `usage-value${left.out ? ' usage-out' : ''}`, 'data-testid': 'budget-left', text: left.text }));
    }
    node.replaceChildren(...parts);
    node.title = `Input ${fmt(u.input_tokens)} (cached ${fmt(u.cached_input_tokens)}) · output ${fmt(u.output_tokens)} (reasoning ${fmt(u.reasoning_tokens)})`;
  }

  function dollars(micros) {
    const d = (Number(micros) || 0) / 1e6;
    return d < 0.01 ? `$${d.toFixed(4)}` : `$${d.toFixed(2)}`;
  }

  // budgetLeft describes the tightest budget the worker reported at the
  // session's last model call: the session's, else the day's.
  function budgetLeft(spend) {
    if (!spend) return null;
    if (spend.refused) return { text: 'Budget used up', out: true };
    const l = spend.left || {};
    for (const [scope, b] of [['session', l.session], ['session', l.token_session], ['today', l.day], ['today', l.token_day]]) {
      if (!b) continue;
      const bits = [];
      if (b.cost_micros >= 0) bits.push(`${dollars(b.cost_micros)} left`);
      if (b.model_calls >= 0) bits.push(`${fmt(b.model_calls)} ${b.model_calls === 1 ? 'call' : 'calls'} left`);
      if (b.input_tokens >= 0) bits.push(`${fmt(b.input_tokens)} input tokens left`);
      if (b.output_tokens >= 0) bits.push(`${fmt(b.output_tokens)} output tokens left`);
      if (bits.length) return { text: `${bits.join(', ')} ${scope === 'today' ? 'today' : 'in this session'}`, out: false };
    }
    return null;
  }

  // renderModelPicker offers the settings the agent's runner lets a
  // session choose (the model): changing it replaces the session settings
  // with the choice set, and applies from the next turn.
  function renderModelPicker(s, snap) {
    const wrap = $('model-picker-wrap');
    const agent = app.agents.find((a) => a.name === (s.agent || snap.agent));
    const choice = agent && (agent.session_setting_choices || [])[0];
    if (!choice) { wrap.hidden = true; return; }
    wrap.hidden = false;
    const sel = $('model-picker');
    const settings = snap.session_settings && typeof snap.session_settings === 'object' ? snap.session_settings : {};
    const current = typeof settings[choice.key] === 'string' ? settings[choice.key] : '';
    const sig = `${choice.key}\u0000${choice.values.join('\u0000')}\u0000${choice.default || ''}`;
    if (sel.dataset.sig !== sig) {
      sel.dataset.sig = sig;
      sel.replaceChildren(el('option', { value: '', text: choice.default ? `Default (${choice.default})` : 'Default' }),
        ...choice.values.map((v) => el('option', { value: v, text: v })));
      sel.onchange = async () => {
        const next = { ...((s.snapshot && s.snapshot.session_settings) || {}) };
        if (sel.value) next[choice.key] = sel.value; else delete next[choice.key];
        sel.disabled = true;
        try {
          await api('PUT', sessionPath(s.id, '/settings'), { session_settings: next });
          toast(sel.value ? `The next turn uses ${sel.value}.` : 'The next turn uses the default model.', 'info');
          await loadSnapshot(s);
        } catch (err) {
          toast(`Could not change the model: ${err.message}`, 'error');
        } finally {
          sel.disabled = false;
          render();
        }
      };
    }
    if (document.activeElement !== sel && sel.value !== current) sel.value = current;
  }

  function createItem(item) {
    const li = el('li', { class: `item item-${item.kind}` });
    li.dataset.kind = item.kind;
    if (item.kind === 'message') {
      li.setAttribute('data-testid', 'message');
      const body = el('div', { class: 'message-body', 'data-testid': 'message-text' });
      if (item.role === 'assistant') {
        li.append(el('div', { class: 'avatar', 'aria-hidden': 'true' }, icon(ICONS.bot)));
      }
      li.append(el('div', { class: 'message-main' },
        el('div', { class: 'message-author' }),
        body));
    } else if (item.kind === 'tool') {
      li.setAttribute('data-testid', 'tool-card');
    } else if (item.kind === 'activity') {
      li.setAttribute('data-testid', 'activity');
      li.append(el('div', { class: 'avatar', 'aria-hidden': 'true' }, icon(ICONS.bot)),
        el('div', { class: 'activity' }, el('span', { class: 'dots', 'aria-hidden': 'true' }, el('i'), el('i'), el('i')), el('span', { class: 'activity-label' })));
    } else if (item.kind === 'note') {
      li.setAttribute('data-testid', 'turn-note');
      li.setAttribute('role', 'note');
      li.append(el('div', { class: 'turn-note' }, el('span', { class: 'turn-note-icon', 'aria-hidden': 'true' }), el('span', { class: 'turn-note-text' })));
    } else if (item.kind === 'summary') {
      li.setAttribute('data-testid', 'compaction-marker');
      li.setAttribute('role', 'separator');
      li.append(el('div', { class: 'compaction-marker' }, el('span', { class: 'compaction-label' })));
    } else if (item.kind === 'empty') {
      li.append(el('div', { class: 'empty' },
        el('p', { class: 'empty-title', text: 'No messages yet' }),
        el('p', { class: 'empty-text', text: 'Send the first message below.' })));
    }
    return li;
  }

  function updateItem(li, item, s) {
    if (item.kind === 'note') {
      const n = item.note;
      li.dataset.noteKind = n.kind;
      li.dataset.turnId = n.turn;
      const text = noteText(n);
      const node = li.querySelector('.turn-note-text');
      if (node.textContent !== text) {
        node.textContent = text;
        li.querySelector('.turn-note-icon').replaceChildren(icon(n.kind === DEX_EVENTS.TURN_CANCELLED ? ICONS.stop : ICONS.steer));
      }
    } else if (item.kind === 'message') updateMessage(li, item, s);
    else if (item.kind === 'tool') updateTool(li, item, s);
    else if (item.kind === 'summary') {
      const cs = item.summary;
      const label = `Earlier messages (through #${cs.last_sequence}) are summarized for the model`;
      const node = li.querySelector('.compaction-label');
      if (node.textContent !== label) node.textContent = label;
      li.title = cs.text || '';
      li.dataset.generation = String(cs.generation);
    } else if (item.kind === 'activity') {
      const label = item.status === 'running_tools' ? 'Running tools…' : item.status === 'compacting_context' ? 'Compacting context…' : 'Thinking…';
      const node = li.querySelector('.activity-label');
      if (node.textContent !== label) node.textContent = label;
    }
  }

  function updateMessage(li, item, s) {
    // The session's own messages to the model ("[Dex] The user approved
    // plan revision 1...") show in the operator view only.
    const internal = item.role === 'user' && /^\[Dex\] /.test(item.text || '');
    li.className = `item item-message role-${item.role} source-${item.source}${item.streaming ? ' streaming' : ''}${internal ? ' internal' : ''}`;
    li.dataset.role = item.role;
    li.dataset.source = item.source;
    if (item.turn) { li.dataset.turnId = item.turn; li.dataset.stepExecutionId = item.step; li.dataset.attempt = String(item.attempt); }
    li.setAttribute('aria-busy', item.streaming ? 'true' : 'false');
    const author = li.querySelector('.message-author');
    let who = item.role === 'user' ? 'You' : item.role === 'host' ? 'Note for the agent' : (s.agent || 'Agent');
    const tag = { queued: 'Queued', sending: 'Sending…', steering: 'Steering…', steered: 'Steered: next' }[item.source] || '';
    if (author.dataset.who !== who + tag) {
      author.dataset.who = who + tag;
      author.replaceChildren(el('span', { text: who }), tag ? el('span', { class: 'tag', text: tag }) : '');
    }
    const body = li.querySelector('.message-body');
    const key = `${item.reasoning || ''}\u0000${item.text}`;
    if (body.dataset.src !== key && !li.dataset.editing) {
      body.dataset.src = key;
      const open = body.querySelector('details.reasoning');
      const wasOpen = open ? open.open : false;
      const parts = [];
      if (item.reasoning) {
        parts.push(el('details', { class: 'reasoning', open: wasOpen || undefined },
          el('summary', { text: 'Reasoning' }),
          el('div', { class: 'reasoning-text', text: item.reasoning })));
      }
      if (item.role === 'host') {
        const d = body.querySelector('details.host-note');
        const lines = item.text.split('\n');
        parts.push(el('details', { class: 'host-note', open: d && d.open ? true : undefined },
          el('summary', { text: lines[0] }),
          lines.length > 1 ? el('div', { class: 'host-note-text', text: lines.slice(1).join('\n') }) : ''));
      } else if (item.text) parts.push(...renderRichText(item.text));
      body.replaceChildren(...parts);
    }
    updateQueuedActions(li, item, s);
    updateCopy(li, item);
    updateEdit(li, item, s);
  }

  // updateEdit offers Edit on a stored user message: the new text goes to
  // a new branch (a fork before the message), and the page opens it.
  function updateEdit(li, item, s) {
    const main = li.querySelector('.message-main');
    let btn = main.querySelector('.edit-message');
    const want = item.role === 'user' && item.source === 'stored' && item.sequence > 0 && !s.ended;
    if (!want) { if (btn) btn.remove(); return; }
    if (btn) return;
    btn = el('button', {
      type: 'button', class: 'icon-button tiny edit-message', 'data-testid': 'edit-message',
      'aria-label': 'Edit this message and send it as a new branch', title: 'Edit: send a changed message as a new branch of the conversation',
    }, icon(ICONS.edit));
    btn.onclick = () => startEdit(li, item, s);
    messageActions(main).append(btn);
  }

  // messageActions is the row of a message's small buttons (copy, edit).
  function messageActions(main) {
    let row = main.querySelector(':scope > .message-actions');
    if (!row) { row = el('div', { class: 'message-actions' }); main.append(row); }
    return row;
  }

  function startEdit(li, item, s) {
    if (li.dataset.editing) return;
    li.dataset.editing = '1';
    const body = li.querySelector('.message-body');
    const input = el('textarea', { class: 'input edit-input', 'data-testid': 'edit-input', rows: '3', 'aria-label': 'The changed message' });
    input.value = item.text;
    const done = () => { delete li.dataset.editing; body.dataset.src = ''; render(); };
    const send = el('button', { type: 'button', class: 'button primary small', 'data-testid': 'edit-send', text: 'Send as a new branch' });
    const cancel = el('button', { type: 'button', class: 'button ghost small', 'data-testid': 'edit-cancel', text: 'Cancel', onclick: done });
    send.onclick = async () => {
      const text = input.value.trim();
      if (!text) { toast('The message is empty.', 'info'); return; }
      send.disabled = true;
      try {
        const res = await api('POST', sessionPath(s.id, `/messages/${item.sequence}/edit`), { text });
        toast('Sent as a new branch. The original is kept: switch back with Branch.', 'info');
        // A branch keeps the conversation's title.
        const parent = recentSessions().find((r) => r.id === s.id);
        rememberSession(res.session_id, s.agent, parent ? parent.title : '');
        navigate(res.session_id, s.agent);
      } catch (err) {
        send.disabled = false;
        toast(`Could not edit the message: ${err.message}`, 'error');
      }
    };
    body.replaceChildren(el('div', { class: 'edit-form' }, input, el('div', { class: 'edit-actions' }, send, cancel)));
    input.focus();
  }

  // loadBranches fills the branch switcher: the conversation's root and its
  // forks (edits), when it has any.
  async function loadBranches(s) {
    const wrap = $('branch-picker-wrap');
    let data;
    try {
      data = await api('GET', sessionPath(s.id, '/branches'));
    } catch {
      wrap.hidden = true; // a worker without the message store has none
      return;
    }
    if (app.session !== s) return;
    const branches = data.branches || [];
    if (!branches.length) { wrap.hidden = true; return; }
    const picker = $('branch-picker');
    const options = [];
    if (data.root_session_id) options.push(el('option', { value: data.root_session_id, text: 'Original' }));
    branches.forEach((b, i) => options.push(el('option', {
      value: b.session_id, text: `Branch ${i + 1}: from message ${b.at_sequence + 1}`,
    })));
    picker.replaceChildren(...options);
    picker.value = s.id;
    picker.onchange = () => { if (picker.value && picker.value !== s.id) navigate(picker.value, s.agent); };
    wrap.hidden = false;
  }

  // updateCopy offers a copy button on a finished message with text.
  function updateCopy(li, item) {
    const main = li.querySelector('.message-main');
    let btn = main.querySelector('.copy-message');
    const want = !!item.text && !item.streaming && item.role !== 'host' && !item.queued && item.source !== 'sending';
    if (!want) { if (btn) btn.remove(); return; }
    if (!btn) {
      btn = el('button', { type: 'button', class: 'icon-button tiny copy-message', 'data-testid': 'copy-message', 'aria-label': 'Copy message', title: 'Copy' }, icon(ICONS.copy));
      messageActions(main).prepend(btn);
    }
    btn.onclick = async () => {
      try {
        await navigator.clipboard.writeText(item.text);
        toast('Copied.', 'info');
      } catch (err) {
        toast(`Could not copy: ${err.message}`, 'error');
      }
    };
  }

  // retryTurn sends the failed turn's message again.
  async function retryTurn(s) {
    const snap = s.snapshot || {};
    const users = (snap.messages || []).filter((m) => m.role === 'user' && !/^\[Dex\] /.test(m.text || ''));
    const last = users[users.length - 1];
    if (!last || !last.text) { toast('There is no message to send again.', 'info'); return; }
    s.dismissedError = (snap.state || {}).last_turn_error || '';
    $('message-input').value = last.text;
    autoGrow();
    await sendMessage(null, 'queue');
  }

  // updateQueuedActions offers "Steer now" and "Delete" on a queued message.
  function updateQueuedActions(li, item, s) {
    const main = li.querySelector('.message-main');
    let bar = main.querySelector('.queued-actions');
    const q = item.queued;
    if (!q || !q.message_id) { if (bar) bar.remove(); return; }
    const busy = s.queuedBusy.get(q.message_id) || '';
    const canSteer = !!activeTurn(s);
    const sig = `${q.message_id}\u0000${busy}\u0000${canSteer}`;
    if (bar && bar.dataset.sig === sig) return;
    if (!bar) { bar = el('div', { class: 'queued-actions' }); main.append(bar); }
    bar.dataset.sig = sig;
    li.dataset.messageId = q.message_id;
    bar.replaceChildren(
      canSteer ? el('button', {
        type: 'button', class: 'button secondary small', 'data-testid': 'queued-steer', disabled: !!busy,
        title: 'The running turn stops at its next safe step and the agent answers this message next',
        onclick: () => steerQueued(s, q),
      }, icon(ICONS.steer), busy === 'steering' ? 'Steering…' : 'Steer now') : '',
      el('button', {
        type: 'button', class: 'button ghost small', 'data-testid': 'queued-delete', disabled: !!busy,
        'aria-label': `Delete the queued message "${oneLine(q.text, 40)}"`,
        onclick: () => deleteQueued(s, q),
      }, icon(ICONS.trash), busy === 'deleting' ? 'Deleting…' : 'Delete'));
  }

  // renderRichText renders a small, safe subset of Markdown with DOM nodes:
  // fenced code blocks, paragraphs, bullet lists, `code` and **bold**.
  function renderRichText(text) {
    const out = [];
    const blocks = String(text).split(/^```[^\n]*\n?/m);
    blocks.forEach((block, i) => {
      if (i % 2 === 1) { out.push(el('pre', { class: 'code' }, el('code', { text: block.replace(/\n$/, '') }))); return; }
      for (const para of block.split(/\n{2,}/)) {
        if (!para.trim()) continue;
        const lines = para.split('\n');
        if (lines.every((l) => /^\s*[-*]\s+/.test(l))) {
          out.push(el('ul', null, ...lines.map((l) => el('li', null, ...inline(l.replace(/^\s*[-*]\s+/, ''))))));
        } else if (lines.every((l) => /^\s*\d+[.)]\s+/.test(l))) {
          out.push(el('ol', null, ...lines.map((l) => el('li', null, ...inline(l.replace(/^\s*\d+[.)]\s+/, ''))))));
        } else {
          out.push(el('p', null, ...inline(para.replace(/^\n+|\n+$/g, ''))));
        }
      }
    });
    return out;
  }

  function inline(text) {
    const nodes = [];
    const re = /(`[^`\n]+`|\*\*[^*\n]+\*\*)/g;
    let last = 0;
    let m;
    while ((m = re.exec(text))) {
      if (m.index > last) nodes.push(document.createTextNode(text.slice(last, m.index)));
      const tok = m[0];
      nodes.push(tok[0] === '`' ? el('code', { text: tok.slice(1, -1) }) : el('strong', { text: tok.slice(2, -2) }));
      last = m.index + tok.length;
    }
    if (last < text.length) nodes.push(document.createTextNode(text.slice(last)));
    return nodes;
  }

  const STATUS_LABEL = {
    deferred: 'Queued', awaiting_approval: 'Awaiting approval', approved: 'Approved', running: 'Running',
    awaiting_answer: 'Waiting for answer', waiting_for_timer: 'Waiting', waiting_for_task: 'Waiting for task',
    completed: 'Completed', succeeded: 'Succeeded', failed: 'Failed', rejected: 'Rejected', outcome_unknown: 'Outcome unknown',
  };
  const EFFECT_LABEL = {
    read: 'Read only', idempotent_write: 'Idempotent write', non_idempotent_write: 'Write', unclassified: 'Unclassified',
  };

  // cancellationOf says why a rejected call did not run: "steered" or
  // "turn_cancelled" when a steer or a Stop removed it (from its record,
  // or from the result the session stored for the model), else "".
  function cancellationOf(v, output) {
    if (v.cancellation_reason) return v.cancellation_reason;
    if (/"reason"\s*:\s*"superseded_by_steered_user_message"/.test(output || '')) return 'steered';
    if (/"reason"\s*:\s*"turn_cancelled_by_user"/.test(output || '')) return 'turn_cancelled';
    return '';
  }

  function updateTool(li, item, s) {
    const message = item.message;
    const v = toolView(s, item.id, message);
    if (/^delegate_to_/.test(v.tool_name)) { updateSubAgent(li, item, s, v, message); return; }
    const u = uiState(item.id);
    const output = v.output !== undefined && v.output !== '' ? v.output : (message && message.text) || '';
    const needsApproval = !!(v.interrupt && (v.interrupt.kind === 'approval' || !v.interrupt.kind));
    const question = v.interrupt && v.interrupt.kind === 'question' ? v.interrupt : null;
    const deadline = v.interrupt ? formatDeadline(v.interrupt.deadline) : null;
    const cancelled = v.status === 'rejected' ? cancellationOf(v, output) : '';
    const sig = JSON.stringify([operatorView(), v.interrupt && v.interrupt.approval_text, v.display_text, v.tool_name, v.status, v.effect, v.arguments, output, v.error, v.rejection_message, cancelled,
      needsApproval, v.interrupt && v.interrupt.interrupt_id, v.interrupt && v.interrupt.kind, deadline && deadline.text, u.rejecting, u.busy,
      question && [question.question, question.choices, question.allows_free_text], v.wait_until, v.task_id, v.task_poll_interval_seconds]);
    li.dataset.toolName = v.tool_name;
    li.dataset.status = v.status;
    li.dataset.toolCallId = item.id;
    if (cancelled) li.dataset.cancellationReason = cancelled; else delete li.dataset.cancellationReason;
    li.className = `item item-tool status-${v.status}${cancelled ? ' cancelled' : ''}${u.expanded ? ' expanded' : ''}`;
    if (li.dataset.sig === sig) return;
    li.dataset.sig = sig;

    // Keep what the user opened or typed across re-renders.
    const argsEl = li.querySelector('details.tool-args');
    const outEl = li.querySelector('details.tool-output');
    const argsOpen = argsEl ? argsEl.open : v.status === 'awaiting_approval' && (operatorView() || !(v.interrupt && v.interrupt.approval_text));
    const outOpen = outEl ? outEl.open : false;
    const reasonEl = li.querySelector('textarea.reject-reason');
    if (reasonEl) u.reason = reasonEl.value;
    const answerEl = li.querySelector('input.question-input');
    if (answerEl) u.answer = answerEl.value;
    const hadFocus = document.activeElement && li.contains(document.activeElement) ? document.activeElement.dataset.testid : '';

    const statusIcon = { succeeded: ICONS.check, completed: ICONS.check, failed: ICONS.x, rejected: ICONS.x, awaiting_approval: ICONS.shield, running: ICONS.clock, deferred: ICONS.clock, approved: ICONS.check, awaiting_answer: ICONS.clock, waiting_for_timer: ICONS.clock, waiting_for_task: ICONS.clock }[v.status];
    const head = el('div', {
      class: 'tool-head', 'data-testid': 'tool-head',
      // The end-user view shows a finished call as this line; a click
      // shows its details.
      onclick: () => { if (!operatorView()) { u.expanded = !u.expanded; li.classList.toggle('expanded', u.expanded); } },
    },
      el('span', { class: 'tool-icon', 'aria-hidden': 'true' }, icon(ICONS.tool)),
      el('span', { class: 'tool-name', 'data-testid': 'tool-name', text: !operatorView() && v.display_text ? v.display_text : v.tool_name }),
      v.effect ? el('span', { class: `effect effect-${v.effect}`, text: EFFECT_LABEL[v.effect] || v.effect }) : '',
      el('span', { class: 'spacer' }),
      el('span', { class: `status-chip chip-${v.status}`, 'data-testid': 'tool-status' },
        statusIcon ? icon(statusIcon) : '', el('span', { text: cancelled ? 'Cancelled' : STATUS_LABEL[v.status] || v.status.replace(/_/g, ' ') })));

    const parts = [head];
    if (v.arguments) {
      const pretty = prettyJSON(v.arguments);
      parts.push(el('details', { class: 'tool-section tool-args', open: argsOpen || undefined },
        el('summary', null, el('span', { class: 'section-label', text: 'Arguments' }), el('span', { class: 'preview', text: oneLine(v.arguments, 80) })),
        el('pre', { class: 'code', 'data-testid': 'tool-arguments' }, el('code', { text: pretty }))));
    }
    if (output && v.status !== 'rejected') {
      parts.push(el('details', { class: 'tool-section tool-output', open: outOpen || undefined },
        el('summary', null, el('span', { class: 'section-label', text: v.status === 'failed' ? 'Error output' : 'Output' }), el('span', { class: 'preview', text: oneLine(output, 80) })),
        el('pre', { class: 'code', 'data-testid': 'tool-output' }, el('code', { text: prettyJSON(output) }))));
    }
    if (v.error) parts.push(el('p', { class: 'tool-note error', text: v.error }));
    if (cancelled) {
      const why = cancelled === 'steered' ? 'you steered the conversation' : 'you stopped the turn';
      const what = v.tool_name === 'ask_user' ? `The question was withdrawn: ${why}.`
        : v.requires_approval ? `The approval request was withdrawn: ${why}, so ${v.tool_name} did not run.`
          : `Cancelled before it ran: ${why}.`;
      parts.push(el('p', { class: 'tool-note cancelled-note', 'data-testid': 'tool-cancelled-note' }, icon(cancelled === 'steered' ? ICONS.steer : ICONS.stop), el('span', { text: ` ${what}` })));
    } else if (v.status === 'rejected') {
      parts.push(el('p', { class: 'tool-note', text: v.rejection_message ? `Rejected: ${v.rejection_message}` : 'Rejected.' }));
    }
    if (v.status === 'outcome_unknown') {
      parts.push(el('p', { class: 'tool-note warn', text: 'The worker stopped while this call ran; it may or may not have taken effect.' }));
    }
    if (v.status === 'waiting_for_timer' && v.wait_until) {
      const t = Date.parse(v.wait_until);
      if (!Number.isNaN(t)) {
        const d = new Date(t);
        const left = t - Date.now();
        parts.push(el('p', { class: 'tool-note', 'data-testid': 'wait-until' }, icon(ICONS.clock),
          el('span', { text: ' Waiting until ' }), el('time', { datetime: d.toISOString(), text: d.toLocaleString() }),
          el('span', { text: left > 0 ? ` (${relativeTime(left)})` : ' (any moment now)' })));
      }
    }
    if (v.status === 'waiting_for_task') {
      const every = Number(v.task_poll_interval_seconds) || 0;
      parts.push(el('p', { class: 'tool-note', 'data-testid': 'tool-task' }, icon(ICONS.clock),
        el('span', { text: v.task_id ? ' Task ' : ' The task' }),
        v.task_id ? el('code', { text: v.task_id }) : '',
        el('span', { text: ` runs outside the session, which checks on it${every ? ` every ${every < 60 ? `${every} s` : every < 3600 ? `${Math.round(every / 60)} min` : `${Math.round(every / 3600)} h`}` : ''}.` })));
    }
    if (question) {
      const busy = u.busy;
      const box = el('div', { class: 'approval question', 'data-testid': 'question' },
        el('div', { class: 'approval-text' },
          el('strong', { text: 'Question for you.' }),
          el('span', { class: 'question-text', 'data-testid': 'question-text', text: question.question || '' }),
          deadline ? el('span', { class: `deadline${deadline.expired ? ' expired' : ''}`, 'data-testid': 'deadline' },
            icon(ICONS.clock), el('time', { datetime: deadline.iso, text: deadline.text })) : ''));
      const choices = question.choices || [];
      if (choices.length) {
        box.append(el('div', { class: 'approval-buttons question-choices' }, ...choices.map((c) => el('button', {
          type: 'button', class: 'button', 'data-testid': 'question-choice', disabled: !!busy,
          onclick: () => answerQuestion(s, question, c, false),
        }, c))));
      }
      if (!choices.length || question.allows_free_text) {
        const inputID = `answer-${item.id}`;
        const input = el('input', { class: 'input question-input', id: inputID, type: 'text', 'data-testid': 'question-input', maxlength: 16384,
          placeholder: choices.length ? 'Or type another answer' : 'Type your answer' });
        input.value = u.answer || '';
        input.addEventListener('input', () => { u.answer = input.value; });
        box.append(el('form', {
          class: 'reject-form',
          onsubmit: (e) => { e.preventDefault(); const a = input.value.trim(); if (a) answerQuestion(s, question, a, false); },
        },
        el('label', { class: 'field-label', for: inputID, text: 'Your answer' }),
        input,
        el('div', { class: 'approval-buttons' },
          el('button', { type: 'submit', class: 'button success', 'data-testid': 'question-submit', disabled: !!busy }, busy === 'answering' ? 'Sending…' : 'Answer'))));
      }
      box.append(el('div', { class: 'approval-buttons' },
        el('button', { type: 'button', class: 'button ghost', 'data-testid': 'question-decline', disabled: !!busy,
          onclick: () => answerQuestion(s, question, '', true) }, busy === 'declining' ? 'Declining…' : 'Decline to answer')));
      parts.push(box);
    } else if (v.interrupt && !needsApproval) {
      parts.push(el('p', { class: 'tool-note', text: `Waiting for input (${v.interrupt.kind}); answer it with the CLI or API.` }));
    }
    if (needsApproval) {
      const busy = u.busy;
      const action = v.interrupt.approval_text || '';
      const actions = el('div', { class: 'approval' },
        el('div', { class: 'approval-text' },
          action && !operatorView() ? el('strong', { class: 'approval-action', 'data-testid': 'approval-text', text: action }) : '',
          el('strong', { text: 'Approval needed.' }),
          el('span', { text: action && !operatorView() ? ' It runs only after you approve it.' : ` ${v.tool_name} runs only after you approve it.` }),
          deadline ? el('span', { class: `deadline${deadline.expired ? ' expired' : ''}`, 'data-testid': 'deadline' },
            icon(ICONS.clock), el('time', { datetime: deadline.iso, text: deadline.text })) : ''));
      if (!u.rejecting) {
        actions.append(el('div', { class: 'approval-buttons' },
          el('button', {
            type: 'button', class: 'button success', 'data-testid': 'approve-button', disabled: !!busy,
            onclick: () => resolveInterrupt(s, v.interrupt, true),
          }, icon(ICONS.check), busy === 'approving' ? 'Approving…' : 'Approve'),
          el('button', {
            type: 'button', class: 'button danger-outline', 'data-testid': 'reject-button', disabled: !!busy,
            onclick: () => { u.rejecting = true; li.dataset.sig = ''; scheduleRender(); requestAnimationFrame(() => { const r = li.querySelector('textarea.reject-reason'); if (r) r.focus(); }); },
          }, icon(ICONS.x), 'Reject…')));
      } else {
        const reasonID = `reason-${item.id}`;
        const reason = el('textarea', { class: 'input reject-reason', id: reasonID, rows: 2, 'data-testid': 'reject-reason', placeholder: 'Tell the agent why (optional)' });
        reason.value = u.reason || '';
        reason.addEventListener('input', () => { u.reason = reason.value; });
        actions.append(el('form', {
          class: 'reject-form',
          onsubmit: (e) => { e.preventDefault(); resolveInterrupt(s, v.interrupt, false, reason.value.trim()); },
        },
        el('label', { class: 'field-label', for: reasonID, text: 'Reason for rejecting (optional)' }),
        reason,
        el('div', { class: 'approval-buttons' },
          el('button', { type: 'submit', class: 'button danger', 'data-testid': 'reject-confirm', disabled: !!busy }, busy === 'rejecting' ? 'Rejecting…' : 'Reject call'),
          el('button', { type: 'button', class: 'button ghost', disabled: !!busy, onclick: () => { u.rejecting = false; li.dataset.sig = ''; scheduleRender(); } }, 'Cancel'))));
      }
      parts.push(actions);
    }
    li.replaceChildren(el('div', { class: 'tool-card' }, ...parts));
    if (hadFocus) { const f = li.querySelector(`[data-testid="${hadFocus}"]`); if (f) f.focus(); }
  }

  const SUBAGENT_LABEL = {
    deferred: 'Starting', waiting_for_sub_agent: 'Working', succeeded: 'Done', failed: 'Failed', rejected: 'Cancelled', completed: 'Done',
  };

  // updateSubAgent renders a delegate_to_ call as a sub-agent card: the
  // task, and, in a collapsible body, what the child session does (its
  // tool calls, its text while it writes, the approvals and questions it
  // waits on, answered here), then its answer.
  function updateSubAgent(li, item, s, v, message) {
    const u = uiState(item.id);
    const name = v.tool_name.replace(/^delegate_to_/, '');
    let task = '';
    try { task = JSON.parse(v.arguments || '{}').task || ''; } catch { task = v.arguments || ''; }
    const output = v.output !== undefined && v.output !== '' ? v.output : (message && message.text) || '';
    let answer = '';
    let background = false;
    try {
      const o = JSON.parse(output);
      answer = o.answer || '';
      background = o.status === 'started';
      if (!v.child_session_id && o.session_id) v.child_session_id = o.session_id;
    } catch { answer = output; }
    const childID = v.child_session_id || '';
    const c = childID ? s.children.get(childID) : null;
    const waits = s.childInterrupts.filter((it) => childID && (it.session_id === childID || it.session_id.startsWith(`${childID}.sub-`)));
    // A background child works on after its call answered; its answer
    // comes as a message.
    const working = v.status === 'waiting_for_sub_agent' || v.status === 'deferred' || (background && !!(snapSubAgent(s, childID)));
    const cancelled = v.status === 'rejected';
    const tools = c ? [...c.tools.values()] : [];
    const sig = JSON.stringify([v.status, task, answer, v.error, childID, c && c.text, tools, waits.map((it) => [it.session_id, it.interrupt_id, it.kind]), u.busy, u.subOpen]);
    li.dataset.toolName = v.tool_name;
    li.dataset.status = v.status;
    li.dataset.toolCallId = item.id;
    li.dataset.childSessionId = childID;
    li.className = `item item-tool item-subagent status-${v.status}`;
    li.setAttribute('data-testid', 'subagent-card');
    if (li.dataset.sig === sig) return;
    li.dataset.sig = sig;
    const bodyEl = li.querySelector('details.subagent-body');
    const open = bodyEl ? bodyEl.open : working || waits.length > 0;

    const statusIcon = { succeeded: ICONS.check, failed: ICONS.x, rejected: ICONS.x }[v.status] || ICONS.clock;
    let label = waits.length ? 'Needs you' : SUBAGENT_LABEL[v.status] || STATUS_LABEL[v.status] || v.status.replace(/_/g, ' ');
    if (background && !waits.length) label = working ? 'Working in the background' : 'Started in the background';
    const head = el('div', { class: 'tool-head', 'data-testid': 'tool-head' },
      el('span', { class: 'tool-icon', 'aria-hidden': 'true' }, icon(ICONS.bot)),
      el('span', { class: 'tool-name', 'data-testid': 'tool-name', text: `Sub-agent ${name}` }),
      el('span', { class: 'spacer' }),
      el('span', { class: `status-chip chip-${waits.length ? 'awaiting_approval' : v.status}`, 'data-testid': 'tool-status' }, icon(statusIcon), el('span', { text: label })));
    const parts = [head];
    if (task) parts.push(el('p', { class: 'subagent-task', 'data-testid': 'subagent-task' }, el('span', { class: 'section-label', text: 'Task ' }), el('span', { text: task })));
    const inner = [];
    for (const t of tools) {
      inner.push(el('li', { class: `subagent-tool status-${t.status}`, 'data-testid': 'subagent-tool', 'data-tool-name': t.tool_name || '', 'data-status': t.status },
        icon(ICONS.tool), el('span', { class: 'tool-name', text: ` ${t.tool_name || 'tool'} ` }),
        el('span', { class: `status-chip chip-${t.status}`, text: STATUS_LABEL[t.status] || t.status.replace(/_/g, ' ') })));
    }
    if (working && c && c.text) inner.push(el('li', { class: 'subagent-text', 'data-testid': 'subagent-text', text: c.text }));
    for (const it of waits) inner.push(el('li', { class: 'subagent-wait' }, childInterruptBox(s, it)));
    const body = el('details', { class: 'tool-section subagent-body', 'data-testid': 'subagent-body', open: open || undefined },
      el('summary', null, el('span', { class: 'section-label', text: 'Its work' }),
        el('span', { class: 'preview', text: childID ? ` in session ${childID}` : '' })),
      inner.length ? el('ul', { class: 'subagent-steps' }, ...inner) : el('p', { class: 'tool-note', text: working ? 'Starting…' : 'Nothing to show here; open its session for the details.' }),
      childID ? el('p', { class: 'tool-note' }, el('a', { href: `?session=${encodeURIComponent(childID)}`, 'data-testid': 'subagent-open',
        onclick: (e) => { e.preventDefault(); navigate(childID); } }, 'Open its session')) : '');
    body.addEventListener('toggle', () => { u.subOpen = body.open; });
    parts.push(body);
    if (answer && v.status === 'succeeded') {
      parts.push(el('div', { class: 'subagent-answer', 'data-testid': 'subagent-answer' }, el('span', { class: 'section-label', text: 'Answer ' }), el('span', { text: answer })));
    }
    if (v.error) parts.push(el('p', { class: 'tool-note error', text: v.error }));
    if (cancelled) parts.push(el('p', { class: 'tool-note cancelled-note', 'data-testid': 'tool-cancelled-note' }, icon(ICONS.stop), el('span', { text: ' Stopped with the turn: the sub-agent cancelled its work.' })));
    li.replaceChildren(el('div', { class: 'tool-card' }, ...parts));
  }

  // snapSubAgent is the snapshot's entry of a child the session still
  // waits on, or undefined.
  function snapSubAgent(s, childID) {
    return ((s.snapshot && s.snapshot.sub_agents) || []).find((c) => c.session_id === childID);
  }

  // childInterruptBox is a sub-agent's approval or question, answered
  // through this session.
  function childInterruptBox(s, it) {
    const u = uiState(`${it.session_id}/${it.interrupt_id}`);
    const busy = u.busy;
    if (it.kind === 'question') {
      return el('div', { class: 'approval question', 'data-testid': 'question' },
        el('div', { class: 'approval-text' }, el('strong', { text: 'Question for you.' }), el('span', { class: 'question-text', 'data-testid': 'question-text', text: it.question || '' })),
        el('div', { class: 'approval-buttons question-choices' },
          ...(it.choices || []).map((ch) => el('button', { type: 'button', class: 'button', 'data-testid': 'question-choice', disabled: !!busy,
            onclick: () => answerQuestion(s, { ...it, tool_call_id: `${it.session_id}/${it.interrupt_id}` }, ch, false) }, ch)),
          el('button', { type: 'button', class: 'button ghost', 'data-testid': 'question-decline', disabled: !!busy,
            onclick: () => answerQuestion(s, { ...it, tool_call_id: `${it.session_id}/${it.interrupt_id}` }, '', true) }, 'Decline')));
    }
    const action = it.approval_text || `${it.tool_name} ${oneLine(it.arguments || '', 120)}`;
    return el('div', { class: 'approval', 'data-testid': 'subagent-approval' },
      el('div', { class: 'approval-text' },
        el('strong', { class: 'approval-action', 'data-testid': 'approval-text', text: action }),
        el('span', { text: ' The sub-agent runs it only after you approve it.' })),
      el('div', { class: 'approval-buttons' },
        el('button', { type: 'button', class: 'button success', 'data-testid': 'approve-button', disabled: !!busy,
          onclick: () => resolveInterrupt(s, { ...it, tool_call_id: `${it.session_id}/${it.interrupt_id}` }, true) }, icon(ICONS.check), busy === 'approving' ? 'Approving…' : 'Approve'),
        el('button', { type: 'button', class: 'button danger-outline', 'data-testid': 'reject-button', disabled: !!busy,
          onclick: () => resolveInterrupt(s, { ...it, tool_call_id: `${it.session_id}/${it.interrupt_id}` }, false) }, icon(ICONS.x), 'Reject')));
  }

  // endedReason says why the session takes no new messages ("was closed",
  // "was terminated", "is closing"), or ''.
  function endedReason(s) {
    const st = (s.snapshot && s.snapshot.state) || {};
    if (s.ended) return s.ended;
    return st.closed || st.status === 'closed' ? 'is closing' : '';
  }

  // renderEnded makes an ended or closing session read-only: the composer
  // is off and says why, and the connection pill says it is closed.
  function renderEnded(s, ended) {
    const input = $('message-input');
    const note = !ended ? '' : ended === 'is closing'
      ? 'This session is closing: its running turn finishes, and it takes no new messages.'
      : `This session ${ended}: it is read-only.`;
    $('composer').classList.toggle('ended', !!ended);
    $('close-session').hidden = !!ended;
    $('composer').dataset.ended = ended ? 'true' : 'false';
    const off = !!ended || !app.session;
    if (input.disabled !== off) input.disabled = off;
    if (ended) {
      if (input.placeholder !== note) input.placeholder = note;
      if ($('composer-hint').textContent !== note) $('composer-hint').textContent = note;
      $('plan-mode').closest('.plan-switch').hidden = true;
      if (s.ended) setConnection('closed', 'Closed: read-only');
    }
    updateSendButton();
  }

  // The operator view (names, effects, raw JSON, usage, the session's own
  // messages to the model) or the end-user view, kept per browser.
  const OPERATOR_KEY = 'dex.operatorView';
  function setOperatorView(on) {
    document.body.classList.toggle('operator', on);
    $('operator-toggle').setAttribute('aria-pressed', on ? 'true' : 'false');
    $('operator-toggle').textContent = on ? 'Operator view: on' : 'Operator view';
    try { localStorage.setItem(OPERATOR_KEY, on ? '1' : '0'); } catch { /* private mode */ }
  }
  const operatorView = () => document.body.classList.contains('operator');

  // ---------------------------------------------------------------- composer

  function autoGrow() {
    const t = $('message-input');
    t.style.height = 'auto';
    t.style.height = `${Math.min(t.scrollHeight, 220)}px`;
  }

  function updateSendButton() {
    const t = $('message-input');
    const empty = t.disabled || !t.value.trim();
    $('send-button').disabled = empty;
    $('steer-button').disabled = empty;
  }

  // renderTurnControls shows Stop and Steer while a turn runs; Send then
  // queues the message for after the turn.
  function renderTurnControls(s) {
    const turn = activeTurn(s);
    const st = (s.snapshot && s.snapshot.state) || {};
    const stopping = !!turn && (s.stopping === turn || st.turn_control === 'turn_cancelled');
    const stop = $('stop-button');
    stop.hidden = !turn;
    stop.disabled = stopping;
    stop.dataset.turnId = turn;
    const stopText = stopping ? 'Stopping…' : 'Stop';
    if ($('stop-label').textContent !== stopText) $('stop-label').textContent = stopText;
    $('steer-button').hidden = !turn;
    const send = $('send-button');
    const sendLabel = turn ? 'Queue message: it is answered after this turn' : 'Send message';
    if (send.getAttribute('aria-label') !== sendLabel) { send.setAttribute('aria-label', sendLabel); send.title = turn ? 'Queue (Enter): answered after this turn' : ''; }
    $('composer').classList.toggle('turn-running', !!turn);
    const hint = turn ? 'Enter queues it for after this turn · Ctrl+Enter steers the turn now' : 'Enter to send · Shift+Enter for a new line';
    if ($('composer-hint').textContent !== hint) $('composer-hint').textContent = hint;
  }

  // ---------------------------------------------------------------- sidebar (narrow screens)

  function openSidebar() {
    document.body.classList.add('sidebar-open');
    $('sidebar-toggle').setAttribute('aria-expanded', 'true');
    $('scrim').hidden = false;
  }
  function closeSidebar() {
    document.body.classList.remove('sidebar-open');
    $('sidebar-toggle').setAttribute('aria-expanded', 'false');
    $('scrim').hidden = true;
  }

  // ---------------------------------------------------------------- start

  function init() {
    const fromLink = readTokenFromFragment();
    app.token = store.get('sessionStorage', TOKEN_KEY) || '';

    $('signin-form').addEventListener('submit', (e) => {
      e.preventDefault();
      const v = $('token-input').value.trim();
      if (!v) { $('signin-error').textContent = 'Paste a token first.'; return; }
      $('signin-error').textContent = '';
      $('token-input').value = '';
      (async () => {
        if (await cookieSignIn(v)) { signIn(COOKIE); return; }
        store.set('sessionStorage', TOKEN_KEY, v);
        signIn(v);
      })();
    });
    $('sign-out').addEventListener('click', () => signOut(''));
    $('agent-select').addEventListener('change', updateStartButton);
    $('start-form').addEventListener('submit', startSession);
    $('start-message').addEventListener('keydown', (e) => {
      if (e.key === 'Enter' && (e.metaKey || e.ctrlKey)) { e.preventDefault(); $('start-form').requestSubmit(); }
    });
    $('open-form').addEventListener('submit', (e) => {
      e.preventDefault();
      const id = $('open-id').value.trim();
      if (!id) { $('open-id').focus(); return; }
      $('open-id').value = '';
      navigate(id);
    });
    $('new-session').addEventListener('click', () => navigate(''));
    $('brand').addEventListener('click', (e) => { e.preventDefault(); navigate(''); });
    $('composer').addEventListener('submit', (e) => sendMessage(e, 'queue'));
    setOperatorView(localStorage.getItem(OPERATOR_KEY) === '1');
    $('operator-toggle').addEventListener('click', () => {
      setOperatorView(!document.body.classList.contains('operator'));
      const s = app.session;
      if (s) { document.querySelectorAll('#messages li').forEach((li) => { li.dataset.sig = ''; }); scheduleRender(); }
    });
    $('plan-mode').addEventListener('change', () => setPlanMode($('plan-mode').checked));
    $('execute-plan').addEventListener('click', () => { if (app.session) executePlan(app.session); });
    const input = $('message-input');
    input.addEventListener('input', () => { autoGrow(); updateSendButton(); });
    input.addEventListener('keydown', (e) => {
      if (e.key === 'Enter' && !e.shiftKey && !e.isComposing && e.keyCode !== 229) {
        e.preventDefault();
        sendMessage(null, (e.ctrlKey || e.metaKey) && activeTurn(app.session) ? 'steer' : 'queue');
      }
    });
    $('steer-button').addEventListener('click', () => { if (activeTurn(app.session)) sendMessage(null, 'steer'); });
    $('stop-button').addEventListener('click', () => { if (app.session) stopTurn(app.session); });
    $('inbox-link').addEventListener('click', (e) => { e.preventDefault(); navigate('', '', 'inbox'); });
    $('report-link').addEventListener('click', (e) => { e.preventDefault(); navigate('', '', 'report'); });
    $('report-file').addEventListener('change', () => {
      const file = $('report-file').files[0];
      if (!file) return;
      file.text().then((text) => {
        let report;
        try { report = JSON.parse(text); } catch (err) { showReportError(`${file.name} is not JSON: ${err.message}`); return; }
        if (!report || typeof report.format !== 'string' || !report.format.startsWith('dex-eval-report/1') || !Array.isArray(report.cases)) {
          showReportError(`${file.name} is not an eval report (want "format": "dex-eval-report/1", as eval run --out writes it)`);
          return;
        }
        renderReport(report);
      }, (err) => showReportError(`cannot read ${file.name}: ${err.message}`));
    });
    $('inbox-refresh').addEventListener('click', () => loadInbox(true));
    $('inbox-more').addEventListener('click', () => loadInbox(false, true));
    document.addEventListener('visibilitychange', () => { if (!document.hidden && app.token) loadInbox(false); });
    // A hidden tab lets go of its change feed: over HTTP/1.1 a browser
    // opens at most six connections to a host, and each open tab holds its
    // session's event stream already. Back in view, it reads the lists and
    // follows the feed again.
    document.addEventListener('visibilitychange', () => {
      if (document.hidden) stopChanges();
      else if (app.token && !changes.abort) followChanges();
    });
    $('retry-turn').addEventListener('click', () => { if (app.session) retryTurn(app.session); });
    $('error-dismiss').addEventListener('click', () => {
      if (app.session) { app.session.dismissedError = $('error-text').textContent; scheduleRender(); }
    });
    $('copy-id').addEventListener('click', async () => {
      const id = app.session && app.session.id;
      if (!id) return;
      try { await navigator.clipboard.writeText(id); toast('Session ID copied.'); } catch {
        const r = document.createRange(); r.selectNodeContents($('session-id'));
        const sel = getSelection(); sel.removeAllRanges(); sel.addRange(r);
      }
    });
    $('sidebar-toggle').addEventListener('click', () => {
      if (document.body.classList.contains('sidebar-open')) closeSidebar(); else openSidebar();
    });
    $('scrim').addEventListener('click', closeSidebar);
    document.addEventListener('keydown', (e) => { if (e.key === 'Escape') closeSidebar(); });
    window.addEventListener('popstate', () => route());
    // Deadlines and "x minutes ago" labels move on.
    setInterval(() => {
      if (app.session) {
        for (const node of rendered.values()) if (node.querySelector('[data-testid="deadline"]')) node.dataset.sig = '';
        scheduleRender();
      }
      renderRecent();
    }, 30000);
    // The inbox refreshes often while it shows, its count in the sidebar
    // now and then.
    // While the change feed is connected, it says when to read them
    // again, and these reads are only a safety net.
    setInterval(() => {
      if (!app.token || document.hidden) return;
      const showing = document.body.dataset.view === 'inbox';
      const every = changes.live ? CHANGES_POLL_MS : showing ? 0 : INBOX_BADGE_MS;
      if (Date.now() - inbox.loadedAt >= every) loadInbox(false);
      if (Date.now() - convs.loadedAt >= (changes.live ? CHANGES_POLL_MS : 0)) loadConversations();
    }, INBOX_REFRESH_MS);
    $('conv-search').addEventListener('input', renderRecent);
    $('show-archived').addEventListener('change', renderRecent);
    $('conv-more').addEventListener('click', () => { convs.pages++; loadConversations(); });
    $('rename-session').addEventListener('click', renameCurrentSession);
    $('archive-session').addEventListener('click', archiveCurrentSession);
    $('close-session').addEventListener('click', closeCurrentSession);

    renderRecent();
    (async () => {
      // A link's token signs the browser in with the cookie where the
      // server gives one, else it stays in this tab.
      if (fromLink) {
        if (await cookieSignIn(fromLink)) {
          store.remove('sessionStorage', TOKEN_KEY);
          app.token = COOKIE;
        } else {
          store.set('sessionStorage', TOKEN_KEY, fromLink);
          app.token = fromLink;
        }
      } else if (!app.token && await cookieSignedIn()) {
        app.token = COOKIE;
      }
      if (app.token) signIn(app.token); else showView('signin');
    })();
  }

  if (document.readyState === 'loading') document.addEventListener('DOMContentLoaded', init);
  else init();
})();
