// Shared helpers of the browser tests: the environment, named steps, a
// headless Debian Chromium driven by playwright-core, the page's problems
// (script errors, CSP violations), and the run wrapper that reports a
// failed step, takes a failure screenshot and cleans up.
//
// Environment:
//   BASE_URL    the API server, e.g. http://127.0.0.1:8123 (required)
//   API_TOKEN   a bearer token the server accepts (required)
//   SCREENSHOT  where to write a full-page PNG at the end (optional)
//   CHROMIUM    the browser binary (default /usr/bin/chromium)
//   HEADFUL=1   show the browser window (debugging)

import { chromium } from 'playwright-core';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';

export const BASE_URL = (process.env.BASE_URL || '').replace(/\/+$/, '');
export const API_TOKEN = process.env.API_TOKEN || '';
export const SCREENSHOT = process.env.SCREENSHOT || '';
export const CHROMIUM = process.env.CHROMIUM || '/usr/bin/chromium';
export const STEP_TIMEOUT = 30_000;

const started = Date.now();
let currentStep = 'start';
export const log = (msg) => console.log(`[${((Date.now() - started) / 1000).toFixed(1)}s] ${msg}`);

// step runs one named step; a failure names it.
export async function step(name, fn) {
  currentStep = name;
  log(`step: ${name}`);
  return fn();
}

// problems collects what the page reported that is a bug.
export const problems = [];

// expected lists answers a step makes the page get on purpose: once the
// user signed out, a request the page had open gets 401, and the page
// shows the sign-in (which the step checks).
export const expected = { unauthorized: false };

// shotPath is SCREENSHOT with a suffix before its extension.
export const shotPath = (suffix) => SCREENSHOT.replace(/\.png$/, '') + suffix + '.png';

// snapshot reads a session's snapshot through the API, as a client would.
export async function snapshot(id) {
  const res = await fetch(`${BASE_URL}/v1/sessions/${encodeURIComponent(id)}/snapshot`, { headers: { Authorization: `Bearer ${API_TOKEN}` } });
  if (!res.ok) throw new Error(`GET snapshot answered ${res.status}`);
  return (await res.json()).snapshot;
}

// run launches Chromium, hands main a page that reports its problems, and
// exits the process: 0 when main passed and the page reported nothing,
// else 1 with the failed step. It stops everything after totalMs.
export async function run(name, main, totalMs = 150_000) {
  if (!BASE_URL || !API_TOKEN) {
    console.error(`${name}: BASE_URL and API_TOKEN are required`);
    process.exit(2);
  }
  const killer = setTimeout(() => {
    console.error(`FAIL: timed out after ${totalMs / 1000}s in step "${currentStep}"`);
    process.exit(1);
  }, totalMs);
  let context;
  const userDataDir = fs.mkdtempSync(path.join(os.tmpdir(), 'dex-chromium-'));
  let code = 0;
  try {
    context = await step('launch Chromium', () => chromium.launchPersistentContext(userDataDir, {
      executablePath: CHROMIUM,
      headless: !process.env.HEADFUL,
      args: ['--no-sandbox', '--disable-gpu', '--disable-quic', '--no-first-run', '--disable-background-networking', '--disable-component-update', '--disable-sync'],
      viewport: { width: 1280, height: 860 },
      colorScheme: 'light',
      timeout: STEP_TIMEOUT,
    }));
    context.setDefaultTimeout(STEP_TIMEOUT);
    const page = context.pages()[0] || await context.newPage();
    page.on('pageerror', (err) => problems.push(`uncaught page error: ${err.message}`));
    page.on('console', (m) => {
      const text = m.text();
      // 400, 404 and 409 are answers the page handles (409: a closed
      // session, a changed approval), which Chromium logs anyway.
      const handled = expected.unauthorized ? /Failed to load resource.*(404|400|409|401)/ : /Failed to load resource.*(404|400|409)/;
      if (m.type() === 'error' && !handled.test(text)) problems.push(`console error: ${text}`);
      if (/Content Security Policy/i.test(text)) problems.push(`CSP violation: ${text}`);
    });
    await main(page);
    if (problems.length) throw new Error(`the page reported problems:\n  ${problems.join('\n  ')}`);
    log('PASS');
  } catch (err) {
    code = 1;
    console.error(`FAIL in step "${currentStep}": ${err && err.message ? err.message : err}`);
    if (problems.length) console.error(`page problems:\n  ${problems.join('\n  ')}`);
    if (SCREENSHOT && context) {
      try {
        const page = context.pages()[0];
        if (page) { await page.screenshot({ path: shotPath('-failure'), fullPage: true }); console.error(`failure screenshot: ${shotPath('-failure')}`); }
      } catch { /* best effort */ }
    }
  } finally {
    try { if (context) await context.close(); } catch { /* ignore */ }
    try { fs.rmSync(userDataDir, { recursive: true, force: true }); } catch { /* ignore */ }
    clearTimeout(killer);
  }
  process.exit(code);
}

// openSignedIn opens the page with the token in the fragment and waits
// until the page took it out of the address bar.
export async function openSignedIn(page) {
  const res = await page.goto(`${BASE_URL}/#token=${encodeURIComponent(API_TOKEN)}`);
  if (!res || res.status() !== 200) throw new Error(`GET / answered ${res && res.status()}`);
  await page.getByTestId('agent-select').waitFor();
  await page.waitForFunction(() => !location.hash.includes('token='));
}
