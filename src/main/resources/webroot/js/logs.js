// The audit log (GET /api/v1/audit) and node events (GET /api/v1/events?order=newest): newest first, live.

import { h, td, badge, fmtTime, str, link, nodeHref } from './ui.js';
import { listView } from './listview.js';

const ACTIONS = [
  'token.create', 'token.list', 'token.read', 'token.revoke', 'token.rotate', 'audit.read',
  'node.enroll', 'node.list', 'node.read', 'node.retag', 'node.delete', 'node.heartbeat', 'node.services',
  'node.ingress', 'node.rekey', 'node.move_relay', 'node.drain_ingress', 'operation.list', 'operation.read',
  'operation.succeeded', 'operation.failed', 'operation.expired', 'relay.list', 'acl.read', 'acl.update',
  'acl.rollback', 'acl.preview', 'event.list', 'session.login', 'session.logout', 'user.create', 'user.update',
];
const EVENT_TYPES = ['node.stale', 'node.online', 'node.policy_drift', 'node.enroll_unconfirmed'];

/** Collapsed details: a <details> whose summary names the keys, the JSON inside. */
function detailsCell(v, test) {
  if (v === null || v === undefined || (typeof v === 'object' && !Object.keys(v).length)) return h('span', { class: 'muted' }, '—');
  const keys = v && typeof v === 'object' && !Array.isArray(v) ? Object.keys(v) : [];
  const label = keys.length ? keys.join(', ') : 'value';
  return h('details', { class: 'details-cell', 'data-test': test },
    h('summary', {}, label.length > 40 ? `${label.slice(0, 38)}…` : label),
    h('pre', { class: 'json details-json' }, JSON.stringify(v, null, 2)));
}

/** A name with its id beside it (smaller); the id alone when no name is known. */
function named(name, id, test, href = null) {
  const n = str(name);
  const i = str(id);
  const main = n || i || '—';
  const first = href ? link(href, main) : h('span', { class: n ? 'log-name' : 'mono' }, main);
  return h('span', { class: 'named', 'data-test': test },
    first, n && i && n !== i ? h('span', { class: 'mono small muted log-id' }, i) : null);
}

function auditRow(ev) {
  const actor = ev.actor && typeof ev.actor === 'object' ? ev.actor : {};
  const target = ev.target && typeof ev.target === 'object' ? ev.target : null;
  let targetCell = h('span', { class: 'muted' }, '—');
  if (target) {
    const href = target.type === 'node' && typeof target.id === 'string' ? nodeHref(target.id) : null;
    targetCell = [badge(str(target.type), { class: 'badge-plain' }), ' ',
      target.id == null && !target.name ? h('span', { class: 'muted' }, '(none)') : named(target.name, target.id, 'audit-target', href)];
  }
  return h('tr', {
    'data-test': 'audit-row', 'data-action': str(ev.action), 'data-actor-type': str(actor.type),
    'data-outcome': str(ev.outcome), 'data-event-id': str(ev.id),
  },
  td(fmtTime(ev.at)),
  td(badge(str(actor.type), { class: 'badge-plain' }), ' ', named(actor.name, actor.id, 'audit-actor')),
  td(h('span', { class: 'mono' }, str(ev.action))),
  td(targetCell),
  td(badge(str(ev.outcome))),
  td(ev.source_ip == null ? h('span', { class: 'muted' }, '—') : h('span', { class: 'mono', 'data-test': 'audit-source-ip' }, str(ev.source_ip))),
  td(h('span', { class: 'mono log-request' }, str(ev.request_id))),
  td(`${str(ev.team)} / ${str(ev.environment)}`),
  td(detailsCell(ev.details, 'audit-details')));
}

export function renderAudit(ctx) {
  ctx.setTitle('Audit log');
  const view = listView(ctx, {
    path: '/audit',
    prefix: 'audit',
    caption: 'Audit log',
    tableTest: 'audit-table',
    columns: ['Time', 'Actor', 'Action', 'Target', 'Outcome', 'Source IP', 'Request id', 'Team / environment', 'Details'],
    row: auditRow,
    empty: 'No audit events match these filters.',
    pollMs: 5000,
    filters: [
      { key: 'actor_name', label: 'Actor name (whole, exact)', kind: 'text', placeholder: 'alice or ci-deploy' },
      { key: 'actor_id', label: 'Actor id', kind: 'text', placeholder: 'tok_… or usr_…' },
      { key: 'action', label: 'Action', kind: 'text', placeholder: 'token.create', datalist: ACTIONS },
      { key: 'since', label: 'Since (your local time)', kind: 'datetime' },
    ],
  });
  ctx.root.append(ctx.heading('Audit log'), h('p', { class: 'muted' }, 'Newest first, live. Successful reads are not recorded; changes, denials and operation results are.'), view.element);
}

function eventRow(ev) {
  const node = ev.node && typeof ev.node === 'object' ? ev.node : {};
  const nid = str(node.id);
  const details = {};
  for (const [k, v] of Object.entries(ev)) {
    if (!['id', 'at', 'type', 'node', 'team', 'environment', 'last_heartbeat'].includes(k)) details[k] = v;
  }
  return h('tr', { 'data-test': 'event-row', 'data-type': str(ev.type), 'data-node-id': nid, 'data-event-id': str(ev.id) },
    td(fmtTime(ev.at)),
    td(badge(str(ev.type))),
    td(nid ? named(node.name, nid, 'event-node', nodeHref(nid)) : '—'),
    td(`${str(ev.team)} / ${str(ev.environment)}`),
    td(fmtTime(ev.last_heartbeat, 'none')),
    td(detailsCell(Object.keys(details).length ? details : null, 'event-details')));
}

export function renderEvents(ctx) {
  ctx.setTitle('Events');
  const view = listView(ctx, {
    path: '/events',
    prefix: 'events',
    caption: 'Node events',
    tableTest: 'events-table',
    columns: ['Time', 'Type', 'Node', 'Team / environment', 'Last heartbeat', 'Details'],
    row: eventRow,
    empty: 'No events match these filters.',
    pollMs: 5000,
    // newest first unless the order filter says oldest (the API's default stays oldest first)
    fixedQuery: () => ({ order: 'newest' }),
    filters: [
      { key: 'order', label: 'Order', kind: 'select', anyLabel: 'Newest first', options: [['oldest', 'Oldest first']] },
      { key: 'type', label: 'Type', kind: 'select', anyLabel: 'Any type', options: EVENT_TYPES },
      { key: 'node_name', label: 'Node name (whole, exact)', kind: 'text', placeholder: 'web-1' },
      { key: 'node_id', label: 'Node id', kind: 'text', placeholder: 'nd_…' },
      { key: 'since', label: 'Since (your local time)', kind: 'datetime' },
    ],
  });
  ctx.root.append(ctx.heading('Events'),
    h('p', { class: 'muted' }, 'Newest first, live: new events appear at the top. Nodes going stale and online again, policy drift, enrollments never confirmed by a heartbeat.'),
    view.element);
}
