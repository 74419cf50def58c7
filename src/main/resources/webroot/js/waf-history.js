// WAF history: the traffic policy's versions (GET /waf/versions, oldest first from the server, shown
// newest first), one version's document (GET /waf/versions/{v}), loading a version into the editor (as
// the editor's draft, after asking when that replaces unsaved edits), and restore
// (POST /waf/versions/{v}/restore with If-Match of the current version, after a confirmation).

import { api, request, can, seg, isAbort, ApiError } from './api.js';
import { h, btn, td, str, fmtTime, pre, makeTable, emptyRow, confirmDialog } from './ui.js';
import { listVersions, restoreConflict, scopeOf, scopeQuery, scopeHash, scopeBar, actorName, readDraft, writeDraft } from './acl-common.js';
import { loadStyles } from './acl-code.js';
import { WAF_PAGES, DRAFT, docText, modeBadge } from './waf-common.js';

export function renderWafHistory(ctx) {
  ctx.setTitle('WAF history');
  loadStyles().catch(() => { /* the page reads without them */ });
  const canWrite = can('waf:write');
  const sc = scopeOf(ctx);
  let currentVersion = null;
  const cache = new Map(); // version -> its policy (versions never change)

  const histError = h('div', { class: 'form-error', 'data-test': 'waf-history-error', role: 'alert', hidden: true });
  const tableSlot = h('div', { class: 'slot' });
  const viewTitle = h('h2', { id: 'waf-view-h' }, 'Version');
  const viewMeta = h('p', { class: 'muted', 'data-test': 'waf-history-meta' });
  const viewPre = h('div', { 'data-test': 'waf-history-policy' });
  const viewSection = h('section', { class: 'panel', 'aria-labelledby': 'waf-view-h', hidden: true }, viewTitle, viewMeta, viewPre);

  function showHistError(e) {
    if (isAbort(e) || (e instanceof ApiError && e.handled)) return;
    const nodes = [h('p', { class: 'problem-detail' }, e.message)];
    if (e instanceof ApiError && e.errors.length) {
      nodes.push(h('ul', { class: 'problem-errors' }, e.errors.map((x) => h('li', { 'data-test': 'waf-error', 'data-field': x.field }, `${x.field}: ${x.message}`))));
    }
    histError.replaceChildren(...nodes);
    histError.hidden = false;
  }

  async function fetchVersion(v) {
    const key = String(v);
    if (!cache.has(key)) cache.set(key, await api.get(`/waf/versions/${seg(key)}`, scopeQuery(sc), { signal: ctx.signal }));
    return cache.get(key);
  }

  async function view(v) {
    try {
      const p = await fetchVersion(v);
      viewTitle.textContent = `Version ${str(p.version)}`;
      viewMeta.replaceChildren('Mode ', modeBadge(p.mode, 'waf-history-mode'), ' · stored ', fmtTime(p.created_at), ` by ${actorName(p.created_by)}`,
        p.restored_from != null ? `, restored from version ${str(p.restored_from)}` : '', '.');
      // it scrolls when long: focusable, named, so that a keyboard can scroll it
      viewPre.replaceChildren(pre(p.policy || {}, { tabindex: '0', role: 'region', 'aria-label': `Document of version ${str(p.version)}` }));
      viewSection.hidden = false;
      ctx.setHashQuiet(scopeHash(sc, { v }));
      viewTitle.setAttribute('tabindex', '-1');
      viewTitle.focus();
    } catch (e) {
      showHistError(e);
    }
  }

  /** Version v into the editor: it becomes the editor's draft (asking first when that replaces unsaved edits), then the policy page opens. */
  async function loadIntoEditor(v) {
    try {
      const [p, cur] = await Promise.all([fetchVersion(v), api.get('/waf', scopeQuery(sc), { signal: ctx.signal })]);
      const draft = readDraft(sc, DRAFT);
      if (draft && (draft.text !== docText(cur) || draft.base !== cur.version)) {
        const ok = await confirmDialog({
          title: 'Discard your edits?',
          message: [`The editor holds unsaved edits${draft.from != null ? ` (version ${draft.from}, loaded from the history)` : ''}.`,
            `Loading version ${v} replaces them.`],
          confirmLabel: `Discard them and load version ${v}`,
          danger: true,
        });
        if (!ok) return;
      }
      writeDraft(sc, { text: docText(p), base: cur.version, from: Number(v) }, DRAFT);
      const qs = scopeHash(sc).toString();
      location.hash = WAF_PAGES.base + (qs ? '?' + qs : '');
    } catch (e) {
      showHistError(e);
    }
  }

  async function restore(v, trigger) {
    const ok = await confirmDialog({
      title: 'Restore the traffic policy',
      message: [`Store the document of version ${v} again, as a new version of ${sc.team} / ${sc.environment}?`,
        'It is checked again (its rules compiled, its tests run) before it is stored; the history is kept. The ingress nodes apply it in its mode.'],
      confirmLabel: `Restore version ${v}`,
    });
    if (!ok) return;
    trigger.disabled = true;
    histError.hidden = true;
    try {
      const headers = currentVersion === null ? {} : { 'If-Match': `"${currentVersion}"` };
      const r = await request('POST', `/waf/versions/${seg(v)}/restore`, { query: scopeQuery(sc), headers, signal: ctx.signal });
      ctx.flash(`Version ${v} restored as version ${str(r.data && r.data.version)} (mode ${str(r.data && r.data.mode)}).`);
      await load();
    } catch (e) {
      if (!(await restoreConflict(e, '/waf', 'waf', sc, ctx.signal, histError, load))) showHistError(e);
      trigger.disabled = false;
    }
  }


  async function load() {
    histError.hidden = true;
    if (!sc.team || !sc.environment) {
      tableSlot.replaceChildren(h('p', { class: 'muted' }, 'Choose a team and environment.'));
      return;
    }
    try {
      const [cur, versions] = await Promise.all([api.get('/waf', scopeQuery(sc), { signal: ctx.signal }), listVersions('/waf', sc, ctx.signal)]);
      currentVersion = cur ? cur.version : null;
      const { wrap, tbody } = makeTable(['Version', 'Mode', 'Stored by', 'When', 'Restored from', 'Actions'],
        { caption: 'Traffic policy versions', test: 'waf-history-table' });
      if (!versions.length) tbody.append(emptyRow(6, 'No version stored yet: every request passes (version 0).'));
      for (const item of [...versions].reverse()) {
        const v = str(item.version);
        const isCurrent = item.version === currentVersion;
        const viewBtn = btn('View', { class: 'btn-small', 'data-test': 'waf-history-view', 'data-version': v, 'aria-label': `View version ${v}` });
        viewBtn.addEventListener('click', () => view(v));
        const loadBtn = btn('Load into the editor', { class: 'btn-small', 'data-test': 'waf-history-load', 'data-version': v, 'aria-label': `Load version ${v} into the editor` });
        loadBtn.addEventListener('click', () => loadIntoEditor(v));
        let restoreBtn = null;
        if (canWrite && !isCurrent) {
          restoreBtn = btn('Restore', { class: 'btn-small', 'data-test': 'waf-history-restore', 'data-version': v, 'aria-label': `Restore version ${v}` });
          restoreBtn.addEventListener('click', () => restore(v, restoreBtn));
        }
        tbody.append(h('tr', { 'data-test': 'waf-version-row', 'data-version': v, 'data-mode': str(item.mode) },
          h('th', { scope: 'row' }, v, isCurrent ? h('span', { class: 'muted' }, ' (current)') : null),
          td(modeBadge(item.mode, null, false)), td(actorName(item.created_by)), td(fmtTime(item.created_at)),
          td(item.restored_from == null ? '—' : str(item.restored_from)),
          td(h('div', { class: 'button-row' }, viewBtn, loadBtn, restoreBtn))));
      }
      tableSlot.replaceChildren(wrap);
    } catch (e) {
      if (isAbort(e)) return;
      tableSlot.replaceChildren();
      ctx.error(e);
    }
  }

  ctx.root.append(
    ctx.heading('WAF history'),
    scopeBar(ctx, sc, 'history', () => {
      ctx.clearError();
      viewSection.hidden = true;
      cache.clear();
      load();
    }, WAF_PAGES),
    histError,
    h('section', { class: 'panel', 'aria-labelledby': 'waf-versions-h' }, h('h2', { id: 'waf-versions-h' }, 'Versions, newest first'), tableSlot),
    viewSection);
  load().then(() => {
    const v = ctx.params.get('v');
    if (v && /^\d+$/.test(v)) view(v);
  });
}
