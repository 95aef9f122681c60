/**
 * The mutation-testing configuration itself (#30): the repository's stryker.config.mjs, narrowed to
 * the fixture in test/fixtures/mutation/, reports the wrong rule "accept every host" killed when the
 * spec separates it from the right rule, reports it surviving when the spec does not, and then fails
 * the run (the break threshold). Two real Stryker runs as child processes, about ten seconds each (twice
 * that on a loaded two-core machine, hence the longer timeouts).
 */
import { spawn } from 'node:child_process';
import { mkdtemp, readFile, rm } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterAll, describe, expect, it } from 'vitest';

const fixture = fileURLToPath(new URL('../fixtures/mutation/', import.meta.url));
const stryker = fileURLToPath(new URL('../../node_modules/@stryker-mutator/core/bin/stryker.js', import.meta.url));
const out = await mkdtemp(path.join(os.tmpdir(), 'hangar-mutation-'));
afterAll(() => rm(out, { recursive: true, force: true }));

interface Mutant {
  mutatorName: string;
  replacement: string;
  status: string;
  location: { start: { line: number } };
}

async function mutate(spec: string): Promise<{ code: number; mutants: Mutant[] }> {
  const report = path.join(out, `${spec}.json`);
  const code = await new Promise<number>((resolve, reject) => {
    const child = spawn(process.execPath, [stryker, 'run', 'stryker.config.mjs'], {
      cwd: fixture,
      env: { ...process.env, FIXTURE_SPEC: spec, FIXTURE_REPORT: report },
      stdio: 'ignore',
    });
    child.on('error', reject);
    child.on('exit', (c) => resolve(c ?? 1));
  });
  const json = JSON.parse(await readFile(report, 'utf8')) as { files: Record<string, { mutants: Mutant[] }> };
  return { code, mutants: Object.values(json.files).flatMap((f) => f.mutants) };
}

/** The wrong rule: the comparison on the rule's line replaced by `true`, every name accepted. */
const acceptEveryName = (m: Mutant) =>
  m.mutatorName === 'ConditionalExpression' && m.replacement === 'true' && m.location.start.line === 10;

describe('the Stryker configuration', () => {
  it('reports the wrong rule killed by the separating spec, every mutant killed, and passes', async () => {
    const { code, mutants } = await mutate('host-rule.spec.ts');
    expect(mutants.filter(acceptEveryName).map((m) => m.status)).toEqual(['Killed']);
    expect(mutants.filter((m) => m.status !== 'Killed')).toEqual([]);
    expect(code).toBe(0);
  }, 120_000);

  it('reports the wrong rule surviving a spec that only tests what should pass, and fails under the break threshold', async () => {
    const { code, mutants } = await mutate('host-rule.weak.ts');
    expect(mutants.filter(acceptEveryName).map((m) => m.status)).toEqual(['Survived']);
    expect(code).not.toBe(0);
  }, 120_000);
});
