import { defineConfig } from 'vitest/config';

export default defineConfig({
  test: {
    include: ['test/**/*.test.ts'],
    globalSetup: ['test/support/global-setup.ts'],
    // A budget, not an assertion on speed: a browser test loads several pages one after the
    // other (about 3.5 s each when two Chromiums share the two cores), and took over 30 s in CI.
    testTimeout: 90_000,
    hookTimeout: 60_000,
    // Two cores: a few forks keep real servers and sockets from starving each other (with a
    // third, timing-bound tests failed in CI while its other Node lines installed beside it).
    pool: 'forks',
    maxWorkers: 2,
  },
});
