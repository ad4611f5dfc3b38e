// Browser test of the everyday chat affordances, run by internal/e2e
// (TestWebChatRetryAndCopy) against a worker whose test agent's scripted
// model fails the first try of "failonce:NAME": the failed turn's banner
// offers Retry, which sends the message again and gets the answer; Copy
// puts a message's text on the clipboard. Environment and exit codes: see
// lib.mjs. Screenshot: <SCREENSHOT>-failed.png (the banner with Retry).

import { run, step, log, openSignedIn, SCREENSHOT, shotPath, BASE_URL } from './lib.mjs';

const MESSAGE = 'failonce:web please answer';
const ANSWER = `echo: ${MESSAGE}`;

await run('retry.test', async (page) => {
  await page.context().grantPermissions(['clipboard-read', 'clipboard-write'], { origin: BASE_URL });

  await step('open the page and start a session whose first try fails', async () => {
    await openSignedIn(page);
    const select = page.getByTestId('agent-select');
    await select.locator('option[value="test"]').waitFor({ state: 'attached' });
    await select.selectOption('test');
    await page.getByTestId('start-message').fill(MESSAGE);
    await page.getByTestId('start-button').click();
    await page.waitForURL(/[?&]session=/);
    log(`session ${new URL(page.url()).searchParams.get('session')}`);
  });

  await step('the failed turn shows its error with Retry', async () => {
    await page.locator('[data-testid="error-banner"]:not([hidden])').waitFor();
    await page.locator('[data-testid="retry-turn"]:not([hidden])').waitFor();
    const text = (await page.getByTestId('error-banner').textContent()) || '';
    if (!/scripted failure of the first try/.test(text)) throw new Error(`the banner reads "${text}"`);
    if (await page.getByTestId('activity').count()) throw new Error('a failed turn still shows activity');
    if (SCREENSHOT) await page.screenshot({ path: shotPath('-failed'), animations: 'disabled' });
  });

  await step('Retry sends the message again and the answer comes', async () => {
    await page.getByTestId('retry-turn').click();
    const answer = page.locator('[data-testid="message"][data-role="assistant"] [data-testid="message-text"]').filter({ hasText: ANSWER });
    await answer.first().waitFor();
    await page.locator('[data-testid="session-status"][data-status="waiting_for_user_message"]').waitFor();
    await page.locator('[data-testid="error-banner"][hidden]').waitFor({ state: 'attached' });
    const users = await page.locator('[data-testid="message"][data-role="user"] [data-testid="message-text"]').allTextContents();
    if (users.filter((u) => u.trim() === MESSAGE).length !== 2) throw new Error(`user messages: ${JSON.stringify(users)}, want the message and its retry`);
    if (await page.getByTestId('message-input').inputValue()) throw new Error('Retry left the text in the composer');
  });

  await step('Copy puts a message on the clipboard', async () => {
    const msg = page.locator('[data-testid="message"][data-role="assistant"]').filter({ hasText: ANSWER }).first();
    await msg.hover();
    await msg.getByTestId('copy-message').click();
    await page.locator('[data-testid="toast"]').filter({ hasText: 'Copied.' }).waitFor();
    const copied = await page.evaluate(() => navigator.clipboard.readText());
    if (copied !== ANSWER) throw new Error(`the clipboard holds "${copied}", want "${ANSWER}"`);
  });
});
