// Browser test of the web page's model picker, compaction marker and
// budget, run by internal/e2e/browser_test.go against a real worker whose
// "echo" agent (Stepwise, scripted models) lets a session choose between
// two models, compacts past a small context window, and has a spend budget.
//
// Environment: BASE_URL, API_TOKEN (required), SCREENSHOT (optional),
// CHROMIUM (default /usr/bin/chromium), HEADFUL=1.
// Exits 0 on success, 1 with a message naming the failed step otherwise.

import { chromium } from 'playwright-core';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';

const BASE_URL = (process.env.BASE_URL || '').replace(/\/+$/, '');
const API_TOKEN = process.env.API_TOKEN || '';
const SCREENSHOT = process.env.SCREENSHOT || '';
const CHROMIUM = process.env.CHROMIUM || '/usr/bin/chromium';
const STEP_TIMEOUT = 30_000;
const TOTAL_TIMEOUT = 150_000;

if (!BASE_URL || !API_TOKEN) {
  console.error('settings.test: BASE_URL and API_TOKEN are required');
  process.exit(2);
}

const started = Date.now();
let currentStep = 'start';
const log = (msg) => console.log(`[${((Date.now() - started) / 1000).toFixed(1)}s] ${msg}`);
async function step(name, fn) { currentStep = name; log(`step: ${name}`); return fn(); }

const problems = [];
let browserContext;
let userDataDir;
const killer = setTimeout(() => {
  console.error(`FAIL: timed out after ${TOTAL_TIMEOUT / 1000}s in step "${currentStep}"`);
  process.exit(1);
}, TOTAL_TIMEOUT);

// snapshot reads the session's snapshot through the API, as a client would.
async function snapshot(id) {
  const res = await fetch(`${BASE_URL}/v1/sessions/${encodeURIComponent(id)}/snapshot`, { headers: { Authorization: `Bearer ${API_TOKEN}` } });
  if (!res.ok) throw new Error(`GET snapshot answered ${res.status}`);
  return (await res.json()).snapshot;
}

async function main() {
  userDataDir = fs.mkdtempSync(path.join(os.tmpdir(), 'dex-chromium-'));
  browserContext = await step('launch Chromium', () => chromium.launchPersistentContext(userDataDir, {
    executablePath: CHROMIUM,
    headless: !process.env.HEADFUL,
    args: ['--no-sandbox', '--disable-gpu', '--disable-quic', '--no-first-run', '--disable-background-networking', '--disable-component-update', '--disable-sync'],
    viewport: { width: 1280, height: 860 },
    colorScheme: 'light',
    timeout: STEP_TIMEOUT,
  }));
  browserContext.setDefaultTimeout(STEP_TIMEOUT);
  const page = browserContext.pages()[0] || await browserContext.newPage();
  page.on('pageerror', (err) => problems.push(`uncaught page error: ${err.message}`));
  page.on('console', (m) => {
    if (m.type() === 'error' && !/Failed to load resource.*(404|400)/.test(m.text())) problems.push(`console error: ${m.text()}`);
  });

  await step('open the page and start an echo session', async () => {
    await page.goto(`${BASE_URL}/#token=${encodeURIComponent(API_TOKEN)}`);
    const select = page.getByTestId('agent-select');
    await select.locator('option[value="echo"]').waitFor({ state: 'attached' });
    await select.selectOption('echo');
    await page.getByTestId('start-message').fill('hello');
    await page.getByTestId('start-button').click();
    await page.waitForURL(/[?&]session=/);
    await page.locator('[data-testid="session-status"][data-status="waiting_for_user_message"]').waitFor();
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
  if (problems.length) throw new Error(`the page reported problems:\n  ${problems.join('\n  ')}`);
}

let code = 0;
try {
  await main();
  log('PASS');
} catch (err) {
  code = 1;
  console.error(`FAIL in step "${currentStep}": ${err && err.message ? err.message : err}`);
  if (problems.length) console.error(`page problems:\n  ${problems.join('\n  ')}`);
} finally {
  try { if (browserContext) await browserContext.close(); } catch { /* ignore */ }
  try { if (userDataDir) fs.rmSync(userDataDir, { recursive: true, force: true }); } catch { /* ignore */ }
  clearTimeout(killer);
}
process.exit(code);
