/**
 * The blocked-servers list: vanilla's matching, loading from a local file and from a local HTTP
 * server on loopback (never Mojang's URL), and keeping the last good copy when a reload fails.
 */
import { createHash } from 'node:crypto';
import { mkdtempSync, writeFileSync } from 'node:fs';
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { Blocklist, blocklistCandidates, javaHostAddress, parseBlocklist } from '../../src/status/blocklist.js';

const sha1 = (text: string) => createHash('sha1').update(text).digest('hex');

describe('blocklistCandidates (the vanilla client’s patterns, in its order)', () => {
  it.each([
    ['Play.Example.COM', ['play.example.com', '*.play.example.com', '*.example.com', '*.com']],
    // `*.example.com` on the list blocks example.com itself.
    ['example.com', ['example.com', '*.example.com', '*.com']],
    ['example.com...', ['example.com', '*.example.com', '*.com']],
    ['localhost', ['localhost', '*.localhost']],
    ['_minecraft._tcp.mc.example.com', ['mc.example.com', '*.mc.example.com', '*.example.com', '*.com']],
    ['203.0.113.7', ['203.0.113.7', '203.0.113.*', '203.0.*', '203.*']],
    // Java's Integer.parseInt reads leading zeros and a sign: still an IPv4 address for vanilla.
    ['10.0.0.010', ['10.0.0.010', '10.0.0.*', '10.0.*', '10.*']],
    // An octet over 255: a name, so parent domains, never octet patterns.
    ['10.0.0.256', ['10.0.0.256', '*.10.0.0.256', '*.0.0.256', '*.0.256', '*.256']],
    ['1.2.3', ['1.2.3', '*.1.2.3', '*.2.3', '*.3']],
    ['0:0:0:0:0:0:0:1', ['0:0:0:0:0:0:0:1', '*.0:0:0:0:0:0:0:1']],
    ['.', []],
  ])('%s', (host, expected) => {
    expect(blocklistCandidates(host)).toEqual(expected);
  });

  it('writes IPs as Java does: IPv6 in eight uncompressed groups, mapped IPv4 as IPv4', () => {
    expect(javaHostAddress('::1')).toBe('0:0:0:0:0:0:0:1');
    expect(javaHostAddress('2001:DB8::0:1')).toBe('2001:db8:0:0:0:0:0:1');
    expect(javaHostAddress('::ffff:203.0.113.7')).toBe('203.0.113.7');
    expect(javaHostAddress('203.0.113.7')).toBe('203.0.113.7');
  });
});

describe('parseBlocklist', () => {
  it('reads one SHA-1 per line, any case, blank lines and CRLF allowed', () => {
    const list = parseBlocklist(`${sha1('a.com').toUpperCase()}\r\n\n${sha1('*.b.com')}\n`);
    expect([...list]).toEqual([sha1('a.com'), sha1('*.b.com')]);
  });
  it('refuses a body that is not a list (an error page)', () => {
    expect(() => parseBlocklist('<html>Service Unavailable</html>')).toThrow();
  });
});

