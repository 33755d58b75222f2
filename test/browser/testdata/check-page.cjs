'use strict';
// Opens one page in Chromium with playwright-core and prints what a test
// checks as JSON: console messages and page errors, requests leaving the
// page's own file, charts and tables with their sizes, <time> elements and
// whether the page scrolls sideways. Usage:
//   node check-page.cjs URL SCREENSHOT.png TIMEZONE
const { launch, run } = require('./launch.cjs');

async function main() {
  const [url, screenshot, timezone] = process.argv.slice(2);
  const browser = await launch();
  const out = { console: [], pageErrors: [], requests: [] };
  try {
    const context = await browser.newContext({
      timezoneId: timezone || 'UTC', locale: 'en-US', viewport: { width: 1280, height: 900 },
    });
    const page = await context.newPage();
    page.on('console', (m) => {
      if (m.type() === 'error' || m.type() === 'warning') out.console.push(`${m.type()}: ${m.text()}`);
    });
    page.on('pageerror', (e) => out.pageErrors.push(String(e)));
    page.on('request', (r) => {
      if (!r.url().startsWith('file:')) out.requests.push(r.url());
    });
    await page.goto(url, { waitUntil: 'load' });
    out.title = await page.title();
    out.charts = await page.$$eval('svg[role="img"]', (els) => els.map((e) => {
      const b = e.getBoundingClientRect();
      return { width: b.width, height: b.height, title: (e.querySelector('title') || {}).textContent || '' };
    }));
    out.tables = await page.$$eval('table', (ts) => ts.map((t) => ({
      caption: t.caption ? t.caption.textContent.trim() : '',
      rows: t.rows.length,
      headers: t.querySelectorAll('th').length,
    })));
    out.times = await page.$$eval('time', (ts) => ts.map((t) => ({
      datetime: t.getAttribute('datetime'), text: t.textContent.trim(),
    })));
    out.scrollWidth = await page.evaluate(() => document.documentElement.scrollWidth);
    out.clientWidth = await page.evaluate(() => document.documentElement.clientWidth);
    if (screenshot) {
      await page.screenshot({ path: screenshot, fullPage: false });
      const chart = await page.$('svg[role="img"]');
      if (chart) {
        await chart.screenshot({ path: screenshot.replace(/\.png$/, '-chart.png') });
      }
    }
  } finally {
    await browser.close();
  }
  process.stdout.write(JSON.stringify(out));
}

run(main);
