import { spawnSync } from 'node:child_process';
import { existsSync } from 'node:fs';
import { copyFile, mkdir, mkdtemp, readFile, symlink, writeFile } from 'node:fs/promises';
import http from 'node:http';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { beforeAll, describe, expect, inject, it } from 'vitest';
import { type CliIo, notebookCli } from '../../core/app/cli/notebook.js';
import { validateIpynb } from '../../core/notebook/formats.js';
import type { RunningNotebookServer } from '../../core/notebook/server.js';
import { startNotebookServer } from '../../core/notebook/server.js';
import { writeAtomically } from '../support/server.js';

const repo = resolve(import.meta.dirname, '..', '..');
const example = join(repo, 'notebooks', 'sales.nb.ts');
let dir = '';

beforeAll(async () => {
  dir = await mkdtemp(join(tmpdir(), 'nb-cli-'));
});

function capture(extra: Partial<CliIo> = {}) {
  const io = { stdout: '', stderr: '' };
  const cli: CliIo = { out: (t) => (io.stdout += t), err: (t) => (io.stderr += t), color: false, ...extra };
  return { io, cli };
}

async function cli(args: string[], extra: Partial<CliIo> = {}) {
  const { io, cli: sink } = capture(extra);
  const code = await notebookCli(args, sink);
  return { code, ...io };
}

const nb = (cells: Array<[string, string]>) =>
  `// @hangar-notebook {"name":"t","created_at":"2026-01-01T00:00:00.000Z","metadata":{}}\n\n` +
  cells.map(([id, source]) => `// %% [code] id=${id}\n${source}\n`).join('\n');

/** Start a long-running command, wait for it to listen, and hand back its URL and a stop(). */
async function serveWith(args: string[]) {
  let stop!: () => void;
  const stopSignal = new Promise<void>((r) => (stop = r));
  let listening!: (servers: RunningNotebookServer[]) => void;
  const ready = new Promise<RunningNotebookServer[]>((r) => (listening = r));
  const { io, cli: sink } = capture({ stopSignal, onListening: listening });
  const done = notebookCli(args, sink);
  const servers = await Promise.race([
    ready,
    done.then((code) => {
      throw new Error(`exited ${code}: ${io.stderr}`);
    }),
  ]);
  return {
    servers,
    io,
    stop: async () => {
      stop();
      return done;
    },
  };
}

describe('hangar notebook run', () => {
  it('runs the shipped example headlessly and prints its outputs', async () => {
    const r = await cli(['run', example]);
    expect(r.stderr).toBe('');
    expect(r.code).toBe(0);
    expect(r.stdout).toContain('144 rows');
    expect(r.stdout).toMatch(/sales: 7\/7 cells succeeded/);
  });

  it('exits 1 when a cell fails and 2 for a missing or malformed file', async () => {
    const file = join(dir, 'fails.nb.ts');
    await writeFile(
      file,
      nb([
        ['ok000001', 'const a = 1'],
        ['bad00001', 'throw new Error("nope")'],
      ]),
    );
    const r = await cli(['run', file]);
    expect(r.code).toBe(1);
    expect(r.stdout).toContain('Error: nope');
    expect(r.stdout).toContain('bad00001 FAILED');
    expect((await cli(['run', join(dir, 'missing.nb.ts')])).code).toBe(2);
    await writeFile(join(dir, 'broken.nb.ts'), '// %% [code] id=x\n1\n\n// %% [code\n');
    const broken = await cli(['run', join(dir, 'broken.nb.ts')]);
    expect(broken.code).toBe(2);
    expect(broken.stderr).toMatch(/broken\.nb\.ts:4/);
  });

  it('runs on a remote server with --server and lists notebooks there', async () => {
    const root = join(dir, 'remote');
    await mkdir(join(root, 'notebooks'), { recursive: true });
    await writeFile(join(root, 'notebooks', 'there.nb.ts'), nb([['r0000001', '6 * 7']]));
    const server = await startNotebookServer({ root, port: 0 });
    try {
      const file = join(dir, 'here.nb.ts');
      await writeFile(
        file,
        nb([
          ['h0000001', 'const x = 20'],
          ['h0000002', 'x + 1'],
        ]),
      );
      const r = await cli(['run', file, '--server', server.url]);
      expect(r.code).toBe(0);
      expect(r.stdout).toContain('21');
      const list = await cli(['list', '--server', server.url]);
      expect(list.code).toBe(0);
      expect(list.stdout).toMatch(/^there\.nb\.ts\tnb\.ts\t/);
    } finally {
      await server.close();
    }
    const unreachable = await cli(['list', '--server', 'http://127.0.0.1:9']);
    expect(unreachable.code).toBe(1);
    expect(unreachable.stderr).toMatch(/cannot reach/);
  });
});

