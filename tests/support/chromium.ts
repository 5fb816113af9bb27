/**
 * Debian's Chromium for the dashboard's end-to-end tests: where it is, why a test is skipped
 * without it, and the arguments that give each run a fresh profile on a closed network.
 */
import { existsSync } from 'node:fs';

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
