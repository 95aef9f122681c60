import { afterEach, describe, expect, it } from 'vitest';
import { Notebook } from '../../core/notebook/schemas.js';
import { NotebookSession, type SessionEvent } from '../../core/notebook/session.js';

const sessions: NotebookSession[] = [];
afterEach(async () => {
  await Promise.all(sessions.splice(0).map((s) => s.close()));
});

function open(cells: Array<{ id: string; source: string; cell_type?: 'code' | 'markdown' }>, options = {}) {
  const session = new NotebookSession(Notebook.parse({ name: 't', cells }), options);
  sessions.push(session);
  return session;
}

const text = (session: NotebookSession, id: string) =>
  session
    .cell(id)
    .outputs.map((o) => (o.output_type === 'stream' ? o.text : o.output_type === 'error' ? `!${o.evalue}` : String(o.data['text/plain'])))
    .join('|');

describe('notebook session: reactive runs', () => {
  it('keeps state between runs and re-runs exactly the dependents of an edited cell', async () => {
    const s = open([
      { id: 'a', source: 'const a = 1' },
      { id: 'b', source: 'const b = a + 1;\nconsole.log("b ran");\nb' },
      { id: 'c', source: 'const c = 100' },
      { id: 'd', source: 'b * 10' },
    ]);
    await s.runAll();
    expect(text(s, 'b')).toBe('b ran\n|2');
    expect(text(s, 'd')).toBe('20');
    expect(s.cell('d').execution_count).toBe(4);

    await s.updateCell('a', { source: 'const a = 5' });
    expect(['a', 'b', 'c', 'd'].map((id) => s.state(id))).toEqual(['stale', 'stale', 'success', 'stale']);
    expect((await s.dependencies()).stale).toEqual(['a', 'b', 'd']);

    const c = s.cell('c').execution_count;
    await s.runCell('a');
    expect(text(s, 'd')).toBe('60');
    expect(s.cell('c').execution_count).toBe(c); // unrelated cell not re-run
    expect(['a', 'b', 'c', 'd'].every((id) => s.state(id) === 'success')).toBe(true);
  });

  it('runs the stale upstream cells a cell needs', async () => {
    const s = open([
      { id: 'a', source: 'const a = 2' },
      { id: 'b', source: 'a * 3' },
    ]);
    await s.runCell('b');
    expect(text(s, 'b')).toBe('6');
    expect(s.state('a')).toBe('success');
  });

  it('streams outputs and state changes as events', async () => {
    const s = open([{ id: 'a', source: 'console.log("hi"); console.error("oops"); 42' }]);
    const events: SessionEvent[] = [];
    s.subscribe((e) => events.push(e));
    await s.runAll();
    expect(events.filter((e) => e.type === 'cell-state').map((e) => (e as { state: string }).state)).toEqual([
      'queued',
      'running',
      'success',
    ]);
    const outputs = events.filter((e) => e.type === 'output').map((e) => (e as { output: { output_type: string } }).output.output_type);
    expect(outputs).toEqual(['stream', 'stream', 'execute_result']);
  });

  it('reports a thrown error at the cell line, only on that cell, and skips its dependents', async () => {
    const s = open([
      { id: 'a', source: 'const a = 1;\n\nthrow new Error("bad " + a)' },
      { id: 'b', source: 'a + 1' },
      { id: 'c', source: '"independent"' },
    ]);
    await s.runAll();
    const error = s.cell('a').outputs.find((o) => o.output_type === 'error')!;
    expect(error).toMatchObject({ ename: 'Error', evalue: 'bad 1' });
    expect((error as { traceback: string[] }).traceback.join('\n')).toContain('(cell a, line 3)');
    expect(s.state('a')).toBe('error');
    expect(s.state('b')).toBe('stale');
    expect(text(s, 'c')).toBe('independent');
  });

  it('maps runtime errors in TypeScript cells back to the source line', async () => {
    const s = open([{ id: 'ts', source: 'interface P {\n  x: number\n}\nconst p: P = { x: 1 };\nconst q = (p as any).nope.deeper;' }]);
    await s.runAll();
    const error = s.cell('ts').outputs[0] as { ename: string; traceback: string[] };
    expect(error.ename).toBe('TypeError');
    expect(error.traceback.join('\n')).toContain('line 5');
  });

  it('finds the source line inside a chain esbuild joined onto one line', async () => {
    const s = open([
      { id: 'chain', source: 'const n: number[] = [1, 2];\nconst out = n\n  .map((x) => x * 2)\n  .map((x: any) => x.boom.bang);' },
    ]);
    await s.runAll();
    const error = s.cell('chain').outputs[0] as { traceback: string[] };
    expect(error.traceback.join('\n')).toContain('(cell chain, line 4)');
  });

  it('marks a syntax error with its position and leaves the other cells runnable', async () => {
    const s = open([
      { id: 'bad', source: 'const = 1' },
      { id: 'ok', source: '1 + 1' },
    ]);
    await s.runAll();
    expect(s.state('bad')).toBe('error');
    expect(s.cell('bad').outputs[0]).toMatchObject({ output_type: 'error', ename: 'SyntaxError' });
    expect((s.cell('bad').outputs[0] as { traceback: string[] }).traceback[0]).toMatch(/line 1/);
    expect(text(s, 'ok')).toBe('2');
  });

  it('reports cycles and names defined twice without running those cells', async () => {
    const s = open([
      { id: 'p', source: 'const x = y' },
      { id: 'q', source: 'const y = x' },
      { id: 'r', source: 'const z = 1' },
      { id: 's', source: 'const z = 2' },
    ]);
    await s.runAll();
    expect(['p', 'q', 'r', 's'].map((id) => s.state(id))).toEqual(['error', 'error', 'error', 'error']);
    expect(text(s, 'p')).toMatch(/cycle/);
    expect(text(s, 'r')).toMatch(/also defined by cell s/);
  });

  it('imports packages and node built-ins, and keeps private names out of the kernel', async () => {
    const s = open([
      {
        id: 'i',
        source:
          "import * as aq from 'arquero';\nimport { join } from 'node:path';\nconst _secret = 1;\nconst t = aq.table({ n: [1, 2, 3] });",
      },
      { id: 'j', source: 't.numRows() + join("a", "b").length' },
    ]);
    await s.runAll();
    expect(text(s, 'j')).toBe('6');
    expect(s.cell('i').outputs).toEqual([]);
  });

  it('renders arrays of records and data frames as tables', async () => {
    const s = open([{ id: 'r', source: '[{ a: 1, b: "x" }, { a: 2, b: "<y>" }]' }]);
    await s.runAll();
    const data = (s.cell('r').outputs[0] as { data: Record<string, string> }).data;
    expect(data['text/html']).toContain('<th>a</th><th>b</th>');
    expect(data['text/html']).toContain('&lt;y&gt;');
  });

  it("removes a deleted cell's names from the kernel", async () => {
    const s = open([
      { id: 'a', source: 'const a = 1' },
      { id: 'b', source: 'a' },
    ]);
    await s.runAll();
    await s.deleteCell('a');
    expect(s.state('b')).toBe('stale');
    await s.runCell('b');
    expect(text(s, 'b')).toMatch(/a is not defined/);
  });
});

