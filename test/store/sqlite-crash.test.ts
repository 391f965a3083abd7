/**
 * kill -9 during a burst of writes: every check the writer saw committed is in the file, and
 * the file passes SQLite's integrity check (WAL with synchronous=NORMAL loses nothing when
 * only the process dies).
 */
import { spawn } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import Database from 'better-sqlite3';
import { afterAll, expect, it } from 'vitest';
import { openStore } from '../../src/store/index.js';

const dir = mkdtempSync(join(tmpdir(), 'observer-crash-'));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

it('loses no committed check when the process is killed mid-write, and leaves a sound file', async () => {
  const path = join(dir, 'observer.db');
  const child = spawn(process.execPath, ['--import', 'tsx', join(import.meta.dirname, 'crash-writer.ts'), path], {
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let out = '';
  let err = '';
  child.stderr.on('data', (chunk: Buffer) => (err += chunk.toString()));
  const exited = new Promise<NodeJS.Signals | null>((resolve) => child.on('exit', (_code, signal) => resolve(signal)));
  await new Promise<void>((resolve, reject) => {
    child.stdout.on('data', (chunk: Buffer) => {
      out += chunk.toString();
      // Well into the burst: a few thousand commits, counters and look-ups flushing too.
      if (out.split('\n').length > 3000) {
        child.kill('SIGKILL');
        resolve();
      }
    });
    child.on('exit', () => reject(new Error(`writer exited early: ${err}`)));
  });
  expect(await exited).toBe('SIGKILL');

  // Only whole lines: an id cut by the kill was not necessarily reported committed.
  const committed = out.split('\n').slice(0, -1);
  expect(committed.length).toBeGreaterThanOrEqual(3000);

  const db = new Database(path);
  try {
    expect(db.pragma('integrity_check', { simple: true })).toBe('ok');
    const found = db.prepare('SELECT 1 FROM checks WHERE server_id = ?');
    const missing = committed.filter((id) => found.get(id) === undefined);
    expect(missing).toEqual([]);
  } finally {
    db.close();
  }

  // And the store opens on it again.
  const store = await openStore({ database: { kind: 'sqlite', path }, checkRetentionDays: 30 });
  try {
    expect((await store.stats()).recentChecks).toHaveLength(10);
  } finally {
    await store.close();
  }
}, 120_000);
