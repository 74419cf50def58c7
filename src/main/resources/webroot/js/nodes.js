// Nodes: the inventory (GET /api/v1/nodes), live every 5 s, with filters and the order in the hash,
// the total, a CSV export, and bulk actions on selected nodes (POST /api/v1/nodes/bulk).

import { getPatiently, isAbort, currentUser, can } from './api.js';
import { h, btn, td, badge, chips, ageEl, link, nodeHref, str, download } from './ui.js';
import { listView } from './listview.js';
import { bulkBar } from './bulk.js';

const EXPORT_CAP = 10000;

/** "web" → "tag:web"; a value that already has the prefix is kept. */
export function normalizeTag(t) {
  const v = String(t).trim();
  if (!v) return '';
  return v.startsWith('tag:') ? v : `tag:${v}`;
}

export function agentVersion(node) {
  const t = node && node.telemetry;
  if (!t || typeof t !== 'object' || Array.isArray(t)) return '';
  return str(t.agent_version);
}

/**
 * What the panel can say of a stale node's relay connection and policy sync: nothing current (its
 * agent has not been heard since), so a neutral "unknown since <last heartbeat>" instead of the last
 * known "connected" / "current".
 */
export function unknownSince(heartbeat, attrs = {}) {
  const t = Date.parse(str(heartbeat));
  const when = Number.isFinite(t) ? new Date(t).toLocaleString() : 'never';
  return h('span', { ...attrs, class: ['badge', 'badge-neutral', attrs.class], title: str(heartbeat) }, `unknown since ${when}`);
}

/** Relay status and policy sync of a node as the inventory and the node page show them (truthful for stale nodes). */
export function liveBadge(n, value, test) {
  if (n && n.status === 'stale') return unknownSince(n.heartbeat, { 'data-test': test, 'data-stale': 'true' });
  return value ? badge(value, { 'data-test': test }) : '';
}

function nodeRow(n, { wideTeam, wideEnv, selection }) {
  const id = str(n.id);
  const status = str(n.status);
  const sync = n.policy_sync && typeof n.policy_sync === 'object' ? str(n.policy_sync.state) : '';
  const cells = [];
  if (selection) cells.push(td(selection.checkbox(id, str(n.name) || id)));
  cells.push(h('th', { scope: 'row' }, link(nodeHref(id), str(n.name) || id, { 'data-focus-key': `node:${id}`, 'data-test': 'node-link' })));
  if (wideTeam) cells.push(td(h('span', { 'data-test': 'node-row-team' }, str(n.team))));
  if (wideEnv) cells.push(td(h('span', { 'data-test': 'node-row-environment' }, str(n.environment))));
  cells.push(
    td(badge(status, { 'data-test': 'node-row-status' })),
    td(ageEl(n.heartbeat)),
    td(h('span', { class: 'mono', 'data-test': 'node-row-address' }, str(n.address))),
    td(chips(n.tags)),
    td(n.relay ? str(n.relay) : h('span', { class: 'muted' }, 'none'), ' ', liveBadge(n, str(n.relay_status), 'node-row-relay')),
    td(agentVersion(n) || h('span', { class: 'muted' }, '—')),
    td(liveBadge(n, sync, 'node-row-sync')));
  return h('tr', { 'data-test': 'node-row', 'data-node-id': id, 'data-status': status }, cells);
}

/** "N nodes", "about N nodes" (an estimate past 10,000), or '' when the list has no total. */
export function totalText(data) {
  if (!data || typeof data.total !== 'number') return '';
  const n = data.total.toLocaleString('en-US');
  const noun = data.total === 1 ? 'node' : 'nodes';
  return data.total_estimated ? `about ${n} ${noun}` : `${n} ${noun}`;
}

// ---- CSV ----

const CSV_FIELDS = [
  ['id', (n) => n.id], ['name', (n) => n.name], ['team', (n) => n.team], ['environment', (n) => n.environment],
  ['status', (n) => n.status], ['heartbeat', (n) => n.heartbeat], ['address', (n) => n.address],
  ['tags', (n) => (Array.isArray(n.tags) ? n.tags.join(' ') : '')], ['relay', (n) => n.relay],
  ['relay_status', (n) => n.relay_status], ['agent_version', agentVersion],
  ['policy_sync', (n) => (n.policy_sync ? n.policy_sync.state : '')],
  ['endpoints', (n) => (Array.isArray(n.endpoints) ? n.endpoints.join(' ') : '')],
  ['public_key', (n) => n.public_key], ['created_at', (n) => n.created_at], ['updated_at', (n) => n.updated_at],
];

