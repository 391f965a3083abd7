/**
 * ICMP echo benchmark: `npx tsx bench/icmp.ts [seconds]`. Echoes per second to loopback
 * addresses (127.x.y.z, distinct per echo so that nothing is shared or cached), 64 at a
 * time, through the IcmpPinger's two shared raw sockets, next to the baseline in the same
 * run: one `ping -c 1` process per echo (the obvious alternative). Needs
 * CAP_NET_RAW (root); figures only. All traffic stays on loopback.
 */
import { execFile } from 'node:child_process';
import { performance } from 'node:perf_hooks';
import { IcmpPinger } from '../src/resolve/index.js';

const SECONDS = Number(process.argv[2] ?? 3);
const CONCURRENCY = 64;

let next = 0;
/** 127.0.0.1 … 127.255.255.254: loopback only, a different address each time. */
function nextLoopback(): string {
  next = (next % 16_000_000) + 1;
  return `127.${(next >> 16) & 255}.${(next >> 8) & 255}.${next & 255 || 1}`;
}

async function rate(label: string, echo: (ip: string) => Promise<boolean | null>): Promise<number> {
  let done = 0;
  let replied = 0;
  const deadline = performance.now() + SECONDS * 1000;
  const worker = async () => {
    while (performance.now() < deadline) {
      if ((await echo(nextLoopback())) === true) replied++;
      done++;
    }
  };
  const begin = performance.now();
  await Promise.all(Array.from({ length: CONCURRENCY }, worker));
  const perSecond = done / ((performance.now() - begin) / 1000);
  console.log(`  ${label.padEnd(50)} ${Math.round(perSecond).toLocaleString().padStart(8)} echoes/s  (${replied}/${done} replied)`);
  return perSecond;
}

function pingProcess(ip: string): Promise<boolean | null> {
  return new Promise((resolve) => {
    execFile('ping', ['-n', '-c', '1', '-W', '1', '-4', ip], { timeout: 3000 }, (error) => {
      if (!error) resolve(true);
      else resolve((error as { code?: unknown }).code === 'ENOENT' ? null : false);
    });
  });
}

console.log(`ICMP echoes to distinct loopback addresses, ${CONCURRENCY} at a time, ${SECONDS} s each`);
const pinger = new IcmpPinger({ timeoutMs: 2000, cacheMs: 0 });
const { mode, detail } = pinger.start();
console.log(`  pinger mode: ${mode} (${detail})`);
const shared = await rate('IcmpPinger, two shared raw sockets', (ip) => pinger.echo(ip));
const cachedPinger = new IcmpPinger({ timeoutMs: 2000 });
cachedPinger.start();
let hot = 0;
const cached = await rate('IcmpPinger, 16 hot IPs (shared + 3 s answer cache)', () => cachedPinger.echo(`127.0.0.${(hot++ % 16) + 1}`));
pinger.close();
cachedPinger.close();
const baseline = await rate('baseline: one `ping -c 1` process per echo', pingProcess);
console.log('\nSummary');
console.log(`  raw sockets: ${Math.round(shared).toLocaleString()} echoes/s, ${(shared / baseline).toFixed(1)}x the process-per-echo baseline (${Math.round(baseline).toLocaleString()} echoes/s)`);
console.log(`  with sharing and the answer cache on hot IPs: ${Math.round(cached).toLocaleString()} echoes/s`);
