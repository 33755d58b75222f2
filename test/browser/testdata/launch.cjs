'use strict';
// What the scripts of test/browser share: Debian's Chromium (VODA_CHROMIUM)
// launched by playwright-core with nothing that reaches beyond this machine,
// and a main that prints its failure and exits 1.
const { chromium } = require('playwright-core');

function launch() {
  return chromium.launch({
    executablePath: process.env.VODA_CHROMIUM || '/usr/bin/chromium',
    args: ['--no-sandbox', '--disable-gpu', '--no-first-run', '--disable-background-networking',
      '--disable-component-update', '--disable-sync'],
  });
}

function run(main) {
  main().catch((e) => {
    process.stderr.write(`${(e && e.stack) || e}\n`);
    process.exit(1);
  });
}

module.exports = { launch, run };
