/**
 * Discovery's rules at their edges (issue 30, the `discovery` mutation group): which paths are
 * entries, which of two files keeps a name, what a reload keeps and what it replaces, what the log
 * says. The real Discovery and Registry on real files, with two small kinds of the test's own (one
 * taking JSON too), so each rule is seen without the agents' own validation in the way.
 */
import { readdirSync } from 'node:fs';
import { mkdir, rename, rm, symlink, writeFile } from 'node:fs/promises';
import path from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { Discovery, jsonDropInVersion } from '../../core/kernel/discovery.js';
import { Logger } from '../../core/kernel/log.js';
import { type DropInKind, Registry, type RegistryChange } from '../../core/kernel/registry.js';
import { eventually, makeWorkspace } from '../support/server.js';

/** A reload takes milliseconds; a wrong rule waiting out the default 15 s would only slow the mutation run. */
const soon = <T>(check: () => T | undefined | false | Promise<T | undefined | false>) => eventually(check, 8_000);

interface Widget {
  name: string;
  size: number;
}

/** `widgets/`: code or JSON; a definition is an object with a numeric size, named by its file unless it says. */
const widgetKind: DropInKind<Widget> = {
  kind: 'widget',
  folder: 'widgets',
  json: true,
  load(exported, defaultName) {
    const value = exported as { name?: unknown; size?: unknown };
    if (typeof value !== 'object' || value === null || typeof value.size !== 'number') throw new Error('a widget needs a numeric size');
    return { name: typeof value.name === 'string' ? value.name : defaultName, size: value.size };
  },
  nameOf: (widget) => widget.name,
};

/** `things/`: names come from the definition, and naming one without a name is a plain Error. */
const thingKind: DropInKind<{ name?: string }> = {
  kind: 'thing',
  folder: 'things',
  load: (exported) => exported as { name?: string },
  nameOf(thing) {
    if (!thing.name) throw new TypeError('a thing needs a name');
    return thing.name;
  },
};

/** `gadgets/`: code only. */
const gadgetKind: DropInKind<Widget> = { ...widgetKind, kind: 'gadget', folder: 'gadgets', json: false };

const widget = (size: number, name?: string) => `export default ${JSON.stringify({ ...(name ? { name } : {}), size })};\n`;

interface Running {
  root: string;
  registry: Registry;
  discovery: Discovery;
  lines: string[];
  changes: RegistryChange[];
  reloads: string[];
  write(relative: string, content: string): Promise<void>;
}

const running: Discovery[] = [];
afterEach(async () => {
  for (const discovery of running.splice(0)) await discovery.close();
});

async function start(
  files: Record<string, string>,
  options: { watch?: boolean; loadTimeoutMs?: number; root?: string } = {},
): Promise<Running> {
  const root = options.root ?? (await makeWorkspace(files));
  const registry = new Registry();
  const lines: string[] = [];
  const changes: RegistryChange[] = [];
  const reloads: string[] = [];
  registry.on('change', (change) => changes.push(change));
  const discovery = new Discovery({
    root,
    registry,
    log: new Logger('debug', (line) => lines.push(line)),
    provided: {},
    loadTimeoutMs: options.loadTimeoutMs,
    onReload: (kind, outcome) => reloads.push(`${kind}:${outcome}`),
  });
  running.push(discovery);
  discovery.register(widgetKind);
  discovery.register(gadgetKind);
  discovery.register(thingKind);
  await discovery.scan();
  if (options.watch !== false) await discovery.watch();
  const write = async (relative: string, content: string) => {
    await mkdir(path.dirname(path.join(root, relative)), { recursive: true });
    await writeFile(path.join(root, relative), content);
  };
  return { root, registry, discovery, lines, changes, reloads, write };
}

const names = (registry: Registry, kind = 'widget') => registry.list<Widget>(kind).map((e) => `${e.name}@${e.file}`);
const problems = (registry: Registry) => registry.problemsOf().map((p) => `${p.kind} ${p.entry}: ${p.message}`);

