/**
 * Gate outcomes against real toolchains: each tool installable here is run for real in a temp
 * folder (a tool that is absent skips its test and says why in the title); fixture outputs cover
 * go, gradle and jest, which are not installed on these machines.
 */
import { execSync } from 'node:child_process';
import { mkdir, mkdtemp, rm, writeFile } from 'node:fs/promises';
import { createRequire } from 'node:module';
import os from 'node:os';
import path from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { CHECK_SIGNATURES, classify, runGate } from '../../core/coderun/gates.js';

function probe(command: string): { ok: boolean; version: string; reason: string } {
  try {
    const version = execSync(command, { encoding: 'utf8', stdio: ['ignore', 'pipe', 'pipe'], timeout: 20_000 })
      .trim()
      .split('\n')[0]!;
    return { ok: true, version, reason: '' };
  } catch (err) {
    return { ok: false, version: '', reason: `skipped: \`${command}\` failed (${String((err as Error).message).split('\n')[0]})` };
  }
}

const node = probe('node --version');
const nodeMajor = Number(/^v(\d+)/.exec(node.version)?.[1] ?? 0);
const python = probe('python3 --version');
const pytest = probe('python3 -m pytest --version');
const cargo = probe('cargo --version');
const mvn = probe('mvn -v');
const make = probe('make --version');
const title = (text: string, tool: { ok: boolean; reason: string }) => (tool.ok ? text : `${text} (${tool.reason})`);

const dirs: string[] = [];
afterEach(async () => {
  for (const d of dirs.splice(0)) await rm(d, { recursive: true, force: true });
});

async function folder(files: Record<string, string> = {}): Promise<string> {
  const dir = await mkdtemp(path.join(os.tmpdir(), 'hangar-gate-'));
  dirs.push(dir);
  for (const [rel, content] of Object.entries(files)) {
    await mkdir(path.dirname(path.join(dir, rel)), { recursive: true });
    await writeFile(path.join(dir, rel), content);
  }
  return dir;
}

const gate = (command: string, cwd: string, timeoutMs = 60_000) => runGate('t', command, cwd, timeoutMs);
const fixture = (exit: number, output: string, command = 'npm test') =>
  classify('t', { command, exit_code: exit, output, timed_out: false, cancelled: false, spawn_error: null, ms: 1 });

const NODE_PASS = `import test from 'node:test';\ntest('adds', () => {});\n`;
const NODE_MISSING_IMPORT = `import test from 'node:test';\nimport { add } from '../../src/add.mjs';\ntest('adds', () => { if (add(1, 2) !== 3) throw new Error('bad'); });\n`;

