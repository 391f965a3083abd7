/**
 * The user docs against the code they describe: docs/errors.md's error table against the
 * contract's error codes, docs/configuration.md against the variables the configuration
 * reader reads, every link between the pages against the pages and headings it names, and
 * each page's length.
 * Plain file reads, no server.
 */
import { existsSync, readdirSync, readFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import { loadConfig } from '../../src/config/index.js';
import { API_ERRORS } from '../../src/http/contract.js';

const read = (path: string) => readFileSync(new URL(`../../${path}`, import.meta.url), 'utf8');

/** The rows of the first Markdown table after `## heading`, as objects keyed by its header. */
function tableAfter(markdown: string, heading: string): Record<string, string>[] {
  const lines = markdown.split('\n');
  const start = lines.findIndex((line) => line.trim() === `## ${heading}`);
  if (start < 0) throw new Error(`no "## ${heading}" section`);
  const cells: string[][] = [];
  for (const line of lines.slice(start + 1)) {
    if (line.startsWith('## ')) break;
    if (line.startsWith('|')) cells.push(line.split('|').slice(1, -1).map((cell) => cell.trim()));
    else if (cells.length > 0) break;
  }
  const [header = [], , ...body] = cells;
  return body.map((row) => Object.fromEntries(header.map((name, i) => [name, row[i] ?? ''])));
}

/** What a table cell names as code: every `backticked` word in it. */
const codesIn = (cell: string) => [...cell.matchAll(/`([^`]+)`/g)].map((m) => m[1]!);

/** Every variable loadConfig reads, recorded by an environment that notes each name asked for. */
function variablesRead(): Set<string> {
  const seen = new Set<string>();
  const recording = (values: Record<string, string>) =>
    new Proxy(values, {
      get(target, name) {
        if (typeof name === 'string') seen.add(name);
        return target[name as string];
      },
    });
  // Unset everything, then the settings that switch other readings on (a database and Redis
  // to share, metrics, a block list, traces), so that a variable read only under one of them is seen.
  loadConfig(recording({}));
  loadConfig(
    recording({
      DATABASE_URL: 'postgres://observer@127.0.0.1/observer',
      REDIS_URL: 'redis://127.0.0.1:6379',
      METRICS_TOKEN: 'a-token-of-sixteen-or-more',
      METRICS_PORT: '9100',
      BLOCKLIST_SOURCE: '/dev/null',
      WATCH_CHECKS_PER_MINUTE: '60',
      OTEL_EXPORTER_OTLP_ENDPOINT: 'http://127.0.0.1:4318',
    }),
  );
  return seen;
}

describe('docs/errors.md', () => {
  it("lists in its error table exactly the contract's error codes, each under its status", () => {
    const rows = tableAfter(read('docs/errors.md'), 'Errors');
    expect(rows.length).toBeGreaterThan(0);
    const documented = new Map<string, number>();
    for (const row of rows) {
      const [code] = codesIn(row.Code ?? '');
      expect(code, `a row without a code: ${JSON.stringify(row)}`).toBeDefined();
      expect(documented.has(code!), `${code} listed twice`).toBe(false);
      documented.set(code!, Number(row.Status));
    }
    const contract = new Map(Object.entries(API_ERRORS).map(([code, [status]]) => [code, status]));
    expect([...documented.keys()].sort()).toEqual([...contract.keys()].sort());
    expect(documented).toEqual(contract);
  });
});

describe('docs/configuration.md', () => {
  const doc = read('docs/configuration.md');
  const named = new Set(doc.match(/\b[A-Z][A-Z0-9_]+\b/g));
  /** The variables the tables document, one a row. */
  const rows = doc
    .split('\n')
    .filter((line) => line.startsWith('| `'))
    .map((line) => codesIn(line.split('|')[1]!)[0]!);

  it('names every variable the configuration reader reads', () => {
    const read = variablesRead();
    expect(read.size).toBeGreaterThan(30);
    expect([...read].filter((name) => !named.has(name)).sort()).toEqual([]);
  });

  it('documents in its tables only variables the configuration reader reads', () => {
    const read = variablesRead();
    expect(rows.length).toBeGreaterThan(30);
    expect(rows.filter((name) => !read.has(name)).sort()).toEqual([]);
  });
});

/** GitHub's anchor for a heading: lower case, punctuation dropped, spaces as hyphens. */
const anchorOf = (heading: string) =>
  heading
    .trim()
    .toLowerCase()
    .replace(/[^\p{L}\p{N}_\- ]/gu, '')
    .replace(/ /g, '-');

/** The anchors of a Markdown page's headings (outside code blocks). */
function anchorsOf(markdown: string): Set<string> {
  const anchors = new Set<string>();
  let fenced = false;
  for (const line of markdown.split('\n')) {
    if (line.startsWith('```')) fenced = !fenced;
    const heading = !fenced && /^#{1,6} (.*)$/.exec(line);
    if (heading) anchors.add(anchorOf(heading[1]!));
  }
  return anchors;
}

describe('the docs pages', () => {
  const pages = ['README.md', 'bench/README.md', ...readdirSync(new URL('../../docs/', import.meta.url)).filter((f) => f.endsWith('.md')).map((f) => `docs/${f}`)];

  it.each(pages.filter((page) => page.startsWith('docs/')))('%s is a page read in minutes: at most 200 lines', (page) => {
    expect(read(page).split('\n').length).toBeLessThanOrEqual(201);
  });

  it.each(pages)('%s links only to pages and headings that exist', (page) => {
    const text = read(page);
    const broken: string[] = [];
    for (const [, target] of text.matchAll(/\]\(([^)\s]+)\)/g)) {
      if (/^[a-z]+:/.test(target!)) continue; // another site
      const [path = '', anchor] = target!.split('#');
      const file = path === '' ? page : new URL(path, new URL(page, 'file:///')).pathname.slice(1);
      if (!existsSync(new URL(`../../${file}`, import.meta.url))) {
        broken.push(`${target}: no file ${file}`);
        continue;
      }
      if (anchor && file.endsWith('.md') && !anchorsOf(read(file)).has(anchor)) broken.push(`${target}: no heading #${anchor} in ${file}`);
    }
    expect(broken).toEqual([]);
  });
});
