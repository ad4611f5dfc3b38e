// Browser test of plans on the web page, run by internal/e2e (browser
// plan test) against a worker serving the orders demo agent with plan mode:
// the Plan switch sends "refund orders 3 and 7" in plan mode, the plan panel
// shows the draft as a checklist, "Execute plan" runs it, and the checklist
// moves as each refund is approved; a return label's tool task shows its
// progress on its card. Environment and exit codes: see lib.mjs.

import { run, step, log, snapshot, openSignedIn, SCREENSHOT, shotPath } from './lib.mjs';

// tasks reads the plan panel's checklist: [status, text] per task.
async function tasks(page) {
  return page.getByTestId('plan-task').evaluateAll((els) => els.map((e) => [e.dataset.status, e.querySelector('.task-text').textContent]));
}

// waitTasks waits until the checklist holds these statuses, in order.
async function waitTasks(page, statuses) {
  const want = JSON.stringify(statuses);
  await page.waitForFunction((w) => JSON.stringify([...document.querySelectorAll('[data-testid="plan-task"]')].map((e) => e.dataset.status)) === w, want);
}

await run('plan.test', async (page) => {
  await step('open the page and start an orders session', async () => {
    await openSignedIn(page);
    const select = page.getByTestId('agent-select');
    await select.locator('option[value="orders"]').waitFor({ state: 'attached' });
    await select.selectOption('orders');
    await page.getByTestId('start-button').click();
    await page.waitForURL(/[?&]session=/);
    await page.getByTestId('message-input').waitFor({ state: 'visible' });
    if (await page.getByTestId('plan-panel').isVisible()) throw new Error('a plan panel shows before any plan');
  });
  const sessionID = new URL(page.url()).searchParams.get('session');
  log(`session ${sessionID}`);

  await step('switch Plan on and send "refund orders 3 and 7"', async () => {
    await page.locator('label.plan-switch').click();
    if (!(await page.getByTestId('plan-mode-switch').isChecked())) throw new Error('the Plan switch did not turn on');
    const ph = await page.getByTestId('message-input').getAttribute('placeholder');
    if (!/plan/i.test(ph || '')) throw new Error(`the composer's placeholder reads "${ph}" in plan mode`);
    await page.getByTestId('message-input').fill('refund orders 3 and 7');
    await page.getByTestId('send-button').click();
  });

  await step('the draft shows as a checklist with "Execute plan"', async () => {
    await page.locator('[data-testid="plan-panel"][data-status="draft"]').waitFor();
    await page.getByTestId('execute-plan-button').waitFor({ state: 'visible' });
    const got = await tasks(page);
    if (JSON.stringify(got) !== JSON.stringify([['pending', 'Refund order 3'], ['pending', 'Refund order 7']])) throw new Error(`draft tasks: ${JSON.stringify(got)}`);
    const meta = await page.getByTestId('plan-meta').textContent();
    if (!/Revision 1 · 0 of 2 done/.test(meta || '')) throw new Error(`plan meta reads "${meta}"`);
    await page.locator('[data-testid="message"][data-role="assistant"] [data-testid="message-text"]').filter({ hasText: 'Here is the plan (revision 1, 2 tasks).' }).first().waitFor();
    if (await page.getByTestId('plan-mode-switch').isChecked()) throw new Error('the Plan switch stayed on after the planning message');
    if (await page.locator('[data-testid="tool-card"][data-tool-name="write_todos"]').count()) throw new Error('write_todos shows as a tool card beside the plan panel');
    if (await page.locator('[data-testid="tool-card"][data-tool-name="refund_order"]').count()) throw new Error('the planning turn called refund_order');
    const snap = await snapshot(sessionID);
    if (!snap.plan || snap.plan.status !== 'draft' || snap.plan.revision !== 1) throw new Error(`snapshot plan: ${JSON.stringify(snap.plan)}`);
    if (SCREENSHOT) await page.screenshot({ path: shotPath('-draft'), fullPage: true, animations: 'disabled' });
  });

  await step('"Execute plan" runs it: order 3 first', async () => {
    await page.getByTestId('execute-plan-button').click();
    await page.locator('[data-testid="plan-panel"][data-status="active"]').waitFor();
    const card = page.locator('[data-testid="tool-card"][data-tool-name="refund_order"][data-status="awaiting_approval"]');
    await card.waitFor();
    const args = await card.getByTestId('tool-arguments').textContent();
    if (!/"order_id":\s*"3"/.test(args || '')) throw new Error(`the first refund does not name order 3: ${args}`);
    await waitTasks(page, ['in_progress', 'pending']);
    if (await page.getByTestId('execute-plan-button').isVisible()) throw new Error('"Execute plan" still shows while the plan runs');
  });

  await step('approve order 3: the checklist moves to order 7', async () => {
    await page.locator('[data-testid="tool-card"][data-tool-name="refund_order"][data-status="awaiting_approval"]').getByTestId('approve-button').click();
    await waitTasks(page, ['completed', 'in_progress']);
    const card = page.locator('[data-testid="tool-card"][data-tool-name="refund_order"][data-status="awaiting_approval"]');
    await card.waitFor();
    const args = await card.getByTestId('tool-arguments').textContent();
    if (!/"order_id":\s*"7"/.test(args || '')) throw new Error(`the second refund does not name order 7: ${args}`);
    if (SCREENSHOT) await page.screenshot({ path: shotPath('-executing'), fullPage: true, animations: 'disabled' });
  });

  await step('approve order 7: the plan is completed', async () => {
    await page.locator('[data-testid="tool-card"][data-tool-name="refund_order"][data-status="awaiting_approval"]').getByTestId('approve-button').click();
    await page.locator('[data-testid="plan-panel"][data-status="completed"]').waitFor();
    await waitTasks(page, ['completed', 'completed']);
    await page.locator('[data-testid="message"][data-role="assistant"] [data-testid="message-text"]').filter({ hasText: /^\s*The plan is done\. Refunded \$32\.50 of order 3/ }).first().waitFor();
    await page.locator('[data-testid="session-status"][data-status="waiting_for_user_message"]').waitFor();
    const meta = await page.getByTestId('plan-meta').textContent();
    if (!/Revision 4 · 2 of 2 done/.test(meta || '')) throw new Error(`plan meta reads "${meta}"`);
    if (await page.getByTestId('execute-plan-button').isVisible()) throw new Error('"Execute plan" shows for a completed plan');
  });

  await step('reload: the plan panel comes back from the snapshot', async () => {
    await page.reload();
    await page.locator('[data-testid="plan-panel"][data-status="completed"]').waitFor();
    await waitTasks(page, ['completed', 'completed']);
  });

  await step('"return order 5": the tool task shows its progress on the card', async () => {
    await page.getByTestId('message-input').fill('return order 5');
    await page.getByTestId('send-button').click();
    const card = page.locator('[data-testid="tool-card"][data-tool-name="request_return_label"][data-status="waiting_for_task"]');
    await card.waitFor();
    const note = await card.getByTestId('tool-task').textContent();
    if (!/label-\d+/.test(note || '')) throw new Error(`the task note reads "${note}"`);
    await page.locator('[data-testid="tool-card"][data-tool-name="request_return_label"][data-status="succeeded"]').waitFor();
    await page.locator('[data-testid="message"][data-role="assistant"] [data-testid="message-text"]').filter({ hasText: /Return label RET-5-/ }).first().waitFor();
  });

  if (SCREENSHOT) {
    await step('take a screenshot', async () => {
      await page.getByTestId('message-input').blur();
      await page.screenshot({ path: SCREENSHOT, fullPage: true, animations: 'disabled' });
      log(`screenshot: ${SCREENSHOT}`);
    });
  }
});