describe('which files are entries', () => {
  it('takes <name>.<code> and <name>/index.<code> of each kind, JSON only where the kind accepts it, and skips helpers', async () => {
    const { registry } = await start({
      'widgets/plain.ts': widget(1),
      'widgets/module.mjs': widget(2),
      'widgets/common.cjs': 'module.exports = { size: 3 };\n',
      'widgets/typed.mts': widget(4),
      'widgets/data.json': '{ "size": 5 }',
      'widgets/folder/index.js': widget(6),
      'widgets/folder/helper.ts': widget(60),
      'widgets/deep/er/index.ts': widget(61),
      'widgets/_helper.ts': widget(62),
      'widgets/.hidden.ts': widget(63),
      'widgets/_private/index.ts': widget(66),
      'widgets/.tool/index.js': widget(67),
      'widgets/types.d.ts': 'export type X = 1;\n',
      'widgets/plain.test.ts': widget(64),
      'widgets/plain.spec.js': widget(65),
      'widgets/notes.md': '# not code\n',
      'gadgets/tool.tsx': widget(7),
      'gadgets/config.json': '{ "size": 8 }',
      'other/stray.ts': widget(9),
      'root.ts': widget(10),
    });
    expect(names(registry)).toEqual([
      'common@widgets/common.cjs',
      'data@widgets/data.json',
      'folder@widgets/folder/index.js',
      'module@widgets/module.mjs',
      'plain@widgets/plain.ts',
      'typed@widgets/typed.mts',
    ]);
    expect(registry.list<Widget>('widget').map((e) => e.definition.size)).toEqual([3, 5, 6, 2, 1, 4]);
    expect(names(registry, 'gadget')).toEqual(['tool@gadgets/tool.tsx']);
    expect(problems(registry)).toEqual([]);
  });

  it('follows symbolic links to files and folders, and passes over dangling links, dot-named folders and folders named like files', async () => {
    const root = await makeWorkspace({
      'shared/real.ts': widget(1),
      'shared/dir/index.ts': widget(2),
      'widgets/.cache/index.ts': widget(3),
      'widgets/odd.ts/inner.ts': widget(4),
      'widgets/box/index.ts/inner.ts': widget(5),
      'widgets/box/index.js': widget(6),
    });
    await symlink(path.join(root, 'shared/real.ts'), path.join(root, 'widgets/linked.ts'));
    await symlink(path.join(root, 'shared/dir'), path.join(root, 'widgets/linkdir'));
    await symlink(path.join(root, 'shared/gone.ts'), path.join(root, 'widgets/dangling.ts'));
    const { registry } = await start({}, { root, watch: false });
    expect(names(registry)).toEqual(['box@widgets/box/index.js', 'linkdir@widgets/linkdir/index.ts', 'linked@widgets/linked.ts']);
    expect(problems(registry)).toEqual([]);
  });

  it("takes the default export, else the export named after the kind, else the module's exports; a zero-byte file is no entry yet", async () => {
    const { registry } = await start({
      'widgets/default.ts': `export const widget = { size: 1 };\nexport default { size: 2 };\n`,
      'widgets/named.ts': `export const widget = { size: 3 };\nexport const size = 30;\n`,
      'widgets/whole.ts': `export const size = 4;\n`,
      'widgets/empty.ts': '',
      'widgets/empty.json': '',
    });
    expect(registry.list<Widget>('widget').map((e) => `${e.name}=${e.definition.size}`)).toEqual(['default=2', 'named=3', 'whole=4']);
    expect(problems(registry)).toEqual([]);
  });

  it('loads the entries of a drop-in folder made after the start, and drops them when the folder goes', async () => {
    const run = await start({ 'widgets/w.ts': widget(1) });
    await run.write('gadgets/g.ts', widget(2));
    await run.write('gadgets/h/index.ts', widget(3));
    await soon(() => names(run.registry, 'gadget').length === 2);
    await run.write('gadgets/later.ts', widget(4));
    await soon(() => names(run.registry, 'gadget').length === 3);
    await run.discovery.idle();
    expect(run.registry.list('gadget').map((e) => e.loads)).toEqual([1, 1, 1]);
    await rm(path.join(run.root, 'gadgets'), { recursive: true });
    await soon(() => names(run.registry, 'gadget').length === 0);
    expect(names(run.registry)).toEqual(['w@widgets/w.ts']);
  });

  it('after close, nothing more is loaded: no folder is watched any longer, also one that appeared after the start', async () => {
    const run = await start({ 'widgets/w.ts': widget(1) });
    await run.write('gadgets/g.ts', widget(2));
    await soon(() => names(run.registry, 'gadget').length === 1);
    await run.write('gadgets/g2.ts', widget(3));
    await soon(() => names(run.registry, 'gadget').length === 2);
    await run.discovery.idle();
    await run.discovery.close();
    run.changes.length = 0;
    await run.write('gadgets/late.ts', widget(4));
    await run.write('widgets/late.ts', widget(5));
    await run.write('widgets/w.ts', widget(6));
    await rm(path.join(run.root, 'gadgets/g.ts'));
    await new Promise((r) => setTimeout(r, 300));
    expect(run.changes).toEqual([]);
    expect(names(run.registry)).toEqual(['w@widgets/w.ts']);
    expect(names(run.registry, 'gadget')).toEqual(['g@gadgets/g.ts', 'g2@gadgets/g2.ts']);
  });

  it('refuses a second kind for a folder or a name already registered', () => {
    const discovery = new Discovery({ root: '/nowhere', registry: new Registry(), log: new Logger('silent'), provided: {} });
    discovery.register(widgetKind);
    expect(() => discovery.register({ ...widgetKind, kind: 'other' })).toThrow(
      'drop-in kind "other" (folder widgets) is already registered',
    );
    expect(() => discovery.register({ ...widgetKind, folder: 'elsewhere' })).toThrow(
      'drop-in kind "widget" (folder elsewhere) is already registered',
    );
    discovery.register(gadgetKind);
  });

  it('picks up a file of each rule while watching, and leaves the skipped ones alone', async () => {
    const run = await start({ 'widgets/first.ts': widget(1) });
    await run.write('widgets/_helper.ts', widget(2));
    await run.write('widgets/x.test.ts', widget(3));
    await run.write('widgets/later.json', '{ "size": 4 }');
    await run.write('gadgets/later.json', '{ "size": 5 }');
    await run.write('widgets/box/index.ts', widget(6));
    await run.write('widgets/_private/index.ts', widget(7));
    await soon(() => names(run.registry).length === 3);
    await run.discovery.idle();
    expect(names(run.registry)).toEqual(['box@widgets/box/index.ts', 'first@widgets/first.ts', 'later@widgets/later.json']);
    expect(names(run.registry, 'gadget')).toEqual([]);
    expect(problems(run.registry)).toEqual([]);
  });
});

