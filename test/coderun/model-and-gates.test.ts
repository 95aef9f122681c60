import { describe, expect, it } from 'vitest';
import { classify, runGate, testCount } from '../../core/coderun/gates.js';
import { ModelGate } from '../../core/coderun/model.js';
import { tearDownAfterEach } from './support/fixture.js';
import { type ScriptedModel, startScriptedModel } from './support/scripted-model.js';

const endpoint = (baseUrl: string) => ({ baseUrl, model: 'default-model', timeoutMs: 5000, retries: 0 });
const result = (exit: number | null, output: string, extra: Record<string, unknown> = {}) => ({
  command: 'npm test',
  exit_code: exit,
  output,
  timed_out: false,
  cancelled: false,
  spawn_error: null,
  ms: 5,
  ...extra,
});

let model: ScriptedModel | undefined;
tearDownAfterEach(() => [model]);

describe('model gate', () => {
  it('bounds every model call of a run by max_parallel', async () => {
    model = await startScriptedModel(() => ({ content: 'ok', delayMs: 80 }));
    const gate = new ModelGate(endpoint(model.baseUrl), { maxParallel: 2, modelRoles: {}, escalation: [] });
    await Promise.all(Array.from({ length: 6 }, () => gate.chat({ role: 'developer', messages: [{ role: 'user', content: 'hi' }] })));
    expect(model.requests).toHaveLength(6);
    expect(model.peakConcurrency).toBe(2);
    expect(gate.slots.peak).toBe(2);
  });

  it('picks the model: agent pin, then escalation rung, then model_roles, then the default', async () => {
    model = await startScriptedModel(() => ({ content: 'ok' }));
    const gate = new ModelGate(endpoint(model.baseUrl), {
      maxParallel: 1,
      modelRoles: { reviewer: 'review-model' },
      escalation: ['medium', 'large'],
    });
    expect(gate.modelFor({ role: 'developer' })).toBe('default-model');
    expect(gate.modelFor({ role: 'reviewer' })).toBe('review-model');
    expect(gate.modelFor({ role: 'reviewer', rung: 1 })).toBe('medium');
    expect(gate.modelFor({ role: 'developer', rung: 5 })).toBe('large');
    expect(gate.modelFor({ role: 'developer', rung: 2, model: 'pinned' })).toBe('pinned');
    await gate.chat({ role: 'reviewer', messages: [{ role: 'user', content: 'x' }] });
    expect(model.requests[0]!.body.model).toBe('review-model');
  });

  it('passes tool calls through in both directions', async () => {
    model = await startScriptedModel((c) =>
      c.turn === 0 ? { tool_calls: [{ name: 'read_file', arguments: { path: 'a' } }] } : { content: c.toolResults.join('|') },
    );
    const gate = new ModelGate(endpoint(model.baseUrl), { maxParallel: 1, modelRoles: {}, escalation: [] });
    const first = await gate.chat({
      role: 'developer',
      messages: [{ role: 'user', content: 'go' }],
      tools: [{ name: 'read_file', description: 'read', parameters: { type: 'object' } }],
    });
    expect(first.tool_calls).toEqual([{ id: expect.any(String), name: 'read_file', arguments: '{"path":"a"}' }]);
    const second = await gate.chat({
      role: 'developer',
      messages: [
        { role: 'user', content: 'go' },
        { role: 'assistant', content: null, tool_calls: first.tool_calls },
        { role: 'tool', tool_call_id: first.tool_calls[0]!.id, content: 'file text' },
      ],
    });
    expect(second.content).toBe('file text');
  });
});

describe('team gate outcomes', () => {
  it('is green only when the command passed and tests ran', () => {
    expect(classify('api', result(0, '# tests 3\n# pass 3\n# fail 0'))).toMatchObject({
      outcome: 'green',
      tests: 3,
      reason: 'passed, 3 tests',
    });
    expect(classify('api', result(0, ' Test Files  2 passed (2)\n      Tests  14 passed (14)'))).toMatchObject({
      outcome: 'green',
      tests: 14,
    });
    expect(classify('api', result(0, 'Tests:       10 passed, 10 total'))).toMatchObject({ outcome: 'green', tests: 10 });
    expect(classify('api', result(0, '  5 passing (20ms)'))).toMatchObject({ outcome: 'green', tests: 5 });
    expect(classify('api', result(0, '==== 7 passed in 0.12s ===='))).toMatchObject({ outcome: 'green', tests: 7 });
  });

  it('is UNVERIFIED when a passing command ran no tests or shows none', () => {
    expect(classify('api', result(0, '# tests 0\n# pass 0'))).toMatchObject({ outcome: 'UNVERIFIED', reason: 'passed but ran no tests' });
    expect(classify('api', result(0, 'No test files found, exiting with code 0'))).toMatchObject({ outcome: 'UNVERIFIED', tests: 0 });
    expect(classify('api', result(0, 'all good'))).toMatchObject({
      outcome: 'UNVERIFIED',
      reason: 'passed but its output shows no tests ran',
    });
    expect(testCount('collected 0 items')).toBe(0);
  });

  it('is UNVERIFIED when the command cannot run, RED when it ran and failed or hung', async () => {
    expect(classify('api', result(127, 'sh: 1: pytest: not found'))).toMatchObject({
      outcome: 'UNVERIFIED',
      reason: 'could not run: `pytest` is not installed or not on PATH (exit 127)',
    });
    expect(classify('api', result(1, 'npm ERR! Missing script: "test"'))).toMatchObject({
      outcome: 'UNVERIFIED',
      reason: 'no such check: package.json has no "test" script',
    });
    expect(classify('api', result(1, 'not ok 1 - adds\n# tests 1\n# fail 1'))).toMatchObject({
      outcome: 'RED',
      reason: 'failed with exit code 1',
      tests: 1,
    });
    expect(classify('api', result(null, '', { timed_out: true }))).toMatchObject({ outcome: 'RED', reason: 'killed at its timeout' });
    expect(await runGate('docs', '', process.cwd(), 1000)).toMatchObject({
      outcome: 'UNVERIFIED',
      reason: 'the team defines no acceptance command',
    });
    expect(await runGate('api', 'definitely-not-a-command-xyz', process.cwd(), 5000)).toMatchObject({
      outcome: 'UNVERIFIED',
      exit_code: 127,
    });
    expect(await runGate('api', 'exit 3', process.cwd(), 5000)).toMatchObject({ outcome: 'RED', exit_code: 3 });
  });
});
