// Browser test of sub-agents on the web page, run by internal/e2e (browser
// sub-agent test) against a worker serving the orders demo agent with its
// returns sub-agent: "delegate the return of order 5" shows a sub-agent
// card whose body follows the child session's work; the child's label
// approval shows in the parent's page, is approved there, and the card
// ends with the child's answer, which the parent's answer repeats. After a
// reload the card is rebuilt from the snapshot. Environment and exit
// codes: see lib.mjs.

import { run, step, log, snapshot, openSignedIn, SCREENSHOT, shotPath } from './lib.mjs';

await run('subagent.test', async (page) => {
  await step('open the page and start an orders session', async () => {
    await openSignedIn(page);
    const select = page.getByTestId('agent-select');
    await select.locator('option[value="orders"]').waitFor({ state: 'attached' });
    await select.selectOption('orders');
    await page.getByTestId('start-button').click();
    await page.waitForURL(/[?&]session=/);
    await page.getByTestId('message-input').waitFor({ state: 'visible' });
  });
  const sessionID = new URL(page.url()).searchParams.get('session');
  const childID = `${sessionID}.sub-1`;
  log(`session ${sessionID}, its sub-agent ${childID}`);

  const card = page.locator(`[data-testid="subagent-card"][data-child-session-id="${childID}"]`);
  await step('"delegate the return of order 5" shows a sub-agent card that needs the person', async () => {
    await page.getByTestId('message-input').fill('delegate the return of order 5');
    await page.getByTestId('send-button').click();
    await card.waitFor();
    const task = await card.getByTestId('subagent-task').textContent();
    if (!/Return order 5/.test(task || '')) throw new Error(`the card's task reads "${task}"`);
    const approval = card.getByTestId('subagent-approval');
    await approval.waitFor();
    const text = await approval.getByTestId('approval-text').textContent();
    if (text !== 'Print a return label for order 5') throw new Error(`the child's approval reads "${text}"`);
    // The child's work shows inside the card: its lookup ran, its label waits.
    await card.locator('[data-testid="subagent-tool"][data-tool-name="lookup_order"][data-status="succeeded"]').waitFor();
    await card.locator('[data-testid="subagent-tool"][data-tool-name="request_return_label"][data-status="awaiting_approval"]').waitFor();
    const badge = await page.getByTestId('session-status').textContent();
    if (badge !== 'Needs approval') throw new Error(`the session's badge reads "${badge}" while its sub-agent waits`);
    const snap = await snapshot(sessionID);
    const pending = snap.pending_interrupts || [];
    if (pending.length !== 1 || pending[0].session_id !== childID || (pending[0].path || []).join('>') !== `${sessionID}>${childID}`) {
      throw new Error(`the parent's pending interrupts: ${JSON.stringify(pending)}`);
    }
    if (SCREENSHOT) await page.screenshot({ path: shotPath('-waiting'), fullPage: true, animations: 'disabled' });
  });

  await step('approve the child\'s label in the parent\'s page: the card ends with its answer', async () => {
    await card.getByTestId('approve-button').click();
    await page.locator(`[data-testid="subagent-card"][data-child-session-id="${childID}"][data-status="succeeded"]`).waitFor({ timeout: 60_000 });
    const answer = await card.getByTestId('subagent-answer').textContent();
    if (!/Return label RET-5-\S+ for order 5 is ready\./.test(answer || '')) throw new Error(`the card's answer reads "${answer}"`);
    await page.locator('[data-testid="message"][data-role="assistant"] [data-testid="message-text"]').filter({ hasText: /^The returns agent says: Return label RET-5-/ }).first().waitFor();
    if (await card.getByTestId('subagent-approval').count()) throw new Error('the approval still shows after it was approved');
    const badge = await page.getByTestId('session-status').textContent();
    if (badge !== 'Ready') throw new Error(`the session's badge reads "${badge}" after the answer`);
    if (SCREENSHOT) await page.screenshot({ path: shotPath('-done'), fullPage: true, animations: 'disabled' });
  });

  await step('the child session closed with its own transcript', async () => {
    const child = await snapshot(childID);
    if (!child.sub_agent || child.sub_agent.parent_session_id !== sessionID || child.agent !== 'returns') throw new Error(`the child: ${JSON.stringify(child.sub_agent)} ${child.agent}`);
    if (!child.state || !child.state.closed) throw new Error(`the child did not close: ${JSON.stringify(child.state)}`);
    const first = (child.messages || [])[0];
    if (!first || !/^Return order 5/.test(first.text)) throw new Error(`the child's first message: ${JSON.stringify(first)}`);
  });

  await step('after a reload the card is rebuilt from the snapshot', async () => {
    await page.reload();
    await page.locator(`[data-testid="subagent-card"][data-status="succeeded"]`).waitFor();
    const answer = await page.getByTestId('subagent-answer').first().textContent();
    if (!/Return label RET-5-/.test(answer || '')) throw new Error(`after the reload the card's answer reads "${answer}"`);
  });
});
