/**
 * The dashboard's orphans panel in a real headless Chromium (Debian's, driven by
 * playwright-core) against a real daemon started with `orphans: 'report'` over a state
 * directory where a "crashed" supervisor left two real processes: both are listed (pid, agent,
 * command), `kill` on one kills just it, a sweep made elsewhere (the API) empties the list by
 * the event stream. Skipped, with the reason, where /usr/bin/chromium is missing.
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { chromium, type Browser, type Page } from 'playwright-core';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { startDaemon, type Daemon } from '../../daemon/daemon.js';
import { call } from '../support/daemon-http.js';
import { leaveOrphan, type Leftover } from '../support/orphan-records.js';
import { eventually, isRunning } from '../support/real-agents.js';
import { chromiumArgs, chromiumPath, noChromium } from '../support/chromium.js';

if (noChromium) console.warn(`dashboard orphans tests skipped: ${noChromium}`);

/** How long a wait for the page may take before it fails with what it waited for. */
const WAIT_MS = 15_000;
const poll = <T>(read: () => Promise<T>) => expect.poll(read, { timeout: WAIT_MS });


describe.skipIf(noChromium !== null)(`the orphans panel of the dashboard${noChromium ? ` (skipped: ${noChromium})` : ''}`, () => {
  let stateDir: string;
  let daemon: Daemon | undefined;
  let browser: Browser | undefined;
  let leftovers: Leftover[] = [];
  const pageErrors: string[] = [];

  beforeEach(() => {
    stateDir = mkdtempSync(join(tmpdir(), 'agentvisor-dashboard-orphans-'));
    leftovers = [];
    pageErrors.length = 0;
  });

  afterEach(async () => {
    // Each step on its own: a failure of one must not leave the browser or the processes running.
    await browser?.close().catch(() => {});
    await daemon?.close().catch(() => {});
    for (const leftover of leftovers) leftover.kill();
    rmSync(stateDir, { recursive: true, force: true });
  });

  async function open(): Promise<Page> {
    browser = await chromium.launch({ executablePath: chromiumPath, headless: true, args: chromiumArgs });
    const page = await browser.newPage({ viewport: { width: 1400, height: 1000 } });
    page.setDefaultTimeout(WAIT_MS);
    page.on('console', (message) => void (message.type() === 'error' && pageErrors.push(message.text())));
    page.on('pageerror', (error) => pageErrors.push(error.message));
    await page.goto(daemon!.dashboardUrl);
    return page;
  }

  it('lists what was left; kill kills just that one; a sweep made elsewhere empties the list', async () => {
    leftovers = [await leaveOrphan(stateDir, 'one'), await leaveOrphan(stateDir, 'two')];
    const [one, two] = leftovers as [Leftover, Leftover];
    daemon = await startDaemon({ supervisor: { stateDir, handleSignals: false }, port: 0, orphans: 'report' });
    const page = await open();
    const rows = page.locator('[data-testid=orphan]');
    await poll(async () => (await rows.evaluateAll((items) => items.map((item) => item.getAttribute('data-pid')))).sort()).toEqual([String(one.pid), String(two.pid)].sort());
    const first = page.locator(`[data-testid=orphan][data-pid="${one.pid}"]`);
    await expect(first.innerText()).resolves.toContain(`pid ${one.pid} · one`);
    await expect(first.innerText()).resolves.toContain('sleep');
    await expect(page.getByTestId('orphans-policy').innerText()).resolves.toContain('report');
    await expect(page.getByTestId('orphans-kill-all').isVisible()).resolves.toBe(true);

    await first.getByTestId('orphan-kill').click();
    await eventually(() => !isRunning(one.pid), 'the orphan clicked to be gone', WAIT_MS);
    await poll(async () => rows.evaluateAll((items) => items.map((item) => item.getAttribute('data-pid')))).toEqual([String(two.pid)]);
    expect(isRunning(two.pid)).toBe(true);

    // Killed by another client: the page hears orphans:swept and lists again.
    expect((await call(daemon, 'POST', '/v1/orphans/kill')).status).toBe(200);
    await eventually(() => !isRunning(two.pid), 'the rest to be gone', WAIT_MS);
    await poll(async () => rows.count()).toBe(0);
    await expect(page.getByTestId('orphans-empty').isVisible()).resolves.toBe(true);
    expect(pageErrors).toEqual([]);
  }, 60_000);
});
