/**
 * "Watch this server" on a server's page: create a watch (webhook kind and URL), show the
 * management token and the verification token once with how to place the latter, check the
 * verification, send a test delivery. The API does the work (docs/api.md, "Watches"); the
 * tokens live in this page only.
 */
import { call, failureMessage as message, url, type Mode } from './api.js';
import { h, replace, uid } from './dom.js';
import type { Target } from './routes.js';

interface WatchView {
  id: string;
  verification: { verified: boolean; method: string | null; token: string; txt_name: string | null; txt_value: string | null; expires_at: string | null };
  state: string;
}

interface CreatedWatch {
  id: string;
  management_token: string;
  signing_secret?: string;
  watch: WatchView;
}

const editionOf = (mode: Mode) => (mode === 'bedrock' ? 'bedrock' : 'java');

/** A labelled read-only value to copy. */
function secret(label: string, value: string, hint: string) {
  const id = uid('watch-secret');
  const hintId = `${id}-hint`;
  return h(
    'div',
    { class: 'field' },
    h('label', { for: id }, label),
    h('input', { id, type: 'text', readonly: true, value, class: 'code', 'aria-describedby': hintId, spellcheck: 'false' }),
    h('span', { id: hintId, class: 'hint' }, hint),
  );
}

/** The section under a server's card. */
export function watchSection(target: Target): HTMLElement {
  const section = h('section', { class: 'panel watch', 'aria-labelledby': 'watch-title' });
  const status = h('p', { class: 'watch-status', 'aria-live': 'polite' });
  const kind = h('select', { id: 'watch-kind', name: 'kind' }, h('option', { value: 'discord' }, 'Discord webhook'), h('option', { value: 'json' }, 'JSON (signed)'));
  const hook = h('input', { id: 'watch-url', name: 'url', type: 'url', required: true, maxlength: 2048, placeholder: 'https://discord.com/api/webhooks/…', autocomplete: 'off', 'aria-describedby': 'watch-url-hint' });
  const form = h(
    'form',
    { class: 'watch-form', 'aria-labelledby': 'watch-title' },
    h('div', { class: 'field' }, h('label', { for: 'watch-kind' }, 'Webhook kind'), kind),
    h(
      'div',
      { class: 'field grow' },
      h('label', { for: 'watch-url' }, 'Webhook URL'),
      hook,
      h('span', { id: 'watch-url-hint', class: 'hint' }, 'A public http(s) address; nothing is sent before you prove you run the server.'),
    ),
    h('button', { type: 'submit', class: 'primary' }, 'Create watch'),
  );
  form.addEventListener('submit', (event) => {
    event.preventDefault();
    replace(status, 'Creating the watch…');
    const body = { address: target.address, edition: editionOf(target.mode), webhook: { kind: kind.value, url: hook.value.trim() } };
    call<CreatedWatch>('POST', 'api/v1/watches', null, body).then(
      (created) => {
        form.remove();
        status.before(manage(created, status));
      },
      (error: unknown) => {
        hook.setAttribute('aria-invalid', 'true');
        replace(status, message(error));
      },
    );
  });
  hook.addEventListener('input', () => hook.removeAttribute('aria-invalid'));
  replace(
    section,
    h('h2', { id: 'watch-title' }, 'Watch this server'),
    h('p', { class: 'muted' }, 'Get a webhook message when this server goes offline or comes back.'),
    form,
    status,
  );
  return section;
}

/** The created watch: its secrets, how to verify, the check and test buttons. */
function manage(created: CreatedWatch, status: HTMLElement): HTMLElement {
  const { verification } = created.watch;
  const path = `api/v1/watches/${created.id}`;
  const token = created.management_token;
  const verifiedLine = h('p', { class: 'watch-verified' });
  const check = h('button', { type: 'button' }, 'Check verification');
  const test = h('button', { type: 'button', disabled: true }, 'Send a test delivery');
  const show = (view: WatchView) => {
    const ok = view.verification.verified;
    replace(verifiedLine, ok ? `Verified (${view.verification.method === 'dns' ? 'TXT record' : 'MOTD'}). Watching: deliveries are on.` : 'Not verified yet: nothing is sent until it is.');
    verifiedLine.dataset.verified = String(ok);
    test.disabled = !ok;
  };
  show(created.watch);
  check.addEventListener('click', () => {
    replace(status, 'Checking…');
    call<WatchView>('POST', `${path}/verify`, token).then(
      (view) => {
        show(view);
        replace(status, view.verification.verified ? 'Verified.' : 'Not found yet: the MOTD is read through the status cache, so allow a minute.');
      },
      (error: unknown) => replace(status, message(error)),
    );
  });
  test.addEventListener('click', () => {
    replace(status, 'Sending a test delivery…');
    call<{ delivered: boolean; result: string; status_code: number | null }>('POST', `${path}/test`, token).then(
      (result) =>
        replace(
          status,
          result.delivered
            ? `Test delivered (HTTP ${result.status_code ?? ''}).`
            : result.result === 'refused'
              ? `Test not accepted: the webhook answered HTTP ${result.status_code ?? ''}.`
              : 'Test not delivered: the webhook did not answer.',
        ),
      (error: unknown) => replace(status, message(error)),
    );
  });
  return h(
    'div',
    { class: 'watch-created' },
    h('p', {}, 'Watch created. Keep these now: they are not shown again.'),
    secret('Management token', token, `Send it as "Authorization: Bearer <token>" to GET or DELETE ${url(path)}.`),
    created.signing_secret
      ? secret('Signing secret', created.signing_secret, 'Deliveries are signed as Standard Webhooks: verify them with a standardwebhooks library and this secret.')
      : null,
    h('h3', {}, 'Prove you run the server'),
    h('p', {}, `${verification.txt_name ? 'Either put' : 'Put'} this token anywhere in the server's MOTD and keep it there (Observer looks for it again):`),
    secret('Verification token', verification.token, 'For example at the end of motd= in server.properties, then restart.'),
    ...(verification.txt_name && verification.txt_value
      ? [
          h('p', {}, 'or publish this TXT record:'),
          secret('TXT record name', verification.txt_name, 'The record\'s host name.'),
          secret('TXT record value', verification.txt_value, 'The record\'s text.'),
        ]
      : []),
    verifiedLine,
    h('div', { class: 'watch-actions' }, check, test),
  );
}
