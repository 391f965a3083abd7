/**
 * The uptime and players chart, as SVG with role="img" and a label stating the figures (the
 * same figures are written under it as text): the average players of each bucket as a line
 * over a light area, broken where the server was not seen online, and under it a strip with
 * one cell per bucket (online, partly online, offline, not checked). The dates and the peak
 * are HTML around the SVG, which is stretched to the width of the page.
 */
import { ApiError, addressPath, getJson, modeParams, type ServerHistory } from './api.js';
import { h, replace, s } from './dom.js';
import type { Target } from './routes.js';

export const RANGES = [
  { range: '24h', label: '24 hours', phrase: 'the last 24 hours' },
  { range: '7d', label: '7 days', phrase: 'the last 7 days' },
  { range: '30d', label: '30 days', phrase: 'the last 30 days' },
] as const;
type Range = (typeof RANGES)[number]['range'];

const WIDTH = 720;
const HEIGHT = 200;
/** The players band. */
const PLOT_TOP = 4;
const PLOT_BOTTOM = 156;
/** The uptime strip. */
const STRIP_TOP = 168;
const STRIP_BOTTOM = HEIGHT;

const fmt = new Intl.NumberFormat('en', { maximumFractionDigits: 2 });

interface Figures {
  uptime: number | null;
  checks: number;
  online: number;
  avgPlayers: number | null;
  peakPlayers: number | null;
}

export function figuresOf(history: ServerHistory): Figures {
  let weighted = 0;
  let onlineWithPlayers = 0;
  let peak: number | null = null;
  for (const b of history.buckets) {
    if (b.players_avg !== null) {
      weighted += b.players_avg * b.online;
      onlineWithPlayers += b.online;
    }
    if (b.players_max !== null) peak = Math.max(peak ?? 0, b.players_max);
  }
  return {
    uptime: history.uptime_percentage,
    checks: history.checks,
    online: history.online_checks,
    avgPlayers: onlineWithPlayers === 0 ? null : weighted / onlineWithPlayers,
    peakPlayers: peak,
  };
}

export function describe(f: Figures, phrase: string): string {
  if (f.checks === 0 || f.uptime === null) return `No checks over ${phrase}.`;
  const players =
    f.avgPlayers === null ? 'no players seen' : `players: average ${fmt.format(f.avgPlayers)}, peak ${fmt.format(f.peakPlayers ?? 0)}`;
  const checks = f.checks === 1 ? '1 check' : `${f.checks} checks`;
  return `Uptime ${fmt.format(f.uptime)}% over ${phrase} (${checks}, ${f.online} online); ${players}.`;
}

type Cell = 'up' | 'part' | 'down' | 'none';

function cellOf(b: ServerHistory['buckets'][number]): Cell {
  if (b.checks === 0) return 'none';
  return b.online === b.checks ? 'up' : b.online === 0 ? 'down' : 'part';
}

/** Runs of consecutive buckets with an average: the line is not drawn across a gap. */
function runs(points: Array<[number, number] | null>): Array<Array<[number, number]>> {
  const out: Array<Array<[number, number]>> = [];
  let run: Array<[number, number]> = [];
  for (const p of points) {
    if (p) run.push(p);
    else if (run.length > 0) {
      out.push(run);
      run = [];
    }
  }
  if (run.length > 0) out.push(run);
  return out;
}

const xy = ([x, y]: [number, number]) => `${x.toFixed(1)},${y.toFixed(1)}`;

