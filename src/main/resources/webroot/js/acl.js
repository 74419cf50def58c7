// ACL policy: the editor page (GET/PUT /api/v1/acl with If-Match), with its diff against the stored
// version, its error marks, and the preview section (acl-preview.js). The history page is
// acl-history.js; what both share is acl-common.js.

import { api, request, can, isAbort, ApiError } from './api.js';
import { h, btn, str, confirmDialog, uid, debounce, showFormError, showFormMessage, clearFormError } from './ui.js';
import { scopeOf, scopeQuery, scopeBar, grantText, canonicalText, versionLine, readDraft, writeDraft } from './acl-common.js';
import { codeEditor } from './acl-code.js';
import { diffView } from './acl-diff.js';
import { previewSection } from './acl-preview.js';
import { positions, lineCh } from './acl-pointer.js';

export { renderAclHistory } from './acl-history.js';

/** Parses the editor: {doc} or {error, line}. */
function parseDoc(text) {
  const { error } = positions(text);
  if (error) {
    const at = lineCh(text, error.pos);
    return { error: `The editor does not hold valid JSON (line ${at.line + 1}, column ${at.ch + 1}): ${error.message}.`, line: at.line };
  }
  const doc = JSON.parse(text);
  if (!doc || typeof doc !== 'object' || Array.isArray(doc)) {
    return { error: 'The policy must be a JSON object: {"grants": [...], "tests": [...]}.', line: 0 };
  }
  return { doc };
}

