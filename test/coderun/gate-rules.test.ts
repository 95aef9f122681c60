/**
 * The order in which a team gate reads a failed run (core/coderun/gates.ts, #30), each rule against
 * its near miss, on recorded outputs: one failing test more than the folders `node --test` mistook for
 * tests, a failure headline of each runner next to a "missing check" signature, a command that only
 * looks like `node --test`, an import failure ("imported from") next to a missing main module.
 * A wrong rule here turns a real failure into UNVERIFIED (the work is never sent back) or a missing
 * check into RED (the team is sent to fix tests that do not exist).
 */
import { describe, expect, it } from 'vitest';
import { classify, nodeTestFolders } from '../../core/coderun/gates.js';

const run = (exit: number | null, output: string, command: string, extra: Record<string, unknown> = {}) =>
  classify('t', { command, exit_code: exit, output, timed_out: false, cancelled: false, spawn_error: null, ms: 1, ...extra });

/** What `node --test test/api/` prints on Node 22 and 24 for the folder, as one failing "test". */
const folderFailure = (folder: string) =>
  `Error: Cannot find module '/w/${folder}'\n    at Module._resolveFilename (node:internal/modules/cjs/loader:1564:15) {\n  code: 'MODULE_NOT_FOUND',\n  requireStack: []\n}\n✖ ${folder} (38ms)`;
const summary = (tests: number, fail: number) => `ℹ tests ${tests}\nℹ pass ${tests - fail}\nℹ fail ${fail}`;

describe('node --test and a folder argument', () => {
  it('is UNVERIFIED while the failing tests are no more than the folders, RED with one more', () => {
    const one = `${folderFailure('test/api')}\n${summary(1, 1)}`;
    expect(run(1, one, 'node --test test/api/')).toMatchObject({ outcome: 'UNVERIFIED', signature: 'node-test-folder', tests: null });
    const two = `${folderFailure('test/api')}\n${folderFailure('test/unit')}\n${summary(2, 2)}`;
    const both = run(1, two, 'node --test test/api/ test/unit');
    expect(both).toMatchObject({ outcome: 'UNVERIFIED', signature: 'node-test-folder' });
    expect(both.reason).toContain('(test/api, test/unit)');
    expect(both.reason).toContain('`node --test "test/api/**/*.test.mjs"`');
    // One folder and one real failure: two failing, one folder.
    const mixed = `${folderFailure('test/api')}\n✖ adds (2ms)\n${summary(3, 2)}`;
    expect(run(1, mixed, 'node --test test/api/ test/add.test.mjs')).toMatchObject({ outcome: 'RED', reason: 'failed with exit code 1' });
  });

  it('counts a folder once however often it is named in the output', () => {
    const twice = `${folderFailure('test/api')}\n${folderFailure('test/api')}\n${summary(2, 2)}`;
    expect(nodeTestFolders(twice, 'node --test test/api/')).toEqual(['test/api']);
    expect(run(1, twice, 'node --test test/api/')).toMatchObject({ outcome: 'RED' });
  });

  it('applies only to a command that runs node --test, and only to arguments of that command', () => {
    const out = `${folderFailure('test/api')}\n${summary(1, 1)}`;
    expect(nodeTestFolders(out, 'node --test test/api')).toEqual(['test/api']);
    expect(nodeTestFolders(out, 'node  --test ./test/api/')).toEqual(['test/api']);
    // --test belongs to another program after a pipe, a `;` or an `&&`; nodemon is not node; no --test at all.
    expect(nodeTestFolders(out, 'node build.mjs && vitest --test test/api')).toEqual([]);
    expect(nodeTestFolders(out, 'node build.mjs; runner --test test/api')).toEqual([]);
    expect(nodeTestFolders(out, 'node build.mjs | tee --test test/api')).toEqual([]);
    expect(nodeTestFolders(out, 'nodemon --test test/api')).toEqual([]);
    expect(nodeTestFolders(out, 'node test/api')).toEqual([]);
    expect(nodeTestFolders(out, 'node --testing test/api')).toEqual([]);
    // The module is not an argument of the command: a test's own import that is not there.
    expect(nodeTestFolders(out, 'node --test test/other/')).toEqual([]);
    // "imported from": a test file's import, not the argument.
    const imported = "Error [ERR_MODULE_NOT_FOUND]: Cannot find module '/w/test/api' imported from /w/test/api.test.mjs";
    expect(nodeTestFolders(imported, 'node --test test/api/')).toEqual([]);
    expect(run(1, `${imported}\n${summary(1, 1)}`, 'node --test test/api/')).toMatchObject({ outcome: 'RED' });
  });
});

