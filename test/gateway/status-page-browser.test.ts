// The live status page in a real browser: Debian's chromium, headless,
// driven by playwright-core (which never downloads a browser of its own).
// The gateway publishes its synthetic feed; the test pastes a read token
// into the page and watches the numbers change without a reload: rates,
// latency percentiles and the histogram plot, SLO state, the feed's
// counters and its QP. It writes a screenshot to test-output/.
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { existsSync, mkdirSync } from 'node:fs';
import { join } from 'node:path';
import { chromium, type Browser, type Page } from 'playwright-core';
import type { Gateway } from '../../src/gateway/service.js';
import { READ_TOKEN, startTestGateway } from '../support/in-process-gateway.js';
import { REPO_ROOT } from '../support/paths.js';

const CHROMIUM = process.env['QPGATE_CHROMIUM'] ?? '/usr/bin/chromium';
const SCREENSHOT = join(REPO_ROOT, 'test-output', 'status-page.png');

let gw: Gateway;
let browser: Browser;
let page: Page;
const pageErrors: string[] = [];

before(async () => {
  assert.ok(existsSync(CHROMIUM), `no browser at ${CHROMIUM}: install Debian's chromium (scripts/setup.sh --with-tests) or set QPGATE_CHROMIUM`);
  const a = `239.92.${Math.floor(Math.random() * 250)}.${1 + Math.floor(Math.random() * 250)}`;
  const b = a.replace(/^239\.92\./, '239.93.');
  gw = await startTestGateway(
    `feeds:\n  channels:\n    - id: 1\n      groupA: ${a}\n      groupB: ${b}\n  synthetic:\n    ratePerSec: 2000\n    seed: 11\n` +
      // Evaluated every second over short windows, so the SLO row fills while the test watches
      // (a threshold far above what a loaded 2-CPU machine shows: this test is about the page).
      `slo:\n  evaluationInterval: 1s\n  objectives:\n    - name: tick-publish-p99\n      latency: tick_publish\n      percentile: 99\n      thresholdUs: 5000000\n      windows: [10s, 1m]\n`,
  );
  browser = await chromium.launch({ executablePath: CHROMIUM, headless: true });
  page = await browser.newPage({ viewport: { width: 1280, height: 1400 } });
  page.on('pageerror', (err) => pageErrors.push(`pageerror: ${err.message}`));
  page.on('console', (msg) => {
    // The one 401 is the wrong token the test pastes first.
    if (msg.type() === 'error' && !/status of 401/.test(msg.text())) pageErrors.push(`console: ${msg.text()}`);
  });
});

after(async () => {
  await browser?.close();
  await gw?.close('test done');
});

const cell = (tableId: string, row: number, col: number) =>
  page.locator(`#${tableId} tbody tr`).nth(row).locator('td').nth(col).innerText();
const num = (text: string): number => Number(text.replace(/,/g, ''));
// The page's document inside functions playwright runs in the browser (this
// project compiles without the DOM lib). Functions, not strings: the page's
// CSP forbids eval, and playwright evaluates a string predicate with it.
// eslint-disable-next-line @typescript-eslint/no-explicit-any
declare const document: any;