let body = `${sha1('*.mojang-test.example')}\n`;
let status = 200;
let requests = 0;
let server: http.Server;
let url: string;
beforeAll(async () => {
  server = http.createServer((_req, res) => {
    requests += 1;
    res.writeHead(status, { 'content-type': 'text/plain' });
    res.end(body);
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  url = `http://127.0.0.1:${(server.address() as AddressInfo).port}/blockedservers`;
});
afterAll(() => new Promise<void>((resolve) => server.close(() => resolve())));

describe('Blocklist', () => {
  it('is null before a list is loaded', () => {
    const list = new Blocklist({ source: { kind: 'url', url }, refreshMinutes: 60 });
    expect(list.isBlocked('mc.mojang-test.example')).toBeNull();
  });

  it('loads from a local HTTP server and matches parent domains and IPv4 patterns', async () => {
    body = `${sha1('*.mojang-test.example')}\n${sha1('198.51.*')}\n`;
    status = 200;
    const list = new Blocklist({ source: { kind: 'url', url }, refreshMinutes: 60 });
    expect(await list.load()).toBe(true);
    expect(list.size).toBe(2);
    expect(list.isBlocked('play.MC.mojang-test.example')).toBe(true);
    // As in vanilla: `*.mojang-test.example` covers the domain itself.
    expect(list.isBlocked('mojang-test.example')).toBe(true);
    expect(list.isBlocked('mojang-test.example.')).toBe(true);
    expect(list.isBlocked('other-mojang-test.example')).toBe(false);
    expect(list.isBlocked('example')).toBe(false);
    expect(list.isBlocked('other.example', null, '198.51.100.20')).toBe(true);
    expect(list.isBlocked('other.example', undefined, '198.52.100.20')).toBe(false);
  });

  it('a TLD wildcard blocks every name under it and the bare TLD, not IPv4 literals', async () => {
    body = `${sha1('*.test')}\n`;
    status = 200;
    const list = new Blocklist({ source: { kind: 'url', url }, refreshMinutes: 60 });
    expect(await list.load()).toBe(true);
    expect(list.isBlocked('a.b.c.test')).toBe(true);
    expect(list.isBlocked('test')).toBe(true);
    expect(list.isBlocked('testing')).toBe(false);
    expect(list.isBlocked('127.0.0.1')).toBe(false);
  });

  it('hashes ISO-8859-1 bytes, as the Java client does', async () => {
    // The list holds SHA-1 of the Latin-1 bytes (0xe9 for é), not of UTF-8 (0xc3 0xa9).
    body = `${createHash('sha1').update(Buffer.from('café.example', 'latin1')).digest('hex')}\n`;
    status = 200;
    const list = new Blocklist({ source: { kind: 'url', url }, refreshMinutes: 60 });
    expect(await list.load()).toBe(true);
    expect(list.isBlocked('CAFÉ.example')).toBe(true);
  });

  it('keeps the last good copy when a reload fails (HTTP error, garbage, missing file)', async () => {
    body = `${sha1('kept.example')}\n`;
    status = 200;
    const errors: string[] = [];
    const list = new Blocklist({ source: { kind: 'url', url }, refreshMinutes: 60, onError: (_e, context) => errors.push(context) });
    expect(await list.load()).toBe(true);
    status = 503;
    expect(await list.load()).toBe(false);
    status = 200;
    body = 'not a list\n';
    expect(await list.load()).toBe(false);
    expect(list.isBlocked('kept.example')).toBe(true);
    expect(errors).toHaveLength(2);

    const dir = mkdtempSync(join(tmpdir(), 'observer-blocklist-'));
    const path = join(dir, 'list.txt');
    writeFileSync(path, `${sha1('file.example')}\n`);
    const fromFile = new Blocklist({ source: { kind: 'file', path }, refreshMinutes: 60 });
    expect(await fromFile.load()).toBe(true);
    writeFileSync(path, `${sha1('file.example')}\n${sha1('new.example')}\n`);
    expect(await fromFile.load()).toBe(true);
    expect(fromFile.isBlocked('new.example')).toBe(true);
    const gone = new Blocklist({ source: { kind: 'file', path: join(dir, 'missing.txt') }, refreshMinutes: 60 });
    expect(await gone.load()).toBe(false);
    expect(gone.isBlocked('file.example')).toBeNull();
  });

  it('start() loads at once and stop() ends the reloads', async () => {
    body = `${sha1('started.example')}\n`;
    status = 200;
    const before = requests;
    const list = new Blocklist({ source: { kind: 'url', url }, refreshMinutes: 1 });
    expect(await list.start()).toBe(true);
    list.stop();
    expect(requests).toBe(before + 1);
    expect(list.isBlocked('started.example')).toBe(true);
  });
});