describe('node:test, npm and the shell (real tools)', () => {
  // Node 22 and 24 take a folder argument as a module path ("Cannot find module"); Node 26 runs
  // the folder's tests again, and the gate is then simply green.
  it.skipIf(nodeMajor < 22)(
    title(
      '`node --test <folder>` on Node 22 and 24 is UNVERIFIED and says how to write the check (green on 26)',
      nodeMajor >= 22 ? node : { ok: false, reason: `skipped: node is ${node.version || 'absent'}, the folder case needs ≥ 22` },
    ),
    async () => {
      const dir = await folder({ 'package.json': '{"type":"module"}', 'test/api/a.test.mjs': NODE_PASS });
      const result = await gate('node --test test/api/', dir);
      if (nodeMajor >= 26) {
        expect(result).toMatchObject({ outcome: 'green', tests: 1 });
        return;
      }
      expect(result).toMatchObject({
        outcome: 'UNVERIFIED',
        signature: 'node-test-folder',
        reason:
          'no such check: `node --test` on Node 22 and 24 takes files or globs, not a folder (test/api); name the files with a glob, e.g. `node --test "test/api/**/*.test.mjs"`',
      });
      // The suggested form runs the folder's tests on the same Node.
      expect(await gate('node --test "test/api/**/*.test.mjs"', dir)).toMatchObject({ outcome: 'green', tests: 1 });
    },
  );

  it('keeps a real failure RED when its output says "Cannot find module" (a test importing what is not there yet)', async () => {
    const dir = await folder({ 'package.json': '{"type":"module"}', 'test/api/add.test.mjs': NODE_MISSING_IMPORT });
    const result = await gate('node --test "test/api/**/*.test.mjs"', dir);
    expect(result.output_tail).toMatch(/Cannot find module/);
    expect(result).toMatchObject({ outcome: 'RED', reason: 'failed with exit code 1' });
    expect(result.signature).toBeUndefined();
    if (nodeMajor >= 22) {
      // A folder argument next to a real failure: more failing tests than folders, so still RED.
      await writeFile(path.join(dir, 'test/pass.test.mjs'), NODE_PASS);
      expect(await gate('node --test test/api/ "test/api/**/*.test.mjs"', dir)).toMatchObject({ outcome: 'RED' });
    }
  });

  it('a glob matching nothing, a missing script, npm without the script, a missing command: UNVERIFIED with the reason', async () => {
    const dir = await folder({ 'package.json': '{"name":"x","version":"1.0.0"}' });
    expect(await gate('node --test "nothing/**/*.test.mjs"', dir)).toMatchObject(
      nodeMajor >= 22
        ? { outcome: 'UNVERIFIED', reason: 'passed but ran no tests' }
        : { outcome: 'UNVERIFIED', signature: 'node-test-not-found' },
    );
    expect(await gate('node scripts/check.mjs', dir)).toMatchObject({
      outcome: 'UNVERIFIED',
      signature: 'node-no-script',
      reason: 'no such check: node has no script scripts/check.mjs',
    });
    expect(await gate('npm test', dir)).toMatchObject({
      outcome: 'UNVERIFIED',
      signature: 'npm-missing-script',
      reason: 'no such check: package.json has no "test" script',
    });
    await writeFile(
      path.join(dir, 'package.json'),
      JSON.stringify({ name: 'x', version: '1.0.0', scripts: { test: 'echo "Error: no test specified" && exit 1' } }),
    );
    expect(await gate('npm test', dir)).toMatchObject({ outcome: 'UNVERIFIED', signature: 'npm-placeholder-test' });
    await writeFile(
      path.join(dir, 'package.json'),
      JSON.stringify({ name: 'x', version: '1.0.0', scripts: { test: 'hangar-no-such-runner --run' } }),
    );
    expect(await gate('npm test', dir)).toMatchObject({
      outcome: 'UNVERIFIED',
      exit_code: 127,
      reason: 'could not run: `hangar-no-such-runner` is not installed or not on PATH (exit 127)',
    });
    const empty = await folder();
    expect(await gate('npm test', empty)).toMatchObject({ outcome: 'UNVERIFIED', signature: 'npm-no-package' });
    expect(await gate('hangar-no-such-tool --check', empty)).toMatchObject({
      outcome: 'UNVERIFIED',
      exit_code: 127,
      signature: 'shell-not-found',
    });
  });

  it('vitest with no test files (the real vitest of this project)', async () => {
    const vitest = path.join(path.dirname(createRequire(import.meta.url).resolve('vitest/package.json')), 'vitest.mjs');
    const dir = await folder({ 'package.json': '{"type":"module"}' });
    expect(await gate(`node ${JSON.stringify(vitest)} run`, dir)).toMatchObject({
      outcome: 'UNVERIFIED',
      signature: 'vitest-no-files',
      reason: 'no such check: vitest found no test files',
    });
  });
});

