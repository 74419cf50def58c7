// The overview's operations panel: the operations in flight and the ones that failed or expired in the
// last 24 h, five of each, newest first (GET /api/v1/operations, one keyset page each: the same cost at
// any size of the fleet), each linking to the Operations page filtered the same way.

import { api, serverNow } from './api.js';
import { h, link, nodeHref, str, badge, ageEl, renderIfChanged, refreshAges } from './ui.js';
import { targetText } from './operations.js';

const SHOWN = 5;
const DAY_MS = 24 * 3600 * 1000;

function opItem(op) {
  const id = str(op.id);
  const nodeId = str(op.node_id);
  return h('li', {
    'data-test': 'overview-op', 'data-op-id': id, 'data-op-kind': str(op.kind), 'data-op-status': str(op.status),
  },
  badge(str(op.status)), ' ', h('span', { class: 'mono' }, str(op.kind)), ' ', targetText(op), ' on ',
  nodeId ? link(nodeHref(nodeId), str(op.node_name) || nodeId, { 'data-test': 'overview-op-node', class: op.node_name ? null : 'mono small' })
    : h('span', { class: 'muted' }, '—'),
  ' ', h('span', { class: 'muted small' }, 'requested ', ageEl(op.requested_at)));
}

/** One of the two lists: its heading with a count, five items, a link to the filtered Operations page. */
function block(key, title, empty) {
  const count = h('span', { class: 'attention-count', 'data-test': `overview-ops-${key}-count` });
  const body = h('div', {});
  const el = h('div', { class: 'ops-block' }, h('h3', {}, title, ' ', count), body);
  return {
    el,
    show(items, more, total, href, allText) {
      count.textContent = typeof total === 'number' ? `(${total})` : `(${items.length}${more ? '+' : ''})`;
      renderIfChanged(body, { items, more, href }, () => [
        items.length
          ? h('ul', { class: 'plain-list attention-list', 'data-test': `overview-ops-${key}-list` }, items.map(opItem))
          : h('p', { class: 'muted', 'data-test': `overview-ops-${key}-list` }, empty),
        h('p', { class: 'attention-links' }, link(href, allText, { 'data-test': `overview-ops-${key}-all` })),
      ]);
      refreshAges(body);
    },
  };
}

/**
 * Fills `section` (the overview's `overview-ops-list` panel) and returns its refresh, called with the
 * cards' refresh: `update(overview, signal)`.
 */
export function opsPanel(section) {
  const open = block('open', 'In flight', 'No operation is in flight.');
  const failed = block('failed', 'Failed or expired in the last 24 h', 'None failed or expired in the last 24 h.');
  section.hidden = false;
  section.setAttribute('aria-labelledby', 'overview-ops-title');
  section.replaceChildren(
    h('h2', { id: 'overview-ops-title' }, 'Operations'),
    h('p', { class: 'hint' }, 'Re-keys, relay moves and ingress drains: those not confirmed yet, and those that did not succeed.'),
    open.el, failed.el);
  return {
    async update(overview, signal) {
      // the last 24 h by the server's clock, to the minute (the link stays the same between refreshes)
      const since = new Date(Math.floor((serverNow() - DAY_MS) / 60000) * 60000).toISOString();
      const [o, f] = await Promise.all([
        api.get('/operations', { status: 'open', limit: SHOWN }, { signal }),
        api.get('/operations', { status: 'failed,expired', since, limit: SHOWN }, { signal }),
      ]);
      const inFlight = overview && typeof overview.operations_in_flight === 'number' ? overview.operations_in_flight : undefined;
      const openItems = o && Array.isArray(o.items) ? o.items : [];
      open.show(openItems, Boolean(o && o.next_cursor), inFlight, '#/operations?status=open',
        inFlight === 1 ? 'See it in the operations list' : 'See all operations in flight');
      const failedItems = f && Array.isArray(f.items) ? f.items : [];
      failed.show(failedItems, Boolean(f && f.next_cursor), undefined,
        `#/operations?status=failed%2Cexpired&since=${encodeURIComponent(since)}`, 'See them all in the operations list');
    },
  };
}
