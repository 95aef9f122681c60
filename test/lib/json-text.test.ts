import { describe, expect, it } from 'vitest';
import { JsonText, stringifyJson } from '../../core/lib/json-text.js';

describe('JsonText', () => {
  const items = [
    { index: 0, ok: true, prediction: 'setosa' },
    { index: 1, ok: false, error: 'bad "row"' },
  ];

  it('stringifyJson writes each JsonText as its text, wherever it is, and the rest as JSON.stringify does', () => {
    const results = new JsonText(JSON.stringify(items));
    const value = { head: { total: 2 }, results, again: [results, new JsonText('3')], when: new Date(0), gone: undefined };
    const json = stringifyJson(value)!;
    expect(JSON.parse(json)).toEqual({ head: { total: 2 }, results: items, again: [items, 3], when: '1970-01-01T00:00:00.000Z' });
    // The text goes in as it was given, not parsed and written again.
    const spaced = new JsonText('[ 1,  2 ]');
    expect(stringifyJson({ spaced })).toBe('{"spaced":[ 1,  2 ]}');
    expect(stringifyJson(spaced)).toBe('[ 1,  2 ]');
  });

  it('every other serialiser gets the parsed value, parsed once', () => {
    const results = new JsonText(JSON.stringify(items));
    expect(JSON.stringify({ results })).toBe(JSON.stringify({ results: items }));
    expect(results.toJSON()).toBe(results.toJSON());
    // After a splice, nothing is left switched on: a plain stringify still parses.
    stringifyJson({ results });
    expect(JSON.parse(JSON.stringify([results]))).toEqual([items]);
  });

  it('leaves strings that only look like its placeholder alone, and values without one as JSON.stringify does', () => {
    const lookalike = { text: 'json-text-0000000000000000-0', quoted: '"json-text-0000000000000000-0"', nul: '"\u0000"' };
    expect(stringifyJson({ lookalike, results: new JsonText('[]') })).toBe(JSON.stringify({ lookalike, results: [] }));
    expect(stringifyJson(items)).toBe(JSON.stringify(items));
    expect(stringifyJson(undefined)).toBeUndefined();
  });

  it('a serialisation that throws switches splicing off again', () => {
    const cyclic: Record<string, unknown> = { results: new JsonText('[1]') };
    cyclic.self = cyclic;
    expect(() => stringifyJson(cyclic)).toThrow(/circular/i);
    expect(JSON.stringify({ results: new JsonText('[1]') })).toBe('{"results":[1]}');
  });
});
