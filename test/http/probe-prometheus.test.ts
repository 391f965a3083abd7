/**
 * A real Prometheus watching real Minecraft servers through Observer: Debian's `prometheus` on
 * loopback runs the scrape jobs of deploy/prometheus/minecraft-probes.yml (targets and
 * Observer's address replaced by the test's), probing a Java server (minecraft-protocol) and a
 * Bedrock server (bedrock-protocol) through an Observer instance, and the test reads what
 * Prometheus stored through its query API: the players and success series, and after the Java
 * server stops, its failure and why. The queries and the alerting rule docs/monitoring.md shows
 * are run and checked against the same Prometheus.
 */
import { execFileSync } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, expect, it } from 'vitest';
import { freeUdpPort } from '../../scripts/ports.mjs';
import { composeApp } from '../../src/compose.js';
import { testConfig } from '../support/app.js';
import { startBedrockServer, startJavaServer, type RunningBedrockServer, type RunningJavaServer } from '../support/minecraft.js';
import { startPrometheus, type RunningPrometheus } from '../support/prometheus-server.js';

/** Scrapes every 2 s, each within 2 s (Observer then waits 1.5 s for a look-up). */
const SCRAPE = '2s';

/** The shipped scrape jobs, probing `java` and `bedrock` through `observer`. */
function scrapeConfig(observer: string, java: string, bedrock: string): string {
  const shipped = readFileSync(new URL('../../deploy/prometheus/minecraft-probes.yml', import.meta.url), 'utf8');
  const targets = [java, bedrock];
  let config = shipped.replace(/- targets: \[.*\]/g, () => `- targets: ['${targets.shift() ?? ''}']`);
  config = config.replaceAll('replacement: observer.example.net:8080', `replacement: ${observer}`);
  if (targets.length > 0 || config.includes('example.')) throw new Error('deploy/prometheus/minecraft-probes.yml no longer has the lines the test replaces');
  return `global:\n  scrape_interval: ${SCRAPE}\n  scrape_timeout: ${SCRAPE}\n${config}`;
}

const dir = mkdtempSync(join(tmpdir(), 'observer-probe-prometheus-'));
let observer: Awaited<ReturnType<typeof composeApp>>;
let java: RunningJavaServer;
let bedrock: RunningBedrockServer;
let prometheus: RunningPrometheus;
let javaTarget: string;
let bedrockTarget: string;

beforeAll(async () => {
  java = await startJavaServer({ onlinePlayers: 5, maxPlayers: 20 });
  bedrock = await startBedrockServer({ port: await freeUdpPort(), playersOnline: 3, playersMax: 10 });
  javaTarget = `127.0.0.1:${java.port}`;
  bedrockTarget = `127.0.0.1:${bedrock.port}`;
  // Both servers share one IP, pinged at each scrape: the per-IP budget must allow it. A failure
  // is answered as it is (no damping), and a result stays fresh for one second.
  observer = await composeApp(
    testConfig({ DATABASE_URL: `sqlite:${join(dir, 'observer.db')}`, STATUS_CACHE_TTL: '1', TARGET_PINGS_PER_MINUTE: '1000', DAMPING_FAILURES: '1' }),
    { logger: false, icmp: null },
  );
  await observer.app.listen({ host: '127.0.0.1', port: 0 });
  const address = `127.0.0.1:${(observer.app.server.address() as AddressInfo).port}`;
  prometheus = await startPrometheus(scrapeConfig(address, javaTarget, bedrockTarget));
}, 120_000);

afterAll(async () => {
  await prometheus?.stop();
  await observer?.app.close();
  await java?.close();
  await bedrock?.close();
  rmSync(dir, { recursive: true, force: true });
});

/** The value of the one series `promql` selects, or null while there is none. */
async function single(promql: string): Promise<number | null> {
  const found = await prometheus.query(promql);
  if (found.length > 1) throw new Error(`${promql}: ${found.length} series`);
  return found[0]?.value ?? null;
}

/** Polls Prometheus until every query has its expected value; the last values seen otherwise. */
async function until(expected: Record<string, number>, attempts = 300): Promise<Record<string, number | null>> {
  let seen: Record<string, number | null> = {};
  for (let i = 0; i < attempts; i += 1) {
    seen = {};
    for (const promql of Object.keys(expected)) seen[promql] = await single(promql);
    if (Object.entries(expected).every(([promql, value]) => seen[promql] === value)) return seen;
    await new Promise((resolve) => setTimeout(resolve, 200));
  }
  return seen;
}

