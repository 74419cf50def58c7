// The MeshCA page (#/meshca, meshca:read): the chain (GET /meshca/authorities), the rotation (meshca-rotation.js:
// its phases and progress, its buttons with meshca:manage, the finished ones), the caller's nodes by the state of their current certificate and by time to expiry
// (GET /meshca/summary, meshca-chart.js), and the latest revocations (GET /meshca/certificates?state=revoked
// &order=latest). Refreshed every 30 s while shown (the summary is kept 5 s by the server), and at once when
// the rotation moves (the chain's states change with its phases).

import { api } from './api.js';
import { h, badge, str, fmtTime, makeTable, keyedRows, td, link, nodeHref, expiresIn } from './ui.js';
import { expiryChart } from './meshca-chart.js';
import { rotationSection } from './meshca-rotation.js';

const COUNTS = [
  { key: 'valid', label: 'Valid', pick: (s) => s.nodes && s.nodes.valid, tone: 'ok' },
  { key: 'expiring', label: 'Expiring (past half their life)', pick: (s) => s.nodes && s.nodes.expiring, tone: 'warn' },
  { key: 'expired', label: 'Expired', pick: (s) => s.nodes && s.nodes.expired, tone: 'bad' },
  { key: 'none', label: 'No certificate', pick: (s) => s.nodes && s.nodes.none, tone: 'muted' },
  { key: 'revoked', label: 'Revoked, not expired yet', pick: (s) => s.revoked_unexpired, tone: 'neutral' },
];
const REVOCATIONS_SHOWN = 10;

function section(id, title, ...children) {
  return h('section', { class: 'panel', id, 'aria-labelledby': `${id}-h` }, h('h2', { id: `${id}-h` }, title), ...children);
}

