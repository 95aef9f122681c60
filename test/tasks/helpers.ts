import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { SqliteStore } from '../../core/storage/sqlite-store.js';
import type { Task, TaskStatus } from '../../core/tasks/schemas.js';
import { TaskService, type TaskServiceOptions } from '../../core/tasks/service.js';

/** A fresh data folder per test; removed by the returned cleanup. */
export function tempDir(prefix = 'hangar-tasks-'): { dir: string; cleanup: () => void } {
  const dir = mkdtempSync(path.join(tmpdir(), prefix));
  return { dir, cleanup: () => rmSync(dir, { recursive: true, force: true }) };
}

/** The board on the workspace store Hangar uses (SQLite), in `dir`. */
export function openService(dir: string, options: Partial<TaskServiceOptions> = {}): TaskService {
  return new TaskService({ store: new SqliteStore(path.join(dir, 'hangar.db')), ...options });
}

/** Poll until the task reaches one of `statuses` (the runner is asynchronous by design). */
export async function waitForStatus(get: () => Promise<Task>, statuses: TaskStatus[], timeoutMs = 15_000): Promise<Task> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const task = await get();
    if (statuses.includes(task.status)) return task;
    if (Date.now() > deadline) throw new Error(`task ${task.id} stayed ${task.status}, wanted ${statuses.join('|')}`);
    await new Promise((r) => setTimeout(r, 10));
  }
}

/** A promise plus its resolve, to hold work open until the test lets it go. */
export function gate<T = void>(): { promise: Promise<T>; open: (value: T) => void } {
  let open!: (value: T) => void;
  const promise = new Promise<T>((resolve) => (open = resolve));
  return { promise, open };
}
