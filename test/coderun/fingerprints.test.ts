/**
 * Defect fingerprints: the same failure seen again hashes the same (as runners and CI test
 * analytics group it: by failing test and assertion), whatever changed in timings, temp paths,
 * ports, addresses, colours and counts; a different failing test or assertion hashes differently.
 */
import { execSync } from 'node:child_process';
import { mkdir, mkdtemp, rm, writeFile } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { defectKey, fingerprint } from '../../core/coderun/board.js';
import { runCommand } from '../../core/coderun/command.js';
import { failures, normalizeLine, tally } from '../../core/coderun/runner-output.js';

const fp = (output: string, command = 'npm test') => fingerprint({ team: 'api', command, output });

const pytestOk = (() => {
  try {
    execSync('python3 -m pytest --version', { stdio: 'ignore' });
    return { ok: true, reason: '' };
  } catch {
    return { ok: false, reason: 'skipped: `python3 -m pytest --version` failed (install python3-pytest)' };
  }
})();

const dirs: string[] = [];
afterEach(async () => {
  for (const d of dirs.splice(0)) await rm(d, { recursive: true, force: true });
});
async function folder(files: Record<string, string>): Promise<string> {
  const dir = await mkdtemp(path.join(os.tmpdir(), 'hangar-fp-'));
  dirs.push(dir);
  for (const [rel, content] of Object.entries(files)) {
    await mkdir(path.dirname(path.join(dir, rel)), { recursive: true });
    await writeFile(path.join(dir, rel), content);
  }
  return dir;
}

describe('normalising a line', () => {
  it('takes out durations, timestamps, temp paths, ports, addresses, ANSI codes, line numbers and counts', () => {
    expect(normalizeLine('\u001b[31m✖ adds (12.5ms)\u001b[39m')).toBe('✖ adds (<dur>)');
    expect(normalizeLine('no tests ran in 0.76s')).toBe(normalizeLine('no tests ran in 0.77s'));
    expect(normalizeLine('2026-11-25T03:19:45.538Z started at 03:19:45')).toBe('<time> started at <time>');
    expect(normalizeLine('at /tmp/hangar-repo-Ab12cd/src/a.mjs:12:5')).toBe('at <tmp>/src/a.mjs');
    expect(normalizeLine('/var/folders/x1/abc/T/pytest-of-me/pytest-7/test_a0/f.py:3')).toBe('<tmp>/pytest-#/test_a0/f.py');
    expect(normalizeLine('/tmp/pytest-of-root/pytest-12/test_a0/f.py')).toBe('<tmp>/pytest-#/test_a0/f.py');
    expect(normalizeLine('connect ECONNREFUSED 127.0.0.1:40865')).toBe('connect ECONNREFUSED <addr>');
    expect(normalizeLine('GET http://localhost:5173/health [::1]:8080')).toBe('GET http://localhost:<port>/health <addr>');
    expect(normalizeLine('assert <calc.Cart object at 0x7f4493a7f510> == 3')).toBe('assert <calc.Cart object at 0x<addr>> == 3');
    expect(normalizeLine('1 failed, 2 passed in 0.93s')).toBe('# failed, # passed in <dur>');
    expect(normalizeLine('# tests 4')).toBe('# tests #');
    // Assertion values stay: they are the defect.
    expect(normalizeLine('expected 200 to be 500')).toBe('expected 200 to be 500');
  });

  it('takes the random folder names out of the OS temp folder wherever TMPDIR puts it', () => {
    // Under npm test that is the run's own folder below /tmp (test/global-setup.ts).
    expect(normalizeLine(`at ${os.tmpdir()}/hangar-repo-Ab12cd/src/a.mjs:12:5`)).toBe('at <tmp>/src/a.mjs');
    const saved = process.env.TMPDIR;
    process.env.TMPDIR = '/run/user/1000';
    try {
      expect(normalizeLine('at /run/user/1000/gl-x1/test/a.test.mjs:4:11')).toBe('at <tmp>/test/a.test.mjs');
    } finally {
      if (saved === undefined) delete process.env.TMPDIR;
      else process.env.TMPDIR = saved;
    }
    expect(normalizeLine('at /run/user/1000/gl-x1/test/a.test.mjs')).toBe('at /run/user/1000/gl-x1/test/a.test.mjs');
  });
});

