// Overview: GET /api/v1/overview every 5 s while shown.

import { api } from './api.js';
import { h, fmtTime } from './ui.js';

const CARDS = [
  { key: 'online', label: 'Online', pick: (o) => o.nodes && o.nodes.online, href: '#/nodes?status=online', tone: 'ok' },
  { key: 'stale', label: 'Stale', pick: (o) => o.nodes && o.nodes.stale, href: '#/nodes?status=stale', tone: 'warn' },
  { key: 'pending', label: 'Pending', pick: (o) => o.nodes && o.nodes.pending, href: '#/nodes?status=pending', tone: 'muted' },
  { key: 'total', label: 'Nodes in total', pick: (o) => o.nodes && o.nodes.total, href: '#/nodes', tone: 'neutral' },
  { key: 'ops', label: 'Operations in flight', pick: (o) => o.operations_in_flight, href: '#/operations?status=open', tone: 'info' },
  { key: 'drift', label: 'Nodes with policy drift', pick: (o) => o.policy_drift, href: '#/events?type=node.policy_drift', tone: 'bad' },
  { key: 'hbps', label: 'Heartbeats per second', pick: (o) => o.heartbeats_per_second, tone: 'neutral', decimals: true },
];

function formatValue(v, decimals) {
  if (typeof v !== 'number' || !Number.isFinite(v)) return '—';
  if (!decimals) return String(v);
  return String(Math.round(v * 100) / 100);
}

export function renderOverview(ctx) {
  ctx.setTitle('Overview');
  const values = {};
  const labels = {};
  const cards = CARDS.map((c) => {
    const value = h('span', { class: 'card-value', 'data-test': `overview-${c.key}` }, '…');
    values[c.key] = value;
    const label = h('span', { class: 'card-label' }, c.label);
    labels[c.key] = label;
    const inner = c.href
      ? h('a', { class: 'card-link', href: c.href }, value, label)
      : h('div', { class: 'card-link' }, value, label);
    return h('li', { class: ['card', `card-${c.tone}`] }, inner);
  });
  const updated = h('p', { class: 'muted refresh-status', 'data-test': 'overview-updated' }, 'Loading…');
  ctx.root.append(
    ctx.heading('Overview'),
    h('ul', { class: 'cards', 'aria-label': 'Mesh at a glance' }, cards),
    updated);

  ctx.poll(5000, async () => {
    const o = await api.get('/overview', null, { signal: ctx.signal });
    for (const c of CARDS) {
      const v = o ? c.pick(o) : undefined;
      values[c.key].textContent = formatValue(v, c.decimals);
      values[c.key].dataset.value = typeof v === 'number' ? String(v) : '';
    }
    // Measured over the whole mesh for a '*' user, estimated from the online nodes for others.
    const source = o && typeof o.heartbeats_per_second_source === 'string' ? o.heartbeats_per_second_source : '';
    labels.hbps.textContent = source === 'estimated' ? 'Heartbeats per second (estimated)' : 'Heartbeats per second';
    updated.replaceChildren('Live, refreshed every 5 s. Figures as of ', fmtTime(o && o.at, 'now'), '.');
    ctx.clearError();
  }, {
    onError: (e) => {
      ctx.error(e);
      updated.textContent = 'Refresh failed; retrying every 5 s.';
    },
  });
}
