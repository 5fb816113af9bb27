// Lint: @eslint/js and typescript-eslint recommended everywhere, plus the import rules of
// the layers (docs/architecture.md), all built from the one `layers` table below.
import js from '@eslint/js';
import { defineConfig } from 'eslint/config';
import { createNodeResolver, importX } from 'eslint-plugin-import-x';
import globals from 'globals';
import { fileURLToPath } from 'node:url';
import tseslint from 'typescript-eslint';

const docs = 'see docs/architecture.md';
const sdk = '@agentclientprotocol/sdk';

/**
 * What each layer (a root folder, or index.ts) may import besides itself:
 * - `may`: the project's layers; every other layer and `outside` is forbidden.
 * - `only`: of a layer in `may`, just these files.
 * - `packages`, `types`, `builtins`: external packages it may import as values, as types
 *   only, and whether `node:` builtins are allowed. Without `packages`, other externals are
 *   free (but for the SDK, below).
 */
const layers = {
  core: { may: [], packages: ['zod'], types: ['xstate'] },
  util: { may: ['core'], types: ['xstate'] },
  machines: { may: ['core'], packages: ['xstate'] },
  // @kubernetes/client-node and ws: the kubernetes runtime's pods (services/runtimes/kube-*.ts), loaded lazily.
  services: { may: ['core', 'util'], packages: ['execa', 'better-sqlite3', '@lydell/node-pty', '@xterm/headless', '@kubernetes/client-node', 'ws'], builtins: true },
  actors: { may: ['core', 'util', 'machines', 'services'], packages: ['xstate'], builtins: true },
  runtime: { may: ['core', 'util', 'machines', 'actors', 'services'] },
  inspection: { may: ['core', 'util'], packages: [], types: ['xstate'] },
  api: {
    may: ['core', 'util', 'machines', 'runtime', 'inspection', 'services'],
    only: { services: ['acp-client.service.ts', 'presets.ts'] },
  },
  'index.ts': { may: ['core', 'util', 'machines', 'services', 'runtime', 'inspection', 'api'] },
  // Above the library: the daemon uses only its public entry; the CLI the daemon and the entry.
  daemon: { may: ['index.ts', 'core'], only: { core: ['errors.ts'] }, packages: ['ws', 'zod'], builtins: true },
  cli: { may: ['index.ts', 'daemon'], packages: ['commander', 'ws', 'zod'], builtins: true },
};
/** Not layers: free to import the layers, never imported by them. */
const outside = ['tests', 'bench', 'scripts', 'examples'];
/** The only files that may import the ACP SDK: as values, or re-exporting its types. */
const sdkOwners = {
  'services/acp-client.service.ts': { packages: [sdk] },
  'core/acp-types.ts': { types: [sdk] },
};

const shown = (name) => (name.endsWith('.ts') ? name : `${name}/`);
const filesOf = (name) => (name.endsWith('.ts') ? [name] : [`${name}/**/*.ts`]);
const escape = (text) => text.replace(/[.*+?^${}()|[\]\\]/g, '\\$&');
const pkg = (name) => `${escape(name)}(/|$)`;

/** import-x/no-restricted-paths zones: one per layer and folder it may not import. */
const zones = Object.entries(layers).flatMap(([layer, { may, only = {} }]) => {
  const allowed = `${shown(layer)} may import only ${[...may, layer].map(shown).join(', ')}`;
  const forbidden = [...Object.keys(layers), ...outside].filter((other) => other !== layer && !may.includes(other));
  return [
    ...forbidden.map((other) => ({
      target: `./${layer}`,
      from: `./${other}`,
      message: `${shown(layer)} may not import ${shown(other)} (${allowed}); ${docs}.`,
    })),
    ...Object.entries(only).map(([other, files]) => ({
      target: `./${layer}`,
      from: `./${other}`,
      except: files.map((file) => `./${file}`),
      message: `${shown(layer)} may import from ${shown(other)} only ${files.map((file) => `${other}/${file}`).join(', ')}; ${docs}.`,
    })),
  ];
});

