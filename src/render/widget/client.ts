/**
 * The widget's inline script: every `data-refresh-ms` it fetches `{data-api}/status/{address}`
 * (same origin, relative to the page, so it works behind a path-rewriting proxy) and updates
 * the page with `textContent` and CSSOM only. A changed MOTD is rebuilt from `motd.segments`,
 * the MOTD module's formatted runs (exact hex colours, as the JSON `html` shows them): one span
 * per run, colours checked against `#rrggbb`, text via `textContent`; no server text is ever
 * parsed as HTML. A status without segments falls back to `motd.raw` and the 16 colours.
 *
 * Plain ES2017 in a string: it runs in the embedding visitor's browser, not in Node. Keep the
 * labels and number formats in step with `view.ts`.
 */
import { FALLBACK_ICON, STATE_LABELS, STATE_TITLES } from './view.js';

export const WIDGET_SCRIPT = `(function () {
  'use strict';
  var root = document.getElementById('w');
  if (!root) return;
  var LABELS = ${JSON.stringify(STATE_LABELS)};
  var TITLES = ${JSON.stringify(STATE_TITLES)};
  var FALLBACK_ICON = ${JSON.stringify(FALLBACK_ICON)};
  var COLORS = { '0': '#000000', '1': '#0000aa', '2': '#00aa00', '3': '#00aaaa', '4': '#aa0000', '5': '#aa00aa',
    '6': '#ffaa00', '7': '#aaaaaa', '8': '#555555', '9': '#5555ff', a: '#55ff55', b: '#55ffff', c: '#ff5555',
    d: '#ff55ff', e: '#ffff55', f: '#ffffff' };
  var FAVICON = /^data:image\\/png;base64,[A-Za-z0-9+\\/]+={0,2}$/;
  var SAMPLE_MAX = 6;

  function q(selector) { return root.querySelector(selector); }
  function setText(selector, text) { var el = q(selector); if (el && el.textContent !== text) el.textContent = text; }
  function show(selector, visible) { var el = q(selector); if (el) el.hidden = !visible; }
  function count(n) { return Number(n).toLocaleString('en-US'); }
  function clean(value, max) {
    return String(value).replace(/\\u00a7[\\s\\S]?/g, '').replace(/[\\u0000-\\u001f\\u007f]+/g, ' ').trim().slice(0, max);
  }
  function isCount(n) { return typeof n === 'number' && isFinite(n) && n >= 0; }

  function fitIcon(icon) {
    // Enlarged pixel art stays crisp; a large favicon drawn smaller is smoothed.
    if (icon.naturalWidth > 0) icon.classList.toggle('w__icon--pixel', icon.naturalWidth < icon.width);
  }
  var icon = q('.w__icon');
  if (icon) {
    icon.addEventListener('load', function () { fitIcon(icon); });
    if (icon.complete) fitIcon(icon);
  }

  var HEX = /^#[0-9a-f]{6}$/;
  function span(text, color, bold, italic, under, strike, obf) {
    var el = document.createElement('span');
    el.textContent = text;
    if (color) el.style.color = color;
    if (bold) el.style.fontWeight = 'bold';
    if (italic) el.style.fontStyle = 'italic';
    if (under || strike) el.style.textDecoration = (under ? 'underline ' : '') + (strike ? 'line-through' : '');
    if (obf) el.className = 'mc-obfuscated';
    return el;
  }

  function segmentsFragment(segments) {
    var fragment = document.createDocumentFragment();
    var left = 4096;
    for (var i = 0; i < segments.length && i < 512 && left > 0; i++) {
      var s = segments[i];
      if (!s || typeof s.text !== 'string') continue;
      var text = s.text.slice(0, left);
      left -= text.length;
      var color = typeof s.color === 'string' && HEX.test(s.color) ? s.color : null;
      fragment.appendChild(span(text, color, s.bold === true, s.italic === true, s.underlined === true, s.strikethrough === true, s.obfuscated === true));
    }
    return fragment;
  }

  function motdFragment(raw) {
    var fragment = document.createDocumentFragment();
    var color = null, bold = false, italic = false, under = false, strike = false, obf = false, text = '';
    function flush() {
      if (!text) return;
      fragment.appendChild(span(text, color, bold, italic, under, strike, obf));
      text = '';
    }
    raw = String(raw).slice(0, 4096);
    for (var i = 0; i < raw.length; i++) {
      var ch = raw.charAt(i);
      if (ch !== '\\u00a7') { text += ch; continue; }
      var code = raw.charAt(++i).toLowerCase();
      flush();
      if (COLORS.hasOwnProperty(code)) { color = COLORS[code]; bold = italic = under = strike = obf = false; }
      else if (code === 'r') { color = null; bold = italic = under = strike = obf = false; }
      else if (code === 'l') bold = true;
      else if (code === 'o') italic = true;
      else if (code === 'n') under = true;
      else if (code === 'm') strike = true;
      else if (code === 'k') obf = true;
    }
    flush();
    return fragment;
  }

  var motdBox = q('.w__motd');
  var motdText = q('.w__motd-text');
  var shownMotd = root.getAttribute('data-state') === 'offline' ? null : root.getAttribute('data-motd');

  function setMotd(state, motd) {
    if (!motdBox || !motdText) return;
    if (state === 'offline') {
      motdBox.classList.add('w__motd--offline');
      setText('.w__motd-text', 'Server offline');
      shownMotd = null;
      return;
    }
    var raw = motd && typeof motd.raw === 'string' ? motd.raw : '';
    var key = motd && typeof motd.html === 'string' ? motd.html : raw;
    motdBox.classList.remove('w__motd--offline');
    if (key === shownMotd) return;
    while (motdText.firstChild) motdText.removeChild(motdText.firstChild);
    motdText.appendChild(motd && Array.isArray(motd.segments) ? segmentsFragment(motd.segments) : motdFragment(raw));
    motdBox.hidden = (motdText.textContent || '').trim() === '';
    shownMotd = key;
  }

  function setSample(players) {
    var list = q('.w__sample');
    if (!list) return;
    while (list.firstChild) list.removeChild(list.firstChild);
    var names = [];
    var sample = players && Array.isArray(players.sample) ? players.sample : [];
    for (var i = 0; i < sample.length && names.length < SAMPLE_MAX; i++) {
      var name = sample[i] && typeof sample[i].name === 'string' ? clean(sample[i].name, 32) : '';
      if (name) names.push(name);
    }
    for (var j = 0; j < names.length; j++) {
      var item = document.createElement('li');
      item.textContent = names[j];
      list.appendChild(item);
    }
    var more = players && isCount(players.online) ? players.online - names.length : 0;
    if (names.length > 0 && more > 0) {
      var rest = document.createElement('li');
      rest.className = 'w__more';
      rest.textContent = '+' + count(more) + ' more';
      list.appendChild(rest);
    }
    list.hidden = names.length === 0;
  }

  function apply(s) {
    if (!s || typeof s !== 'object') return;
    var state = s.online === true ? (s.stale === true ? 'stale' : 'online') : 'offline';
    root.setAttribute('data-state', state);
    setText('.w__label', LABELS[state]);
    var status = q('.w__status');
    if (status) status.title = TITLES[state] + (typeof s.checked_at === 'string' ? ' ' + s.checked_at : '');

    var p = s.players;
    var hasPlayers = state !== 'offline' && p && isCount(p.online) && isCount(p.max);
    setText('.w__online', hasPlayers ? count(p.online) : '\\u2014');
    setText('.w__max', hasPlayers ? count(p.max) : '');
    show('.w__of', hasPlayers);
    if (root.classList.contains('w--small')) show('.w__count', hasPlayers);
    var fill = q('.w__fill');
    if (fill) {
      var pct = hasPlayers && p.max > 0 ? Math.min(100, (p.online / p.max) * 100) : 0;
      if (hasPlayers && p.online > 0) pct = Math.max(pct, 1.5);
      fill.style.width = (Math.round(pct * 10) / 10) + '%';
    }
    setSample(hasPlayers ? p : null);

    var version = state !== 'offline' && s.version && typeof s.version.name === 'string' ? clean(s.version.name, 64) : '';
    setText('.w__version', version);
    show('.w__version', version !== '');
    var protocol = state !== 'offline' && s.version && typeof s.version.protocol === 'number' && s.version.protocol >= 0;
    setText('.w__protocol', protocol ? 'Protocol ' + s.version.protocol : '');
    show('.w__protocol', !!protocol);
    var ms = state !== 'offline' && isCount(s.roundTripLatency) ? Math.round(s.roundTripLatency) : null;
    setText('.w__ms', ms === null ? '' : ms + ' ms');
    show('.w__latency', ms !== null);
    var latency = q('.w__latency');
    if (latency && ms !== null) latency.setAttribute('data-quality', ms <= 80 ? 'good' : ms <= 200 ? 'fair' : 'poor');
    var error = state === 'offline' ? (typeof s.error === 'string' && s.error ? clean(s.error, 80) : 'Server offline') : '';
    setText('.w__error', error);
    show('.w__error', error !== '');

    setMotd(state, s.motd);
    if (icon) {
      var src = typeof s.favicon === 'string' && s.favicon.length < 524288 && FAVICON.test(s.favicon) ? s.favicon : FALLBACK_ICON;
      if (icon.getAttribute('src') !== src) icon.setAttribute('src', src);
    }
  }

  var refreshMs = Number(root.getAttribute('data-refresh-ms'));
  var address = root.getAttribute('data-address');
  if (!address || !(refreshMs >= 1000)) return;
  var mode = root.getAttribute('data-mode');
  var url = root.getAttribute('data-api') + '/status/' + encodeURIComponent(address) +
    (mode === 'bedrock' ? '?bedrock=true' : mode === 'legacy' ? '?legacy=true' : '');
  var timer = null;
  var due = 0;
  var busy = false;

  function schedule() {
    due = Date.now() + refreshMs;
    timer = setTimeout(tick, refreshMs);
  }
  function tick() {
    timer = null;
    if (busy || document.hidden) return; // a hidden page is resumed by visibilitychange
    busy = true;
    fetch(url, { credentials: 'omit', headers: { accept: 'application/json' } })
      .then(function (response) {
        if (response.status === 404) return { online: false, error: 'unknown host' };
        return response.ok ? response.json() : null;
      })
      .then(apply)
      .catch(function () { /* network error or unusable body: keep what is shown */ })
      .then(function () { busy = false; schedule(); });
  }
  document.addEventListener('visibilitychange', function () {
    if (!document.hidden && timer === null && !busy) {
      if (Date.now() >= due) tick(); else schedule();
    }
  });
  schedule();
})();`;
