// The node page's operations (GET /api/v1/nodes/{id}/operations, read 500 at a time until about 2,000,
// shown newest first): what was asked of the node (re-key, relay move, ingress drain), by whom, and what
// came of it. Rows are kept by operation id: a row changes only when its operation does.

import { api } from './api.js';
import { h, td, badge, fmtTime, str, makeTable, keyedRows } from './ui.js';
import { shortKey } from './node-peers.js';

function opTarget(op) {
  const t = op.target && typeof op.target === 'object' ? op.target : {};
  if (op.kind === 'rekey') return h('span', { title: str(t.old_key) }, `old key ${shortKey(t.old_key)}`);
  if (op.kind === 'move_relay') return `${str(t.from) || '(none)'} → ${str(t.relay)}`;
  if (op.kind === 'drain_ingress') return `ingress ${str(t.name)}`;
  return str(op.target);
}

function opResult(op) {
  const r = op.result;
  if (!r || typeof r !== 'object') return h('span', { class: 'muted' }, '—');
  const parts = [h('span', {}, str(r.detail))];
  if (r.new_key) parts.push(h('span', { class: 'muted', title: str(r.new_key) }, ` (new key ${shortKey(r.new_key)})`));
  const rep = r.reported;
  if (rep && typeof rep === 'object' && str(rep.detail) !== str(r.detail)) {
    parts.push(h('div', { class: 'muted' }, `agent said: ${str(rep.status)}${rep.detail ? ` — ${str(rep.detail)}` : ''}`));
  }
  return parts;
}

function actorText(a) {
  if (!a || typeof a !== 'object') return str(a);
  return h('span', { title: `${str(a.type)} ${str(a.id)}` }, str(a.name) || str(a.id));
}

function opRow(op) {
  return h('tr', {
    'data-test': 'node-operation', 'data-op-id': str(op.id), 'data-op-kind': str(op.kind), 'data-op-status': str(op.status),
  },
  td(fmtTime(op.requested_at)), td(str(op.kind)), td(badge(str(op.status))), td(opTarget(op)),
  td(actorText(op.requested_by)), td(fmtTime(op.delivered_at, '—')), td(fmtTime(op.completed_at, '—')),
  td(opResult(op)), td(h('span', { class: 'mono small' }, str(op.id))));
}

/**
 * The "Operations" section of the node at base (`/nodes/{id}`). Returns slot (the section's body:
 * "Loading…" until the first answer), load() (one refresh) and hasOpen() (whether the last load saw an
 * operation still pending or delivered: the page then refreshes faster).
 */
export function nodeOperations(ctx, base) {
  const slot = h('div', { class: 'slot' }, h('p', { class: 'muted' }, 'Loading…'));
  const opsTable = makeTable(
    ['Requested', 'Kind', 'Status', 'Target', 'Requested by', 'Delivered', 'Completed', 'Result', 'Id'],
    { caption: 'Operations', test: 'node-operations' });
  const opsNote = h('p', { class: 'muted small' }, 'Newest first. Operations expire at their deadline if the node does not report.');
  const showOps = keyedRows(opsTable.tbody, {
    keyOf: (op) => str(op.id), build: opRow, emptyText: 'No operations yet.', colspan: 9,
  });
  let openOps = false;

  async function load() {
    const all = [];
    let cursor = '';
    do {
      const d = await api.get(`${base}/operations`, { limit: 500, cursor: cursor || undefined }, { signal: ctx.signal });
      if (d && Array.isArray(d.items)) all.push(...d.items);
      cursor = d && typeof d.next_cursor === 'string' ? d.next_cursor : '';
    } while (cursor && all.length < 2000);
    openOps = all.some((o) => o.status === 'pending' || o.status === 'delivered');
    if (!slot.contains(opsTable.wrap)) slot.replaceChildren(opsTable.wrap, opsNote);
    showOps(all.reverse());
  }

  return { slot, load, hasOpen: () => openOps };
}
