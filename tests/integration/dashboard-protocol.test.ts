/**
 * The dashboard over the whole protocol, end to end: a real daemon in this process, the
 * fixture agent in its `--acp-features` mode (modes, config options, commands, plan, usage,
 * elicitations, diffs, client terminals) as real ACP processes, and the page in a real
 * headless Chromium (Debian's, driven by playwright-core) on a closed network. Each control is
 * used as a person would, and checked where it lands: the agent itself says which controls it
 * received (`controls-received`), what a prompt carried (`describe-prompt`), what an
 * elicitation was answered. Then a second page loses its event stream while the agent writes,
 * comes back with `since` and shows every update once, without reading the history again.
 * Skipped, with the reason, where /usr/bin/chromium is missing. A screen with a question
 * waiting is saved to test-results/dashboard-protocol.png (docs/images/dashboard.png is one).
 */
import { mkdirSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { chromium, type Browser, type Page, type WebSocketRoute } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startDaemon, type Daemon } from '../../daemon/daemon.js';
import { call } from '../support/daemon-http.js';
import { fixtureSpec } from '../support/real-agents.js';
import { chromiumArgs, chromiumPath, noChromium, recordPage } from '../support/chromium.js';

if (noChromium) console.warn(`dashboard protocol tests skipped: ${noChromium}`);

const screenshotPath = fileURLToPath(new URL('../../test-results/dashboard-protocol.png', import.meta.url));

/** How long a wait for the page may take before it fails with what it waited for (under vitest's 20 s). */
const WAIT_MS = 10_000;
const poll = <T>(read: () => Promise<T>) => expect.poll(read, { timeout: WAIT_MS });


/** The smallest PNG (a 1×1 pixel): what the page sends is counted by the agent. */
const PNG = Buffer.from('iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mP8z8BQDwAEhQGAhKmMIQAAAABJRU5ErkJggg==', 'base64');