describe('hangar notebook convert', () => {
  it('converts .nb.ts → .ipynb (name derived) → .nb.ts byte-identical, with a valid schema', async () => {
    const source = join(dir, 'sales.nb.ts');
    await copyFile(example, source);
    const r = await cli(['convert', source]);
    expect(r.code).toBe(0);
    const ipynb = join(dir, 'sales.ipynb');
    expect(r.stdout.trim()).toBe(ipynb);
    expect(validateIpynb(JSON.parse(await readFile(ipynb, 'utf8')))).toEqual([]);
    const back = join(dir, 'back.nb.ts');
    expect((await cli(['convert', ipynb, '-o', back])).code).toBe(0);
    expect(await readFile(back, 'utf8')).toBe(await readFile(example, 'utf8'));
    expect((await cli(['convert', source, '-o', join(dir, 'same.nb.ts')])).code).toBe(2);
  });
});

describe('hangar notebook diff', () => {
  it('reports added, removed, moved and changed cells with line diffs; exit 1 when different', async () => {
    const a = join(dir, 'a.nb.ts');
    const b = join(dir, 'b.nb.ts');
    await writeFile(
      a,
      nb([
        ['keep0001', 'const k = 1'],
        ['move0001', 'const m = 2'],
        ['edit0001', 'const e = 3\nconst f = 4'],
        ['gone0001', 'const g = 5'],
      ]),
    );
    await writeFile(
      b,
      nb([
        ['move0001', 'const m = 2'],
        ['keep0001', 'const k = 1'],
        ['edit0001', 'const e = 30\nconst f = 4'],
        ['new00001', 'const n = 6'],
      ]),
    );
    const r = await cli(['diff', a, b]);
    expect(r.code).toBe(1);
    expect(r.stdout).toContain('@@ cell new00001: added');
    expect(r.stdout).toContain('@@ cell gone0001: removed');
    expect(r.stdout).toMatch(/@@ cell (keep0001|move0001): moved/);
    expect(r.stdout).toContain('@@ cell edit0001: changed');
    expect(r.stdout).toContain('- const e = 3\n+ const e = 30\n  const f = 4');
    expect(r.stdout).toContain('1 added, 1 removed, 1 moved, 1 changed');

    const html = await cli(['diff', a, b, '--html']);
    expect(html.stdout).toMatch(/^<!doctype html>/);
    expect(html.stdout).toContain('class="line add">+ const e = 30');

    const same = await cli(['diff', a, a]);
    expect(same.code).toBe(0);
    expect(same.stdout).toContain('notebooks are identical');
  });
});

