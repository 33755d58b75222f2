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
// back at #/jobs, whether it left the live table. Between the two, the
// row and the page of the first job seeded, of workers of 4 GPUs. Then it chooses the
// status Failed under Finished and notes the rows and requests. Last, in
// a page whose list requests it answers itself, in pages, it checks how
// the dashboard follows the pages' contract (see contract), and in one
// whose event stream it answers, how it draws workers of several GPUs on
// a node (see multiGPUNodes).
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
    out.loadLists = out.lists.slice();
    out.caption = await page.$eval('table#finished caption', (c) => c.textContent);
    out.end = await page.$eval('#finished-end', (e) => e.textContent).catch(() => '');
    await page.screenshot({ path: path.join(shots, 'dashboard-finished.png') });
    // The first job seeded ran one worker of 4 GPUs: its row, then its page.
    const multi = await page.$eval('table#finished tr[data-job^="old-000-"]', (r) => ({ name: r.dataset.job, row: r.querySelector('.col-maxWorkers').innerText }));
    await page.evaluate((n) => { location.hash = `#/jobs/${encodeURIComponent(n)}`; }, multi.name);
    await page.waitForSelector('#placement-history li', { timeout: 10000 });
    out.multiGPU = { row: multi.row, page: await page.$eval('main', (m) => m.innerText) };

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

    // One status: listed by the server with status=.
    await page.evaluate(() => { location.hash = '#/finished'; });
    await idle();
    const listsBeforeFailed = out.lists.length;
    await page.selectOption('#status-f', 'Failed');
    await page.waitForFunction((n) => document.querySelectorAll('table#finished tbody tr').length > 0, null, { timeout: 30000 });
    await idle();
    out.failedRows = await page.$$eval('table#finished tbody tr', (rs) => rs.map((r) => r.querySelector('.col-status').textContent));
    out.failedLists = out.lists.slice(listsBeforeFailed);
    out.contract = await contract(context, base);
    out.nodes = await multiGPUNodes(context, base);
  } finally {
    await browser.close();
  }
  process.stdout.write(JSON.stringify(out));
}

// contract opens #/finished in a new page whose GET /api/v1/jobs this
// script answers as the documented pages do, from the server's jobs: 100
// at most (limit), metadata.continue naming the next page, empty on the
// last; the first time the third page is asked for, 410 Expired. It
// clicks "Show more" until every job is shown, and returns the rows at
// first and at the end, the clicks, the requests and the error shown.
async function contract(context, base) {
  const all = (await (await fetch(`${base}/api/v1/jobs`)).json()).items;
  const r = { requests: [], errors: [] };
  let expired = false;
  const page = await context.newPage();
  await page.route((url) => url.pathname === '/api/v1/jobs', async (route) => {
    const u = new URL(route.request().url());
    r.requests.push(u.search);
    const limit = Number(u.searchParams.get('limit'));
    const from = Number((u.searchParams.get('continue') || 'p0').slice(1));
    if (from === 2 * limit && !expired) {
      expired = true;
      await route.fulfill({ status: 410, contentType: 'application/json',
        body: JSON.stringify({ error: { code: 410, reason: 'Expired', message: 'continue: the token expired; list again' } }) });
      return;
    }
    const items = all.slice(from, from + limit);
    const next = from + limit < all.length ? `p${from + limit}` : '';
    await route.fulfill({ status: 200, contentType: 'application/json', body: JSON.stringify({ items, metadata: { continue: next } }) });
  });
  await page.goto(`${base}/ui/#/finished`);
  await page.waitForSelector('#connection.live', { timeout: 10000 });
  const idle = () => page.waitForFunction(() => document.querySelector('table#finished') &&
    !document.querySelector('main .loading') && (document.querySelector('#more-f:not([disabled])') || document.querySelector('#finished-end')),
  null, { timeout: 30000 });
  await idle();
  r.firstRows = await page.$$eval('table#finished tbody tr', (rs) => rs.length);
  r.clicks = 0;
  while (await page.$('#more-f') && r.clicks < 20) {
    await page.click('#more-f');
    r.clicks++;
    await idle();
    const e = await page.$eval('main .error', (x) => x.textContent).catch(() => '');
    if (e) r.errors.push(e);
  }
  r.rows = await page.$$eval('table#finished tbody tr', (rs) => rs.length);
  r.end = await page.$eval('#finished-end', (e) => e.textContent).catch(() => '');
  await page.close();
  return r;
}

