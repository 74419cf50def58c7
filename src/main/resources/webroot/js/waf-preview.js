// WAF preview: the editor's traffic policy as a candidate against sample requests the person pastes
// (POST /waf/preview {policy, samples}): per sample the decision of the current version and of the
// candidate, which changed, and the candidate's own tests. Saves nothing. Every answer belongs to the
// text it was asked for: the editor's next change clears it and says so (`stale()`).

import { api, isAbort } from './api.js';
import { h, str, uid, errorBox, showFormMessage, makeTable, td } from './ui.js';
import { scopeQuery } from './acl-common.js';
import { positions, lineCh } from './acl-pointer.js';
import { decisionText } from './waf-common.js';

const MAX_SAMPLES = 100;
const EXAMPLE = '[\n  {"method": "GET", "target": "/admin/users"},\n  {"target": "/search?q=union+station", "headers": {"user-agent": "Mozilla/5.0"}}\n]';

/** The pasted samples: {samples} or {error}. */
function parseSamples(text) {
  if (!text.trim()) return { error: 'Paste the sample requests first: a JSON list of requests, each like a test\'s "request" ({"target": "/path?query"}, with method, headers, client_ip, body, route if needed).' };
  const { error } = positions(text);
  if (error) {
    const at = lineCh(text, error.pos);
    return { error: `The sample requests are not valid JSON (line ${at.line + 1}, column ${at.ch + 1}): ${error.message}.` };
  }
  const v = JSON.parse(text);
  const list = Array.isArray(v) ? v : v && typeof v === 'object' ? [v] : null;
  if (!list || !list.length) return { error: 'The sample requests must be a JSON list of requests (at least one).' };
  if (list.length > MAX_SAMPLES) return { error: `At most ${MAX_SAMPLES} sample requests at a time (${list.length} given).` };
  return { samples: list };
}

function requestText(s) {
  if (!s || typeof s !== 'object') return str(s);
  return `${str(s.method || 'GET')} ${str(s.target)}${s.route ? ` (route ${str(s.route)})` : ''}`;
}

function testsView(tests, prefix) {
  if (!Array.isArray(tests) || !tests.length) return h('p', { class: 'muted', 'data-test': `${prefix}-tests` }, 'The editor\'s policy has no tests.');
  const failed = tests.filter((t) => !t.passed);
  const head = failed.length
    ? h('p', { class: 'form-error', role: 'alert', 'data-test': `${prefix}-tests` },
      `${failed.length} of ${tests.length} test${tests.length === 1 ? '' : 's'} fail: saving would be refused.`)
    : h('p', { class: 'flash', 'data-test': `${prefix}-tests` },
      `${tests.length === 1 ? 'The 1 test passes' : `All ${tests.length} tests pass`}: saving would not be refused by them.`);
  const items = tests.map((t) => h('li', { 'data-test': `${prefix}-test`, 'data-passed': String(!!t.passed), 'data-name': str(t.name) },
    h('strong', {}, t.passed ? 'passes' : 'fails'), `: ${str(t.name)} — expected ${str(t.expect)}${t.rule ? ` by rule ${str(t.rule)}` : ''}, got `,
    decisionText(t.got, `${prefix}-test-got`)));
  return h('div', {}, head, h('ul', { class: 'plain-list waf-tests' }, items));
}

/**
 * A preview's answer as elements: the summary, the table of samples (`samples[i]` is the request of
 * the answer's sample i, when known) and the candidate's tests. `test` prefixes the hooks; `noun` names
 * the samples ("sample request", "reported sample").
 */
