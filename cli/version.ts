/** The package's version, read from package.json whether the CLI runs from dist/ or from source. */
import { existsSync, readFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';

/** The `version` of agentvisor's package.json. */
export function packageVersion(): string {
  const candidates = ['../../package.json', '../package.json'].map((relative) => fileURLToPath(new URL(relative, import.meta.url)));
  for (const candidate of candidates) {
    if (!existsSync(candidate)) continue;
    const parsed = JSON.parse(readFileSync(candidate, 'utf8')) as { name?: string; version?: string };
    if (parsed.name === 'agentvisor' && parsed.version) return parsed.version;
  }
  return 'unknown';
}
