/**
 * `node:net`'s isIPv4 and isIPv6 for the browser bundle (web/build.mjs maps `node:net` here),
 * so that the page checks addresses with the service's own parser (src/resolve/address.ts).
 * The regular expressions are Node 20's own (lib/internal/net.js), character for character;
 * test/web/shims.test.ts compares both on a corpus.
 */
const v4Seg = '(?:25[0-5]|2[0-4][0-9]|1[0-9][0-9]|[1-9][0-9]|[0-9])';
const v4Str = `(?:${v4Seg}\\.){3}${v4Seg}`;
const IPv4Reg = new RegExp(`^${v4Str}$`);
const v6Seg = '(?:[0-9a-fA-F]{1,4})';
const IPv6Reg = new RegExp(
  '^(?:' +
    `(?:${v6Seg}:){7}(?:${v6Seg}|:)|` +
    `(?:${v6Seg}:){6}(?:${v4Str}|:${v6Seg}|:)|` +
    `(?:${v6Seg}:){5}(?::${v4Str}|(?::${v6Seg}){1,2}|:)|` +
    `(?:${v6Seg}:){4}(?:(?::${v6Seg}){0,1}:${v4Str}|(?::${v6Seg}){1,3}|:)|` +
    `(?:${v6Seg}:){3}(?:(?::${v6Seg}){0,2}:${v4Str}|(?::${v6Seg}){1,4}|:)|` +
    `(?:${v6Seg}:){2}(?:(?::${v6Seg}){0,3}:${v4Str}|(?::${v6Seg}){1,5}|:)|` +
    `(?:${v6Seg}:){1}(?:(?::${v6Seg}){0,4}:${v4Str}|(?::${v6Seg}){1,6}|:)|` +
    `(?::(?:(?::${v6Seg}){0,5}:${v4Str}|(?::${v6Seg}){1,7}|:))` +
    ')(?:%[0-9a-zA-Z-.:]{1,})?$',
);

export function isIPv4(s: string): boolean {
  return IPv4Reg.test(s);
}

export function isIPv6(s: string): boolean {
  return IPv6Reg.test(s);
}

export function isIP(s: string): 0 | 4 | 6 {
  if (isIPv4(s)) return 4;
  return isIPv6(s) ? 6 : 0;
}
