import { readFile } from 'node:fs/promises';
import path from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { eventually, startTestServer, type TestServer } from '../support/server.js';

let server: TestServer | undefined;
afterEach(async () => {
  await server?.stop();
  server = undefined;
});

const AGENT = `import { defineAgent } from 'hangar';
export default defineAgent({ run: async (input) => 'echo ' + input.query });
`;
const ECHO = { name: 'echo', steps: [{ name: 'say', agent: 'echo', input: { query: '$.input.text' } }] };

const statusErrors = async () =>
  (await server!.request('/api/v1/status')).body.errors as Array<{ kind: string; entry: string; message: string }>;

describe('pipelines are drop-ins', () => {
  it('a broken pipeline file shows in /api/v1/status errors with its file, and clears when fixed', async () => {
    server = await startTestServer({ files: { 'agents/echo.ts': AGENT, 'pipelines/echo.json': '{ "name": "echo", "steps": [' } });
    const [error] = (await statusErrors()).filter((e) => e.kind === 'pipeline');
    expect(error).toMatchObject({ kind: 'pipeline', entry: 'pipelines/echo.json', file: 'pipelines/echo.json' });
    expect(error.message).toMatch(/^invalid JSON: /);
    expect((await server.request('/api/v1/status')).body.status).toBe('degraded');
    expect((await server.request('/api/v1/pipelines')).body.pipelines).toEqual([
      {
        name: 'echo',
        description: '',
        version: '',
        steps: 0,
        file: 'pipelines/echo.json',
        valid: false,
        errors: [{ step: null, field: '(file)', message: error.message }],
      },
    ]);

    await server.write('pipelines/echo.json', JSON.stringify(ECHO));
    await eventually(async () => (await statusErrors()).length === 0);
    expect((await server.request('/api/v1/status')).body.dropins.pipeline).toBe(1);
    const run = await server.request('/api/v1/pipelines/echo/run', { method: 'POST', json: { text: 'hi' } });
    expect(run.status).toBe(200);
    expect(run.body.output).toEqual({ say: expect.objectContaining({ response: 'echo hi' }) });

    // Shape problems name the step and field; a name that is not the file's is refused too.
    await server.write('pipelines/echo.json', JSON.stringify({ name: 'echo', steps: [{ name: 'say', agent: 'echo', input: 5 }] }));
    const shape = await eventually(async () => (await statusErrors()).find((e) => e.entry === 'pipelines/echo.json'));
    expect(shape.message).toMatch(/^invalid pipeline definition: step 'say' input: /);
    await server.write('pipelines/other.json', JSON.stringify(ECHO));
    const misnamed = await eventually(async () => (await statusErrors()).find((e) => e.entry === 'pipelines/other.json'));
    expect(misnamed.message).toBe("invalid pipeline definition: name 'echo' does not match the file name 'other'; rename one of them");
  });

  it('a pipeline saved through the API is listed and runs at once; the file is written and hot-reloaded', async () => {
    server = await startTestServer({ files: { 'agents/echo.ts': AGENT } });
    expect((await server.request('/api/v1/pipelines', { method: 'POST', json: ECHO })).status).toBe(201);
    // No waiting: the save registered the definition before answering.
    expect((await server.request('/api/v1/pipelines')).body.pipelines.map((p: { name: string }) => p.name)).toEqual(['echo']);
    expect((await server.request('/api/v1/status')).body.dropins.pipeline).toBe(1);
    expect(JSON.parse(await readFile(path.join(server.root, 'pipelines', 'echo.json'), 'utf8'))).toEqual(ECHO);

    // An edit on disk is picked up by the watcher.
    await server.write('pipelines/echo.json', JSON.stringify({ ...ECHO, description: 'edited by hand' }));
    await eventually(async () => (await server!.request('/api/v1/pipelines')).body.pipelines[0]?.description === 'edited by hand');

    expect((await server.request('/api/v1/pipelines/echo', { method: 'DELETE' })).status).toBe(200);
    expect((await server.request('/api/v1/pipelines')).body.pipelines).toEqual([]);
    expect((await server.request('/api/v1/pipelines/echo/run', { method: 'POST', json: { text: 'x' } })).status).toBe(404);
  });

  it('a pipeline module (pipelines/<name>.ts) loads too, and the API will not shadow or delete it', async () => {
    const module = `export default ${JSON.stringify({ ...ECHO, name: 'mod' })};\n`;
    server = await startTestServer({ files: { 'agents/echo.ts': AGENT, 'pipelines/mod.ts': module } });
    expect((await server.request('/api/v1/pipelines')).body.pipelines).toMatchObject([
      { name: 'mod', file: 'pipelines/mod.ts', valid: true },
    ]);
    const saved = await server.request('/api/v1/pipelines', { method: 'POST', json: { ...ECHO, name: 'mod' } });
    expect(saved.status).toBe(409);
    expect(saved.body.detail).toBe("pipeline 'mod' is defined in pipelines/mod.ts; change or delete that file");
    expect((await server.request('/api/v1/pipelines/mod', { method: 'DELETE' })).status).toBe(409);
    expect((await server.request('/api/v1/pipelines/mod/run', { method: 'POST', json: { text: 'm' } })).body.output.say.response).toBe(
      'echo m',
    );
  });

  it('without a file watcher, saving still makes the pipeline live', async () => {
    server = await startTestServer({ files: { 'agents/echo.ts': AGENT }, settings: { watch: false } });
    expect((await server.request('/api/v1/pipelines', { method: 'POST', json: ECHO })).status).toBe(201);
    const run = await server.request('/api/v1/pipelines/echo/run', { method: 'POST', json: { text: 'now' } });
    expect(run.status).toBe(200);
    expect(run.body.output.say.response).toBe('echo now');
  });
});
