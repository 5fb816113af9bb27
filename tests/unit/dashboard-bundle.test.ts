/**
 * How the daemon makes the dashboard's one script (daemon/package-assets.ts): modules linked
 * in the order ES modules run, each in a scope of its own, imports as the exports they name;
 * what it cannot link safely refused with the module named. Then the real dashboard: every
 * module of dashboard/ is part of the page, none over 600 lines, the script compiles, and the
 * page carries it under the nonce its CSP allows.
 */
import { readdirSync, readFileSync } from 'node:fs';
import { Script, runInNewContext } from 'node:vm';
import { describe, expect, it } from 'vitest';
import { DASHBOARD_ENTRY, DashboardLinkError, dashboardPage, linkDashboard } from '../../daemon/package-assets.js';

const dashboardDir = new URL('../../dashboard/', import.meta.url);
/** Modules no bigger than this: the dashboard is split by concern (docs/dashboard.md). */
const MAX_MODULE_LINES = 600;

/** Links modules given as text by name. */
const link = (modules: Record<string, string>, entry = 'app.js') =>
  linkDashboard((name) => {
    const text = modules[name];
    if (text === undefined) throw new DashboardLinkError(`dashboard/${name} is missing`);
    return text;
  }, entry);

/** Runs a linked script (a module: strict) and returns what its modules left in `log`. */
function run(script: string): unknown[] {
  const log: unknown[] = [];
  runInNewContext(`'use strict';\n${script}`, { log });
  return log;
}