function draw(history: ServerHistory, label: string): HTMLElement {
  const buckets = history.buckets;
  const n = Math.max(1, buckets.length);
  const step = WIDTH / n;
  const peak = Math.max(1, ...buckets.map((b) => b.players_max ?? 0));
  const plot = PLOT_BOTTOM - PLOT_TOP;
  const cells = buckets.map((b, i) =>
    s('rect', {
      class: `bar ${cellOf(b)}`,
      x: (i * step).toFixed(1),
      y: STRIP_TOP,
      width: Math.max(1, step - 1).toFixed(1),
      height: STRIP_BOTTOM - STRIP_TOP,
    }),
  );
  const points = buckets.map((b, i): [number, number] | null =>
    b.players_avg === null ? null : [i * step + step / 2, PLOT_BOTTOM - (b.players_avg / peak) * plot],
  );
  const lines = runs(points).flatMap((run) => {
    if (run.length === 1) return [s('circle', { class: 'players-dot', cx: run[0]![0].toFixed(1), cy: run[0]![1].toFixed(1), r: 2.5 })];
    const first = run[0]!;
    const last = run[run.length - 1]!;
    return [
      s('path', { class: 'players-area', d: `M${first[0].toFixed(1)},${PLOT_BOTTOM} L${run.map(xy).join(' L')} L${last[0].toFixed(1)},${PLOT_BOTTOM} Z` }),
      s('polyline', { class: 'players', points: run.map(xy).join(' ') }),
    ];
  });
  const first = buckets[0]?.time ?? '';
  const last = buckets[buckets.length - 1]?.time ?? '';
  const day = (iso: string) => new Date(iso).toLocaleString('en', { month: 'short', day: 'numeric', hour: '2-digit', minute: '2-digit', timeZone: 'UTC' });
  const svg = s(
    'svg',
    { class: 'chart', viewBox: `0 0 ${WIDTH} ${HEIGHT}`, role: 'img', 'aria-label': label, preserveAspectRatio: 'none' },
    s('line', { class: 'grid', x1: 0, y1: PLOT_TOP + 0.5, x2: WIDTH, y2: PLOT_TOP + 0.5 }),
    s('line', { class: 'grid', x1: 0, y1: (PLOT_TOP + plot / 2 + 0.5).toFixed(1), x2: WIDTH, y2: (PLOT_TOP + plot / 2 + 0.5).toFixed(1) }),
    s('line', { class: 'axis', x1: 0, y1: PLOT_BOTTOM + 0.5, x2: WIDTH, y2: PLOT_BOTTOM + 0.5 }),
    ...lines,
    ...cells,
  );
  return h(
    'div',
    { class: 'chart-frame' },
    h('span', { class: 'chart-peak', 'aria-hidden': 'true' }, `${fmt.format(peak)} players`),
    svg,
    h('div', { class: 'chart-dates', 'aria-hidden': 'true' }, h('span', {}, `${day(first)} UTC`), h('span', {}, `${day(last)} UTC`)),
  );
}

const LEGEND: Array<[string, string]> = [
  ['line', 'average players'],
  ['up', 'online'],
  ['part', 'partly online'],
  ['down', 'offline'],
  ['none', 'not checked'],
];

/**
 * The chart section; it loads the 24-hour range, and the others on demand. The page adds it
 * once the server's status is known: the service's history counts the check that status
 * made (even while it waits for the store's group commit), so a server looked up a moment
 * ago has a history.
 */
export function historySection(target: Target): HTMLElement {
  const body = h('div', { class: 'chart-body', 'aria-live': 'polite' }, h('p', { class: 'muted' }, 'Loading the history…'));
  const buttons = RANGES.map((r) =>
    h('button', { type: 'button', class: 'range', 'aria-pressed': r.range === '24h' ? 'true' : 'false', 'data-range': r.range }, r.label),
  );
  let controller: AbortController | null = null;

  async function load(range: Range): Promise<void> {
    controller?.abort();
    controller = new AbortController();
    for (const b of buttons) b.setAttribute('aria-pressed', String(b.dataset.range === range));
    body.setAttribute('aria-busy', 'true');
    const phrase = RANGES.find((r) => r.range === range)!.phrase;
    try {
      const params = modeParams(target.mode);
      params.set('range', range);
      const history = await getJson<ServerHistory>(`api/v1/history/${addressPath(target.address)}`, params, controller.signal);
      const label = describe(figuresOf(history), phrase);
      replace(
        body,
        draw(history, label),
        h('ul', { class: 'legend' }, ...LEGEND.map(([key, text]) => h('li', {}, h('span', { class: `key ${key}`, 'aria-hidden': 'true' }), text))),
        h('p', { class: 'figures' }, label),
        history.stale ? h('p', { class: 'note' }, 'The history database is not answering right now: this is its last answer.') : null,
      );
    } catch (error) {
      if (error instanceof DOMException && error.name === 'AbortError') return;
      const text =
        error instanceof ApiError && error.status === 404
          ? 'No history yet: this server has not been checked before. Come back later to see its uptime.'
          : `The history could not be loaded: ${error instanceof Error ? error.message : String(error)}`;
      replace(body, h('p', { class: 'empty' }, text));
    } finally {
      body.removeAttribute('aria-busy');
    }
  }

  for (const b of buttons) b.addEventListener('click', () => void load(b.dataset.range as Range));
  void load('24h');
  return h(
    'section',
    { class: 'panel', 'aria-labelledby': 'history-title' },
    h('h2', { id: 'history-title' }, 'Uptime and players'),
    h('div', { class: 'ranges', role: 'group', 'aria-label': 'Range' }, ...buttons),
    body,
  );
}
