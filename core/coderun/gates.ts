/**
 * Team gates: a team's acceptance command, run once after its lane finishes, gives green, RED or
 * UNVERIFIED (spec 3, "Team gate"). Green needs proof that tests ran: a passing command whose
 * output shows no test count at all — or a count of zero — is UNVERIFIED, never green.
 */
import { failureTail } from './board.js';
import { runCommand, type CommandResult } from './command.js';
import type { GateResult } from './schemas.js';

/** Test counts in the summaries of common runners: node:test, vitest, jest, mocha, pytest, go, cargo. */
const COUNT_PATTERNS: RegExp[] = [
  /^[#ℹ]\s*tests\s+(\d+)/im, // node --test (TAP and spec reporters)
  /Tests\s+(?:\d+\s+failed\s*\|\s*)?(\d+)\s+passed/i, // vitest
  /Tests:\s+(?:\d+\s+failed,\s*)?(\d+)\s+passed/i, // jest
  /(\d+)\s+passing\b/i, // mocha
  /=+.*?\b(\d+)\s+passed/i, // pytest
  /test result: \w+\. (\d+) passed/i, // cargo
  /\bRan (\d+) tests?\b/i, // python unittest
  /\b(\d+)\s+tests?\s+(?:passed|ok|run)\b/i,
];
const NO_TESTS = /no test files|no tests (?:ran|found|to run)|collected 0 items|\b0 tests\b|\bRan 0 tests\b|# tests 0\b|\?\s+\S+\s+\[no test files\]/i;
const MISSING_TOOL = /command not found|not found: |Missing script|ENOENT|No such file or directory|Could not find '|Cannot find module|is not recognized as an internal or external command/i;

export function testCount(output: string): number | null {
  if (NO_TESTS.test(output)) return 0;
  let best: number | null = null;
  for (const pattern of COUNT_PATTERNS) {
    const m = pattern.exec(output);
    if (m) best = Math.max(best ?? 0, Number(m[1]));
  }
  if (best === null && /^ok\s+\S+\s+[\d.]+s$/m.test(output)) best = 1; // go test prints no count
  return best;
}

/** Classify a finished command run into a gate outcome with the reason a person reads. */
export function classify(team: string, result: CommandResult): GateResult {
  const base = { team, command: result.command, exit_code: result.exit_code, output_tail: failureTail(result.output), ms: result.ms };
  const tests = testCount(result.output);
  if (result.spawn_error) return { ...base, outcome: 'UNVERIFIED', tests: null, reason: `could not run: ${result.spawn_error}` };
  if (result.timed_out) return { ...base, outcome: 'RED', tests, reason: 'killed at its timeout' };
  if (result.exit_code === 127 || (result.exit_code !== 0 && MISSING_TOOL.test(result.output) && !tests)) {
    return { ...base, outcome: 'UNVERIFIED', tests: null, reason: 'could not run: toolchain or script missing' };
  }
  if (result.exit_code !== 0) return { ...base, outcome: 'RED', tests, reason: `failed with exit code ${result.exit_code}` };
  if (tests === 0) return { ...base, outcome: 'UNVERIFIED', tests, reason: 'passed but ran no tests' };
  if (tests === null) return { ...base, outcome: 'UNVERIFIED', tests, reason: 'passed but its output shows no tests ran' };
  return { ...base, outcome: 'green', tests, reason: `passed, ${tests} test${tests === 1 ? '' : 's'}` };
}

export async function runGate(team: string, command: string, cwd: string, timeoutMs: number, signal?: AbortSignal): Promise<GateResult> {
  if (!command.trim()) {
    return { team, command: '', outcome: 'UNVERIFIED', exit_code: null, tests: null, reason: 'the team defines no acceptance command', output_tail: '', ms: 0 };
  }
  return classify(team, await runCommand(command, { cwd, timeoutMs, signal }));
}
