/**
 * The server's lifecycle: what must happen as a stop begins is told once, when it begins (the live
 * channel closes its sockets then, test/desktop/ui.test.ts), not found by polling a flag.
 */
import { describe, expect, it } from 'vitest';
import { Lifecycle } from '../../core/kernel/context.js';

describe('Lifecycle', () => {
  it('runs every onStopping listener once, as the stop begins, and is no longer ready', () => {
    const lifecycle = new Lifecycle();
    lifecycle.ready = true;
    const seen: string[] = [];
    lifecycle.onStopping(() => seen.push(`first, stopping=${lifecycle.stopping}, ready=${lifecycle.ready}`));
    lifecycle.onStopping(() => seen.push('second'));
    expect(lifecycle.stopping).toBe(false);
    expect(seen).toEqual([]);
    lifecycle.stop();
    expect(seen).toEqual(['first, stopping=true, ready=false', 'second']);
    lifecycle.stop();
    expect(seen).toHaveLength(2);
    expect(lifecycle.stopping).toBe(true);
  });
});
