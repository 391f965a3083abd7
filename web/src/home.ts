/** The front page's lists: trending servers (/trends) and the platform figures (/stats). */
import { getJson, type Statistics, type TrendServer } from './api.js';
import { h, replace } from './dom.js';
import { pageUrl } from './routes.js';

const numbers = new Intl.NumberFormat('en');

export function trendsSection(): HTMLElement {
  const body = h('div', { 'aria-live': 'polite', 'aria-busy': 'true' }, h('p', { class: 'muted' }, 'Loading…'));
  void getJson<{ data: TrendServer[] }>('api/v1/trends', new URLSearchParams({ limit: '10' }), undefined, true)
    .then(({ data }) => {
      if (data.length === 0) {
        replace(body, h('p', { class: 'muted' }, 'No server has been looked up recently. Be the first: type an address above.'));
        return;
      }
      replace(
        body,
        h(
          'ol',
          { class: 'trends' },
          ...data.map((server) =>
            h(
              'li',
              {},
              h('a', { class: 'trend-name', href: pageUrl({ address: server.address, mode: server.edition === 'bedrock' ? 'bedrock' : 'java' }) }, server.address),
              h(
                'span',
                { class: 'trend-meta' },
                h('span', { class: 'trend-edition' }, server.edition === 'bedrock' ? 'Bedrock' : 'Java'),
                ' ',
                h('span', { class: 'trend-players' }, `${numbers.format(server.players_online)} / ${numbers.format(server.players_max)} players`),
                ' ',
                h(
                  'span',
                  // Below 99% the figure is a warning colour.
                  { class: server.uptime_percentage < 99 ? 'trend-uptime low' : 'trend-uptime', title: 'Share of checks online over the last 7 days' },
                  `${server.uptime_percentage}% up`,
                ),
              ),
            ),
          ),
        ),
      );
    })
    .catch((error: unknown) => replace(body, h('p', { class: 'muted' }, `Trends are unavailable: ${error instanceof Error ? error.message : String(error)}`)))
    .finally(() => body.removeAttribute('aria-busy'));
  return h('section', { class: 'panel', 'aria-labelledby': 'trends-title' }, h('h2', { id: 'trends-title' }, 'Trending servers'), body);
}

export function statsSection(): HTMLElement {
  const body = h('div', { 'aria-live': 'polite', 'aria-busy': 'true' }, h('p', { class: 'muted' }, 'Loading…'));
  void getJson<Statistics>('api/v1/stats', undefined, undefined, true)
    .then((stats) => {
      const figure = (value: string, label: string) => h('div', { class: 'figure' }, h('dt', {}, label), h('dd', {}, value));
      replace(
        body,
        h(
          'dl',
          { class: 'figures-grid' },
          figure(numbers.format(stats.onlineServers), 'servers online'),
          figure(numbers.format(stats.activePlayers), 'players on them'),
          figure(`${stats.onlineRate}%`, 'of servers up'),
          figure(numbers.format(stats.totalChecks), 'checks performed'),
          figure(numbers.format(stats.serverQueries), 'look-ups served'),
        ),
      );
    })
    .catch((error: unknown) => replace(body, h('p', { class: 'muted' }, `Figures are unavailable: ${error instanceof Error ? error.message : String(error)}`)))
    .finally(() => body.removeAttribute('aria-busy'));
  return h('section', { class: 'panel', 'aria-labelledby': 'stats-title' }, h('h2', { id: 'stats-title' }, 'This service in figures'), body);
}
