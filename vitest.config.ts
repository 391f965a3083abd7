import { defineConfig } from 'vitest/config';

export default defineConfig({
  test: {
    include: ['test/**/*.test.ts'],
    globalSetup: ['test/support/global-setup.ts'],
    // A budget, not an assertion on speed: a browser test loads several pages one after the
    // other (about 3.5 s each when two Chromiums share the two cores), and took over 30 s in CI.
    testTimeout: 90_000,
    hookTimeout: 60_000,
    // Three forks on two cores: many files wait on real servers, sockets and browsers, so a
    // third keeps the cores busy (about 11 minutes here against 15 with two). .ci/run gives
    // its first line two, while its other Node lines build their native modules beside it.
    pool: 'forks',
    maxWorkers: 3,
  },
});
