import { mkdir, mkdtemp, readFile, symlink, writeFile } from 'node:fs/promises';
import type http from 'node:http';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { WebSocket } from 'ws';
import { mountRoutes } from '../../core/http/route.js';
import { attachNotebookSocket, notebookRoutes } from '../../core/notebook/routes.js';
import { createNotebookApp } from '../../core/notebook/server.js';
import { NotebookService } from '../../core/notebook/service.js';

let base = '';
let root = '';
let server: http.Server;
let closeService: () => Promise<void>;
let reload: (id: string) => Promise<boolean>;

beforeAll(async () => {
  root = await mkdtemp(join(tmpdir(), 'nb-routes-'));
  await mkdir(join(root, 'notebooks'));
  await writeFile(join(root, 'secret.nb.ts'), '// %% [code] id=secret01\nconst s = 1\n');
  const built = createNotebookApp({ root });
  const service = new NotebookService({ root });
  mountRoutes(built.app, notebookRoutes(service));
  await built.app.ready();
  server = built.server;
  attachNotebookSocket(server, service);
  closeService = () => service.closeAll();
  reload = (id) => service.reloadIfChanged(id);
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  base = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
});

afterAll(async () => {
  await closeService();
  await new Promise((r) => server.close(r));
});

async function call(method: string, path: string, body?: unknown) {
  const res = await fetch(base + path, {
    method,
    headers: { 'content-type': 'application/json' },
    body: body === undefined ? undefined : JSON.stringify(body),
  });
  const text = await res.text();
  return { status: res.status, body: text ? JSON.parse(text) : undefined };
}

describe('notebook session API', () => {
  it('creates, edits, runs, reorders and saves a notebook', async () => {
    const created = await call('POST', '/api/notebooks', { name: 'api' });
    expect(created.status).toBe(201);
    const nb = '/api/notebooks/api.nb.ts';
    const first = created.body.cells[0].id;
    expect(first).toMatch(/^[a-z0-9]{8}$/);

    expect((await call('PATCH', `${nb}/cells/${first}`, { source: 'const n = 20', name: 'n' })).status).toBe(200);
    const second = (await call('POST', `${nb}/cells`, { source: 'n + 1' })).body;
    expect(second.state).toBe('idle');

    const ran = await call('POST', `${nb}/cells/${second.id}/run`);
    expect(ran.status).toBe(200);
    const out = ran.body.cells.find((c: { id: string }) => c.id === second.id);
    expect(out.state).toBe('success');
    expect(out.outputs[0].data['text/plain']).toBe('21');

    const html = await fetch(`${base}${nb}/cells/${second.id}/outputs.html`);
    expect(await html.text()).toBe('<pre class="output-text">21</pre>');

    const deps = (await call('GET', `${nb}/dependencies`)).body;
    expect(deps.edges).toEqual([{ from: first, to: second.id, names: ['n'] }]);
    expect(deps.order).toEqual([first, second.id]);

    await call('PATCH', `${nb}/cells/${first}`, { source: 'const n = 1' });
    expect((await call('GET', `${nb}/dependencies`)).body.stale).toEqual([first, second.id]);

    expect((await call('PUT', `${nb}/order`, { order: [second.id, first] })).body.order).toEqual([second.id, first]);
    expect((await call('PUT', `${nb}/order`, { order: [first] })).status).toBe(422);

    expect((await call('POST', `${nb}/save`)).status).toBe(200);
    const saved = await readFile(join(root, 'notebooks', 'api.nb.ts'), 'utf8');
    expect(saved.indexOf(second.id)).toBeLessThan(saved.indexOf(first));
    expect(saved).toContain('const n = 1');

    const list = (await call('GET', '/api/notebooks')).body.notebooks;
    expect(list).toEqual([expect.objectContaining({ id: 'api.nb.ts', name: 'api', format: 'nb.ts', open: true })]);
    expect((await call('POST', '/api/notebooks', { name: 'api' })).status).toBe(409);
  });

  it('answers 404 for unknown notebooks and cells and 422 for bad bodies', async () => {
    expect((await call('GET', '/api/notebooks/nope.nb.ts')).status).toBe(404);
    await call('POST', '/api/notebooks', { name: 'other' });
    expect((await call('GET', '/api/notebooks/other.nb.ts/cells/zzzzzzzz')).status).toBe(404);
    const bad = await call('POST', '/api/notebooks/other.nb.ts/cells', { cell_type: 'python' });
    expect(bad.status).toBe(422);
    expect(bad.body.detail).toMatch(/body\.cell_type/);
  });

  it('confines paths to the notebooks folder', async () => {
    for (const id of ['..%2Fsecret.nb.ts', '%2Fetc%2Fpasswd.nb.ts', 'x.txt']) {
      const res = await call('GET', `/api/notebooks/${id}`);
      expect(res.status, id).toBe(422);
    }
    await symlink(join(root, 'secret.nb.ts'), join(root, 'notebooks', 'link.nb.ts'));
    expect((await call('GET', '/api/notebooks/link.nb.ts')).body.detail).toMatch(/leaves the notebooks folder/);
  });

  it('reports a malformed file with its name and line', async () => {
    await writeFile(join(root, 'notebooks', 'broken.nb.ts'), '// %% [code] id=ok000001\n1\n\n// %% [cod id=x\n');
    const res = await call('GET', '/api/notebooks/broken.nb.ts');
    expect(res.status).toBe(422);
    expect(res.body.detail).toMatch(/broken\.nb\.ts:4: malformed cell marker/);
  });

  it('streams cell states and outputs over ws', async () => {
    await call('POST', '/api/notebooks', { name: 'live', cells: [{ id: 'live0001', source: 'console.log("streamed"); 7' }] });
    const ws = new WebSocket(`${base.replace('http', 'ws')}/api/notebooks/ws?notebook=live.nb.ts`);
    const events: Array<{ type: string; state?: string }> = [];
    await new Promise<void>((resolve, reject) => {
      ws.on('message', (data) => {
        const event = JSON.parse(String(data));
        events.push(event);
        if (event.type === 'hello') void call('POST', '/api/notebooks/live.nb.ts/run?wait=false');
        if (event.type === 'cell-state' && event.state === 'success') resolve();
      });
      ws.on('error', reject);
    });
    ws.close();
    expect(events[0].type).toBe('hello');
    expect(events.filter((e) => e.type === 'cell-state').map((e) => e.state)).toEqual(['queued', 'running', 'success']);
    expect(events.some((e) => e.type === 'output')).toBe(true);
  });

  it('hot reload: an outside edit drops the open session, our own save does not', async () => {
    await call('POST', '/api/notebooks', { name: 'hot', cells: [{ id: 'hot00001', source: '1' }] });
    await call('GET', '/api/notebooks/hot.nb.ts');
    await call('POST', '/api/notebooks/hot.nb.ts/save');
    expect(await reload('hot.nb.ts')).toBe(false);
    await writeFile(join(root, 'notebooks', 'hot.nb.ts'), '// %% [code] id=hot00001\n2\n');
    expect(await reload('hot.nb.ts')).toBe(true);
    const reopened = await call('GET', '/api/notebooks/hot.nb.ts');
    expect(reopened.body.cells[0].source).toBe('2');
  });

  it('runs a posted document headlessly', async () => {
    const content = '// %% [code] id=r0000001\nconst x = 2;\n\n// %% [code] id=r0000002\nx * 21\n';
    const res = await call('POST', '/api/notebooks/run', { file_name: 'remote.nb.ts', content });
    expect(res.body.ok).toBe(true);
    expect(res.body.cells[1].outputs[0].data['text/plain']).toBe('42');
  });
});
