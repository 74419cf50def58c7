// WAF (traffic policy): the editor page (GET/PUT /api/v1/waf with If-Match), its error marks (the API's
// field paths such as rules[2].expression, marked at their line), the failing document tests under a
// heading of their own, and the preview of the editor's text against sample requests (waf-preview.js).
// Below them, the ingress nodes that enforce the policy, their traffic and the samples they reported
// (waf-traffic.js, waf-chart.js). The history page is waf-history.js. The editor, its marks and the scope bar are the ACL page's
// (acl-code.js, acl-pointer.js, acl-common.js).

import { api, request, can, isAbort, ApiError } from './api.js';
import { h, btn, str, confirmDialog, uid, debounce, showFormError, showFormMessage, clearFormError } from './ui.js';
import { scopeOf, scopeQuery, scopeBar, readDraft, writeDraft } from './acl-common.js';
import { codeEditor } from './acl-code.js';
import { positions, lineCh } from './acl-pointer.js';
import { WAF_PAGES, DRAFT, docText, wafVersionLine, withPointers, isTestError, isTestFailure } from './waf-common.js';
import { wafPreview } from './waf-preview.js';
import { wafTraffic } from './waf-traffic.js';

export { renderWafHistory } from './waf-history.js';

/** Parses JSON text: {value} or {error, line} (the syntax error's place, 0-based line). */
export function parseJson(text, what) {
  const { error } = positions(text);
  if (error) {
    const at = lineCh(text, error.pos);
    return { error: `${what} is not valid JSON (line ${at.line + 1}, column ${at.ch + 1}): ${error.message}.`, line: at.line };
  }
  return { value: JSON.parse(text) };
}

function parseDoc(text) {
  const r = parseJson(text, 'The editor');
  if (r.error) return r;
  if (!r.value || typeof r.value !== 'object' || Array.isArray(r.value)) {
    return { error: 'The traffic policy must be a JSON object: {"mode": …, "rules": [...], "tests": [...]}.', line: 0 };
  }
  return { doc: r.value };
}

/** "2 rules · managed rule set applied (paranoia 1) · 3 tests, run on every save and every preview". */
function summary(doc) {
  const n = (a) => (Array.isArray(a) ? a.length : 0);
  const plural = (k, one) => `${k} ${one}${k === 1 ? '' : 's'}`;
  const managed = doc.managed && typeof doc.managed === 'object'
    ? `managed rule set applied (paranoia ${str(doc.managed.paranoia ?? 1)})` : 'managed rule set not applied (no "managed")';
  const routes = doc.routes && typeof doc.routes === 'object' ? Object.keys(doc.routes).length : 0;
  return [plural(n(doc.rules), 'custom rule'), managed, routes ? plural(routes, 'route override') : null,
    `${plural(n(doc.tests), 'test')}, run on every save and every preview`].filter(Boolean).join(' · ');
}

