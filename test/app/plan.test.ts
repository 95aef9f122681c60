import { describe, expect, it } from 'vitest';
import { planSubsystems, WiringError } from '../../core/app/plan.js';
import type { Subsystem } from '../../core/kernel/context.js';
import type { ServiceName } from '../../core/kernel/services.js';

/** Subsystems that only declare, so the plan is tested alone; names are services of the real map. */
const sub = (name: string, wiring: { provides?: string[]; depends?: string[]; uses?: string[] } = {}): Subsystem => ({
  name,
  provides: wiring.provides as ServiceName[] | undefined,
  depends: wiring.depends as ServiceName[] | undefined,
  uses: wiring.uses as ServiceName[] | undefined,
});
const names = (list: Subsystem[]) => list.map((s) => s.name);

describe('the set-up order computed from provides and depends', () => {
  it('sets a subsystem up after what it depends on, and otherwise keeps the list order', () => {
    const plan = planSubsystems([
      sub('control'),
      sub('pipelines', { provides: ['pipelines'], depends: ['tasks', 'agents'] }),
      sub('tasks', { provides: ['tasks'] }),
      sub('logs', { provides: ['invocations'] }),
      sub('agents', { provides: ['agents'], depends: ['tasks'] }),
    ]);
    expect(names(plan)).toEqual(['control', 'tasks', 'logs', 'agents', 'pipelines']);
  });

  it('orders after an optional dependency when it is present, and runs without it when it is not', () => {
    expect(names(planSubsystems([sub('plugins', { uses: ['invocations'] }), sub('logs', { provides: ['invocations'] })]))).toEqual([
      'logs',
      'plugins',
    ]);
    expect(names(planSubsystems([sub('plugins', { uses: ['invocations'] })]))).toEqual(['plugins']);
  });

  it('refuses a dependency nobody provides, naming both', () => {
    expect(() => planSubsystems([sub('pipelines', { depends: ['tasks'] })])).toThrow(
      new WiringError('pipelines depends on "tasks", which no subsystem provides'),
    );
  });

  it('accepts what the composition root provides itself', () => {
    expect(names(planSubsystems([sub('docs', { depends: ['openapi'] })], ['openapi']))).toEqual(['docs']);
  });

  it('refuses a service provided twice', () => {
    expect(() => planSubsystems([sub('a', { provides: ['tasks'] }), sub('b', { provides: ['tasks'] })])).toThrow(
      'service "tasks" is provided by both a and b',
    );
  });

  it('refuses a cycle, naming its members', () => {
    const cycle = () =>
      planSubsystems([
        sub('agents', { provides: ['agents'], depends: ['tasks'] }),
        sub('tasks', { provides: ['tasks'], depends: ['agents'] }),
        sub('ui'),
      ]);
    expect(cycle).toThrow(WiringError);
    expect(cycle).toThrow(/cycle: agents → tasks|cycle: agents, tasks/);
  });

  it('the real list plans without an error', async () => {
    const { SUBSYSTEMS } = await import('../../core/app/subsystems.js');
    const plan = planSubsystems(SUBSYSTEMS, ['openapi', 'rateLimiter']);
    expect(plan).toHaveLength(SUBSYSTEMS.length);
    const position = (name: string) => plan.findIndex((s) => s.name === name);
    for (const subsystem of plan) {
      for (const needed of subsystem.depends ?? []) {
        const provider = plan.find((s) => s.provides?.includes(needed));
        if (provider) expect(position(provider.name), `${subsystem.name} after ${provider.name}`).toBeLessThan(position(subsystem.name));
      }
    }
  });
});