describe('failures by test id and assertion', () => {
  const tap = (ms: string, port: number) =>
    [
      'TAP version 13',
      '# Subtest: suite',
      '    # Subtest: health answers ok',
      '    not ok 1 - health answers ok',
      '      ---',
      `      duration_ms: ${ms}`,
      "      location: '/tmp/gl-x1/test/a.test.mjs:4:11'",
      "      failureType: 'testCodeFailure'",
      '      error: |-',
      '        Expected values to be loosely deep-equal:',
      '        ',
      '        { ok: false }',
      "      code: 'ERR_ASSERTION'",
      '      ...',
      'not ok 1 - suite',
      '  ---',
      "  failureType: 'subtestsFailed'",
      "  error: '1 subtest failed'",
      '  ...',
      'not ok 2 - port',
      '  ---',
      "  location: '/tmp/gl-x1/test/a.test.mjs:7:1'",
      `  error: 'connect ECONNREFUSED 127.0.0.1:${port}'`,
      '  ...',
      '# tests 3',
      '# fail 2',
      `# duration_ms ${ms}`,
    ].join('\n');
  const spec = (ms: string, port: number, line = 4) =>
    [
      '✖ failing tests:',
      '',
      `test at test/a.test.mjs:${line}:11`,
      `✖ health answers ok (${ms}ms)`,
      '  AssertionError [ERR_ASSERTION]: Expected values to be loosely deep-equal:',
      '  { ok: false }',
      '      at TestContext.<anonymous> (file:///w/test/a.test.mjs:4:50)',
      '',
      'test at test/a.test.mjs:7:1',
      `✖ port (${ms}ms)`,
      `  Error: connect ECONNREFUSED 127.0.0.1:${port}`,
      '      at TestContext.<anonymous> (file:///w/test/a.test.mjs:7:28)',
    ].join('\n');

  it('node:test TAP (Node 22) and spec (Node 24): leaf failures with their assertion, stable across timings, ports and moved lines', () => {
    expect(failures(tap('2.2', 40865)).map((f) => f.id)).toEqual([
      '<tmp>/test/a.test.mjs > health answers ok',
      '<tmp>/test/a.test.mjs > port',
    ]);
    expect(failures(tap('2.2', 40865))[1]!.message).toBe('connect ECONNREFUSED <addr>');
    expect(fp(tap('2.2', 40865))).toBe(fp(tap('9.7', 41002)));
    expect(failures(spec('2.2', 1)).map((f) => f.id)).toEqual(['test/a.test.mjs > health answers ok', 'test/a.test.mjs > port']);
    expect(failures(spec('2.2', 1))[0]!.message).toBe(
      'AssertionError [ERR_ASSERTION]: Expected values to be loosely deep-equal: | { ok: false }',
    );
    expect(fp(spec('2.2', 40865))).toBe(fp(spec('0.1', 40001, 9)));
    expect(fp(spec('2.2', 40865))).not.toBe(fp(spec('2.2', 40865).replace('ok: false', 'ok: null')));
  });

  it('pytest, go, cargo, jest, vitest and unittest name the failing test and its assertion', () => {
    expect(failures('FAILED py/test_calc.py::test_total - assert <calc.Cart object at 0x7f449...\n1 failed, 1 passed in 0.93s')).toEqual([
      { id: 'FAILED py/test_calc.py::test_total', message: 'assert <calc.Cart object at 0x<addr>' },
    ]);
    expect(failures('--- FAIL: TestAdd (0.00s)\n    add_test.go:8: got 3, want 4\nFAIL\texample.com/m\t0.002s')).toEqual([
      { id: 'TestAdd', message: 'got 3, want 4' },
    ]);
    expect(
      failures(
        "---- tests::adds stdout ----\n\nthread 'tests::adds' panicked at src/lib.rs:3:62:\nassertion `left == right` failed\n  left: 3\n right: 4\nnote: run with `RUST_BACKTRACE=1`",
      ),
    ).toEqual([{ id: 'tests::adds', message: 'assertion `left == right` failed | left: 3 | right: 4' }]);
    expect(
      failures(
        '  ● math › adds\n\n    expect(received).toBe(expected) // Object.is equality\n\n    Expected: 4\n    Received: 3\n\n      3 | test(',
      )[0],
    ).toEqual({
      id: 'math › adds',
      message: 'expect(received).toBe(expected) // Object.is equality | Expected: 4 | Received: 3',
    });
    expect(failures(' FAIL  test/sum.test.ts > math > adds\nAssertionError: expected 3 to be 4 // Object.is equality')).toEqual([
      { id: 'test/sum.test.ts > math > adds', message: 'AssertionError: expected 3 to be 4 // Object.is equality' },
    ]);
    expect(
      failures(
        'FAIL: test_add (tests.test_calc.T.test_add)\n----------------------------------------------------------------------\nTraceback (most recent call last):\n  File "/w/tests/test_calc.py", line 6, in test_add\nAssertionError: 3 != 4\n\n----------------------------------------------------------------------',
      ),
    ).toEqual([{ id: 'FAIL test_add (tests.test_calc.T.test_add)', message: 'AssertionError: 3 != 4' }]);
  });

  it('without a named failing test, stands in the failing lines with every number out (the raw tail made every run new)', () => {
    // No line names a test: the old fingerprint hashed the raw tail, timings included.
    expect(fp('lint: 3 problems in 0.76s\nsee report.txt', 'npm run check')).toBe(
      fp('lint: 3 problems in 0.77s\nsee report.txt', 'npm run check'),
    );
    expect(fp('boom\nError: broken at 2026-11-25T03:19:45Z pid 4121')).toBe(fp('boom\nError: broken at 2026-11-25T04:01:02Z pid 977'));
    expect(defectKey('Error: x')).not.toBe(defectKey('Error: y'));
  });

  it('sums test counts over several summaries (cargo binaries, chained commands)', () => {
    const cargo =
      'running 1 test\ntest tests::adds ... ok\n\ntest result: ok. 1 passed; 0 failed; 0 ignored\n\n   Doc-tests calc\n\nrunning 0 tests\n\ntest result: ok. 0 passed; 0 failed; 0 ignored';
    expect(tally(cargo)).toEqual({ ran: 1, failed: 0 });
    expect(tally('# tests 2\n# fail 0\n...\n# tests 3\n# fail 1')).toEqual({ ran: 5, failed: 1 });
  });
});

