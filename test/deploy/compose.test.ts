/**
 * compose.yaml run for real (test/support/compose-stack.ts): two instances sharing PostgreSQL
 * and Redis behind nginx, started with `docker-compose up -d --build` on podman, the test's
 * settings layered on it (test/deploy/compose.test.yaml). Load and probes go to nginx's port on
 * loopback; the instances look up a Minecraft server on a host of the test's own inside the
 * compose network. Asserted as counts: requests sent, answers by status, requests without an
 * answer (none), and the checks the answers carry against the checks /history counts (equal).
 *
 * How the test knows a look-up reached an instance: each instance's own /metrics (asked from
 * inside its container) counts the status requests it answered, and the Minecraft server sees
 * the ping come from that instance's fixed address.
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { APPENDED_MIGRATION_NAME } from '../support/appended-migration.js';
import { holdTable, releaseFile } from '../support/compose-release.js';
import { readCompose, startComposeStack, TARGET_PORT, TARGET_ZONE, type ComposeStack } from '../support/compose-stack.js';
import { latencyQuantile, startSteadyLoad, type LoadTally } from '../support/steady-load.js';

const INSTANCES = ['observer-1', 'observer-2'] as const;
const fmt = (ms: number) => ms.toFixed(0);
const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));
const serverName = (label: string, worker: number, n: number) => `${label}-w${worker}-n${n}.${TARGET_ZONE}:${TARGET_PORT}`;

let stack: ComposeStack;

beforeAll(async () => {
  stack = await startComposeStack();
}, 40 * 60_000);

afterAll(async () => {
  await stack?.down();
}, 180_000);

interface Health {
  status: string;
  database: string;
  redis: string;
  write_buffer: number;
  migration: { name: string; progress: number } | null;
}

/** One instance's health, asked from inside its container. */
async function health(service: string): Promise<Health> {
  return JSON.parse((await stack.ask(service, '/api/v1/status')).body) as Health;
}

/** The status look-ups an instance answered, by its own /metrics. */
async function statusAnswers(service: string): Promise<number> {
  const text = await stack.metrics(service);
  let sum = 0;
  for (const m of text.matchAll(/^observer_http_requests_total\{([^}]*)\} (\d+)$/gm)) {
    if (m[1]!.includes('route="/api/v1/status/:address"')) sum += Number(m[2]);
  }
  return sum;
}

async function get(path: string): Promise<{ status: number; headers: Headers; body: Record<string, unknown> }> {
  const res = await fetch(stack.url + path);
  return { status: res.status, headers: res.headers, body: (await res.json()) as Record<string, unknown> };
}

/**
 * `read` again while it answers 503 `store_unavailable` with Retry-After, as a client would:
 * on a machine busy with other work a history read can pass its 1 s deadline, and the
 * instance then answers so for 2 s. Any other answer is returned as it is.
 */
async function retryingUnavailable<T extends { status: number; body: unknown }>(read: () => Promise<T>): Promise<T> {
  for (let attempt = 1; ; attempt += 1) {
    const answer = await read();
    const text = typeof answer.body === 'string' ? answer.body : JSON.stringify(answer.body);
    if (answer.status !== 503 || !text.includes('store_unavailable') || attempt === 15) return answer;
    await sleep(2_000);
  }
}

/** An address's history over 24 h through nginx. */
const historyOf = (address: string) => retryingUnavailable(() => get(`/api/v1/history/${address}?range=24h`));

/** Waits until every instance has written the checks it holds (the history is then whole). */
async function historyWritten(): Promise<void> {
  for (let i = 0; i < 120; i += 1) {
    const states = await Promise.all(INSTANCES.map(health));
    if (states.every((h) => h.write_buffer === 0 && h.database === 'ok')) return;
    await sleep(500);
  }
  throw new Error('the instances did not write their buffered checks within a minute');
}

