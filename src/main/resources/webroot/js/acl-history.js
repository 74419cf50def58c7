// ACL history: the versions (GET /acl/versions), one version's document, the diff between any two
// versions or a version and the current one, loading a version into the editor (as the editor's
// draft, after asking when that replaces unsaved edits), and roll back (POST /acl/versions/{v}/restore).

import { api, request, can, seg, isAbort, ApiError } from './api.js';
import { h, btn, td, str, fmtTime, pre, field, makeTable, emptyRow, confirmDialog, select } from './ui.js';
import { listVersions, restoreConflict, scopeOf, scopeQuery, scopeHash, scopeBar, actorName, canonicalText, readDraft, writeDraft } from './acl-common.js';
import { diffView } from './acl-diff.js';
import { loadStyles } from './acl-code.js';

export function renderAclHistory(ctx) {
  ctx.setTitle('ACL history');
  loadStyles().catch(() => { /* unstyled diffs still read: signs and words */ });
  const canWrite = can('acl:write');
  const sc = scopeOf(ctx);
  let currentVersion = null;
  let versions = [];
  const cache = new Map(); // version -> its document (versions never change)

  const histError = h('div', { class: 'form-error', 'data-test': 'acl-history-error', role: 'alert', hidden: true });
  const tableSlot = h('div', { class: 'slot' });
  const viewTitle = h('h2', { id: 'acl-view-h' }, 'Version');
  const viewMeta = h('p', { class: 'muted' });
  const viewPre = h('div', { 'data-test': 'acl-history-policy' });
  const viewSection = h('section', { class: 'panel', 'aria-labelledby': 'acl-view-h', hidden: true }, viewTitle, viewMeta, viewPre);

  const fromSel = select([], '', { 'data-test': 'acl-compare-from' });
  const toSel = select([], '', { 'data-test': 'acl-compare-to' });
  const compareBtn = h('button', { type: 'submit', class: 'btn', 'data-test': 'acl-compare-submit' }, 'Compare');
  const compareForm = h('form', { class: 'inline-form', novalidate: true, 'aria-label': 'Compare two versions' },
    h('div', { class: 'form-row' }, field('From version', fromSel), field('To version', toSel), h('div', { class: 'form-actions' }, compareBtn)));
  const compareTitle = h('h2', { id: 'acl-compare-h' }, 'Compare two versions');
  const compareResult = h('div', { 'data-test': 'acl-compare-result', 'aria-live': 'polite' });
  const compareSection = h('section', { class: 'panel', 'aria-labelledby': 'acl-compare-h' }, compareTitle, compareForm, compareResult);

  function showHistError(e) {
    if (isAbort(e) || (e instanceof ApiError && e.handled)) return;
    const nodes = [h('p', { class: 'problem-detail' }, e.message)];
    if (e instanceof ApiError && e.errors.length) {
      nodes.push(h('ul', { class: 'problem-errors' }, e.errors.map((x) => h('li', { 'data-test': 'acl-error', 'data-field': x.field }, `${x.field}: ${x.message}`))));
    }
    histError.replaceChildren(...nodes);
    histError.hidden = false;
  }

  /** Version v's document ({grants, tests, …}); version 0 is the empty policy. */
  async function fetchVersion(v) {
    const key = String(v);
    if (key === '0') return { version: 0, grants: [], tests: [] };
    if (!cache.has(key)) cache.set(key, await api.get(`/acl/versions/${seg(key)}`, scopeQuery(sc), { signal: ctx.signal }));
    return cache.get(key);
  }

  async function view(v) {
    try {
      const p = await fetchVersion(v);
      viewTitle.textContent = `Version ${str(p.version)}`;
      viewMeta.replaceChildren('Stored ', fmtTime(p.created_at), ` by ${actorName(p.created_by)}`,
        p.restored_from ? `, restored from version ${str(p.restored_from)}` : '', '.');
      // it scrolls when long: focusable, named, so that a keyboard can scroll it (axe: scrollable-region-focusable)
      viewPre.replaceChildren(pre({ grants: p.grants, tests: p.tests }, { tabindex: '0', role: 'region', 'aria-label': `Policy of version ${str(p.version)}` }));
      viewSection.hidden = false;
      ctx.setHashQuiet(scopeHash(sc, { v }));
      viewTitle.setAttribute('tabindex', '-1');
      viewTitle.focus();
    } catch (e) {
      showHistError(e);
    }
  }

  async function compare(from, to) {
    histError.hidden = true;
    try {
      const [a, b] = await Promise.all([fetchVersion(from), fetchVersion(to)]);
      const label = (v) => `version ${v}${Number(v) === currentVersion ? ' (current)' : ''}`;
      compareResult.replaceChildren(diffView(canonicalText(a), canonicalText(b), label(from), label(to)));
      fromSel.value = String(from);
      toSel.value = String(to);
      compareTitle.setAttribute('tabindex', '-1');
      compareTitle.focus();
    } catch (e) {
      showHistError(e);
    }
  }
  compareForm.addEventListener('submit', (e) => {
    e.preventDefault();
    compare(fromSel.value, toSel.value);
  });

  /** Version v into the editor: it becomes the editor's draft (asking first when that replaces unsaved edits), then the policy page opens. */
  async function loadIntoEditor(v) {
    try {
      const [p, cur] = await Promise.all([fetchVersion(v), api.get('/acl', scopeQuery(sc), { signal: ctx.signal })]);
      const draft = readDraft(sc);
      if (draft && (draft.text !== canonicalText(cur) || draft.base !== cur.version)) {
        const ok = await confirmDialog({
          title: 'Discard your edits?',
          message: [`The editor holds unsaved edits${draft.from != null ? ` (version ${draft.from}, loaded from the history)` : ''}.`,
            `Loading version ${v} replaces them.`],
          confirmLabel: `Discard them and load version ${v}`,
          danger: true,
        });
        if (!ok) return;
      }
      writeDraft(sc, { text: canonicalText(p), base: cur.version, from: Number(v) });
      const qs = scopeHash(sc).toString();
      location.hash = '#/acl' + (qs ? '?' + qs : '');
    } catch (e) {
      showHistError(e);
    }
  }

  async function restore(v, trigger) {
    const ok = await confirmDialog({
      title: 'Roll back the policy',
      message: [`Store the grants and tests of version ${v} again, as a new version of ${sc.team} / ${sc.environment}?`,
        'Its tests run again against today\'s nodes; history is kept.'],
      confirmLabel: `Roll back to version ${v}`,
    });
    if (!ok) return;
    trigger.disabled = true;
    histError.hidden = true;
    try {
      const headers = currentVersion === null ? {} : { 'If-Match': `"${currentVersion}"` };
      const r = await request('POST', `/acl/versions/${seg(v)}/restore`, { query: scopeQuery(sc), headers, signal: ctx.signal });
      ctx.flash(`Version ${v} restored as version ${str(r.data && r.data.version)}.`);
      await load();
    } catch (e) {
      if (!(await restoreConflict(e, '/acl', 'acl', sc, ctx.signal, histError, load))) showHistError(e);
      trigger.disabled = false;
    }
  }


  function fillPickers() {
    const options = [...versions].reverse().map((item) => ({
      value: str(item.version), label: `${str(item.version)}${item.version === currentVersion ? ' (current)' : ''}`,
    }));
    const keepFrom = fromSel.value;
    const keepTo = toSel.value;
    fromSel.replaceChildren(...options.map((o) => h('option', { value: o.value }, o.label)));
    toSel.replaceChildren(...options.map((o) => h('option', { value: o.value }, o.label)));
    toSel.value = keepTo || (options[0] ? options[0].value : '');
    fromSel.value = keepFrom || (options[1] ? options[1].value : toSel.value);
    compareSection.hidden = versions.length < 1;
  }

  async function load() {
    histError.hidden = true;
    if (!sc.team || !sc.environment) {
      tableSlot.replaceChildren(h('p', { class: 'muted' }, 'Choose a team and environment.'));
      compareSection.hidden = true;
      return;
    }
    try {
      const [cur, all] = await Promise.all([api.get('/acl', scopeQuery(sc), { signal: ctx.signal }), listVersions('/acl', sc, ctx.signal)]);
      currentVersion = cur ? cur.version : null;
      versions = all;
      const { wrap, tbody } = makeTable(['Version', 'Stored by', 'When', 'Restored from', 'Grants', 'Actions'],
        { caption: 'Policy versions', test: 'acl-history-table' });
      if (!versions.length) tbody.append(emptyRow(6, 'No version stored yet: the policy is the empty one (version 0).'));
      for (const item of [...versions].reverse()) {
        const v = str(item.version);
        const isCurrent = item.version === currentVersion;
        const viewBtn = btn('View', { class: 'btn-small', 'data-test': 'acl-history-view', 'data-version': v, 'aria-label': `View version ${v}` });
        viewBtn.addEventListener('click', () => view(v));
        let compareBtnRow = null;
        if (!isCurrent && currentVersion !== null) {
          compareBtnRow = btn('Compare with current', { class: 'btn-small', 'data-test': 'acl-history-compare-current', 'data-version': v, 'aria-label': `Compare version ${v} with the current version` });
          compareBtnRow.addEventListener('click', () => compare(v, String(currentVersion)));
        }
        const loadBtn = btn('Load into the editor', { class: 'btn-small', 'data-test': 'acl-history-load', 'data-version': v, 'aria-label': `Load version ${v} into the editor` });
        loadBtn.addEventListener('click', () => loadIntoEditor(v));
        let restoreBtn = null;
        if (canWrite && !isCurrent) {
          restoreBtn = btn('Roll back to this', { class: 'btn-small', 'data-test': 'acl-history-restore', 'data-version': v, 'aria-label': `Roll back to version ${v}` });
          restoreBtn.addEventListener('click', () => restore(v, restoreBtn));
        }
        tbody.append(h('tr', { 'data-test': 'acl-version-row', 'data-version': v },
          h('th', { scope: 'row' }, v, isCurrent ? h('span', { class: 'muted' }, ' (current)') : null),
          td(actorName(item.created_by)), td(fmtTime(item.created_at)),
          td(item.restored_from == null ? '—' : str(item.restored_from)), td(str(item.grants)),
          td(h('div', { class: 'button-row' }, viewBtn, compareBtnRow, loadBtn, restoreBtn))));
      }
      tableSlot.replaceChildren(wrap);
      fillPickers();
    } catch (e) {
      if (isAbort(e)) return;
      tableSlot.replaceChildren();
      ctx.error(e);
    }
  }

  ctx.root.append(
    ctx.heading('ACL history'),
    scopeBar(ctx, sc, 'history', () => {
      ctx.clearError();
      viewSection.hidden = true;
      compareResult.replaceChildren();
      cache.clear();
      load();
    }),
    histError,
    h('section', { class: 'panel', 'aria-labelledby': 'acl-versions-h' }, h('h2', { id: 'acl-versions-h' }, 'Versions, newest first'), tableSlot),
    compareSection,
    viewSection);
  load().then(() => {
    const v = ctx.params.get('v');
    if (v && /^\d+$/.test(v)) view(v);
  });
}
