/** Page URLs: `/` and the shareable `/server/{address}` (`?bedrock` or `?legacy` where chosen). */
import { root, type Mode } from './api.js';

export interface Target {
  address: string;
  mode: Mode;
}

const flag = (params: URLSearchParams, name: string) => params.has(name) && !/^(false|0)$/i.test(params.get(name) ?? '');

/** The server a page URL names, or null for the front page. */
export function targetOf(location: URL): Target | null {
  const path = location.pathname.startsWith(root.pathname) ? location.pathname.slice(root.pathname.length) : location.pathname;
  const match = /^server\/([^/]+)\/?$/.exec(path);
  if (!match) return null;
  let address: string;
  try {
    address = decodeURIComponent(match[1]!);
  } catch {
    address = match[1]!;
  }
  const params = location.searchParams;
  const mode: Mode = flag(params, 'bedrock') ? 'bedrock' : flag(params, 'legacy') ? 'legacy' : 'java';
  return { address, mode };
}

/** The page URL of a server, absolute. */
export function pageUrl(target: Target): string {
  const u = new URL(`server/${encodeURIComponent(target.address)}`, root);
  // `?bedrock`, not `?bedrock=`: short and readable in a shared link.
  return target.mode === 'java' ? u.href : `${u.href}?${target.mode}`;
}
