'use strict';
// Holds PAGES dashboards of a running `voda server` open in one Chromium,
// for TestDashboardLoad to measure the server meanwhile. Usage:
//   node load.cjs BASE_URL TOKEN PAGES READY_MS HOLD_MS SHOT
// Opens PAGES browser contexts at once, each signed in with TOKEN (the
// dashboard's sessionStorage 'voda-token') at /ui/#/, the cluster view with
// the live jobs table, and waits, at most READY_MS, until every page is
// live and its table says "N of N jobs" (every live job of the snapshot).
// Then it prints one line of JSON:
//   {"ready": true, "pageMs": [ms from opening to all jobs, by page],
//    "shown": [N, by page],
//    "streamBytes": [bytes the page's event stream had received then]}
// or {"ready": false, "error": "...", "pageMs": [...]} (a page not ready is
// null), and holds the pages open until it reads a line or its stdin
// closes, or HOLD_MS pass, whichever comes first. Last it prints one line
// of JSON with what the pages logged (console errors and warnings, page
// errors), each page's caption, connection state, event streams opened,
// the bytes its stream received while held and its main thread's time while
// held (Chromium's Performance metrics: script, style, layout, all tasks), saves a screenshot of the first
// page as SHOT, and closes the browser, which it does whatever happens.
const { launch } = require('./launch.cjs');

const [base, token, pagesArg, readyArg, holdArg, shot] = process.argv.slice(2);
const pages = Number(pagesArg);
const readyMs = Number(readyArg);
const holdMs = Number(holdArg);

const out = { console: [], pageErrors: [], pages: [] };
let browser = null;

function line(obj) {
  process.stdout.write(`${JSON.stringify(obj)}\n`);
}

// release resolves on a line on stdin, stdin's end, or after ms.
function release(ms) {
  return new Promise((resolve) => {
    const done = (why) => { clearTimeout(timer); resolve(why); };
    const timer = setTimeout(() => done('timeout'), ms);
    process.stdin.setEncoding('utf8');
    process.stdin.on('data', (d) => { if (d.includes('\n')) done('line'); });
    process.stdin.on('end', () => done('end'));
    process.stdin.on('error', () => done('error'));
    process.stdin.resume();
  });
}

async function open(i) {
  const context = await browser.newContext({ viewport: { width: 1280, height: 900 }, locale: 'en-US', timezoneId: 'Europe/Berlin' });
  await context.addInitScript((t) => sessionStorage.setItem('voda-token', t), token);
  const page = await context.newPage();
  const who = `page ${i}`;
  const p = { page, streams: 0, streamIds: new Set(), bytes: 0, navigations: 0 };
  page.on('console', (m) => {
    if (m.type() === 'error' || m.type() === 'warning') out.console.push(`${who} ${m.type()}: ${m.text()}`);
  });
  page.on('pageerror', (e) => out.pageErrors.push(`${who}: ${e}`));
  page.on('request', (r) => { if (r.url().includes('/api/v1/events')) p.streams++; });
  page.on('framenavigated', (f) => { if (f === page.mainFrame()) p.navigations++; });
  // The bytes the event stream brings, as Chromium's network layer counts
  // them (playwright cannot read a response that never ends).
  const cdp = await context.newCDPSession(page);
  cdp.on('Network.responseReceived', (e) => { if (e.response.url.includes('/api/v1/events')) p.streamIds.add(e.requestId); });
  cdp.on('Network.dataReceived', (e) => { if (p.streamIds.has(e.requestId)) p.bytes += e.encodedDataLength || e.dataLength; });
  await cdp.send('Network.enable');
  await cdp.send('Performance.enable');
  p.cdp = cdp;
  return p;
}

async function main() {
  browser = await launch();
  const opened = await Promise.all(Array.from({ length: pages }, (_, i) => open(i)));
  const pageMs = new Array(pages).fill(null);
  const shown = new Array(pages).fill(null);
  const deadline = Date.now() + readyMs;
  const results = await Promise.allSettled(opened.map(async (p, i) => {
    const start = Date.now();
    await p.page.goto(`${base}/ui/#/`, { timeout: readyMs });
    const n = await p.page.waitForFunction(() => {
      const c = document.querySelector('table#jobs caption');
      const m = c && document.getElementById('connection').className === 'live' && /^(\d+) of (\d+) jobs$/.exec(c.textContent);
      return m && m[1] === m[2] ? Number(m[1]) : false;
    }, null, { timeout: Math.max(1, deadline - Date.now()), polling: 50 });
    pageMs[i] = Date.now() - start;
    shown[i] = await n.jsonValue();
    p.readyBytes = p.bytes;
  }));
  const failed = results.filter((r) => r.status === 'rejected').map((r) => String(r.reason && r.reason.message || r.reason).split('\n')[0]);
  const ready = failed.length === 0;
  const bytesAtReady = opened.map((p) => p.bytes);
  line(ready ? { ready, pageMs, shown, streamBytes: opened.map((p) => p.readyBytes) } : { ready, pageMs, error: failed.join('; ') });
  // Chromium's own account of each page's main thread while held: its
  // script, style, layout and all tasks, in seconds.
  const perf = async (p) => {
    const { metrics } = await p.cdp.send('Performance.getMetrics');
    return Object.fromEntries(metrics.map((m) => [m.name, m.value]));
  };
  const perf0 = ready ? await Promise.all(opened.map(perf)) : [];
  const heldFrom = Date.now();
  out.released = ready ? await release(holdMs) : 'not ready';
  out.heldMs = Date.now() - heldFrom;
  const heldBytes = opened.map((p, i) => p.bytes - bytesAtReady[i]);
  const perf1 = ready ? await Promise.all(opened.map((p) => perf(p).catch(() => null))) : [];
  const mainThread = (i) => {
    if (!perf0[i] || !perf1[i]) return null;
    const d = (k) => (perf1[i][k] || 0) - (perf0[i][k] || 0);
    return { script: d('ScriptDuration'), style: d('RecalcStyleDuration'), layout: d('LayoutDuration'), task: d('TaskDuration') };
  };
  // Busy pages answer slowly: each question has 30 s, all pages at once.
  const text = (p, sel) => Promise.race([
    p.page.$eval(sel, (c) => c.textContent),
    new Promise((_, reject) => setTimeout(() => reject(new Error('no answer within 30 s')), 30000).unref()),
  ]).catch((e) => `(${String(e.message).split('\n')[0]})`);
  out.pages = await Promise.all(opened.map(async (p, i) => ({
    caption: await text(p, 'table#jobs caption'),
    connection: await text(p, '#connection'),
    streams: p.streams,
    navigations: p.navigations,
    heldBytes: heldBytes[i],
    mainThread: mainThread(i),
  })));
  if (shot) await opened[0].page.screenshot({ path: shot, timeout: 30000 }).catch(() => {});
}

// A TERM from the test (it gave up) closes the browser too.
process.on('SIGTERM', () => { (browser ? browser.close() : Promise.resolve()).finally(() => process.exit(143)); });

main().then(() => 0, (e) => {
  process.stderr.write(`${(e && e.stack) || e}\n`);
  out.error = String((e && e.message) || e);
  return 1;
}).then(async (code) => {
  if (browser) await browser.close().catch(() => {});
  line(out);
  process.exit(code);
});