describe('node <script> that is not there', () => {
  const missing = (file: string) =>
    `node:internal/modules/cjs/loader:1228\n  throw err;\n  ^\n\nError: Cannot find module '/w/${file}'\n    at Module._resolveFilename (node:internal/modules/cjs/loader:1225:15) {\n  code: 'MODULE_NOT_FOUND',\n  requireStack: []\n}\n\nNode.js v24.0.0`;

  it('is UNVERIFIED naming the script, for node at the start or after a separator', () => {
    expect(run(1, missing('scripts/check.mjs'), 'node scripts/check.mjs')).toMatchObject({
      outcome: 'UNVERIFIED',
      signature: 'node-no-script',
      reason: 'no such check: node has no script scripts/check.mjs',
    });
    expect(run(1, missing('scripts/check.mjs'), 'npm run build && node scripts/check.mjs')).toMatchObject({ signature: 'node-no-script' });
  });

  it('is RED when the missing module is not the script the command runs, or a required one (a require stack)', () => {
    expect(run(1, missing('lib/util.mjs'), 'node scripts/check.mjs')).toMatchObject({ outcome: 'RED' });
    expect(run(1, missing('scripts/check.mjs'), 'bun scripts/check.mjs')).toMatchObject({ outcome: 'RED' });
    expect(run(1, missing('scripts/check.mjs'), 'mynode scripts/check.mjs')).toMatchObject({ outcome: 'RED' });
    const required = missing('scripts/check.mjs').replace('requireStack: []', "requireStack: [ '/w/scripts/run.js' ]");
    expect(run(1, required, 'node scripts/check.mjs')).toMatchObject({ outcome: 'RED' });
  });

  it('finds the script after another missing module that is not an argument', () => {
    const both = `${missing('lib/util.mjs')}\n${missing('scripts/check.mjs')}`;
    expect(run(1, both, 'node scripts/check.mjs')).toMatchObject({
      signature: 'node-no-script',
      reason: 'no such check: node has no script scripts/check.mjs',
    });
  });

  it('is RED when tests failed too', () => {
    expect(run(1, `${missing('scripts/check.mjs')}\n${summary(2, 1)}`, 'node scripts/check.mjs')).toMatchObject({ outcome: 'RED' });
  });
});

describe('unittest naming a module that is not there', () => {
  const output = (named: string, failures: string) =>
    `E\n======================================================================\nERROR: ${named} (unittest.loader._FailedTest.${named})\n----------------------------------------------------------------------\nImportError: Failed to import test module: ${named}\nTraceback (most recent call last):\nModuleNotFoundError: No module named '${named}'\n\n----------------------------------------------------------------------\nRan 1 test in 0.000s\n\nFAILED (${failures})`;

  it('is UNVERIFIED for the module the command names, RED for another or with a second failure', () => {
    expect(run(1, output('nosuch', 'errors=1'), 'python3 -m unittest nosuch')).toMatchObject({
      outcome: 'UNVERIFIED',
      signature: 'unittest-no-module',
      reason: 'no such check: unittest has no test module nosuch',
    });
    expect(run(1, output('nosuch', 'errors=1'), 'python3 -m unittest other')).toMatchObject({ outcome: 'RED' });
    expect(run(1, output('nosuch', 'errors=1'), 'python3 -m pytest nosuch')).toMatchObject({ outcome: 'RED' });
    expect(
      run(1, output('nosuch', 'failures=1, errors=1').replace('Ran 1 test', 'Ran 2 tests'), 'python3 -m unittest nosuch'),
    ).toMatchObject({
      outcome: 'RED',
    });
  });
});

describe('a failure headline keeps a run RED next to a "missing check" signature', () => {
  const signature = 'npm error Missing script: "lint"';
  it.each([
    ['TAP', 'not ok 1 - adds'],
    ['go', '--- FAIL: TestAdd (0.00s)'],
    ['pytest', 'FAILED test_calc.py::test_add - assert 2 == 3'],
    ['cargo', 'test result: FAILED. 0 passed; 0 failed; 0 ignored'],
    ['unittest', 'FAIL: test_add (test_calc.CalcTest)'],
    ['node spec', '✖ adds (1.2ms)'],
  ])('%s: "%s"', (_runner, headline) => {
    expect(run(1, `${headline}\n${signature}`, 'npm run check')).toMatchObject({ outcome: 'RED', reason: 'failed with exit code 1' });
  });

  it('counted at the start of a line, indented or not, with any test number', () => {
    for (const headline of ['    not ok 1 - a subtest', 'not ok 12 - twelfth', '  FAILED tests/test_x.py::test_y', '  ✖ adds (1ms)']) {
      expect(run(1, `${headline}\n${signature}`, 'npm run check'), headline).toMatchObject({ outcome: 'RED' });
    }
  });

  it("but not a TODO or SKIP test, nor the heading of node's list of failures, nor the words inside a line", () => {
    for (const line of [
      'not ok 1 - later # TODO not written',
      'not ok 2 - flaky # SKIP on CI',
      'not ok 3 - later #TODO',
      'not ok 4 - later #  SKIP',
      '✖ failing tests:',
      "ok 1 - parses 'not ok 2' lines",
      'build:✖ 2 lint warnings',
      'FAIL:  (no name)',
    ]) {
      expect(run(1, `${line}\n${signature}`, 'npm run check'), line).toMatchObject({
        outcome: 'UNVERIFIED',
        signature: 'npm-missing-script',
      });
    }
  });

  it('a count of failures decides over the headlines; with none counted, the headlines decide', () => {
    // The summary says none failed, yet a headline says one did (a second runner in the same command).
    expect(run(1, `${signature}\nℹ tests 1\nℹ fail 0\nnot ok 1 - lint`, 'npm run check')).toMatchObject({ outcome: 'RED' });
  });

  it('a failed count in a summary decides as the headlines do; a zero count does not', () => {
    expect(run(1, `${signature}\nℹ tests 1\nℹ fail 1`, 'npm run check')).toMatchObject({ outcome: 'RED' });
    expect(run(1, `${signature}\nℹ tests 1\nℹ fail 0`, 'npm run check')).toMatchObject({ outcome: 'UNVERIFIED' });
  });
});

