// dependency-cruiser: the layering of core/ (CONTRIBUTING.md, "Layers") as rules that fail `npm run lint`.
//
//   core/lib      generic mechanisms: node builtins, packages and core/lib only
//   core/kernel   the foundation: core/kernel and core/lib
//   core/http, core/storage   infrastructure: kernel, lib and each other
//   subsystems    every other folder of core/ (core/notebook/intel counts as its own): the layers above, and
//                 another subsystem only through its public modules (PUBLIC below)
//   core/app      the composition root: anything; imported only by bin/, scripts/, test/ and bench/
//
// TypeScript is parsed with swc (@swc/core): the typescript package (v7) has no compiler API that
// dependency-cruiser can load. Imports are written './x.js' for x.ts; tsconfig.json's resolution maps them.

// Without a parser for TypeScript dependency-cruiser reads no .ts file and reports "no violations": fail instead.
try {
  require.resolve('@swc/core');
} catch {
  throw new Error(
    '.dependency-cruiser.cjs: @swc/core is not installed (npm install --save-dev @swc/core); without it no .ts file is checked',
  );
}

/** Folders of core/ that are layers, not subsystems. */
const LAYERS = 'lib|kernel|http|storage|app';
/** One subsystem's folder, captured as $1: core/notebook/intel is a subsystem of its own inside core/notebook. */
const SUBSYSTEM = `^core/(notebook/intel|(?!(?:${LAYERS})/)[^/]+)/`;
/**
 * The modules another subsystem may import: its service (or its type, for the service map), its data shapes
 * its drop-in kind (to look its definitions up in the registry) and its events (what its streams carry). Errors need no module of their own: codes
 * live in the kernel's catalogue (core/kernel/error-catalogue.ts); define.ts is for drop-ins, through the SDK.
 */
const PUBLIC = 'service|schemas|types|kind|events';
const PUBLIC_MODULE = `^core/(?:notebook/intel|[^/]+)/(?:${PUBLIC})\\.ts$`;
/**
 * Subsystems built on another's internals by design, each named with its reason: the studio is the agents'
 * debugger (it drives their engine step by step and reads their checkpoints), and notebook/intel reads the
 * notebook's sessions and files (its tools inspect live variables in the notebook's own runtime).
 */
