#!/usr/bin/env node
// `node scripts/smoke.mjs`: the service as an operator runs it, on whichever Node runs this
// script. Starts `npm start` (dist/ built by `npm ci`) on a free loopback port with a fresh
// SQLite file, beside real Minecraft servers (minecraft-protocol) on loopback, then:
//  - 400 uncached look-ups (each a new address and mode): 80 of live servers in both modes,
//    320 of closed loopback ports, with /trends and /stats between every 20;
//  - health still answers 200 "OK", and / and the OpenAPI document 200;
//  - SIGTERM to npm ends the service with exit code 0, and nothing listens on its port after.
// Fails on any other answer, and on any warning the service or npm prints.
// Traffic goes to 127.0.0.0/8 only.
import { spawn } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { createRequire } from 'node:module';
import { connect } from 'node:net';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { freePort } from './ports.mjs';

const root = join(dirname(fileURLToPath(import.meta.url)), '..');
const require = createRequire(join(root, 'package.json'));
const LIVE_SERVERS = 40;
const CLOSED = 320;

const fail = (message) => {
  throw new Error(message);
};

async function startMinecraftServers(n) {
  const mc = require('minecraft-protocol');
  const servers = [];
  for (let i = 0; i < n; i++) {
    const server = mc.createServer({ host: '127.0.0.1', port: 0, 'online-mode': false, motd: `§aSmoke §f${i}`, hideErrors: true });
    await new Promise((resolve) => server.socketServer.once('listening', resolve));
    servers.push(server);
  }
  return servers;
}

async function main() {
  const dir = mkdtempSync(join(tmpdir(), 'observer-smoke-'));
  const servers = await startMinecraftServers(LIVE_SERVERS);
  // Taken once the Minecraft servers listen: the service binds it only when npm start runs.
  const port = await freePort();
  const base = `http://127.0.0.1:${port}`;
  let output = '';
  const service = spawn('npm', ['start'], {
    cwd: root,
    env: {
      ...process.env,
      PORT: String(port),
      HOST: '127.0.0.1',
      DATABASE_URL: `sqlite:${join(dir, 'observer.db')}`,
      TARGET_ALLOWLIST: '127.0.0.0/8,::1/128',
      RATE_LIMIT_STATUS: '100000',
      TARGET_PINGS_PER_MINUTE: '100000',
      NEW_SERVERS_PER_CLIENT_PER_DAY: '1000000',
      RATE_LIMIT_GENERAL: '100000',
      PING_TIMEOUT_MS: '3000',
      LOG_LEVEL: 'warn',
    },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  service.stdout.on('data', (chunk) => (output += chunk));
  service.stderr.on('data', (chunk) => (output += chunk));
  const exited = new Promise((resolve) => service.once('exit', (code, signal) => resolve({ code, signal })));
  try {
    const get = async (path, expected = 200) => {
      const res = await fetch(base + path, { signal: AbortSignal.timeout(10_000) });
      const body = await res.text();
      if (res.status !== expected) fail(`GET ${path}: ${res.status} ${body.slice(0, 200)}`);
      return body;
    };
    let up = false;
    for (let i = 0; i < 120 && !up; i++) {
      if (service.exitCode !== null) fail(`npm start exited with code ${service.exitCode} before answering\n${output.slice(-4000)}`);
      try {
        up = JSON.parse(await get('/api/v1/status')).status === 'OK';
      } catch {
        await new Promise((resolve) => setTimeout(resolve, 250));
      }
    }
    if (!up) fail('GET /api/v1/status did not answer 200 with status OK within 30 s');

    const closedPorts = new Set(servers.map((s) => s.socketServer.address().port));
    const lookups = [];
    for (const server of servers) {
      const at = `127.0.0.1:${server.socketServer.address().port}`;
      lookups.push({ path: `/api/v1/status/${at}`, online: true }, { path: `/api/v1/status/${at}?legacy=true`, online: null });
    }
    for (let i = 0; lookups.length < LIVE_SERVERS * 2 + CLOSED; i++) {
      const closedPort = 1 + i;
      if (closedPorts.has(closedPort)) continue;
      lookups.push({ path: `/api/v1/status/127.0.0.${2 + (i % 250)}:${closedPort}`, online: false });
    }
    let online = 0;
    for (let i = 0; i < lookups.length; i += 20) {
      await Promise.all(
        lookups.slice(i, i + 20).map(async ({ path, online: expected }) => {
          const status = JSON.parse(await get(path));
          if (expected !== null && status.online !== expected) fail(`${path}: online ${status.online}, expected ${expected}`);
          if (status.online) online++;
        }),
      );
      if (!JSON.parse(await get('/api/v1/trends?limit=50')).success) fail('/trends: success is not true');
      JSON.parse(await get('/api/v1/stats'));
    }
    const health = JSON.parse(await get('/api/v1/status'));
    if (health.status !== 'OK') fail(`health after the look-ups: ${JSON.stringify(health)}`);
    await get('/');
    await get('/api/v1/openapi.json');
    console.log(`smoke on Node ${process.version}: ${lookups.length} uncached look-ups (${online} online), /trends and /stats between, health OK`);
  } finally {
    // SIGTERM to npm alone, as a service manager sends it: npm passes it on to the service.
    service.kill('SIGTERM');
    const timer = setTimeout(() => service.kill('SIGKILL'), 30_000);
    const { code, signal } = await exited;
    clearTimeout(timer);
    for (const server of servers) server.close();
    rmSync(dir, { recursive: true, force: true });
    const warnings = output.split('\n').filter((line) => /warn/i.test(line) && !/"level":40/.test(line));
    if (warnings.length) console.error(`warnings printed by npm start:\n${warnings.join('\n')}`);
    if (code !== 0) fail(`npm start ended with ${signal ?? `exit code ${code}`} after SIGTERM, not 0\n${output.slice(-4000)}`);
    const stillListening = await new Promise((resolve) => {
      const socket = connect(port, '127.0.0.1', () => {
        socket.destroy();
        resolve(true);
      }).on('error', () => resolve(false));
    });
    if (stillListening) fail('npm start exited but something still listens on its port');
    if (warnings.length) fail('npm start printed warnings');
    console.log('npm start stopped by SIGTERM with exit code 0');
  }
}

await main();
