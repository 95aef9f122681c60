/**
 * The channels of a checkpoint and how each is spelled in a step's row (see
 * core/agents/checkpoint-tables.ts): the state's top-level keys, plus the run (id, agent, input)
 * as one more channel. The run is usually stored as a patch on the chain's first run, and a
 * run's first messages (history + question) as a marker meaning "the input's".
 */

import { packId, type Segment, unpackId } from './checkpoint-codec.js';
import type { Checkpoint, CheckpointMetadata } from './checkpointer.js';

/** The channel holding the run's id, agent and input (a name no state key can clash with in practice). */
export const RUN = '\u0000run';

/** A channel in a row: absent, a blob version, or the value itself (wrapped, so a number stays a value). */
export type Entry = null | number | [unknown];

/**
 * The run channel as stored: run id, agent, input without its history, the history as segments;
 * or a patch of one (`b`: the version of the whole value it applies to).
 */
export interface RunValue {
  r?: unknown;
  a?: unknown;
  i?: unknown;
  h?: Segment[];
  b?: number;
}

/** The channels of a checkpoint: the state's keys in order, and the run (id, agent, input). */
export function channelsOf(checkpoint: Checkpoint): Array<[string, unknown]> {
  const channels: Array<[string, unknown]> = [];
  for (const [channel, value] of Object.entries(checkpoint.state ?? {})) if (value !== undefined) channels.push([channel, value]);
  const { run_id, agent, input } = checkpoint.metadata;
  if (run_id !== undefined || agent !== undefined || input !== undefined) channels.push([RUN, { run_id, agent, input }]);
  return channels;
}

/** The message lists of a step that are encoded as positions, by channel. */
export function messageLists(channels: Array<[string, unknown]>): Array<[string, unknown[]]> {
  const lists: Array<[string, unknown[]]> = [];
  for (const [channel, value] of channels) {
    if (channel === 'messages' && Array.isArray(value)) lists.push([channel, value]);
    const history = channel === RUN ? ((value as { input?: { history?: unknown } }).input?.history ?? null) : null;
    if (Array.isArray(history)) lists.push([channel, history]);
  }
  return lists;
}

export function encodeChannel(channel: string, value: unknown, encodeList: (list: unknown[]) => Segment[]): unknown {
  if (channel !== 'messages') return value;
  return Array.isArray(value) ? encodeList(value) : { v: value };
}

export function encodeRun(run: Record<string, unknown>, encodeList: (list: unknown[]) => Segment[]): RunValue {
  const out: RunValue = {};
  if (run.run_id !== undefined) out.r = run.run_id;
  if (run.agent !== undefined) out.a = run.agent;
  const input = run.input;
  if (input === undefined) return out;
  if (input && typeof input === 'object' && !Array.isArray(input) && Array.isArray((input as { history?: unknown }).history)) {
    const { history, ...rest } = input as { history: unknown[] };
    out.h = encodeList(history);
    out.i = rest;
  } else out.i = input;
  return out;
}

const isRecord = (value: unknown): value is Record<string, unknown> => !!value && typeof value === 'object' && !Array.isArray(value);

/** What turns `base` into `run` (changed fields and input keys); undefined when the shapes differ. */
export function runPatch(base: RunValue, run: RunValue): RunValue | undefined {
  if (!isRecord(base.i) || !isRecord(run.i)) return undefined;
  const same = (a: unknown, b: unknown) => JSON.stringify(a) === JSON.stringify(b);
  // Only values change in a patch: the same fields, the same input keys in the same order.
  for (const field of ['r', 'a', 'h'] as const) if (field in base !== field in run) return undefined;
  if (!same(Object.keys(base.i), Object.keys(run.i))) return undefined;
  const patch: RunValue = {};
  if ('r' in run && !same(run.r, base.r)) patch.r = run.r;
  if ('a' in run && !same(run.a, base.a)) patch.a = run.a;
  if ('h' in run && !same(run.h, base.h)) patch.h = run.h;
  const input: Record<string, unknown> = {};
  for (const [key, value] of Object.entries(run.i)) if (!same(value, base.i[key])) input[key] = value;
  patch.i = input;
  return patch;
}

export function applyRunPatch(base: RunValue, patch: RunValue): RunValue {
  const whole: RunValue = {};
  if ('r' in base) whole.r = 'r' in patch ? patch.r : base.r;
  if ('a' in base) whole.a = 'a' in patch ? patch.a : base.a;
  if ('h' in base) whole.h = 'h' in patch ? patch.h : base.h;
  whole.i = { ...(base.i as object), ...(patch.i as object) };
  return whole;
}

/** The parent as stored: "the step before" (1) when it is, its id otherwise, null for none. */
export function parentColumn(parent: string | null | undefined, before: unknown): string | Uint8Array | bigint | null {
  if (parent === null || parent === undefined) return null;
  // A BigInt, so SQLite stores the integer 1 (no bytes at all) rather than a double.
  if (before !== undefined && unpackId(before) === parent) return 1n;
  return packId(parent);
}

/** A run's first messages as the engine builds them (core/agents/engine.ts `initialState`). */
export function initialMessages(input: Record<string, unknown> | undefined): unknown[] {
  return [...((input?.history as unknown[]) ?? []), { role: 'user', content: input?.query }];
}

export function isInitial(messages: unknown, input: unknown): boolean {
  if (!Array.isArray(messages) || !input || typeof input !== 'object' || !Array.isArray((input as { history?: unknown }).history))
    return false;
  return JSON.stringify(messages) === JSON.stringify(initialMessages(input as Record<string, unknown>));
}

/** The marker means "the input's messages": only valid together with the same step's input. */
export const isInitialEntry = (channel: string, entry: Entry) => channel === 'messages' && Array.isArray(entry) && entry[0] === 0;

export function splitMetadata(metadata: CheckpointMetadata) {
  const { run_id: _run, agent: _agent, input: _input, source, node, next, ...rest } = metadata;
  const text = (value: unknown) => (typeof value === 'string' ? value : null);
  return { source: text(source), node: text(node), next: text(next), extra: Object.keys(rest).length ? JSON.stringify(rest) : null };
}

/** Absent channels at the end of a row need not be spelled. */
export function trimNulls(entries: Entry[]): Entry[] {
  let end = entries.length;
  while (end > 0 && entries[end - 1] === null) end--;
  return entries.slice(0, end);
}
