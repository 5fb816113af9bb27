/**
 * Debian's Chromium for the dashboard's end-to-end tests: where it is, why a test is skipped
 * without it, and the arguments that give each run a fresh profile on a closed network.
 */
import { existsSync } from 'node:fs';
import type { Page } from 'playwright-core';

export const chromiumPath = '/usr/bin/chromium';

/** Why the browser tests cannot run here (named in the skipped suite's title), null when they can. */
export const noChromium = existsSync(chromiumPath) ? null : 'chromium is not installed (apt-get install chromium)';

/** A fresh profile on a closed network: every host name but 127.0.0.1 fails to resolve. */
export const chromiumArgs = [
  '--no-sandbox',
  '--disable-gpu',
  '--disable-quic',
  '--no-first-run',
  '--disable-background-networking',
  '--disable-component-update',
  '--disable-sync',
  '--disable-default-apps',
  '--disable-extensions',
  '--host-resolver-rules=MAP * ~NOTFOUND , EXCLUDE 127.0.0.1',
];

/** What a page asked for (requests and WebSocket upgrades) and the errors it reported (console errors, uncaught exceptions). */
export interface PageRecord {
  requests: string[];
  pageErrors: string[];
}

/**
 * Listens to a page for what the tests check after it: every URL it requested or opened a
 * WebSocket to, and every error it reported; `timeoutMs` is its default wait.
 */
export function recordPage(page: Page, record: PageRecord, timeoutMs: number): void {
  page.setDefaultTimeout(timeoutMs);
  page.on('request', (request) => record.requests.push(request.url()));
  page.on('websocket', (socket) => record.requests.push(socket.url()));
  page.on('console', (message) => void (message.type() === 'error' && record.pageErrors.push(message.text())));
  page.on('pageerror', (error) => record.pageErrors.push(error.message));
}
