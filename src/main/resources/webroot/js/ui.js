// DOM helpers. Every value from the API is untrusted: it only ever reaches the page as text
// (textContent, text nodes, attribute values set with setAttribute), never as markup.

import { ApiError, isAbort, serverNow } from './api.js';

const PROPERTIES = new Set([
  'value', 'checked', 'selected', 'disabled', 'hidden', 'readOnly', 'required', 'multiple',
]);
const FORBIDDEN = new Set(['style', 'srcdoc']);

/**
 * Creates an element. attrs: `class` (string or array), `text`, `data` ({key: value} to dataset),
 * on<event> functions (addEventListener), DOM properties (value, checked, disabled, hidden, …),
 * anything else as an attribute. Children: nodes, strings, numbers, arrays; null/false skipped.
 */
export function h(tag, attrs, ...children) {
  const el = document.createElement(tag);
  if (attrs) {
    for (const [k, v] of Object.entries(attrs)) {
      if (v === undefined || v === null || v === false) continue;
      if (FORBIDDEN.has(k) || /html$/i.test(k)) throw new Error(`h(): attribute ${k} is not allowed`);
      if (k.startsWith('on') && typeof v === 'function') {
        el.addEventListener(k.slice(2).toLowerCase(), v);
      } else if (k === 'class') {
        el.className = [v].flat(Infinity).filter(Boolean).join(' ');
      } else if (k === 'text') {
        el.textContent = String(v);
      } else if (k === 'data') {
        for (const [dk, dv] of Object.entries(v)) if (dv !== undefined && dv !== null) el.dataset[dk] = String(dv);
      } else if (PROPERTIES.has(k)) {
        el[k] = v;
      } else {
        el.setAttribute(k, v === true ? '' : String(v));
      }
    }
  }
  append(el, children);
  return el;
}

export function append(el, children) {
  for (const c of children) {
    if (c === undefined || c === null || c === false) continue;
    if (Array.isArray(c)) append(el, c);
    else if (c instanceof Node) el.append(c);
    else el.append(document.createTextNode(String(c)));
  }
  return el;
}

/** Replaces the children; keeps keyboard focus on the "same" element when it is rebuilt. */
export function replaceKeepFocus(container, ...children) {
  const active = document.activeElement;
  let key = null;
  if (active && container.contains(active) && active.dataset && active.dataset.focusKey) {
    key = active.dataset.focusKey;
  }
  container.replaceChildren();
  append(container, children);
  if (key !== null) {
    for (const el of container.querySelectorAll('[data-focus-key]')) {
      if (el.dataset.focusKey === key) {
        el.focus();
        break;
      }
    }
  }
}

const lastRendered = new WeakMap();

/** Rebuilds `container` only when `data` differs from what it was built from last time. */
export function renderIfChanged(container, data, build) {
  const key = JSON.stringify(data);
  if (lastRendered.get(container) === key) return;
  lastRendered.set(container, key);
  const built = build();
  replaceKeepFocus(container, ...(Array.isArray(built) ? built : [built]));
}

/** Text of any JSON value: strings as they are, the rest as compact JSON. */
export function str(v) {
  if (v === null || v === undefined) return '';
  if (typeof v === 'string') return v;
  if (typeof v === 'number' || typeof v === 'boolean') return String(v);
  try {
    return JSON.stringify(v);
  } catch {
    return String(v);
  }
}

export function debounce(fn, ms) {
  let t = null;
  let last = [];
  const d = (...args) => {
    clearTimeout(t);
    last = args;
    t = setTimeout(() => {
      t = null;
      fn(...args);
    }, ms);
  };
  d.cancel = () => {
    clearTimeout(t);
    t = null;
  };
  /** Runs a pending call now (a page left within `ms` of the last call must not lose it). */
  d.flush = () => {
    if (t === null) return;
    clearTimeout(t);
    t = null;
    fn(...last);
  };
  return d;
}

// ---- times -----------------------------------------------------------------------------------

