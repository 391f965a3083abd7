/**
 * Debian's real `prometheus` on loopback for tests: its own free port, a temporary data
 * directory, the scrape configuration the test writes, and its HTTP query API.
 */
import { spawn } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { freePort } from '../../scripts/ports.mjs';

export interface PrometheusSample {
  metric: Record<string, string>;
  value: number;
}

export interface RunningPrometheus {
  url: string;
  /** An instant query: every series of the result with its value. */
  query(promql: string): Promise<PrometheusSample[]>;
  /** What Prometheus printed (warnings and errors), for a failing test's message. */
  output(): string;
  stop(): Promise<void>;
}

/** Starts Prometheus with `config` (YAML) and waits until it is ready. */
export async function startPrometheus(config: string): Promise<RunningPrometheus> {
  const dir = mkdtempSync(join(tmpdir(), 'observer-prometheus-'));
  const configFile = join(dir, 'prometheus.yml');
  writeFileSync(configFile, config);
  const port = await freePort();
  const child = spawn(
    'prometheus',
    [`--config.file=${configFile}`, `--storage.tsdb.path=${join(dir, 'data')}`, `--web.listen-address=127.0.0.1:${port}`, '--log.level=warn'],
    { stdio: ['ignore', 'pipe', 'pipe'] },
  );
  let printed = '';
  child.stdout.on('data', (chunk: Buffer) => (printed += chunk.toString('utf8')));
  child.stderr.on('data', (chunk: Buffer) => (printed += chunk.toString('utf8')));
  const exited = new Promise<void>((resolve) => child.once('exit', () => resolve()));
  const url = `http://127.0.0.1:${port}`;
  const stop = async () => {
    if (child.exitCode === null) child.kill('SIGTERM');
    await exited;
    rmSync(dir, { recursive: true, force: true });
  };
  for (let i = 0; ; i += 1) {
    if (child.exitCode !== null || i >= 600) {
      await stop();
      throw new Error(`prometheus did not start:\n${printed}`);
    }
    try {
      if ((await fetch(`${url}/-/ready`)).ok) break;
    } catch {
      // Not listening yet.
    }
    await new Promise((resolve) => setTimeout(resolve, 100));
  }
  return {
    url,
    async query(promql) {
      const res = await fetch(`${url}/api/v1/query?query=${encodeURIComponent(promql)}`);
      const body = (await res.json()) as { status: string; error?: string; data?: { result: Array<{ metric: Record<string, string>; value: [number, string] }> } };
      if (body.status !== 'success' || !body.data) throw new Error(`query ${promql} failed: ${body.error ?? res.status}`);
      return body.data.result.map((r) => ({ metric: r.metric, value: Number(r.value[1]) }));
    },
    output: () => printed,
    stop,
  };
}
