import { mkdir, mkdtemp, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { WebSocket } from 'ws';
import { type RunningServer, startServer } from '../../core/app/server.js';
import { Logger } from '../../core/kernel/log.js';
import { notebookSubsystem } from '../../core/notebook/subsystem.js';

let running: RunningServer;

beforeAll(async () => {
  const root = await mkdtemp(join(tmpdir(), 'nb-main-'));
  await mkdir(join(root, 'notebooks'));
  await writeFile(join(root, 'notebooks', 'main.nb.ts'), '// %% [code] id=m0000001\nconst m = 5;\n\n// %% [code] id=m0000002\nm * 2\n');
  running = await startServer(
    { root, port: 0, window: false, logLevel: 'silent' },
    { subsystems: [notebookSubsystem], logger: new Logger('silent') },
  );
});

afterAll(async () => {
  await running.close();
});

describe('notebook subsystem on the main server', () => {
  it('serves the session API from the workspace notebooks folder', async () => {
    const list = await (await fetch(`${running.url}/api/notebooks`)).json();
    expect(list.notebooks.map((n: { id: string }) => n.id)).toEqual(['main.nb.ts']);
    const ran = await (await fetch(`${running.url}/api/notebooks/main.nb.ts/run`, { method: 'POST' })).json();
    expect(ran.cells[1].outputs[0].data['text/plain']).toBe('10');
    const missing = await fetch(`${running.url}/api/notebooks/none.nb.ts`);
    expect(missing.status).toBe(404);
    expect(await missing.json()).toEqual({ detail: 'notebook none.nb.ts not found', code: 'HANGAR_NOTEBOOK_NOT_FOUND' });
  });

  it('serves live events on the ws channel', async () => {
    const ws = new WebSocket(`${running.url.replace('http', 'ws')}/api/notebooks/ws?notebook=main.nb.ts`);
    const hello = await new Promise<{ type: string; cells: unknown[] }>((resolve, reject) => {
      ws.once('message', (m) => resolve(JSON.parse(String(m))));
      ws.once('error', reject);
    });
    ws.close();
    expect(hello.type).toBe('hello');
    expect(hello.cells).toHaveLength(2);
  });
});
