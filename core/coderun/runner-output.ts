/**
 * Reading test runners' output the way the runners (and CI test summaries) read it: how many tests
 * ran and failed, which tests failed with which assertion, and a normal form of a line with
 * everything that changes between two runs of the same defect taken out (durations, timestamps,
 * temp paths, ports, addresses, ANSI codes, counts). Gates classify with the tally; tickets
 * fingerprint with the failures. Pure functions over text (and the name of the OS temp folder).
 */
import os from 'node:os';
import { escapeRegExp } from '../lib/regexp.js';

/** What the output says about the tests. `null`: the output does not say. */
export interface Tally {
  /** Tests that ran (passed + failed), as the runner counts them. */
  ran: number | null;
  failed: number | null;
}

export interface Failure {
  /** The failing test as the runner names it: file, suite and test name, without line numbers. */
  id: string;
  /** The assertion or error that failed it (first lines, normalised). */
  message: string;
}

const ANSI = /\u001b\[[0-9;?]*[ -/]*[@-~]|\u001b\][^\u0007]*(?:\u0007|\u001b\\)/g;

export function stripAnsi(text: string): string {
  return text.replace(ANSI, '');
}

let ownTemp: { dir: string; pattern: RegExp } | undefined;

/**
 * A folder in this process's temp folder, which the tests Hangar runs inherit. Where TMPDIR moves it
 * (`/run/user/1000`, a CI's scratch folder, `npm test`'s own run folder) the patterns for /tmp and
 * macOS's /var/folders below would leave its random folder names in, and the same failure would
 * fingerprint differently at every run. Built again only when TMPDIR changes.
 */
function ownTempFolder(): RegExp {
  const dir = os.tmpdir();
  if (ownTemp?.dir !== dir) {
    ownTemp = { dir, pattern: new RegExp(`${escapeRegExp(dir)}/[^\\s/'"\`:)\\]]+`, 'g') };
  }
  return ownTemp.pattern;
}

/**
 * One line with what varies between two runs of the same failure replaced by a placeholder.
 * `counts`: also replace every remaining number (summary lines, fallback fingerprints); assertion
 * messages keep theirs ("expected 200, got 500" is the defect).
 */
