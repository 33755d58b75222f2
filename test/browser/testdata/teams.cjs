'use strict';
// Drives the dashboard's Teams panel in Chromium with playwright-core and
// prints what happened as JSON. Usage:
//   node teams.cjs BASE_URL ADMIN_TOKEN MANIFEST_A MANIFEST_B SNAPSHOT_FILE SHOTS_DIR
// Live: open /ui/ as the admin and read the v100 teams; submit MANIFEST_A
// (team-a) and wait until team-a holds every GPU, borrowing; submit
// MANIFEST_B (team-b) and wait until each holds its guarantee, reading
// what the page requested meanwhile (nothing: the open event stream
// brings the scheduler's changes). Scripted: a page whose event stream
// this script answers, first with SNAPSHOT_FILE (teams in every state),
// then, after the stream ends, with the same snapshot less its teams (as
// for a viewer who may not list teams): the rows read, then whether the
// panel went.
const fs = require('fs');
const path = require('path');
const { launch, run } = require('./launch.cjs');

// teamRows reads every teams table of the page: per GPU type, its caption
// and per team its state, its cells' text and its bar.
function teamRows() {
  const out = {};
  for (const table of document.querySelectorAll('table.teams-table')) {
    out[table.dataset.teams] = {
      caption: table.querySelector('caption').textContent,
      rows: [...table.querySelectorAll('tbody tr')].map((tr) => {
        const bar = tr.querySelector('svg.team-bar');
        const badge = tr.querySelector('.badge');
        return {
          team: tr.dataset.team,
          state: tr.dataset.state,
          badge: badge ? badge.textContent : '',
          badgeTitle: badge ? badge.title : '',
          cells: [...tr.children].map((c) => c.innerText.trim()),
          barLabel: bar ? bar.getAttribute('aria-label') : '',
          barInUse: bar ? Number(bar.querySelector('[data-in-use]').getAttribute('width')) : -1,
          barEntitled: bar ? Number(bar.querySelector('rect').getAttribute('width')) : -1,
          barGuarantee: bar ? Number(bar.querySelector('[data-guarantee]').getAttribute('x1')) : -1,
        };
      }),
    };
  }
  return out;
}

async function main() {
  const [base, adminToken, fileA, fileB, snapshotFile, shots] = process.argv.slice(2);
  const browser = await launch();
  const out = { console: [], pageErrors: [], live: {}, scripted: {} };
  const watch = (page, who) => {
    page.on('console', (m) => {
      if (m.type() === 'error' || m.type() === 'warning') out.console.push(`${who} ${m.type()}: ${m.text()}`);
    });
    page.on('pageerror', (e) => out.pageErrors.push(`${who}: ${e}`));
  };
  try {
    const context = await browser.newContext({ viewport: { width: 1280, height: 900 }, locale: 'en-US', timezoneId: 'Europe/Berlin' });
    await context.addInitScript((t) => sessionStorage.setItem('voda-token', t), adminToken);
    const page = await context.newPage();
    watch(page, 'live');
    await page.goto(`${base}/ui/`);
    await page.waitForSelector('#connection.live', { timeout: 10000 });
    await page.waitForSelector('table[data-teams="v100"]', { timeout: 10000 });
    const l = out.live;
    l.before = await page.evaluate(teamRows);

    const requests = [];
    page.on('request', (r) => requests.push(new URL(r.url()).pathname));
    const submit = async (file) => {
      const res = await fetch(`${base}/api/v1/jobs`, {
        method: 'POST', headers: { Authorization: `Bearer ${adminToken}`, 'Content-Type': 'application/yaml' }, body: fs.readFileSync(file, 'utf8'),
      });
      return res.status;
    };
    // Each wait polls the page with a deadline; what the page showed when
    // one ran out is read all the same.
    const waitFor = async (fn, arg) => page.waitForFunction(fn, arg, { timeout: 60000 }).then(() => true, () => false);
    l.createA = await submit(fileA);
    l.aborrows = await waitFor(() => {
      const row = document.querySelector('table[data-teams="v100"] tr[data-team="team-a"]');
      return row && row.dataset.state === 'borrowing' && row.children[1].innerText.trim() === '8';
    });
    l.borrowing = await page.evaluate(teamRows);
    await page.screenshot({ path: path.join(shots, 'dashboard-teams-borrowing.png'), fullPage: true });
    l.createB = await submit(fileB);
    l.shared = await waitFor(() => ['team-a', 'team-b'].every((t) => {
      const row = document.querySelector(`table[data-teams="v100"] tr[data-team="${t}"]`);
      return row && row.children[1].innerText.trim() === '4';
    }));
    l.after = await page.evaluate(teamRows);
    l.requests = requests.slice();
    l.inUse = await page.evaluate(() => ['team-a', 'team-b'].map((t) => {
      const row = document.querySelector(`table[data-teams="v100"] tr[data-team="${t}"]`);
      return row ? Number(row.children[1].innerText.trim()) : -1;
    }));
    await page.screenshot({ path: path.join(shots, 'dashboard-teams.png'), fullPage: true });
    await page.close();

    // Scripted: the snapshot with teams, then (from the second
    // connection on) without.
    const snapshot = fs.readFileSync(snapshotFile, 'utf8');
    const bare = JSON.parse(snapshot);
    for (const s of bare.schedulers) delete s.teams;
    let streams = 0;
    let release;
    const read = new Promise((r) => { release = r; });
    const scripted = await context.newPage();
    watch(scripted, 'scripted');
    await scripted.route((url) => url.pathname === '/api/v1/events', async (route) => {
      streams++;
      // The first stream ends at once; the page's next connection is
      // answered once the panel the first drew was read.
      if (streams > 1) await read;
      const body = streams === 1 ? snapshot : JSON.stringify(bare);
      return route.fulfill({ status: 200, contentType: 'text/event-stream', body: `event: snapshot\ndata: ${body}\n\n` });
    });
    await scripted.route((url) => url.pathname === '/api/v1/jobs', (route) => route.fulfill({ status: 200, contentType: 'application/json', body: '{"items": []}' }));
    await scripted.goto(`${base}/ui/#/`);
    await scripted.waitForSelector('table.teams-table', { timeout: 10000 });
    const s = out.scripted;
    s.tables = await scripted.evaluate(teamRows);
    s.headings = await scripted.$$eval('main h2', (hs) => hs.map((h) => h.textContent));
    await scripted.screenshot({ path: path.join(shots, 'dashboard-teams-states.png'), fullPage: true });
    release();
    s.hidden = await scripted.waitForFunction(() => !document.querySelector('table.teams-table') && document.querySelector('.node'), null, { timeout: 10000 })
      .then(() => true, () => false);
    s.streams = streams;
    s.headingsAfter = await scripted.$$eval('main h2', (hs) => hs.map((h) => h.textContent));
    s.nodesAfter = await scripted.$$eval('.node', (ns) => ns.length);
    await scripted.close();
  } finally {
    await browser.close();
  }
  process.stdout.write(JSON.stringify(out));
}

run(main);
