// End-to-end browser test of the web chat page, run by
// internal/e2e/browser_test.go against a real worker serving the orders demo
// agent. It drives Debian's Chromium with playwright-core.
//
// Environment and exit codes: see lib.mjs. The approval step also writes
// <SCREENSHOT>-approval.png, the question step <SCREENSHOT>-question.png.

import { run, step, log, expected, BASE_URL, API_TOKEN, SCREENSHOT } from './lib.mjs';

await run('chat.test', async (page) => {
  const requests = [];
  page.on('request', (r) => requests.push(r.url()));

  await step('open the page with the token in the fragment', async () => {
    const res = await page.goto(`${BASE_URL}/#token=${encodeURIComponent(API_TOKEN)}`);
    if (!res || res.status() !== 200) throw new Error(`GET / answered ${res && res.status()}`);
    const csp = res.headers()['content-security-policy'] || '';
    if (!csp.includes("script-src 'self'")) throw new Error(`no strict Content-Security-Policy on the page: "${csp}"`);
    await page.getByTestId('agent-select').waitFor();
    await page.waitForFunction(() => !location.hash.includes('token='));
    if (page.url().includes(API_TOKEN)) throw new Error(`the token is still in the address bar: ${page.url()}`);
  });

  await step('pick the orders agent', async () => {
    const select = page.getByTestId('agent-select');
    await select.locator('option[value="orders"]').waitFor({ state: 'attached' });
    await select.selectOption('orders');
  });

  await step('start a session with "refund order 7"', async () => {
    await page.getByTestId('start-message').fill('refund order 7');
    await page.getByTestId('start-button').click();
    await page.waitForURL(/[?&]session=/);
    await page.getByTestId('message').filter({ hasText: 'refund order 7' }).first().waitFor();
  });
  const sessionURL = page.url();
  const sessionID = new URL(sessionURL).searchParams.get('session');
  log(`session ${sessionID}`);

  await step('see the streamed text of the turn', async () => {
    const streamed = page.locator('[data-testid="message"][data-role="assistant"][data-source="live"]')
      .filter({ hasText: 'has $62.50 left to refund' });
    await streamed.first().waitFor();
  });

  await step('see lookup_order succeeded and refund_order awaiting approval', async () => {
    await page.locator('[data-testid="tool-card"][data-tool-name="lookup_order"][data-status="succeeded"]').waitFor();
    const card = page.locator('[data-testid="tool-card"][data-tool-name="refund_order"][data-status="awaiting_approval"]');
    await card.waitFor();
    const args = await card.getByTestId('tool-arguments').textContent();
    if (!/"order_id":\s*"7"/.test(args || '')) throw new Error(`refund_order arguments do not name order 7: ${args}`);
    // A deadline shows only when the agent sets an approval timeout.
    await card.getByTestId('reject-button').waitFor();
    await page.locator('[data-testid="connection-state"][data-state="live"]').waitFor();
    if (SCREENSHOT) await page.screenshot({ path: SCREENSHOT.replace(/\.png$/, '') + '-approval.png', fullPage: true, animations: 'disabled' });
  });

  // The agent's config sets refund_order's approval_text: the end-user view
  // (the default) reads the approval as the action, with the raw call one
  // click away; the operator view shows the tool, its effect, its raw
  // arguments and the usage. At desktop and phone widths.
  await step('the end-user view reads the approval as the action; the operator view shows the raw call', async () => {
    const card = page.locator('[data-testid="tool-card"][data-tool-name="refund_order"][data-status="awaiting_approval"]');
    for (const [width, height, name] of [[1280, 860, ''], [390, 844, '-phone']]) {
      await page.setViewportSize({ width, height });
      if ((await page.getByTestId('operator-toggle').getAttribute('aria-pressed')) !== 'false') throw new Error('the operator view is on by default');
      const action = card.getByTestId('approval-text');
      await action.waitFor();
      if ((await action.textContent()) !== 'Refund $62.50 on order 7') throw new Error(`the approval reads "${await action.textContent()}"`);
      if (await card.getByTestId('tool-arguments').isVisible()) throw new Error('the raw arguments are open in the end-user view');
      if (await card.locator('.effect').isVisible()) throw new Error('the effect shows in the end-user view');
      if (await page.getByTestId('usage').isVisible()) throw new Error('the usage shows in the end-user view');
      // A finished call is one line; a click shows its details.
      const lookup = page.locator('[data-testid="tool-card"][data-tool-name="lookup_order"][data-status="succeeded"]');
      // ...that reads as what it did (the tool's display_text).
      if ((await lookup.getByTestId('tool-name').textContent()) !== 'Looked up order 7') throw new Error(`the lookup reads "${await lookup.getByTestId('tool-name').textContent()}"`);
      if (await lookup.locator('details.tool-args').isVisible()) throw new Error('a finished call shows its details in the end-user view');
      await lookup.getByTestId('tool-head').click();
      await lookup.locator('details.tool-args').waitFor();
      await lookup.getByTestId('tool-head').click();
      await lookup.locator('details.tool-args').waitFor({ state: 'hidden' });
      await card.locator('details.tool-args summary').click(); // one click away
      await card.getByTestId('tool-arguments').waitFor();
      if (SCREENSHOT) await page.screenshot({ path: SCREENSHOT.replace(/\.png$/, '') + `-enduser${name}.png`, animations: 'disabled' });
      await card.locator('details.tool-args summary').click();

      await page.getByTestId('operator-toggle').click();
      await page.locator('[data-testid="operator-toggle"][aria-pressed="true"]').waitFor();
      if (width > 600) await card.locator('.effect').waitFor(); // a phone leaves the effect out
      await card.getByTestId('approval-text').waitFor({ state: 'detached' }); // the operator sees the call itself
      await page.locator('[data-testid="tool-card"][data-tool-name="lookup_order"] [data-testid="tool-name"]').filter({ hasText: /^lookup_order$/ }).waitFor();
      const note = (await card.locator('.approval-text').textContent()) || '';
      if (!note.includes('refund_order runs only after you approve it')) throw new Error(`the operator's approval reads "${note}"`);
      await page.getByTestId('usage').waitFor();
      if (SCREENSHOT) await page.screenshot({ path: SCREENSHOT.replace(/\.png$/, '') + `-operator${name}.png`, animations: 'disabled' });
      await page.getByTestId('operator-toggle').click();
      await page.locator('[data-testid="operator-toggle"][aria-pressed="false"]').waitFor();
    }
    await page.setViewportSize({ width: 1280, height: 860 });
  });

  await step('approve the refund', async () => {
    const card = page.locator('[data-testid="tool-card"][data-tool-name="refund_order"]');
    await card.getByTestId('approve-button').click();
    await page.locator('[data-testid="tool-card"][data-tool-name="refund_order"][data-status="succeeded"]').waitFor();
  });

  const FINAL = /^\s*Done\. Refunded \$62\.50 of order 7/;
  const finalAnswer = page.locator('[data-testid="message"][data-role="assistant"] [data-testid="message-text"]')
    .filter({ hasText: FINAL });

  await step('see the final answer', async () => {
    await finalAnswer.first().waitFor();
    // After the turn the live text gives way to the stored messages.
    await page.locator('[data-testid="message"][data-role="assistant"][data-source="stored"] [data-testid="message-text"]')
      .filter({ hasText: FINAL }).waitFor();
    await page.locator('[data-testid="session-status"][data-status="waiting_for_user_message"]').waitFor();
    const approve = await page.getByTestId('approve-button').count();
    if (approve !== 0) throw new Error('an Approve button is still shown after the turn ended');
    const usage = (await page.getByTestId('usage').textContent()) || '';
    if (!/model call/.test(usage)) throw new Error(`usage shows "${usage}"`);
    if (await page.getByTestId('error-banner').isVisible()) throw new Error('the error banner is shown');
    const n = await finalAnswer.count();
    if (n !== 1) throw new Error(`the final answer is shown ${n} times`);
  });

  await step('reload the page: the conversation survives', async () => {
    await page.reload();
    await page.waitForURL(sessionURL);
    await page.getByTestId('message').filter({ hasText: 'refund order 7' }).first().waitFor();
    await finalAnswer.first().waitFor();
    await page.locator('[data-testid="tool-card"][data-tool-name="refund_order"][data-status="succeeded"]').waitFor();
    await page.locator('[data-testid="tool-card"][data-tool-name="lookup_order"][data-status="succeeded"]').waitFor();
    await page.locator('[data-testid="connection-state"][data-state="live"]').waitFor();
    await page.getByTestId('message-input').waitFor({ state: 'visible' });
    if (await page.getByTestId('message-input').isDisabled()) throw new Error('the composer is disabled in an open session');
    const recent = page.locator(`[data-testid="recent-session"][data-session-id="${sessionID}"]`);
    await recent.waitFor();
    const answers = await finalAnswer.count();
    if (answers !== 1) throw new Error(`after the reload the final answer is shown ${answers} times`);
  });

  await step('"refund my order" asks which order: a question card with choices', async () => {
    await page.getByTestId('message-input').fill('refund my order');
    await page.getByTestId('send-button').click();
    const card = page.locator('[data-testid="tool-card"][data-tool-name="ask_user"][data-status="awaiting_answer"]');
    await card.waitFor();
    const q = await card.getByTestId('question-text').textContent();
    if (!/Which order should I refund\?/.test(q || '')) throw new Error(`the question reads "${q}"`);
    const choices = await card.getByTestId('question-choice').allTextContents();
    if (choices.length !== 8 || choices.some((c) => c.startsWith('order 7:'))) throw new Error(`choices: ${JSON.stringify(choices)}`);
    if (await card.getByTestId('question-input').count()) throw new Error('a free-text field is shown for a question with choices only');
    await page.locator('[data-testid="session-status"][data-status="needs_answer"]').waitFor();
    if (SCREENSHOT) await page.screenshot({ path: SCREENSHOT.replace(/\.png$/, '') + '-question.png', fullPage: true, animations: 'disabled' });
  });

  await step('pick order 3, then reject its refund', async () => {
    const card = page.locator('[data-testid="tool-card"][data-tool-name="ask_user"]');
    await card.getByTestId('question-choice').filter({ hasText: 'order 3: monitor arm ($32.50 left)' }).click();
    await page.locator('[data-testid="tool-card"][data-tool-name="ask_user"][data-status="succeeded"]').waitFor();
    const refund = page.locator('[data-testid="tool-card"][data-tool-name="refund_order"][data-status="awaiting_approval"]');
    await refund.waitFor();
    const args = await refund.getByTestId('tool-arguments').textContent();
    if (!/"order_id":\s*"3"/.test(args || '')) throw new Error(`refund_order arguments do not name order 3: ${args}`);
    await refund.getByTestId('reject-button').click();
    await refund.getByTestId('reject-confirm').click();
    await page.locator('[data-testid="message"][data-role="assistant"] [data-testid="message-text"]')
      .filter({ hasText: /OK, I did not refund order 3/ }).first().waitFor();
    if (await page.getByTestId('question-choice').count()) throw new Error('question choices are still shown after the answer');
  });

  await step('the token never went into a URL', async () => {
    const leaked = requests.filter((u) => u.includes(API_TOKEN) && !u.includes('#'));
    if (leaked.length) throw new Error(`requests carried the token in the URL: ${leaked.join(', ')}`);
  });

  if (SCREENSHOT) {
    await step('take a screenshot', async () => {
      // Let the blinking caret and transitions settle on a stable frame.
      await page.getByTestId('message-input').blur();
      await page.screenshot({ path: SCREENSHOT, fullPage: true, animations: 'disabled' });
      log(`screenshot: ${SCREENSHOT}`);
    });
  }

  // On 127.0.0.1 the link signed the browser in with an HttpOnly cookie: a
  // new tab is signed in without the token, no script sees the token or
  // the cookie, and signing out ends it for every tab.
  await step('a new tab is signed in by the cookie, which no script reads', async () => {
    const tab = await page.context().newPage();
    await tab.goto(`${BASE_URL}/`);
    await tab.getByTestId('agent-select').locator('option[value="orders"]').waitFor({ state: 'attached' });
    const seen = await tab.evaluate(() => ({ cookie: document.cookie, stored: JSON.stringify(sessionStorage), local: JSON.stringify(localStorage) }));
    if (seen.cookie.includes('dex_session') || [seen.stored, seen.local].some((x) => x.includes(API_TOKEN))) throw new Error(`a script sees the sign-in: ${JSON.stringify(seen)}`);
    const cookies = await page.context().cookies(BASE_URL);
    const c = cookies.find((x) => x.name.startsWith('dex_session_'));
    if (!c || !c.httpOnly || c.sameSite !== 'Strict' || c.expires !== -1 || c.value.includes(API_TOKEN)) throw new Error(`the sign-in cookie: ${JSON.stringify(cookies)}`);
    // Signed out in the tab: a request the first page has open may get
    // 401 before it reloads, and the page then asks for the token.
    expected.unauthorized = true;
    await tab.getByTestId('sign-out-button').click();
    await tab.getByTestId('token-input').waitFor();
    await page.reload();
    await page.getByTestId('token-input').waitFor(); // signed out everywhere
    await tab.close();
  });

});
