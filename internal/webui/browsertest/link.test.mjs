// Browser test of an approval link from a mail, run by internal/e2e (mail
// notification test): LINK_URL is the approve link the mail catcher
// received. Opening it shows the call and changes nothing; the button
// approves; opening it again says it was used. Environment and exit codes:
// see lib.mjs.

import { run, step, log, SCREENSHOT, shotPath } from './lib.mjs';

const LINK = process.env.LINK_URL || '';

await run('link.test', async (page) => {
  if (!LINK) throw new Error('LINK_URL is required');
  await step('open the link from the mail: a confirmation page, nothing done yet', async () => {
    await page.goto(LINK);
    const title = await page.getByTestId('link-title').textContent();
    if (title !== 'Approve approve_write?') throw new Error(`the page's title reads "${title}"`);
    const args = await page.getByTestId('link-arguments').textContent();
    if (!/"name": "M1"/.test(args || '')) throw new Error(`the arguments read "${args}"`);
    if (SCREENSHOT) await page.screenshot({ path: shotPath('-confirm'), fullPage: true, animations: 'disabled' });
  });
  await step('confirm: approved', async () => {
    await page.getByTestId('link-confirm').click();
    await page.locator('[data-testid="link-page"][data-status="done"]').waitFor();
    const title = await page.getByTestId('link-title').textContent();
    if (title !== 'Approved') throw new Error(`after the button the page reads "${title}"`);
    if (SCREENSHOT) await page.screenshot({ path: shotPath('-approved'), fullPage: true, animations: 'disabled' });
  });
  await step('the link again: used, nothing changes', async () => {
    const res = await page.goto(LINK);
    log(`second open: HTTP ${res && res.status()}`);
    await page.locator('[data-testid="link-page"][data-status="refused"]').waitFor();
    const line = await page.getByTestId('link-line').first().textContent();
    if (!/already approved/.test(line || '')) throw new Error(`the second open reads "${line}"`);
  });
}, 60_000);
