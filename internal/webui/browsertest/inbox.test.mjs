// Browser test of answering from the Needs-you list, run by internal/e2e
// (browser inbox test) against the orders demo: a session started through
// the API waits for its refund's approval; the list shows the approval as
// the action it approves, Approve runs it without opening the session, and
// the row leaves the list. Environment and exit codes: see lib.mjs.

import { run, step, log, snapshot, openSignedIn, BASE_URL, API_TOKEN, SCREENSHOT, shotPath } from './lib.mjs';

async function startSession(message) {
  const res = await fetch(`${BASE_URL}/v1/sessions`, {
    method: 'POST', headers: { Authorization: `Bearer ${API_TOKEN}`, 'Content-Type': 'application/json' },
    body: JSON.stringify({ agent: 'orders', initial_message: message }),
  });
  if (res.status !== 201) throw new Error(`POST /v1/sessions answered ${res.status}`);
  return (await res.json()).session_id;
}

async function waitFor(what, fn, ms = 30_000) {
  const end = Date.now() + ms;
  for (;;) {
    if (await fn()) return;
    if (Date.now() > end) throw new Error(`timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 200));
  }
}

await run('inbox.test', async (page) => {
  let id;
  await step('a session waits for a refund approval', async () => {
    id = await startSession('refund order 4');
    log(`session ${id}`);
    await waitFor('the approval', async () => ((await snapshot(id)).pending_interrupts || []).length === 1);
  });
  const row = page.locator(`[data-testid="inbox-item"][data-session-id="${id}"]`);
  await step('Needs you lists it with Approve and Reject', async () => {
    await openSignedIn(page);
    await page.getByTestId('inbox-link').click();
    await page.waitForURL(/[?&]view=inbox/);
    await row.getByTestId('inbox-act').waitFor({ timeout: 45_000 });
    const text = await row.getByTestId('inbox-act').textContent();
    if (!/Refund \$[\d,]+\.\d\d on order 4/.test(text || '')) throw new Error(`the action reads "${text}"`);
    if (SCREENSHOT) await page.screenshot({ path: shotPath('-list'), fullPage: true, animations: 'disabled' });
  });
  await step('Approve in the list: the refund runs and the row leaves', async () => {
    await row.getByTestId('inbox-approve').click();
    await waitFor('the refund', async () => {
      const s = await snapshot(id);
      const last = (s.messages || [])[(s.messages || []).length - 1];
      return s.state && s.state.status === 'waiting_for_user_message' && last && /Refunded/.test(last.text || '');
    });
    await row.waitFor({ state: 'detached', timeout: 45_000 });
    if (page.url().includes('session=')) throw new Error('approving opened the session');
  });
});