export function resultView(r, samples, { test = 'waf-preview', noun = 'sample request' } = {}) {
  const rows = Array.isArray(r.samples) ? r.samples : [];
  const now = Number(r.current_version) ? `version ${str(r.current_version)}, the current one` : 'no policy stored yet';
  const { wrap, tbody } = makeTable(['#', 'Request', `Now (${Number(r.current_version) ? `version ${str(r.current_version)}` : 'no policy'})`,
    'With the editor\'s policy', 'Changed'], { caption: `Decisions per ${noun}`, test: `${test}-table` });
  for (const s of rows) {
    const i = Number(s.index);
    tbody.append(h('tr', { 'data-test': `${test}-row`, 'data-index': str(s.index), 'data-changed': String(!!s.changed), class: s.changed ? 'waf-changed' : null },
      h('th', { scope: 'row' }, str(i + 1)),
      td(h('span', { class: 'mono' }, samples[i] ? requestText(samples[i]) : `(route ${str(s.route) || 'none'})`)),
      td(decisionText(s.current, `${test}-current`)),
      td(decisionText(s.candidate, `${test}-candidate`)),
      td(s.changed ? h('strong', { 'data-test': `${test}-changed` }, 'changed') : h('span', { class: 'muted' }, 'same'))));
  }
  return [
    h('p', { 'data-test': `${test}-summary` },
      `${str(r.changed)} of ${rows.length} ${noun}${rows.length === 1 ? '' : 's'} would be decided differently by the editor's policy (mode ${str(r.mode)}) than now (${now}). Nothing is saved.`),
    wrap,
    h('h3', {}, 'The editor\'s tests'),
    testsView(r.tests, test),
  ];
}

/**
 * The preview section. `candidate(box)` gives the editor's document (or null, having said why in
 * `box`); `problem(box, e)` shows an API error. Returns {section, stale()}.
 */
export function wafPreview(ctx, sc, { candidate, problem }) {
  const samplesId = uid('waf-samples');
  const samplesInput = h('textarea', {
    id: samplesId, class: 'code-editor waf-samples', 'data-test': 'waf-samples', rows: '7', spellcheck: 'false', autocomplete: 'off',
    autocapitalize: 'off', placeholder: EXAMPLE, 'aria-describedby': `${samplesId}-hint`,
  });
  const submit = h('button', { type: 'submit', class: 'btn', 'data-test': 'waf-preview-submit' }, 'Preview');
  const box = errorBox('waf-preview-error');
  const result = h('div', { class: 'preview-result', 'data-test': 'waf-preview-result', 'aria-live': 'polite' });
  const staleNote = h('p', { class: 'stale-note', 'data-test': 'waf-results-stale', role: 'status', hidden: true },
    'The editor changed: the results shown for the earlier text were cleared. Preview again.');
  const form = h('form', { class: 'inline-form', novalidate: true, 'aria-label': 'Preview against sample requests' },
    h('label', { for: samplesId, class: 'editor-label' }, 'Sample requests (JSON)'),
    h('p', { class: 'muted hint', id: `${samplesId}-hint` },
      `A list of up to ${MAX_SAMPLES} requests, each as a test's "request": {"target": "/path?query"} and optionally method, headers, client_ip, body, route.`),
    samplesInput,
    h('div', { class: 'form-actions' }, submit),
    box);
  let generation = 0;

  form.addEventListener('submit', async (e) => {
    e.preventDefault();
    const doc = candidate(box);
    if (!doc) return;
    const parsed = parseSamples(samplesInput.value);
    if (parsed.error) {
      showFormMessage(box, parsed.error);
      samplesInput.focus();
      return;
    }
    const asked = generation;
    submit.disabled = true;
    try {
      const r = await api.post('/waf/preview', { policy: doc, samples: parsed.samples }, { query: scopeQuery(sc), signal: ctx.signal });
      if (asked !== generation) return;
      staleNote.hidden = true;
      result.replaceChildren(...resultView(r, parsed.samples));
    } catch (ex) {
      if (isAbort(ex) || asked !== generation) return;
      result.replaceChildren();
      problem(box, ex);
    } finally {
      submit.disabled = false;
    }
  });

  const section = h('section', { class: 'panel', 'aria-labelledby': 'waf-preview-h' },
    h('h2', { id: 'waf-preview-h' }, 'Preview the editor\'s policy'),
    h('p', { class: 'muted' }, 'What the policy in the editor would decide on sample requests, beside what the current version decides, and how its tests go. Nothing is saved.'),
    staleNote, form, result);

  return {
    section,
    /** The editor changed: the result and error shown belong to the old text; clear them and say so. */
    stale() {
      generation++;
      const had = result.childNodes.length || !box.hidden;
      result.replaceChildren();
      box.replaceChildren();
      box.hidden = true;
      if (had) staleNote.hidden = false;
    },
  };
}