describe('the same defect run twice for real', () => {
  it.skipIf(!pytestOk.ok)(
    `pytest: an object repr with a new address each run is the same defect${pytestOk.ok ? '' : ` (${pytestOk.reason})`}`,
    async () => {
      const dir = await folder({ 'py/test_cart.py': 'class Cart:\n    pass\n\ndef test_total():\n    assert Cart() == 3\n' });
      const runs = await Promise.all([0, 1].map(() => runCommand('python3 -m pytest -q py', { cwd: dir, timeoutMs: 60_000 })));
      const addresses = runs.map((r) => /0x[0-9a-f]+/.exec(r.output)?.[0]);
      expect(addresses[0]).toBeDefined();
      expect(fp(runs[0]!.output, 'python3 -m pytest -q py')).toBe(fp(runs[1]!.output, 'python3 -m pytest -q py'));
      await writeFile(path.join(dir, 'py/test_cart.py'), 'class Cart:\n    pass\n\ndef test_total():\n    assert 1 == 3\n');
      const other = await runCommand('python3 -m pytest -q py', { cwd: dir, timeoutMs: 60_000 });
      expect(fp(other.output, 'python3 -m pytest -q py')).not.toBe(fp(runs[0]!.output, 'python3 -m pytest -q py'));
    },
  );

  it('node:test: a failure naming a random port and a new temp folder each run is the same defect', async () => {
    const test =
      "import test from 'node:test';\ntest('calls the api', () => { throw new Error(`connect ECONNREFUSED 127.0.0.1:${40000 + Math.floor(Math.random() * 9000)} from ${process.cwd()}`); });\n";
    const outputs: string[] = [];
    for (let i = 0; i < 2; i++) {
      const dir = await folder({ 'package.json': '{"type":"module"}', 'test/api.test.mjs': test });
      outputs.push((await runCommand('node --test "test/**/*.test.mjs"', { cwd: dir, timeoutMs: 60_000 })).output);
    }
    expect(outputs[0]).not.toBe(outputs[1]);
    expect(failures(outputs[0]!).map((f) => f.id)).toEqual([expect.stringMatching(/test\/api\.test\.mjs > calls the api$/)]);
    expect(fp(outputs[0]!)).toBe(fp(outputs[1]!));
  });

  it('JUnit XML (node --test-reporter=junit): counted by test case, failures by classname and name, stable across ports and clocks', async () => {
    const test =
      "import test from 'node:test';\nimport assert from 'node:assert';\n" +
      "test('adds', () => assert.equal(1 + 1, 2));\n" +
      "test('reaches the api', () => assert.fail(`connect ECONNREFUSED 127.0.0.1:${40000 + Math.floor(Math.random() * 9000)} at ${Date.now()}`));\n" +
      "test('later', { skip: true }, () => {});\n";
    const command = 'node --test --test-reporter=junit "test/**/*.test.mjs"';
    const outputs: string[] = [];
    for (let i = 0; i < 2; i++) {
      const dir = await folder({ 'package.json': '{"type":"module"}', 'test/api.test.mjs': test });
      outputs.push((await runCommand(command, { cwd: dir, timeoutMs: 60_000 })).output);
    }
    expect(outputs[0]).toContain('<testsuites>');
    expect(outputs[0]).not.toBe(outputs[1]);
    expect(tally(outputs[0]!)).toEqual({ ran: 2, failed: 1 });
    expect(failures(outputs[0]!)).toEqual([{ id: 'test > reaches the api', message: 'connect ECONNREFUSED <addr> at <time>' }]);
    expect(fp(outputs[0]!, command)).toBe(fp(outputs[1]!, command));
  });
});
