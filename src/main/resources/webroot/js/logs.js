// The audit log (GET /api/v1/audit, newest first) and node events (GET /api/v1/events, oldest first).

import { h, td, badge, fmtTime, str, link, nodeHref } from './ui.js';
import { listView } from './listview.js';

const ACTIONS = [
  'token.create', 'token.list', 'token.read', 'token.revoke', 'token.rotate', 'audit.read',
  'node.enroll', 'node.list', 'node.read', 'node.retag', 'node.delete', 'node.heartbeat', 'node.services',
  'node.ingress', 'node.rekey', 'node.move_relay', 'node.drain_ingress', 'operation.list', 'operation.read',
  'operation.succeeded', 'operation.failed', 'operation.expired', 'relay.list', 'acl.read', 'acl.update',
  'acl.rollback', 'acl.preview', 'event.list',
];
const EVENT_TYPES = ['node.stale', 'node.online', 'node.policy_drift', 'node.enroll_unconfirmed'];

function compact(v) {
  if (v === null || v === undefined) return h('span', { class: 'muted' }, '—');
  return h('code', { class: 'details' }, str(v));
}

function auditRow(ev) {
  const actor = ev.actor && typeof ev.actor === 'object' ? ev.actor : {};
  const target = ev.target && typeof ev.target === 'object' ? ev.target : null;
  let targetCell = h('span', { class: 'muted' }, '—');
  if (target) {
    const text = `${str(target.type)} ${target.id == null ? '(none)' : str(target.id)}`;
    targetCell = target.type === 'node' && typeof target.id === 'string'
      ? link(nodeHref(target.id), text)
      : h('span', {}, text);
  }
  return h('tr', {
    'data-test': 'audit-row', 'data-action': str(ev.action), 'data-actor-type': str(actor.type),
    'data-outcome': str(ev.outcome), 'data-event-id': str(ev.id),
  },
  td(fmtTime(ev.at)),
  td(badge(str(actor.type), { class: 'badge-plain' }), ' ', h('span', { title: str(actor.id) }, str(actor.name) || str(actor.id))),
  td(h('span', { class: 'mono' }, str(ev.action))),
  td(targetCell),
  td(badge(str(ev.outcome))),
  td(ev.source_ip == null ? h('span', { class: 'muted' }, '—') : h('span', { class: 'mono' }, str(ev.source_ip))),
  td(h('span', { class: 'mono small' }, str(ev.request_id))),
  td(`${str(ev.team)} / ${str(ev.environment)}`),
  td(compact(ev.details)));
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
    filters: [
      { key: 'actor_id', label: 'Actor id', kind: 'text', placeholder: 'tok_… or nd_…' },
      { key: 'action', label: 'Action', kind: 'text', placeholder: 'token.create', datalist: ACTIONS },
      { key: 'since', label: 'Since (your local time)', kind: 'datetime' },
    ],
  });
  ctx.root.append(ctx.heading('Audit log'), h('p', { class: 'muted' }, 'Newest first. Successful reads are not recorded; changes, denials and operation results are.'), view.element);
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
    td(nid ? link(nodeHref(nid), str(node.name) || nid, { title: nid }) : '—'),
    td(`${str(ev.team)} / ${str(ev.environment)}`),
    td(fmtTime(ev.last_heartbeat, 'none')),
    td(Object.keys(details).length ? compact(details) : h('span', { class: 'muted' }, '—')));
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
    filters: [
      { key: 'type', label: 'Type', kind: 'select', anyLabel: 'Any type', options: EVENT_TYPES },
      { key: 'node_id', label: 'Node id', kind: 'text', placeholder: 'nd_…' },
      { key: 'since', label: 'Since (your local time)', kind: 'datetime' },
    ],
  });
  ctx.root.append(ctx.heading('Events'),
    h('p', { class: 'muted' }, 'Oldest first (use "Since" to start later). Nodes going stale and online again, policy drift, enrollments never confirmed by a heartbeat.'),
    view.element);
}
