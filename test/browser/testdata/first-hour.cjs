'use strict';
// Drives the dashboard of a running `voda server` (no authentication) in
// Chromium through what a newcomer meets in the first hour, and prints what
// happened as JSON. Usage:
//   node first-hour.cjs BASE_URL UNSCHEDULABLE_JOB JOBS SHOTS_DIR
// JOBS is the number of jobs the server holds. One part:
//   loading:    the event stream's body is held back after its headers
//               arrive (a big snapshot on a slow link); what the header and
//               each view say meanwhile, a screenshot, and what the page
//               showed at the moment the header turned live.
const path = require('path');
const { launch, run } = require('./launch.cjs');

// holdEvents replaces fetch in the page: the event stream's response comes
// back as soon as its headers do, but its body waits until
// window.releaseEvents() is called.
function holdEvents() {
  const realFetch = window.fetch;
  let release;
  const gate = new Promise((r) => { release = r; });
  window.releaseEvents = release;
  window.eventsHeld = false;
  window.fetch = async (input, init) => {
    const res = await realFetch(input, init);
    if (!String(input).includes('/api/v1/events') || !res.body) return res;
    const reader = res.body.getReader();
    const body = new ReadableStream({
      async pull(c) {
        await gate;
        const { value, done } = await reader.read();
        if (done) c.close(); else c.enqueue(value);
      },
      cancel(why) { return reader.cancel(why); },
    });
    window.eventsHeld = true;
    return new Response(body, { status: res.status, statusText: res.statusText, headers: res.headers });
  };
}

// go sets the address's hash and returns main's text once the page has
// handled it.
function go(page, hash) {
  return page.evaluate((h) => new Promise((resolve) => {
    const done = () => resolve(document.getElementById('main').innerText);
    if (location.hash === h) { done(); return; }
    window.addEventListener('hashchange', () => requestAnimationFrame(done), { once: true });
    location.hash = h;
  }), hash);
}

async function main() {
  const [base, unschedulable, jobsArg, shots] = process.argv.slice(2);
  const jobs = Number(jobsArg);
  const browser = await launch();
  const out = { console: [], pageErrors: [], loading: {}, message: {}, hashes: [], widths: [] };
  const watch = (page, who) => {
    page.on('console', (m) => {
      if (m.type() === 'error' || m.type() === 'warning') out.console.push(`${who} ${m.type()}: ${m.text()}`);
    });
    page.on('pageerror', (e) => out.pageErrors.push(`${who}: ${e}`));
  };
  const context = async (width, height) => browser.newContext({ viewport: { width, height }, locale: 'en-US', timezoneId: 'Europe/Berlin' });
  try {
    // ---- loading ----
    const held = await context(1366, 768);
    await held.addInitScript(holdEvents);
    const page = await held.newPage();
    watch(page, 'loading');
    await page.goto(`${base}/ui/#/`);
    // The stream's headers are in; whatever the page does with them, it
    // has done once the header no longer says it is connecting.
    await page.waitForFunction(() => window.eventsHeld && document.getElementById('connection').textContent !== 'connecting…', null, { timeout: 10000 });
    await page.evaluate(() => new Promise((r) => requestAnimationFrame(() => requestAnimationFrame(r))));
    const l = out.loading;
    l.header = await page.$eval('#connection', (e) => `${e.className}: ${e.textContent}`);
    await page.screenshot({ path: path.join(shots, 'dashboard-loading.png') });
    l.views = {};
    l.views.cluster = await go(page, '#/');
    for (const h of ['#/jobs', `#/jobs/${encodeURIComponent(unschedulable)}`, '#/timeline', '#/settings']) l.views[h] = await go(page, h);
    await go(page, `#/jobs/${encodeURIComponent(unschedulable)}`);
    await page.screenshot({ path: path.join(shots, 'dashboard-loading-job.png') });
    await go(page, '#/');
    // What the page shows at the moment it says live.
    await page.evaluate(() => {
      const c = document.getElementById('connection');
      new MutationObserver((_, obs) => {
        if (c.className !== 'live' || window.atLive) return;
        window.atLive = { nodes: document.querySelectorAll('.node').length, text: document.getElementById('main').innerText };
        obs.disconnect();
      }).observe(c, { attributes: true, childList: true, characterData: true, subtree: true });
      window.releaseEvents();
    });
    await page.waitForSelector('#connection.live', { timeout: 10000 });
    l.atLive = await page.evaluate(() => window.atLive || null);
    l.afterNotFound = await go(page, '#/jobs/no-such-job');
    await held.close();
  } finally {
    await browser.close();
  }
  process.stdout.write(JSON.stringify(out));
}

run(main);