describe('python (real pytest and unittest)', () => {
  it.skipIf(!pytest.ok)(title('pytest: exit 5 and exit 4 are UNVERIFIED, a failing test is RED, a passing one green', pytest), async () => {
    const dir = await folder({
      'py/test_calc.py': 'def test_add():\n    assert 1 + 1 == 2\n',
      'bad/test_bad.py': 'def test_add():\n    assert 1 + 1 == 3\n',
      'broken/test_import.py': 'from calc import add\n\ndef test_add():\n    assert add(1, 1) == 2\n',
      'empty/.keep': '',
    });
    expect(await gate('python3 -m pytest -q empty', dir)).toMatchObject({
      outcome: 'UNVERIFIED',
      exit_code: 5,
      signature: 'pytest-no-tests',
      reason: 'no such check: pytest collected no tests (exit 5)',
    });
    expect(await gate('python3 -m pytest -q nope', dir)).toMatchObject({
      outcome: 'UNVERIFIED',
      exit_code: 4,
      reason: 'no such check: pytest could not use its arguments (exit 4): file or directory not found: nope',
    });
    expect(await gate('python3 -m pytest -q bad', dir)).toMatchObject({ outcome: 'RED', exit_code: 1, tests: 1 });
    // A test module that cannot import the code under test is a failure (exit 2), not a missing check.
    expect(await gate('python3 -m pytest -q broken', dir)).toMatchObject({ outcome: 'RED', exit_code: 2 });
    expect(await gate('python3 -m pytest -q py', dir)).toMatchObject({ outcome: 'green', tests: 1 });
    expect(await gate('python3 -m hangar_no_such_module', dir)).toMatchObject({ outcome: 'UNVERIFIED', signature: 'python-no-module' });
    expect(await gate('python3 checks.py', dir)).toMatchObject({ outcome: 'UNVERIFIED', signature: 'python-no-script' });
  });

  it.skipIf(!python.ok)(
    title('unittest: no tests and no such module are UNVERIFIED; a failing import inside a test is RED', python),
    async () => {
      const dir = await folder({
        'tests/__init__.py': '',
        'tests/test_calc.py':
          'import unittest\nfrom calc import add\n\nclass T(unittest.TestCase):\n    def test_add(self):\n        self.assertEqual(add(1, 1), 2)\n',
        'empty/.keep': '',
      });
      // Exit 5 on Python ≥ 3.12, exit 0 with "Ran 0 tests" before: UNVERIFIED either way.
      expect(await gate('python3 -m unittest discover -s empty', dir)).toMatchObject({ outcome: 'UNVERIFIED' });
      expect(await gate('python3 -m unittest nosuchtests', dir)).toMatchObject({
        outcome: 'UNVERIFIED',
        signature: 'unittest-no-module',
        reason: 'no such check: unittest has no test module nosuchtests',
      });
      expect(await gate('python3 -m unittest tests.test_calc', dir)).toMatchObject({ outcome: 'RED' });
    },
  );
});

