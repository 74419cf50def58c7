// Bulk actions on the Nodes page: row checkboxes, "select all on this page", "all N matching the
// filter", and a bar that re-tags, re-keys or deletes the selection through POST /api/v1/nodes/bulk
// (each behind a confirmation stating how many nodes), then shows the per-node results. "All matching"
// resolves the filter in a dry run first and acts on the ids the dialog stated.

import { api, isAbort } from './api.js';
import { h, btn, td, badge, field, errorBox, showFormError, clearFormError, confirmDialog, link, nodeHref, str } from './ui.js';

/** The most nodes one bulk request takes (API.md §8). */
export const BULK_MAX = 500;
const FILTER_KEYS = ['status', 'tag', 'name_prefix', 'agent_version', 'team', 'environment', 'address', 'policy_sync'];

/** "web, tag:db" → ['tag:web', 'tag:db']. */
export function parseTags(text) {
  return String(text).split(/[\s,]+/).map((t) => t.trim()).filter(Boolean).map((t) => (t.startsWith('tag:') ? t : `tag:${t}`));
}

/**
 * opts: filter() → the list's current query (its filters are sent when "all matching" is chosen),
 * reload() → refresh the list after an action.
 */
export function bulkBar(ctx, { filter, reload }) {
  const selected = new Map(); // id → name
  let pageItems = [];
  let total = null;
  let allMatching = false;

  const pageCheckbox = h('input', { type: 'checkbox', 'data-test': 'nodes-select-page', 'aria-label': 'Select all nodes on this page' });
  pageCheckbox.addEventListener('change', () => {
    allMatching = false;
    for (const n of pageItems) {
      if (pageCheckbox.checked) selected.set(str(n.id), str(n.name));
      else selected.delete(str(n.id));
    }
    syncBoxes();
    render();
  });

  const count = h('strong', { 'data-test': 'bulk-count', 'aria-live': 'polite' });
  const allBtn = btn('', { 'data-test': 'bulk-select-all' });
  allBtn.addEventListener('click', () => {
    allMatching = true;
    syncBoxes();
    render();
  });
  const clearBtn = btn('Clear selection', { 'data-test': 'bulk-clear' });
  clearBtn.addEventListener('click', () => clear());
  const tagsInput = h('input', { type: 'text', 'data-test': 'bulk-tags', placeholder: 'tag:web tag:canary', autocomplete: 'off', spellcheck: 'false' });
  const retagBtn = btn('Re-tag', { 'data-test': 'bulk-retag' });
  const rekeyBtn = btn('Re-key', { 'data-test': 'bulk-rekey' });
  const deleteBtn = h('button', { type: 'button', class: ['btn', 'btn-danger'], 'data-test': 'bulk-delete' }, 'Delete');
  const error = errorBox('bulk-error');
  const results = h('div', { class: 'bulk-results', 'data-test': 'bulk-results-panel' });
  const bar = h('div', { class: 'bulk-bar', role: 'region', 'aria-label': 'Bulk actions', 'data-test': 'bulk-bar', hidden: true },
    h('div', { class: 'bulk-selection' }, count, ' ', allBtn, ' ', clearBtn),
    h('div', { class: 'bulk-actions' }, field('Tags for re-tag', tagsInput, 'Replaces every tag of each node; empty removes them all'),
      retagBtn, rekeyBtn, deleteBtn),
    error);
  const element = h('div', { class: 'bulk' }, bar, results);

  function size() {
    return allMatching ? total : selected.size;
  }

  function nodesText(n) {
    return `${Number(n).toLocaleString('en-US')} node${n === 1 ? '' : 's'}`;
  }

  function render() {
    const n = size();
    bar.hidden = !n;
    count.textContent = allMatching ? `All ${nodesText(n)} matching the filter selected` : `${nodesText(n)} selected`;
    const everyOnPage = pageItems.length > 0 && pageItems.every((it) => selected.has(str(it.id)));
    const more = typeof total === 'number' && total > pageItems.length;
    allBtn.hidden = allMatching || !everyOnPage || !more;
    if (more) {
      allBtn.disabled = total > BULK_MAX;
      allBtn.textContent = total > BULK_MAX
        ? `${nodesText(total)} match: a bulk action takes at most ${BULK_MAX}`
        : `Select all ${nodesText(total)} matching the filter`;
    }
  }

  function syncBoxes() {
    for (const box of element.ownerDocument.querySelectorAll("[data-test='node-select']")) {
      box.checked = allMatching || selected.has(box.dataset.nodeId);
    }
    pageCheckbox.checked = allMatching || (pageItems.length > 0 && pageItems.every((it) => selected.has(str(it.id))));
  }

  function clear() {
    selected.clear();
    allMatching = false;
    syncBoxes();
    render();
  }

  function checkbox(id, name) {
    const box = h('input', {
      type: 'checkbox', 'data-test': 'node-select', 'data-node-id': id, 'data-focus-key': `select:${id}`,
      'aria-label': `Select ${name}`, checked: allMatching || selected.has(id),
    });
    box.addEventListener('change', () => {
      if (allMatching) {
        // leaving "all matching": the selection becomes this page's nodes
        allMatching = false;
        for (const it of pageItems) selected.set(str(it.id), str(it.name));
      }
      if (box.checked) selected.set(id, name);
      else selected.delete(id);
      syncBoxes();
      render();
    });
    return box;
  }

  function page(items, data) {
    pageItems = items;
    total = data && typeof data.total === 'number' ? data.total : null;
    syncBoxes();
    render();
  }

  function body(action) {
    const b = { action };
    if (action === 'retag') b.tags = parseTags(tagsInput.value);
    if (allMatching) {
      const q = filter();
      b.filter = {};
      for (const k of FILTER_KEYS) if (q[k] !== undefined && q[k] !== '') b.filter[k] = String(q[k]);
    } else {
      b.ids = [...selected.keys()];
    }
    return b;
  }

  function setBusy(busy) {
    for (const x of [retagBtn, rekeyBtn, deleteBtn]) x.disabled = busy;
  }

  /**
   * "All matching the filter": the server resolves the filter once, in a dry run, and the dialog
   * states what it found (how many, the first names); the action then names exactly those ids, so
   * it covers what was confirmed (a node gone meanwhile comes back not_found). Null when cancelled
   * or refused (the error shown).
   */
  async function resolveFilter(b) {
    setBusy(true);
    try {
      const dry = await api.post('/nodes/bulk', { ...b, dry_run: true }, { signal: ctx.signal });
      const found = (Array.isArray(dry && dry.results) ? dry.results : []).filter((r) => r.outcome === 'ok');
      return found.map((r) => ({ id: str(r.id), name: str(r.name) || str(r.id) }));
    } catch (e) {
      if (!isAbort(e)) showFormError(error, e);
      return null;
    } finally {
      setBusy(false);
    }
  }

  async function run(action, { title, verb, danger, detail }) {
    clearFormError(error);
    let n = size();
    let b = body(action);
    let resolved = null;
    if (allMatching) {
      if (!Object.keys(b.filter).length) {
        showFormError(error, new Error('Set a filter first: "all matching" without a filter would be every node.'));
        return;
      }
      const found = await resolveFilter(b);
      if (!found) return;
      if (!found.length) {
        showFormError(error, new Error('No node matches the filter now: nothing to do.'));
        return;
      }
      n = found.length;
      const first = found.slice(0, 5).map((f) => f.name).join(', ');
      resolved = h('p', { 'data-test': 'bulk-confirm-resolved', 'data-count': String(n) },
        `The filter matches ${nodesText(n)} now: ${first}${n > 5 ? `, and ${n - 5} more` : ''}. Exactly these are acted on.`);
      b = { action: b.action, ...(b.tags ? { tags: b.tags } : {}), ids: found.map((f) => f.id) };
    }
    const ok = await confirmDialog({
      title: `${title} ${nodesText(n)}?`,
      message: [`${verb} ${nodesText(n)}${resolved ? ' (every node matching the current filter)' : ''}.`, resolved, detail],
      confirmLabel: `${title} ${nodesText(n)}`,
      danger,
    });
    if (!ok) return;
    setBusy(true);
    try {
      const answer = await api.post('/nodes/bulk', b, { signal: ctx.signal });
      showResults(answer);
      clear();
      reload();
    } catch (e) {
      if (!isAbort(e)) showFormError(error, e);
    } finally {
      setBusy(false);
    }
  }

  function showResults(answer) {
    const rows = Array.isArray(answer && answer.results) ? answer.results : [];
    const tbody = h('tbody', {}, rows.map((r) => h('tr', { 'data-test': 'bulk-result-row', 'data-node-id': str(r.id), 'data-outcome': str(r.outcome) },
      h('th', { scope: 'row' }, r.outcome === 'not_found' ? h('span', { class: 'mono' }, str(r.id)) : link(nodeHref(str(r.id)), str(r.name) || str(r.id))),
      td(badge(str(r.outcome))),
      td(r.status == null ? '' : str(r.status)),
      td(str(r.detail)),
      td(r.operation_id ? h('span', { class: 'mono' }, str(r.operation_id)) : ''))));
    const summary = `${str(answer.action)}: ${answer.ok} of ${answer.total} done`;
    const close = btn('Dismiss results', { 'data-test': 'bulk-results-dismiss' });
    close.addEventListener('click', () => results.replaceChildren());
    results.replaceChildren(
      h('h2', { 'data-test': 'bulk-summary', tabindex: '-1' }, summary),
      h('div', { class: 'table-wrap', tabindex: '0', role: 'region', 'aria-label': 'Bulk results' },
        h('table', { class: 'data', 'data-test': 'bulk-results' },
          h('caption', { class: 'visually-hidden' }, 'Result per node'),
          h('thead', {}, h('tr', {}, ['Node', 'Outcome', 'HTTP status', 'Detail', 'Operation'].map((c) => h('th', { scope: 'col' }, c)))),
          tbody)),
      close);
    results.querySelector('h2').focus();
  }

  retagBtn.addEventListener('click', () => {
    const tags = parseTags(tagsInput.value);
    run('retag', {
      title: 'Re-tag',
      verb: 'Set the tags of',
      danger: false,
      detail: tags.length ? `New tags: ${tags.join(', ')} (replacing their current tags).` : 'No tags given: every tag of these nodes is removed.',
    });
  });
  rekeyBtn.addEventListener('click', () => run('rekey', {
    title: 'Re-key', verb: 'Ask for a new key pair on', danger: false,
    detail: 'Each agent makes a new key pair at its next heartbeat; an operation per node tracks it.',
  }));
  deleteBtn.addEventListener('click', () => run('delete', {
    title: 'Delete', verb: 'Delete', danger: true,
    detail: 'Their agent credentials are revoked and they leave every peer list. This cannot be undone.',
  }));

  return { element, pageCheckbox, checkbox, page };
}