const TIME_FORMAT = {
  year: 'numeric', month: 'short', day: '2-digit', hour: '2-digit', minute: '2-digit', second: '2-digit',
};

/** Local time text with the ISO value in `title` and `datetime`; `empty` when there is none. */
export function fmtTime(iso, empty = 'never') {
  if (!iso || typeof iso !== 'string') return h('span', { class: 'muted' }, empty);
  const t = Date.parse(iso);
  if (!Number.isFinite(t)) return h('span', {}, iso);
  return h('time', { datetime: iso, title: iso }, new Date(t).toLocaleString(undefined, TIME_FORMAT));
}

function span(seconds) {
  if (seconds < 60) return `${seconds} s`;
  if (seconds < 3600) return `${Math.floor(seconds / 60)} min`;
  if (seconds < 86400) return `${Math.floor(seconds / 3600)} h`;
  return `${Math.floor(seconds / 86400)} d`;
}

/** "12 s ago", "3 min ago", "in 4 d" (relative to the server's clock). */
export function relative(iso) {
  if (!iso || typeof iso !== 'string') return 'never';
  const t = Date.parse(iso);
  if (!Number.isFinite(t)) return iso;
  const diff = Math.round((serverNow() - t) / 1000);
  if (diff > -3) return `${span(Math.max(0, diff))} ago`;
  return `in ${span(-diff)}`;
}

/** A span of seconds to an expiry as people read it: "in 89 d", "in 5 h", "in 12 min", "expired 3 h ago". */
export function expiresIn(seconds) {
  if (typeof seconds !== 'number' || !Number.isFinite(seconds)) return '—';
  const a = Math.abs(seconds);
  const text = a >= 2 * 86400 ? `${Math.floor(a / 86400)} d` : a >= 2 * 3600 ? `${Math.floor(a / 3600)} h` : `${Math.floor(a / 60)} min`;
  return seconds >= 0 ? `in ${text}` : `expired ${text} ago`;
}

/** Relative age with the ISO value (and the local time) in `title`; see refreshAges(). */
export function ageEl(iso, empty = 'never') {
  if (!iso || typeof iso !== 'string') return h('span', { class: 'muted' }, empty);
  const t = Date.parse(iso);
  const local = Number.isFinite(t) ? new Date(t).toLocaleString(undefined, TIME_FORMAT) : iso;
  return h('time', { datetime: iso, title: `${iso} (${local})`, 'data-age': iso }, relative(iso));
}

/** Recomputes the text of every age made by ageEl() inside `root`. */
export function refreshAges(root) {
  for (const el of root.querySelectorAll('time[data-age]')) {
    const text = relative(el.dataset.age);
    if (el.textContent !== text) el.textContent = text;
  }
}

/**
 * Keeps the rows of `tbody` in step with a list of items, by key: a row whose item did not change
 * is kept as it is (same element: focus, selection and test references survive a refresh); a
 * changed item gets a new row. Returns update(items).
 */
export function keyedRows(tbody, { keyOf, build, emptyText, colspan }) {
  let cache = new Map();
  return function update(items) {
    const next = new Map();
    const rows = items.map((item) => {
      const key = keyOf(item);
      const json = JSON.stringify(item);
      const old = key == null ? null : cache.get(key);
      const tr = old && old.json === json ? old.tr : build(item);
      if (key != null) next.set(key, { json, tr });
      return tr;
    });
    cache = next;
    if (!rows.length) {
      const only = tbody.firstElementChild;
      if (!(only && only.classList.contains('empty-row') && only.textContent === emptyText && tbody.children.length === 1)) {
        replaceKeepFocus(tbody, emptyRow(colspan, emptyText));
      }
      return;
    }
    const active = document.activeElement;
    const focusKey = active && tbody.contains(active) && active.dataset ? active.dataset.focusKey : null;
    rows.forEach((tr, i) => {
      if (tbody.children[i] !== tr) tbody.insertBefore(tr, tbody.children[i] || null);
    });
    while (tbody.children.length > rows.length) tbody.lastElementChild.remove();
    if (focusKey && !tbody.contains(document.activeElement)) {
      for (const el of tbody.querySelectorAll('[data-focus-key]')) {
        if (el.dataset.focusKey === focusKey) {
          el.focus();
          break;
        }
      }
    }
    refreshAges(tbody);
  };
}

