import { defineConfig } from 'vitest/config';

export default defineConfig({
  test: {
    include: ['test/**/*.test.ts'],
    globalSetup: ['test/support/global-setup.ts'],
    // A budget, not an assertion on speed: a browser test loads several pages one after the
    // other (about 3.5 s each when two Chromiums share the two cores), and took over 30 s in CI.
    testTimeout: 90_000,
    hookTimeout: 60_000,
    // Three forks on two cores: many files spend their time waiting on real servers, sockets
    // and browsers, and a third fork keeps the cores busy meanwhile (`npm test` took 15 minutes
    // with two here, 12.7 with three). Few enough that real servers are not starved.
    pool: 'forks',
    maxWorkers: 3,
  },
});
