import { describe, expect, it } from 'vitest';
import { createRedactor, REDACTED } from '../../core/logs/redact.js';

describe('redaction of logged values', () => {
  const redactor = createRedactor({ maxChars: 200, knownSecrets: () => ['s3cr3t-known-value'] });

  it('hides values under secret-looking keys, at any depth', () => {
    const { value } = redactor.apply({
      user: 'ada',
      password: 'p',
      nested: { apiKey: 'k', api_key: 'k', Authorization: 'x', token: 't' },
      author: 'kept',
    });
    expect(value).toEqual({
      user: 'ada',
      password: REDACTED,
      nested: { apiKey: REDACTED, api_key: REDACTED, Authorization: REDACTED, token: REDACTED },
      author: 'kept',
    });
  });

  it('hides secret-shaped strings and the secrets this server knows, wherever they are', () => {
    const { value } = redactor.apply({ q: 'use Bearer abcdef123456 and sk-ABCDEFGHIJKLMNOPQRSTUV and s3cr3t-known-value please' });
    expect(value).toEqual({ q: `use Bearer ${REDACTED} and ${REDACTED} and ${REDACTED} please` });
    expect(redactor.text('ghp_abcdefghijklmnopqrstuvwxyz0123')).toBe(REDACTED);
  });

  it('cuts long values to a marked preview', () => {
    const { value, truncated } = redactor.apply({ text: 'x'.repeat(1000) });
    expect(truncated).toBe(true);
    expect(typeof value).toBe('string');
    expect((value as string).length).toBe(201);
    expect((value as string).endsWith('…')).toBe(true);
    expect(redactor.apply(undefined)).toEqual({ value: null, truncated: false });
  });
});