/** no-restricted-imports patterns for the external packages of one layer (or one file). */
function packagePatterns(name, { packages, types = [], builtins = false }) {
  const patterns = types.map((type) => ({
    regex: `^${pkg(type)}`,
    allowTypeImports: true,
    message: `${name} may import only types from ${type} (\`import type\`); ${docs}.`,
  }));
  if (![...(packages ?? []), ...types].includes(sdk)) {
    patterns.push({
      regex: `^${pkg(sdk)}`,
      message: `${name} may not import ${sdk}: only services/acp-client.service.ts imports it, core/acp-types.ts re-exports its types; ${docs}.`,
    });
  }
  if (packages) {
    const allowed = [...new Set([...packages, ...types, sdk])].map(pkg).concat(builtins ? ['node:'] : []);
    const values = [...packages, ...(builtins ? ['node: builtins'] : [])];
    const kinds = [...(values.length ? [values.join(', ')] : []), ...(types.length ? [`types from ${types.join(', ')}`] : [])];
    patterns.push({
      regex: `^(?!\\.|${allowed.join('|')})`,
      message: `${name} may not import this package: from outside the project it may import ${kinds.length ? `only ${kinds.join(' and ')}` : 'nothing'}; ${docs}.`,
    });
  }
  return patterns;
}

const packageRule = (name, spec) => ({
  files: filesOf(name),
  rules: { '@typescript-eslint/no-restricted-imports': ['error', { patterns: packagePatterns(shown(name), spec) }] },
});

const merge = (spec, extra) => ({
  ...spec,
  packages: spec.packages && [...spec.packages, ...(extra.packages ?? [])],
  types: [...(spec.types ?? []), ...(extra.types ?? [])],
});

export default defineConfig(
  { ignores: ['dist/', 'build/', 'visualizations/', 'coverage/', 'bench/results/', '.real-agents/'] },
  js.configs.recommended,
  tseslint.configs.recommended,
  {
    languageOptions: { globals: globals.node },
    plugins: { 'import-x': importX },
    settings: {
      'import-x/extensions': ['.ts', '.js', '.mjs'],
      'import-x/parsers': { '@typescript-eslint/parser': ['.ts'] },
      'import-x/resolver-next': [
        createNodeResolver({ extensions: ['.ts', '.js', '.mjs', '.json'], extensionAlias: { '.js': ['.ts', '.js'] } }),
      ],
      // The compiled output imports itself; never walk it.
      'import-x/ignore': ['[\\\\/](dist|build)[\\\\/]'],
    },
    rules: {
      // `_name` marks a parameter that is there for its position or to document a shape.
      '@typescript-eslint/no-unused-vars': ['error', { argsIgnorePattern: '^_' }],
      'import-x/no-cycle': ['error', { ignoreExternal: true }],
      'import-x/no-restricted-paths': ['error', { basePath: fileURLToPath(new URL('.', import.meta.url)), zones }],
      // no-restricted-paths passes over what it cannot resolve: let nothing be unresolved
      // (but the compiled output, which a plain .mjs may import before any build).
      'import-x/no-unresolved': ['error', { ignore: ['/dist/'] }],
    },
  },
  Object.entries(layers).map(([layer, spec]) => packageRule(layer, spec)),
  Object.entries(sdkOwners).map(([file, extra]) => packageRule(file, merge(layers[file.split('/')[0]], extra))),
  // The dashboard's modules run in the browser, linked by the daemon into the page's one inline
  // script (daemon/package-assets.ts): they import only each other, as `./name.js`.
  {
    files: ['dashboard/**/*.js'],
    languageOptions: { globals: globals.browser, sourceType: 'module' },
    rules: {
      'no-restricted-imports': [
        'error',
        { patterns: [{ regex: '^(?!\\./[a-z][a-z0-9-]*\\.js$)', message: 'A dashboard module imports only modules of dashboard/ (./name.js): the daemon links them into the page; see docs/dashboard.md.' }] },
      ],
    },
  },
);
