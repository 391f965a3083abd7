/**
 * The uptime and players chart: one bar per bucket (its share of online checks), a line of
 * average players, as SVG with role="img" and a label stating the figures; the same figures
 * are written under it as text.
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
const PLOT_TOP = 8;
const PLOT_BOTTOM = 176;

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

function draw(history: ServerHistory, label: string): SVGSVGElement {
  const buckets = history.buckets;
  const n = Math.max(1, buckets.length);
  const step = WIDTH / n;
  const peak = Math.max(1, ...buckets.map((b) => b.players_max ?? 0));
  const plot = PLOT_BOTTOM - PLOT_TOP;
  const bars = buckets.map((b, i) => {
    if (b.checks === 0) {
      return s('rect', { class: 'bar none', x: (i * step).toFixed(1), y: PLOT_BOTTOM - 2, width: Math.max(1, step - 1).toFixed(1), height: 2 });
    }
    const share = b.online / b.checks;
    const height = Math.max(2, share * plot);
    const kind = share === 1 ? 'up' : share === 0 ? 'down' : 'part';
    return s('rect', {
      class: `bar ${kind}`,
      x: (i * step).toFixed(1),
      y: (share === 0 ? PLOT_BOTTOM - plot : PLOT_BOTTOM - height).toFixed(1),
      width: Math.max(1, step - 1).toFixed(1),
      height: (share === 0 ? plot : height).toFixed(1),
    });
  });
  const points = buckets
    .map((b, i) => (b.players_avg === null ? null : `${(i * step + step / 2).toFixed(1)},${(PLOT_BOTTOM - (b.players_avg / peak) * plot).toFixed(1)}`))
    .filter((p): p is string => p !== null);
  const first = buckets[0]?.time ?? '';
  const last = buckets[buckets.length - 1]?.time ?? '';
  const day = (iso: string) => new Date(iso).toLocaleString('en', { month: 'short', day: 'numeric', hour: '2-digit', minute: '2-digit', timeZone: 'UTC' });
  return s(
    'svg',
    { class: 'chart', viewBox: `0 0 ${WIDTH} ${HEIGHT}`, role: 'img', 'aria-label': label, preserveAspectRatio: 'none' },
    s('line', { class: 'axis', x1: 0, y1: PLOT_BOTTOM + 0.5, x2: WIDTH, y2: PLOT_BOTTOM + 0.5 }),
    ...bars,
    points.length > 1 ? s('polyline', { class: 'players', points: points.join(' ') }) : null,
    points.length === 1 ? s('circle', { class: 'players-dot', cx: points[0]!.split(',')[0]!, cy: points[0]!.split(',')[1]!, r: 3 }) : null,
    s('text', { class: 'tick', x: 0, y: HEIGHT - 4 }, `${day(first)} UTC`),
    s('text', { class: 'tick', x: WIDTH, y: HEIGHT - 4, 'text-anchor': 'end' }, `${day(last)} UTC`),
  );
}

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
        h('p', { class: 'legend' }, h('span', { class: 'key up', 'aria-hidden': 'true' }), 'online share of checks ', h('span', { class: 'key line', 'aria-hidden': 'true' }), 'average players'),
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