describe('exit codes first', () => {
  it('127 names the program the shell could not find, else the first word of the command', () => {
    expect(run(127, 'bash: line 1: pytest: command not found', 'make test')).toMatchObject({
      reason: 'could not run: `pytest` is not installed or not on PATH (exit 127)',
    });
    for (const line of [
      '/bin/sh: 1: pytest: not found',
      'sh: pytest: not found',
      'sh: 12: pytest: not found',
      'bash: line 12: pytest: command not found',
    ]) {
      expect(run(127, `make: entering\n${line}`, 'make test').reason, line).toBe(
        'could not run: `pytest` is not installed or not on PATH (exit 127)',
      );
    }
    expect(run(127, 'something else', '  vitest run')).toMatchObject({
      outcome: 'UNVERIFIED',
      signature: 'shell-not-found',
      reason: 'could not run: `vitest` is not installed or not on PATH (exit 127)',
    });
  });

  it('126 is a command that cannot be executed; pytest 4 carries its error line; 5 is no tests for pytest and unittest only', () => {
    expect(run(126, '', './check.sh')).toMatchObject({
      signature: 'shell-not-executable',
      reason: 'could not run: the command is not executable (exit 126)',
    });
    expect(run(4, 'ERROR: usage: bad option\n', 'pytest -x')).toMatchObject({
      signature: 'pytest-usage',
      reason: 'no such check: pytest could not use its arguments (exit 4): usage: bad option',
    });
    expect(run(4, 'no error line', 'pytest -x')).toMatchObject({ reason: 'no such check: pytest could not use its arguments (exit 4)' });
    // The error line is pytest's own (at the start of a line), trimmed; a plugin's indented one is not it.
    expect(run(4, 'E   ERROR: in a plugin\nERROR: file or directory not found: nope   \n', 'pytest nope').reason).toBe(
      'no such check: pytest could not use its arguments (exit 4): file or directory not found: nope',
    );
    // Only exit 4 adds pytest's error line; only 127 names a program from the output.
    expect(run(5, 'ERROR: not found: x', 'python3 -m pytest x').reason).toBe('no such check: pytest collected no tests (exit 5)');
    expect(run(5, 'sh: 1: helper: not found', 'python3 -m pytest').reason).toBe('no such check: pytest collected no tests (exit 5)');
    expect(run(4, 'ERROR: usage', 'make check')).toMatchObject({ outcome: 'RED' });
    expect(run(5, '', 'python3 -m unittest discover')).toMatchObject({ signature: 'unittest-no-tests' });
    expect(run(5, '', 'python3 -munittest discover')).toMatchObject({ outcome: 'RED' });
    expect(run(5, '', 'pytestify run')).toMatchObject({ outcome: 'RED' });
  });
});

describe('how a run ended', () => {
  it('a command that could not start is UNVERIFIED, a timeout RED with a fingerprint, a cancel UNVERIFIED', () => {
    expect(run(null, '', 'npm test', { spawn_error: 'spawn ENOENT' })).toMatchObject({
      outcome: 'UNVERIFIED',
      tests: null,
      reason: 'could not run: spawn ENOENT',
    });
    const timedOut = run(null, 'ℹ tests 2', 'npm test', { timed_out: true });
    expect(timedOut).toMatchObject({ outcome: 'RED', reason: 'killed at its timeout', tests: 2 });
    expect(timedOut.fingerprint).toEqual(expect.any(String));
    // A hang is not the same defect as a failure that printed nothing.
    expect(timedOut.fingerprint).not.toBe(run(1, '', 'npm test').fingerprint);
    expect(run(null, '', 'npm test', { cancelled: true })).toMatchObject({ outcome: 'UNVERIFIED', reason: 'cancelled before it finished' });
  });

  it('green names the count, one test or several; a RED has a fingerprint of its output', () => {
    expect(run(0, 'ℹ tests 1\nℹ fail 0', 'npm test')).toMatchObject({ outcome: 'green', tests: 1, reason: 'passed, 1 test' });
    expect(run(0, 'ℹ tests 2\nℹ fail 0', 'npm test')).toMatchObject({ outcome: 'green', tests: 2, reason: 'passed, 2 tests' });
    const a = run(1, '✖ adds', 'npm test');
    const b = run(1, '✖ subtracts', 'npm test');
    expect(a.fingerprint).toEqual(expect.any(String));
    expect(a.fingerprint).not.toBe(b.fingerprint);
    expect(a.output_tail).toContain('✖ adds');
  });
});