export function renderMeshca(ctx) {
  ctx.setTitle('MeshCA');
  const updated = h('p', { class: 'muted refresh-status', 'data-test': 'meshca-updated' }, 'Loading…');

  // ---- the chain ----
  const chain = makeTable(['Kind', 'State', 'Id', 'Expires', 'Signed by', 'Certificate'], { caption: 'CA certificates', test: 'meshca-authorities' });
  const chainRows = keyedRows(chain.tbody, {
    keyOf: (a) => str(a.id),
    colspan: 6,
    emptyText: 'No CA certificate yet.',
    build: (a) => h('tr', { 'data-test': 'meshca-authority', 'data-authority-id': str(a.id), 'data-kind': str(a.kind), 'data-state': str(a.state) },
      td(str(a.kind)),
      td(badge(str(a.state))),
      td(h('span', { class: 'mono' }, str(a.id))),
      td(fmtTime(a.not_after), h('br'), h('span', { class: 'muted small', 'data-test': 'meshca-authority-expires' }, expiresIn(a.expires_in_s))),
      td(a.parent ? h('span', { class: 'mono' }, str(a.parent)) : h('span', { class: 'muted' }, 'itself (a root)')),
      td(h('details', { 'data-test': 'meshca-authority-details' }, h('summary', {}, 'Subject, serial, key id, PEM'),
        h('dl', { class: 'fields' },
          h('dt', {}, 'Subject'), h('dd', {}, str(a.subject)),
          h('dt', {}, 'Valid from'), h('dd', {}, fmtTime(a.not_before)),
          h('dt', {}, 'Serial'), h('dd', { class: 'mono break' }, str(a.serial)),
          h('dt', {}, 'Subject key id'), h('dd', { class: 'mono break' }, a.subject_key_id ? str(a.subject_key_id) : '—')),
        h('pre', { class: 'json' }, str(a.pem))))),
  });

  // ---- the rotation (its own refresh: every 3 s while one is open); a step reads the chain again ----
  let poller = null;
  const rotation = section('meshca-rotation', 'Rotation',
    h('p', { class: 'hint' }, 'A rotation replaces the intermediate, or the root and its intermediate, without an outage: each phase '
      + 'starts once every online node holds what it needs (stale nodes are counted apart).'),
    rotationSection(ctx, { onStep: () => { if (poller) poller.kick(); } }).slot);

  // ---- node certificates ----
  const values = {};
  const cards = COUNTS.map((c) => {
    const value = h('span', { class: 'card-value', 'data-test': `meshca-count-${c.key}` }, '…');
    values[c.key] = value;
    return h('li', { class: ['card', `card-${c.tone}`] }, h('div', { class: 'card-link' }, value, h('span', { class: 'card-label' }, c.label)));
  });
  const scopeNote = h('p', { class: 'hint', 'data-test': 'meshca-scope' });
  const chartBox = h('div', { class: 'charts' });
  const nodesSection = section('meshca-nodes', 'Node certificates',
    h('p', { class: 'hint' }, 'Each node counted once, by its current certificate: its latest unrevoked one. '
      + 'Expiring: past half its lifetime (the node should have renewed by then).'),
    scopeNote,
    h('ul', { class: 'cards', 'aria-label': 'Nodes by the state of their certificate' }, cards),
    chartBox);
  const chart = expiryChart(ctx, chartBox);

  // ---- latest revocations ----
  const revs = makeTable(['Serial', 'Node', 'Reason', 'Revoked', 'Expires'], { caption: 'Latest revocations', test: 'meshca-revocations' });
  const revRows = keyedRows(revs.tbody, {
    keyOf: (c) => str(c.serial),
    colspan: 5,
    emptyText: 'No certificate is revoked.',
    build: (c) => h('tr', { 'data-test': 'meshca-revocation', 'data-serial': str(c.serial) },
      td(h('span', { class: 'mono' }, str(c.serial))),
      td(link(nodeHref(c.node_id), str(c.node_id), { class: 'mono', 'data-focus-key': `rev-${str(c.serial)}` })),
      td(str(c.reason)),
      td(fmtTime(c.revoked_at)),
      td(fmtTime(c.not_after))),
  });

  ctx.root.append(
    ctx.heading('MeshCA'),
    updated,
    section('meshca-chain', 'Certificate chain',
      h('p', { class: 'hint' }, 'The roots are the trust bundle; the active intermediate signs the node certificates.'), chain.wrap),
    rotation,
    nodesSection,
    section('meshca-revoked', 'Latest revocations',
      h('p', { class: 'hint' }, `Up to ${REVOCATIONS_SHOWN} revoked certificates, the latest to expire first (those still in the CRL come first).`),
      revs.wrap));

  poller = ctx.poll(30000, async () => {
    const [authorities, summary, revoked] = await Promise.all([
      api.get('/meshca/authorities', null, { signal: ctx.signal }),
      api.get('/meshca/summary', null, { signal: ctx.signal }),
      api.get('/meshca/certificates', { state: 'revoked', order: 'latest', limit: REVOCATIONS_SHOWN }, { signal: ctx.signal }),
    ]);
    chainRows(Array.isArray(authorities && authorities.items) ? authorities.items : []);
    for (const c of COUNTS) {
      const v = summary ? c.pick(summary) : undefined;
      values[c.key].textContent = typeof v === 'number' ? String(v) : '—';
      values[c.key].dataset.value = typeof v === 'number' ? String(v) : '';
    }
    const scope = (summary && summary.scope) || {};
    scopeNote.textContent = scope.team === '*' && scope.environment === '*' ? 'The whole mesh.'
      : `Nodes of ${str(scope.team)} / ${str(scope.environment)}.`;
    chart.draw(summary);
    revRows(Array.isArray(revoked && revoked.items) ? revoked.items : []);
    updated.replaceChildren('Refreshed every 30 s. Figures as of ', fmtTime(summary && summary.at, 'now'), '.');
    ctx.clearError();
  }, {
    onError: (e) => {
      ctx.error(e);
      updated.textContent = 'Refresh failed; retrying every 30 s.';
    },
  });
}
