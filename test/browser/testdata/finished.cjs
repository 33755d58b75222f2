'use strict';
// Drives the dashboard of a running `voda server` (no authentication)
// that holds FINISHED finished jobs and no live one, and prints what
// happened as JSON. Usage:
//   node finished.cjs BASE_URL MANIFEST_FILE SHOTS_DIR
// Opens /ui/#/ and reads the live jobs table (the stream's snapshot holds
// no finished job); opens #/finished and clicks "Show more" until every
// finished job is listed, noting each GET /api/v1/jobs the page sent and
// whether the server answered in pages; then submits the manifest through
// the API, waits for the job in the live table (#/jobs), goes to
// #/finished and waits for it there, Completed, without a reload, and
// notes the list requests sent meanwhile (none: it came by the stream);
// back at #/jobs, whether it left the live table.
const fs = require('fs');
const path = require('path');
const { launch, run } = require('./launch.cjs');

async function main() {
  const [base, manifestFile, shots] = process.argv.slice(2);
  const browser = await launch();
  const out = { console: [], pageErrors: [], lists: [], paged: false };
  try {
    const context = await browser.newContext({ viewport: { width: 1366, height: 900 }, locale: 'en-US', timezoneId: 'Europe/Berlin' });
    const page = await context.newPage();
    page.on('console', (m) => {
      if (m.type() === 'error' || m.type() === 'warning') out.console.push(`${m.type()}: ${m.text()}`);
    });
    page.on('pageerror', (e) => out.pageErrors.push(String(e)));
    // The list requests, and whether the first answer named a next page.
    page.on('response', async (r) => {
      const u = new URL(r.url());
      if (u.pathname !== '/api/v1/jobs') return;
      out.lists.push(`${u.pathname}${u.search} ${r.status()}`);
      if (out.lists.length === 1) {
        const body = await r.json().catch(() => ({}));
        out.paged = Boolean(body.metadata && body.metadata.continue);
      }
    });
    await page.goto(`${base}/ui/#/`);
    await page.waitForSelector('#connection.live', { timeout: 10000 });
    await page.evaluate(() => { window.sameDocument = true; }); // a reload forgets it
    out.liveCaption = await page.$eval('table#jobs caption', (c) => c.textContent);

    // Idle: the finished table drawn, no fetch under way.
    const idle = () => page.waitForFunction(() => document.querySelector('table#finished') &&
      !document.querySelector('main .loading') && (document.querySelector('#more-f:not([disabled])') || document.querySelector('#finished-end')),
    null, { timeout: 30000 });
    const rows = () => page.$$eval('table#finished tbody tr', (r) => r.length);
    await page.evaluate(() => { location.hash = '#/finished'; });
    await idle();
    out.firstRows = await rows();
    out.clicks = 0;
    while (await page.$('#more-f') && out.clicks < 20) {
      await page.click('#more-f');
      out.clicks++;
      await idle();
    }
    out.rows = await rows();
    out.caption = await page.$eval('table#finished caption', (c) => c.textContent);
    out.end = await page.$eval('#finished-end', (e) => e.textContent).catch(() => '');
    await page.screenshot({ path: path.join(shots, 'dashboard-finished.png') });

    // A job that runs a while, then finishes while the page is open.
    const listsBefore = out.lists.length;
    const res = await fetch(`${base}/api/v1/jobs`, { method: 'POST', headers: { 'Content-Type': 'application/yaml' }, body: fs.readFileSync(manifestFile, 'utf8') });
    const job = (await res.json()).name;
    out.job = job;
    await page.evaluate(() => { location.hash = '#/jobs'; });
    await page.waitForSelector(`table#jobs tr[data-job="${job}"]`, { timeout: 10000 });
    out.liveRow = await page.$eval(`table#jobs tr[data-job="${job}"]`, (r) => r.innerText);
    await page.evaluate(() => { location.hash = '#/finished'; });
    await page.waitForFunction((j) => {
      const row = document.querySelector(`table#finished tr[data-job="${j}"]`);
      return row && row.textContent.includes('Completed');
    }, job, { timeout: 120000 });
    out.movedRow = await page.$eval(`table#finished tr[data-job="${job}"]`, (r) => r.innerText);
    out.movedCaption = await page.$eval('table#finished caption', (c) => c.textContent);
    out.listsWhileRunning = out.lists.slice(listsBefore);
    await page.evaluate(() => { location.hash = '#/jobs'; });
    await page.waitForSelector('table#jobs');
    out.liveAfter = await page.$$eval(`table#jobs tr[data-job="${job}"]`, (r) => r.length);
    out.reloaded = !(await page.evaluate(() => window.sameDocument === true));
    await page.screenshot({ path: path.join(shots, 'dashboard-finished-moved.png') });
  } finally {
    await browser.close();
  }
  process.stdout.write(JSON.stringify(out));
}

run(main);
