// Browser test of Edit and the branch switcher, run by internal/e2e
// (TestWebChatEditAndBranches) against a worker whose test agent answers
// "echo: <message>": Edit on a user message sends the changed text as a
// new branch of the conversation (a fork before the message) and opens
// it; the original keeps its messages; the Branch switcher moves between
// the two. Environment and exit codes: see lib.mjs. Screenshot:
// <SCREENSHOT>-edited.png (the new branch with the switcher).

import { run, step, log, snapshot, openSignedIn, SCREENSHOT, shotPath } from './lib.mjs';

const userTexts = (page) => page.locator('[data-testid="message"][data-role="user"] [data-testid="message-text"]').allTextContents();
const answer = (page, text) => page.locator('[data-testid="message"][data-role="assistant"] [data-testid="message-text"]').filter({ hasText: text });
const ready = (page) => page.locator('[data-testid="session-status"][data-status="waiting_for_user_message"]').waitFor();
const sessionOf = (page) => new URL(page.url()).searchParams.get('session');

await run('branch.test', async (page) => {
  let original;
  let branch;

  await step('start a session and have two turns', async () => {
    await openSignedIn(page);
    const select = page.getByTestId('agent-select');
    await select.locator('option[value="test"]').waitFor({ state: 'attached' });
    await select.selectOption('test');
    await page.getByTestId('start-message').fill('first question');
    await page.getByTestId('start-button').click();
    await page.waitForURL(/[?&]session=/);
    original = sessionOf(page);
    log(`session ${original}`);
    await answer(page, 'echo: first question').first().waitFor();
    await ready(page);
    await page.getByTestId('message-input').fill('second question');
    await page.getByTestId('send-button').click();
    await answer(page, 'echo: second question').first().waitFor();
    await ready(page);
    if (await page.locator('[data-testid="branch-picker"]:visible').count()) throw new Error('a conversation without forks shows the branch switcher');
  });

  await step('Edit the second message: the changed text goes to a new branch', async () => {
    const msg = page.locator('[data-testid="message"][data-role="user"]').filter({ hasText: 'second question' }).first();
    await msg.hover();
    await msg.getByTestId('edit-message').click();
    // The message's text is now the editor's.
    const input = page.getByTestId('edit-input');
    if ((await input.inputValue()) !== 'second question') throw new Error(`the editor holds "${await input.inputValue()}"`);
    await input.fill('second question, changed');
    await page.getByTestId('edit-send').click();
    await page.waitForURL((url) => url.searchParams.get('session') && url.searchParams.get('session') !== original);
    branch = sessionOf(page);
    log(`branch ${branch}`);
    await answer(page, 'echo: second question, changed').first().waitFor();
    await ready(page);
    const users = (await userTexts(page)).map((t) => t.trim());
    if (JSON.stringify(users) !== JSON.stringify(['first question', 'second question, changed'])) throw new Error(`the branch's user messages: ${JSON.stringify(users)}`);
    const snap = await snapshot(branch);
    if (!snap.forked_from || snap.forked_from.parent_session_id !== original || snap.forked_from.at_sequence !== 2) throw new Error(`forked_from = ${JSON.stringify(snap.forked_from)}`);
    await page.locator('[data-testid="branch-picker"]:visible').waitFor();
    if ((await page.getByTestId('branch-picker').inputValue()) !== branch) throw new Error('the switcher does not show the branch');
    if (SCREENSHOT) await page.screenshot({ path: shotPath('-edited'), animations: 'disabled' });
  });

  await step('the switcher opens the original, which kept its messages', async () => {
    await page.getByTestId('branch-picker').selectOption(original);
    await page.waitForURL((url) => url.searchParams.get('session') === original);
    await answer(page, 'echo: second question').first().waitFor();
    const users = (await userTexts(page)).map((t) => t.trim());
    if (JSON.stringify(users) !== JSON.stringify(['first question', 'second question'])) throw new Error(`the original's user messages: ${JSON.stringify(users)}`);
    await page.locator('[data-testid="branch-picker"]:visible').waitFor();
    const options = await page.getByTestId('branch-picker').locator('option').allTextContents();
    if (options.length !== 2 || options[0] !== 'Original') throw new Error(`the switcher offers ${JSON.stringify(options)}`);
    await page.getByTestId('branch-picker').selectOption(branch);
    await page.waitForURL((url) => url.searchParams.get('session') === branch);
    await answer(page, 'echo: second question, changed').first().waitFor();
  });
});
