/** The status card: icon, MOTD, state, version, players and their names, latency, check time. */
import { url, type ServerStatus } from './api.js';
import { h, type Child } from './dom.js';
import { motdNodes } from './motd.js';
import type { Target } from './routes.js';

const PNG_DATA_URL = /^data:image\/png;base64,[A-Za-z0-9+/]+={0,2}$/;
const MAX_SAMPLE = 12;

const numbers = new Intl.NumberFormat('en');
const relative = new Intl.RelativeTimeFormat('en', { numeric: 'auto' });
const moment = new Intl.DateTimeFormat('en', { dateStyle: 'medium', timeStyle: 'short' });

/** "12 seconds ago", "3 minutes ago". */
export function ago(iso: string, now = Date.now()): string {
  const seconds = Math.round((Date.parse(iso) - now) / 1000);
  if (!Number.isFinite(seconds)) return 'unknown';
  if (Math.abs(seconds) < 60) return relative.format(seconds, 'second');
  if (Math.abs(seconds) < 3600) return relative.format(Math.round(seconds / 60), 'minute');
  if (Math.abs(seconds) < 86_400) return relative.format(Math.round(seconds / 3600), 'hour');
  return relative.format(Math.round(seconds / 86_400), 'day');
}

function row(term: string, ...value: Child[]): HTMLElement {
  return h('div', { class: 'fact' }, h('dt', {}, term), h('dd', {}, ...value));
}

function sampleNames(status: ServerStatus): HTMLElement | null {
  const names = (status.players?.sample ?? [])
    .map((p) => (typeof p.name === 'string' ? p.name : ''))
    .filter((n) => n.length > 0)
    .slice(0, MAX_SAMPLE);
  if (names.length === 0) return null;
  return h(
    'div',
    { class: 'sample' },
    h('h3', {}, 'Some players online'),
    h('ul', { class: 'names' }, ...names.map((name) => h('li', {}, name.slice(0, 64)))),
  );
}

/** While flap damping holds: the server stopped answering after a recent success, shown here. */
function failingNote(status: ServerStatus): HTMLElement | null {
  const failing = status.failing;
  if (!failing) return null;
  const since = h('time', { datetime: failing.since, title: ago(failing.since) }, moment.format(new Date(failing.since)));
  const reason = failing.error ? ` (${failing.error.slice(0, 80)})` : '';
  return h('p', { class: 'note failing' }, 'Not answering since ', since, `${reason}: this is its last successful answer.`);
}

export function statusCard(target: Target, status: ServerStatus): HTMLElement {
  const online = status.online;
  const icon = online && status.favicon && PNG_DATA_URL.test(status.favicon) ? status.favicon : url('favicon.ico');
  const edition = status.query.bedrock ? 'Bedrock' : status.query.legacy ? 'Java (legacy ping)' : 'Java';
  const players = status.players;
  const checked = h('time', { datetime: status.checked_at, title: new Date(status.checked_at).toUTCString() }, ago(status.checked_at));

  const facts = h(
    'dl',
    { class: 'facts' },
    row('Players', players ? `${numbers.format(players.online)} / ${numbers.format(players.max)}` : '–'),
    row('Version', status.version?.name ? status.version.name.slice(0, 128) : '–'),
    row('Latency', status.roundTripLatency === null ? '–' : `${Math.round(status.roundTripLatency)} ms`),
    row('Edition', edition),
    row('Address', `${status.query.host}:${status.query.port}`),
    row('Checked', checked, status.stale ? h('span', { class: 'badge stale' }, 'stale') : null),
    !online && status.error ? row('Reason', status.error) : null,
  );

  const motd = status.motd
    ? h('div', { class: 'motd' }, ...motdNodes(status.motd))
    : null;

  return h(
    'article',
    { class: `card ${online ? 'is-online' : 'is-offline'}`, 'aria-labelledby': 'card-title', 'data-state': online ? 'online' : 'offline' },
    h(
      'div',
      { class: 'card-head' },
      h('img', { class: 'server-icon', src: icon, alt: '', width: 64, height: 64 }),
      h(
        'div',
        {},
        h('h2', { id: 'card-title', class: 'server-name' }, target.address),
        h(
          'div',
          { class: 'badges' },
          h('p', { class: `state ${online ? 'online' : 'offline'}` }, h('span', { class: 'dot', 'aria-hidden': 'true' }), online ? 'Online' : 'Offline'),
          // Only a definite true: false and null (no list loaded) show nothing.
          status.blocked === true ? h('p', { class: 'badge blocked' }, 'Blocked by Mojang') : null,
        ),
      ),
    ),
    motd,
    facts,
    status.blocked === true
      ? h('p', { class: 'note' }, "This server is on Mojang's list of blocked servers: the official Java client refuses to join it.")
      : null,
    failingNote(status) ??
      (status.stale ? h('p', { class: 'note' }, 'This is the last successful answer, served while a fresh check is under way.') : null),
    sampleNames(status),
  );
}