/** The value of a datetime-local input for an ISO timestamp (local time), or ''. */
export function isoToLocalInput(iso) {
  const t = Date.parse(iso || '');
  if (!Number.isFinite(t)) return '';
  const d = new Date(t);
  const p = (n) => String(n).padStart(2, '0');
  return `${d.getFullYear()}-${p(d.getMonth() + 1)}-${p(d.getDate())}T${p(d.getHours())}:${p(d.getMinutes())}`;
}

/** ISO 8601 UTC (with Z) of a datetime-local value, or '' when it is empty or unreadable. */
export function localInputToIso(v) {
  if (!v) return '';
  const t = new Date(v).getTime();
  return Number.isFinite(t) ? new Date(t).toISOString() : '';
}

// ---- badges, lists, tables ------------------------------------------------------------------

const TONES = {
  online: 'ok', connected: 'ok', current: 'ok', active: 'ok', succeeded: 'ok', success: 'ok', enabled: 'ok', yes: 'ok',
  stale: 'warn', moving: 'warn', behind: 'warn', draining: 'warn', delivered: 'info', retiring: 'warn', expiring: 'warn',
  pending: 'muted', unknown: 'muted', offline: 'muted', retired: 'muted', expired: 'bad',
  drained: 'bad', failed: 'bad', service_unbound: 'bad', target_missing: 'bad', revoked: 'bad', denied: 'bad', disabled: 'bad', no: 'bad',
  // traffic policies (WAF): the mode, and a decision's outcome
  enforce: 'ok', shadow: 'warn', allow: 'ok', deny: 'bad', pass: 'neutral', would_deny: 'warn', passed: 'ok',
  'node.online': 'ok', 'node.stale': 'warn', 'node.policy_drift': 'bad', 'node.enroll_unconfirmed': 'warn',
};

/** A status badge; its text is the value itself. */
export function badge(value, attrs = {}) {
  const text = str(value);
  const tone = Object.prototype.hasOwnProperty.call(TONES, text) ? TONES[text] : 'neutral';
  return h('span', { ...attrs, class: ['badge', `badge-${tone}`, attrs.class] }, text);
}

/** Inline list of values separated by spaces (readable as text), or "none". */
export function chips(values, empty = 'none') {
  if (!Array.isArray(values) || values.length === 0) return h('span', { class: 'muted' }, empty);
  const out = h('span', { class: 'chips' });
  values.forEach((v, i) => {
    if (i) out.append(document.createTextNode(' '));
    out.append(h('span', { class: 'chip' }, str(v)));
  });
  return out;
}

export function code(text, attrs = {}) {
  return h('code', attrs, str(text));
}

export function pre(value, attrs = {}) {
  let text;
  try {
    text = typeof value === 'string' ? value : JSON.stringify(value, null, 2);
  } catch {
    text = String(value);
  }
  return h('pre', { ...attrs, class: ['json', attrs.class] }, text);
}

/** A table in a horizontally scrolling wrapper. Returns {wrap, table, tbody}. */
export function makeTable(columns, { caption = '', test = null, cls = null } = {}) {
  const tbody = h('tbody');
  const table = h('table', { class: ['data', cls], 'data-test': test },
    caption ? h('caption', { class: 'visually-hidden' }, caption) : null,
    h('thead', {}, h('tr', {}, columns.map((c) => h('th', { scope: 'col' }, c)))),
    tbody);
  const wrap = h('div', {
    class: 'table-wrap', tabindex: '0', role: 'region', 'aria-label': caption || 'table',
  }, table);
  return { wrap, table, tbody };
}

