import * as acorn from 'acorn';
import { describe, expect, it } from 'vitest';
import { cycles, descendants, topologicalOrder } from '../../core/lib/graph.js';
import { analyzeCell, analyzeCells, analyzeNotebook } from '../../core/notebook/analysis/index.js';
import { decodeLineMap } from '../../core/notebook/analysis/sourcemap.js';
import { parsePlain, provesTypeScript } from '../../core/notebook/analysis/transpile.js';
import { buildTopology } from '../../core/notebook/graph.js';

const kinds = (problems: { kind: string }[]) => problems.map((p) => p.kind);

describe('cell analysis: writes and reads', () => {
  it('collects top-level declarations of every kind as writes', async () => {
    const a = await analyzeCell(
      `import fs, { join as j } from 'node:path';\nimport * as ns from 'x';\nconst { a, b: [c, ...d] } = src;\n` +
        `let e = 1, f;\nvar g;\nfunction h() {}\nclass K {}`,
    );
    expect(a.writes).toEqual(['fs', 'j', 'ns', 'a', 'c', 'd', 'e', 'f', 'g', 'h', 'K']);
    expect(a.reads).toEqual(['src']);
    expect(a.problems).toEqual([]);
  });

  it('does not count locals, parameters, closures or shadowing as reads', async () => {
    const a = await analyzeCell(`
function f(p, { q = dflt }) { const inner = p + q; return () => inner + outer; }
const g = (x) => { let y = x; { const y = 2; } return y + z; };
try { risky(); } catch (err) { console.log(err); }
for (const item of items) total2(item);
const obj = { key: value, [computed]: 1 };
obj2.prop;
label: for (;;) { break label; }
`);
    expect(a.reads.sort()).toEqual(['computed', 'dflt', 'items', 'obj2', 'outer', 'risky', 'total2', 'value', 'z']);
    expect(a.globals).toContain('console');
    expect(a.writes).toEqual(['f', 'g', 'obj']);
  });

  it("treats a name declared anywhere in the cell as the cell's own, whatever the order", async () => {
    const a = await analyzeCell('const total = helper(1);\nfunction helper(n) { return n * rate; }');
    expect(a.reads).toEqual(['rate']);
  });

  it('strips TypeScript syntax before analysis', async () => {
    const a = await analyzeCell(
      `interface Row { n: number }\ntype Id = string;\nenum Color { Red }\nconst rows: Row[] = input as Row[];\n` +
        `const pick = <T,>(xs: T[]): T => xs[0];\nconst first = pick<Row>(rows);\nimport type { Foo } from 'foo';`,
    );
    expect(a.writes).toEqual(['Color', 'rows', 'pick', 'first']);
    expect(a.reads).toEqual(['input']);
    expect(a.problems).toEqual([]);
  });

  it('keeps underscore names private to the cell', async () => {
    const a = await analyzeCell('const _tmp = 1;\nconst shown = _tmp + 1;');
    expect(a.writes).toEqual(['shown']);
    expect(a.privates).toEqual(['_tmp']);
    const b = await analyzeCell('const y = _other + 1;');
    expect(kinds(b.problems)).toEqual(['private']);
    expect(b.problems[0].message).toMatch(/_other.*private/);
  });

  it("reports x = x + 1, x++ and for-of on another cell's name as reassignment, with the line", async () => {
    for (const source of ['\nx = x + 1', 'x++', 'x += 1', 'for (x of xs) {}', '({ x } = o)']) {
      const a = await analyzeCell(source);
      expect(kinds(a.problems), source).toContain('reassignment');
      expect(a.reads).toContain('x');
    }
    expect((await analyzeCell('\nx = x + 1')).problems[0].line).toBe(2);
    // Assigning a name the cell declares is fine.
    expect((await analyzeCell('let n = 0;\nn = n + 1;\nn++')).problems).toEqual([]);
  });

  it('reports const x = x + 1 as a self-reference but allows recursion behind a function', async () => {
    expect(kinds((await analyzeCell('const x = x + 1')).problems)).toEqual(['self-reference']);
    expect((await analyzeCell('const fact = (n) => (n ? n * fact(n - 1) : 1)')).problems).toEqual([]);
  });

  it("warns about mutations of another cell's value but still reads it", async () => {
    const a = await analyzeCell('df.col = 1;\narr.push(2);\ndelete o.k;\nconst mine = [];\nmine.push(1);');
    expect(a.problems.map((p) => [p.kind, p.severity, p.name])).toEqual([
      ['mutation', 'warning', 'df'],
      ['mutation', 'warning', 'arr'],
      ['mutation', 'warning', 'o'],
    ]);
    expect(a.reads).toEqual(['df', 'arr', 'o']);
    expect(a.program).toBeDefined();
  });

  it('reports a syntax error with its position instead of throwing', async () => {
    const a = await analyzeCell('const a = 1;\nconst b = ;');
    expect(a.problems).toHaveLength(1);
    expect(a.problems[0]).toMatchObject({ kind: 'syntax', severity: 'error', line: 2 });
    expect(a.program).toBeUndefined();
  });

  it('refuses export and rewrites imports so the kernel can run them', async () => {
    expect(kinds((await analyzeCell('export const a = 1')).problems)).toEqual(['export']);
    const a = await analyzeCell("import { readFile } from 'node:fs/promises';\nconst m = await import('node:os');");
    expect(a.program).toContain('await __hangar.import("node:fs/promises")');
    expect(a.program).toContain("__hangar.import('node:os')");
    expect(a.writes).toEqual(['readFile', 'm']);
  });

  it('marks the last expression as the cell value', async () => {
    expect((await analyzeCell('const a = 1;\na * 2')).hasValue).toBe(true);
    expect((await analyzeCell('const a = 1;')).hasValue).toBe(false);
  });

  it('maps TypeScript lines back through the source map', async () => {
    const a = await analyzeCell('type A = {\n  n: number\n};\nconst x: A = { n: 1 };\nthrow new Error("x")');
    // The program's last body line (the throw) must map to source line 5.
    const lines = a.program!.split('\n');
    const throwLine = lines.findIndex((l) => l.includes('throw'));
    expect(a.lineMap![throwLine]).toBe(5);
    expect(decodeLineMap(JSON.stringify({ mappings: 'AAAA;AACA;;AAEA' }))).toEqual([1, 2, undefined, 4]);
  });
});

