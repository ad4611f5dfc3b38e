// Browser test of the live conversation list and Needs-you count, run by
// internal/e2e (TestWebChatLiveListAndNeedsYou) against the orders demo.
// The page follows the change feed (GET /v1/sessions/changes); while the
// feed is connected it polls the lists only once a minute, so every wait
// below (at most 10 s) is met by the feed, not by a poll:
//   - a session started by the CLI (straight through Temporal, not the
//     HTTP API) appears in the list;
//   - its refund waits for an approval: the Needs-you count goes up;
//   - the approval is rejected through the API: the count goes down;
//   - the CLI closes it: its row says Closed.
// Environment: see lib.mjs, and DEX_CLI (the worker binary), DEX_ADDRESS
// (the engine), DEX_CONFIG (the worker's config). Screenshots:
// <SCREENSHOT>-desktop.png and -phone.png (the list and the count).

import { execFile } from 'node:child_process';
import { promisify } from 'node:util';
import { run, step, log, openSignedIn, snapshot, SCREENSHOT, shotPath, BASE_URL, API_TOKEN } from './lib.mjs';

const LIVE_MS = 10_000;
const cli = async (...args) => {
  const { stdout } = await promisify(execFile)(process.env.DEX_CLI, [...args, '--address', process.env.DEX_ADDRESS, '--config', process.env.DEX_CONFIG], { timeout: 30_000 });
  return stdout.trim();
};

const count = async (page) => {
  const c = page.getByTestId('inbox-count');
  return (await c.isHidden()) ? 0 : Number((await c.textContent()) || '0');
};
const countIs = (page, n) => (n === 0
  ? page.locator('[data-testid="inbox-count"][hidden]').waitFor({ state: 'attached', timeout: LIVE_MS })
  : page.locator('[data-testid="inbox-count"]:not([hidden])').filter({ hasText: new RegExp(`^${n}$`) }).waitFor({ timeout: LIVE_MS }));

await run('feed.test', async (page) => {
  let before;
  await step('open the page: the change feed connects', async () => {
    await openSignedIn(page);
    await page.locator('body[data-changes="live"]').waitFor();
    await page.locator('#recent-empty:not([hidden]), [data-testid="recent-session"]').first().waitFor();
    before = await count(page);
  });

  let id;
  await step('a session the CLI starts appears in the list', async () => {
    id = await cli('session', 'start', '--agent', 'orders', '--message', 'refund order 8 from the terminal');
    log(`session ${id}`);
    const row = page.locator(`[data-testid="recent-session"][data-session-id="${id}"]`);
    await row.waitFor({ timeout: LIVE_MS });
    if (!((await row.textContent()) || '').includes('refund order 8 from the terminal')) throw new Error(`the row reads "${await row.textContent()}"`);
  });

  await step('its refund waits for an approval: the Needs-you count goes up', async () => {
    await countIs(page, before + 1);
    await page.locator(`[data-testid="recent-session"][data-session-id="${id}"][data-status="Needs you"]`).waitFor({ timeout: LIVE_MS });
    if (SCREENSHOT) await page.screenshot({ path: shotPath('-desktop'), animations: 'disabled' });
    await page.setViewportSize({ width: 390, height: 844 });
    await page.locator('#sidebar-toggle').click();
    await page.locator(`[data-testid="recent-session"][data-session-id="${id}"]`).waitFor({ state: 'visible' });
    if (SCREENSHOT) await page.screenshot({ path: shotPath('-phone'), animations: 'disabled' });
    await page.setViewportSize({ width: 1280, height: 860 });
  });

  await step('the approval is rejected elsewhere: the count goes down', async () => {
    const snap = await snapshot(id);
    const it = (snap.pending_interrupts || [])[0];
    if (!it) throw new Error('no pending approval');
    const res = await fetch(`${BASE_URL}/v1/sessions/${encodeURIComponent(id)}/interrupts/${encodeURIComponent(it.interrupt_id)}`, {
      method: 'POST', headers: { Authorization: `Bearer ${API_TOKEN}`, 'Content-Type': 'application/json' },
      body: JSON.stringify({ approved: false, digest: it.digest, rejection_message: 'not now' }),
    });
    if (!res.ok) throw new Error(`reject answered ${res.status}: ${await res.text()}`);
    await countIs(page, before);
  });

  await step('the CLI closes it: its row says Closed', async () => {
    await page.locator(`[data-testid="recent-session"][data-session-id="${id}"]:not([data-status="Needs you"])`).waitFor({ timeout: LIVE_MS });
    await cli('session', 'close', id);
    await page.locator(`[data-testid="recent-session"][data-session-id="${id}"][data-status="Closed"]`).waitFor({ timeout: LIVE_MS });
  });
});
