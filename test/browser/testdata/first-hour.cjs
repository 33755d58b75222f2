'use strict';
// Drives the dashboard of a running `voda server` (no authentication) in
// Chromium through what a newcomer meets in the first hour, and prints what
// happened as JSON. Usage:
//   node first-hour.cjs BASE_URL UNSCHEDULABLE_JOB JOBS SHOTS_DIR
// JOBS is the number of jobs the server holds. Four parts:
//   loading:    the event stream's body is held back after its headers
//               arrive (a big snapshot on a slow link); what the header and
//               each view say meanwhile, a screenshot, and what the page
//               showed at the moment the header turned live.
//   message:    the job page and jobs table row of UNSCHEDULABLE_JOB.
//   hashes:     each malformed address opened in a fresh page: whether the
//               stream connected, what the page shows, markup injected;
//               then 300 random ones in one page (fuzz).
//   widths:     at each viewport, once every job's row is there and one
//               shows a measured throughput, whether the jobs table, the
//               teams tables and the page scroll sideways.
const path = require('path');
const { launch, run } = require('./launch.cjs');

// The addresses a shared link may carry. text is what the page must show
// of it (as text).
const hashes = [
  { hash: '#/jobs/%E0%A4%A', text: '%E0%A4%A' },
  { hash: '#/jobs/%', text: '%' },
  { hash: '#/%ZZ/%E0', text: '%ZZ/%E0' },
  { hash: '#/nowhere', text: '/nowhere' },
  { hash: '#/jobs/a/b?c=d', text: 'a/b?c=d' },
  { hash: '#/timeline/', text: '/timeline/' },
  { hash: `#/jobs/${'x'.repeat(20000)}`, text: 'x'.repeat(200) },
  { hash: `#/${'%E0%A4'.repeat(3000)}`, text: '%E0%A4%E0%A4' },
  { hash: '#/jobs/<img src=x onerror=alert(1)>', text: '<img src=x onerror=alert(1)>' },
  { hash: '#/<script>alert(2)</script>', text: '<script>alert(2)</script>' },
  { hash: '#/jobs/%3Cb%3Ebold%3C%2Fb%3E%3Csvg%20onload%3Dalert(3)%3E', text: '<b>bold</b><svg onload=alert(3)>' },
];

// Headless Chromium draws no scrollbars; 1349 px is a 1366 px screen less
// a classic 17 px vertical scrollbar.
const widths = [[1366, 768], [1349, 768], [1280, 800], [1024, 768], [800, 600]];