describe.skipIf(noChromium !== null)(`the dashboard over the whole protocol${noChromium ? ` (skipped: ${noChromium})` : ''}`, () => {
  let stateDir: string;
  let daemon: Daemon | undefined;
  let browser: Browser | undefined;
  let page: Page;
  const requests: string[] = [];
  const pageErrors: string[] = [];

  const row = (agent: string) => page.locator(`[data-testid=agent-row][data-agent=${agent}]`);
  const transcript = () => page.locator('[data-testid=transcript]');
  const lastAgentText = () => transcript().locator('.entry-agent [data-testid=transcript-text]').last().textContent();
  const promptStatus = () => page.getByTestId('prompt-status').textContent();

  /** Types a prompt into the box and sends it with the button. */
  async function prompt(text: string): Promise<void> {
    await page.getByTestId('prompt-text').fill(text);
    await page.getByTestId('prompt-send').click();
  }

  /** Sends a prompt and waits for its turn to end; the agent's last message then. */
  async function promptDone(text: string, stopReason = 'end_turn'): Promise<string | null> {
    await prompt(text);
    await poll(promptStatus).toBe(`done: ${stopReason}`);
    return lastAgentText();
  }

  /** The control requests the agent received, as it says them. */
  async function controlsReceived(): Promise<string[]> {
    const text = await promptDone('{"op":"controls-received"}');
    return JSON.parse(text!.replace(/^controls:/, '')) as string[];
  }

  async function selectAgent(name: string): Promise<void> {
    await row(name).locator('[data-action=select-agent]').click();
    await page.locator(`[data-testid=sessions-agent]`, { hasText: name }).waitFor();
  }

  /** Starts an agent with its button and waits until it is connected. */
  async function start(name: string): Promise<void> {
    await row(name).getByTestId('agent-start').click();
    await poll(() => row(name).getByTestId('agent-status').textContent()).toBe('connected');
  }

  /** The selected session's id, as the transcript says it. */
  const selectedSession = () => transcript().getAttribute('data-session-id');

  beforeAll(async () => {
    stateDir = mkdtempSync(join(tmpdir(), 'agentvisor-dashboard-protocol-'));
    daemon = await startDaemon({
      supervisor: {
        agents: {
          features: fixtureSpec(['--acp-features', '--stderr', 'features: ready for the whole protocol']),
          gemini: fixtureSpec(['--acp-features', '--unstable-models']),
          locked: fixtureSpec(['--require-auth']),
        },
        stateDir,
        handleSignals: false,
      },
      port: 0,
    });
    browser = await chromium.launch({ executablePath: chromiumPath, headless: true, args: chromiumArgs });
    page = await browser.newPage({ viewport: { width: 1500, height: 1100 } });
    recordPage(page, { requests, pageErrors }, WAIT_MS);
    await page.goto(daemon.dashboardUrl);
    await page.locator('[data-testid=connection][data-state=open]').waitFor();
  });

  afterAll(async () => {
    // Each step on its own: a failure of one must not leave the browser or the agents running.
    try {
      await browser?.close().catch(() => {});
      await daemon?.close();
    } finally {
      rmSync(stateDir, { recursive: true, force: true });
    }
  });

  it("shows a session's mode, model and config options, and sets them with the pickers", async () => {
    await selectAgent('features');
    await start('features');
    // Its default session works in a directory of its own (the diff below names a file there).
    const workDir = join(stateDir, 'work');
    mkdirSync(workDir);
    expect((await call(daemon!, 'POST', '/v1/sessions', { body: { agent: 'features', name: 'default', cwd: workDir } })).status).toBe(201);
    expect(await promptDone('hello')).toBe('hello');
    const bar = page.getByTestId('session-bar');
    await bar.waitFor();
    // The session's name until the agent gives it a title.
    expect(await page.getByTestId('session-title').textContent()).toBe('default');
    const mode = page.locator('[data-testid=session-mode] select');
    const model = page.locator('[data-testid=session-model] select');
    const fast = page.locator('[data-testid=config-option][data-config-id=fast] input');
    expect(await mode.inputValue()).toBe('default');
    expect(await mode.locator('option').allTextContents()).toEqual(['Default', 'Plan', 'Yolo', 'Locked']);
    expect(await model.inputValue()).toBe('fixture-small');
    expect(await fast.isChecked()).toBe(false);
    // The mode option is the mode picker's choice: it is not shown twice.
    expect(await page.locator('[data-testid=config-option]').count()).toBe(1);

    await mode.selectOption('plan');
    await model.selectOption('fixture-large');
    await poll(() => model.isEnabled()).toBe(true);
    await fast.check();
    await poll(async () => (await call(daemon!, 'GET', `/v1/sessions/${await selectedSession()}`)).json.configOptions.find((option: { id: string }) => option.id === 'fast').currentValue).toBe(true);
    expect(await controlsReceived()).toEqual(['set_mode plan', 'set_config_option model=fixture-large', 'set_config_option fast=true']);
    expect(await mode.inputValue()).toBe('plan');
  });

  it('offers the session\'s slash commands as you type "/", and picking one fills the prompt', async () => {
    const text = page.getByTestId('prompt-text');
    const items = page.getByTestId('palette-item');
    await text.fill('');
    await text.pressSequentially('/');
    await poll(() => items.allTextContents()).toEqual(['/review Review the change', '/explain Explain the code']);
    await text.pressSequentially('ex');
    await poll(() => items.evaluateAll((listed) => listed.map((item) => item.getAttribute('data-command')))).toEqual(['explain']);
    await text.press('Enter');
    expect(await text.inputValue()).toBe('/explain ');
    expect(await page.getByTestId('palette').isVisible()).toBe(false);
    // With an input, its hint is shown; a click picks too.
    await text.fill('');
    await text.pressSequentially('/rev');
    await items.first().click();
    expect(await text.inputValue()).toBe('/review ');
    expect(await page.getByTestId('prompt-hint').textContent()).toBe('/review: what to review');
    await text.fill('');
  });

  it('shows the plan, the context usage and the title as the agent sends them, and the pickers follow', async () => {
    expect(await promptDone('{"op":"state-updates"}')).toBe('state:done');
    const entries = page.getByTestId('plan-entry');
    await poll(() => entries.count()).toBe(2);
    expect(await entries.evaluateAll((listed) => listed.map((entry) => [entry.getAttribute('data-status'), entry.getAttribute('data-priority'), entry.textContent]))).toEqual([
      ['completed', 'high', '● Outline the change high'],
      ['in_progress', 'medium', '◐ Apply the change medium'],
    ]);
    expect(await page.getByTestId('plan-done').textContent()).toBe('1 of 2 done');
    expect(await page.getByTestId('usage-text').textContent()).toBe('1.2k / 200k tokens');
    expect(await page.getByTestId('usage-percent').textContent()).toBe('0.6%');
    expect(await page.getByTestId('usage-cost').textContent()).toBe('$0.25');
    await poll(() => page.getByTestId('session-title').textContent()).toBe('Fixture title');
    await poll(() => page.locator('[data-testid=session-row]').first().locator('.muted').textContent()).toContain('“Fixture title”');
    // config_option_update and current_mode_update, live: the pickers show the new values.
    expect(await page.locator('[data-testid=session-model] select').inputValue()).toBe('fixture-large');
    expect(await page.locator('[data-testid=session-mode] select').inputValue()).toBe('plan');
    // The commands changed too: the palette offers the new list.
    await page.getByTestId('prompt-text').pressSequentially('/');
    await poll(() => page.getByTestId('palette-item').allTextContents()).toEqual(['/later Added later']);
    await page.getByTestId('prompt-text').fill('');
  });

  it("shows a tool call's diff as a line diff, and its client terminal's output", async () => {
    const sessionId = await selectedSession();
    // keepDiff: the update that shows the terminal sends the diff again (an update's content replaces the call's).
    expect(await promptDone('{"op":"tool-detail","keepDiff":true}')).toMatch(/^tool:\S+$/);
    const diff = transcript().getByTestId('diff');
    await diff.waitFor();
    expect(await diff.getAttribute('data-path')).toBe(join(stateDir, 'work', 'fixture.txt'));
    expect(await diff.locator('.diff-stat').textContent()).toBe('+1 −1');
    expect(await diff.locator('.diff-line').allTextContents()).toEqual(['- old line\n', '+ new line\n']);
    const terminalId = (await lastAgentText())!.replace(/^tool:/, '');
    const terminal = transcript().locator(`[data-testid=terminal][data-terminal-id="${terminalId}"]`);
    await poll(() => terminal.getByTestId('terminal-output').textContent()).toBe('terminal-detail\n');
    expect(await terminal.getByTestId('terminal-status').textContent()).toBe('exit 0');
    expect(requests.some((url) => url.includes(`/v1/sessions/${sessionId}/terminals/${terminalId}`))).toBe(true);
  });

  it('asks an elicitation in a dialog built from its schema, checks it, and answers it', async () => {
    await prompt('{"op":"elicit"}');
    const dialog = page.getByTestId('elicitation');
    await dialog.waitFor();
    await poll(promptStatus).toBe('waiting for an answer to its question');
    expect(await dialog.locator('.elicitation-message').textContent()).toBe('Fixture: fill in the form');
    expect(await dialog.getByTestId('elicitation-field').evaluateAll((fields) => fields.map((field) => field.getAttribute('data-field')))).toEqual(['name', 'count', 'color', 'ok']);
    mkdirSync(join(screenshotPath, '..'), { recursive: true });
    await page.screenshot({ path: screenshotPath, fullPage: true });

    // Checked here first: a required field left empty is said beside it, and nothing is sent.
    await dialog.getByTestId('elicitation-accept').click();
    expect(await dialog.locator('[data-field=name] .field-error').textContent()).toBe('required');
    await dialog.locator('[data-field=count] input').fill('9');
    await dialog.locator('[data-field=name] input').fill('Ada');
    await dialog.getByTestId('elicitation-accept').click();
    expect(await dialog.locator('[data-field=count] .field-error').textContent()).toBe('must be at most 5');
    expect((await call(daemon!, 'GET', '/v1/elicitations')).json.elicitations).toHaveLength(1);

    await dialog.locator('[data-field=count] input').fill('2');
    await dialog.locator('[data-field=color] select').selectOption('red');
    await dialog.locator('[data-field=ok] input').check();
    await dialog.getByTestId('elicitation-accept').click();
    await poll(() => dialog.count()).toBe(0);
    await poll(promptStatus).toBe('done: end_turn');
    expect(await lastAgentText()).toBe('elicitation:{"action":"accept","content":{"name":"Ada","count":2,"color":"red","ok":true}}');
    await transcript().locator('.entry-elicitation').filter({ hasText: 'Fixture: fill in the form' }).waitFor();
    await transcript().locator('.entry-elicitation-outcome').filter({ hasText: 'answered' }).waitFor();
  });

  it('shows a URL elicitation as its link; answered by another client, its dialog closes', async () => {
    await prompt('{"op":"elicit","mode":"url"}');
    const dialog = page.getByTestId('elicitation');
    await dialog.waitFor();
    const link = dialog.getByTestId('elicitation-link');
    expect(await link.textContent()).toBe('https://example.invalid/login');
    expect(await link.getAttribute('href')).toBe('https://example.invalid/login');
    expect(await link.getAttribute('rel')).toBe('noopener noreferrer');
    const [waiting] = (await call(daemon!, 'GET', '/v1/elicitations')).json.elicitations;
    expect((await call(daemon!, 'POST', `/v1/elicitations/${waiting.id}`, { body: { action: 'decline' } })).status).toBe(200);
    await poll(() => dialog.count()).toBe(0);
    await poll(promptStatus).toBe('done: end_turn');
    expect(await lastAgentText()).toBe('elicitation:{"action":"decline"}');
  });

  it('sends files attached to a prompt: an image as an image block, a text file as an embedded resource', async () => {
    await page.getByTestId('prompt-files').setInputFiles([
      { name: 'dot.png', mimeType: 'image/png', buffer: PNG },
      { name: 'notes.txt', mimeType: 'text/plain', buffer: Buffer.from('hello notes\n') },
    ]);
    await poll(() => page.getByTestId('attachment').allTextContents()).toEqual([`dot.png · image · ${PNG.length} B ×`, 'notes.txt · text · 12 B ×']);
    const text = await promptDone('{"op":"describe-prompt"}');
    expect(JSON.parse(text!.replace(/^prompt:/, '').replace(/meta:null$/, ''))).toEqual([
      { type: 'image', mimeType: 'image/png', bytes: PNG.length },
      { type: 'resource', mimeType: 'text/plain', uri: 'notes.txt', bytes: 12 },
    ]);
    expect(await page.getByTestId('attachment').count()).toBe(0);
    await transcript().locator('.entry-user').filter({ hasText: '{"op":"describe-prompt"}[image][resource]' }).waitFor();
  });

  it('cancels the running turn, says a mode the agent refuses, then closes the session', async () => {
    await prompt('{"op":"hang"}');
    await poll(promptStatus).toBe('running…');
    await page.getByTestId('session-cancel').click();
    await poll(promptStatus).toBe('done: cancelled');
    await page.getByTestId('notice').filter({ hasText: 'Cancelled the running turn.' }).waitFor();

    // A mode the agent refuses: said, and the picker shows the mode it still has.
    const mode = page.locator('[data-testid=session-mode] select');
    await mode.selectOption('locked');
    await page.getByTestId('notice').filter({ hasText: 'Could not set the mode' }).waitFor();
    await poll(() => mode.inputValue()).toBe('plan');

    const sessionId = (await selectedSession())!;
    await page.getByTestId('session-close').click();
    await poll(async () => (await call(daemon!, 'GET', `/v1/sessions/${sessionId}`)).json.live).toBe(false);
    await poll(() => page.locator(`[data-testid=session-row][data-session-id="${sessionId}"] .muted`).textContent()).toContain('not open');
    await poll(() => page.getByTestId('session-close').isDisabled()).toBe(true);
    expect(await page.getByTestId('session-cancel').isDisabled()).toBe(true);
    // A session the daemon does not hold has no live state: no pickers, no usage (the plan, the title are the store's).
    expect(await page.getByTestId('session-controls').locator('select, input').count()).toBe(0);
    expect(await page.getByTestId('usage').isVisible()).toBe(false);
  });

  it('restarts an agent with the reason given, kept in the event log', async () => {
    const before = daemon!.supervisor.describe('features').pid;
    await row('features').getByTestId('agent-restart').click();
    await page.getByTestId('restart-dialog').waitFor();
    await page.getByTestId('restart-reason').fill('picked up a new key');
    await page.getByTestId('restart-confirm').click();
    await poll(() => row('features').getByTestId('agent-pid').textContent()).not.toBe(String(before));
    await poll(() => row('features').getByTestId('agent-status').textContent()).toBe('connected');
    await poll(async () => JSON.stringify((await call(daemon!, 'GET', '/v1/events/log?agent=features')).json)).toContain('picked up a new key');
  });

  it('picks a model of an agent that has the unstable models field', async () => {
    await selectAgent('gemini');
    await start('gemini');
    expect(await promptDone('hi')).toBe('hi');
    const model = page.locator('[data-testid=session-model] select');
    await poll(() => model.inputValue()).toBe('fixture-small');
    expect(await model.locator('option').allTextContents()).toEqual(['Small', 'Large']);
    await model.selectOption('fixture-large');
    await poll(async () => (await call(daemon!, 'GET', `/v1/sessions/${await selectedSession()}`)).json.models.currentModelId).toBe('fixture-large');
    expect(await controlsReceived()).toEqual(['set_model fixture-large']);
  });

  it('logs in an agent parked for a login, with one of its methods', async () => {
    await selectAgent('locked');
    await start('locked');
    await prompt('hi');
    await poll(() => row('locked').getByTestId('agent-status').textContent()).toBe('needsAuth');
    const login = row('locked').getByTestId('agent-login-method');
    expect(await login.allTextContents()).toEqual(['log in: Fixture token']);
    await login.click();
    await poll(() => row('locked').getByTestId('agent-status').textContent()).toBe('connected');
    expect(await login.count()).toBe(0);
    expect(await promptDone('after the login')).toBe('after the login');
  });

  it('reconnects with since after a dropped event stream and loses nothing the agent sent meanwhile', async () => {
    const second = await browser!.newPage({ viewport: { width: 1400, height: 1000 } });
    second.setDefaultTimeout(WAIT_MS);
    const secondRequests: string[] = [];
    second.on('request', (request) => secondRequests.push(request.url()));
    try {
      const streams: WebSocketRoute[] = [];
      let letThrough: () => void = () => {};
      const heldBack = new Promise<void>((resolve) => (letThrough = resolve));
      await second.routeWebSocket(/\/v1\/events\?/, async (route) => {
        streams.push(route);
        // The second connection waits until the agent has written: it must catch up on all of it.
        if (streams.length === 2) await heldBack;
        route.connectToServer();
      });
      await second.goto(daemon!.dashboardUrl);
      await second.locator('[data-testid=connection][data-state=open]').waitFor();
      await second.locator('[data-testid=agent-row][data-agent=locked] [data-action=select-agent]').click();
      await second.locator('[data-testid=transcript][data-loaded=true]').waitFor();
      const sessionId = (await second.locator('[data-testid=transcript]').getAttribute('data-session-id'))!;
      const agentTexts = () => second.locator('.entry-agent [data-testid=transcript-text]').allTextContents();
      await poll(agentTexts).toEqual(['after the login']);

      await streams[0]!.close();
      await expect.poll(() => streams.length, { timeout: WAIT_MS }).toBe(2);
      const historyReads = () => secondRequests.filter((url) => url.includes(`/v1/sessions/${sessionId}/history`)).length;
      const readsBefore = historyReads();
      // While the page is away: a prompt from another client, streamed in five chunks.
      const answer = await call(daemon!, 'POST', `/v1/sessions/${sessionId}/prompt`, { body: { text: '{"op":"stream","count":5,"text":"z"}' } });
      expect(answer.json).toMatchObject({ stopReason: 'end_turn', text: 'zzzzz' });
      expect(streams[1]!.url()).toMatch(/[?&]since=\d+&epoch=[\w-]+/);
      letThrough();

      await second.locator('[data-testid=connection][data-state=open]').waitFor();
      await second.getByTestId('notice').filter({ hasText: /^Reconnected: \d+ missed messages replayed\.$/ }).waitFor();
      await poll(agentTexts).toEqual(['after the login', 'zzzzz']);
      // Replayed, not read again: no history request since the drop, the prompt and its end once each.
      expect(historyReads()).toBe(readsBefore);
      expect(await second.locator('.entry-user').filter({ hasText: 'op":"stream' }).count()).toBe(1);
      expect(await second.locator('[data-testid=transcript-entry][data-kind=result]').allTextContents()).toEqual(['turn ended: end_turn', 'turn ended: end_turn']);
    } finally {
      await second.close();
    }
  });

  it("made no request outside the daemon's origin, and nothing broke the page (no CSP violation, no error)", () => {
    const origins = [daemon!.url, `ws://${daemon!.host}:${daemon!.port}`];
    expect(requests.filter((url) => !origins.some((origin) => url.startsWith(`${origin}/`)))).toEqual([]);
    expect(pageErrors.filter((text) => !/status of 4\d\d/.test(text))).toEqual([]);
  });
});
