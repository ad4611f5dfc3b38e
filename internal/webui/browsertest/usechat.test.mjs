// End-to-end browser test of examples/useChat: the React page whose
// useChat (AI SDK 6) drives an orders session through the worker's UI
// message stream routes, served by the example's server.mjs (which proxies
// /v1 to the worker). Run by internal/e2e's TestUseChatExamplePage.
//
// Environment and exit codes: see lib.mjs (BASE_URL is the example's
// server). It also writes <SCREENSHOT>-approval.png.

import { run, step, log, snapshot, shotPath, BASE_URL, API_TOKEN, SCREENSHOT } from './lib.mjs';

await run('usechat.test', async (page) => {
  await step('open the page and start an orders session', async () => {
    const res = await page.goto(`${BASE_URL}/`);
    if (!res || res.status() !== 200) throw new Error(`GET / answered ${res && res.status()}`);
    await page.locator('input[name=token]').fill(API_TOKEN);
    await page.locator('input[name=agent]').fill('orders');
    await page.getByRole('button', { name: 'Open chat' }).click();
    await page.waitForURL(/[?&]session=/);
    await page.locator('.status[data-status=ready]').waitFor();
  });
  const sessionID = new URL(page.url()).searchParams.get('session');
  log(`session ${sessionID}`);

  await step('send "refund order 7" with useChat and see the approval request', async () => {
    await page.locator('input[name=message]').fill('refund order 7');
    await page.getByRole('button', { name: 'Send' }).click();
    await page.locator('.tool[data-tool=lookup_order][data-state=output-available]').waitFor();
    await page.locator('.tool[data-tool=refund_order][data-state=approval-requested]').waitFor();
    if (SCREENSHOT) await page.screenshot({ path: shotPath('-approval'), fullPage: true });
    // The model's text before the refund is on the screen when it pauses.
    await page.locator('.message.assistant .text', { hasText: "I'll ask to refund it." }).waitFor();
    const snap = await snapshot(sessionID);
    if (!snap.pending_interrupts.some((i) => i.tool_name === 'refund_order')) {
      throw new Error(`the session holds no approval for refund_order: ${JSON.stringify(snap.pending_interrupts)}`);
    }
  });

  await step('approve with the AI SDK approval response; the turn finishes in the same message', async () => {
    await page.getByRole('button', { name: 'Approve' }).click();
    await page.locator('.tool[data-tool=refund_order][data-state=output-available]').waitFor();
    await page.locator('.message.assistant .text', { hasText: 'Done. Refunded $62.50 of order 7' }).waitFor();
    await page.locator('.status[data-status=ready]').waitFor();
    const assistants = await page.locator('.message.assistant').count();
    if (assistants !== 1) throw new Error(`${assistants} assistant messages, want the one turn`);
    await page.locator('.usage').first().waitFor();
  });

  await step('a reload shows no running turn and keeps the page working', async () => {
    await page.reload();
    await page.locator('input[name=token]').fill(API_TOKEN);
    await page.getByRole('button', { name: 'Open chat' }).click();
    await page.locator('.status[data-status=ready]').waitFor();
    const snap = await snapshot(sessionID);
    if (snap.state.active_turn_id) throw new Error(`a turn still runs: ${snap.state.active_turn_id}`);
  });
  if (SCREENSHOT) await page.screenshot({ path: SCREENSHOT, fullPage: true });
});
