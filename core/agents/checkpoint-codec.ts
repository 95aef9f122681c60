/**
 * How a checkpoint is spelled on disk (core/agents/checkpoint-tables.ts), as small as it can be
 * while reading back exactly what was written:
 *
 * - ids and timestamps: a canonical UUID is kept as its 16 bytes and an ISO time as its
 *   milliseconds (anything else as the text it was), since every step carries three of them;
 * - message lists (`state.messages`, the run input's `history`) as runs of positions in the
 *   thread's own message log (`t`) or in the chain's list of messages no thread log holds (`c`):
 *   a chat turn's 100 messages of history become one `["t", from, to]`.
 */

/** A run of messages: positions `from` … `to - 1` of the thread's log (`t`) or the chain's own list (`c`). */
export type Segment = ['t' | 'c', number, number];

/** Messages a list can be matched against: consecutive positions starting at `start`, as JSON text. */
export interface MessageWindow {
  source: Segment[0];
  start: number;
  texts: readonly string[];
}

const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/;

/** A UUID as its 16 bytes; any other id as its text. */
export function packId(id: string): string | Uint8Array {
  return UUID.test(id) ? Buffer.from(id.replace(/-/g, ''), 'hex') : id;
}

export function unpackId(stored: unknown): string {
  if (typeof stored === 'string') return stored;
  const hex = Buffer.from(stored as Uint8Array).toString('hex');
  return `${hex.slice(0, 8)}-${hex.slice(8, 12)}-${hex.slice(12, 16)}-${hex.slice(16, 20)}-${hex.slice(20)}`;
}

/**
 * An ISO time that round-trips through `Date` as its milliseconds; anything else as its text.
 * A BigInt, so SQLite stores an integer (6 bytes) rather than a double (8).
 */
export function packTime(text: string): string | bigint {
  const ms = Date.parse(text);
  return Number.isFinite(ms) && new Date(ms).toISOString() === text ? BigInt(ms) : text;
}

export function unpackTime(stored: unknown): string {
  return typeof stored === 'number' ? new Date(stored).toISOString() : String(stored);
}

/** At most this many earlier positions of one text are tried as a match start (repeated "ok"s). */
const CANDIDATES = 8;

/**
 * The list as runs of the windows' positions, longest match first; what no window holds is
 * returned in `fresh` and referred to as `c` positions from `freshStart` on (the caller appends
 * those texts to the chain's list). Deterministic: the same list against the same windows gives
 * the same segments, so an unchanged channel encodes to the text it was stored as.
 */
export function toSegments(
  texts: readonly string[],
  windows: readonly MessageWindow[],
  freshStart: number,
): { segments: Segment[]; fresh: string[] } {
  const where = windows.map((w) => {
    const at = new Map<string, number[]>();
    w.texts.forEach((text, i) => {
      const list = at.get(text);
      if (!list) at.set(text, [i]);
      else if (list.length < CANDIDATES) list.push(i);
    });
    return at;
  });
  const segments: Segment[] = [];
  const fresh: string[] = [];
  const add = (source: Segment[0], from: number, to: number) => {
    const last = segments.at(-1);
    if (last && last[0] === source && last[2] === from) last[2] = to;
    else segments.push([source, from, to]);
  };
  for (let i = 0; i < texts.length; ) {
    let best: { w: number; at: number; length: number } | undefined;
    windows.forEach((window, w) => {
      for (const at of where[w]!.get(texts[i]!) ?? []) {
        let length = 1;
        while (i + length < texts.length && window.texts[at + length] === texts[i + length]) length++;
        if (!best || length > best.length) best = { w, at, length };
      }
    });
    if (best) {
      const window = windows[best.w]!;
      add(window.source, window.start + best.at, window.start + best.at + best.length);
      i += best.length;
    } else {
      add('c', freshStart + fresh.length, freshStart + fresh.length + 1);
      fresh.push(texts[i]!);
      i++;
    }
  }
  return { segments, fresh };
}

/** Whether a stored value is a list of segments (what `toSegments` made). */
export function isSegments(value: unknown): value is Segment[] {
  return (
    Array.isArray(value) &&
    value.every((s) => Array.isArray(s) && s.length === 3 && (s[0] === 't' || s[0] === 'c') && Number.isInteger(s[1]))
  );
}

/** Every position range the segments need from each source, merged into one span per source. */
export function spans(segmentLists: Iterable<Segment[]>): Record<Segment[0], [number, number] | undefined> {
  const out: Record<Segment[0], [number, number] | undefined> = { t: undefined, c: undefined };
  for (const list of segmentLists)
    for (const [source, from, to] of list) {
      const span = out[source];
      out[source] = span ? [Math.min(span[0], from), Math.max(span[1], to)] : [from, to];
    }
  return out;
}