test('the status page asks for a token, then shows live numbers that change without a reload', async (t) => {
  await page.goto(`${gw.url}/`);
  await page.locator('#auth').waitFor({ state: 'visible' });
  assert.equal(await page.locator('#state').innerText(), 'not connected');

  // A wrong token is refused and the form stays.
  await page.fill('#token', 'wrong-token-0123456789');
  await page.click('#auth button[type=submit]');
  await page.waitForFunction(() => document.getElementById('auth-error').textContent === 'the gateway refused this token');

  await page.fill('#token', READ_TOKEN);
  await page.click('#auth button[type=submit]');
  await page.waitForFunction(() => document.getElementById('state').textContent.startsWith('live'));
  assert.equal(await page.locator('#auth').isHidden(), true);
  // A marker that a reload (or navigation) would wipe.
  await page.evaluate(() => ((globalThis as any).marker = 42));

  // Let two polls pass so rates (differences between polls) exist.
  await page.waitForFunction(
    () => {
      const cells = document.querySelectorAll('#feeds tbody tr td');
      return cells.length > 7 && cells[7].textContent !== '…';
    },
    undefined,
    { timeout: 10_000 },
  );

  const feedRow = page.locator('#feeds tbody tr').first();
  assert.equal(await feedRow.locator('td').nth(0).innerText(), 'default');
  assert.equal(await feedRow.locator('td').nth(1).innerText(), '1');
  assert.match(await feedRow.locator('td').nth(4).innerText(), /^\d+ RTS$/);
  const messages1 = num(await cell('feeds', 0, 6));
  const latencyCount1 = num(await cell('latency', 0, 1));
  assert.equal(await cell('latency', 0, 0), 'tick_publish');

  // Rates: the published-message rate is about the synthetic rate (2000/s, bursty).
  const rateCard = page.locator('#rates .card').filter({ hasText: 'messages published' }).locator('.v');
  const rate = num(await rateCard.innerText());
  assert.ok(rate > 200 && rate < 20_000, `messages published per second: ${rate}`);
  const msgsPerSec = num(await cell('feeds', 0, 7));
  assert.ok(msgsPerSec > 200, `channel msgs/s ${msgsPerSec}`);

  // Percentiles: numbers, ordered.
  const [p50, p90, p99, max] = await Promise.all([2, 3, 4, 6].map(async (c) => num(await cell('latency', 0, c))));
  assert.ok(p50! > 0 && p50! <= p90! && p90! <= p99! && p99! <= max!, `p50 ${p50} p90 ${p90} p99 ${p99} max ${max}`);

  // The histogram plot: an SVG with bars of non-zero height.
  const bars = await page.$$eval('#histograms svg.histogram rect', (rects) => rects.filter((r) => Number(r.getAttribute('height')) > 0).length);
  assert.ok(bars > 0, 'histogram bars drawn');

  // The SLO is evaluated (1 s interval) and shown green with its windows.
  await page.waitForFunction(() => document.querySelector('#slo tbody tr td:nth-child(4)')?.textContent === 'ok', undefined, { timeout: 10_000 });
  assert.equal(await cell('slo', 0, 0), 'tick-publish-p99');
  assert.equal(await cell('slo', 0, 4), '10s');
  assert.ok(num(await cell('slo', 0, 7)) > 0, 'events in the SLO window');

  // The feed's QP in the QP table.
  const qpRow = page.locator('#qps tbody tr').filter({ hasText: 'feed:default' });
  assert.equal(await qpRow.count(), 1);
  assert.equal(await qpRow.locator('td').nth(1).innerText(), 'UD');
  assert.equal(await qpRow.locator('td').nth(2).innerText(), 'RTS');
  assert.equal(await qpRow.locator('td').nth(7).innerText(), '0xfeed001');
  const sent1 = num((await qpRow.locator('td').nth(8).innerText()).split('/')[0]!);
  assert.match(await qpRow.locator('td').nth(14).innerText(), /^\d+\/\d+$/, 'outstanding send / posted receive WRs');

  // Sessions: this gateway has no order entry; its feed serves recovery sessions, none open.
  assert.equal(await page.locator('#sessions').innerText(), 'recovery: 0 connected of 0');

  // Later: the same page (no reload) shows bigger numbers.
  await page.waitForFunction((m) => Number(document.querySelectorAll('#feeds tbody tr td')[6].textContent.replace(/,/g, '')) > m, messages1, {
    timeout: 10_000,
  });
  await page.waitForTimeout(1500);
  assert.ok(num(await cell('feeds', 0, 6)) > messages1);
  assert.ok(num(await cell('latency', 0, 1)) > latencyCount1);
  assert.ok(num((await qpRow.locator('td').nth(8).innerText()).split('/')[0]!) > sent1);
  assert.equal(await page.evaluate(() => (globalThis as any).marker), 42, 'the page was not reloaded');
  assert.match(await page.locator('#device').innerText(), /Active/);

  mkdirSync(join(REPO_ROOT, 'test-output'), { recursive: true });
  await page.screenshot({ path: SCREENSHOT, fullPage: true });
  assert.ok(existsSync(SCREENSHOT));
  t.diagnostic(`screenshot: ${SCREENSHOT}`);
  assert.deepEqual(pageErrors, [], 'no script errors and no CSP violations');
});
