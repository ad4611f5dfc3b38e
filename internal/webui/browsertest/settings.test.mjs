// Browser test of the web page's model picker, compaction marker and
// budget, run by internal/e2e/browser_test.go against a real worker whose
// "echo" agent (Stepwise, scripted models) lets a session choose between
// two models, compacts past a small context window, and has a spend budget.
//
// Environment and exit codes: see lib.mjs.

import { run, step, log, snapshot, BASE_URL, API_TOKEN, SCREENSHOT } from './lib.mjs';

await run('settings.test', async (page) => {
  await step('open the page and start an echo session', async () => {
    await page.goto(`${BASE_URL}/#token=${encodeURIComponent(API_TOKEN)}`);
    const select = page.getByTestId('agent-select');
    await select.locator('option[value="echo"]').waitFor({ state: 'attached' });
    await select.selectOption('echo');
    await page.getByTestId('start-message').fill('hello');
    await page.getByTestId('start-button').click();
    await page.waitForURL(/[?&]session=/);
    await page.locator('[data-testid="session-status"][data-status="waiting_for_user_message"]').waitFor();
    // Usage and the budget are the operator's: turn that view on.
    await page.getByTestId('operator-toggle').click();
    await page.locator('[data-testid="operator-toggle"][aria-pressed="true"]').waitFor();
  });
  const sessionID = new URL(page.url()).searchParams.get('session');
  log(`session ${sessionID}`);

  await step('the model picker offers the agent\'s models', async () => {
    const picker = page.getByTestId('model-picker');
    await picker.waitFor();
    const options = await picker.locator('option').evaluateAll((os) => os.map((o) => o.value));
    if (options.join(',') !== ',deep,fast') throw new Error(`the picker offers [${options}], want the default, deep and fast`);
    if ((await picker.inputValue()) !== '') throw new Error('a new session does not show the default model');
  });

  await step('choose "deep": the settings change', async () => {
    await page.getByTestId('model-picker').selectOption('deep');
    for (let i = 0; i < 50; i++) {
      const snap = await snapshot(sessionID);
      if (snap.session_settings && snap.session_settings.model === 'deep') return;
      await new Promise((r) => setTimeout(r, 100));
    }
    throw new Error('the session settings never named deep');
  });

  await step('the budget shows what is left', async () => {
    const left = page.getByTestId('budget-left');
    await left.waitFor();
    const text = (await left.textContent()) || '';
    if (!/^\$?[\d.]* ?.*calls left in this session$/.test(text) || !/49 calls left/.test(text)) throw new Error(`budget shows "${text}", want 49 calls left in this session`);
  });

  await step('long messages compact the context: the marker shows', async () => {
    const filler = 'lorem ipsum dolor sit amet '.repeat(60);
    for (let i = 1; i <= 6 && !(await page.getByTestId('compaction-marker').count()); i++) {
      await page.getByTestId('message-input').fill(`part ${i} ${filler}`);
      await page.getByTestId('message-input').press('Enter');
      await page.locator('[data-testid="message"][data-role="assistant"]').filter({ hasText: `part ${i} ` }).first().waitFor();
      await page.locator('[data-testid="session-status"][data-status="waiting_for_user_message"]').waitFor();
    }
    const marker = page.getByTestId('compaction-marker');
    await marker.waitFor();
    if (!/summarized for the model/.test((await marker.textContent()) || '')) throw new Error('the marker does not say what happened');
    const snap = await snapshot(sessionID);
    if (!snap.context_summary) throw new Error('the page shows a marker, but the snapshot has no summary');
  });

  await step('reload: the picker keeps "deep"', async () => {
    await page.reload();
    await page.getByTestId('compaction-marker').waitFor();
    await page.waitForFunction(() => document.querySelector('[data-testid="model-picker"]').value === 'deep');
  });

  if (SCREENSHOT) {
    await step('take a screenshot', async () => {
      await page.getByTestId('message-input').blur();
      await page.screenshot({ path: SCREENSHOT, fullPage: true, animations: 'disabled' });
    });
  }
});
