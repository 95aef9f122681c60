/**
 * `hangar init [DIR]`: a new workspace a code editor understands, as `npm create vite` scaffolds a
 * project: `package.json` depending on `hangar` (whose `exports` name the SDK's declarations, so
 * `import { defineAgent } from 'hangar'` resolves and autocompletes), a `tsconfig.json` that
 * type-checks every drop-in folder, one small working example per drop-in kind, and a
 * `.gitignore` for `.hangar/`.
 *
 * Decisions where the issue is silent:
 * - DIR defaults to the current folder and must be empty or new (a `.git` folder is allowed), as
 *   `npm create vite` refuses a non-empty target without asking; nothing is overwritten.
 * - The `hangar` dependency is this installation: `file:<its folder>` when Hangar runs from a
 *   checkout (it is not on the npm registry; npm links such a folder), `^<version>` when it runs
 *   from an installed package.
 * - `notebooks/` is left out of tsconfig's `include`: cells use the kernel's globals (`md`,
 *   `chart`, `notebookPath`) and bare expressions, which the notebook's own analysis checks.
 */
import { existsSync, readdirSync } from 'node:fs';
import { mkdir, writeFile } from 'node:fs/promises';
import path from 'node:path';
import { parseArgs } from 'node:util';
import { VERSION } from '../../kernel/version.js';
import type { CliIO } from './convention.js';
import { CommandError, report, UsageError } from './convention.js';

export const INIT_HELP = `Usage: hangar init [DIR]

Writes a new workspace in DIR (default: the current folder; it must be empty or new):
  package.json     depends on hangar; npm start runs it, npm run typecheck runs tsc
  tsconfig.json    type-checks agents/, endpoints/, plugins/, ingestors/, pipelines/, teams/
  .gitignore       .hangar/ (runtime state) and node_modules/
  one example per drop-in kind: agents/hello.ts, endpoints/greeting.ts, plugins/double/index.ts,
  ingestors/notes.ts, pipelines/greet.json, notebooks/first.nb.ts, teams/app.json

Then: cd DIR && npm install && npx hangar

Options:
  -h, --help`;

const defaultIO: CliIO = {
  out: (line) => process.stdout.write(line + '\n'),
  err: (line) => process.stderr.write(line + '\n'),
};

/** The folders tsc checks: every drop-in folder that holds TypeScript. */
export const CHECKED_FOLDERS = ['agents', 'endpoints', 'plugins', 'ingestors', 'pipelines', 'teams'];

export async function initCli(argv: string[], installRoot: string, io: CliIO = defaultIO): Promise<number> {
  try {
    const { values, positionals } = parseArgs({
      args: argv,
      options: { help: { type: 'boolean', short: 'h' } },
      strict: true,
      allowPositionals: true,
    });
    if (values.help) {
      io.out(INIT_HELP);
      return 0;
    }
    if (positionals.length > 1) throw new UsageError(`hangar init takes one folder, got ${positionals.length}`, 'see hangar init --help');
    const dir = path.resolve(positionals[0] ?? '.');
    const present = existsSync(dir) ? readdirSync(dir).filter((name) => name !== '.git') : [];
    if (present.length) {
      throw new CommandError(
        `${dir} is not empty (${present.slice(0, 3).join(', ')}${present.length > 3 ? ', …' : ''})`,
        'choose a new or empty folder: hangar init my-workspace',
      );
    }
    const files = workspaceFiles(path.basename(dir), dependencySpec(installRoot));
    for (const [relative, content] of Object.entries(files)) {
      const target = path.join(dir, relative);
      await mkdir(path.dirname(target), { recursive: true });
      await writeFile(target, content, { flag: 'wx' });
    }
    const relative = path.relative(process.cwd(), dir);
    const shown = relative === '' ? '.' : relative.startsWith('..') ? dir : relative;
    io.out(`wrote a Hangar workspace in ${dir}:`);
    for (const relative of Object.keys(files)) io.out(`  ${relative}`);
    io.out('');
    io.out('next:');
    if (shown !== '.') io.out(`  cd ${shown}`);
    io.out('  npm install        (links hangar and its types; your editor then resolves `hangar`)');
    io.out('  npx hangar         (serves the workspace; save a file and it reloads)');
    io.out('  npm run typecheck  (tsc over every drop-in folder)');
    return 0;
  } catch (err) {
    return report(io, err, 'hangar init --help');
  }
}

function dependencySpec(installRoot: string): string {
  return installRoot.split(path.sep).includes('node_modules') ? `^${VERSION}` : `file:${installRoot}`;
}

/** Package names npm accepts: lowercase, no spaces; anything else becomes `hangar-workspace`. */
function packageName(folder: string): string {
  const name = folder
    .toLowerCase()
    .replace(/[^a-z0-9._-]+/g, '-')
    .replace(/^[._-]+/, '');
  return name || 'hangar-workspace';
}

