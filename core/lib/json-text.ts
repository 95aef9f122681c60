/**
 * JSON that is already text, carried as text: a plugin batch's 10,000 results arrive from the pool's
 * threads as JSON, and parsing them on the server's thread only to serialise them again for the
 * store, the task's event log and its event stream cost ~60 ms of that thread per batch, in blocks
 * of 10-30 ms that every other request waited behind (bench/ml.bench.ts, #27).
 *
 * `stringifyJson` writes a `JsonText` inside any value as its text, unparsed. Anything else that
 * serialises one (`JSON.stringify`, a reply, another store's driver) gets the parsed value through
 * `toJSON`, parsed once on first need, so a `JsonText` is never wrong anywhere, only slower there.
 */
import { randomBytes } from 'node:crypto';

/**
 * What `toJSON` answers while `stringifyJson` runs: the tag and the splice's number, swapped for the
 * text afterwards. The tag is random per process and only letters, digits and `-`, so
 * `JSON.stringify` writes it unchanged and no other string in the value matches it by accident.
 */
const TAG = `json-text-${randomBytes(8).toString('hex')}-`;
const SPLICE_MARK = new RegExp(`"${TAG}(\\d+)"`, 'g');

/** The texts of the `stringifyJson` call running now (calls do not nest: `toJSON` runs no user code). */
let splicing: string[] | undefined;

export class JsonText {
  #value: unknown;
  #parsed = false;

  /** @param text one JSON value, trusted to be valid: it was made by `JSON.stringify`. */
  constructor(readonly text: string) {}

  toJSON(): unknown {
    if (splicing) return `${TAG}${splicing.push(this.text) - 1}`;
    if (!this.#parsed) {
      this.#value = JSON.parse(this.text);
      this.#parsed = true;
    }
    return this.#value;
  }
}

/** `JSON.stringify(value)`, with every `JsonText` in `value` written as its own text. */
export function stringifyJson(value: unknown): string | undefined {
  // Whole: the text itself, not a copy (a copy of megabytes is most of what this saves).
  if (value instanceof JsonText) return value.text;
  const texts: string[] = [];
  splicing = texts;
  let json: string | undefined;
  try {
    json = JSON.stringify(value);
  } finally {
    splicing = undefined;
  }
  if (texts.length === 0 || json === undefined) return json;
  // A mark naming no splice of this call is left as written (only a value quoting this process's tag could hold one).
  return json.replace(SPLICE_MARK, (mark, index: string) => texts[Number(index)] ?? mark);
}
