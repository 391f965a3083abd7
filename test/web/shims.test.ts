/**
 * The browser stand-ins for `node:net` and `node:url` (web/src/shims), which let the page run
 * the service's own address parser, against Node's originals: same answers on a corpus of
 * addresses, odd spellings and internationalised names, and on random IP-like strings.
 */
import { isIP, isIPv4, isIPv6 } from 'node:net';
import { domainToASCII } from 'node:url';
import { describe, expect, it } from 'vitest';
import * as net from '../../web/src/shims/net.js';
import * as url from '../../web/src/shims/url.js';

const IPS = [
  '1.2.3.4', '255.255.255.255', '256.1.1.1', '01.2.3.4', '1.2.3', '1.2.3.4.5', '0x7f.0.0.1', '127.1', '2130706433', ' 1.2.3.4',
  '::', '::1', '1::', ':::', '1:2:3:4:5:6:7:8', '1:2:3:4:5:6:7:8:9', '1::2::3', 'fe80::1%eth0', 'fe80::1%', '::ffff:1.2.3.4',
  '::ffff:01.2.3.4', '64:ff9b::192.0.2.33', '2001:DB8::1', '2001:db8:0:0:0:0:2:1', 'g::1', '[::1]', '',
];

const NAMES = [
  'play.example.com', 'PLAY.Example.COM', 'bücher.de', 'BÜCHER.de.', 'ＭＣ.example.com', '１２７.０.０.１', '０x７f.１', 'faß.de',
  'xn--bcher-kva.de', 'xn--zz.de', 'a..b', 'ä..b', 'ä[b', 'ä／b', '☃.net', 'ＡＢＣ', 'مثال.إختبار', 'a。b。c', '例え.テスト',
  'ä-.de', 'ä_x.de', `ä${'a'.repeat(70)}.de`, 'a\u200db.de', 'ä.', 'ǅ.de', 'ä.123', 'ä.0x10', '10.ä', 'ß', 'ﬁ.example',
];

/** A deterministic stream of short strings over the characters of IP literals. */
function* randomIpLike(count: number): Generator<string> {
  let seed = 42;
  const next = () => (seed = (seed * 1103515245 + 12345) % 2 ** 31);
  const chars = '0123456789abcdefABCDEF:.%x';
  for (let i = 0; i < count; i++) {
    let s = '';
    const length = 1 + (next() % 24);
    for (let j = 0; j < length; j++) s += chars[next() % chars.length];
    yield s;
  }
}

describe('web/src/shims', () => {
  it('net: isIPv4, isIPv6 and isIP answer as node:net', () => {
    for (const s of [...IPS, ...randomIpLike(20_000)]) {
      expect([net.isIPv4(s), net.isIPv6(s), net.isIP(s)], s).toEqual([isIPv4(s), isIPv6(s), isIP(s)]);
    }
  });

  it('url: domainToASCII answers as node:url, failures included', () => {
    for (const name of NAMES) expect(url.domainToASCII(name), name).toBe(domainToASCII(name));
  });
});
