'use strict';
// Opens a simulation report in Chromium with playwright-core and prints,
// as JSON, the boxes a test needs to tell whether the text of its charts
// overlaps: for every chart (svg[role=img]) and every font the page is
// shown with, the box of each non-empty <text> element, of each legend
// entry's label and line sample, and the stroke colours of the chart's
// 2 px lines (its series and their legend samples). Boxes are in CSS
// pixels of the page (getBoundingClientRect, so rotated text counts by
// its whole extent). Usage:
//   node report-charts.cjs URL SCREENSHOT-PREFIX FONT...
// Each FONT is "" for the page as it is, or a font-family forced on every
// chart's text, as on a machine whose fonts differ from the page's own;
// the charts are screenshotted, one PNG each, with the page as it is.
const { launch, run } = require('./launch.cjs');

async function main() {
  const [url, prefix, ...fonts] = process.argv.slice(2);
  const browser = await launch();
  const out = { variants: [] };
  try {
    const context = await browser.newContext({ locale: 'en-US', viewport: { width: 1280, height: 900 } });
    const page = await context.newPage();
    await page.goto(url, { waitUntil: 'load' });
    for (const font of fonts.length ? fonts : ['']) {
      await page.evaluate((f) => {
        let s = document.getElementById('forced-font');
        if (!s) {
          s = document.createElement('style');
          s.id = 'forced-font';
          document.head.appendChild(s);
        }
        s.textContent = f ? `svg.chart text { font-family: ${f} !important; }` : '';
      }, font);
      await page.evaluate(() => document.fonts.ready);
      const charts = await page.$$eval('svg[role="img"]', (svgs) => svgs.map((svg) => {
        const box = (e) => {
          const b = e.getBoundingClientRect();
          return { x: b.x, y: b.y, w: b.width, h: b.height };
        };
        const texts = [...svg.querySelectorAll('text')]
          .filter((t) => t.textContent.trim() !== '')
          .map((t) => ({ text: t.textContent, class: t.getAttribute('class') || '', box: box(t) }));
        const entries = [...svg.querySelectorAll('g.legend-entry')].map((g) => {
          const label = g.querySelector('text.legend-label');
          const sample = g.querySelector('g.legend-sample');
          return {
            label: label ? label.textContent : '',
            labelBox: label ? box(label) : null,
            sampleBox: sample ? box(sample) : null,
          };
        });
        const strokes = new Set();
        for (const p of svg.querySelectorAll('path')) {
          const st = getComputedStyle(p);
          if (st.stroke !== 'none' && Math.abs(parseFloat(st.strokeWidth) - 2) < 0.01) strokes.add(st.stroke);
        }
        return {
          title: (svg.querySelector('title') || {}).textContent || '',
          box: box(svg),
          texts,
          entries,
          strokes: [...strokes].sort(),
        };
      }));
      out.variants.push({ font, charts });
    }
    await page.evaluate(() => { document.getElementById('forced-font').textContent = ''; });
    const svgs = await page.$$('svg[role="img"]');
    for (let i = 0; i < svgs.length; i++) {
      await svgs[i].screenshot({ path: `${prefix}-chart-${String(i + 1).padStart(2, '0')}.png` });
    }
  } finally {
    await browser.close();
  }
  process.stdout.write(JSON.stringify(out));
}

run(main);
