import { fileURLToPath } from 'node:url';
import { defineConfig } from 'vitest/config';

export default defineConfig({
  resolve: { alias: { hangar: fileURLToPath(new URL('./core/sdk.ts', import.meta.url)) } },
  test: {
    include: ['test/**/*.test.ts'],
    globalSetup: ['test/global-setup.ts'],
    // Generous: scenario tests (coding runs, browsers, kernels) share two cores with everything else.
    testTimeout: 60_000,
    hookTimeout: 20_000,
    // Two cores: servers, workers and esbuild all share them.
    pool: 'forks',
    maxWorkers: 2,
  },
});