/** The checks /history counts for each server the load asked, summed. */
async function checksInHistory(tally: LoadTally): Promise<number> {
  let sum = 0;
  const addresses = [...tally.checks.keys()];
  for (let i = 0; i < addresses.length; i += 8) {
    const answers = await Promise.all(addresses.slice(i, i + 8).map(historyOf));
    for (const answer of answers) {
      expect(answer.status).toBe(200);
      sum += answer.body.checks as number;
    }
  }
  return sum;
}

const answeredChecks = (tally: LoadTally) => [...tally.checks.values()].reduce((sum, set) => sum + set.size, 0);

/**
 * A server first looked up on an instance that holds its checks back (PostgreSQL away, a
 * migration running, or a stop flushing its last commit window) has no history on the other
 * instances until that instance writes them. Every such check is in the history afterwards:
 * the tests count them.
 */
const HISTORY_NOT_YET_WRITTEN = /^GET \/api\/v1\/history\/\S+: 404 /;

/**
 * Prints the load's counts, and asserts them: every request answered 2xx or 503 with Retry-After,
 * or as `allowed` (a description of the answer) says.
 */
async function expectAllAnswered(name: string, tally: LoadTally, allowed?: RegExp): Promise<void> {
  const answered = Object.values(tally.byStatus).reduce((a, b) => a + b, 0);
  // nginx says why it answered 502 (which instance, which error) only in its own log.
  if (tally.byStatus[502]) console.log(`nginx's log, its last lines:\n${await stack.podman('logs', '--tail', '40', stack.container('nginx')).catch(String)}`);
  console.log(
    `${name}: ${tally.sent} requests sent, answered by status ${JSON.stringify(tally.byStatus)} (errors ${JSON.stringify(tally.errors)}), ` +
      `${tally.failed} without an answer; answer time p50 ${fmt(latencyQuantile(tally, 0.5))} ms, p99 ${fmt(latencyQuantile(tally, 0.99))} ms, ` +
      `longest ${fmt(latencyQuantile(tally, 1))} ms`,
  );
  expect(tally.unexpected.filter((answer) => !allowed?.test(answer))).toEqual([]);
  expect(tally.failed).toBe(0);
  expect(answered).toBe(tally.sent);
  expect(tally.byStatus[502] ?? 0).toBe(0);
}

/**
 * 24 servers no one asked before, each asked twice through nginx (the 48 look-ups spread over
 * both instances): one cache, so the second answer is the first one's check; one history, so
 * each server has that one check, whichever instance wrote it and whichever reads it.
 */
async function expectShared(label: string): Promise<void> {
  const servers = Array.from({ length: 24 }, (_, i) => serverName(label, 0, i));
  const first = await Promise.all(servers.map((s) => get(`/api/v1/status/${s}`)));
  const again = await Promise.all(servers.map((s) => get(`/api/v1/status/${s}`)));
  for (const [i, answer] of first.entries()) {
    expect(answer.status).toBe(200);
    expect(answer.body).toMatchObject({ online: true, players: { online: 4, max: 40 } });
    expect(again[i]!.headers.get('x-cache')).toBe('HIT');
    expect(again[i]!.body.checked_at).toBe(answer.body.checked_at);
  }
  await historyWritten();
  for (const server of servers) expect((await historyOf(server)).body.checks).toBe(1);
}

/** Polls every 250 ms until the health of each of `services` satisfies `test`; the ms it took. */
async function untilInstances(services: readonly string[], test: (h: Health) => boolean, what: string, ms = 60_000): Promise<number> {
  const started = Date.now();
  // An instance that is starting does not answer yet.
  while (!(await Promise.all(services.map((s) => health(s).catch(() => null)))).every((h) => h !== null && test(h))) {
    if (Date.now() - started > ms) throw new Error(`not every one of ${services.join(', ')} ${what} within ${ms} ms`);
    await sleep(250);
  }
  return Date.now() - started;
}
const untilEveryInstance = (test: (h: Health) => boolean, what: string, ms?: number) => untilInstances(INSTANCES, test, what, ms);
const untilInstance = (service: string, test: (h: Health) => boolean, what: string) => untilInstances([service], test, what);