// multiGPUNodes opens the cluster view and the timeline in a new page
// whose event stream this script answers with one snapshot (again at each
// reconnection): a node of 8 GPUs holding one worker of 4 GPUs of a job
// and two workers of one GPU of another, 2 free. It returns the cluster
// view's heading, the GPUs drawn per job and free, the row of the job of
// 4 GPUs per worker, and the timeline's title.
async function multiGPUNodes(context, base) {
  const now = new Date();
  const start = new Date(now.getTime() - 60000).toISOString();
  const job = (name, workers, g) => ({
    name, namespace: 'default', kind: 'MPIJob', gpuType: 'v100', status: 'Running', workers, gpusPerWorker: g, gpus: workers * g,
    minWorkers: 1, maxWorkers: 2, requestedWorkers: workers, priority: 0, epochs: 1, scheduler: 'ElasticFIFO', placement: { n0: workers },
    allocations: [{ time: start, workers, gpus: workers * g, placement: { n0: workers } }], submitTime: start, firstStart: start,
    asOf: now.toISOString(), waitingSeconds: 0, runningSeconds: 60, totalSeconds: 60, attainedService: 60 * workers * g, restarts: 0, priorityQueue: 0, progress: 0,
  });
  const wide = 'wide-20261127-000000';
  const narrow = 'narrow-20261127-000000';
  const snapshot = {
    now: now.toISOString(), clockRate: 1, jobs: [job(wide, 1, 4), job(narrow, 2, 1)], schedulers: [],
    nodes: [{ gpuType: 'v100', nodes: [{ name: 'n0', gpus: 8, ready: true, cordoned: false, freeGPUs: 2, jobs: [
      { name: narrow, namespace: 'default', workers: 2, gpus: 2, jobWorkers: 2 },
      { name: wide, namespace: 'default', workers: 1, gpus: 4, jobWorkers: 1 }] }] }],
  };
  const page = await context.newPage();
  await page.route((url) => url.pathname === '/api/v1/events', (route) => route.fulfill({ status: 200, contentType: 'text/event-stream',
    body: `event: snapshot\ndata: ${JSON.stringify(snapshot)}\n\n` }));
  await page.route((url) => url.pathname === '/api/v1/jobs', (route) => route.fulfill({ status: 200, contentType: 'application/json', body: '{"items": []}' }));
  await page.goto(`${base}/ui/#/`);
  await page.waitForSelector(`table#jobs tr[data-job="${wide}"]`, { timeout: 10000 });
  const r = await page.evaluate(([w, n]) => ({
    heading: document.querySelector('main h3').textContent,
    wideGPUs: document.querySelectorAll(`[data-node="n0"] .gpu[title="${w}"]`).length,
    narrowGPUs: document.querySelectorAll(`[data-node="n0"] .gpu[title="${n}"]`).length,
    freeGPUs: document.querySelectorAll('[data-node="n0"] .gpu.free').length,
    row: document.querySelector(`table#jobs tr[data-job="${w}"] .col-workers`).innerText,
  }), [wide, narrow]);
  await page.evaluate(() => { location.hash = '#/timeline'; });
  await page.waitForSelector('#timeline-title', { state: 'attached', timeout: 10000 });
  r.timeline = await page.$eval('#timeline-title', (t) => t.textContent);
  await page.close();
  return r;
}

run(main);