describe('names', () => {
  it('of two files claiming a name, the first by path keeps it; the other is reported naming both', async () => {
    // A folder entry first by path: a folder's index is found after the files beside it.
    const { registry, reloads } = await start({
      'widgets/b.ts': widget(2, 'twin'),
      'widgets/a/index.ts': widget(1, 'twin'),
      'widgets/c.ts': widget(3, 'twin'),
    });
    expect(names(registry)).toEqual(['twin@widgets/a/index.ts']);
    expect(problems(registry)).toEqual([
      'widget widgets/b.ts: duplicate widget name "twin": defined in widgets/a/index.ts and widgets/b.ts',
      'widget widgets/c.ts: duplicate widget name "twin": defined in widgets/a/index.ts and widgets/c.ts',
    ]);
    expect(registry.problemsOf().map((p) => p.file)).toEqual(['widgets/b.ts', 'widgets/c.ts']);
    // The problem carries the name a call would use: the file's own, as the entry never loaded.
    expect(registry.problemsOf().map((p) => p.name)).toEqual(['b', 'c']);
    expect(reloads).toEqual(['widget:ok', 'widget:error', 'widget:error']);
  });

  it('when the holder goes, a file that lost the name to it takes it; one that failed for another reason does not reload', async () => {
    const run = await start({
      'widgets/a.ts': widget(1, 'twin'),
      'widgets/b.ts': widget(2, 'twin'),
      'widgets/broken.ts': 'export default { nope: true };\n',
    });
    expect(problems(run.registry)).toHaveLength(2);
    run.changes.length = 0;
    await rm(path.join(run.root, 'widgets/a.ts'));
    await soon(() => run.registry.get('widget', 'twin')?.file === 'widgets/b.ts');
    await run.discovery.idle();
    expect(run.registry.get<Widget>('widget', 'twin')!.definition.size).toBe(2);
    expect(problems(run.registry)).toEqual(['widget widgets/broken.ts: invalid widget definition: a widget needs a numeric size']);
    expect(run.changes.map((c) => `${c.type} ${c.file}`)).toEqual([
      'removed widgets/a.ts',
      'added widgets/b.ts',
      'error-cleared widgets/b.ts',
    ]);
  });

  it('the file that lost a name going away leaves the holder as it is and takes its own problem with it', async () => {
    const run = await start({ 'widgets/a.ts': widget(1, 'twin'), 'widgets/b.ts': widget(2, 'twin') });
    run.changes.length = 0;
    await rm(path.join(run.root, 'widgets/b.ts'));
    await soon(() => problems(run.registry).length === 0);
    await run.discovery.idle();
    expect(names(run.registry)).toEqual(['twin@widgets/a.ts']);
    expect(run.changes.map((c) => `${c.type} ${c.file}`)).toEqual(['error-cleared widgets/b.ts']);
  });

  it('a rename inside the file takes the old name away; the file keeps its entry', async () => {
    const run = await start({ 'widgets/w.ts': widget(1, 'before') });
    await run.write('widgets/w.ts', widget(2, 'after'));
    await soon(() => run.registry.get('widget', 'after'));
    await run.discovery.idle();
    expect(names(run.registry)).toEqual(['after@widgets/w.ts']);
    expect(run.changes.map((c) => c.type)).toEqual(['added', 'removed', 'added']);
  });

  it("a broken file's problem carries its last good name, not its file's", async () => {
    const run = await start({ 'widgets/w.ts': widget(1, 'custom') });
    await run.write('widgets/w.ts', 'export default { size: "big" };\n');
    await soon(() => run.registry.problemsOf().length === 1);
    expect(run.registry.problemsOf()[0]).toMatchObject({ name: 'custom', entry: 'widgets/w.ts' });
    expect(run.registry.get<Widget>('widget', 'custom')!.definition.size).toBe(1);
  });
});

