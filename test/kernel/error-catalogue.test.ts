import { readdirSync, readFileSync } from 'node:fs';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { ERROR_CATALOGUE } from '../../core/kernel/error-catalogue.js';
import { fail, genericCode, HangarError } from '../../core/kernel/errors.js';

const core = path.resolve(import.meta.dirname, '../../core');
const sources = (readdirSync(core, { recursive: true }) as string[])
  .filter((f) => f.endsWith('.ts') && !f.endsWith('error-catalogue.ts'))
  .map((f) => readFileSync(path.join(core, f), 'utf8'))
  .join('\n');

describe('the error catalogue', () => {
  it('has well-formed codes, error statuses and messages', () => {
    for (const [code, spec] of Object.entries(ERROR_CATALOGUE)) {
      expect(code, code).toMatch(/^HANGAR_[A-Z0-9]+(?:_[A-Z0-9]+)+$/);
      // The one answer that travels as an error without being one: a run suspended for approval (202, per the spec).
      if (code !== 'HANGAR_AGENT_SUSPENDED') expect(spec.status, code).toBeGreaterThanOrEqual(400);
      expect(spec.status, code).toBeLessThan(600);
      expect(spec.message.trim(), code).not.toBe('');
    }
  });

  it('lists no code that nothing throws', () => {
    const unused = Object.keys(ERROR_CATALOGUE).filter((code) => !sources.includes(`'${code}'`));
    expect(unused).toEqual([]);
  });

  it('fills a template from its parameters and carries the code and status', () => {
    const error = fail('HANGAR_AGENT_NOT_FOUND', { agent: 'echo' });
    expect(error).toBeInstanceOf(HangarError);
    expect(error.toBody()).toEqual({ detail: 'agent "echo" not found', code: 'HANGAR_AGENT_NOT_FOUND' });
    expect(error.status).toBe(404);
  });

  it('gives an error thrown without an entry a code by its status', () => {
    expect(new HangarError(418, 'teapot').code).toBe(genericCode(418));
    expect(genericCode(404)).toBe('HANGAR_NOT_FOUND');
    expect(genericCode(503)).toBe('HANGAR_UNAVAILABLE');
  });
});