describe('linkDashboard', () => {
  it('runs each module once, after the modules it imports, as ES modules do', () => {
    const script = link({
      'app.js': "import { left } from './left.js';\nimport { right } from './right.js';\nlog.push('app');\nlog.push(left + right);\n",
      'left.js': "import { base } from './base.js';\nlog.push('left');\nexport const left = base + 1;\n",
      'right.js': "import { base } from './base.js';\nlog.push('right');\nexport const right = base + 2;\n",
      'base.js': "log.push('base');\nexport const base = 10;\n",
    });
    expect(run(script)).toEqual(['base', 'left', 'right', 'app', 23]);
  });

  it("keeps each module's own names to itself, and takes imports under their local names", () => {
    const script = link({
      'app.js': "import { greet as hello, Greeter } from './greet.js';\nimport { helper as other } from './other.js';\nconst helper = 'app';\nlog.push(hello('x'), new Greeter().name, other(), helper);\nexport {};\n",
      'greet.js': "const helper = (name) => `hi ${name}`;\nexport function greet(name) {\n  return helper(name);\n}\nexport class Greeter {\n  name = 'greeter';\n}\n",
      'other.js': "function inner() {\n  return 'other';\n}\nexport async function unused() {}\nexport function* numbers() {}\nexport const helper = () => inner();\n",
    });
    expect(run(script)).toEqual(['hi x', 'greeter', 'other', 'app']);
  });

  it('reads a multi-line import and either quote, and leaves JSDoc types and dynamic text alone', () => {
    const script = link({
      'app.js': "// @ts-check\n/** @import { Thing } from './types.js' */\nimport {\n  one,\n  two,\n} from './nums.js';\nconst text = 'import { x } from \"./nowhere.js\"';\nlog.push(one + two, text.length > 0);\n",
      'nums.js': "import { zero } from \"./zero.js\"\nexport const one = 1 + zero;\nexport const two = 2;\n",
      'zero.js': 'export const zero = 0;\n',
    });
    expect(run(script)).toEqual([3, true]);
  });

  it.each([
    ['a cycle', { 'app.js': "import { b } from './b.js';\nexport const a = 1;\n", 'b.js': "import { a } from './app.js';\nexport const b = a;\n" }, /cycle: app\.js → b\.js → app\.js/],
    ['a module outside dashboard/', { 'app.js': "import { x } from '../daemon/api-types.js';\n" }, /app\.js cannot be linked: it imports '\.\.\/daemon\/api-types\.js'/],
    ['a package', { 'app.js': "import { x } from 'xstate';\n" }, /it imports 'xstate'/],
    ['a name the module does not export', { 'app.js': "import { missing } from './b.js';\n", 'b.js': 'export const present = 1;\n' }, /app\.js imports missing from \.\/b\.js, which does not export it/],
    ['a module that is not there', { 'app.js': "import { x } from './gone.js';\n" }, /dashboard\/gone\.js is missing/],
    ['a default import', { 'app.js': "import thing from './b.js';\n", 'b.js': '' }, /"import thing from '\.\/b\.js';": only/],
    ['a namespace import', { 'app.js': "import * as b from './b.js';\n", 'b.js': '' }, /only `import \{ a, b as c \}/],
    ['a side-effect import', { 'app.js': "import './b.js';\n", 'b.js': '' }, /only `import \{ a, b as c \}/],
    ['an odd binding', { 'app.js': "import { a as } from './b.js';\n", 'b.js': 'export const a = 1;\n' }, /it imports "a as" from '\.\/b\.js'/],
    ['a default export', { 'app.js': 'export default 1;\n' }, /"export default 1;": only `export function\|async function\|class\|const NAME`/],
    ['an exported let', { 'app.js': 'export let count = 0;\n' }, /"export let count = 0;"/],
    ['an export list', { 'app.js': 'const a = 1;\nexport { a };\n' }, /"export \{ a \};"/],
    ['a closing script tag', { 'app.js': "const html = '</script>';\n" }, /contains "<\/script", which would end or confuse the page's script element/],
    ['an HTML comment opener', { 'app.js': "const html = '<!-- x';\n" }, /contains "<!--"/],
    ['import.meta', { 'app.js': 'const where = import.meta.url;\n' }, /import\.meta has no meaning/],
    ["the linker's names", { 'app.js': 'const __dashboard$app = 1;\n' }, /names beginning with __dashboard\$ are the linker's/],
  ])('refuses %s, naming the module', (_what, modules: Record<string, string>, message) => {
    expect(() => link(modules)).toThrow(DashboardLinkError);
    expect(() => link(modules)).toThrow(message);
  });

  it('refuses an entry that is not a module name of dashboard/', () => {
    expect(() => link({}, '../app.js')).toThrow(/The entry "\.\.\/app\.js" is not a module name/);
  });
});

describe('the dashboard', () => {
  const read = (name: string) => readFileSync(new URL(name, dashboardDir), 'utf8');
  const modules = readdirSync(dashboardDir).filter((name) => name.endsWith('.js'));

  it('links: every module of dashboard/ is part of the page, and the script compiles', () => {
    const reached = new Set<string>();
    const script = linkDashboard((name) => {
      reached.add(name);
      return read(name);
    });
    expect(reached.has(DASHBOARD_ENTRY)).toBe(true);
    expect([...reached].sort()).toEqual([...modules].sort());
    expect(() => new Script(`'use strict';\n${script}`, { filename: 'dashboard.js' })).not.toThrow();
  });

  it(`has no module over ${MAX_MODULE_LINES} lines`, () => {
    const lines = Object.fromEntries(modules.map((name) => [name, read(name).split('\n').length]));
    expect(Object.entries(lines).filter(([, count]) => count > MAX_MODULE_LINES)).toEqual([]);
    expect(modules.length).toBeGreaterThan(10);
  });

  it('is one page: its style and linked script inlined under the nonce its CSP allows, nothing else to load', () => {
    const { html, csp } = dashboardPage('127.0.0.1:7433');
    const nonce = /script-src 'nonce-([^']+)'/.exec(csp)?.[1];
    expect(nonce).toMatch(/^[A-Za-z0-9+/]+=*$/);
    const directives = Object.fromEntries(csp.split('; ').map((directive) => [directive.split(' ')[0], directive.split(' ').slice(1)]));
    // Scripts: the nonce alone (no 'unsafe-inline', no eval); nothing but the daemon to talk to.
    expect(directives).toMatchObject({
      'default-src': ["'none'"],
      'script-src': [`'nonce-${nonce}'`],
      'style-src': [`'nonce-${nonce}'`],
      'connect-src': ["'self'", 'ws://127.0.0.1:7433'],
    });
    expect(html.match(/<script\b[^>]*>/g)).toEqual([`<script type="module" nonce="${nonce}">`]);
    expect(html.match(/<style\b[^>]*>/g)).toEqual([`<style nonce="${nonce}">`]);
    expect(html).not.toMatch(/agentvisor:(script|style)|\bsrc=|<link rel="stylesheet"/);
    expect(html).toContain("const __dashboard$app = (() => {");
    // A fresh nonce per page.
    expect(dashboardPage('127.0.0.1:7433').csp).not.toBe(csp);
  });
});