describe('batched TypeScript stripping', () => {
  const tsCells = [
    'const a: number = 1;\nfunction twice(x: number): number {\n  return x * 2;\n}\ntwice(a)',
    'enum Level { Low, High }\nconst lv: Level = Level.High',
    "import { join } from 'node:path';\nconst p: string = join('a', 'b')",
    'type T = { n: number };\nconst t: T = { n: base };\nconst s = `multi\nline ${t.n}`;\nthrow new Error(s)',
  ];

  it('gives each cell the same result as analysing it alone', async () => {
    const uniq = tsCells.map((src, i) => `${src}\n// batch ${i}`);
    const together = await analyzeCells(uniq);
    const alone = await Promise.all(uniq.map((src) => analyzeCell(`${src} `)));
    for (let i = 0; i < uniq.length; i++) {
      expect(together[i].writes).toEqual(alone[i].writes);
      expect(together[i].reads).toEqual(alone[i].reads);
      expect(together[i].problems).toEqual([]);
    }
    expect(together[0].writes).toEqual(['a', 'twice']);
    expect(together[1].writes).toEqual(['Level', 'lv']);
    expect(together[3].reads).toEqual(['base']);
    // Line maps point into the cell's own source, not the batch.
    const program = together[3].program!.split('\n');
    expect(together[3].lineMap![program.findIndex((l) => l.includes('throw'))]).toBe(5);
  });

  it('reports a syntax error in one TypeScript cell at its own line and analyses the rest', async () => {
    const [good, bad] = await analyzeCells(['const g: number = 1 // b1', 'const x: number = 1;\nconst y: = 2; // b2']);
    expect(good.writes).toEqual(['g']);
    expect(bad.problems[0]).toMatchObject({ kind: 'syntax', line: 2 });
  });
});

describe('notebook analysis: graph, order, conflicts, cycles', () => {
  const cell = (id: string, source: string) => ({ id, cell_type: 'code', source });

  it('orders cells by dependency; among ready cells the earliest in the notebook goes first', async () => {
    const nb = await analyzeNotebook([
      cell('c', 'const total = a + b'),
      { id: 'md', cell_type: 'markdown', source: '# hi' },
      cell('a', 'const a = 1'),
      cell('b', 'const b = 2'),
      cell('d', 'const unrelated = 0'),
    ]);
    expect(nb.order).toEqual(['a', 'b', 'c', 'd']);
    expect([...nb.topology.parents.get('c')!]).toEqual(['a', 'b']);
  });

  it('reports a name defined by two cells on both', async () => {
    const nb = await analyzeNotebook([cell('one', 'const x = 1'), cell('two', 'let x = 2'), cell('r', 'x')]);
    expect(kinds(nb.cells.get('one')!.problems)).toEqual(['multiple-definitions']);
    expect(nb.cells.get('two')!.problems[0].message).toContain('one');
  });

  it('reports cycles on each cell and blocks them and their descendants', async () => {
    const nb = await analyzeNotebook([
      cell('p', 'const a = b + 1'),
      cell('q', 'const b = a + 1'),
      cell('r', 'const c = a'),
      cell('s', 'const free = 1'),
    ]);
    expect(nb.cycles).toEqual([['p', 'q']]);
    expect(nb.cells.get('p')!.problems[0].message).toMatch(/cycle: p → q → p/);
    expect(nb.order).toEqual(['s']);
    expect(nb.blocked).toEqual(['p', 'q', 'r']);
  });

  it('links a cell that shadows a global to its readers', async () => {
    const nb = await analyzeNotebook([cell('def', 'const fetch = () => 1'), cell('use', 'fetch()')]);
    expect([...nb.topology.parents.get('use')!]).toEqual(['def']);
  });
});