describe('hangar notebook export', () => {
  it('html: a self-contained report with the table and the chart', async () => {
    const out = join(dir, 'report.html');
    const r = await cli(['export', example, '--format', 'html', '-o', out]);
    expect(r.code).toBe(0);
    const html = await readFile(out, 'utf8');
    expect(html).toContain('<table class="hangar-table">');
    expect(html).toContain('<svg xmlns="http://www.w3.org/2000/svg"');
    expect(html).toContain('<h1>Sales 2025</h1>');
    expect(html).not.toMatch(/<script src=|<link [^>]*href="http/);
  });

  it('pipeline (the default format): notebook steps, one per code cell in execution order', async () => {
    const source = join(dir, 'pipe.nb.ts');
    await copyFile(example, source);
    const r = await cli(['export', source]);
    expect(r.code).toBe(0);
    const definition = JSON.parse(await readFile(join(dir, 'pipe.pipeline.json'), 'utf8'));
    expect(definition.name).toBe('sales');
    expect(definition.steps.map((s: { cell: string }) => s.cell)).toEqual([
      'load0001',
      'region01',
      'monthly1',
      'chart001',
      'thresh01',
      'bigmon01',
      'bigtab01',
    ]);
    expect(definition.steps.map((s: { name: string }) => s.name)).toEqual([
      'load',
      'revenue_by_region',
      'monthly_revenue',
      'chart',
      'threshold',
      'big_months',
      'big_months_table',
    ]);
    // Outside a notebooks/ folder the notebook is named by its file name.
    expect(definition.steps[0]).toEqual({ name: 'load', notebook: 'pipe.nb.ts', cell: 'load0001', input: '$.input' });
    expect(definition.steps[5].after).toEqual(['load', 'monthly_revenue', 'threshold']);
  });

  it('pipeline into a pipelines/ folder: named after the file, notebook named inside notebooks/', async () => {
    const workspace = join(dir, 'ws');
    await mkdir(join(workspace, 'notebooks', 'team'), { recursive: true });
    await copyFile(example, join(workspace, 'notebooks', 'team', 'sales.nb.ts'));
    const r = await cli([
      'export',
      join(workspace, 'notebooks', 'team', 'sales.nb.ts'),
      '-o',
      join(workspace, 'pipelines', 'monthly-sales.json'),
    ]);
    expect(r.code).toBe(0);
    const definition = JSON.parse(await readFile(join(workspace, 'pipelines', 'monthly-sales.json'), 'utf8'));
    expect(definition.name).toBe('monthly-sales');
    expect(new Set(definition.steps.map((s: { notebook: string }) => s.notebook))).toEqual(new Set(['team/sales.nb.ts']));
  });

  it('pdf: without a browser, fails with a message naming what to install', async () => {
    const saved = { PATH: process.env.PATH, HOME: process.env.HOME, CHROME_PATH: process.env.CHROME_PATH };
    process.env.PATH = join(dir, 'empty-bin');
    process.env.HOME = join(dir, 'empty-home');
    delete process.env.CHROME_PATH;
    try {
      const r = await cli(['export', example, '--format', 'pdf', '-o', join(dir, 'x.pdf'), '--no-run']);
      expect(r.code).toBe(1);
      expect(r.stderr).toMatch(/Chromium or Google Chrome.*apt-get install chromium.*CHROME_PATH/s);
    } finally {
      Object.assign(process.env, saved);
      if (saved.CHROME_PATH === undefined) delete process.env.CHROME_PATH;
    }
  });

  // The run's test browser (test/support/test-browser.ts) as CHROME_PATH. Not the bundled
  // @sparticuz/chromium: that headless shell never exits after `--print-to-pdf` from the command
  // line (tried: --headless, =new, =shell), so it can drive pages but not stand in for a user's Chrome here.
  it.skipIf(inject('testBrowser').source === 'bundled')(
    'pdf: prints the HTML report with Chromium from CHROME_PATH',
    async () => {
      const saved = process.env.CHROME_PATH;
      process.env.CHROME_PATH = inject('testBrowser').executablePath;
      const out = join(dir, 'report.pdf');
      try {
        const r = await cli(['export', example, '--format', 'pdf', '-o', out]);
        expect(r.stderr).toBe('');
        expect(r.code).toBe(0);
      } finally {
        if (saved === undefined) delete process.env.CHROME_PATH;
        else process.env.CHROME_PATH = saved;
      }
      const pdf = await readFile(out);
      expect(pdf.subarray(0, 5).toString()).toBe('%PDF-');
      expect(pdf.length).toBeGreaterThan(10_000);
    },
    60_000,
  );

  it('docker: a Dockerfile plus a bundle that really runs the notebook', async () => {
    const out = join(dir, 'docker');
    const r = await cli(['export', example, '--format', 'docker', '-o', out]);
    expect(r.code).toBe(0);
    for (const f of ['Dockerfile', 'package.json', 'notebook.nb.ts', 'runner.mjs', 'runtime-worker.cjs', 'nbformat.v4.schema.json']) {
      expect(existsSync(join(out, f)), f).toBe(true);
    }
    expect(await readFile(join(out, 'Dockerfile'), 'utf8')).toContain('CMD ["node", "runner.mjs", "run", "notebook.nb.ts"]');
    // What `docker run` would do, minus Docker: install = link our node_modules, then run.
    await symlink(join(repo, 'node_modules'), join(out, 'node_modules'));
    await mkdir(join(out, 'data'));
    await copyFile(join(repo, 'notebooks', 'data', 'sales.csv'), join(out, 'data', 'sales.csv'));
    const run = spawnSync(process.execPath, ['runner.mjs', 'run', 'notebook.nb.ts'], { cwd: out, encoding: 'utf8', timeout: 30_000 });
    expect(run.stderr).toBe('');
    expect(run.status).toBe(0);
    expect(run.stdout).toContain('7/7 cells succeeded');
  });

  it('refuses an unknown format with a usage error', async () => {
    expect((await cli(['export', example, '--format', 'docx'])).code).toBe(2);
  });
});

describe('hangar notebook app / start / dev', () => {
  it('app serves the outputs only, in the chosen layout', async () => {
    const { servers, io, stop } = await serveWith(['app', example, '--port', '0', '--layout', 'tabs', '--no-browser']);
    // The page is ours; the report (the notebook's own HTML) is a sandboxed frame of it.
    expect(await (await fetch(servers[0].url)).text()).toContain('<iframe src="report" sandbox="allow-scripts"');
    const page = await (await fetch(`${servers[0].url}/report`)).text();
    expect(page).toContain('class="layout-tabs"');
    expect(page).toContain('<table class="hangar-table">');
    expect(page).not.toContain('aq.fromCSV'); // code hidden
    expect(io.stdout).toMatch(/app "sales" \(tabs\) on http:\/\/127\.0\.0\.1:\d+/);
    expect(await stop()).toBe(0);
    expect((await cli(['app', example, '--layout', 'wide'])).code).toBe(2);
  });

  it('start serves the editor and the session API on one port', async () => {
    const root = join(dir, 'ws-start');
    await mkdir(join(root, 'notebooks'), { recursive: true });
    await writeFile(join(root, 'notebooks', 'a.nb.ts'), nb([['a0000001', '1 + 1']]));
    const { servers, stop } = await serveWith(['start', '--file', join(root, 'notebooks', 'a.nb.ts'), '--port', '0', '--no-browser']);
    try {
      expect(await (await fetch(servers[0].url)).text()).toContain('Hangar notebooks');
      const list = (await (await fetch(`${servers[0].url}/api/notebooks`)).json()) as { notebooks: Array<{ id: string }> };
      expect(list.notebooks.map((n) => n.id)).toEqual(['a.nb.ts']);
      // DNS rebinding: a page on another name resolving to 127.0.0.1 must not reach the kernel.
      const rebound = await new Promise<number>((resolveStatus, reject) => {
        const req = http.request(`${servers[0].url}/api/notebooks`, { headers: { host: 'evil.example:8899' } }, (res) => {
          res.resume();
          resolveStatus(res.statusCode ?? 0);
        });
        req.on('error', reject);
        req.end();
      });
      expect(rebound).toBe(403);
    } finally {
      expect(await stop()).toBe(0);
    }
  });

  it('dev serves the UI and the API on two ports and tells pages when a file changes', async () => {
    const root = join(dir, 'ws-dev');
    await mkdir(join(root, 'notebooks'), { recursive: true });
    const file = join(root, 'notebooks', 'd.nb.ts');
    await writeFile(file, nb([['d0000001', '1']]));
    const { servers, io, stop } = await serveWith(['dev', '--file', file, '--frontend-port', '0', '--backend-port', '0', '--no-browser']);
    try {
      const [frontend, backend] = servers;
      expect(await (await fetch(frontend.url)).text()).toContain(JSON.stringify(backend.url).slice(1, -1));
      expect(io.stdout).toContain(`API on ${backend.url}`);
      const { WebSocket } = await import('ws');
      const ws = new WebSocket(`${frontend.url.replace('http', 'ws')}/__reload`);
      await new Promise((r) => ws.on('open', r));
      const nextMessage = () => new Promise((r) => ws.once('message', (m) => r(JSON.parse(String(m)))));
      let changed = nextMessage();
      await writeFile(file, nb([['d0000001', '2']]));
      expect(await changed).toEqual({ type: 'file-changed', notebook: 'd.nb.ts' });
      // Editors that save atomically rename a new file over the old one; every such save is seen.
      for (const value of ['3', '4', '5']) {
        changed = nextMessage();
        await writeAtomically(root, 'notebooks/d.nb.ts', nb([['d0000001', value]]));
        expect(await changed).toEqual({ type: 'file-changed', notebook: 'd.nb.ts' });
      }
      ws.close();
    } finally {
      expect(await stop()).toBe(0);
    }
  });
});
