// Browser test of turn control on the web page, run by internal/e2e
// (TestWebChatTurnControl) against a worker serving the orders demo agent:
// Stop while a refund waits for approval (the approval goes away, the turn
// ends cancelled, the next message works); Steer from the composer while a
// refund waits (the approval is withdrawn and the steered message gets its
// answer); "Steer now" on a queued message and Delete of another; and the
// "Needs you" inbox, which lists a session waiting for an approval and
// opens it. No refund is ever approved. Environment and exit codes: see
// lib.mjs. Screenshots: <SCREENSHOT>-stop.png (the Stop button),
// -queued.png (queued messages), -steered.png (after "Steer now"), and the
// inbox at <SCREENSHOT>.

import { run, step, log, snapshot, openSignedIn, SCREENSHOT, shotPath, BASE_URL, API_TOKEN } from './lib.mjs';

const refundCard = (page, extra = '') => page.locator(`[data-testid="tool-card"][data-tool-name="refund_order"]${extra}`);
const answer = (page, re) => page.locator('[data-testid="message"][data-role="assistant"] [data-testid="message-text"]').filter({ hasText: re });
const ready = (page) => page.locator('[data-testid="session-status"][data-status="waiting_for_user_message"]').waitFor();

// waitSnapshot polls the session's snapshot until ok(snapshot) holds.
async function waitSnapshot(id, what, ok, ms = 20_000) {
  const end = Date.now() + ms;
  let last;
  while (Date.now() < end) {
    last = await snapshot(id);
    if (ok(last)) return last;
    await new Promise((r) => setTimeout(r, 200));
  }
  throw new Error(`${what}: not seen within ${ms / 1000}s; last snapshot ${JSON.stringify(last).slice(0, 1500)}`);
}

// waitList polls GET /v1/sessions?status=all until session id's entry
// satisfies ok.
async function waitList(id, ok, ms = 30_000) {
  const end = Date.now() + ms;
  let last;
  while (Date.now() < end) {
    const res = await fetch(`${BASE_URL}/v1/sessions?status=all&page_size=50`, { headers: { Authorization: `Bearer ${API_TOKEN}` } });
    last = ((await res.json()).sessions || []).find((x) => x.session_id === id);
    if (last && ok(last)) return last;
    await new Promise((r) => setTimeout(r, 300));
  }
  throw new Error(`the list's entry of ${id}: ${JSON.stringify(last)}`);
}

// send types text and presses the composer's button (send or steer).
async function send(page, text, button = 'send-button') {
  await page.getByTestId('message-input').fill(text);
  await page.getByTestId(button).click();
}

// refundWaits sends "refund order 7" and waits for its approval card; it
// returns the card of this turn's call.
async function refundWaits(page, sessionID) {
  const before = await refundCard(page).count();
  await send(page, 'refund order 7');
  await refundCard(page, '[data-status="awaiting_approval"]').getByTestId('approve-button').waitFor();
  const n = await refundCard(page).count();
  if (n !== before + 1) throw new Error(`${n} refund_order cards after a new refund, want ${before + 1}`);
  const snap = await waitSnapshot(sessionID, 'the pending approval', (s) => (s.pending_interrupts || []).length === 1 && !!s.state.active_turn_id);
  if (!snap.state.accepts_turn_control) throw new Error('the session does not accept turn control');
  return { card: refundCard(page).nth(n - 1), turn: snap.state.active_turn_id, callID: snap.pending_interrupts[0].tool_call_id };
}

// withdrawn checks that the refund's approval is gone for the reason.
async function withdrawn(page, card, reason) {
  await card.and(page.locator(`[data-status="rejected"][data-cancellation-reason="${reason}"]`)).waitFor();
  const note = (await card.getByTestId('tool-cancelled-note').textContent()) || '';
  const why = reason === 'steered' ? /you steered the conversation, so refund_order did not run/ : /you stopped the turn, so refund_order did not run/;
  if (!why.test(note)) throw new Error(`the withdrawn approval's note reads "${note}"`);
  if (await page.getByTestId('approve-button').count()) throw new Error('an Approve button is still shown');
  const chip = (await card.getByTestId('tool-status').textContent()) || '';
  if (!/Cancelled/.test(chip)) throw new Error(`the withdrawn call's status reads "${chip}"`);
}