describe('notebook session: interrupt, timeout, crash', () => {
  it('interrupts an infinite loop, marks cells stale and is ready again', async () => {
    const s = open([
      { id: 'a', source: 'const a = 1' },
      { id: 'loop', source: 'while (true) {}' },
    ]);
    await s.runCell('a');
    const running = s.runCell('loop');
    // Wait until the loop really runs (a loaded machine may take a while to get there).
    while (s.state('loop') !== 'running') await new Promise((r) => setTimeout(r, 10));
    await new Promise((r) => setTimeout(r, 100));
    const started = performance.now();
    await s.interrupt();
    const took = performance.now() - started;
    await running;
    // Bounded, not fast: the speed of an interrupt is a benchmark figure (bench/notebook.bench.mjs).
    expect(took).toBeLessThan(5000);
    expect(s.state('a')).toBe('stale');
    expect(text(s, 'loop')).toMatch(/interrupted/);
    // Fresh kernel: `a` is gone until its cell runs again.
    await s.runCell('a');
    expect(s.state('a')).toBe('success');
  });

  it('enforces the per-cell timeout', async () => {
    const s = open(
      [
        { id: 'slow', source: 'while (true) {}' },
        { id: 'after', source: 'const later = 1' },
      ],
      { cellTimeoutMs: 300 },
    );
    await s.runAll();
    expect(s.state('slow')).toBe('error');
    expect(text(s, 'slow')).toMatch(/timed out after 300 ms/);
  });

  it('survives running out of memory: the heap limit kills the kernel, not the server', async () => {
    const s = open(
      [
        { id: 'a', source: 'const a = 1' },
        { id: 'oom', source: 'const big = [];\nwhile (true) big.push(new Array(1e5).fill(Math.random()));' },
      ],
      { maxHeapMb: 48 },
    );
    await s.runCell('a');
    await s.runCell('oom');
    expect(s.cell('oom').outputs[0]).toMatchObject({ output_type: 'error', ename: 'KernelCrash' });
    expect(text(s, 'oom')).toMatch(/out of memory/);
    expect(s.state('a')).toBe('stale');
    await s.runCell('a');
    expect(s.state('a')).toBe('success');
  });

  it('survives process.exit in a cell: reports the crash and restarts the kernel', async () => {
    const s = open([
      { id: 'a', source: 'const a = 1' },
      { id: 'exit', source: 'process.exit(3)' },
    ]);
    await s.runCell('a');
    await s.runCell('exit');
    expect(s.state('exit')).toBe('error');
    expect(text(s, 'exit')).toMatch(/crashed/);
    expect(s.state('a')).toBe('stale');
    await s.runCell('a');
    expect(s.state('a')).toBe('success');
  });
});