describe('graph algorithms', () => {
  const topo = () =>
    buildTopology(
      ['a', 'b', 'c', 'd'],
      (n) => ({ a: ['x'], b: ['y'], c: ['z'], d: [] })[n]!,
      (n) => ({ a: [], b: ['x'], c: ['x', 'y'], d: ['z'] })[n]!,
    );

  it('computes descendants (the stale set after an edit)', () => {
    expect([...descendants(topo(), ['b'])].sort()).toEqual(['c', 'd']);
    expect([...descendants(topo(), ['d'])]).toEqual([]);
  });

  it('orders a subset ignoring edges from outside it', () => {
    expect(topologicalOrder(topo(), new Set(['c', 'd'])).order).toEqual(['c', 'd']);
  });

  it('finds no cycles in a DAG and handles a long chain without recursion', () => {
    expect(cycles(topo())).toEqual([]);
    const n = 20_000;
    const ids = Array.from({ length: n }, (_, i) => `c${i}`);
    const chain = buildTopology(
      ids,
      (id) => [`v${id.slice(1)}`],
      (id) => (id === 'c0' ? [] : [`v${Number(id.slice(1)) - 1}`]),
    );
    expect(cycles(chain)).toEqual([]);
    expect(topologicalOrder(chain).order).toHaveLength(n);
  });
});

describe('the TypeScript check before parsing', () => {
  // Valid JavaScript with the TypeScript-looking sequences where they are not code: each must still
  // be parsed by acorn as plain JavaScript.
  const javascript = [
    'const s = "const x: number";',
    "const s = 'it\\'s (x: 1)';",
    'const s = "a\\\\"; const t = "(z: 1)";',
    '// const x: number\nconst y = 1;',
    '/* function f(x: number) {} */ f(1);',
    'const t = `(x: ${a})`;\nconst u = 1;',
    'const r = /(a: b)/;',
    'const d = a / b; const e = "(x: 1)";',
    'const o = { x: number, y: (a) ? b : c, const: 1, let: 2, var: 3 };\no.var;',
    'const z = cond ? (y) : w;',
    'switch (k) { case (x): break; }',
    'label: for (;;) break label;',
    'class A { const = 1; let = 2; var = 3; m(a, b) { return a ?(b): 0; } }',
    'const constant = 1; let letter: 2;'.replace(': 2', ' = 2'),
    'f(a ? b : c, { d: (e) });',
  ];
  // TypeScript that the check proves without parsing.
  const proven = [
    'const a: number = 1;',
    '// run 1\nconst v0: number = 1;',
    'function f(x: number) { return x; }',
    'let y?: string;',
    'let z!: number;',
    'const g = (a: number) => a;',
    "const s = '(x'; var n\t:\tstring = s;",
  ];

  it('never sends JavaScript down the TypeScript path', async () => {
    for (const source of javascript) {
      expect(provesTypeScript(source), source).toBe(false);
      expect(parsePlain(source), source).toBeDefined();
    }
  });

  it('proves TypeScript only where acorn would fail', async () => {
    for (const source of proven) {
      expect(provesTypeScript(source), source).toBe(true);
      expect(() => acorn.parse(source, { ecmaVersion: 'latest', sourceType: 'module' }), source).toThrow();
    }
    // Unproven TypeScript (the check stops at a template literal) still reaches esbuild after acorn.
    const late = await analyzeCell('const t = `x`;\nconst n: number = 1;\nm = n');
    expect(late.writes).toEqual(['t', 'n']);
    expect(late.problems).toMatchObject([{ kind: 'reassignment', name: 'm', line: 3 }]);
  });

  it('keeps a plain cell plain (columns, no segment map) and a TypeScript cell at its own lines', async () => {
    const plain = await analyzeCell('const s = "(x: 1)";\n  y = s;');
    expect(plain.segmentMap).toBeUndefined();
    expect(plain.problems).toEqual([expect.objectContaining({ kind: 'reassignment', name: 'y', line: 2, column: 3 })]);
    const [typed, broken] = await analyzeCells(['const s: string = "x";\n\n  y = s; // typed', 'const x: number = 1;\nconst y: = 2;']);
    // Through esbuild: the line comes from the source map, and there is no column to trust.
    expect(typed.problems).toEqual([expect.objectContaining({ kind: 'reassignment', name: 'y', line: 3 })]);
    expect(typed.problems[0].column).toBeUndefined();
    expect(broken.problems).toEqual([expect.objectContaining({ kind: 'syntax', line: 2, column: 10 })]);
  });
});

