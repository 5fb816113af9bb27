/**
 * The dashboard of `agentvisor serve` end to end: a real daemon in this process, the fixture
 * agent as a real ACP process, and the page in a real headless Chromium (Debian's, driven by
 * playwright-core) on a closed network. The steps run in order on one page, as a person would
 * use it: start the agent and watch its statechart light up, prompt it and watch the answer
 * stream in, answer a permission request with a click, read the agent's stderr. Then a second
 * page shows the same transcript from history and survives a dropped event stream; the page
 * without its token is refused; and nothing left the daemon's origin or broke the page's CSP.
 * Skipped, with the reason, where /usr/bin/chromium is missing. The last screen is saved to
 * test-results/dashboard.png.
 */
import { mkdirSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { chromium, type Browser, type Page, type WebSocketRoute } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startDaemon, type Daemon } from '../../daemon/daemon.js';
import { fixtureSpec } from '../support/real-agents.js';
import { chromiumArgs, chromiumPath, noChromium, recordPage } from '../support/chromium.js';

if (noChromium) console.warn(`dashboard tests skipped: ${noChromium}`);

const screenshotPath = fileURLToPath(new URL('../../test-results/dashboard.png', import.meta.url));

/** How long a wait for the page may take before it fails with what it waited for (under vitest's 20 s). */
const WAIT_MS = 10_000;
/** `expect.poll` with that patience (its own default is 1 s, short for an agent's start on a busy host). */
const poll = <T>(read: () => Promise<T>) => expect.poll(read, { timeout: WAIT_MS });


