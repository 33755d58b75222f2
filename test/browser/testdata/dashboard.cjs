'use strict';
// Drives the dashboard of a running `voda server` in Chromium with
// playwright-core and prints what happened as JSON. Usage:
//   node dashboard.cjs BASE_URL ADMIN_TOKEN USER_TOKEN MANIFEST_FILE WAITING_MANIFEST_FILE SHOTS_DIR
// As the admin: open /ui/, submit the manifest through the API, time until
// the job's row and its GPUs show and list what the page requested
// meanwhile, wait for the job to complete without a
// reload (it moves from the live jobs to the finished ones), open its page
// by clicking it under Finished; submit a job that cannot start and read
// its waiting time twice; reload and find the finished job's GPUs in the
// timeline. As the user: try to change an algorithm and read the refusal.
const fs = require('fs');
const path = require('path');
const { launch, run } = require('./launch.cjs');

async function main() {
  const [base, adminToken, userToken, manifestFile, waitingFile, shots] = process.argv.slice(2);
  const manifest = fs.readFileSync(manifestFile, 'utf8');
  const name = /name:\s*(\S+)/.exec(manifest)[1];
  const browser = await launch();
  const out = { console: [], pageErrors: [], steps: {} };
  const watch = (page, who) => {
    page.on('console', (m) => {
      if (m.type() === 'error' || m.type() === 'warning') out.console.push(`${who} ${m.type()}: ${m.text()}`);
    });
    page.on('pageerror', (e) => out.pageErrors.push(`${who}: ${e}`));
  };
  const as = async (token) => {
    const context = await browser.newContext({ viewport: { width: 1280, height: 900 }, locale: 'en-US', timezoneId: 'Europe/Berlin' });
    await context.addInitScript((t) => sessionStorage.setItem('voda-token', t), token);
    return context.newPage();
  };
  try {
    const admin = await as(adminToken);
    watch(admin, 'admin');
    await admin.goto(`${base}/ui/`);
    await admin.waitForSelector('#connection.live', { timeout: 10000 });
    await admin.waitForSelector('.node', { timeout: 10000 });
    out.steps.nodes = await admin.$$eval('.node', (ns) => ns.length);

    const submit = (body) => fetch(`${base}/api/v1/jobs`, {
      method: 'POST', headers: { Authorization: `Bearer ${adminToken}`, 'Content-Type': 'application/yaml' }, body,
    });
    // What the page asks the server for while the job appears: nothing,
    // if the open event stream brings it (no reconnect, no polling).
    const requests = [];
    admin.on('request', (r) => requests.push(new URL(r.url()).pathname));
    const submitted = Date.now();
    const res = await submit(manifest);
    const created = await res.json();
    out.steps.createStatus = res.status;
    const job = (created && created.name) || name;
    out.steps.job = job;
    await admin.waitForSelector(`tr[data-job="${job}"]`, { timeout: 10000 });
    out.steps.rowMs = Date.now() - submitted;
    await admin.waitForSelector(`a.gpu[title="${job}"]`, { timeout: 10000 });
    out.steps.gpusMs = Date.now() - submitted;
    out.steps.requestsWhileWaiting = requests.slice();
    await admin.screenshot({ path: path.join(shots, 'dashboard-cluster.png') });
    const navigations = [];
    admin.on('framenavigated', (f) => { if (f === admin.mainFrame()) navigations.push(f.url()); });
    // Finished, it leaves the live jobs (the cluster view's table) and
    // shows under Finished.
    await admin.waitForFunction((j) => !document.querySelector(`table#jobs tr[data-job="${j}"]`), job, { timeout: 60000 });
    await admin.evaluate(() => { location.hash = '#/finished'; });
    await admin.waitForFunction((j) => {
      const row = document.querySelector(`table#finished tr[data-job="${j}"]`);
      return row && row.textContent.includes('Completed');
    }, job, { timeout: 60000 });
    out.steps.completedMs = Date.now() - submitted;
    out.steps.reloads = navigations.filter((u) => !u.includes('#')).length;
    await admin.click(`table#finished tr[data-job="${job}"] a`);
    await admin.waitForSelector('main h2');
    out.steps.jobPage = await admin.$eval('main h2', (h) => h.textContent);
    out.steps.jobPageHash = await admin.evaluate(() => location.hash);
    out.steps.jobPageText = await admin.$eval('main', (m) => m.innerText);
    out.steps.historyEntries = await admin.$$eval('#placement-history li', (l) => l.length);
    await admin.screenshot({ path: path.join(shots, 'dashboard-job.png'), fullPage: true });

    // A job that cannot start: its waiting time goes on between events.
    const waiting = await (await submit(fs.readFileSync(waitingFile, 'utf8'))).json();
    out.steps.waitingJob = waiting.name;
    await admin.goto(`${base}/ui/#/jobs`);
    const cell = `tr[data-job="${waiting.name}"] .tick[data-f="waiting"]`;
    await admin.waitForSelector(cell, { timeout: 10000 });
    const first = await admin.$eval(cell, (e) => e.textContent);
    await new Promise((r) => setTimeout(r, 2500));
    out.steps.waitingTicks = [first, await admin.$eval(cell, (e) => e.textContent)];

    // A new page, so a new snapshot: the finished job's GPUs come from
    // its stored allocations, not from what this page saw.
    await admin.goto(`${base}/ui/#/timeline`);
    await admin.reload();
    await admin.waitForSelector('#connection.live', { timeout: 10000 });
    await admin.waitForSelector('#timeline', { timeout: 10000 });
    out.steps.timelineCharts = await admin.$$eval('svg[role="img"]', (s) => s.length);
    out.steps.timelineJobs = await admin.$$eval('#timeline polygon', (ps) => ps.map((p) => p.dataset.job));
    await admin.screenshot({ path: path.join(shots, 'dashboard-timeline.png'), fullPage: true });

    const user = await as(userToken);
    watch(user, 'user');
    await user.goto(`${base}/ui/#/settings`);
    await user.waitForSelector('#connection.live', { timeout: 10000 });
    await user.waitForSelector('section[data-scheduler] button', { timeout: 10000 });
    await user.click('section[data-scheduler] button');
    await user.waitForSelector('#settings-result', { timeout: 10000 });
    out.steps.refusal = await user.$eval('#settings-result', (p) => p.textContent);
    await user.screenshot({ path: path.join(shots, 'dashboard-settings-refused.png') });
  } finally {
    await browser.close();
  }
  process.stdout.write(JSON.stringify(out));
}

run(main);
