import { fileURLToPath } from 'node:url';
import { defineConfig } from 'vitest/config';

/**
 * The vitest configuration Stryker runs (stryker.config.mjs): only the test files of the group being
 * mutated (HANGAR_MUTATION_TESTS, comma-separated globs, set by stryker.config.mjs), and no browser
 * set-up, since no mutated module is reached through a browser test.
 */
const tests = (process.env.HANGAR_MUTATION_TESTS ?? '').split(',').filter(Boolean);

export default defineConfig({
  resolve: { alias: { hangar: fileURLToPath(new URL('./core/sdk.ts', import.meta.url)) } },
  test: {
    include: tests.length > 0 ? tests : ['test/**/*.test.ts'],
    exclude: ['test/mutation/**', 'test/fixtures/**', 'node_modules/**'],
    testTimeout: 60_000,
    hookTimeout: 20_000,
  },
});
