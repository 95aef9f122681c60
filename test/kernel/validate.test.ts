import type { FastifyInstance } from 'fastify';
import { afterEach, describe, expect, it } from 'vitest';
import { z } from 'zod';
import { parseInput } from '../../core/http/validate.js';
import { startTestServer, type TestServer } from '../support/server.js';

let server: TestServer;
afterEach(async () => server?.stop());

/** A subsystem whose one route echoes what the validation middleware handed it. */
const echoSubsystem = {
  name: 'echo-validation',
  routes: (app: FastifyInstance) =>
    app.post('/check/:id', async (req) => ({
      params: parseInput(z.object({ id: z.string().regex(/^\d+$/, 'expected digits') }), req.params, 'params'),
      query: parseInput(z.object({ limit: z.coerce.number().int().max(100).default(10) }), req.query, 'query'),
      body: parseInput(z.object({ name: z.string(), temperature: z.number().min(0).max(2).nullable().default(null) }), req.body, 'body'),
    })),
};

describe('input validation', () => {
  it('hands the handler parsed values with defaults applied', async () => {
    server = await startTestServer({ start: { subsystems: [echoSubsystem] } });
    const res = await server.request('/check/42?limit=5', { method: 'POST', json: { name: 'x' } });
    expect(res.body).toEqual({ params: { id: '42' }, query: { limit: 5 }, body: { name: 'x', temperature: null } });
  });

  it('answers 422 naming the field for body, query and params', async () => {
    server = await startTestServer({ start: { subsystems: [echoSubsystem] } });
    const body = await server.request('/check/1', { method: 'POST', json: { name: 'x', temperature: 3 } });
    expect(body.status).toBe(422);
    expect(body.body.detail).toBe('body.temperature: Too big: expected number to be <=2');
    const missing = await server.request('/check/1', { method: 'POST', json: {} });
    expect(missing.body.detail).toMatch(/^body\.name: /);
    const query = await server.request('/check/1?limit=500', { method: 'POST', json: { name: 'x' } });
    expect(query.body.detail).toMatch(/^query\.limit: Too big/);
    const params = await server.request('/check/abc', { method: 'POST', json: { name: 'x' } });
    expect(params).toMatchObject({ status: 422, body: { detail: 'params.id: expected digits' } });
  });
});
