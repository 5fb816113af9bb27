/**
 * The committed lockfile describes the package.json beside it, so that `npm install` on a fresh
 * clone leaves both as they are (npm rewrites the lockfile's root entry when they differ).
 */
import { readFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';

const read = (file: string) => JSON.parse(readFileSync(fileURLToPath(new URL(`../../${file}`, import.meta.url)), 'utf8')) as Record<string, unknown>;

describe('package-lock.json', () => {
  it("has the root entry npm would write for package.json: name, version, license, engines, bin and every dependency's pin", () => {
    const manifest = read('package.json');
    const lock = read('package-lock.json') as { name: string; version: string; packages: Record<string, Record<string, unknown>> };
    const rootEntry = lock.packages['']!;
    // npm writes bin targets without a leading "./".
    const bin = Object.fromEntries(Object.entries((manifest.bin as Record<string, string> | undefined) ?? {}).map(([name, target]) => [name, target.replace(/^\.\//, '')]));
    expect({ name: lock.name, version: lock.version }).toEqual({ name: manifest.name, version: manifest.version });
    expect({
      name: rootEntry.name,
      version: rootEntry.version,
      license: rootEntry.license,
      engines: rootEntry.engines,
      bin: rootEntry.bin ?? {},
      dependencies: rootEntry.dependencies ?? {},
      devDependencies: rootEntry.devDependencies ?? {},
    }).toEqual({
      name: manifest.name,
      version: manifest.version,
      license: manifest.license,
      engines: manifest.engines,
      bin,
      dependencies: manifest.dependencies ?? {},
      devDependencies: manifest.devDependencies ?? {},
    });
  });
});