/** One CSV cell (RFC 4180), with formula-looking values defused for spreadsheets. */
function csvCell(v) {
  let s = str(v);
  if (/^[=+\-@\t\r]/.test(s)) s = `'${s}`;
  if (/[",\r\n]/.test(s)) s = `"${s.replace(/"/g, '""')}"`;
  return s;
}

export function toCsv(nodes) {
  const lines = [CSV_FIELDS.map(([name]) => name).join(',')];
  for (const n of nodes) lines.push(CSV_FIELDS.map(([, get]) => csvCell(get(n))).join(','));
  return lines.join('\r\n') + '\r\n';
}

export function renderNodes(ctx) {
  ctx.setTitle('Nodes');
  const exportBtn = btn('Export CSV', { 'data-test': 'nodes-export' });
  const exportStatus = h('span', { class: 'muted', 'data-test': 'nodes-export-status', 'aria-live': 'polite' });
  const totalLabel = h('strong', { class: 'nodes-total', 'data-test': 'nodes-total', 'aria-live': 'polite' });
  const user = currentUser() || {};
  // team and environment columns and filters: for people who see more than one
  const wideTeam = user.team === '*';
  const wideEnv = user.environment === '*';
  const operate = can('nodes:operate');
  const bulk = operate ? bulkBar(ctx, { filter: () => view.query(), reload: () => view.reload() }) : null;

  const columns = [];
  const sorts = [];
  if (bulk) {
    columns.push(bulk.pageCheckbox);
    sorts.push(null);
  }
  columns.push('Name');
  sorts.push('name');
  if (wideTeam) {
    columns.push('Team');
    sorts.push(null);
  }
  if (wideEnv) {
    columns.push('Environment');
    sorts.push(null);
  }
  columns.push('Status', 'Last heartbeat', 'Address', 'Tags', 'Relay', 'Agent version', 'Policy sync');
  sorts.push('status', 'heartbeat', null, null, null, null, null);

  const filters = [
    { key: 'status', label: 'Status', kind: 'select', anyLabel: 'Any status', options: ['online', 'stale', 'pending'] },
    { key: 'tag', label: 'Tag', kind: 'text', placeholder: 'tag:web', toApi: normalizeTag, hint: '"web" means tag:web' },
    { key: 'name_prefix', label: 'Name starts with', kind: 'text', placeholder: 'web-' },
    { key: 'address', label: 'Mesh address or prefix', kind: 'text', placeholder: '100.64.0.7 or 100.64.0.0/24' },
    { key: 'agent_version', label: 'Agent version', kind: 'text', placeholder: '1.4.0' },
    { key: 'policy_sync', label: 'Policy sync', kind: 'select', anyLabel: 'Any', options: ['current', 'behind', 'drifting'] },
  ];
  if (wideTeam) filters.push({ key: 'team', label: 'Team', kind: 'text', placeholder: 'web' });
  if (wideEnv) filters.push({ key: 'environment', label: 'Environment', kind: 'text', placeholder: 'prod' });

  const view = listView(ctx, {
    path: '/nodes',
    prefix: 'nodes',
    caption: 'Nodes',
    tableTest: 'nodes-table',
    columns,
    sorts,
    row: (n) => nodeRow(n, { wideTeam, wideEnv, selection: bulk }),
    empty: 'No node matches these filters.',
    pollMs: 5000,
    // these orders cost a scan and a count on the read pool (load-tests/RESULTS.md): refreshed less often
    slowPoll: { sorts: ['status', 'heartbeat'], ms: 30000 },
    sizes: [25, 50, 100, 200, 500],
    defaultLimit: 50,
    toolbar: [totalLabel, exportBtn, exportStatus],
    above: bulk ? [bulk.element] : [],
    filters,
    onData: (items, data) => {
      totalLabel.textContent = totalText(data);
      if (bulk) bulk.page(items, data);
    },
  });

  exportBtn.addEventListener('click', async () => {
    exportBtn.disabled = true;
    exportStatus.textContent = 'Exporting…';
    const rows = [];
    let cursor = '';
    let more = false;
    try {
      do {
        const data = await getPatiently('/nodes', { ...view.query(), limit: 1000, cursor: cursor || undefined }, { signal: ctx.signal });
        const items = data && Array.isArray(data.items) ? data.items : [];
        rows.push(...items);
        cursor = data && typeof data.next_cursor === 'string' ? data.next_cursor : '';
        exportStatus.textContent = `Exporting… ${rows.length} nodes`;
      } while (cursor && rows.length < EXPORT_CAP);
      more = !!cursor || rows.length > EXPORT_CAP;
      const kept = rows.slice(0, EXPORT_CAP);
      const stamp = new Date().toISOString().replace(/[:.]/g, '-');
      download(`meshplane-nodes-${stamp}.csv`, toCsv(kept));
      exportStatus.textContent = more
        ? `Exported the first ${kept.length} nodes (the export stops at ${EXPORT_CAP}).`
        : `Exported ${kept.length} nodes.`;
    } catch (e) {
      if (isAbort(e)) return;
      exportStatus.textContent = 'Export failed.';
      ctx.error(e);
    } finally {
      exportBtn.disabled = false;
    }
  });

  ctx.root.append(ctx.heading('Nodes'), view.element);
}