describe('TypeScript in several esbuild batches', () => {
  // Each cell reads the one before, so esbuild renames every declaration in a batch that holds the
  // reader (a declaration shadowing a free name used elsewhere): the names and columns must come back.
  const cells = (n: number, tag: string) =>
    Array.from({ length: n }, (_, i) =>
      i % 7 === 3
        ? `const t${i} = \`${tag}\`;\nconst v${i}: number = ${i === 0 ? 1 : `v${i - 1}`} + 1; const w${i}: number = v${i} * 2;`
        : `// ${tag}\nconst v${i}: number = ${i === 0 ? 1 : `v${i - 1}`} + 1; const w${i}: number = v${i} * 2;`,
    );

  it('gives every cell of a large notebook what a small batch gives it', async () => {
    const many = await analyzeCells(cells(450, 'many'));
    // The same cells two by two (same text after a marker comment that differs per run).
    const small = cells(450, 'pair');
    for (let i = 0; i < small.length; i += 2) {
      const pair = await analyzeCells([small[i], small[i + 1] ?? '// filler\nconst q: number = 0;']);
      for (const k of [0, 1]) {
        if (i + k >= small.length) continue;
        const { program, ...rest } = pair[k];
        const other = many[i + k];
        expect(other.program?.replace('many', 'pair')).toEqual(program);
        expect({ ...other, program: undefined }).toEqual({ ...rest, program: undefined });
      }
    }
    expect(many[449].writes).toEqual(['v449', 'w449']);
    expect(many[449].reads).toEqual(['v448']);
  });

  it('redoes alone a cell whose JavaScript uses a name its source does not have', async () => {
    const sources = [
      // esbuild adds a helper for the decorator: the cell cannot be cut out of the batch.
      'function logged(value: unknown, context: unknown) {}\n@logged class Box { n: number = 1 }\nconst big: number = 1_000;',
      // An escaped name and a number esbuild writes as 1e3: the text alone cannot tell.
      'const \\u0061bc: number = 1_000;\nabc + big',
      'const last: string = "\\u0041";',
    ];
    const together = await analyzeCells(sources);
    expect(together.map((cell) => cell.writes)).toEqual([['logged', 'Box', 'big'], ['abc'], ['last']]);
    expect(together[1].reads).toEqual(['big']);
    expect(together[0].program).not.toContain('__hangar_cell_');
    expect(together[0].program).toMatch(/var __\w+ = /);
    expect(together[1].program).toContain('1e3');
  });

  it('maps every segment to where its token is in the restored line', async () => {
    const cell = 'const v: number = 1; const w: number = v + 1;';
    // Beside a reader of a free `v`, esbuild writes `const v2 = 1`; put back, `1` is at column 12, not 13.
    const [renamed] = await analyzeCells([cell, 'const u: number = v * 2;']);
    const [kept] = await analyzeCells([cell, 'const u: number = 2;']);
    expect(renamed.program).toBe(kept.program);
    expect(renamed.segmentMap).toEqual(kept.segmentMap);
    const lines = renamed.program!.split('\n');
    expect(lines[1]).toBe('  const v = 1;');
    expect(renamed.segmentMap![1]).toEqual([
      [0, 1],
      [8, 1],
      [12, 1],
    ]);
    expect(lines[2]).toBe('  const w = v + 1;');
    expect(renamed.segmentMap![2].map(([column]) => lines[2][column])).toEqual([' ', 'w', 'v', '1']);
  });
});

describe('the analysis cache', () => {
  it('keeps the 5,000 newest cells, evicting the oldest first', async () => {
    const oldest = await analyzeCell('const kept0 = 1; // cache test');
    const fresh = Array.from({ length: 5000 }, (_, i) => `const c${i} = ${i}; // cache test`);
    const first = await analyzeCells(fresh.slice(0, 2500));
    const second = await analyzeCells(fresh.slice(2500));
    expect(await analyzeCell(fresh[4999])).toBe(second[2499]);
    expect(await analyzeCell(fresh[0])).toBe(first[0]);
    // The entry older than the last 5,000 was evicted: analysed again, an equal but new object.
    const again = await analyzeCell('const kept0 = 1; // cache test');
    expect(again).not.toBe(oldest);
    expect(again).toEqual(oldest);
  });
});