describe('compose.yaml, started as an operator starts it', () => {
  it('turns every health check healthy and answers health through nginx', async () => {
    const checked = Object.keys(readCompose().services).filter((s) => s !== 'nginx');
    expect(checked.sort()).toEqual(['observer-1', 'observer-2', 'postgres', 'redis']);
    for (const service of checked) expect(await stack.healthCheck(service)).toBe('healthy');
    const answer = await get('/api/v1/status');
    expect(answer.status).toBe(200);
    expect(answer.body).toMatchObject({ status: 'OK', database: 'ok', redis: 'ok', migration: null });
  });

  it('sends look-ups to both instances, which share one cache and one history', async () => {
    const before = await Promise.all(INSTANCES.map(statusAnswers));
    await expectShared('share');
    const after = await Promise.all(INSTANCES.map(statusAnswers));
    const answered = after.map((n, i) => n - before[i]!);
    console.log(`status look-ups answered by observer-1 / observer-2: ${answered.join(' / ')}`);
    // Both instances answered look-ups, and between them all 48.
    expect(answered.every((n) => n > 0)).toBe(true);
    expect(answered[0]! + answered[1]!).toBe(48);
    // Both pinged: the Minecraft server saw each instance's fixed address.
    expect([...stack.target.peers].sort()).toEqual(['172.29.80.11', '172.29.80.12']);
  });

  it('restarts each instance in turn under load, with no failed request and every check in the history', async () => {
    const load = startSteadyLoad(stack.url, { label: 'rolling', serverName });
    await sleep(3_000);
    for (const service of INSTANCES) {
      // SIGTERM, then the container's end; then a new start, and its health check passing.
      await stack.compose('stop', '--timeout', '30', service);
      expect(await stack.podman('inspect', '--format', '{{.State.ExitCode}}', stack.container(service))).toBe('0');
      await stack.compose('start', service);
      // The next one at once: nginx may still leave this one out (see deploy/compose/nginx.conf).
      await stack.waitHealthy(service);
    }
    const tally = await load.stop();
    await expectAllAnswered('rolling restart', tally, HISTORY_NOT_YET_WRITTEN);
    await historyWritten();
    expect(await checksInHistory(tally)).toBe(answeredChecks(tally));
  });

  it('keeps answering while Redis is killed and PostgreSQL restarted, shares again, and every check reaches the history', async () => {
    const load = startSteadyLoad(stack.url, { label: 'backing', serverName });
    await sleep(3_000);
    // Redis dies with its data; the instances answer from their own state meanwhile.
    await stack.podman('kill', '--signal', 'KILL', stack.container('redis'));
    await untilEveryInstance((h) => h.redis !== 'ok', 'noticed Redis gone');
    await sleep(3_000);
    await stack.compose('start', 'redis');
    await stack.waitHealthy('redis');
    const back = await untilEveryInstance((h) => h.redis === 'ok', 'shared Redis again');
    console.log(`both instances shared Redis again ${back} ms after its health check passed`);
    await expectShared('after-redis');
    // PostgreSQL stopped (its fast shutdown) and started again; checks wait in the instances' buffers.
    await stack.compose('restart', '--timeout', '30', 'postgres');
    await stack.waitHealthy('postgres');
    await untilEveryInstance((h) => h.database === 'ok', 'wrote to PostgreSQL again');
    await sleep(3_000);
    const tally = await load.stop();
    await expectAllAnswered('Redis killed, PostgreSQL restarted', tally, HISTORY_NOT_YET_WRITTEN);
    await historyWritten();
    expect(await checksInHistory(tally)).toBe(answeredChecks(tally));
  });
});

