import { fileURLToPath } from 'node:url';
import { defineConfig } from 'vitest/config';

/**
 * The vitest configuration Stryker runs (stryker.config.mjs): only the test files of the group being
 * mutated (HANGAR_MUTATION_TESTS, comma-separated globs, set by stryker.config.mjs). The browser set-up
 * stays: the cross-site tests drive a real browser against the guards.
 */
const tests = (process.env.HANGAR_MUTATION_TESTS ?? '').split(',').filter(Boolean);

export default defineConfig({
  resolve: { alias: { hangar: fileURLToPath(new URL('./core/sdk.ts', import.meta.url)) } },
  test: {
    include: tests.length > 0 ? tests : ['test/**/*.test.ts'],
    exclude: ['test/mutation/**', 'test/fixtures/**', 'node_modules/**'],
    globalSetup: ['test/global-setup.ts'],
    testTimeout: 60_000,
    hookTimeout: 20_000,
  },
});
