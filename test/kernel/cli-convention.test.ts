import { execFileSync } from 'node:child_process';
import path from 'node:path';
import { afterEach, beforeAll, describe, expect, it } from 'vitest';
import { cli, repo, stopAll } from '../support/cli.js';
import { makeWorkspace } from '../support/server.js';

beforeAll(() => {
  execFileSync(process.execPath, [path.join(repo, 'scripts', 'build.mjs'), '--quiet']);
});
afterEach(stopAll);

/** Every command the `hangar` binary has, as typed. */
const SUBCOMMANDS = [[], ['code'], ['notebook'], ['login'], ['list'], ['init']].map((sub) => ({ name: ['hangar', ...sub].join(' '), sub }));

/** One error line in the convention: `hangar: <what> (<how to fix>)`. */
const ERROR_LINE = /^hangar: \S.* \(.+\)$/;

function oneErrorLine(stderr: string): string {
  const lines = stderr.trim().split('\n');
  expect(lines).toHaveLength(1);
  expect(lines[0]).toMatch(ERROR_LINE);
  return lines[0]!;
}

describe('one CLI convention across every subcommand', () => {
  it.each(SUBCOMMANDS)('$name --help prints usage on stdout and exits 0', async ({ name, sub }) => {
    const r = await cli([...sub, '--help']);
    expect(r.code).toBe(0);
    expect(r.stderr).toBe('');
    expect(r.stdout).toMatch(/usage/i);
    expect(r.stdout).toContain(name);
  });

  it.each(SUBCOMMANDS)('$name with a bad flag exits 2 with one hangar: line on stderr', async ({ name, sub }) => {
    const r = await cli([...sub, '--frobnicate']);
    expect(r.code).toBe(2);
    expect(r.stdout).toBe('');
    expect(oneErrorLine(r.stderr)).toContain("Unknown option '--frobnicate'");
    expect(r.stderr).toContain(`(see ${name} --help)`);
  });

  it('a missing or unknown command is a usage error (2) in every subcommand that takes one', async () => {
    for (const args of [['code'], ['code', 'frobnicate'], ['notebook'], ['notebook', 'frobnicate'], ['code', 'run']]) {
      const r = await cli(args);
      expect({ args, code: r.code }).toEqual({ args, code: 2 });
      oneErrorLine(r.stderr);
    }
  });

  it('a failure at run time exits 1 with one hangar: line, the same in every subcommand', async () => {
    const root = await makeWorkspace();
    const nothing = 'http://127.0.0.1:9';
    const failures = [
      ['login', '--root', root],
      ['notebook', 'list', '--server', nothing],
      ['code', 'teams', '--url', nothing, '--session', 'x', '--root', root],
    ];
    for (const args of failures) {
      const r = await cli(args);
      expect({ args, code: r.code }).toEqual({ args, code: 1 });
      oneErrorLine(r.stderr);
    }
  });
});