export function normalizeLine(line: string, counts = false): string {
  let s = stripAnsi(line)
    // ISO timestamps and clock times.
    .replace(/\b\d{4}-\d{2}-\d{2}[T ]\d{2}:\d{2}(?::\d{2}(?:[.,]\d+)?)?(?:Z|[+-]\d{2}:?\d{2})?/g, '<time>')
    .replace(/\b\d{1,2}:\d{2}:\d{2}(?:[.,]\d+)?\b/g, '<time>')
    // Unix times in seconds or milliseconds (2017-2033): Date.now() in a message.
    .replace(/\b1[5-9]\d{8}(?:\d{3})?\b/g, '<time>')
    // Temp folders (TMPDIR's, Linux's, macOS's) with their random names; a run's worktree folder.
    .replace(ownTempFolder(), '<tmp>')
    .replace(/(?:\/private)?\/var\/folders\/[^\s/]+\/[^\s/]+\/T\/[^\s/'"`:)\]]+/g, '<tmp>')
    .replace(/\/(?:var\/)?tmp\/[^\s/'"`:)\]]+/g, '<tmp>')
    .replace(/\/\.hangar\/worktrees\/[^\s/'"`:)\]]+/g, '/<worktree>')
    // pytest numbers its base temp folder per session (pytest-of-<user>/pytest-7/…).
    .replace(/\bpytest-\d+\b/g, 'pytest-#')
    // UUIDs, memory addresses and long hex ids (object reprs, pointers, build hashes).
    .replace(/\b[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}\b/gi, '<uuid>')
    .replace(/\b0x[0-9a-f]+\b/gi, '0x<addr>')
    .replace(/\b(?=[0-9a-f]*\d)(?=[0-9a-f]*[a-f])[0-9a-f]{12,}\b/gi, '<hex>')
    // Line and column numbers of source locations (a fix moves them; the failure is the same).
    // Before hosts: "a.mjs:12" is a file and a line, and a host's port goes either way.
    .replace(/(\.[a-z][a-z0-9]{0,5}):\d+(?::\d+)?\b/gi, '$1')
    // Hosts with ports: IPv4, IPv6 in brackets, names.
    .replace(/\b\d{1,3}(?:\.\d{1,3}){3}(?::\d{1,5})?\b/g, '<addr>')
    .replace(/\[[0-9a-f:]*:[0-9a-f:]*\](?::\d{1,5})?/gi, '<addr>')
    .replace(/\b(localhost|[a-z][\w-]*(?:\.[\w-]+)+):\d{2,5}\b/gi, '$1:<port>')
    .replace(/\bport\s+\d{2,5}\b/gi, 'port <port>')
    .replace(/\bpid[ :=]+\d+\b/gi, 'pid <pid>')
    .replace(/\bline \d+\b/gi, 'line <n>')
    // Durations: "12ms", "(0.76s)", "in 1.2 seconds", "duration_ms: 3.2", go's "(0.00s)".
    .replace(/\bduration_ms:?\s*[\d.]+/gi, 'duration_ms <dur>')
    .replace(/\b\d+(?:\.\d+)?\s?(?:ns|µs|us|ms|s|sec|secs|seconds?|m|min|minutes?)\b/gi, '<dur>')
    // Counts in summary lines: "3 passed", "1 failed", "Ran 5 tests", "# tests 4".
    .replace(
      /\b\d+(\s+(?:passed|failed|failing|passing|errors?|skipped|pending|todo|tests?|warnings?|xfailed|xpassed|deselected|total|suites?|cancelled)\b)/gi,
      '#$1',
    )
    .replace(/^([#ℹ]\s*(?:tests|suites|pass|fail|cancelled|skipped|todo))\s+\d+/i, '$1 #')
    .replace(/\b(Ran|running)\s+\d+\b/g, '$1 #');
  if (counts) s = s.replace(/\d+/g, '#');
  return s.replace(/\s+/g, ' ').trim();
}

const sum = (values: number[]): number | null => (values.length ? values.reduce((a, b) => a + b, 0) : null);
const all = (text: string, re: RegExp): RegExpExecArray[] => [
  ...text.matchAll(new RegExp(re.source, re.flags.includes('g') ? re.flags : re.flags + 'g')),
];

/**
 * Tests that ran and failed, from the summaries of node:test (TAP and spec), vitest, jest, mocha,
 * pytest, unittest, go test, cargo and Maven. A command running several runners (`a && b`) or one
 * runner printing several summaries (cargo's test binaries, node's processes) is summed.
 */
export function tally(raw: string): Tally {
  const text = stripAnsi(raw);
  const ran: number[] = [];
  const failed: number[] = [];
  const push = (r: number | null, f: number | null) => {
    if (r !== null) ran.push(r);
    if (f !== null) failed.push(f);
  };
  // node --test: "# tests 3" (TAP) or "ℹ tests 3" (spec).
  const nodeTests = all(text, /^[#ℹ]\s*tests\s+(\d+)\s*$/m);
  const nodeFails = all(text, /^[#ℹ]\s*fail\s+(\d+)\s*$/m);
  nodeTests.forEach((m, i) => push(Number(m[1]), nodeFails[i] ? Number(nodeFails[i][1]) : 0));
  // vitest: "Tests  1 failed | 2 passed (3)", "Test Files  1 failed (1)" with "Tests  no tests".
  for (const m of all(text, /^\s*Tests\s+(?:(\d+)\s+failed\s*\|?\s*)?(?:\d+\s+\w+\s*\|?\s*)*\((\d+)\)/m))
    push(Number(m[2]), Number(m[1] ?? 0));
  for (const m of all(text, /^\s*Test Files\s+(\d+)\s+failed/m)) push(null, Number(m[1]));
  // jest: "Tests:       1 failed, 9 passed, 10 total", "Test Suites: 1 failed, 1 total".
  for (const m of all(text, /^Tests:\s+(?:(\d+)\s+failed,\s*)?.*?(\d+)\s+total/m)) push(Number(m[2]), Number(m[1] ?? 0));
  for (const m of all(text, /^Test Suites:\s+(\d+)\s+failed/m)) push(null, Number(m[1]));
  // mocha: "5 passing", "1 failing".
  const passing = all(text, /^\s*(\d+)\s+passing\b/m);
  const failing = all(text, /^\s*(\d+)\s+failing\b/m);
  passing.forEach((m, i) => push(Number(m[1]) + Number(failing[i]?.[1] ?? 0), Number(failing[i]?.[1] ?? 0)));
  // pytest: "==== 1 failed, 2 passed in 0.12s ====", "-q": "1 failed, 2 passed in 0.12s", "no tests ran in 0.8s".
  for (const m of all(
    text,
    /^(?:=+ )?((?:\d+ (?:failed|passed|skipped|errors?|warnings?|xfailed|xpassed|deselected|rerun)(?:, )?)+) in [\d.]+s\b/m,
  )) {
    const n = (word: string) => Number(new RegExp(`(\\d+) ${word}`).exec(m[1]!)?.[1] ?? 0);
    const bad = n('failed') + n('errors?');
    push(n('passed') + bad + n('xfailed') + n('xpassed'), bad);
  }
  if (/^(?:=+ )?no tests ran in [\d.]+s/m.test(text) || /^collected 0 items\b/m.test(text)) push(0, 0);
  // unittest: "Ran 3 tests in 0.001s" then "FAILED (failures=1, errors=1)".
  for (const m of all(text, /^Ran (\d+) tests? in /m)) {
    const bad = /^FAILED \(([^)]*)\)/m.exec(text.slice(m.index));
    push(Number(m[1]), bad ? Number(/failures=(\d+)/.exec(bad[1]!)?.[1] ?? 0) + Number(/errors=(\d+)/.exec(bad[1]!)?.[1] ?? 0) : 0);
  }
  // cargo: one "test result:" per test binary (unit, integration, doc-tests).
  for (const m of all(text, /^test result: \w+\. (\d+) passed; (\d+) failed/m)) push(Number(m[1]) + Number(m[2]), Number(m[2]));
  // Maven surefire: the aggregate "Tests run: 5, Failures: 1, Errors: 0" (per-class lines carry "Time elapsed").
  const mvn = all(text, /Tests run: (\d+), Failures: (\d+), Errors: (\d+), Skipped: \d+(?!, Time elapsed)/).at(-1);
  if (mvn) push(Number(mvn[1]), Number(mvn[2]) + Number(mvn[3]));
  else if (/^\[INFO\] No tests to run\./m.test(text)) push(0, 0);
  // go test: "--- PASS/FAIL" with -v; without it only packages: "ok  pkg 0.01s", "FAIL pkg", "? pkg [no test files]".
  const goPass = all(text, /^\s*--- PASS: /m).length;
  const goFail = all(text, /^\s*--- FAIL: /m).length;
  if (goPass + goFail > 0) push(goPass + goFail, goFail);
  else {
    const okPkgs = all(text, /^ok\s+\S+\s+(?:\(cached\)|[\d.]+s)(?!.*\[no tests to run\])/m).length;
    const failPkgs = all(text, /^FAIL\s+\S+\s+(?:[\d.]+s|\[(?:build|setup) failed\])/m).length;
    const none = all(text, /^(?:\?\s+\S+\s+\[no test files\]|ok\s+\S+\s+[\d.]+s\s+\[no tests to run\])/m).length;
    // Without -v go names no count: a passing package proves at least one test ran.
    if (okPkgs + failPkgs > 0) push(okPkgs + failPkgs, failPkgs);
    else if (none > 0) push(0, 0);
  }
  // JUnit XML (node --test-reporter=junit, jest-junit, pytest --junitxml, surefire): producers
  // disagree on the suite attributes (node writes none), so the test cases themselves are counted.
  const cases = junitCases(text);
  if (cases.length) {
    const run = cases.filter((c) => !/<skipped\b/.test(c.body));
    push(run.length, run.filter((c) => c.problem).length);
  }
  if (!ran.length && !failed.length) {
    // Vitest and jest with nothing to run; generic "N tests passed/ok".
    if (/No test files found, exiting with code 0|No tests found, exiting with code 0/.test(text)) push(0, 0);
    const generic = all(text, /\b(\d+)\s+tests?\s+(?:passed|ok|run)\b/i);
    if (generic.length) push(Math.max(...generic.map((m) => Number(m[1]))), null);
  }
  return { ran: sum(ran), failed: sum(failed) };
}

/** Lines of a failure message up to the stack trace or code frame, normalised, at most `max`. */
function messageFrom(lines: string[], max = 6): string {
  const out: string[] = [];
  for (const raw of lines) {
    const l = stripAnsi(raw).trim();
    if (!l) continue;
    if (
      /^at\s|^❯\s|^>?\s*\d+\s*\||^\^+$|^(?:stack|code|location|failureType|exitCode|signal|type|name|operator|generatedMessage|actual|expected|duration_ms):/.test(
        l,
      )
    ) {
      if (out.length) break;
      continue;
    }
    out.push(normalizeLine(l.replace(/^E\s+/, '')));
    if (out.length >= max) break;
  }
  return out.join(' | ');
}

/** node:test and other TAP producers: `not ok` lines with their YAML blocks (leaf failures only). */
function tapFailures(lines: string[]): Failure[] {
  const out: Failure[] = [];
  for (let i = 0; i < lines.length; i++) {
    const m = /^(\s*)not ok \d+ - (.+?)(\s+#\s*(?:TODO|SKIP)\b.*)?$/.exec(lines[i]!);
    if (!m || m[3]) continue;
    const yaml: string[] = [];
    if (lines[i + 1]?.trim() === '---') {
      for (let j = i + 2; j < lines.length && lines[j]!.trim() !== '...'; j++) yaml.push(lines[j]!);
    }
    const block = yaml.join('\n');
    if (/failureType:\s*'subtestsFailed'/.test(block)) continue;
    const location = /location:\s*'([^']+)'/.exec(block)?.[1];
    let message = '';
    const err = yaml.findIndex((l) => /^\s*error:/.test(l));
    if (err >= 0) {
      const inline = /^\s*error:\s*(?:\|-?|>-?)?\s*(.*)$/.exec(yaml[err]!)![1]!.replace(/^'(.*)'$/, '$1');
      message = inline ? normalizeLine(inline) : messageFrom(yaml.slice(err + 1));
    }
    const name = normalizeLine(m[2]!);
    out.push({ id: location ? `${normalizeLine(location)} > ${name}` : name, message });
  }
  return out;
}

/** node:test's spec reporter: the "✖ failing tests:" section ("test at <loc>", "✖ <name> (<dur>)", message). */
function nodeSpecFailures(lines: string[]): Failure[] {
  const start = lines.findIndex((l) => /^✖ failing tests:/.test(stripAnsi(l).trim()));
  if (start < 0) return [];
  const out: Failure[] = [];
  let location = '';
  for (let i = start + 1; i < lines.length; i++) {
    const l = stripAnsi(lines[i]!);
    const at = /^test at (.+)$/.exec(l.trim());
    if (at) {
      location = normalizeLine(at[1]!);
      continue;
    }
    const fail = /^(\s*)✖ (.+?)(?: \([\d.]+m?s\))?$/.exec(l);
    if (fail) {
      const rest: string[] = [];
      for (let j = i + 1; j < lines.length && !/^\s*(✖ |test at )/.test(stripAnsi(lines[j]!)); j++) rest.push(lines[j]!);
      out.push({ id: location ? `${location} > ${normalizeLine(fail[2]!)}` : normalizeLine(fail[2]!), message: messageFrom(rest) });
    }
  }
  return out.filter((f) => !/subtests? failed/.test(f.message));
}

/** pytest's short summary ("FAILED path::test - message", "ERROR path - message"), else its section headers. */
function pytestFailures(lines: string[]): Failure[] {
  const out: Failure[] = [];
  for (const l of lines) {
    const m = /^(FAILED|ERROR) (\S+?)(?: - (.*))?$/.exec(stripAnsi(l).trim());
    if (m && (m[2]!.includes('::') || /\.py\b/.test(m[2]!)))
      out.push({ id: `${m[1]} ${normalizeLine(m[2]!)}`, message: normalizeLine((m[3] ?? '').replace(/\.\.\.$/, '')) });
  }
  if (out.length) return out;
  for (let i = 0; i < lines.length; i++) {
    const h = /^_{3,} (.+?) _{3,}$/.exec(stripAnsi(lines[i]!).trim());
    if (!h) continue;
    const e = lines.slice(i + 1).find((l) => /^E\s/.test(l));
    out.push({ id: normalizeLine(h[1]!), message: e ? normalizeLine(e.replace(/^E\s+/, '')) : '' });
  }
  return out;
}

/** go test: "--- FAIL: TestName (0.00s)" and the first line it logged; panics. */
function goFailures(lines: string[]): Failure[] {
  const out: Failure[] = [];
  for (let i = 0; i < lines.length; i++) {
    const m = /^\s*--- FAIL: (\S+)/.exec(lines[i]!);
    if (!m) continue;
    const next = lines.slice(i + 1).find((l) => l.trim() && !/^\s*--- /.test(l));
    out.push({ id: m[1]!, message: next && /^\s{4,}/.test(next) ? normalizeLine(next.replace(/^\s*\S+\.go:\d+: /, '')) : '' });
  }
  const panic = lines.find((l) => /^panic: /.test(l));
  if (panic) out.push({ id: 'panic', message: normalizeLine(panic) });
  return out;
}

/** cargo test: "thread 'name' panicked at file:line:col:" and the message after it. */
function cargoFailures(lines: string[]): Failure[] {
  const out: Failure[] = [];
  for (let i = 0; i < lines.length; i++) {
    const m = /^thread '([^']+)' panicked at (?:'(.*)', )?\S+?(?::\d+:\d+)?:?$/.exec(stripAnsi(lines[i]!).trim());
    if (!m) continue;
    const message = m[2]
      ? normalizeLine(m[2])
      : messageFrom(
          lines.slice(i + 1).filter((l) => !/^note: /.test(l)),
          3,
        );
    out.push({ id: m[1]!, message });
  }
  return out;
}

/** jest ("● Suite › test" then the message) and vitest ("FAIL  file > suite > test" then the error). */
function jsRunnerFailures(lines: string[]): Failure[] {
  const out: Failure[] = [];
  let suiteFile = '';
  for (let i = 0; i < lines.length; i++) {
    const l = stripAnsi(lines[i]!);
    const file = /^\s*FAIL\s+(\S+)\s*$/.exec(l);
    if (file) suiteFile = file[1]!;
    const jest = /^\s*● (.+)$/.exec(l);
    if (jest && !/^Console$/.test(jest[1]!.trim())) {
      const name = jest[1]!.trim() === 'Test suite failed to run' ? `${suiteFile} > suite failed to run` : normalizeLine(jest[1]!);
      out.push({ id: name, message: messageFrom(lines.slice(i + 1)) });
      continue;
    }
    const vitest = /^\s*FAIL\s+(\S+ > .+?)\s*$/.exec(l);
    if (vitest) out.push({ id: normalizeLine(vitest[1]!), message: messageFrom(lines.slice(i + 1), 1) });
  }
  // vitest prints each failure twice (per-file list and the "Failed Tests" section).
  return out;
}

/** unittest: "FAIL: test_x (module.Class.test_x)" and the last line of its traceback. */
function unittestFailures(lines: string[]): Failure[] {
  const out: Failure[] = [];
  for (let i = 0; i < lines.length; i++) {
    const m = /^(FAIL|ERROR): (.+)$/.exec(lines[i]!);
    if (!m || !/\(.*\)/.test(m[2]!)) continue;
    let last = '';
    for (let j = i + 1; (j < lines.length && !/^(?:=+|-{10,}\s*$)/.test(lines[j]!)) || j === i + 1; j++) {
      if (lines[j]!.trim() && !/^-{10,}/.test(lines[j]!)) last = lines[j]!;
    }
    out.push({ id: `${m[1]} ${normalizeLine(m[2]!)}`, message: normalizeLine(last) });
  }
  return out;
}

const XML_ENTITIES: Record<string, string> = { lt: '<', gt: '>', amp: '&', quot: '"', apos: "'" };
const unescapeXml = (text: string) =>
  text.replace(/&(lt|gt|amp|quot|apos|#\d+|#x[0-9a-f]+);/gi, (_, e: string) =>
    e.startsWith('#x') || e.startsWith('#X')
      ? String.fromCodePoint(parseInt(e.slice(2), 16))
      : e.startsWith('#')
        ? String.fromCodePoint(Number(e.slice(1)))
        : XML_ENTITIES[e.toLowerCase()]!,
  );

interface JunitCase {
  attrs: string;
  body: string;
  problem: RegExpExecArray | null;
}

/** Every <testcase> of JUnit XML in the text, self-closing or not (attribute values may hold `>`). */
function junitCases(text: string): JunitCase[] {
  const cases: JunitCase[] = [];
  for (const m of text.matchAll(/<testcase\b((?:[^>"]|"[^"]*")*?)(?:\/>|>([\s\S]*?)<\/testcase>)/g)) {
    const body = m[2] ?? '';
    cases.push({ attrs: m[1]!, body, problem: /<(failure|error)\b((?:[^>"]|"[^"]*")*?)(?:\/>|>([\s\S]*?)<\/\1>)/.exec(body) });
  }
  return cases;
}

/** JUnit XML: each <testcase> holding a <failure> or <error>, by classname and name, with its message. */
function junitFailures(text: string): Failure[] {
  const attr = (source: string, name: string) => unescapeXml(new RegExp(`\\b${name}="([^"]*)"`).exec(source)?.[1] ?? '');
  return junitCases(text)
    .filter((c) => c.problem)
    .map((c) => {
      const id = [attr(c.attrs, 'classname'), attr(c.attrs, 'name')].filter(Boolean).join(' > ');
      const message = attr(c.problem![2]!, 'message') || unescapeXml(c.problem![3] ?? '');
      return { id: normalizeLine(id), message: messageFrom(message.split('\n')) };
    });
}

/**
 * The failing tests an output names, each once, in a stable order (a parallel runner may print
 * them in any order). Empty when the output names none (a crash, a build error, a custom script).
 */
export function failures(raw: string): Failure[] {
  const lines = stripAnsi(raw).split('\n');
  const found = [
    ...junitFailures(stripAnsi(raw)),
    ...tapFailures(lines),
    ...nodeSpecFailures(lines),
    ...pytestFailures(lines),
    ...goFailures(lines),
    ...cargoFailures(lines),
    ...jsRunnerFailures(lines),
    ...unittestFailures(lines),
  ];
  const seen = new Map<string, Failure>();
  for (const f of found) {
    const key = `${f.id}\0${f.message}`;
    if (!seen.has(key)) seen.set(key, f);
  }
  return [...seen.values()].sort((a, b) => (a.id === b.id ? a.message.localeCompare(b.message) : a.id.localeCompare(b.id)));
}
