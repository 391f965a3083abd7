/**
 * `node:url`'s domainToASCII for the browser bundle (web/build.mjs maps `node:url` here): like
 * Node's, the WHATWG URL host parser (UTS #46 domain-to-ASCII, then the IPv4 number reading
 * when the last label is numeric), and '' for a name it refuses. Only for the host names
 * src/resolve/address.ts hands it (no ':', '/', '?', '#', '@' or '%'). test/web/shims.test.ts
 * compares both on a corpus.
 */
export function domainToASCII(domain: string): string {
  try {
    return new URL(`http://${domain}/`).hostname;
  } catch {
    return '';
  }
}