describe('reloads', () => {
  it('a save that builds the same code keeps the loaded version and clears an earlier problem', async () => {
    const run = await start({ 'widgets/w.ts': widget(1), 'widgets/helper.ts': 'export const size = 1;\n' });
    const first = run.registry.get('widget', 'w')!;
    // The same bytes saved again: nothing to load.
    await run.write('widgets/w.ts', widget(1));
    await new Promise((r) => setTimeout(r, 60));
    await run.discovery.idle();
    expect(run.registry.get('widget', 'w')).toBe(first);
    expect(first.loads).toBe(1);
    // A different text that builds to the same module is also the same version.
    await run.write('widgets/w.ts', `${widget(1)}\n\n`);
    await new Promise((r) => setTimeout(r, 60));
    await run.discovery.idle();
    expect(run.registry.get('widget', 'w')!.loads).toBe(1);
    await run.write('widgets/w.ts', widget(5));
    await soon(() => run.registry.get<Widget>('widget', 'w')!.definition.size === 5);
    expect(run.registry.get('widget', 'w')!.loads).toBe(2);
  });

  it('after the first scan, each load and reload is one info line; the scan itself logs per entry at debug', async () => {
    const run = await start({ 'widgets/w.ts': widget(1) });
    expect(run.lines.filter((l) => / info /.test(l) && /loaded|reloaded/.test(l))).toEqual([]);
    expect(run.lines.some((l) => / debug drop-in loaded .*kind=widget name=w file=widgets\/w\.ts/.test(l))).toBe(true);
    expect(run.lines.find((l) => l.includes('discovery finished'))).toMatch(/entries=1 cached=0 code_cached=0 ms=\d{1,6}$/);
    await run.write('widgets/w.ts', widget(2));
    await soon(() => run.lines.some((l) => / info {2}reloaded widgets\/w\.ts in \d+ ms$/.test(l)));
    await run.write('widgets/n.ts', widget(3));
    await soon(() => run.lines.some((l) => / info {2}loaded widgets\/n\.ts in \d+ ms$/.test(l)));
  });

  it('a second start on the same workspace takes the code entries from the build cache, not the JSON ones', async () => {
    const first = await start(
      { 'widgets/a.ts': widget(1), 'widgets/b/index.ts': widget(2), 'widgets/data.json': '{ "size": 3 }' },
      { watch: false },
    );
    expect(first.lines.find((l) => l.includes('discovery finished'))).toMatch(/entries=3 cached=0 /);
    const second = await start({}, { root: first.root, watch: false });
    expect(second.lines.find((l) => l.includes('discovery finished'))).toMatch(/entries=3 cached=2 code_cached=2 /);
    expect(second.registry.list<Widget>('widget').map((e) => [e.name, e.definition.size, e.version])).toEqual(
      first.registry.list<Widget>('widget').map((e) => [e.name, e.definition.size, e.version]),
    );
  });

  it('a removed entry goes, with a line in the log; a removed broken entry takes its problem with it', async () => {
    const run = await start({ 'widgets/w.ts': widget(1), 'widgets/bad.ts': 'export default 1;\n' });
    expect(problems(run.registry)).toHaveLength(1);
    await rm(path.join(run.root, 'widgets/w.ts'));
    await rm(path.join(run.root, 'widgets/bad.ts'));
    await soon(() => names(run.registry).length === 0 && problems(run.registry).length === 0);
    expect(run.lines.some((l) => /info {2}drop-in removed kind=widget name=w file=widgets\/w\.ts/.test(l))).toBe(true);
  });

  it('a folder removed takes its entries only; a folder of a similar name keeps its own', async () => {
    const run = await start({
      'widgets/set/index.ts': widget(1),
      'widgets/settings/index.ts': widget(2),
      'widgets/lone.ts': widget(3),
    });
    await rm(path.join(run.root, 'widgets/set'), { recursive: true });
    await soon(() => !run.registry.get('widget', 'set'));
    await run.discovery.idle();
    expect(names(run.registry)).toEqual(['lone@widgets/lone.ts', 'settings@widgets/settings/index.ts']);
  });

  it('a changed helper reloads exactly the entries that bundle it', async () => {
    const run = await start({
      'widgets/uses.ts': `import { size } from './_size';\nexport default { size };\n`,
      'widgets/other.ts': widget(9),
      'widgets/_size.ts': 'export const size = 1;\n',
    });
    const other = run.registry.get('widget', 'other')!;
    await run.write('widgets/_size.ts', 'export const size = 2;\n');
    await soon(() => run.registry.get<Widget>('widget', 'uses')!.definition.size === 2);
    await run.discovery.idle();
    expect(run.registry.get('widget', 'other')).toBe(other);
  });

  it('a JSON entry that is not JSON is reported with the parser message; its version is its length and hash', async () => {
    const run = await start({ 'widgets/data.json': '{ "size": 1 }' });
    expect(run.registry.get('widget', 'data')!.version).toBe(jsonDropInVersion('{ "size": 1 }'));
    await run.write('widgets/data.json', '{ size: 1 }');
    await soon(() => run.registry.problemsOf().length === 1);
    expect(run.registry.problemsOf()[0]!.message).toMatch(/^invalid JSON: /);
    expect(run.registry.problemsOf()[0]).toMatchObject({ entry: 'widgets/data.json', file: 'widgets/data.json' });
    expect(run.registry.get<Widget>('widget', 'data')!.definition.size).toBe(1);
  });
});