// randomHashes returns n addresses made of pieces that have broken routers
// before, from a fixed seed so that a failure can be replayed.
function randomHashes(n) {
  let seed = 25;
  const rand = () => {
    seed = (seed + 0x6d2b79f5) | 0;
    let t = Math.imul(seed ^ (seed >>> 15), 1 | seed);
    t = (t + Math.imul(t ^ (t >>> 7), 61 | t)) ^ t;
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
  const pieces = ['/', 'jobs', 'jobs/', 'timeline', 'settings', '%', '%E0', '%A4', '%ZZ', '%2F', '%25', '%3C', '%00', '%C0%AF',
    '<', '>', '"', "'", '&', '?', '#', ' ', '..', '\\', 'é', '😀', '\u202e', 'x'];
  const out = [];
  for (let i = 0; i < n; i++) {
    let h = rand() < 0.5 ? '#/' : '#';
    for (let k = 1 + Math.floor(rand() * 12); k > 0; k--) h += pieces[Math.floor(rand() * pieces.length)];
    out.push(h);
  }
  return out;
}

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
    for (const h of ['#/jobs', '#/finished', `#/jobs/${encodeURIComponent(unschedulable)}`, '#/timeline', '#/settings']) l.views[h] = await go(page, h);
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

    // ---- message ----
    const ctx = await context(1366, 768);
    const p = await ctx.newPage();
    watch(p, 'message');
    await p.goto(`${base}/ui/#/jobs/${encodeURIComponent(unschedulable)}`);
    await p.waitForSelector('#connection.live', { timeout: 10000 });
    try {
      await p.waitForFunction(() => document.getElementById('main').innerText.includes('Unschedulable'), null, { timeout: 20000 });
    } catch (e) {
      out.message.error = String(e.message).split('\n')[0];
    }
    out.message.page = await p.$eval('main', (m) => m.innerText);
    await p.screenshot({ path: path.join(shots, 'dashboard-unschedulable.png'), fullPage: true });
    await go(p, '#/jobs');
    out.message.row = await p.$eval(`tr[data-job="${unschedulable}"]`, (r) => ({
      text: r.innerText, titles: [...r.querySelectorAll('[title]')].map((e) => e.title),
    })).catch((e) => ({ error: String(e.message).split('\n')[0] }));

    // ---- hashes ----
    for (const { hash, text } of hashes) {
      const h = await ctx.newPage();
      const r = { hash: hash.length > 80 ? `${hash.slice(0, 60)}… (${hash.length} characters)` : hash, text, errors: [], dialogs: [] };
      h.on('pageerror', (e) => r.errors.push(String(e)));
      h.on('console', (m) => { if (m.type() === 'error') r.errors.push(`console: ${m.text()}`); });
      h.on('dialog', (d) => { r.dialogs.push(d.message()); d.dismiss(); });
      await h.goto(`${base}/ui/${hash}`);
      r.live = await h.waitForSelector('#connection.live', { timeout: 10000 }).then(() => true, () => false);
      r.main = await h.$eval('main', (m) => m.innerText);
      r.shows = r.main.includes(text);
      r.injected = await h.$$eval('main img, main script, main svg, main b, main iframe, main [onerror], main [onload]', (es) => es.map((e) => e.outerHTML.slice(0, 80)));
      r.scroll = await h.evaluate(() => [document.documentElement.scrollWidth, document.documentElement.clientWidth]);
      if (r.main.length > 300) r.main = `${r.main.slice(0, 300)}…`;
      out.hashes.push(r);
      await h.close();
    }
    // Then many more, one after another in one page: each must draw a view.
    const f = await ctx.newPage();
    out.fuzz = { tried: 0, errors: [], blank: [] };
    f.on('pageerror', (e) => out.fuzz.errors.push(String(e)));
    f.on('console', (m) => { if (m.type() === 'error') out.fuzz.errors.push(`console: ${m.text()}`); });
    f.on('dialog', (d) => { out.fuzz.errors.push(`dialog: ${d.message()}`); d.dismiss(); });
    await f.goto(`${base}/ui/#/`);
    await f.waitForSelector('#connection.live', { timeout: 10000 });
    const tries = randomHashes(300);
    out.fuzz.blank = await f.evaluate(async (hs) => {
      const blank = [];
      for (const h of hs) {
        const before = location.href;
        const changed = new Promise((r) => window.addEventListener('hashchange', r, { once: true }));
        location.hash = h;
        if (location.href !== before) await changed;
        await new Promise((r) => requestAnimationFrame(r));
        const main = document.getElementById('main');
        if (!main.querySelector('h2') || !main.innerText.trim() || main.querySelector('img, script, iframe, b')) blank.push(h);
      }
      return blank;
    }, tries);
    out.fuzz.tried = tries.length;
    out.fuzz.live = await f.$eval('#connection', (e) => e.className === 'live');
    await ctx.close();

    // ---- widths ----
    for (const [width, height] of widths) {
      const wc = await context(width, height);
      const w = await wc.newPage();
      watch(w, `${width}px`);
      const r = { width, height, views: [] };
      for (const hash of ['#/jobs', '#/']) {
        await w.goto(`${base}/ui/${hash}`);
        await w.waitForSelector('#connection.live', { timeout: 10000 });
        const ready = await w.waitForFunction((n) => {
          const rows = document.querySelectorAll('#jobs tbody tr');
          // A measured throughput reads "… @WORKERS"; textContent, as the
          // column may be hidden.
          return rows.length === n && [...rows].some((row) => /@\d/.test(row.textContent));
        }, jobs, { timeout: 60000 }).then(() => true, () => false);
        const m = await w.evaluate(() => {
          const t = document.getElementById('jobs');
          const box = t.closest('.scroll') || t.parentElement;
          const visible = [...t.querySelectorAll('thead th')].filter((th) => th.offsetWidth > 0).map((th) => th.innerText.replace(/\s+/g, ' ').trim());
          // The cluster view's teams tables, when the server lists teams.
          const teams = [...document.querySelectorAll('table.teams-table')].map((tt) => ({
            scrollWidth: tt.scrollWidth, boxScrollWidth: tt.parentElement.scrollWidth, boxClientWidth: tt.parentElement.clientWidth,
          }));
          return {
            teams,
            tableScrollWidth: t.scrollWidth, boxScrollWidth: box.scrollWidth, boxClientWidth: box.clientWidth,
            pageScrollWidth: document.documentElement.scrollWidth, pageClientWidth: document.documentElement.clientWidth,
            columns: visible,
          };
        });
        r.views.push({ hash, ready, ...m });
        const name = hash === '#/' ? 'cluster' : 'jobs';
        await w.screenshot({ path: path.join(shots, `dashboard-${name}-${width}.png`), fullPage: true });
      }
      out.widths.push(r);
      await wc.close();
    }
  } finally {
    await browser.close();
  }
  process.stdout.write(JSON.stringify(out));
}

run(main);