const FRIENDS = [
  ['^core/studio/', '^core/agents/'],
  ['^core/notebook/intel/', '^core/notebook/'],
];
/** `^core/studio/` → `studio`: the friend's own folder, which it may always import. */
const SUBSYSTEM_OF = (pattern) => pattern.replace(/^\^core\//, '').replace(/\/$/, '');

/** Packages and node builtins: every layer may use them. */
const OUTSIDE_THE_REPO = { dependencyTypesNot: ['core', 'npm', 'npm-dev', 'npm-optional', 'npm-peer', 'npm-bundled', 'npm-no-pkg'] };

/** The version and name come from package.json, which any layer may read. */
const PACKAGE_JSON = '^package\\.json$';

/** Worker-thread entries, bundled and started by path (core/lib/worker-bundle.ts). */
const WORKER_ENTRY = '(?:^|/)[^/]*worker[^/]*\\.ts$';

/** @type {import('dependency-cruiser').IConfiguration} */
module.exports = {
  forbidden: [
    {
      name: 'no-circular',
      severity: 'error',
      comment: 'A cycle makes start-up order and reloads depend on import order; break it with a public module or the service map.',
      from: {},
      // `import type` is erased before anything runs, so a cycle through one cannot change load order.
      to: { circular: true, viaOnly: { dependencyTypesNot: ['type-only'] } },
    },
    {
      name: 'lib-imports-only-lib',
      severity: 'error',
      comment: 'core/lib holds generic mechanisms that know nothing of Hangar: only node builtins, packages and core/lib.',
      from: { path: '^core/lib/' },
      to: { pathNot: ['^core/lib/', PACKAGE_JSON], couldNotResolve: false, ...OUTSIDE_THE_REPO },
    },
    {
      name: 'kernel-imports-only-kernel-and-lib',
      severity: 'error',
      comment: 'The kernel is the foundation every subsystem builds on; it may not know any of them.',
      from: { path: '^core/kernel/' },
      to: { pathNot: ['^core/(?:kernel|lib)/', PACKAGE_JSON], couldNotResolve: false, ...OUTSIDE_THE_REPO },
    },
    {
      name: 'infrastructure-imports-no-subsystem',
      severity: 'error',
      comment: 'core/http and core/storage serve every subsystem; they import kernel, lib and each other only.',
      from: { path: '^core/(?:http|storage)/' },
      to: { pathNot: ['^core/(?:kernel|lib|http|storage)/', PACKAGE_JSON], couldNotResolve: false, ...OUTSIDE_THE_REPO },
    },
    {
      name: 'subsystem-through-public-modules',
      severity: 'error',
      comment: `Another subsystem is reached through its public modules only (${PUBLIC.split('|').join(', ')}), or through the service map.`,
      from: { path: SUBSYSTEM, pathNot: FRIENDS.map(([from]) => from) },
      to: { path: SUBSYSTEM, pathNot: ['^core/$1/', PUBLIC_MODULE] },
    },
    ...FRIENDS.map(([from, to]) => ({
      name: 'subsystem-through-public-modules',
      severity: 'error',
      comment: `${from} may reach ${to} (see FRIENDS); any other subsystem only through its public modules.`,
      from: { path: `${from}` },
      to: { path: SUBSYSTEM, pathNot: [`^core/(?:${SUBSYSTEM_OF(from)})/`, to, PUBLIC_MODULE] },
    })),
    {
      name: 'notebook-through-intel-public-modules',
      severity: 'error',
      comment: 'core/notebook/intel is a subsystem of its own: the notebook reaches it through its public modules too.',
      from: { path: '^core/notebook/(?!intel/)' },
      to: { path: '^core/notebook/intel/', pathNot: PUBLIC_MODULE },
    },
    {
      name: 'subsystem-not-to-desktop',
      severity: 'error',
      comment: 'Only the composition root (core/app) opens the desktop shell; subsystems and layers stay UI-free.',
      // Except the UI subsystem, which builds the desktop's views on demand and serves them (core/ui/assets.ts).
      from: { path: '^core/', pathNot: ['^core/app/', '^core/ui/assets\\.ts$'] },
      to: { path: '^desktop/' },
    },
    {
      name: 'core-not-through-sdk',
      severity: 'error',
      comment: "core/sdk.ts is the entry drop-ins import as 'hangar'; core imports the modules the SDK re-exports.",
      // Except what evaluates drop-ins and hands them the 'hangar' module: the composition root and worker entries.
      from: { path: '^core/', pathNot: ['^core/sdk\\.ts$', '^core/app/', WORKER_ENTRY] },
      to: { path: '^core/sdk\\.ts$' },
    },
    {
      name: 'only-entry-points-import-app',
      severity: 'error',
      comment: 'core/app composes everything; only entry points start it: bin/, the Electron main process, scripts/, test/, bench/.',
      from: { pathNot: '^(?:core/app/|bin/|desktop/main\\.ts$|scripts/|test/|bench/)' },
      to: { path: '^core/app/' },
    },
    {
      name: 'views-import-only-types',
      severity: 'error',
      comment:
        'Views run in the browser: from core they take types (erased when bundled), never server code; a value import would bundle it. The one exception is a module that imports nothing (config-keys.ts).',
      from: { path: '^desktop/views/' },
      to: { path: '^core/', pathNot: '^core/coderun/config-keys\\.ts$', dependencyTypesNot: ['type-only'] },
    },
    {
      name: 'not-to-unresolvable',
      severity: 'error',
      comment: 'An import that resolves to no file is a typo or a missing dependency.',
      from: {},
      to: { couldNotResolve: true },
    },
    {
      name: 'no-orphans',
      severity: 'warn',
      comment: 'A module that imports nothing and that nothing imports is dead code: delete it, or name it here if it is loaded by path.',
      from: { orphan: true, pathNot: ['\\.d\\.[cm]?ts$'] },
      to: {},
    },
  ],
  options: {
    doNotFollow: { path: 'node_modules' },
    exclude: { path: '(?:^|/)(?:node_modules|dist|test-output|\\.hangar)/' },
    parser: 'swc',
    tsConfig: { fileName: 'tsconfig.json' },
    enhancedResolveOptions: {
      exportsFields: ['exports'],
      conditionNames: ['import', 'require', 'node', 'default', 'types'],
      mainFields: ['module', 'main', 'types', 'typings'],
    },
    reporterOptions: {
      text: { highlightFocused: true },
    },
  },
};