describe('a rolling upgrade to a release with one more migration', () => {
  /**
   * Where a migration records itself when it commits: the test holds it (SHARE: read, not
   * written) so that the migration, its long statement done, stays uncommitted while it looks.
   */
  const LEDGER = 'kysely_migration';
  /** The migration's one statement: longer than the instances' statement timeout (10 s). */
  const MIGRATION_SECONDS = 12;

  /** When each instance's container started, how often it was restarted, whether it runs. */
  const lifetime = (service: string) => stack.podman('inspect', '--format', '{{.State.StartedAt}} {{.RestartCount}} {{.State.Running}}', stack.container(service));

  /** An instance on the new release, asked directly while the migration runs: it answers status, and 503 `migrating` for stored data. */
  async function expectServingWhileMigrating(service: string, stored: string): Promise<void> {
    await untilInstance(service, (h) => h.migration?.name === APPENDED_MIGRATION_NAME, 'reported the migration');
    const lookUp = await stack.ask(service, `/api/v1/status/${serverName(`${service}-migrating`, 0, 0)}`);
    expect(lookUp.status).toBe(200);
    expect(JSON.parse(lookUp.body)).toMatchObject({ online: true });
    const history = await stack.ask(service, `/api/v1/history/${stored}?range=24h`);
    expect(history.status).toBe(503);
    expect(history.retryAfter).not.toBeNull();
    expect(JSON.parse(history.body)).toMatchObject({ error: 'migrating' });
  }

  it('keeps answering while each instance in turn starts the new release, which migrates once; no instance exits', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'observer-release-'));
    const release = releaseFile(dir, MIGRATION_SECONDS);
    const upgrade = (service: string) => stack.composeWith(release, 'up', '--detach', '--no-deps', '--no-build', '--timeout', '30', service);
    const load = startSteadyLoad(stack.url, { label: 'upgrade', serverName });
    await sleep(3_000);
    const stored = [...load.tally.checks.keys()][0]!;
    const ledger = await holdTable(stack, LEDGER);
    try {
      // observer-1 on the new release takes the migration lock and migrates.
      await upgrade('observer-1');
      await expectServingWhileMigrating('observer-1', stored);
      // The old observer-2 keeps serving stored data from the schema it knows.
      expect((await retryingUnavailable(() => stack.ask('observer-2', `/api/v1/history/${stored}?range=24h`))).status).toBe(200);
      // observer-2 on the new release finds the lock taken and waits for its turn, answering.
      await upgrade('observer-2');
      await expectServingWhileMigrating('observer-2', stored);
      // What an operator sees in PostgreSQL: one session holds the migration lock; each new instance has a migration session.
      expect(await stack.psql(`SELECT count(*) FROM pg_locks JOIN pg_stat_activity USING (pid)
        WHERE locktype = 'advisory' AND granted AND application_name = 'observer migration'`)).toBe('1');
      expect(await stack.psql("SELECT count(*) FROM pg_stat_activity WHERE application_name = 'observer migration'")).toBe('2');
    } finally {
      await ledger.release();
      rmSync(dir, { recursive: true, force: true });
    }
    const started = await Promise.all(INSTANCES.map(lifetime));
    const took = await untilEveryInstance((h) => h.migration === null, 'finished the migration', 120_000);
    console.log(`both instances served stored data again ${took} ms after the ledger was released`);
    await sleep(2_000);
    const tally = await load.stop();
    await expectAllAnswered('rolling upgrade', tally, HISTORY_NOT_YET_WRITTEN);
    // Stored data answered 503 `migrating` through nginx while both instances ran the new release.
    expect(tally.errors['503 migrating'] ?? 0).toBeGreaterThan(0);
    await historyWritten();
    expect(await checksInHistory(tally)).toBe(answeredChecks(tally));
    // Applied once; neither instance exited or was restarted meanwhile.
    expect(await stack.psql(`SELECT count(*) FROM ${LEDGER} WHERE name = '${APPENDED_MIGRATION_NAME}'`)).toBe('1');
    expect(await stack.psql("SELECT to_regclass('observer_test_migration') IS NOT NULL")).toBe('t');
    expect(await Promise.all(INSTANCES.map(lifetime))).toEqual(started);
    for (const line of started) expect(line).toMatch(/ 0 true$/);
  });
});
