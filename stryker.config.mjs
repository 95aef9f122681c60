// @ts-check
import { MUTATION_GROUPS } from './stryker.groups.mjs';

/**
 * Mutation testing over the modules that guard users and their data (README, Mutation testing).
 * HANGAR_MUTATE names the groups of stryker.groups.mjs to run (comma-separated); `npm run mutate`
 * runs every group, one Stryker run each (scripts/mutate.mjs). Without it, all groups in one run.
 */
const names = (process.env.HANGAR_MUTATE ?? '').split(',').filter(Boolean);
for (const name of names) if (!(name in MUTATION_GROUPS)) throw new Error(`unknown mutation group "${name}"`);
const groups = names.length > 0 ? names.map((n) => MUTATION_GROUPS[n]) : Object.values(MUTATION_GROUPS);
const label = names.length > 0 ? names.join('+') : 'mutation';
// Read by vitest.mutation.config.ts in Stryker's test-runner processes, which inherit the environment.
process.env.HANGAR_MUTATION_TESTS = groups.flatMap((g) => g.tests).join(',');

/** @type {import('@stryker-mutator/api/core').PartialStrykerOptions} */
export default {
  packageManager: 'npm',
  testRunner: 'vitest',
  vitest: { configFile: 'vitest.mutation.config.ts', related: false },
  // No TypeScript checker: @stryker-mutator/typescript-checker drives the TypeScript compiler API,
  // which TypeScript 7 (the native compiler this repository uses) does not offer.
  checkers: [],
  // Stryker's sandbox rewrites tsconfig.json's paths through the same compiler API (only needed when
  // it extends or references files outside the project, which ours does not): skip it.
  tsconfigFile: 'no-tsconfig-rewrite.json',
  mutate: groups.flatMap((g) => g.mutate),
  coverageAnalysis: 'perTest',
  incremental: true,
  incrementalFile: `reports/incremental/${label}.json`,
  reporters: ['clear-text', 'progress', 'html', 'json'],
  htmlReporter: { fileName: `reports/mutation/${label}.html` },
  jsonReporter: { fileName: `reports/mutation/${label}.json` },
  thresholds: { high: 90, low: 80, break: 80 },
  // Two cores, shared with servers, workers and esbuild in every test: one test runner at a time.
  concurrency: Number(process.env.HANGAR_MUTATE_CONCURRENCY ?? 1),
  timeoutMS: 20_000,
  ignorePatterns: ['reports', 'test-output', '.hangar', 'dist', '.stryker-tmp'],
  tempDirName: '.stryker-tmp',
  cleanTempDir: 'always',
};