export function renderAcl(ctx) {
  ctx.setTitle('ACL policy');
  const canWrite = can('acl:write');
  const sc = scopeOf(ctx);
  let loaded = null; // the stored policy
  let loadedText = ''; // its canonical text
  let baseVersion = null; // the version the editor's text was made on (If-Match)
  let grantItems = [];

  const versionEl = h('strong', { 'data-test': 'acl-version' }, '—');
  const versionP = h('p', { 'data-test': 'acl-version-line' }, 'Version ', versionEl);
  const draftNote = h('div', { class: 'flash flash-info', 'data-test': 'acl-draft-note', role: 'status', hidden: true });
  const editorId = uid('acl-editor');
  const textarea = h('textarea', {
    id: editorId, 'data-test': 'acl-editor', class: 'code-editor', rows: '22', spellcheck: 'false',
    autocomplete: 'off', autocapitalize: 'off', readOnly: !canWrite, disabled: true,
  });
  const marksList = h('ul', { class: 'editor-marks', 'data-test': 'acl-marks', 'aria-label': 'Errors in the editor, by line', hidden: true });
  const editor = codeEditor(textarea, { label: 'Policy JSON', readOnly: !canWrite, marksList });
  const saveBtn = canWrite ? h('button', { type: 'button', class: 'btn btn-primary', 'data-test': 'acl-save', disabled: true }, 'Save') : null;
  const formatBtn = btn('Format JSON', { 'data-test': 'acl-format' });
  const reloadBtn = btn('Reload', { 'data-test': 'acl-reload' });
  const diffBtn = btn('Show changes', { 'data-test': 'acl-diff-toggle', 'aria-expanded': 'false', 'aria-controls': 'acl-diff-region' });
  const diffRegion = h('div', { id: 'acl-diff-region', class: 'diff-region', 'data-test': 'acl-diff-region', 'aria-live': 'polite', hidden: true });
  const errorsBox = h('div', { class: 'acl-errors form-error', 'data-test': 'acl-errors', role: 'alert', hidden: true });
  const grantsList = h('ul', { class: 'grant-list', 'data-test': 'acl-grants' });
  const testsNote = h('p', { class: 'muted' });

  function setDisabled(off) {
    editor.setDisabled(off);
    if (saveBtn) saveBtn.disabled = off;
  }

  // ---- summary of the grants, errors beside them ----
  function renderSummary(text) {
    const parsed = parseDoc(text);
    grantItems = [];
    if (parsed.error) {
      grantsList.replaceChildren(h('li', { class: 'muted' }, 'The editor does not hold a valid JSON object yet.'));
      testsNote.textContent = '';
      return;
    }
    const grants = parsed.doc.grants;
    if (!Array.isArray(grants)) {
      grantsList.replaceChildren(h('li', { class: 'muted' }, 'No "grants" array: the policy needs one ([] allows nothing).'));
    } else if (!grants.length) {
      grantsList.replaceChildren(h('li', { class: 'muted' }, 'No grants: default deny, no node reaches another.'));
    } else {
      grantItems = grants.map((g, i) => h('li', { 'data-test': 'acl-grant', 'data-grant-index': String(i) },
        h('span', { class: 'mono' }, grantText(g, i)), h('ul', { class: 'grant-errors' })));
      grantsList.replaceChildren(...grantItems);
    }
    const tests = parsed.doc.tests;
    testsNote.textContent = Array.isArray(tests)
      ? `${tests.length} test${tests.length === 1 ? '' : 's'} run on every save, and on every preview below (before saving).` : '';
  }

  // ---- the diff against the stored version ----
  function renderDiff() {
    if (diffRegion.hidden || !loaded) return;
    const parsed = parseDoc(editor.value());
    diffRegion.replaceChildren(parsed.error
      ? h('p', { class: 'muted', 'data-test': 'acl-diff-summary' }, `${parsed.error} Fix it to compare.`)
      : diffView(loadedText, canonicalText(parsed.doc), `version ${str(loaded.version)} (stored)`, 'the editor'));
  }
  diffBtn.addEventListener('click', () => {
    const open = diffRegion.hidden;
    diffRegion.hidden = !open;
    diffBtn.setAttribute('aria-expanded', String(open));
    diffBtn.textContent = open ? 'Hide changes' : 'Show changes';
    renderDiff();
  });

  // ---- every edit: summary, draft and diff follow; earlier answers are cleared ----
  let summarized = '';
  function settleWork() {
    const text = editor.value();
    if (text === summarized) return;
    summarized = text;
    renderSummary(text);
    renderDiff();
    if (sc.team && sc.environment && loaded) {
      const d = readDraft(sc);
      writeDraft(sc, text === loadedText && baseVersion === loaded.version ? null : { text, base: baseVersion, from: d && d.from });
    }
  }
  const settle = debounce(settleWork, 300);
  // leaving the page (the History tab, say) within 300 ms of the last keystroke: the draft keeps the whole edit
  ctx.onCleanup(() => settle.flush());
  function settleNow() {
    settle.cancel();
    summarized = '';
    settleWork();
  }
  editor.onChange(() => {
    preview.stale();
    if (!errorsBox.hidden && !errorsBox.querySelector('[data-test="acl-errors-stale"]')) {
      errorsBox.prepend(h('p', { class: 'stale-note', 'data-test': 'acl-errors-stale' },
        'The editor changed since these errors were found: save or preview again to check the new text.'));
    }
    settle();
  });

  function clearErrors() {
    errorsBox.replaceChildren();
    errorsBox.hidden = true;
    for (const li of grantItems) {
      li.classList.remove('has-error');
      li.querySelector('.grant-errors').replaceChildren();
    }
  }

  /** Puts each error beside its grant when its pointer is /grants/N…; returns the others. */
  function placeGrantErrors(errors, prefix = '') {
    const rest = [];
    for (const e of errors) {
      let ptr = e.field;
      if (prefix && ptr.startsWith(prefix + '/')) ptr = ptr.slice(prefix.length);
      const m = /^\/grants\/(\d+)(?:\/|$)/.exec(ptr);
      const li = m ? grantItems[Number(m[1])] : null;
      if (li) {
        li.classList.add('has-error');
        li.querySelector('.grant-errors').append(h('li', { 'data-test': 'acl-grant-error', 'data-field': e.field }, `${e.field}: ${e.message}`));
      } else {
        rest.push(e);
      }
    }
    return rest;
  }

  function showGeneral(detail, rest, besideCount, extra = []) {
    const tests = rest.filter((e) => e.field.startsWith('/tests'));
    const others = rest.filter((e) => !e.field.startsWith('/tests'));
    const item = (e) => h('li', { 'data-test': 'acl-error', 'data-field': e.field }, e.field ? `${e.field}: ${e.message}` : e.message);
    const nodes = [h('p', { class: 'problem-detail' }, detail)];
    if (others.length) nodes.push(h('ul', { class: 'problem-errors' }, others.map(item)));
    if (tests.length) {
      const failed = tests.some((e) => /^test \d+/.test(e.message));
      nodes.push(h('h3', { class: 'test-failure-title', 'data-test': 'acl-test-failure' },
        failed ? 'A policy test failed: nothing was saved' : 'Errors in the tests'));
      nodes.push(h('ul', { class: 'problem-errors test-failures' }, tests.map(item)));
    }
    if (besideCount) nodes.push(h('p', {}, `${besideCount} error${besideCount === 1 ? ' is' : 's are'} shown beside ${besideCount === 1 ? 'its grant' : 'their grants'} below the editor.`));
    if (editor.marks().length) nodes.push(h('p', {}, 'The editor marks each error at its line.'));
    nodes.push(...extra);
    errorsBox.replaceChildren(...nodes);
    errorsBox.hidden = false;
  }

  // the editor is tall: bring the first error (at its grant, or the general box) into view
  function revealFirstError() {
    const shown = [...document.querySelectorAll('[data-test="acl-grant-error"], [data-test="acl-errors"]')]
      .find((el) => el.offsetParent !== null);
    if (shown) shown.scrollIntoView({ block: 'center' });
  }

  function showProblem(e) {
    if (isAbort(e) || (e instanceof ApiError && e.handled)) return;
    if (e instanceof ApiError && e.status === 400 && e.errors.length) {
      editor.setServerErrors(e.errors);
      const rest = placeGrantErrors(e.errors);
      showGeneral(e.message, rest, e.errors.length - rest.length);
    } else {
      showGeneral(e.message, [], 0, e instanceof ApiError && e.requestId ? [h('p', { class: 'request-id' }, `Request id ${e.requestId}`)] : []);
    }
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
      const r = await request('GET', '/acl', { query: scopeQuery(sc), signal: ctx.signal });
      const draft = readDraft(sc);
      applyPolicy(r.data, draft && (draft.text !== canonicalText(r.data) || draft.base !== r.data.version) ? draft : null);
      fillNodes();
    } catch (e) {
      if (isAbort(e)) return;
      setDisabled(true);
      ctx.error(e);
    }
  }

  /** Shows the stored policy `p`; the editor holds `draft.text` instead when there is a draft (unsaved edits, or a version loaded from the history). */
  function applyPolicy(p, draft = null) {
    loaded = p;
    loadedText = canonicalText(p);
    baseVersion = draft ? draft.base : p.version;
    editor.setValue(draft ? draft.text : loadedText);
    preview.stale();
    setDisabled(false);
    versionP.replaceChildren(...versionLine(p, versionEl));
    if (draft) {
      const discard = btn('Discard and show the stored version', { class: 'btn-small', 'data-test': 'acl-draft-discard' });
      discard.addEventListener('click', () => {
        writeDraft(sc, null);
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
      const ok = await confirmDialog({ title: 'Discard your edits?', message: 'Reloading replaces the editor with the stored policy.', confirmLabel: 'Discard and reload', danger: true });
      if (!ok) return;
    }
    writeDraft(sc, null);
    ctx.clearError();
    load();
  });

  formatBtn.addEventListener('click', () => {
    clearErrors();
    const parsed = parseDoc(editor.value());
    if (parsed.error) {
      showGeneral(parsed.error, [{ field: '(json)', message: parsed.error }], 0);
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
        showGeneral('Nothing was saved.', [{ field: '(json)', message: parsed.error }], 0);
        editor.focus(parsed.line);
        return;
      }
      saveBtn.disabled = true;
      try {
        const r = await request('PUT', '/acl', {
          query: scopeQuery(sc), body: parsed.doc, headers: { 'If-Match': `"${str(baseVersion)}"` }, signal: ctx.signal,
        });
        writeDraft(sc, null);
        applyPolicy(r.data);
        ctx.flash(`Policy saved as version ${str(r.data.version)}.`);
      } catch (e) {
        if (e instanceof ApiError && e.status === 409) {
          await showConflict(e);
        } else {
          showProblem(e);
          revealFirstError();
        }
      } finally {
        saveBtn.disabled = false;
      }
    });
  }

  async function showConflict(e) {
    let now = null;
    try {
      const cur = await api.get('/acl', scopeQuery(sc), { signal: ctx.signal });
      now = cur && cur.version;
    } catch {
      const m = /version (\d+)/.exec(e.message);
      now = m ? m[1] : null;
    }
    const reload = btn(`Reload version ${now ?? ''}`.trim(), { 'data-test': 'acl-conflict-reload' });
    reload.addEventListener('click', () => {
      writeDraft(sc, null);
      ctx.clearError();
      load();
    });
    errorsBox.replaceChildren(
      h('p', { class: 'problem-detail', 'data-test': 'acl-conflict' },
        `Someone saved version ${now ?? '(newer)'} meanwhile, after the version ${str(baseVersion)} you edited. Nothing was saved. Reload to see it (copy your edits first: reloading replaces them).`),
      reload);
    errorsBox.hidden = false;
  }

  // ---- preview ----
  const preview = previewSection(ctx, sc, {
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
      if (e instanceof ApiError && e.status === 400 && e.errors.length) {
        editor.setServerErrors(e.errors, '/policy');
        const rest = placeGrantErrors(e.errors, '/policy');
        const beside = e.errors.length - rest.length;
        showFormError(box, new ApiError(400, { ...e.problem, errors: rest }));
        if (beside) box.append(h('p', {}, `${beside} error${beside === 1 ? ' is' : 's are'} shown beside the grants.`));
      } else {
        showFormError(box, e);
      }
    },
  });

  async function fillNodes() {
    if (!can('nodes:read')) return;
    try {
      const d = await api.get('/nodes', { limit: 1000 }, { signal: ctx.signal });
      const items = d && Array.isArray(d.items) ? d.items : [];
      preview.fillNodes(items.filter((n) => str(n.team) === sc.team && str(n.environment) === sc.environment).map((n) => str(n.name)));
    } catch {
      /* the list is a convenience: free text still works */
    }
  }

  // ---- layout ----
  ctx.root.append(
    ctx.heading('ACL policy'),
    scopeBar(ctx, sc, 'policy', () => {
      ctx.clearError();
      load();
    }),
    h('section', { class: 'panel', 'aria-labelledby': 'acl-editor-h' },
      h('h2', { id: 'acl-editor-h' }, 'Policy document'),
      versionP,
      draftNote,
      h('label', { for: editorId, class: 'editor-label' }, 'Policy JSON'),
      h('p', { class: 'muted hint' }, 'Tab leaves the editor; errors are marked at their line.'),
      textarea,
      marksList,
      h('div', { class: 'button-row' }, saveBtn, formatBtn, reloadBtn, diffBtn,
        canWrite ? null : h('span', { class: 'muted' }, 'Your role can read the policy and preview changes, not save them.')),
      diffRegion,
      errorsBox,
      h('h3', {}, 'Grants'),
      grantsList,
      testsNote),
    preview.section);

  load();
}
