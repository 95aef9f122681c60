/**
 * Issue #23: the `notebook start` / `dev` editor page edits cells with the UI notebook view's
 * CodeMirror editor (desktop/views/notebook/editor.ts), bundled on first request and served from
 * the page's own origin. These check the page points at it and the bundle is served as a script.
 */
import { mkdir, mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type CliIo, notebookCli } from '../../core/app/cli/notebook.js';
import type { RunningNotebookServer } from '../../core/notebook/server.js';

let root = '';
let file = '';

beforeAll(async () => {
  root = await mkdtemp(join(tmpdir(), 'nb-editor-script-'));
  await mkdir(join(root, 'notebooks'));
  file = join(root, 'notebooks', 'e.nb.ts');
  await writeFile(file, '// %% [code] id=e0000001\n1 + 1\n');
});
afterAll(async () => {
  await rm(root, { recursive: true, force: true });
});

/** Runs a serving CLI command until `use` is done with its servers, then stops it. */
async function serving(args: string[], use: (servers: RunningNotebookServer[]) => Promise<void>): Promise<void> {
  let stop!: () => void;
  let listening!: (servers: RunningNotebookServer[]) => void;
  const ready = new Promise<RunningNotebookServer[]>((resolve) => (listening = resolve));
  let stderr = '';
  const io: CliIo = {
    out: () => undefined,
    err: (text) => (stderr += text),
    stopSignal: new Promise<void>((resolve) => (stop = resolve)),
    onListening: listening,
  };
  const done = notebookCli([...args, '--no-browser'], io);
  const servers = await Promise.race([ready, done.then((code) => Promise.reject(new Error(`exited ${code}: ${stderr}`)))]);
  try {
    await use(servers);
  } finally {
    stop();
    expect(await done).toBe(0);
  }
}

async function expectEditorScript(pageUrl: string): Promise<void> {
  const page = await (await fetch(pageUrl)).text();
  expect(page).toContain('<link rel="modulepreload" href="/cell-editor.js">');
  expect(page).toContain('"editor":"/cell-editor.js"');

  const script = await fetch(new URL('/cell-editor.js', pageUrl));
  expect(script.status).toBe(200);
  expect(script.headers.get('content-type')).toBe('text/javascript; charset=utf-8');
  expect(script.headers.get('x-content-type-options')).toBe('nosniff');
  // The bundle changes with the source: every load revalidates, and gets a 304 while it has not.
  expect(script.headers.get('cache-control')).toBe('no-cache');
  const etag = script.headers.get('etag');
  expect(etag).toMatch(/^"[\w-]+"$/);
  const code = await script.text();
  // An ES module exporting the component's mount function, with CodeMirror inlined: nothing is
  // fetched from elsewhere at run time.
  expect(code).toMatch(/export\s*\{[^}]*\bmountCodeEditor\b[^}]*\}/);
  expect(code).toContain('cm-editor');
  expect(code).not.toMatch(/\bimport\s*\(|from\s*["']https?:|^import\s/m);

  const again = await fetch(new URL('/cell-editor.js', pageUrl), { headers: { 'if-none-match': etag! } });
  expect(again.status).toBe(304);
  expect(await again.text()).toBe('');
}

describe('the editor page loads the UI cell editor from its own origin', () => {
  it('notebook start serves /cell-editor.js as JavaScript, revalidated by ETag', async () => {
    await serving(['start', '--file', file, '--port', '0'], async ([server]) => {
      await expectEditorScript(`${server!.url}/`);
    });
  });

  it('notebook dev serves it from the frontend, the origin the page is on', async () => {
    await serving(['dev', '--file', file, '--frontend-port', '0', '--backend-port', '0'], async ([frontend, backend]) => {
      await expectEditorScript(`${frontend!.url}/`);
      // The API server serves no page, so no editor either.
      expect((await fetch(`${backend!.url}/cell-editor.js`)).status).toBe(404);
    });
  });
});