describe.skipIf(noChromium !== null)(`the dashboard in a real browser${noChromium ? ` (skipped: ${noChromium})` : ''}`, () => {
  let stateDir: string;
  let daemon: Daemon | undefined;
  let browser: Browser | undefined;
  let page: Page;
  /** Every request and WebSocket the page opened, and every console error or uncaught exception (a CSP violation is one). */
  const requests: string[] = [];
  const pageErrors: string[] = [];

  const agentRow = () => page.locator('[data-testid=agent-row][data-agent=fixture]');
  const transcript = () => page.locator('[data-testid=transcript]');

  /** Types a prompt into the box and sends it with the button. */
  async function prompt(text: string): Promise<void> {
    await page.getByTestId('prompt-text').fill(text);
    await page.getByTestId('prompt-send').click();
  }

  beforeAll(async () => {
    stateDir = mkdtempSync(join(tmpdir(), 'agentvisor-dashboard-'));
    daemon = await startDaemon({
      // zeta is never started: it is the other agent the prompt box is kept apart from.
      supervisor: { agents: { fixture: fixtureSpec(['--stderr', 'hello log']), zeta: fixtureSpec() }, stateDir, handleSignals: false },
      port: 0,
    });
    browser = await chromium.launch({ executablePath: chromiumPath, headless: true, args: chromiumArgs });
    page = await browser.newPage({ viewport: { width: 1400, height: 1000 } });
    recordPage(page, { requests, pageErrors }, WAIT_MS);
    await page.goto(daemon.dashboardUrl);
  });

  afterAll(async () => {
    // Each step on its own: a failure of one must not leave the browser or the agents running.
    try {
      if (page) {
        mkdirSync(join(screenshotPath, '..'), { recursive: true });
        await page.screenshot({ path: screenshotPath, fullPage: true });
      }
    } catch (error) {
      console.warn(`dashboard screenshot not saved: ${(error as Error).message}`);
    }
    try {
      await browser?.close().catch(() => {});
      await daemon?.close();
    } finally {
      rmSync(stateDir, { recursive: true, force: true });
    }
  });

  it('starts the agent: its badge goes starting → connected and its statechart lights the connected state', async () => {
    await page.locator('[data-testid=connection][data-state=open]').waitFor();
    await poll(() => agentRow().getByTestId('agent-status').textContent()).toBe('idle');
    await page.locator('[data-testid=statechart] svg').waitFor();
    expect(await litTitles(page)).toEqual(['idle']);
    // Readable as it opens: at its natural size (the panel scrolls), not shrunk to the panel's width.
    const chart = () =>
      page.locator('[data-testid=statechart] svg').evaluate((svg) => ({
        width: svg.getBoundingClientRect().width,
        natural: Number((svg as unknown as { dataset: Record<string, string> }).dataset.naturalWidth),
        panel: svg.parentElement!.clientWidth,
        fit: svg.parentElement!.classList.contains('fit'),
      }));
    const opened = await chart();
    expect(opened.fit).toBe(false);
    expect(opened.width).toBeGreaterThanOrEqual(opened.natural - 1);
    expect(opened.natural, 'the agent statechart is wider than the panel: fit would shrink its labels').toBeGreaterThan(opened.panel);
    await page.getByTestId('zoom-fit').click();
    expect((await chart()).width).toBeLessThanOrEqual(opened.panel);

    await agentRow().getByTestId('agent-start').click();
    await poll(() => agentRow().getByTestId('agent-status').textContent()).toBe('connected');
    await poll(() => litTitles(page)).toEqual(['cluster_connected', expect.stringMatching(/^connected_(settling|stable)$/)]);
    const leaf = await page.locator('[data-testid=statechart] g.lit-leaf > title').allTextContents();
    expect(leaf).toHaveLength(1);

    // The states it passed through, as the event stream reported them.
    const trail = await page.getByTestId('state-trail-entry').allTextContents();
    expect(trail.slice(0, 3)).toEqual(['idle', 'starting', 'connected.settling']);
    expect(await agentRow().getByTestId('agent-pid').textContent()).toBe(String(daemon!.supervisor.describe('fixture').pid));
  });

  it('prompts the agent: the prompt and its echo show in the transcript, which grows as the answer streams', async () => {
    await prompt('hello from the dashboard');
    await transcript().locator('.entry-user').filter({ hasText: 'hello from the dashboard' }).waitFor();
    await poll(() => transcript().locator('.entry-agent [data-testid=transcript-text]').last().textContent()).toBe('hello from the dashboard');
    await poll(() => page.getByTestId('prompt-status').textContent()).toBe('done: end_turn');
    await poll(() => page.locator('[data-testid=session-row]').count()).toBe(1);

    // Every text the newest agent message showed while a slow answer came in, chunk by chunk.
    await page.evaluate(recordAgentMessages);
    await prompt('{"op":"slow","count":4,"intervalMs":100}');
    const complete = 'slow 1\nslow 2\nslow 3\nslow 4\n';
    await poll(() => transcript().locator('.entry-agent [data-testid=transcript-text]').last().textContent()).toBe(complete);
    const seen = (await page.evaluate('window.agentMessages')) as string[];
    expect(seen.length).toBeGreaterThanOrEqual(2);
    expect(seen.at(-1)).toBe(complete);
    for (const [index, text] of seen.entries()) if (index > 0) expect(text.startsWith(seen[index - 1]!)).toBe(true);

    // The agent titles the session: the list still names it by its name, the title beside it.
    await prompt('{"op":"updates"}');
    await poll(() => transcript().locator('.entry-agent [data-testid=transcript-text]').last().textContent()).toBe('updates:done');
    const row = page.locator('[data-testid=session-row]').first();
    await poll(() => row.locator('.muted').textContent()).toContain('“Fixture session”');
    expect(await row.locator('button').textContent()).toBe('default');
  });

  it('answers a permission request with a click; the agent reports the answer in the transcript', async () => {
    await prompt('{"op":"permission","title":"Write <the> file"}');
    const request = page.getByTestId('permission');
    await request.filter({ hasText: 'Write <the> file' }).waitFor();
    expect(await request.count()).toBe(1);
    expect(await request.getByTestId('permission-option').allTextContents()).toEqual(['Allow once', 'Reject once']);

    await request.locator('[data-testid=permission-option][data-option-id=allow]').click();
    await poll(() => transcript().locator('.entry-agent [data-testid=transcript-text]').last().textContent()).toBe('permission:allow');
    await poll(() => request.count()).toBe(0);
    expect(await page.getByTestId('permissions-empty').isVisible()).toBe(true);
    // The request and its answer are entries of the transcript too, its title as text (never markup).
    await transcript().locator('.entry-permission').filter({ hasText: 'Write <the> file' }).waitFor();
    await transcript().locator('.entry-permission-outcome').filter({ hasText: 'answered: Allow once' }).waitFor();
  });

  it("shows the agent's stderr in its logs", async () => {
    await page.getByTestId('log-line').filter({ hasText: 'hello log' }).waitFor();
  });

  it('another page shows the same transcript from history, and reconnects when its event stream drops', async () => {
    const shown = await entryTexts(page);
    const second = await browser!.newPage({ viewport: { width: 1400, height: 1000 } });
    second.setDefaultTimeout(WAIT_MS);
    try {
      // Its event stream goes through Playwright, which can cut it (both sides close).
      const streams: WebSocketRoute[] = [];
      await second.routeWebSocket(/\/v1\/events\?/, (route) => {
        route.connectToServer();
        streams.push(route);
      });
      await second.goto(daemon!.dashboardUrl);
      await second.locator('[data-testid=connection][data-state=open]').waitFor();
      await second.locator('[data-testid=transcript][data-loaded=true]').waitFor();
      // History has each turn's result besides what the first page saw live.
      await poll(() => entryTexts(second)).toEqual(shown);
      expect(await second.locator('[data-testid=transcript-entry].entry-result').allTextContents()).toEqual(Array(4).fill('turn ended: end_turn')); // hello, slow, updates, permission

      expect(streams).toHaveLength(1);
      await streams[0]!.close();
      // State and text read at one moment: under load the retry can begin between two reads.
      await second.locator('[data-testid=connection][data-state=closed]', { hasText: /^disconnected — retrying in/ }).waitFor();
      await second.locator('[data-testid=connection][data-state=open]').waitFor();
      expect(streams).toHaveLength(2);
      // Reloaded after the gap, nothing twice; and the live stream works again.
      await second.locator('[data-testid=transcript][data-loaded=true]').waitFor();
      await poll(() => entryTexts(second)).toEqual(shown);
      await second.getByTestId('prompt-text').fill('after the drop');
      await second.getByTestId('prompt-send').click();
      await poll(() => second.locator('.entry-agent [data-testid=transcript-text]').last().textContent()).toBe('after the drop');
      expect(await second.locator('.entry-user').filter({ hasText: 'after the drop' }).count()).toBe(1);
      // The first page sees the other page's prompt and its turn's end live (session:turn).
      await poll(() => page.locator('.entry-user').filter({ hasText: 'after the drop' }).count()).toBe(1);
      await poll(() => page.locator('[data-testid=transcript-entry][data-kind=result]').count()).toBeGreaterThan(0);
    } finally {
      await second.close();
    }
  });

  it('keeps a prompt box per agent: what was typed for one is not carried to another', async () => {
    const text = page.getByTestId('prompt-text');
    const select = (agent: string) => page.locator(`[data-testid=agent-row][data-agent=${agent}] [data-action=select-agent]`).click();
    await text.fill('for fixture only');
    await select('zeta');
    await poll(() => text.inputValue()).toBe('');
    await text.fill('for zeta');
    await select('fixture');
    await poll(() => text.inputValue()).toBe('for fixture only');
    await select('zeta');
    await poll(() => text.inputValue()).toBe('for zeta');
    await select('fixture');
    await text.fill('');
  });

  it('restarts an agent and kills one with a click; its row says the last exit', async () => {
    const zeta = () => page.locator('[data-testid=agent-row][data-agent=zeta]');
    await zeta().getByTestId('agent-start').click();
    await poll(() => zeta().getByTestId('agent-status').textContent()).toBe('connected');
    expect(await zeta().getByTestId('agent-last-exit').textContent()).toBe('—');
    const firstPid = daemon!.supervisor.describe('zeta').pid;
    // restart asks for a reason first (optional): none given here.
    await zeta().getByTestId('agent-restart').click();
    await page.getByTestId('restart-confirm').click();
    await poll(() => zeta().getByTestId('agent-pid').textContent()).not.toBe(String(firstPid));
    await poll(() => zeta().getByTestId('agent-status').textContent()).toBe('connected');
    await poll(() => zeta().getByTestId('agent-last-exit').textContent()).toBe('code 0');
    await zeta().getByTestId('agent-kill').click();
    await poll(() => zeta().getByTestId('agent-status').textContent()).toBe('idle');
    expect(await zeta().getByTestId('agent-last-exit').textContent()).toMatch(/^(SIGKILL|code 0)$/);
    expect(await zeta().getByTestId('agent-credential').textContent()).toBe('—');
  });

  it('refuses the page without its token, or with another', async () => {
    const other = await browser!.newPage();
    try {
      expect((await other.goto(`${daemon!.url}/`))?.status()).toBe(401);
      expect((await other.goto(`${daemon!.url}/?token=${'0'.repeat(64)}`))?.status()).toBe(401);
    } finally {
      await other.close();
    }
  });

  it("made no request outside the daemon's origin, and nothing broke the page (no CSP violation, no error)", () => {
    const origins = [daemon!.url, `ws://${daemon!.host}:${daemon!.port}`];
    expect(requests.some((url) => url.includes('/v1/machines/agent.svg'))).toBe(true);
    expect(requests.some((url) => url.startsWith(`ws://${daemon!.host}:${daemon!.port}/v1/events?`))).toBe(true);
    expect(requests.filter((url) => !origins.some((origin) => url.startsWith(`${origin}/`)))).toEqual([]);
    expect(pageErrors).toEqual([]);
  });
});

/**
 * Run in the page (a string: this project's TypeScript has no DOM types): records in
 * `window.agentMessages` each text the newest agent message block shows, as it changes.
 */
const recordAgentMessages = `(() => {
  const seen = (window.agentMessages = []);
  const container = document.querySelector('[data-testid=transcript]');
  new MutationObserver(() => {
    const text = [...container.querySelectorAll('.entry-agent [data-testid=transcript-text]')].at(-1)?.textContent ?? '';
    if (text.startsWith('slow') && seen.at(-1) !== text) seen.push(text);
  }).observe(container, { childList: true, subtree: true, characterData: true });
})()`;

/** The transcript's entries as text, but the turns' results (only history has them; the live stream does not say). */
function entryTexts(page: Page): Promise<string[]> {
  return page.locator('[data-testid=transcript-entry]:not(.entry-result)').allTextContents();
}

/** The titles of the statechart's lit groups (clusters and the leaf), sorted. */
function litTitles(page: Page): Promise<string[]> {
  return page.locator('[data-testid=statechart] g.lit > title').allTextContents().then((titles) => titles.sort());
}
