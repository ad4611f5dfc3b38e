// Browser test of the eval report view, run by internal/e2e (TestWebEvalReportView):
// the page opens a report.json of eval run from a file, read in the
// browser, and shows the summary, the checks, and each case's changes; a
// file that is no report gets an error; a report's texts are shown as text,
// never run as markup. Environment: lib.mjs's, and REPORT_FILE and
// BAD_REPORT_FILE.

import { run, step, openSignedIn, SCREENSHOT } from './lib.mjs';

const REPORT_FILE = process.env.REPORT_FILE;
const BAD_REPORT_FILE = process.env.BAD_REPORT_FILE;

await run('report.test', async (page) => {
  await step('open the report view from the sidebar', async () => {
    await openSignedIn(page);
    await page.getByTestId('report-link').click();
    await page.getByTestId('report-view').waitFor();
    if (!page.url().includes('view=report')) throw new Error(`the URL is ${page.url()}`);
  });
  await step('a file that is no report gets an error', async () => {
    await page.getByTestId('report-file').setInputFiles(BAD_REPORT_FILE);
    await page.getByTestId('report-error').filter({ hasText: 'is not JSON' }).waitFor();
    if (await page.getByTestId('report-body').isVisible()) throw new Error('a bad file shows a report');
  });
  await step('the report: summary, checks, cases', async () => {
    await page.getByTestId('report-file').setInputFiles(REPORT_FILE);
    await page.getByTestId('report-body').waitFor();
    const summary = await page.getByTestId('report-summary').textContent();
    if (!summary.includes('orders against evals/orders: 2 case(s), 1 changed, 1 diverged, 0 failed. Checks FAILED.')) throw new Error(`summary: ${summary}`);
    const failed = page.getByTestId('report-checks').locator('tr.failed');
    if ((await failed.count()) !== 1 || !(await failed.textContent()).includes('diverged>0')) throw new Error('the failed check is not marked');
    const cases = page.getByTestId('report-case');
    if ((await cases.count()) !== 2) throw new Error(`${await cases.count()} cases shown`);
    const first = cases.nth(0);
    if ((await first.getAttribute('data-status')) !== 'diverged') throw new Error('the first case is not diverged');
    const text = await first.textContent();
    for (const want of ['diverged at approval refund_order {"order_id":"7","amount_cents":100}: the record has no answer, so it was rejected and not run', 'call 1 removed: lookup_order {"order_id":"7"}', 'answer of turn 1 changed (similarity 0.2)']) {
      if (!text.includes(want)) throw new Error(`the case lacks ${JSON.stringify(want)}: ${text}`);
    }
    if (!(await cases.nth(1).textContent()).includes('No difference from the record.')) throw new Error('the unchanged case');
  });
  await step("a report's texts are text, never markup", async () => {
    const imgs = await page.getByTestId('report-body').locator('img').count();
    const ran = await page.evaluate(() => window.__xss);
    const text = await page.getByTestId('report-body').textContent();
    if (imgs !== 0 || ran !== undefined || !text.includes('<img src=x onerror=')) throw new Error(`imgs ${imgs}, ran ${ran}`);
  });
  await step('take a screenshot', async () => {
    await page.screenshot({ path: SCREENSHOT, fullPage: true });
  });
});