export function emptyRow(colspan, text) {
  return h('tr', { class: 'empty-row' }, h('td', { colspan: String(colspan) }, text));
}

export function td(...children) {
  return h('td', {}, ...children);
}

export function link(href, text, attrs = {}) {
  return h('a', { ...attrs, href }, text);
}

export function nodeHref(id) {
  return '#/nodes/' + encodeURIComponent(String(id));
}

/** <select> with options [[value, label]] or [value]; `value` selected. */
export function select(options, value, attrs = {}) {
  const el = h('select', attrs, options.map((o) => {
    const [v, label] = Array.isArray(o) ? o : [o, o];
    return h('option', { value: v }, label);
  }));
  if (value !== undefined && value !== null) el.value = String(value);
  return el;
}

/** A label + control pair; control gets the id. */
export function field(label, control, hint) {
  if (!control.id) control.id = uid('f');
  let hintEl = null;
  if (hint) {
    hintEl = h('span', { class: 'hint', id: control.id + '-hint' }, hint);
    control.setAttribute('aria-describedby', hintEl.id);
  }
  return h('div', { class: 'field' }, h('label', { for: control.id }, label), control, hintEl);
}

let uidCounter = 0;
export function uid(prefix = 'id') {
  uidCounter += 1;
  return `${prefix}-${uidCounter}`;
}

export function btn(label, attrs = {}) {
  return h('button', { type: 'button', ...attrs, class: ['btn', attrs.class] }, label);
}

// ---- errors and messages --------------------------------------------------------------------

/** Nodes describing an error: the problem's detail, each errors[] entry, the request id. */
export function problemNodes(err) {
  if (!(err instanceof ApiError)) {
    return [h('p', {}, err && err.message ? err.message : 'Something went wrong.')];
  }
  const line = (e) => (e.field ? `${e.field}: ${e.message}` : e.message);
  const out = [];
  // The detail of a one-field 400 is often that field's own line: say it once.
  if (!(err.errors.length === 1 && err.message === line(err.errors[0]))) {
    out.push(h('p', { class: 'problem-detail' }, err.message));
  }
  if (err.errors.length) {
    out.push(h('ul', { class: 'problem-errors' }, err.errors.map((e) => h('li', { 'data-field': e.field }, line(e)))));
  }
  if (err.requestId) out.push(h('p', { class: 'request-id' }, `Request id ${err.requestId}`));
  return out;
}

/**
 * Shows an error in a form's error box (role=alert). `inputs` maps API field names to inputs,
 * which get aria-invalid. Quiet for aborted requests and handled 401s.
 */
export function showFormError(box, err, inputs = {}) {
  if (isAbort(err) || (err instanceof ApiError && err.handled)) return;
  clearFormError(box, inputs);
  box.append(...problemNodes(err));
  box.hidden = false;
  if (err instanceof ApiError) {
    for (const e of err.errors) {
      const input = inputs[e.field];
      if (input) input.setAttribute('aria-invalid', 'true');
    }
  }
}

export function showFormMessage(box, text) {
  box.replaceChildren(h('p', {}, text));
  box.hidden = false;
}

export function clearFormError(box, inputs = {}) {
  box.replaceChildren();
  box.hidden = true;
  for (const input of Object.values(inputs)) if (input) input.removeAttribute('aria-invalid');
}

export function errorBox(test) {
  return h('div', { class: 'form-error', role: 'alert', 'data-test': test, hidden: true });
}

let flashTimer = null;

/** The success/info message area (data-test="flash"). */
export function flash(text, kind = 'success') {
  const el = document.getElementById('flash');
  if (!el) return;
  clearTimeout(flashTimer);
  el.className = `flash flash-${kind}`;
  el.replaceChildren(h('p', {}, text));
}

export function clearFlash() {
  const el = document.getElementById('flash');
  if (el) el.replaceChildren();
}

/** The page-level error area (data-test="error"). */
export function pageError(err) {
  if (isAbort(err) || (err instanceof ApiError && err.handled)) return;
  const el = document.getElementById('error');
  if (!el) return;
  el.replaceChildren(...problemNodes(err));
}