describe('cargo, make and Maven (real tools)', () => {
  it.skipIf(!cargo.ok)(
    title(
      'cargo: no manifest is UNVERIFIED; tests in one binary and none in the doc-tests are green; no tests at all UNVERIFIED; a panic RED',
      cargo,
    ),
    async () => {
      const lib = (tests: string) => ({
        'rs/Cargo.toml': '[package]\nname = "calc"\nversion = "0.1.0"\nedition = "2021"\n\n[dependencies]\n',
        'rs/src/lib.rs': `pub fn add(a: u64, b: u64) -> u64 { a + b }\n${tests}`,
      });
      const none = await folder();
      expect(await gate('cargo test', none)).toMatchObject({ outcome: 'UNVERIFIED', exit_code: 101, signature: 'cargo-no-manifest' });
      expect(await gate('cargo test --manifest-path rs/Cargo.toml', none)).toMatchObject({
        outcome: 'UNVERIFIED',
        reason: 'no such check: cargo found no Cargo.toml (rs/Cargo.toml does not exist)',
      });
      const target = await folder();
      const env = `CARGO_TARGET_DIR=${JSON.stringify(target)} `;
      const passing = await folder(lib('#[cfg(test)]\nmod tests { #[test] fn adds() { assert_eq!(super::add(1, 2), 3); } }\n'));
      // The doc-tests binary says "running 0 tests" after the unit tests ran: still green.
      expect(await gate(`${env}cargo test --manifest-path rs/Cargo.toml`, passing, 120_000)).toMatchObject({ outcome: 'green', tests: 1 });
      const empty = await folder(lib(''));
      expect(await gate(`${env}cargo test --manifest-path rs/Cargo.toml`, empty, 120_000)).toMatchObject({
        outcome: 'UNVERIFIED',
        tests: 0,
        reason: 'passed but ran no tests',
      });
      const failing = await folder(lib('#[cfg(test)]\nmod tests { #[test] fn adds() { assert_eq!(super::add(1, 2), 4); } }\n'));
      expect(await gate(`${env}cargo test --manifest-path rs/Cargo.toml`, failing, 120_000)).toMatchObject({
        outcome: 'RED',
        exit_code: 101,
        tests: 1,
      });
      expect(await gate('cargo hangar-no-such-subcommand', none)).toMatchObject({ outcome: 'UNVERIFIED', signature: 'cargo-no-command' });
    },
  );

  it.skipIf(!make.ok)(title('make: no target is UNVERIFIED; a missing prerequisite of the target is RED', make), async () => {
    const dir = await folder({ Makefile: 'build:\n\t@true\n' });
    expect(await gate('make test', dir)).toMatchObject({
      outcome: 'UNVERIFIED',
      exit_code: 2,
      reason: "no such check: the Makefile has no target 'test'",
    });
    await writeFile(path.join(dir, 'Makefile'), 'test: fixtures.txt\n\t@true\n');
    expect(await gate('make test', dir)).toMatchObject({ outcome: 'RED', exit_code: 2 });
  });

  it.skipIf(!mvn.ok)(title('Maven without a pom.xml is UNVERIFIED', mvn), async () => {
    const dir = await folder();
    expect(await gate('mvn -q -o test', dir)).toMatchObject({
      outcome: 'UNVERIFIED',
      signature: 'mvn-no-pom',
      reason: 'no such check: Maven found no pom.xml',
    });
  });
});