await run('control.test', async (page) => {
  await step('open the page and start "refund order 7"', async () => {
    await openSignedIn(page);
    const select = page.getByTestId('agent-select');
    await select.locator('option[value="orders"]').waitFor({ state: 'attached' });
    await select.selectOption('orders');
    await page.getByTestId('start-message').fill('refund order 7');
    await page.getByTestId('start-button').click();
    await page.waitForURL(/[?&]session=/);
    await refundCard(page, '[data-status="awaiting_approval"]').getByTestId('approve-button').waitFor();
  });
  const sessionID = new URL(page.url()).searchParams.get('session');
  log(`session ${sessionID}`);

  // (a) Stop.
  let turn;
  await step('a running turn shows Stop and Steer; Send queues', async () => {
    const snap = await waitSnapshot(sessionID, 'the pending approval', (s) => (s.pending_interrupts || []).length === 1);
    turn = snap.state.active_turn_id;
    await page.locator(`[data-testid="stop-button"][data-turn-id="${turn}"]`).waitFor();
    await page.getByTestId('steer-button').waitFor();
    if (!(await page.getByTestId('steer-button').isDisabled())) throw new Error('Steer is enabled with an empty composer');
    const label = await page.getByTestId('send-button').getAttribute('aria-label');
    if (!/Queue/.test(label || '')) throw new Error(`Send's label reads "${label}" while a turn runs`);
    await page.locator('[data-testid="connection-state"][data-state="live"]').waitFor();
    if (SCREENSHOT) {
      await page.getByTestId('message-input').fill('look up order 3');
      await page.getByTestId('message-input').blur();
      await page.screenshot({ path: shotPath('-stop'), fullPage: true, animations: 'disabled' });
      await page.getByTestId('message-input').fill('');
    }
  });

  await step('Stop: the approval goes away and the turn ends cancelled', async () => {
    await page.getByTestId('stop-button').click();
    await withdrawn(page, refundCard(page).first(), 'turn_cancelled');
    await page.locator(`[data-testid="turn-note"][data-note-kind="turn_cancelled"][data-turn-id="${turn}"]`).waitFor();
    await ready(page);
    await page.getByTestId('stop-button').waitFor({ state: 'hidden' });
    await page.getByTestId('steer-button').waitFor({ state: 'hidden' });
    // The turn's live text gave way to the stored messages.
    await page.waitForFunction((t) => !document.querySelector(`[data-testid="message"][data-source="live"][data-turn-id="${t}"]`), turn);
    await answer(page, /has \$62\.50 left to refund/).first().waitFor();
    // The demo runner builds the turn's unfinished-turn messages, so the
    // session stores no note besides them (ApplyTurnControl: one or the
    // other).
    if (await page.locator('[data-testid="message"][data-role="host"]').filter({ hasText: 'The previous turn failed' }).count()) {
      throw new Error('a stopped turn left a turn-failure note beside its unfinished-turn messages');
    }
    const snap = await waitSnapshot(sessionID, 'the cancelled turn', (s) => !s.state.active_turn_id);
    const result = (snap.messages || []).find((m) => m.role === 'tool' && m.tool_name === 'refund_order');
    if (!result || !/turn_cancelled_by_user/.test(result.text || '')) throw new Error(`the stored refund result: ${JSON.stringify(result)}`);
    if ((snap.pending_interrupts || []).length) throw new Error(`interrupts still pending: ${JSON.stringify(snap.pending_interrupts)}`);
  });

  await step('the next message works after Stop', async () => {
    await send(page, 'look up order 3');
    await answer(page, /^\s*Order 3: monitor arm for customer-3/).first().waitFor();
    await ready(page);
    // The note stays where the cancelled turn ended, before the new message.
    const order = await page.locator('[data-testid="turn-note"], [data-testid="message"][data-role="user"]')
      .evaluateAll((els) => els.map((e) => e.dataset.testid === 'turn-note' ? 'note' : e.querySelector('[data-testid="message-text"]').textContent.trim()));
    if (JSON.stringify(order) !== JSON.stringify(['refund order 7', 'note', 'look up order 3'])) throw new Error(`transcript order: ${JSON.stringify(order)}`);
  });

  // (b) Steer from the composer.
  await step('Steer while a refund waits: the approval is withdrawn, the steered message is answered', async () => {
    const { card, turn: t } = await refundWaits(page, sessionID);
    await page.getByTestId('message-input').fill('look up order 2');
    if (await page.getByTestId('steer-button').isDisabled()) throw new Error('Steer is disabled with text in the composer');
    await page.getByTestId('steer-button').click();
    await withdrawn(page, card, 'steered');
    await page.locator(`[data-testid="turn-note"][data-note-kind="turn_steered"][data-turn-id="${t}"]`).waitFor();
    await answer(page, /^\s*Order 2: keyboard for customer-2/).first().waitFor();
    await ready(page);
    const note = await page.locator(`[data-testid="turn-note"][data-turn-id="${t}"]`).textContent();
    if (!/steered the conversation/.test(note || '')) throw new Error(`the steered turn's note reads "${note}"`);
    const users = await page.locator('[data-testid="message"][data-role="user"]').allTextContents();
    if (users.filter((u) => /look up order 2/.test(u)).length !== 1) throw new Error(`user messages: ${JSON.stringify(users)}`);
    if (await page.getByTestId('message-input').inputValue()) throw new Error('the composer kept the steered text');
  });

  // (c) Queued messages: Delete one, "Steer now" another.
  await step('messages sent while a refund waits are queued with Steer now and Delete', async () => {
    await refundWaits(page, sessionID);
    await send(page, 'look up order 5');
    await send(page, 'look up order 4');
    const queued = page.locator('[data-testid="message"][data-source="queued"]');
    await queued.filter({ hasText: 'look up order 4' }).getByTestId('queued-delete').waitFor();
    await queued.filter({ hasText: 'look up order 5' }).getByTestId('queued-steer').waitFor();
    const n = await queued.count();
    if (n !== 2) throw new Error(`${n} queued messages shown, want 2`);
    const tags = await queued.locator('.tag').allTextContents();
    if (tags.some((x) => x !== 'Queued')) throw new Error(`queued tags: ${JSON.stringify(tags)}`);
    await waitSnapshot(sessionID, 'two queued messages', (s) => (s.queued_messages || []).length === 2);
    if (SCREENSHOT) { await page.getByTestId('message-input').blur(); await page.screenshot({ path: shotPath('-queued'), animations: 'disabled' }); }
  });

  await step('Delete takes a queued message back', async () => {
    await page.locator('[data-testid="message"][data-source="queued"]').filter({ hasText: 'look up order 4' }).getByTestId('queued-delete').click();
    await page.locator('[data-testid="message"]').filter({ hasText: 'look up order 4' }).waitFor({ state: 'detached' });
    const snap = await waitSnapshot(sessionID, 'one queued message', (s) => (s.queued_messages || []).length === 1);
    if (snap.queued_messages[0].text !== 'look up order 5') throw new Error(`still queued: ${JSON.stringify(snap.queued_messages)}`);
    if ((snap.pending_interrupts || []).length !== 1) throw new Error('Delete touched the pending approval');
  });

  await step('"Steer now" on a queued message steers the turn with it', async () => {
    const last = refundCard(page).last();
    const t = (await snapshot(sessionID)).state.active_turn_id;
    await page.locator('[data-testid="message"][data-source="queued"]').filter({ hasText: 'look up order 5' }).getByTestId('queued-steer').click();
    await withdrawn(page, last, 'steered');
    await page.locator(`[data-testid="turn-note"][data-note-kind="turn_steered"][data-turn-id="${t}"]`).waitFor();
    await answer(page, /^\s*Order 5: webcam for customer-5/).first().waitFor();
    await ready(page);
    await page.locator('[data-testid="message"][data-source="queued"]').waitFor({ state: 'detached' });
    const snap = await waitSnapshot(sessionID, 'the steered turn', (s) => !s.state.active_turn_id);
    if ((snap.queued_messages || []).length || (snap.steered_messages || []).length) throw new Error(`left queued ${JSON.stringify(snap.queued_messages)} steered ${JSON.stringify(snap.steered_messages)}`);
    const users = (snap.messages || []).filter((m) => m.role === 'user').map((m) => m.text);
    if (users.includes('look up order 4')) throw new Error(`the deleted message reached the session: ${JSON.stringify(users)}`);
    const n = await page.locator('[data-testid="message"][data-role="user"]').filter({ hasText: 'look up order 5' }).count();
    if (n !== 1) throw new Error(`"look up order 5" shows ${n} times`);
    if (SCREENSHOT) await page.screenshot({ path: shotPath('-steered'), animations: 'disabled' });
  });

  // (d) The inbox.
  let waitingID;
  await step('another session waits for an approval, and the Needs-you count follows at once', async () => {
    const count = async () => {
      const c = page.getByTestId('inbox-count');
      return (await c.isHidden()) ? 0 : Number((await c.textContent()) || '0');
    };
    const before = await count();
    await page.getByTestId('new-session-button').click();
    await page.getByTestId('start-message').fill('refund order 6');
    await page.getByTestId('start-button').click();
    await page.waitForURL((u) => { const id = new URL(u).searchParams.get('session'); return !!id && id !== sessionID; });
    await refundCard(page, '[data-status="awaiting_approval"]').getByTestId('approve-button').waitFor();
    waitingID = new URL(page.url()).searchParams.get('session');
    log(`waiting session ${waitingID}`);
    // From the session's own events, well before the 30 s refresh.
    await page.locator('[data-testid="inbox-count"]:not([hidden])').filter({ hasText: String(before + 1) }).waitFor({ timeout: 3000 });
  });

  await step('"Needs you" lists it with what it waits for', async () => {
    await page.getByTestId('inbox-link').click();
    await page.waitForURL(/[?&]view=inbox/);
    await page.getByTestId('inbox-view').waitFor();
    // The list comes from the engine's visibility store, which trails a
    // session by a moment: the page refreshes it by itself.
    const item = page.locator(`[data-testid="inbox-item"][data-session-id="${waitingID}"]`);
    await item.waitFor({ timeout: 45_000 });
    const chips = await item.getByTestId('inbox-waiting').allTextContents();
    if (JSON.stringify(chips) !== JSON.stringify(['Approval needed'])) throw new Error(`waiting chips: ${JSON.stringify(chips)}`);
    const text = (await item.textContent()) || '';
    if (!text.includes('refund order 6') || !text.includes(waitingID)) throw new Error(`the inbox item reads "${text}"`);
    // What it asks, as the action to approve (the tool's approval_text).
    await item.getByTestId('inbox-pending').filter({ hasText: /^Refund \$[\d,]+\.\d\d on order 6$/ }).waitFor();
    if (await page.locator(`[data-testid="inbox-item"][data-session-id="${sessionID}"]`).count()) throw new Error('the idle session is listed as waiting');
    await page.locator('[data-testid="inbox-count"]:not([hidden])').filter({ hasText: /^\d+$/ }).waitFor();
    if (SCREENSHOT) {
      await page.screenshot({ path: SCREENSHOT, fullPage: true, animations: 'disabled' });
      log(`screenshot: ${SCREENSHOT}`);
    }
  });

  await step('opening it from the inbox shows the approval', async () => {
    await page.locator(`[data-testid="inbox-item"][data-session-id="${waitingID}"] a`).click();
    await page.waitForURL((u) => new URL(u).searchParams.get('session') === waitingID);
    const card = refundCard(page, '[data-status="awaiting_approval"]');
    await card.getByTestId('approve-button').waitFor();
    const args = (await card.getByTestId('tool-arguments').textContent()) || '';
    if (!/"order_id":\s*"6"/.test(args)) throw new Error(`the approval's arguments: ${args}`);
    await page.getByTestId('stop-button').waitFor();
  });

  // (d2) The conversation list comes from the server: a session started
  // elsewhere (here through the API, as the CLI's chat does) appears by
  // itself with its title, the search finds it, and Close ends it.
  let elsewhereID;
  await step('a session started elsewhere appears in the list, and the search finds it', async () => {
    const res = await fetch(`${BASE_URL}/v1/sessions`, {
      method: 'POST', headers: { Authorization: `Bearer ${API_TOKEN}`, 'Content-Type': 'application/json' },
      body: JSON.stringify({ agent: 'orders', initial_message: 'look up order 2 from the terminal' }),
    });
    if (res.status !== 201) throw new Error(`start answered ${res.status}`);
    elsewhereID = (await res.json()).session_id;
    const row = page.locator(`[data-testid="recent-session"][data-session-id="${elsewhereID}"]`);
    await row.waitFor({ timeout: 45_000 }); // the list refreshes itself
    if (!((await row.textContent()) || '').includes('look up order 2 from the terminal')) throw new Error(`the row reads "${await row.textContent()}"`);
    await page.getByTestId('conversation-search').fill('FROM THE TERMINAL');
    const rows = await page.locator('[data-testid="recent-session"]').evaluateAll((els) => els.map((e) => e.dataset.sessionId));
    if (JSON.stringify(rows) !== JSON.stringify([elsewhereID])) throw new Error(`the search shows ${JSON.stringify(rows)}`);
    await page.getByTestId('conversation-search').fill('no such conversation');
    if (await page.locator('[data-testid="recent-session"]').count()) throw new Error('the search shows rows for nothing');
    await page.getByTestId('conversation-search').fill('');
  });

  await step('the list pages: Show more reads the next page', async () => {
    await page.evaluate(() => localStorage.setItem('dex.convPageSize', '2'));
    await page.reload();
    const server = '[data-testid="recent-session"][data-source="server"]';
    await page.getByTestId('conversations-more').waitFor();
    const first = await page.locator(server).count();
    if (first !== 2) throw new Error(`${first} listed sessions on the first page of 2`);
    await page.getByTestId('conversations-more').click();
    await page.waitForFunction(([sel, n]) => document.querySelectorAll(sel).length > n, [server, first]);
    await page.evaluate(() => localStorage.removeItem('dex.convPageSize'));
    await page.reload();
  });

  await step('Rename and Archive from the page', async () => {
    await page.locator(`[data-testid="recent-session"][data-session-id="${elsewhereID}"] a`).click();
    await page.waitForURL((u) => new URL(u).searchParams.get('session') === elsewhereID);
    await ready(page);
    page.once('dialog', (d) => d.accept('Order 2 for the carrier'));
    await page.getByTestId('rename-session').click();
    const row = page.locator(`[data-testid="recent-session"][data-session-id="${elsewhereID}"]`);
    await row.filter({ hasText: 'Order 2 for the carrier' }).waitFor();
    await page.getByTestId('archive-session').click();
    await row.waitFor({ state: 'detached' }); // archived: out of the list
    await page.locator('[data-testid="archive-session"]').filter({ hasText: 'Unarchive' }).waitFor();
    await page.getByTestId('show-archived').check();
    await row.filter({ hasText: 'Archived' }).waitFor();
    // The server keeps both (the list catches up by itself).
    await waitList(elsewhereID, (x) => x.title === 'Order 2 for the carrier' && x.archived === true);
    await page.getByTestId('archive-session').click(); // back in the list
    await page.getByTestId('show-archived').uncheck();
    await row.waitFor();
  });

  await step('Close from the page ends the conversation', async () => {
    page.once('dialog', (d) => d.accept());
    await page.getByTestId('close-session').click();
    await page.locator('[data-testid="composer"][data-ended="true"]').waitFor();
    await waitSnapshot(elsewhereID, 'the closed session', (s) => s.state.status === 'closed');
  });

  // (e) A session closed elsewhere (here through the API) while its page
  // is open, and the page has not heard of it (its change feed is cut
  // here): the next send is refused with the reason, the text stays in
  // the composer, no "Thinking…" or sending bubble is left behind, and the
  // page turns read-only; reopened, it is read-only from the start.
  await step('a message to a session closed elsewhere is refused, and the page turns read-only', async () => {
    await page.route('**/v1/sessions/changes', (r) => r.fulfill({ status: 404, contentType: 'application/json', body: '{"error":{"code":"not_found","message":"cut by the test"}}' }));
    await page.goto(`${BASE_URL}/?session=${encodeURIComponent(sessionID)}`);
    await ready(page);
    const res = await fetch(`${BASE_URL}/v1/sessions/${encodeURIComponent(sessionID)}/close`, {
      method: 'POST', headers: { Authorization: `Bearer ${API_TOKEN}`, 'Content-Type': 'application/json' }, body: '{}',
    });
    if (!res.ok) throw new Error(`close answered ${res.status}`);
    await waitSnapshot(sessionID, 'the closed session', (s) => s.state.status === 'closed');
    await send(page, 'look up order 1');
    await page.locator('[data-testid="toast"]').filter({ hasText: `session ${sessionID} was closed` }).waitFor();
    await page.locator('[data-testid="composer"][data-ended="true"]').waitFor();
    if (!(await page.getByTestId('message-input').isDisabled())) throw new Error('the composer of a closed session is enabled');
    if ((await page.getByTestId('message-input').inputValue()) !== 'look up order 1') throw new Error('the refused text left the composer');
    const placeholder = await page.getByTestId('message-input').getAttribute('placeholder');
    if (!/was closed: it is read-only/.test(placeholder || '')) throw new Error(`the composer says "${placeholder}"`);
    await page.locator('[data-testid="connection-state"][data-state="closed"]').waitFor();
    await page.waitForTimeout(1500); // nothing may start "thinking" later either
    const hanging = await page.locator('[data-testid="activity"], [data-testid="message"][data-source="sending"]').count();
    if (hanging) throw new Error(`${hanging} activity or sending bubble(s) on a closed session`);
    if (await page.getByTestId('send-button').isEnabled()) throw new Error('Send is enabled on a closed session');
    if (SCREENSHOT) await page.screenshot({ path: shotPath('-closed'), animations: 'disabled' });
    await page.unroute('**/v1/sessions/changes');
  });

  await step('a closed session opens read-only', async () => {
    await page.reload();
    await page.locator('[data-testid="composer"][data-ended="true"]').waitFor();
    const status = await page.getByTestId('session-status').textContent();
    if ((status || '').trim() !== 'Closed') throw new Error(`the status reads "${status}"`);
    if (await page.locator('[data-testid="activity"]').count()) throw new Error('a closed session shows activity');
  });

  // (f) With the change feed connected, a session closed elsewhere turns
  // read-only by itself, before anyone sends to it.
  await step('a session closed elsewhere turns read-only by itself', async () => {
    const res = await fetch(`${BASE_URL}/v1/sessions`, {
      method: 'POST', headers: { Authorization: `Bearer ${API_TOKEN}`, 'Content-Type': 'application/json' },
      body: JSON.stringify({ agent: 'orders', initial_message: 'look up order 2' }),
    });
    if (res.status !== 201) throw new Error(`start answered ${res.status}`);
    const id = (await res.json()).session_id;
    await page.goto(`${BASE_URL}/?session=${encodeURIComponent(id)}`);
    await page.locator('body[data-changes="live"]').waitFor();
    await ready(page);
    const closed = await fetch(`${BASE_URL}/v1/sessions/${encodeURIComponent(id)}/close`, {
      method: 'POST', headers: { Authorization: `Bearer ${API_TOKEN}`, 'Content-Type': 'application/json' }, body: '{}',
    });
    if (!closed.ok) throw new Error(`close answered ${closed.status}`);
    await page.locator('[data-testid="composer"][data-ended="true"]').waitFor({ timeout: 10_000 });
    await page.locator('[data-testid="connection-state"][data-state="closed"]').waitFor();
    if (!(await page.getByTestId('message-input').isDisabled())) throw new Error('the composer of a closed session is enabled');
  });
});