describe('errors', () => {
  it('names the file, line and column in the log, with the code frame, when the error has a place', async () => {
    const { lines, registry } = await start({
      'widgets/boom.ts': "const x = 1;\nthrow new Error('at import');\nexport default { size: x };\n",
    });
    const problem = registry.problemsOf()[0]!;
    expect(problem).toMatchObject({ message: 'at import', file: 'widgets/boom.ts', line: 2 });
    expect(problem.excerpt).toContain("> 2 | throw new Error('at import');");
    const line = lines.find((l) => l.includes('drop-in error in'))!;
    expect(line).toContain(`drop-in error in widgets/boom.ts:2${problem.column ? `:${problem.column}` : ''}: at import\n`);
    expect(line).toContain("> 2 | throw new Error('at import');");
  });

  it('an error of any other kind is reported as its text, against the entry', async () => {
    const { registry, lines } = await start({
      'things/ok.ts': 'export default { name: "ok" };\n',
      'things/nameless.ts': 'export default {};\n',
    });
    expect(names(registry, 'thing')).toEqual(['ok@things/ok.ts']);
    expect(registry.problemsOf()).toEqual([
      expect.objectContaining({
        kind: 'thing',
        name: 'nameless',
        entry: 'things/nameless.ts',
        file: 'things/nameless.ts',
        message: 'TypeError: a thing needs a name',
      }),
    ]);
    expect(lines.some((l) => l.endsWith('error drop-in error in things/nameless.ts: TypeError: a thing needs a name'))).toBe(true);
  });

  it('names only the file, without a code frame, when the error has no place', async () => {
    const { lines, registry } = await start({ 'widgets/bad.ts': 'export default { size: "x" };\n' });
    expect(registry.problemsOf()[0]).toMatchObject({ line: null, excerpt: null, file: 'widgets/bad.ts' });
    expect(lines.find((l) => l.includes('drop-in error in'))).toMatch(
      /error drop-in error in widgets\/bad\.ts: invalid widget definition: a widget needs a numeric size$/,
    );
  });

  it('a top level that does not finish in time is reported for that entry; the others load', async () => {
    const { registry, lines } = await start(
      {
        'widgets/a.ts': widget(1),
        'widgets/spin.ts': 'while (true) {}\nexport default { size: 2 };\n',
        'widgets/z.ts': widget(3),
      },
      { loadTimeoutMs: 200, watch: false },
    );
    expect(names(registry)).toEqual(['a@widgets/a.ts', 'z@widgets/z.ts']);
    expect(problems(registry)).toEqual(['widget widgets/spin.ts: top-level code did not finish in 200 ms']);
    expect(registry.problemsOf()[0]!.name).toBe('spin');
    expect(lines.some((l) => l.includes('drop-in error in widgets/spin.ts: top-level code did not finish in 200 ms'))).toBe(true);
  });
});

