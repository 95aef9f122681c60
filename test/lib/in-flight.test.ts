import { describe, expect, it } from 'vitest';
import { InFlight } from '../../core/lib/in-flight.js';

describe('InFlight', () => {
  it('counts what it holds once per key, and forgets a deleted key', () => {
    const table = new InFlight<string>();
    table.set(3, 'c');
    table.set(3, 'c again');
    table.set(1, 'a');
    expect(table.size).toBe(2);
    expect(table.get(3)).toBe('c again');
    expect(table.has(1)).toBe(true);
    expect(table.delete(1)).toBe(true);
    expect(table.delete(1)).toBe(false);
    expect(table.has(1)).toBe(false);
    expect(table.get(1)).toBeUndefined();
    expect(table.size).toBe(1);
  });

  it('iterates in key order, oldest call first, whatever order they were set in', () => {
    const table = new InFlight<string>();
    for (const key of [12, 2, 7]) table.set(key, `call ${key}`);
    expect([...table]).toEqual([
      [2, 'call 2'],
      [7, 'call 7'],
      [12, 'call 12'],
    ]);
    expect([...table.values()]).toEqual(['call 2', 'call 7', 'call 12']);
  });

  it('gives each added value a new key to delete it by', () => {
    const table = new InFlight<() => void>();
    const first = () => {};
    const second = () => {};
    const a = table.add(first);
    const b = table.add(second);
    expect(b).toBeGreaterThan(a);
    table.delete(a);
    expect([...table.values()]).toEqual([second]);
    // A key is not given again after its value left.
    expect(table.add(first)).toBeGreaterThan(b);
  });

  it('drains: returns what it held and is empty after', () => {
    const table = new InFlight<string>();
    table.add('x');
    table.add('y');
    expect(table.drain()).toEqual(['x', 'y']);
    expect(table.size).toBe(0);
    expect([...table]).toEqual([]);
    table.add('z');
    expect(table.size).toBe(1);
  });
});
