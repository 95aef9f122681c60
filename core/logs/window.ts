/**
 * An analysis window (`15m`, `1h`, `24h`, `7d`): checked by the analysis request's schema
 * (schemas.ts) and turned into milliseconds by the service. A module of its own so the service
 * does not import the routes' schemas, which load with the routes on their first request
 * (core/logs/subsystem.ts).
 */
export const WINDOW = /^(\d+)(s|m|h|d)$/;
const UNIT_MS = { s: 1_000, m: 60_000, h: 3_600_000, d: 86_400_000 } as const;

export function windowMs(window: string): number {
  const [, n, unit] = WINDOW.exec(window)!;
  return Number(n) * UNIT_MS[unit as keyof typeof UNIT_MS];
}