describe('jsonDropInVersion', () => {
  it('is the length and the 32-bit FNV-1a hash of the text', () => {
    // Reference values of FNV-1a (32 bit).
    expect(jsonDropInVersion('')).toBe('0:811c9dc5');
    expect(jsonDropInVersion('a')).toBe('1:e40c292c');
    expect(jsonDropInVersion('foobar')).toBe('6:bf9cf968');
  });
});

describe('more reloads', () => {
  it('a syntax error, at the start or in a save, is reported where it is; fixing it loads the entry', async () => {
    const run = await start({ 'widgets/syntax.ts': 'export default { size: 1 ;\n', 'widgets/w.ts': widget(1) });
    expect(run.registry.problemsOf()).toEqual([
      expect.objectContaining({ entry: 'widgets/syntax.ts', file: 'widgets/syntax.ts', line: 1 }),
    ]);
    expect(run.registry.problemsOf()[0]!.message).toMatch(/Expected/);
    await run.write('widgets/w.ts', 'export default { size: 2 ;\n');
    await soon(() => run.registry.problemsOf().length === 2);
    expect(run.registry.problemsOf()[1]).toMatchObject({ entry: 'widgets/w.ts', line: 1, message: expect.stringMatching(/Expected/) });
    expect(run.registry.get<Widget>('widget', 'w')!.definition.size).toBe(1);
    await run.write('widgets/syntax.ts', widget(3));
    await soon(() => run.registry.get('widget', 'syntax'));
    expect(problems(run.registry)).toHaveLength(1);
  });

  it('a helper beside a folder entry is no entry: saving it reloads the folder entry only', async () => {
    const run = await start({
      'widgets/box/index.ts': `import { size } from './lib';\nexport default { size };\n`,
      'widgets/box/lib.ts': 'export const size = 1;\n',
    });
    await run.write('widgets/box/lib.ts', 'export const size = 2;\n');
    await soon(() => run.registry.get<Widget>('widget', 'box')!.definition.size === 2);
    await run.discovery.idle();
    // Deeper, or not code: no entry either.
    await run.write('widgets/box/index.md', '# notes\n');
    await run.write('widgets/box/deeper/index.ts', widget(9, 'deep'));
    await new Promise((r) => setTimeout(r, 60));
    await run.discovery.idle();
    expect(names(run.registry)).toEqual(['box@widgets/box/index.ts']);
    expect(problems(run.registry)).toEqual([]);
  });

  it('a folder entry moved out of the workspace goes, though only its folder was seen to move', async () => {
    const run = await start({ 'widgets/set/index.ts': widget(1), 'widgets/settings/index.ts': widget(2) });
    await rename(path.join(run.root, 'widgets/set'), path.join(await makeWorkspace(), 'moved'));
    await soon(() => !run.registry.get('widget', 'set'));
    await run.discovery.idle();
    expect(names(run.registry)).toEqual(['settings@widgets/settings/index.ts']);
  });

  it('keeps the build cache in .hangar of the workspace', async () => {
    const { root } = await start({ 'widgets/w.ts': widget(1) }, { watch: false });
    expect(readdirSync(root).sort()).toEqual(['.hangar', 'widgets']);
  });

  it('a save back to the loaded text clears the problem of the save before it', async () => {
    const run = await start({ 'widgets/w.ts': widget(1) });
    await run.write('widgets/w.ts', 'export default { size: "no" };\n');
    await soon(() => run.registry.problemsOf().length === 1);
    await run.write('widgets/w.ts', widget(1));
    await soon(() => run.registry.problemsOf().length === 0);
    expect(run.registry.get('widget', 'w')!.loads).toBe(1);
  });

  it('a reload under the same name is an update, not a removal and an addition', async () => {
    const run = await start({ 'widgets/w.ts': widget(1) });
    await run.write('widgets/w.ts', widget(2));
    await soon(() => run.registry.get<Widget>('widget', 'w')!.definition.size === 2);
    expect(run.changes.map((c) => c.type)).toEqual(['added', 'updated']);
  });

  it('an entry deleted and made again is loaded anew; a zero-byte file deleted is nothing to unload', async () => {
    const run = await start({ 'widgets/w.ts': widget(1) });
    await rm(path.join(run.root, 'widgets/w.ts'));
    await soon(() => !run.registry.get('widget', 'w'));
    await run.write('widgets/w.ts', widget(2));
    await soon(() => run.registry.get('widget', 'w'));
    expect(run.lines.some((l) => / info {2}loaded widgets\/w\.ts in \d+ ms$/.test(l))).toBe(true);
    await run.write('widgets/empty.ts', '');
    await new Promise((r) => setTimeout(r, 60));
    await run.discovery.idle();
    // Zero bytes is a save in progress: no entry, no problem.
    expect(problems(run.registry)).toEqual([]);
    expect(names(run.registry)).toEqual(['w@widgets/w.ts']);
    await rm(path.join(run.root, 'widgets/empty.ts'));
    await new Promise((r) => setTimeout(r, 60));
    await run.discovery.idle();
    expect(run.lines.filter((l) => / error /.test(l))).toEqual([]);
    expect(problems(run.registry)).toEqual([]);
  });

  it('an entry that never loaded, deleted, takes its problem with it', async () => {
    const run = await start({ 'widgets/data.json': '{ nope' });
    expect(problems(run.registry)).toHaveLength(1);
    await rm(path.join(run.root, 'widgets/data.json'));
    await soon(() => problems(run.registry).length === 0);
  });

  it('the file that lost a name going away logs no removal', async () => {
    const run = await start({ 'widgets/a.ts': widget(1, 'twin'), 'widgets/b.ts': widget(2, 'twin') });
    await rm(path.join(run.root, 'widgets/b.ts'));
    await soon(() => problems(run.registry).length === 0);
    await run.discovery.idle();
    expect(run.lines.filter((l) => l.includes('drop-in removed'))).toEqual([]);
  });

  it('a save whose top level never finishes is stopped at loadTimeoutMs; the last good version stays', async () => {
    const run = await start({ 'widgets/w.ts': widget(1) }, { loadTimeoutMs: 200 });
    await run.write('widgets/w.ts', 'while (true) {}\nexport default { size: 2 };\n');
    await soon(() => run.registry.problemsOf().length === 1);
    expect(problems(run.registry)).toEqual(['widget widgets/w.ts: top-level code did not finish in 200 ms']);
    expect(run.registry.get<Widget>('widget', 'w')!.definition.size).toBe(1);
  });

  it('works without an onReload hook', async () => {
    const root = await makeWorkspace({ 'widgets/w.ts': widget(1), 'widgets/bad.ts': 'export default 1;\n' });
    const registry = new Registry();
    const discovery = new Discovery({ root, registry, log: new Logger('silent'), provided: {} });
    running.push(discovery);
    discovery.register(widgetKind);
    await discovery.scan();
    expect(names(registry)).toEqual(['w@widgets/w.ts']);
    expect(problems(registry)).toHaveLength(1);
  });
});