export function pageErrorText(text) {
  const el = document.getElementById('error');
  if (el) el.replaceChildren(h('p', {}, text));
}

export function clearPageError() {
  const el = document.getElementById('error');
  if (el) el.replaceChildren();
}

// ---- dialogs --------------------------------------------------------------------------------

/**
 * A modal <dialog>. Resolves false when cancelled (Cancel, Escape), else `true` or what
 * `validate()` returned. `validate` may return {error: text} to keep the dialog open.
 * Cancel is focused (Enter cancels: a slip of the key never deletes anything), unless `focus` is
 * 'input' (the first input of `body`).
 */
export function confirmDialog({
  title, message, body = null, confirmLabel = 'Confirm', danger = false, validate = null, focus = 'cancel',
}) {
  return new Promise((resolve) => {
    const titleId = uid('dlg-title');
    const previous = document.activeElement;
    const ok = h('button', {
      type: 'submit', class: ['btn', danger ? 'btn-danger' : 'btn-primary'], 'data-test': 'confirm-ok',
    }, confirmLabel);
    const cancel = h('button', { type: 'button', class: 'btn', 'data-test': 'confirm-cancel' }, 'Cancel');
    const err = errorBox('confirm-error');
    const messages = (Array.isArray(message) ? message : [message]).filter(Boolean)
      .map((m) => (m instanceof Node ? m : h('p', {}, m)));
    const form = h('form', { class: 'dialog-form', novalidate: true },
      h('h2', { id: titleId }, title), messages, body, err,
      h('div', { class: 'dialog-actions' }, cancel, ok));
    const dlg = h('dialog', { class: 'dialog', 'aria-labelledby': titleId, 'data-test': 'confirm-dialog' }, form);
    let done = false;
    const finish = (value) => {
      if (done) return;
      done = true;
      if (dlg.open) dlg.close();
      dlg.remove();
      if (previous && previous.isConnected && typeof previous.focus === 'function') previous.focus();
      resolve(value);
    };
    cancel.addEventListener('click', () => finish(false));
    dlg.addEventListener('close', () => finish(false)); // Escape closes the dialog
    form.addEventListener('submit', (e) => {
      e.preventDefault();
      if (!validate) {
        finish(true);
        return;
      }
      const r = validate();
      if (r && typeof r === 'object' && typeof r.error === 'string') {
        showFormMessage(err, r.error);
        return;
      }
      finish(r === undefined ? true : r);
    });
    document.body.append(dlg);
    dlg.showModal();
    const first = focus === 'input' ? form.querySelector('input:not([hidden]), select, textarea') : null;
    (first || cancel).focus();
  });
}

// ---- clipboard --------------------------------------------------------------------------------

/** Copies the text of `el`; falls back to selecting it. Resolves to a message for the user. */
export async function copyText(el) {
  const text = el.textContent || '';
  if (navigator.clipboard && window.isSecureContext) {
    try {
      await navigator.clipboard.writeText(text);
      return 'Copied to the clipboard.';
    } catch {
      /* fall back */
    }
  }
  const range = document.createRange();
  range.selectNodeContents(el);
  const sel = window.getSelection();
  sel.removeAllRanges();
  sel.addRange(range);
  let copied = false;
  try {
    copied = document.execCommand('copy');
  } catch {
    copied = false;
  }
  return copied ? 'Copied to the clipboard.' : 'The secret is selected: press Ctrl+C (or ⌘C) to copy it.';
}

/** Downloads `text` as a file (Blob and a temporary <a download>). */
export function download(filename, text, type = 'text/csv;charset=utf-8') {
  const url = URL.createObjectURL(new Blob([text], { type }));
  const a = h('a', { href: url, download: filename, hidden: true });
  document.body.append(a);
  a.click();
  a.remove();
  setTimeout(() => URL.revokeObjectURL(url), 30000);
}