describe('fixture outputs (go, gradle, jest, and the order rules)', () => {
  it('go test: no Go files, no go.mod and no packages are UNVERIFIED; "[no test files]" passes with no tests; a FAIL is RED', () => {
    expect(fixture(1, 'no Go files in /tmp/x/api', 'go test ./api')).toMatchObject({ outcome: 'UNVERIFIED', signature: 'go-no-go-files' });
    expect(
      fixture(1, "go: go.mod file not found in current directory or any parent directory; see 'go help modules'", 'go test ./...'),
    ).toMatchObject({ outcome: 'UNVERIFIED', signature: 'go-no-module' });
    expect(fixture(1, 'go: warning: "./..." matched no packages\nno packages to test', 'go test ./...')).toMatchObject({
      outcome: 'UNVERIFIED',
      signature: 'go-no-packages',
    });
    expect(fixture(0, '?   \texample.com/m\t[no test files]', 'go test ./...')).toMatchObject({
      outcome: 'UNVERIFIED',
      tests: 0,
      reason: 'passed but ran no tests',
    });
    expect(fixture(0, 'ok  \texample.com/m\t0.002s', 'go test ./...')).toMatchObject({ outcome: 'green' });
    expect(
      fixture(1, '--- FAIL: TestAdd (0.00s)\n    add_test.go:8: got 3, want 4\nFAIL\nFAIL\texample.com/m\t0.002s\nFAIL', 'go test ./...'),
    ).toMatchObject({ outcome: 'RED', tests: 1 });
  });

  it('gradle and jest: a missing build, task or tests is UNVERIFIED; jest failing suites with "Cannot find module" stay RED', () => {
    expect(
      fixture(
        1,
        "FAILURE: Build failed with an exception.\n\n* What went wrong:\nTask 'test' not found in root project 'x'.",
        'gradle test',
      ),
    ).toMatchObject({ outcome: 'UNVERIFIED', reason: "no such check: Gradle has no task 'test'" });
    expect(fixture(1, "Directory '/tmp/x' does not contain a Gradle build.", 'gradle test')).toMatchObject({
      outcome: 'UNVERIFIED',
      signature: 'gradle-no-build',
    });
    expect(fixture(1, 'No tests found, exiting with code 1\nRun with `--passWithNoTests` to exit with code 0', 'npx jest')).toMatchObject({
      outcome: 'UNVERIFIED',
      signature: 'jest-no-tests',
    });
    const jestFail = [
      'FAIL src/sum.test.js',
      '  ● Test suite failed to run',
      '',
      "    Cannot find module './sum' from 'src/sum.test.js'",
      '',
      'Test Suites: 1 failed, 1 total',
      'Tests:       0 total',
    ].join('\n');
    expect(fixture(1, jestFail, 'npx jest')).toMatchObject({ outcome: 'RED', reason: 'failed with exit code 1' });
  });

  it('separates "tests failed" with "Cannot find module" (RED) from a check that is not there (UNVERIFIED)', () => {
    // The rule a mutation once planted ("Cannot find module" → UNVERIFIED) must not survive.
    const failed =
      "Error [ERR_MODULE_NOT_FOUND]: Cannot find module '/w/src/add.mjs' imported from /w/test/add.test.mjs\n✖ test/add.test.mjs (40ms)\nℹ tests 1\nℹ pass 0\nℹ fail 1\n\nnpm error Test failed.  See above for more details.";
    expect(fixture(1, failed)).toMatchObject({ outcome: 'RED', tests: 1 });
    const vitestFailed =
      " FAIL  test/add.test.ts [ test/add.test.ts ]\nError: Cannot find module '../src/add' imported from /w/test/add.test.ts\n Test Files  1 failed (1)\n      Tests  no tests";
    expect(fixture(1, vitestFailed, 'npx vitest run')).toMatchObject({ outcome: 'RED' });
    const folder =
      "Error: Cannot find module '/w/test/api'\n    at Module._resolveFilename (node:internal/modules/cjs/loader:1564:15) {\n  code: 'MODULE_NOT_FOUND',\n  requireStack: []\n}\n✖ test/api (38ms)\nℹ tests 1\nℹ pass 0\nℹ fail 1";
    expect(fixture(1, folder, 'node --test test/api/')).toMatchObject({ outcome: 'UNVERIFIED', signature: 'node-test-folder' });
  });

  it('reads exit codes before output text', () => {
    // pytest's exit 5 decides whatever a plugin printed; a passing command is never made UNVERIFIED by text.
    expect(fixture(5, 'plugins: cov-5.0\nsomething about 1 failed earlier', 'python3 -m pytest -q py')).toMatchObject({
      outcome: 'UNVERIFIED',
      signature: 'pytest-no-tests',
    });
    expect(fixture(5, 'FAILED (errors=1)', 'make check')).toMatchObject({ outcome: 'RED', exit_code: 5 });
    expect(fixture(0, 'npm error Missing script: "lint"\n# tests 3\n# pass 3\n# fail 0')).toMatchObject({ outcome: 'green', tests: 3 });
    expect(fixture(127, '# tests 2\n# fail 1\nsh: 1: tsx: not found')).toMatchObject({
      outcome: 'UNVERIFIED',
      reason: 'could not run: `tsx` is not installed or not on PATH (exit 127)',
    });
  });

  it('names every toolchain of the table, each as a missing check or a missing tool', () => {
    const tools = new Set(CHECK_SIGNATURES.map((s) => s.tool));
    for (const tool of ['node:test', 'npm', 'vitest', 'jest', 'pytest', 'unittest', 'go', 'cargo', 'mvn', 'gradle', 'make', 'sh'])
      expect(tools, tool).toContain(tool);
    expect(new Set(CHECK_SIGNATURES.map((s) => s.id)).size).toBe(CHECK_SIGNATURES.length);
  });
});
