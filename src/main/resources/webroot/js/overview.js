// Overview: what is wrong now (GET /api/v1/overview every 5 s while shown) and how the last hour or
// day went (the charts, overview-charts.js).

import { api } from './api.js';
import { h, fmtTime, ageEl, link, nodeHref, str, renderIfChanged, refreshAges } from './ui.js';
import { renderCharts } from './overview-charts.js';
import { opsPanel } from './overview-ops.js';

const CARDS = [
  { key: 'online', label: 'Online', pick: (o) => o.nodes && o.nodes.online, href: '#/nodes?status=online', tone: 'ok' },
  { key: 'stale', label: 'Stale', pick: (o) => o.nodes && o.nodes.stale, href: '#/nodes?status=stale', tone: 'warn' },
  { key: 'pending', label: 'Pending', pick: (o) => o.nodes && o.nodes.pending, href: '#/nodes?status=pending', tone: 'muted' },
  { key: 'total', label: 'Nodes in total', pick: (o) => o.nodes && o.nodes.total, href: '#/nodes', tone: 'neutral' },
  { key: 'ops', label: 'Operations in flight', pick: (o) => o.operations_in_flight, href: '#/operations?status=open', tone: 'info' },
  { key: 'drift', label: 'Nodes with policy drift', pick: (o) => o.policy_drift, href: '#/events?type=node.policy_drift', tone: 'bad' },
  { key: 'hbps', label: 'Heartbeats per second', pick: (o) => o.heartbeats_per_second, tone: 'neutral', decimals: true },
];

// The two "what needs attention" lists: at most 5 nodes each, with a link to the full, filtered list.
const LISTS = [
  {
    key: 'stale',
    title: 'Stale nodes',
    hint: 'The ones that went stale last first (latest last heartbeat).',
    pick: (o) => o.stale_nodes,
    count: (o) => o.nodes && o.nodes.stale,
    empty: 'No stale node.',
    all: { href: '#/nodes?status=stale', text: (n) => (n === 1 ? 'See it in the node list' : `See all ${n} stale nodes`) },
    extra: () => [],
  },
  {
    key: 'drift',
    title: 'Policy drift',
    hint: 'Nodes that still acknowledge an older ACL version after receiving the current one.',
    pick: (o) => o.drifting_nodes,
    count: (o) => o.policy_drift,
    empty: 'No node drifts from its policy.',
    all: { href: '#/nodes?policy_sync=drifting', text: (n) => (n === 1 ? 'See it in the node list' : `See all ${n} drifting nodes`) },
    extra: () => [link('#/events?type=node.policy_drift', 'Drift events', { 'data-test': 'overview-drift-events' })],
  },
];

function formatValue(v, decimals) {
  if (typeof v !== 'number' || !Number.isFinite(v)) return '—';
  if (!decimals) return String(v);
  return String(Math.round(v * 100) / 100);
}

function nodeItem(n) {
  const id = str(n.id);
  return h('li', { 'data-test': 'overview-list-node', 'data-node-id': id },
    link(nodeHref(id), str(n.name) || id, { 'data-test': 'overview-node-link' }),
    ' ', h('span', { class: 'muted small' }, `${str(n.team)}/${str(n.environment)}, last heartbeat `, ageEl(n.heartbeat)));
}

function listPanel(l) {
  const body = h('div', { class: 'attention-body' });
  const count = h('span', { class: 'attention-count', 'data-test': `overview-${l.key}-count` });
  const panel = h('section', { class: ['panel', 'attention'], 'aria-labelledby': `overview-${l.key}-title` },
    h('h2', { id: `overview-${l.key}-title` }, l.title, ' ', count),
    h('p', { class: 'hint' }, l.hint),
    body);
  return {
    panel,
    update(o) {
      const items = Array.isArray(l.pick(o)) ? l.pick(o).slice(0, 5) : [];
      const total = typeof l.count(o) === 'number' ? l.count(o) : items.length;
      count.textContent = `(${total})`;
      renderIfChanged(body, { items, total }, () => [
        items.length
          ? h('ul', { class: 'plain-list attention-list', 'data-test': `overview-${l.key}-list` }, items.map(nodeItem))
          : h('p', { class: 'muted', 'data-test': `overview-${l.key}-list` }, l.empty),
        h('p', { class: 'attention-links' },
          link(l.all.href, l.all.text(total), { 'data-test': `overview-${l.key}-all` }),
          l.extra().flatMap((e) => [' · ', e])),
      ]);
      refreshAges(body);
    },
  };
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
  const lists = LISTS.map(listPanel);
  const opsList = h('section', { class: ['panel', 'attention'], id: 'overview-ops-list', 'data-test': 'overview-ops-list' });
  const ops = opsPanel(opsList);
  const charts = h('section', { class: 'panel overview-charts', 'aria-labelledby': 'overview-charts-title' });
  ctx.root.append(
    ctx.heading('Overview'),
    h('ul', { class: 'cards', 'aria-label': 'Mesh at a glance' }, cards),
    updated,
    h('div', { class: 'attention-grid' }, lists.map((l) => l.panel), opsList),
    charts);
  renderCharts(ctx, charts);

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
    if (o) for (const l of lists) l.update(o);
    await ops.update(o, ctx.signal);
    updated.replaceChildren('Live, refreshed every 5 s. Figures as of ', fmtTime(o && o.at, 'now'), '.');
    ctx.clearError();
  }, {
    onError: (e) => {
      ctx.error(e);
      updated.textContent = 'Refresh failed; retrying every 5 s.';
    },
  });
}