export function workspaceFiles(folder: string, hangar: string): Record<string, string> {
  const json = (value: unknown) => JSON.stringify(value, null, 2) + '\n';
  return {
    'package.json': json({
      name: packageName(folder),
      private: true,
      type: 'module',
      scripts: { start: 'hangar --root .', typecheck: 'tsc --noEmit -p .' },
      dependencies: { hangar },
      devDependencies: { typescript: '^7.0.2', '@types/node': '^22.20.5' },
    }),
    'tsconfig.json': json({
      compilerOptions: {
        target: 'ES2022',
        module: 'ESNext',
        moduleResolution: 'Bundler',
        lib: ['ES2023'],
        types: ['node'],
        strict: true,
        skipLibCheck: true,
        noEmit: true,
        isolatedModules: true,
        esModuleInterop: true,
        resolveJsonModule: true,
      },
      include: CHECKED_FOLDERS,
    }),
    '.gitignore': '.hangar/\nnode_modules/\n',
    'agents/hello.ts': `import { defineAgent } from 'hangar';

/** POST /api/v1/hello/invoke {"query": "Ada"} → "Hello, Ada!" */
export default defineAgent({
  description: 'Greets people',
  version: '1.0.0',
  run: async (input, ctx) => {
    ctx.step('greet');
    return { response: \`Hello, \${input.query}!\`, suggestions: ['Say goodbye'] };
  },
});
`,
    'endpoints/greeting.ts': `import { defineEndpoint, z } from 'hangar';

/**
 * POST /api/v1/endpoints/greeting {"name": "Ada"} → {"success": true, "aggregated": {"greeting": "Hello, Ada!"}, …}
 * Custom logic and no upstream; add \`upstreams\` to call services (ctx.call reaches each).
 */
export default defineEndpoint({
  description: 'A greeting computed locally',
  version: '1.0.0',
  request: z.object({ name: z.string().min(1) }),
  output: z.object({ greeting: z.string() }),
  handler: async ({ name }) => ({ greeting: \`Hello, \${name}!\` }),
});
`,
    'plugins/double/index.ts': `import { definePlugin, z } from 'hangar';

/** POST /api/v1/plugins/double/predict {"input": {"x": 21}} → y = 42: the smallest model there is. */
export default definePlugin({
  description: 'Doubles a number',
  version: '1.0.0',
  card: { task: 'regression', description: 'y = 2x, exactly', limitations: ['knows one function'] },
  input: z.object({ x: z.number() }),
  output: z.object({ y: z.number() }),
  load: () => ({ factor: 2 }),
  predict: (model, input) => ({ y: model.factor * input.x }),
});
`,
    'ingestors/notes.ts': `import { readdir, readFile } from 'node:fs/promises';
import path from 'node:path';
import { defineIngestor } from 'hangar';

/** POST /api/v1/ingestion/notes/run: every .md file of notes/ into the \`notes\` collection, one document per file. */
export default defineIngestor({
  description: 'Markdown notes of the notes/ folder',
  version: '1.0.0',
  collection: 'notes',
  discover: async ({ workspace }) => {
    const dir = path.join(workspace, 'notes');
    const names = await readdir(dir).catch(() => [] as string[]);
    return names.filter((n) => n.endsWith('.md')).map((n) => ({ id: \`notes/\${n}\`, uri: path.join(dir, n) }));
  },
  read: async (resource) => [{ id: resource.id, title: path.basename(resource.id), content: await readFile(resource.uri!, 'utf8') }],
});
`,
    'pipelines/greet.json': json({
      name: 'greet',
      description: 'Greets through the hello agent, then builds a greeting with the greeting endpoint',
      version: '1.0.0',
      steps: [
        { name: 'agent', agent: 'hello', input: { query: '$.input.name' } },
        { name: 'endpoint', endpoint: 'greeting', input: { name: '$.input.name' } },
      ],
    }),
    'notebooks/first.nb.ts': `// @hangar-notebook {"name":"first","created_at":"${new Date().toISOString()}","metadata":{"description":"A first reactive notebook"}}

// %% [markdown] id=intro001 name="intro"
// # A first notebook
//
// Change \`n\` and the cell that uses it runs again.

// %% [code] id=number01 name="n"
const n: number = 7;

// %% [code] id=square01 name="square"
n * n
`,
    'teams/app.json': json({
      charter: 'The whole application and its tests (one team for a small project).',
      owns: ['src/**', 'test/**'],
      acceptance: 'npm test',
      agents: [{ name: 'app-developer', role: 'developer' }],
      skills: ['node'],
      match: { keywords: ['app', 'feature', 'bug', 'test'] },
    }),
  };
}
