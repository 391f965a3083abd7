/**
 * The database's size over simulated days (bench/scale.ts): `servers` servers checked every 5
 * minutes, a day of checks written at a time, then a retention pass with the store's clock a
 * day on. With raw checks kept 2 days and hourly rows 30, the file grows for 30 days, then
 * stays flat: retention frees as much as a day adds, and gives the free pages back.
 */
import { openStore } from '../../src/store/index.js';
import { sqliteBinding } from '../../src/store/sqlite/binding.js';
import { serverId } from '../../src/status/server-id.js';
import { DAY, HOUR, MINUTE } from './data.js';
import { fmt } from '../support.js';
import { FakeClock } from '../../test/support/clock.js';

const INTERVAL = 5 * MINUTE;

export async function retentionOverDays(path: string, servers: number, days: number): Promise<void> {
  const start = Date.UTC(2026, 0, 1);
  const clock = new FakeClock(start);
  const store = await openStore({ database: { kind: 'sqlite', path }, checkRetentionDays: 2, rollupRetentionDays: 30 }, clock);
  const db = sqliteBinding().open(path);
  db.pragma('busy_timeout = 10000');
  const insertServer = db.prepare(`INSERT INTO servers (id, edition, host, port, first_seen, last_seen, last_online)
    VALUES (?, 'java', ?, 25565, ?, ?, 1) ON CONFLICT (id) DO UPDATE SET last_seen = excluded.last_seen RETURNING sid`).pluck();
  const insertCheck = db.prepare('INSERT INTO checks (server, checked_at, online, players_online, players_max, latency_ms) VALUES (?, ?, 1, ?, 100, 20)');
  const insertHour = db.prepare('INSERT INTO check_hours (server, hour, checks, online, players_n, players_sum, players_peak) VALUES (?, ?, 12, 12, 12, ?, ?)');
  const writeDay = db.transaction((dayStart: number) => {
    for (let i = 0; i < servers; i++) {
      const host = `srv-${i}.scale.example`;
      const sid = insertServer.all(serverId('java', host, 25565), host, dayStart, dayStart + DAY - INTERVAL)[0] as number;
      for (let k = 0; k < DAY / INTERVAL; k++) insertCheck.run(sid, dayStart + k * INTERVAL, i % 50);
      for (let h = 0; h < 24; h++) insertHour.run(sid, dayStart / HOUR + h, 12 * (i % 50), i % 50);
    }
  });
  const sizes: string[] = [];
  const bytes = () => {
    const { page_count: pages, page_size: size } = {
      page_count: Number(db.prepare('PRAGMA page_count').pluck().all()[0]),
      page_size: Number(db.prepare('PRAGMA page_size').pluck().all()[0]),
    };
    return pages * size;
  };
  try {
    for (let day = 0; day < days; day++) {
      writeDay(start + day * DAY);
      clock.advance(DAY);
      await store.prune();
      if ((day + 1) % 5 === 0) sizes.push(`day ${day + 1}: ${fmt(bytes() / 1024 / 1024, 1)} MiB`);
    }
  } finally {
    db.close();
    await store.close();
  }
  console.log(`\nDatabase size over ${days} simulated days, ${fmt(servers)} servers every 5 minutes, retention each day (raw 2 d, hourly 30 d):`);
  console.log(`  ${sizes.join('; ')}`);
}
