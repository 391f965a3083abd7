/**
 * "Send a test vote" on a server's page: one Votifier test vote (POST /api/v1/vote,
 * docs/votes.md) to the address, port and player given, with the NuVotifier token or the
 * Votifier public key, and what the server did with it. The secret lives in this form only:
 * sent once in the request's body, never put in the URL, storage or a cookie.
 */
import { InvalidAddressError } from '../../src/core/errors.js';
import { parseAddress } from '../../src/resolve/address.js';
import { ApiError, call, failureMessage } from './api.js';
import { h, replace } from './dom.js';
import type { Target } from './routes.js';

interface VoteAnswer {
  sent: boolean;
  version: 1 | 2 | null;
  latency_ms: number | null;
  error_code: string | null;
  error: string | null;
  server_status: { status: string; cause: string | null; error: string | null } | null;
}

/** The host of an address, without a port; or the sentence the API would refuse it with (400 `invalid_address`). */
function parsedHost(address: string): { host: string } | { problem: string } {
  try {
    const parsed = parseAddress(address);
    return parsed.port === null ? { host: parsed.host } : { problem: 'Give the host without a port: the port has its own box.' };
  } catch (error) {
    if (error instanceof InvalidAddressError) return { problem: error.message };
    throw error;
  }
}

/** The host of the page's server, without its game port (the vote goes to Votifier's). */
function hostOf(address: string): string {
  try {
    return parseAddress(address).host;
  } catch (error) {
    if (error instanceof InvalidAddressError) return '';
    throw error;
  }
}

const SECRETS = {
  token: { label: 'NuVotifier token', hint: 'From NuVotifier\'s config.yml, under tokens: the default one (votes come as service Observer).', placeholder: 'k4lb6ul3t3cbq9il0u1nq3dqhm' },
  public_key: { label: 'Votifier public key', hint: 'The contents of Votifier\'s rsa/public.key, or the key as PEM.', placeholder: 'MIIBIjANBgkqhkiG9w0BAQEFAAOCAQ8AMIIBCgKCAQEA…' },
} as const;
type SecretKind = keyof typeof SECRETS;

/** What the answer says, in a sentence or two. */
function describe(answer: VoteAnswer): string {
  const took = answer.latency_ms === null ? '' : ` (${answer.latency_ms} ms)`;
  if (answer.sent) {
    return answer.server_status
      ? `Vote sent: the server answered ok${took}.`
      : `Vote sent: the server read it and closed the connection${took}, which is all Votifier v1 ever answers.`;
  }
  const said = answer.server_status?.cause || answer.server_status?.error ? ` The server said: ${[answer.server_status.cause, answer.server_status.error].filter(Boolean).join(': ')}.` : '';
  return `Not sent (${answer.error_code ?? 'error'}): ${answer.error ?? ''}${said}`;
}

function field(id: string, label: string, control: HTMLElement, hint?: HTMLElement, grow = false): HTMLElement {
  return h('div', { class: grow ? 'field grow' : 'field' }, h('label', { for: id }, label), control, hint);
}

/** The section under a server's card. */
export function voteSection(target: Target): HTMLElement {
  const section = h('section', { class: 'panel vote', 'aria-labelledby': 'vote-title' });
  const result = h('p', { id: 'vote-result', class: 'vote-result', 'aria-live': 'polite' });
  const host = h('input', { id: 'vote-host', name: 'host', type: 'text', required: true, maxlength: 255, value: hostOf(target.address), autocomplete: 'off', spellcheck: 'false', 'aria-describedby': 'vote-result' });
  const port = h('input', { id: 'vote-port', name: 'port', type: 'number', required: true, min: 1, max: 65535, value: 8192 });
  const username = h('input', { id: 'vote-username', name: 'username', type: 'text', required: true, maxlength: 16, pattern: '[A-Za-z0-9_]{1,16}', placeholder: 'Steve', autocomplete: 'off', spellcheck: 'false' });
  const kind = h('select', { id: 'vote-kind', name: 'kind' }, h('option', { value: 'token' }, 'NuVotifier (v2, token)'), h('option', { value: 'public_key' }, 'Votifier (v1, public key)'));
  const secretLabel = h('label', { for: 'vote-secret' });
  const secretHint = h('span', { id: 'vote-secret-hint', class: 'hint' });
  const secret = h('textarea', { id: 'vote-secret', name: 'secret', required: true, rows: 2, maxlength: 4096, class: 'code', autocomplete: 'off', spellcheck: 'false', 'aria-describedby': 'vote-secret-hint' });
  const showKind = () => {
    const chosen = SECRETS[kind.value as SecretKind];
    replace(secretLabel, chosen.label);
    replace(secretHint, chosen.hint);
    secret.placeholder = chosen.placeholder;
  };
  kind.addEventListener('change', showKind);
  showKind();
  const send = h('button', { type: 'submit', class: 'primary' }, 'Send test vote');
  // POST, should a submission ever escape the script: the secret never goes into a URL.
  const form = h(
    'form',
    { class: 'vote-form', method: 'post', 'aria-labelledby': 'vote-title' },
    h('div', { class: 'fields' }, field('vote-host', 'Votifier host', host), field('vote-port', 'Votifier port', port), field('vote-username', 'Player name', username), field('vote-kind', 'Votifier kind', kind)),
    h('div', { class: 'field' }, secretLabel, secret, secretHint),
    send,
  );
  host.addEventListener('input', () => host.removeAttribute('aria-invalid'));
  form.addEventListener('submit', (event) => {
    event.preventDefault();
    delete result.dataset.sent;
    // A host the service would refuse as malformed is refused here, with its sentence, before any request.
    const checked = parsedHost(host.value.trim());
    if ('problem' in checked) {
      host.setAttribute('aria-invalid', 'true');
      replace(result, checked.problem);
      return;
    }
    send.disabled = true;
    replace(result, 'Sending the vote…');
    const body = { host: checked.host, port: Number(port.value), username: username.value.trim(), [kind.value]: secret.value.trim() };
    call<VoteAnswer>('POST', 'api/v1/vote', null, body)
      .then(
        (answer) => {
          result.dataset.sent = String(answer.sent);
          replace(result, describe(answer));
        },
        (error: unknown) => replace(result, error instanceof ApiError && error.code === 'not_found' ? 'This instance does not send test votes.' : failureMessage(error)),
      )
      .finally(() => (send.disabled = false));
  });
  replace(
    section,
    h('h2', { id: 'vote-title' }, 'Send a test vote'),
    h('p', { class: 'muted' }, 'See whether a vote reaches your Votifier or NuVotifier. The token or key stays in this page: it goes out once, with the vote, and is never stored.'),
    form,
    result,
  );
  return section;
}
