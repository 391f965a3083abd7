/**
 * kill -9 during a burst of writes. Checks are group-committed (one transaction per 50 ms or
 * 500 rows), so a SIGKILL may lose what was queued since the last commit: at most one window.
 * Counted here: of the checks the writer queued, the ones missing from the file are at most
 * one window's rows (500, plus the writer's burst in flight), and they are the newest ones
 * (a suffix: nothing older is lost). The file passes SQLite's integrity check (WAL with
 * synchronous=NORMAL loses no commit when only the process dies).
 */
import { spawn } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { pragmaValue, sqliteBinding } from '../../src/store/sqlite/binding.js';
import { afterAll, expect, it } from 'vitest';
import { openStore } from '../../src/store/index.js';

const dir = mkdtempSync(join(tmpdir(), 'observer-crash-'));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

/** The write queue's default window (write-queue.ts) and crash-writer.ts's burst. */
const WINDOW_ROWS = 500;
const BURST = 10;

it('loses at most one window of queued checks when the process is killed mid-write, and leaves a sound file', async () => {
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

  // Only whole lines: an id cut by the kill was not necessarily reported queued.
  const queued = out.split('\n').slice(0, -1);
  expect(queued.length).toBeGreaterThanOrEqual(3000);

  const db = sqliteBinding().open(path);
  try {
    expect(pragmaValue(db, 'integrity_check')).toBe('ok');
    const found = db.prepare('SELECT 1 FROM checks WHERE server_id = ?');
    const present = queued.map((id) => found.get(id) !== undefined);
    const lost = present.filter((p) => !p).length;
    console.log(`queued ${queued.length} checks before SIGKILL; ${lost} lost (window: ${WINDOW_ROWS} rows)`);
    expect(lost).toBeLessThanOrEqual(WINDOW_ROWS + BURST);
    // The lost ones are the newest: every check before the first lost one was committed.
    const firstLost = present.indexOf(false);
    if (firstLost >= 0) expect(present.slice(firstLost).every((p) => !p)).toBe(true);
    // Counters and look-ups were committed in the same transactions as the checks.
    const committed = queued.length - lost;
    const totalChecks = db.prepare("SELECT value FROM counters WHERE name = 'totalChecks'").get() as { value: number };
    expect(Number(totalChecks.value)).toBe(committed);
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
