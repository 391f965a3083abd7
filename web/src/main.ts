/**
 * The web front's entry: the look-up form, and the page for the current URL — the front page
 * (trends, figures) or a server's page (card, history, embed builder). Looking a server up
 * pushes its shareable URL; back and forward redraw from the URL.
 */
import { InvalidAddressError } from '../../src/core/errors.js';
import { parseAddress } from '../../src/resolve/address.js';
import { MODES, addressPath, failureMessage, getJson, modeParams, type Mode, type ServerStatus } from './api.js';
import { embedBuilder } from './builder.js';
import { statusCard } from './card.js';
import { historySection } from './chart.js';
import { h, replace } from './dom.js';
import { statsSection, trendsSection } from './home.js';
import { pageUrl, targetOf, type Target } from './routes.js';
import { voteSection } from './vote.js';
import { watchSection } from './watch.js';

const SITE = 'Observer';

/**
 * What the API would answer 400 `invalid_address` for, checked in the page with the service's
 * own parser (src/resolve/address.ts, bundled): the sentence it would carry, or null. An
 * address that passes may still be refused by the service (a private target, say).
 */
function addressProblem(address: string): string | null {
  try {
    parseAddress(address);
    return null;
  } catch (error) {
    if (error instanceof InvalidAddressError) return error.message;
    throw error;
  }
}

function lookupForm(onLookup: (target: Target) => void) {
  const input = h('input', {
    id: 'address',
    name: 'address',
    type: 'text',
    inputmode: 'url',
    autocomplete: 'off',
    autocapitalize: 'none',
    spellcheck: 'false',
    placeholder: 'play.example.com',
    maxlength: 255,
    'aria-describedby': 'address-hint alert',
  });
  // A flagged address is cleared as soon as it is edited.
  input.addEventListener('input', () => input.removeAttribute('aria-invalid'));
  const edition = h('select', { id: 'edition', name: 'edition' }, ...MODES.map((m) => h('option', { value: m.mode }, m.label)));
  const form = h(
    'form',
    { class: 'lookup', role: 'search', 'aria-label': 'Server look-up' },
    h(
      'div',
      { class: 'field grow' },
      h('label', { for: 'address' }, 'Server address'),
      input,
      h('span', { id: 'address-hint', class: 'hint' }, 'Host name or IP, with :port when not the default'),
    ),
    h('div', { class: 'field' }, h('label', { for: 'edition' }, 'Edition'), edition),
    h('button', { type: 'submit', class: 'primary' }, 'Look up'),
  );
  form.addEventListener('submit', (event) => {
    event.preventDefault();
    onLookup({ address: input.value.trim(), mode: edition.value as Mode });
  });
  return {
    form,
    set(target: Target | null) {
      input.value = target?.address ?? '';
      edition.value = target?.mode ?? 'java';
      input.removeAttribute('aria-invalid');
    },
    /** Flags the address box as invalid (aria-invalid); `focus`: and puts the focus back in it. */
    invalid(focus: boolean) {
      input.setAttribute('aria-invalid', 'true');
      if (focus) input.focus();
    },
  };
}

// The shell's links are relative to the URL it was served at; pushState moves the document's
// URL (and base) to /server/…, so they are made absolute while they still resolve right.
for (const link of document.querySelectorAll<HTMLAnchorElement | HTMLLinkElement>('a[href], link[href]')) {
  link.setAttribute('href', link.href);
}

const main = document.getElementById('main')!;
const alert = h('div', { id: 'alert', class: 'alert', role: 'alert' });
const view = h('div', { id: 'view' });
const form = lookupForm((target) => {
  if (target.address === '') {
    showAlert('Type a server address, for example play.example.com or 203.0.113.7:25566.');
    form.invalid(true);
    return;
  }
  // An address the service would refuse as malformed is refused here, before any request,
  // and the URL stays as it was: only a valid address gets a page of its own.
  const problem = addressProblem(target.address);
  if (problem !== null) {
    showAlert(problem);
    form.invalid(true);
    return;
  }
  history.pushState(null, '', pageUrl(target));
  void render();
});

/** The alert region stays in the page (empty) so that assistive technology announces new text. */
function showAlert(message: string | null): void {
  replace(alert, message);
}

let current: AbortController | null = null;

async function showServer(target: Target): Promise<void> {
  document.title = `${target.address}: server status · ${SITE}`;
  // A page URL naming a malformed address (typed or shared by hand): the message, no request.
  const problem = addressProblem(target.address);
  if (problem !== null) {
    replace(view);
    showAlert(problem);
    // A page load does not move the focus.
    form.invalid(false);
    return;
  }
  const card = h('section', { class: 'panel', 'aria-labelledby': 'card-label', 'aria-live': 'polite', 'aria-busy': 'true' });
  replace(card, h('h2', { id: 'card-label', class: 'visually-hidden' }, 'Status'), h('p', { class: 'muted' }, `Looking up ${target.address}…`));
  replace(view, card);
  current = new AbortController();
  const signal = current.signal;
  let status: ServerStatus;
  try {
    status = await getJson<ServerStatus>(`api/v1/status/${addressPath(target.address)}`, modeParams(target.mode), signal);
  } catch (error) {
    if (signal.aborted) return;
    replace(view);
    showAlert(failureMessage(error));
    return;
  }
  if (signal.aborted) return;
  replace(card, statusCard(target, status));
  card.removeAttribute('aria-busy');
  // Only now that the status is known: its check is in the history the service answers.
  view.append(historySection(target), embedBuilder(target), watchSection(target), voteSection(target));
}

function showHome(): void {
  document.title = `${SITE}: Minecraft server status`;
  replace(view, trendsSection(), statsSection());
}

async function render(): Promise<void> {
  current?.abort();
  showAlert(null);
  const target = targetOf(new URL(location.href));
  form.set(target);
  if (target) await showServer(target);
  else showHome();
}

replace(
  main,
  h(
    'div',
    { class: 'intro' },
    h('h1', {}, 'Minecraft server status'),
    h('p', { class: 'lead' }, 'Look up any public Java or Bedrock server: players, version, MOTD and latency, its uptime over 30 days, and a widget or banner for your site.'),
  ),
  form.form,
  alert,
  view,
);
showAlert(null);
window.addEventListener('popstate', () => void render());
void render();
