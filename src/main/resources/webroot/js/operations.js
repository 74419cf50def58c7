// Operations: every operation of the fleet the user may see (GET /api/v1/operations, newest first),
// live every 3 s, with filters in the hash (kind, status, node id, since, until).

import { h, td, badge, ageEl, str, link, nodeHref } from './ui.js';
import { listView } from './listview.js';

const KINDS = [['rekey', 'Re-key'], ['move_relay', 'Relay move'], ['drain_ingress', 'Ingress drain']];
const STATUSES = [
  ['open', 'Open (pending or delivered)'], ['pending', 'pending'], ['delivered', 'delivered'],
  ['succeeded', 'succeeded'], ['failed', 'failed'], ['expired', 'expired'],
];
const COLUMNS = ['Requested', 'Kind', 'Status', 'Node', 'Target and result', 'Requested by', 'Delivered', 'Completed'];
const POLL_MS = 3000;

/**
 * A compact local time: the time of day for today, else the date and time; the ISO value in `title`
 * and `datetime`; `empty` when there is none.
 */
export function shortTime(iso, empty = '—') {
  if (!iso || typeof iso !== 'string') return h('span', { class: 'muted' }, empty);
  const t = Date.parse(iso);
  if (!Number.isFinite(t)) return h('span', {}, iso);
  const d = new Date(t);
  const today = new Date().toDateString() === d.toDateString();
  const text = today
    ? d.toLocaleTimeString(undefined, { hour: '2-digit', minute: '2-digit', second: '2-digit' })
    : d.toLocaleString(undefined, { month: 'short', day: '2-digit', hour: '2-digit', minute: '2-digit' });
  return h('time', { datetime: iso, title: iso }, text);
}

function shortKey(k) {
  const s = str(k);
  return s.length > 12 ? `${s.slice(0, 10)}…` : s;
}

/** What the operation aims at, in words: "old key ab12…", "fra1 → ams1", "ingress web". */
export function targetText(op) {
  const t = op.target && typeof op.target === 'object' ? op.target : {};
  if (op.kind === 'rekey') return `old key ${shortKey(t.old_key)}`;
  if (op.kind === 'move_relay') return `${str(t.from) || '(none)'} → ${str(t.relay)}`;
  if (op.kind === 'drain_ingress') return `ingress ${str(t.name)}`;
  return str(op.target);
}

const RESULT_CHARS = 90;

/** The server's detail once completed (and the new key of a re-key unless the detail shows it), else nothing. */
export function resultText(op) {
  const r = op.result;
  if (!r || typeof r !== 'object') return '';
  const detail = str(r.detail);
  const key = str(r.new_key);
  return key && !detail.includes(key) ? `${detail}${detail ? ' · ' : ''}new key ${shortKey(key)}` : detail;
}

/** Long text cut to `n` characters; the whole of it in the title. */
function clipped(text, attrs) {
  return h('div', { ...attrs, title: text.length > RESULT_CHARS ? text : null },
    text.length > RESULT_CHARS ? `${text.slice(0, RESULT_CHARS - 1)}…` : text);
}

/** A select's options, plus the value of the hash when it is none of them (a list such as "failed,expired"). */
function withCurrent(options, current) {
  if (!current || options.some(([v]) => v === current)) return options;
  return [...options, [current, current]];
}

function operationRow(op) {
  const id = str(op.id);
  const nodeId = str(op.node_id);
  const by = op.requested_by && typeof op.requested_by === 'object' ? op.requested_by : {};
  const result = resultText(op);
  return h('tr', {
    'data-test': 'operation-row', 'data-op-id': id, 'data-op-kind': str(op.kind), 'data-op-status': str(op.status),
  },
  td(shortTime(op.requested_at), h('div', { class: 'muted small' }, ageEl(op.requested_at))),
  td(h('span', { class: 'mono' }, str(op.kind))),
  td(badge(str(op.status), { 'data-test': 'operation-status' })),
  td(nodeId
    ? link(nodeHref(nodeId), str(op.node_name) || nodeId, {
      class: op.node_name ? null : 'mono small', title: nodeId, 'data-test': 'operation-node-link', 'data-focus-key': `op-node:${id}`,
    })
    : h('span', { class: 'muted' }, '—')),
  td(h('div', {}, targetText(op)), result ? clipped(result, { class: 'muted small', 'data-test': 'operation-result' }) : null),
  td(h('span', { title: `${str(by.type)} ${str(by.id)}` }, str(by.name) || str(by.id))),
  td(shortTime(op.delivered_at)),
  td(shortTime(op.completed_at)));
}

export function renderOperations(ctx) {
  ctx.setTitle('Operations');
  const view = listView(ctx, {
    path: '/operations',
    prefix: 'operations',
    caption: 'Operations',
    tableTest: 'operations-table',
    columns: COLUMNS,
    row: operationRow,
    empty: 'No operation matches these filters.',
    pollMs: POLL_MS,
    sizes: [25, 50, 100, 200],
    defaultLimit: 50,
    filters: [
      {
        key: 'kind', label: 'Kind', kind: 'select', anyLabel: 'Any kind', options: withCurrent(KINDS, ctx.params.get('kind')),
      },
      {
        key: 'status', label: 'Status', kind: 'select', anyLabel: 'Any status', options: withCurrent(STATUSES, ctx.params.get('status')),
      },
      { key: 'node_id', label: 'Node id', kind: 'text', placeholder: 'nd_…' },
      { key: 'since', label: 'Requested since (your local time)', kind: 'datetime' },
      { key: 'until', label: 'Requested before (your local time)', kind: 'datetime' },
    ],
  });
  ctx.root.append(ctx.heading('Operations'),
    h('p', { class: 'muted' }, 'Re-keys, relay moves and ingress drains of every node you can see, newest first. '
      + 'Live: refreshed every 3 s. An open operation is pending (not sent yet) or delivered (sent to the node in a heartbeat answer); '
      + 'it expires at its deadline if the node does not report.'),
    view.element);
}
