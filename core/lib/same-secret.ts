import { createHmac, randomBytes, timingSafeEqual } from 'node:crypto';

const COMPARE_KEY = randomBytes(32);

/**
 * Constant-time comparison of a presented secret with the expected one, lengths included: both are
 * HMAC'd to 32 bytes first, so neither how long the secret is nor where the first difference lies
 * shows in the time taken (a plain length check before `timingSafeEqual` answers early on a wrong
 * length and so tells the caller the secret's length). In core/lib so that worker threads (the
 * router host) compare their tokens the same way without loading the HTTP layer.
 */
export function sameSecret(presented: string, expected: string): boolean {
  const a = createHmac('sha256', COMPARE_KEY).update(presented).digest();
  const b = createHmac('sha256', COMPARE_KEY).update(expected).digest();
  return timingSafeEqual(a, b);
}