it('stores the players and success of both servers, by instance, and the Java server\'s failure once it stops', async () => {
  const javaSeries = `job="minecraft-java",instance="${javaTarget}"`;
  const bedrockSeries = `job="minecraft-bedrock",instance="${bedrockTarget}"`;
  const up = {
    [`up{${javaSeries}}`]: 1,
    [`up{${bedrockSeries}}`]: 1,
    [`probe_success{${javaSeries}}`]: 1,
    [`minecraft_players_online{${javaSeries},edition="java"}`]: 5,
    [`minecraft_players_max{${javaSeries},edition="java"}`]: 20,
    [`minecraft_offline_reason{${javaSeries},reason="connection_refused"}`]: 0,
    [`probe_success{${bedrockSeries}}`]: 1,
    [`minecraft_players_online{${bedrockSeries},edition="bedrock"}`]: 3,
    [`minecraft_players_max{${bedrockSeries},edition="bedrock"}`]: 10,
    [`count(minecraft_version_info{${javaSeries},protocol="767"})`]: 1,
  };
  expect(await until(up), prometheus.output()).toEqual(up);

  await java.close();
  const down = {
    [`up{${javaSeries}}`]: 1,
    [`probe_success{${javaSeries}}`]: 0,
    [`minecraft_offline_reason{${javaSeries},reason="connection_refused"}`]: 1,
    // A series the scrapes no longer carry is marked stale at once.
    [`count(minecraft_players_online{${javaSeries}}) or vector(0)`]: 0,
    [`probe_success{${bedrockSeries}}`]: 1,
    [`minecraft_players_online{${bedrockSeries},edition="bedrock"}`]: 3,
  };
  expect(await until(down), prometheus.output()).toEqual(down);
}, 180_000);

/** The fenced blocks of docs/monitoring.md's probing section in `language`. */
function documented(language: string): string[] {
  const docs = readFileSync(new URL('../../docs/monitoring.md', import.meta.url), 'utf8');
  const section = docs.slice(docs.indexOf('## Probing Minecraft servers from Prometheus'), docs.indexOf('## Logs and privacy'));
  return [...section.matchAll(new RegExp('```' + language + '\\n([\\s\\S]*?)```', 'g'))].map((m) => m[1] ?? '');
}

it('answers every query the docs show, and promtool accepts the alerting rule of docs/monitoring.md', async () => {
  const queries = documented('promql').flatMap((block) => block.split('\n').filter((line) => line.trim() !== '' && !line.startsWith('#')));
  expect(queries.length).toBeGreaterThanOrEqual(5);
  // docs/lookups.md's uptime that counts only fresh answers.
  queries.push('probe_success * on (job, instance) (1 - max by (job, instance) (minecraft_stale))');
  for (const promql of queries) expect((await prometheus.query(promql)).length, promql).toBeGreaterThan(0);
  const rules = documented('yaml').filter((block) => block.startsWith('groups:'));
  expect(rules).toHaveLength(1);
  const file = join(dir, 'rules.yml');
  writeFileSync(file, rules[0]!);
  expect(execFileSync('promtool', ['check', 'rules', file], { encoding: 'utf8' })).toContain('SUCCESS: 1 rules found');
});

it('the Grafana dashboard reads the series /probe writes, and each of its queries answers', async () => {
  const dashboard = JSON.parse(readFileSync(new URL('../../deploy/grafana/observer-minecraft.json', import.meta.url), 'utf8')) as {
    panels: Array<{ title: string; targets: Array<{ expr: string }> }>;
  };
  const exprs = dashboard.panels.flatMap((panel) => panel.targets.map((target) => ({ title: panel.title, expr: target.expr })));
  const read = new Set(exprs.flatMap(({ expr }) => expr.match(/\b(?:probe|minecraft)_[a-z_]+\b/g) ?? []));
  const origin = `http://127.0.0.1:${(observer.app.server.address() as AddressInfo).port}`;
  const written = new Set([...(await (await fetch(`${origin}/probe?target=${bedrockTarget}&edition=auto&query=true`)).text()).matchAll(/^# TYPE (\S+) /gm)].map((m) => m[1]));
  // ICMP is off in the tests: its series is the one the dashboard reads that these probes leave out.
  written.add('minecraft_icmp_reachable');
  expect([...read].sort()).toEqual([...written].filter((name) => name !== 'minecraft_query_success').sort());
  for (const { title, expr } of exprs) {
    const promql = expr.replaceAll('$job', 'minecraft-.*').replaceAll('$instance', '.*').replaceAll('$__range', '1h').replaceAll('$__rate_interval', '1m');
    const found = await prometheus.query(promql);
    if (!expr.includes('minecraft_icmp_reachable')) expect(found.length, `${title}: ${promql}`).toBeGreaterThan(0);
  }
});
