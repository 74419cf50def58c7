// Nodes: the inventory (GET /api/v1/nodes), live every 5 s, with filters in the hash and a CSV export.

import { getPatiently, isAbort } from './api.js';
import { h, btn, td, badge, chips, ageEl, link, nodeHref, str, download } from './ui.js';
import { listView } from './listview.js';

const EXPORT_CAP = 10000;
const COLUMNS = ['Name', 'Status', 'Last heartbeat', 'Address', 'Tags', 'Relay', 'Agent version', 'Policy sync'];

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

function nodeRow(n) {
  const id = str(n.id);
  const status = str(n.status);
  const sync = n.policy_sync && typeof n.policy_sync === 'object' ? str(n.policy_sync.state) : '';
  return h('tr', { 'data-test': 'node-row', 'data-node-id': id, 'data-status': status },
    h('th', { scope: 'row' }, link(nodeHref(id), str(n.name) || id, { 'data-focus-key': `node:${id}`, 'data-test': 'node-link' })),
    td(badge(status, { 'data-test': 'node-row-status' })),
    td(ageEl(n.heartbeat)),
    td(h('span', { class: 'mono' }, str(n.address))),
    td(chips(n.tags)),
    td(n.relay ? str(n.relay) : h('span', { class: 'muted' }, 'none'), ' ', n.relay_status ? badge(str(n.relay_status)) : null),
    td(agentVersion(n) || h('span', { class: 'muted' }, '—')),
    td(sync ? badge(sync) : ''));
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

  const view = listView(ctx, {
    path: '/nodes',
    prefix: 'nodes',
    caption: 'Nodes',
    tableTest: 'nodes-table',
    columns: COLUMNS,
    row: nodeRow,
    empty: 'No node matches these filters.',
    pollMs: 5000,
    sizes: [25, 50, 100, 200, 500],
    defaultLimit: 50,
    toolbar: [exportBtn, exportStatus],
    filters: [
      { key: 'status', label: 'Status', kind: 'select', anyLabel: 'Any status', options: ['online', 'stale', 'pending'] },
      { key: 'tag', label: 'Tag', kind: 'text', placeholder: 'tag:web', toApi: normalizeTag, hint: '"web" means tag:web' },
      { key: 'name_prefix', label: 'Name starts with', kind: 'text', placeholder: 'web-' },
      { key: 'agent_version', label: 'Agent version', kind: 'text', placeholder: '1.4.0' },
    ],
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
