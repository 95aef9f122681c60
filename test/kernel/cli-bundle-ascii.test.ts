/**
 * dist/cli.cjs is ASCII only (scripts/ascii-only.mjs), so bin/load-cli.mjs reads it as Latin-1:
 * what esbuild leaves non-ASCII (regular expression literals) is escaped, and an escaped
 * expression matches what the original did.
 */

import { isAscii } from 'node:buffer';
import { readFileSync } from 'node:fs';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
// @ts-expect-error: a plain ES module of scripts/, without declarations
import { escapeNonAscii } from '../../scripts/ascii-only.mjs';
import { cli, repo } from '../support/cli.js';

describe('the bundled CLI is ASCII only', () => {
  it('has no byte over 0x7f, and the test-reporter expressions are in it escaped', async () => {
    // `hangar` builds dist/ first when it is missing or stale (a fresh clone).
    expect((await cli(['--version'])).code).toBe(0);
    const bytes = readFileSync(path.join(repo, 'dist', 'cli.cjs'));
    expect(isAscii(bytes)).toBe(true);
    // core/coderun/runner-output.ts reads node:test's "ℹ tests 3" lines.
    expect(bytes.toString('latin1')).toContain('/^[#\\u2139]\\s*tests\\s+');
  });

  it('escapes expressions, strings and astral characters so they match and read as before', () => {
    const source = String.raw`[/^[#ℹ]\s*tests\s+(\d+)$/m, /^✖ (.+)$/u, /😀+/u, "naïve 😀"]`;
    const escaped: string = escapeNonAscii(source);
    expect(isAscii(Buffer.from(escaped, 'utf8'))).toBe(true);
    const [before, after] = [source, escaped].map((text) => new Function(`return ${text}`)() as [RegExp, RegExp, RegExp, string]);
    for (const [i, line] of ['ℹ tests 12', '✖ a failing test', '😀😀'].entries()) {
      const [was, now] = [before[i] as RegExp, after[i] as RegExp];
      expect(now.exec(line)).toEqual(was.exec(line));
      expect(now.exec(line)).not.toBeNull();
    }
    expect(after[0]!.exec('# tests 4')?.[1]).toBe('4');
    expect(after[0]!.test('i tests 4')).toBe(false);
    expect(after[3]).toBe('naïve 😀');
    expect(escapeNonAscii('plain ascii /x/')).toBe('plain ascii /x/');
  });
});