export function renderWaf(ctx) {
  ctx.setTitle('WAF');
  const canWrite = can('waf:write');
  const sc = scopeOf(ctx);
  let loaded = null; // the stored policy ({team, environment, version, mode, policy, …})
  let loadedText = ''; // its document as the editor shows it
  let baseVersion = null; // the version the editor's text was made on (If-Match)

  const versionEl = h('strong', { 'data-test': 'waf-version' }, '—');
  const versionP = h('p', { 'data-test': 'waf-version-line' }, 'Version ', versionEl);
  const draftNote = h('div', { class: 'flash flash-info', 'data-test': 'waf-draft-note', role: 'status', hidden: true });
  const editorId = uid('waf-editor');
  const textarea = h('textarea', {
    id: editorId, 'data-test': 'waf-editor', class: 'code-editor', rows: '22', spellcheck: 'false',
    autocomplete: 'off', autocapitalize: 'off', readOnly: !canWrite, disabled: true,
  });
  const marksList = h('ul', { class: 'editor-marks', 'data-test': 'waf-marks', 'aria-label': 'Errors in the editor, by line', hidden: true });
  const editor = codeEditor(textarea, { label: 'Traffic policy JSON', readOnly: !canWrite, marksList, test: 'waf' });
  const saveBtn = canWrite ? h('button', { type: 'button', class: 'btn btn-primary', 'data-test': 'waf-save', disabled: true }, 'Save') : null;
  const formatBtn = btn('Format JSON', { 'data-test': 'waf-format' });
  const reloadBtn = btn('Reload', { 'data-test': 'waf-reload' });
  const errorsBox = h('div', { class: 'acl-errors form-error', 'data-test': 'waf-errors', role: 'alert', hidden: true });
  const summaryP = h('p', { class: 'muted', 'data-test': 'waf-summary' });

  function setDisabled(off) {
    editor.setDisabled(off);
    if (saveBtn) saveBtn.disabled = off;
  }

  // ---- every edit: the summary and the draft follow; earlier answers are marked or cleared ----
  let summarized = '';
  function settleWork() {
    const text = editor.value();
    if (text === summarized) return;
    summarized = text;
    const parsed = parseDoc(text);
    summaryP.textContent = parsed.error ? 'The editor does not hold a valid JSON object yet.' : summary(parsed.doc);
    if (sc.team && sc.environment && loaded) {
      const d = readDraft(sc, DRAFT);
      writeDraft(sc, text === loadedText && baseVersion === loaded.version ? null : { text, base: baseVersion, from: d && d.from }, DRAFT);
    }
  }
  const settle = debounce(settleWork, 300);
  ctx.onCleanup(() => settle.flush());
  function settleNow() {
    settle.cancel();
    summarized = '';
    settleWork();
  }
  editor.onChange(() => {
    preview.stale();
    traffic.stale();
    if (!errorsBox.hidden && !errorsBox.querySelector('[data-test="waf-errors-stale"]')) {
      errorsBox.prepend(h('p', { class: 'stale-note', 'data-test': 'waf-errors-stale' },
        'The editor changed since these errors were found: save or preview again to check the new text.'));
    }
    settle();
  });

  function clearErrors() {
    errorsBox.replaceChildren();
    errorsBox.hidden = true;
  }

  /** The error box: the detail, the document's errors, then the tests' under a heading of their own. */
  function showGeneral(detail, errors, extra = []) {
    const tests = errors.filter((e) => isTestError(e));
    const others = errors.filter((e) => !isTestError(e));
    const item = (test) => (e) => h('li', { 'data-test': test, 'data-field': e.field }, e.field ? `${e.field}: ${e.message}` : e.message);
    const nodes = [h('p', { class: 'problem-detail' }, detail)];
    if (others.length) nodes.push(h('ul', { class: 'problem-errors' }, others.map(item('waf-error'))));
    if (tests.length) {
      const failed = tests.some((e) => isTestFailure(e));
      nodes.push(h('h3', { class: 'test-failure-title', 'data-test': 'waf-test-failure' },
        failed ? 'A document test failed: nothing was saved' : 'Errors in the tests'));
      nodes.push(h('ul', { class: 'problem-errors test-failures' }, tests.map(item('waf-test-error'))));
    }
    if (editor.marks().length) nodes.push(h('p', {}, 'The editor marks each error at its line.'));
    nodes.push(...extra);
    errorsBox.replaceChildren(...nodes);
    errorsBox.hidden = false;
  }

  function showProblem(e) {
    if (isAbort(e) || (e instanceof ApiError && e.handled)) return;
    if (e instanceof ApiError && e.status === 400 && e.errors.length) {
      editor.setServerErrors(withPointers(e.errors));
      showGeneral(e.errors.length === 1 ? 'Nothing was saved.' : `Nothing was saved: ${e.errors.length} errors.`, e.errors);
    } else {
      showGeneral(e.message, [], e instanceof ApiError && e.requestId ? [h('p', { class: 'request-id' }, `Request id ${e.requestId}`)] : []);
    }
    errorsBox.scrollIntoView({ block: 'center' });
  }

  // ---- load ----
  async function load() {
    clearErrors();
    if (!sc.team || !sc.environment) {
      setDisabled(true);
      versionEl.textContent = '—';
      return;
    }
    try {
      const r = await request('GET', '/waf', { query: scopeQuery(sc), signal: ctx.signal });
      const draft = readDraft(sc, DRAFT);
      applyPolicy(r.data, draft && (draft.text !== docText(r.data) || draft.base !== r.data.version) ? draft : null);
    } catch (e) {
      if (isAbort(e)) return;
      setDisabled(true);
      ctx.error(e);
    }
  }

  /** Shows the stored policy `p`; the editor holds `draft.text` instead when there is a draft (unsaved edits, or a version loaded from the history). */
  function applyPolicy(p, draft = null) {
    loaded = p;
    loadedText = docText(p);
    baseVersion = draft ? draft.base : p.version;
    editor.setValue(draft ? draft.text : loadedText);
    preview.stale();
    traffic.stale();
    setDisabled(false);
    versionP.replaceChildren(...wafVersionLine(p, versionEl));
    if (draft) {
      const discard = btn('Discard and show the stored version', { class: 'btn-small', 'data-test': 'waf-draft-discard' });
      discard.addEventListener('click', () => {
        writeDraft(sc, null, DRAFT);
        applyPolicy(loaded);
      });
      draftNote.replaceChildren(h('p', {}, draft.from != null
        ? `The editor holds version ${str(draft.from)}, loaded from the history: it is not saved. Save to store it as a new version.`
        : `The editor holds your unsaved edits, made on version ${str(draft.base)}.`), discard);
      draftNote.hidden = false;
    } else {
      draftNote.hidden = true;
    }
    settleNow();
  }

  reloadBtn.addEventListener('click', async () => {
    if (loaded && editor.value() !== loadedText) {
      const ok = await confirmDialog({ title: 'Discard your edits?', message: 'Reloading replaces the editor with the stored traffic policy.', confirmLabel: 'Discard and reload', danger: true });
      if (!ok) return;
    }
    writeDraft(sc, null, DRAFT);
    ctx.clearError();
    load();
  });

  formatBtn.addEventListener('click', () => {
    clearErrors();
    const parsed = parseDoc(editor.value());
    if (parsed.error) {
      showGeneral(parsed.error, [{ field: '(json)', message: parsed.error }]);
      editor.focus(parsed.line);
      return;
    }
    editor.setValue(JSON.stringify(parsed.doc, null, 2));
    settle();
  });

  // ---- save ----
  if (saveBtn) {
    saveBtn.addEventListener('click', async () => {
      clearErrors();
      settleNow();
      const parsed = parseDoc(editor.value());
      if (parsed.error) {
        showGeneral('Nothing was saved.', [{ field: '(json)', message: parsed.error }]);
        editor.focus(parsed.line);
        return;
      }
      saveBtn.disabled = true;
      try {
        const r = await request('PUT', '/waf', {
          query: scopeQuery(sc), body: parsed.doc, headers: { 'If-Match': `"${str(baseVersion)}"` }, signal: ctx.signal,
        });
        writeDraft(sc, null, DRAFT);
        applyPolicy(r.data);
        const passed = r.data.tests && r.data.tests.passed;
        ctx.flash(`Traffic policy saved as version ${str(r.data.version)} (mode ${str(r.data.mode)})${passed ? `; its ${str(passed)} test${passed === 1 ? '' : 's'} passed` : ''}.`);
      } catch (e) {
        if (e instanceof ApiError && e.status === 409) await showConflict(e);
        else showProblem(e);
      } finally {
        saveBtn.disabled = false;
      }
    });
  }

  async function showConflict(e) {
    let now = null;
    try {
      const cur = await api.get('/waf', scopeQuery(sc), { signal: ctx.signal });
      now = cur && cur.version;
    } catch {
      const m = /version (\d+)/.exec(e.message);
      now = m ? m[1] : null;
    }
    const reload = btn(`Reload version ${now ?? ''}`.trim(), { 'data-test': 'waf-conflict-reload' });
    reload.addEventListener('click', () => {
      writeDraft(sc, null, DRAFT);
      ctx.clearError();
      load();
    });
    errorsBox.replaceChildren(
      h('p', { class: 'problem-detail', 'data-test': 'waf-conflict' },
        `Someone saved version ${now ?? '(newer)'} meanwhile, after the version ${str(baseVersion)} you edited. Nothing was saved. Reload to see it (copy your edits first: reloading replaces them).`),
      reload);
    errorsBox.hidden = false;
  }

  // ---- preview ----
  const editorHooks = {
    candidate(box) {
      clearFormError(box);
      clearErrors();
      settleNow();
      const parsed = parseDoc(editor.value());
      if (parsed.error) {
        showFormMessage(box, parsed.error);
        return null;
      }
      return parsed.doc;
    },
    problem(box, e) {
      // the candidate's faults (policy.rules[0].expression) are the editor's; a sample's (samples[1].target) is not
      const ofPolicy = e instanceof ApiError && e.status === 400 ? e.errors.filter((x) => /^policy[.[]/.test(x.field)) : [];
      if (ofPolicy.length) editor.setServerErrors(withPointers(ofPolicy), '/policy');
      showFormError(box, e);
      if (editor.marks().length) box.append(h('p', {}, 'The editor marks the policy\'s errors at their line.'));
    },
  };
  const preview = wafPreview(ctx, sc, editorHooks);
  // ---- at the edge: the ingress nodes, their traffic and samples (waf-traffic.js) ----
  const traffic = wafTraffic(ctx, sc, editorHooks);

  // ---- layout ----
  ctx.root.append(
    ctx.heading('WAF'),
    scopeBar(ctx, sc, 'policy', () => {
      ctx.clearError();
      load();
      traffic.reset();
    }, WAF_PAGES),
    h('section', { class: 'panel', 'aria-labelledby': 'waf-editor-h' },
      h('h2', { id: 'waf-editor-h' }, 'Traffic policy'),
      versionP,
      draftNote,
      h('label', { for: editorId, class: 'editor-label' }, 'Traffic policy JSON'),
      h('p', { class: 'muted hint' }, 'Custom rules in CEL, the managed rule set\'s overrides and the document\'s tests. Tab leaves the editor; errors are marked at their line.'),
      textarea,
      marksList,
      h('div', { class: 'button-row' }, saveBtn, formatBtn, reloadBtn,
        canWrite ? null : h('span', { class: 'muted', 'data-test': 'waf-read-only' }, 'Your role can read the traffic policy and preview changes, not save them.')),
      errorsBox,
      summaryP),
    preview.section,
    ...traffic.sections);

  load();
}
