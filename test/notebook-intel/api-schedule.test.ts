import { describe, expect, it } from 'vitest';
import { HangarNotebook } from '../../core/notebook/api.js';

const hourIn = (timeZone: string, date: Date) =>
  new Intl.DateTimeFormat('en-US', { timeZone, hour: 'numeric', minute: 'numeric', hourCycle: 'h23' }).format(date);

describe('HangarNotebook.schedule (programmatic API)', () => {
  it('reads the cron expression in the given time zone', () => {
    const nb = new HangarNotebook({ name: 'tz' });
    const tokyo = nb.schedule('30 9 * * *', undefined, { timezone: 'Asia/Tokyo' });
    const lima = nb.schedule('30 9 * * *', undefined, { timezone: 'America/Lima' });
    try {
      expect(hourIn('Asia/Tokyo', tokyo.next()!)).toBe('09:30');
      expect(hourIn('America/Lima', lima.next()!)).toBe('09:30');
      // Same wall-clock time, different instants: 14 hours apart (Lima has no daylight saving).
      const gap = (lima.next()!.getTime() - tokyo.next()!.getTime()) / 3_600_000;
      expect(((gap % 24) + 24) % 24).toBe(14);
    } finally {
      tokyo.stop();
      lima.stop();
    }
  });

  it("throws croner's reason for an invalid expression", () => {
    expect(() => new HangarNotebook().schedule('99 * * * *')).toThrow(/minute|range|invalid/i);
  });
});
