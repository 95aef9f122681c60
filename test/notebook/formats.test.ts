import { mkdtemp, readFile, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { transform } from 'esbuild';
import { describe, expect, it } from 'vitest';
import {
  convertedPath,
  NotebookFormatError,
  parseIpynb,
  parseNbTs,
  readNotebookFile,
  serializeIpynb,
  serializeNbTs,
  toIpynbDocument,
  validateIpynb,
} from '../../core/notebook/formats.js';
import { Notebook, newCellId } from '../../core/notebook/schemas.js';

const T = '2026-01-02T03:04:05.000Z';
const sample = (): Notebook =>
  Notebook.parse({
    name: 'sales',
    metadata: { author: 'ada' },
    cells: [
      { id: 'intro001', cell_type: 'markdown', name: 'intro', source: '# Sales\n\nSome *text*.\n// %% [code] id=fake', created_at: T },
      {
        id: 'load0001',
        cell_type: 'code',
        name: 'load "data"',
        source: 'const rows: number[] = [1, 2];\n\n\n',
        created_at: T,
        metadata: { tags: ['x'] },
      },
      { id: 'trick001', cell_type: 'code', source: '// %% [code] id=evil\n// %%% [deeper]\nrows.length', created_at: T },
      { id: 'empty001', cell_type: 'code', source: '', created_at: T },
      {
        id: 'out00001',
        cell_type: 'code',
        source: 'console.log(1)',
        created_at: T,
        execution_count: 3,
        last_executed: T,
        outputs: [
          { output_type: 'stream', name: 'stdout', text: '1\n2\n' },
          { output_type: 'execute_result', execution_count: 3, data: { 'text/plain': 'a\nb', 'application/json': { a: 1 } }, metadata: {} },
          { output_type: 'error', ename: 'Error', evalue: 'boom', traceback: ['Error: boom', '    at cell line 1'] },
        ],
      },
      { id: 'raw00001', cell_type: 'raw', source: 'raw text\n', created_at: T },
    ],
  });

const essentials = (nb: Notebook) => nb.cells.map(({ id, name, cell_type, source }) => ({ id, name, cell_type, source }));

describe('cell record', () => {
  it('fills the spec defaults: 8-character id, code, empty name and source, count 0, timestamps', () => {
    const cell = Notebook.parse({ cells: [{}] }).cells[0];
    expect(cell.id).toMatch(/^[a-z0-9]{8}$/);
    expect(cell).toMatchObject({
      cell_type: 'code',
      name: '',
      source: '',
      outputs: [],
      execution_count: 0,
      metadata: {},
      last_executed: null,
    });
    expect(Date.parse(cell.created_at)).not.toBeNaN();
    expect(newCellId()).not.toBe(newCellId());
    expect(Notebook.parse({}).name).toBe('untitled');
  });
});

describe('*.nb.ts format', () => {
  it('is valid TypeScript with one marker per cell and a metadata header', () => {
    const text = serializeNbTs(sample());
    expect(text.split('\n')[0]).toBe(`// @hangar-notebook {"name":"sales","created_at":"${T}","metadata":{"author":"ada"}}`);
    expect(text).toContain('// %% [code] id=load0001 name="load \\"data\\"" metadata={"tags":["x"]}\nconst rows');
    expect(text).toContain('// %% [markdown] id=intro001 name="intro"\n// # Sales\n//\n// Some *text*.');
    expect(text.match(/^\/\/ %% \[/gm)).toHaveLength(6);
  });

  it('parses as TypeScript, as does the shipped example', async () => {
    await expect(transform(serializeNbTs(sample()), { loader: 'ts', format: 'esm' })).resolves.toBeDefined();
    const example = await readFile(join(import.meta.dirname, '..', '..', 'notebooks', 'sales.nb.ts'), 'utf8');
    await expect(transform(example, { loader: 'ts', format: 'esm' })).resolves.toBeDefined();
    expect(parseNbTs(example, 'sales.nb.ts').cells).toHaveLength(8);
  });

  it('round-trips ids, names, types and sources exactly, including marker look-alikes', () => {
    const once = parseNbTs(serializeNbTs(sample()));
    expect(essentials(once)).toEqual(essentials(sample()));
    expect(once.name).toBe('sales');
    expect(once.metadata).toEqual({ author: 'ada' });
    expect(serializeNbTs(once)).toBe(serializeNbTs(sample()));
  });

  it('names the file and line of a malformed marker', () => {
    const bad = '// @hangar-notebook {"name":"x"}\n\n// %% [code] id=ok000001\n1\n\n// %% [code] nope\n';
    expect(() => parseNbTs(bad, 'bad.nb.ts')).toThrowError(/bad\.nb\.ts:6: malformed cell marker/);
    expect(() => parseNbTs('const x = 1;\n', 'plain.nb.ts')).toThrowError(NotebookFormatError);
    expect(() => parseNbTs('// %% [code] id=a\n1\n\n// %% [code] id=a\n2\n', 'dup.nb.ts')).toThrowError(/appears twice/);
  });
});

describe('.ipynb format', () => {
  it('validates against the shipped nbformat v4 schema, with a TypeScript kernelspec and outputs kept', () => {
    const document = toIpynbDocument(sample());
    expect(validateIpynb(document)).toEqual([]);
    expect(document.metadata).toMatchObject({ kernelspec: { language: 'typescript' }, author: 'ada' });
    const out = parseIpynb(serializeIpynb(sample())).cells[4];
    expect(out.outputs).toEqual(sample().cells[4].outputs);
    expect(out.execution_count).toBe(3);
    expect(out.last_executed).toBe(T);
  });

  it('the validator rejects a document that breaks the schema', () => {
    const document = toIpynbDocument(sample()) as { cells: Array<Record<string, unknown>> };
    document.cells[1].id = 'bad id!';
    delete document.cells[1].outputs;
    expect(validateIpynb(document).length).toBeGreaterThan(0);
  });

  it('round-trips both ways and is byte-stable on the second round', () => {
    const ipynb1 = serializeIpynb(sample());
    const nbts1 = serializeNbTs(parseIpynb(ipynb1));
    const ipynb2 = serializeIpynb(parseNbTs(nbts1));
    const nbts2 = serializeNbTs(parseIpynb(ipynb2));
    expect(nbts2).toBe(nbts1);
    expect(serializeIpynb(parseNbTs(nbts2))).toBe(ipynb2);
    expect(essentials(parseNbTs(nbts2))).toEqual(essentials(sample()));
    // ipynb → ipynb keeps everything, byte for byte.
    expect(serializeIpynb(parseIpynb(ipynb1))).toBe(ipynb1);
  });

  it('reports malformed JSON with the file and line', async () => {
    const dir = await mkdtemp(join(tmpdir(), 'nbfmt-'));
    const file = join(dir, 'broken.ipynb');
    await writeFile(file, '{\n "nbformat": 4,\n "cells": [\n  {} {}\n ]\n}\n');
    await expect(readNotebookFile(file)).rejects.toThrowError(/broken\.ipynb:4: not valid JSON/);
    await expect(readNotebookFile(join(dir, 'missing.nb.ts'))).rejects.toThrowError(/missing\.nb\.ts: no such file/);
    expect(await readFile(file, 'utf8')).toContain('{} {}');
  });

  it('derives converted names from the extension', () => {
    expect(convertedPath('a/b.nb.ts')).toBe('a/b.ipynb');
    expect(convertedPath('b.ipynb')).toBe('b.nb.ts');
  });
});
