/**
 * Scrapes are read with a real exposition-format parser (parse-prometheus-text-format, which
 * follows the Prometheus Python client's parser), never with our own regexes.
 */
import { createRequire } from 'node:module';

export interface ParsedSample {
  value?: string;
  labels?: Record<string, string>;
  buckets?: Record<string, string>;
  count?: string;
  sum?: string;
}
export interface ParsedFamily {
  name: string;
  help: string;
  type: string;
  metrics: ParsedSample[];
}

const require = createRequire(import.meta.url);
const parse = require('parse-prometheus-text-format') as (text: string) => ParsedFamily[];

/**
 * Every series by its own name (`x_bucket`, `x_sum`, `x_count` separately), labels intact.
 * The parser folds the samples of a histogram into one and drops their labels when the
 * histogram has labels of its own (it follows prom2json's unlabelled histogram shape), so histogram series are read with their `# TYPE` line left
 * out (as untyped samples); `types` keeps what each family was declared as.
 */
export interface Exposition extends Map<string, ParsedFamily> {
  types: Map<string, string>;
}

export function parseExposition(text: string): Exposition {
  const types = new Map(parse(text).map((family) => [family.name, family.type]));
  const untyped = text
    .split('\n')
    .filter((line) => !line.startsWith('# TYPE '))
    .join('\n');
  // prom-client writes a labelled histogram's series per label set (buckets, sum, count, then
  // the next set), so one name comes back as several runs: merged here.
  const series = new Map<string, ParsedFamily>();
  for (const family of parse(untyped)) {
    const seen = series.get(family.name);
    if (seen) seen.metrics.push(...family.metrics);
    else series.set(family.name, family);
  }
  return Object.assign(series, { types });
}

/** The samples of one family whose labels include `labels`. */
export function samples(families: Map<string, ParsedFamily>, name: string, labels: Record<string, string> = {}): ParsedSample[] {
  const family = families.get(name);
  if (!family) throw new Error(`no metric family ${name}`);
  return family.metrics.filter((m) => Object.entries(labels).every(([k, v]) => m.labels?.[k] === v));
}

/** The value of the one sample of `name` with `labels` (a counter or gauge), as a number. */
export function value(families: Map<string, ParsedFamily>, name: string, labels: Record<string, string> = {}): number {
  const found = samples(families, name, labels);
  if (found.length !== 1) throw new Error(`${found.length} samples of ${name} ${JSON.stringify(labels)}`);
  return Number(found[0]!.value);
}
