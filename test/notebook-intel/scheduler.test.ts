import { mkdir, rm, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { type Clock, ScheduleService } from '../../core/notebook/intel/scheduler.js';
import { NotebookService } from '../../core/notebook/service.js';
import { LowdbStore } from '../../core/storage/lowdb-store.js';
import { eventually, makeWorkspace } from '../support/server.js';

/** Time that moves only when the test says so; due timers fire in order. */
class ManualClock implements Clock {
  #timers: Array<{ at: number; fn: () => void }> = [];
  constructor(private t: number) {}
  now(): number {
    return this.t;
  }
  setTimer(delayMs: number, fn: () => void): () => void {
    const timer = { at: this.t + delayMs, fn };
    this.#timers.push(timer);
    return () => {
      this.#timers = this.#timers.filter((t) => t !== timer);
    };
  }
  advanceTo(iso: string): void {
    this.t = Date.parse(iso);
    const due = this.#timers.filter((t) => t.at <= this.t).sort((a, b) => a.at - b.at);
    this.#timers = this.#timers.filter((t) => t.at > this.t);
    for (const timer of due) timer.fn();
  }
  get pending(): number {
    return this.#timers.length;
  }
}

const nbTs = (...cells: string[]) => cells.map((source, i) => `// %% [code] id=cell${i}\n${source}\n`).join('\n');

let root = '';
let clock: ManualClock;
let services: ScheduleService[] = [];

async function service(): Promise<ScheduleService> {
  const s = new ScheduleService(new LowdbStore(join(root, '.hangar', 'data')), new NotebookService({ root }), { clock });
  services.push(s);
  await s.start();
  return s;
}

beforeEach(async () => {
  root = await makeWorkspace();
  await mkdir(join(root, 'notebooks'));
  await writeFile(join(root, 'notebooks', 'report.nb.ts'), nbTs('const answer = 6 * 7;', 'answer'));
  await writeFile(join(root, 'notebooks', 'broken.nb.ts'), nbTs("throw new Error('source data missing');"));
  await writeFile(join(root, 'notebooks', 'slow.nb.ts'), nbTs('await new Promise((r) => setTimeout(r, 1500));\nconst done = true;'));
  // 08:30 in Oslo (CET, UTC+1) on the Saturday before summer time starts.
  clock = new ManualClock(Date.parse('2026-03-28T07:30:00Z'));
  services = [];
});

afterEach(async () => {
  await Promise.all(services.map((s) => s.close()));
  await rm(root, { recursive: true, force: true });
});

describe('scheduled notebook runs', () => {
  it('reads the cron expression in the given time zone, across a DST change', async () => {
    const s = await service();
    const oslo = await s.create('report.nb.ts', { cron: '0 9 * * *', timezone: 'Europe/Oslo', name: 'morning', cell_timeout_ms: 0 });
    expect(oslo.next_run_at).toBe('2026-03-28T08:00:00.000Z');
    const ny = await s.create('report.nb.ts', { cron: '0 9 * * *', timezone: 'America/New_York', name: '', cell_timeout_ms: 0 });
    expect(ny.next_run_at).toBe('2026-03-28T13:00:00.000Z');
    clock.advanceTo('2026-03-28T08:00:00Z');
    // Summer time starts on 29 March in Oslo: 09:00 local is 07:00 UTC from then on.
    expect((await s.get(oslo.id)).next_run_at).toBe('2026-03-29T07:00:00.000Z');
  });

  it('runs the notebook headlessly when due and records status, duration and outputs', async () => {
    const s = await service();
    const schedule = await s.create('report.nb.ts', { cron: '0 9 * * *', timezone: 'Europe/Oslo', name: '', cell_timeout_ms: 0 });
    expect(await s.runs(schedule.id)).toEqual([]);
    clock.advanceTo('2026-03-28T07:59:59Z');
    expect(await s.runs(schedule.id)).toEqual([]);
    clock.advanceTo('2026-03-28T08:00:00Z');
    const [run] = await eventually(async () => {
      const runs = await s.runs(schedule.id);
      return runs.length ? runs : undefined;
    }, 20_000);
    expect(run).toMatchObject({
      status: 'success',
      error: null,
      scheduled_for: '2026-03-28T08:00:00.000Z',
      started_at: '2026-03-28T08:00:00.000Z',
      notebook: 'report.nb.ts',
    });
    expect(run.duration_ms).toBeGreaterThan(0);
    expect(run.cells[1].outputs[0]).toMatchObject({ output_type: 'execute_result', data: { 'text/plain': '42' } });
    expect(await s.get(schedule.id)).toMatchObject({ last_status: 'success', last_run_at: '2026-03-28T08:00:00.000Z' });
  }, 30_000);

  it('records a failing run with its error and keeps the schedule going', async () => {
    const s = await service();
    const schedule = await s.create('broken.nb.ts', { cron: '0 * * * *', timezone: 'UTC', name: '', cell_timeout_ms: 0 });
    clock.advanceTo('2026-03-28T08:00:00Z');
    // Finished, not just recorded: a tick while the first run still holds its notebook is a skip.
    await eventually(async () => (await s.runs(schedule.id)).length === 1 && !(await s.get(schedule.id)).running, 20_000);
    clock.advanceTo('2026-03-28T09:00:00Z');
    const runs = await eventually(async () => {
      const list = await s.runs(schedule.id);
      return list.length === 2 ? list : undefined;
    }, 20_000);
    for (const run of runs) {
      expect(run.status).toBe('error');
      expect(run.error).toBe('cell cell0 failed: Error: source data missing');
    }
    expect(runs.map((r) => r.scheduled_for)).toEqual(['2026-03-28T09:00:00.000Z', '2026-03-28T08:00:00.000Z']);
  }, 30_000);

  it('never overlaps runs of one notebook: a run due while the last one runs is recorded as skipped', async () => {
    const s = await service();
    const schedule = await s.create('slow.nb.ts', { cron: '* * * * *', timezone: 'UTC', name: '', cell_timeout_ms: 0 });
    clock.advanceTo('2026-03-28T07:31:00Z');
    await eventually(async () => (await s.get(schedule.id)).running, 10_000);
    clock.advanceTo('2026-03-28T07:32:00Z');
    const runs = await eventually(async () => {
      const list = await s.runs(schedule.id);
      return list.length === 2 && list.every((r) => r.status !== 'error') && list.some((r) => r.status === 'success') ? list : undefined;
    }, 20_000);
    expect(runs.map((r) => r.status).sort()).toEqual(['skipped', 'success']);
    expect(runs.find((r) => r.status === 'skipped')!.error).toMatch(/previous run of slow\.nb\.ts was still running/);
  }, 30_000);

  it('keeps schedules across a restart and fires them afterwards', async () => {
    const first = await service();
    const schedule = await first.create('report.nb.ts', { cron: '0 12 * * *', timezone: 'UTC', name: 'noon', cell_timeout_ms: 0 });
    await first.close();
    const second = await service();
    expect((await second.list()).map((x) => [x.id, x.name, x.cron])).toEqual([[schedule.id, 'noon', '0 12 * * *']]);
    clock.advanceTo('2026-03-28T12:00:00Z');
    const runs = await eventually(async () => {
      const list = await second.runs(schedule.id);
      return list.length ? list : undefined;
    }, 20_000);
    expect(runs[0].status).toBe('success');
  }, 30_000);

  it('pauses, resumes and deletes', async () => {
    const s = await service();
    const schedule = await s.create('report.nb.ts', { cron: '0 * * * *', timezone: 'UTC', name: '', cell_timeout_ms: 0 });
    const paused = await s.setPaused(schedule.id, true);
    expect(paused).toMatchObject({ paused: true, next_run_at: null });
    expect(clock.pending).toBe(0);
    clock.advanceTo('2026-03-28T08:00:00Z');
    expect(await s.runs(schedule.id)).toEqual([]);
    expect((await s.setPaused(schedule.id, false)).next_run_at).toBe('2026-03-28T09:00:00.000Z');
    expect(clock.pending).toBe(1);
    await s.delete(schedule.id);
    expect(clock.pending).toBe(0);
    await expect(s.get(schedule.id)).rejects.toMatchObject({ status: 404 });
  });

  it("refuses an invalid cron expression or time zone with the parser's reason", async () => {
    const s = await service();
    await expect(s.create('report.nb.ts', { cron: '61 * * * *', timezone: 'UTC', name: '', cell_timeout_ms: 0 })).rejects.toMatchObject({
      status: 422,
      message: expect.stringMatching(/^invalid cron expression "61 \* \* \* \*": .+/),
    });
    await expect(
      s.create('report.nb.ts', { cron: '0 * * * *', timezone: 'Mars/Olympus', name: '', cell_timeout_ms: 0 }),
    ).rejects.toMatchObject({
      status: 422,
      message: expect.stringMatching(/^invalid timezone "Mars\/Olympus": .+/),
    });
    await expect(s.create('nope.nb.ts', { cron: '0 * * * *', timezone: 'UTC', name: '', cell_timeout_ms: 0 })).rejects.toMatchObject({
      status: 404,
    });
  });
});
