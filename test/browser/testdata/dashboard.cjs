'use strict';
// Drives the dashboard of a running `voda server` in Chromium with
// playwright-core and prints what happened as JSON. Usage:
//   node dashboard.cjs BASE_URL ADMIN_TOKEN USER_TOKEN MANIFEST_FILE SHOTS_DIR
// As the admin: open /ui/, submit the manifest through the API, time until
// the job's row and its GPUs show, wait for the job to complete without a
// reload, open its page by clicking it. As the user: try to change an
// algorithm and read the refusal.
const fs = require('fs');
const path = require('path');
const { chromium } = require('playwright-core');

async function main() {
  const [base, adminToken, userToken, manifestFile, shots] = process.argv.slice(2);
  const manifest = fs.readFileSync(manifestFile, 'utf8');
  const name = /name:\s*(\S+)/.exec(manifest)[1];
  const browser = await chromium.launch({
    executablePath: process.env.VODA_CHROMIUM || '/usr/bin/chromium',
    args: ['--no-sandbox', '--disable-gpu', '--no-first-run', '--disable-background-networking',
      '--disable-component-update', '--disable-sync'],
  });
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

    const submitted = Date.now();
    const res = await fetch(`${base}/api/v1/jobs`, {
      method: 'POST', headers: { Authorization: `Bearer ${adminToken}`, 'Content-Type': 'application/yaml' }, body: manifest,
    });
    const created = await res.json();
    out.steps.createStatus = res.status;
    const job = (created && created.name) || name;
    out.steps.job = job;
    await admin.waitForSelector(`tr[data-job="${job}"]`, { timeout: 10000 });
    out.steps.rowMs = Date.now() - submitted;
    await admin.waitForSelector(`a.gpu[title="${job}"]`, { timeout: 10000 });
    out.steps.gpusMs = Date.now() - submitted;
    await admin.screenshot({ path: path.join(shots, 'dashboard-cluster.png') });
    const navigations = [];
    admin.on('framenavigated', (f) => { if (f === admin.mainFrame()) navigations.push(f.url()); });
    await admin.waitForFunction((j) => {
      const row = document.querySelector(`tr[data-job="${j}"]`);
      return row && row.textContent.includes('Completed');
    }, job, { timeout: 60000 });
    out.steps.completedMs = Date.now() - submitted;
    out.steps.reloads = navigations.filter((u) => !u.includes('#')).length;
    await admin.goto(`${base}/ui/#/jobs`);
    await admin.click(`tr[data-job="${job}"] a`);
    await admin.waitForSelector('main h2');
    out.steps.jobPage = await admin.$eval('main h2', (h) => h.textContent);
    out.steps.jobPageHash = await admin.evaluate(() => location.hash);
    out.steps.jobPageText = await admin.$eval('main', (m) => m.innerText);
    await admin.screenshot({ path: path.join(shots, 'dashboard-job.png'), fullPage: true });
    await admin.goto(`${base}/ui/#/timeline`);
    out.steps.timelineCharts = await admin.$$eval('svg[role="img"]', (s) => s.length);

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

main().catch((e) => {
  process.stderr.write(`${(e && e.stack) || e}\n`);
  process.exit(1);
});
