// One node: every field, its peers and inbound rules, its operations, and the operation buttons.
// Refreshes every 5 s (every 3 s while an operation is pending or delivered).
// This module is the page: its layout, the record, the "not found" page and the refresh loop; the parts
// are node-actions.js (the actions and the ingress), node-ops.js (operations), node-peers.js (peers, rules),
// node-cert.js (its MeshCA certificate).

import { api, seg, isAbort, ApiError } from './api.js';
import { h, badge, chips, fmtTime, relative, pre, str, link, errorBox, renderIfChanged, makeTable, td } from './ui.js';
import { liveBadge } from './nodes.js';
import { nodeActions } from './node-actions.js';
import { nodeOperations } from './node-ops.js';
import { nodePeers } from './node-peers.js';
import { nodeCertificate } from './node-cert.js';

export { parseTags } from './node-actions.js';

const FIELD_ORDER = [
  'id', 'name', 'team', 'environment', 'status', 'heartbeat', 'address', 'public_key', 'endpoints', 'tags',
  'routes', 'relay', 'relay_status', 'services', 'ingress', 'acl_matches', 'policy_sync', 'pki_sync', 'ingress_sync',
  'ingress_stats', 'waf_sync', 'telemetry',
  'created_at', 'updated_at',
];
const LABELS = {
  id: 'Id', name: 'Name', team: 'Team', environment: 'Environment', status: 'Status', heartbeat: 'Last heartbeat',
  address: 'Mesh address', public_key: 'Public key', endpoints: 'Endpoints', tags: 'Tags', routes: 'Routes',
  relay: 'Relay', relay_status: 'Relay status', services: 'Bound services', ingress: 'Ingress',
  acl_matches: 'ACL matches', policy_sync: 'Policy sync', pki_sync: 'MeshCA sync', ingress_sync: 'Ingress routes sync',
  ingress_stats: 'Ingress traffic', waf_sync: 'Traffic policy (WAF)', telemetry: 'Telemetry', created_at: 'Enrolled',
  updated_at: 'Record updated',
};

export function renderNode(ctx, id) {
  ctx.setTitle('Node');

  const base = `/nodes/${seg(id)}`;
  const title = ctx.heading('Node');
  const statusSlot = h('span', { class: 'title-status' });
  const refreshLabel = h('span', { class: 'muted refresh-status', 'data-test': 'node-refreshed' });
  const fieldsDl = h('dl', { class: 'fields', 'data-test': 'node-fields' });
  const actionError = errorBox('node-action-error');
  let poller = null;
  const actions = nodeActions(ctx, {
    id, base, actionError, refresh: async () => { if (poller) await poller.kick(); },
  });
  const ops = nodeOperations(ctx, base);
  const peers = nodePeers(ctx, base);
  const cert = nodeCertificate(ctx, id, { refresh: async () => { if (poller) await poller.kick(); } });

  let node = null;
  let heartbeatAge = null;

  ctx.root.append(
    h('p', { class: 'crumbs' }, link('#/nodes', 'Nodes'), ' / ', h('span', { class: 'mono' }, id)),
    h('div', { class: 'page-head' }, title, statusSlot, refreshLabel),
    actionError,
    actions.canAct ? h('section', { class: 'panel', 'aria-labelledby': 'node-actions-h' },
      h('h2', { id: 'node-actions-h' }, 'Actions'), actions.actionsSlot) : '', // append(null) would print "null"
    h('section', { class: 'panel', 'aria-labelledby': 'node-fields-h' }, h('h2', { id: 'node-fields-h' }, 'Record'), fieldsDl),
    cert.enabled ? h('section', { class: 'panel', 'aria-labelledby': 'node-cert-h' }, h('h2', { id: 'node-cert-h' }, 'Certificate'), cert.slot) : '',
    h('section', { class: 'panel', 'aria-labelledby': 'node-ingress-h' }, h('h2', { id: 'node-ingress-h' }, 'Ingress'), actions.ingressSlot),
    h('section', { class: 'panel', 'aria-labelledby': 'node-ops-h' }, h('h2', { id: 'node-ops-h' }, 'Operations'), ops.slot),
    h('section', { class: 'panel', 'aria-labelledby': 'node-peers-h' }, h('h2', { id: 'node-peers-h' }, 'Peers and inbound rules'), peers.slot));

  // ---- the record ----
  function fieldValue(key, v, node) {
    switch (key) {
      case 'status':
        return badge(str(v));
      case 'relay_status':
        return liveBadge(node, str(v), 'node-relay-status');
      case 'heartbeat': {
        if (!v) return h('span', { class: 'muted' }, 'never');
        heartbeatAge = h('span', { class: 'muted' }, relative(v));
        return [fmtTime(v), ' (', heartbeatAge, ')'];
      }
      case 'created_at':
      case 'updated_at':
        return fmtTime(v);
      case 'endpoints':
      case 'tags':
      case 'routes':
      case 'services':
        return chips(v);
      case 'public_key':
      case 'address':
      case 'id':
        return h('span', { class: 'mono break' }, str(v));
      case 'relay':
        return v ? str(v) : h('span', { class: 'muted' }, 'none');
      case 'acl_matches':
        return Array.isArray(v) && v.length
          ? h('ul', { class: 'plain-list' }, v.map((m) => h('li', { class: 'mono' }, str(m))))
          : h('span', { class: 'muted' }, 'no grant names this node');
      case 'ingress':
        return Array.isArray(v) && v.length
          ? h('ul', { class: 'plain-list' }, v.map((i) => h('li', {}, `${str(i.name)}: ${str(i.hostname)}:${str(i.port)} (${str(i.state)})`)))
          : h('span', { class: 'muted' }, 'none');
      case 'policy_sync': {
        if (!v || typeof v !== 'object') return str(v);
        const ack = v.acknowledged || {};
        const cur = v.current || {};
        const n = (x) => (x === null || x === undefined ? '—' : str(x));
        const since = typeof v.acknowledged_at === 'string' ? ` (since ${v.acknowledged_at})` : '';
        const state = node && node.status === 'stale' ? liveBadge(node, '', 'node-policy-sync-state') : badge(str(v.state), { 'data-test': 'node-policy-sync-state' });
        return [state, ` acknowledged peers ${n(ack.peers)}, acl ${n(ack.acl)}${since}; current peers ${n(cur.peers)}, acl ${n(cur.acl)}; services `, badge(str(v.services))];
      }
      case 'pki_sync': {
        // what the agent reported holding of MeshCA's against the current bundle and issuer (a CA rotation waits for it)
        if (!v || typeof v !== 'object') return h('span', { class: 'muted' }, 'MeshCA not loaded');
        if (v.state === 'none') return h('span', { class: 'muted', 'data-test': 'node-pki-sync-state' }, 'no MeshCA report from its agent');
        const held = (x) => (typeof x === 'string' ? x : '—');
        return [badge(str(v.state), { 'data-test': 'node-pki-sync-state' }),
          ` bundle ${held(v.bundle)} (current ${held(v.current_bundle)}); issuer ${held(v.issuer)} (current ${held(v.current_issuer)})`];
      }
      case 'ingress_sync': {
        // the ingress routes version the agent applied against the one it should serve (none: it serves no route)
        if (!v || typeof v !== 'object' || v.state === 'none') {
          return h('span', { class: 'muted', 'data-test': 'node-ingress-sync-state' }, 'serves no ingress route');
        }
        const n = (x) => (x === null || x === undefined ? '—' : str(x));
        return [badge(str(v.state), { 'data-test': 'node-ingress-sync-state' }), ` applied ${n(v.acknowledged)}; current ${n(v.current)}`];
      }
      case 'waf_sync': {
        // the traffic policy version the edge reported enforcing against the current one, and its probe (API.md §20)
        if (!v || typeof v !== 'object' || v.state === 'none') {
          return h('span', { class: 'muted', 'data-test': 'node-waf-sync-state' }, 'enforces no traffic policy');
        }
        const n = (x) => (x === null || x === undefined ? '—' : str(x));
        const probe = v.probe && typeof v.probe === 'object' ? str(v.probe.state) : 'none';
        const parts = [badge(str(v.state), { 'data-test': 'node-waf-sync-state' }),
          ` enforcing ${n(v.enforcing)}${v.shadowing ? `, shadow ${n(v.shadowing)}` : ''}; current ${n(v.current)}; probe `,
          badge(probe, { 'data-test': 'node-waf-probe-state' })];
        if (typeof v.error === 'string') parts.push(h('span', { class: 'form-error' }, ` ${v.error}`));
        return parts;
      }
      case 'ingress_stats': {
        // per route, what the agent's edge reported with its latest heartbeat
        if (!v || typeof v !== 'object' || Object.keys(v).length === 0) return h('span', { class: 'muted' }, 'no traffic reported');
        const num = (x) => (typeof x === 'number' ? x.toLocaleString() : '—');
        const t = makeTable(['Route', 'Requests', 'Errors', 'Active', '2xx / 3xx / 4xx / 5xx', 'Bytes in / out', 'Certificate serial',
          'WAF denied / rate limited / would deny'], { caption: 'Ingress traffic by route', test: 'node-ingress-stats' });
        for (const route of Object.keys(v).sort()) {
          const r = v[route] || {};
          const c = r.status_classes || {};
          t.tbody.append(h('tr', {}, td(route), td(num(r.requests)), td(num(r.errors)), td(num(r.active)),
            td(`${num(c['2xx'])} / ${num(c['3xx'])} / ${num(c['4xx'])} / ${num(c['5xx'])}`),
            td(`${num(r.bytes_in)} / ${num(r.bytes_out)}`), td(typeof r.serial === 'string' ? r.serial : '—'),
            td(r.waf && typeof r.waf === 'object' ? `${num(r.waf.denied)} / ${num(r.waf.rate_limited)} / ${num(r.waf.would_deny)}` : '—')));
        }
        return t.wrap;
      }
      case 'telemetry':
        return pre(v && typeof v === 'object' ? v : {});
      default:
        if (v !== null && typeof v === 'object') return pre(v);
        return str(v);
    }
  }

  function buildFields(n) {
    heartbeatAge = null;
    const keys = [...FIELD_ORDER.filter((k) => k in n), ...Object.keys(n).filter((k) => !FIELD_ORDER.includes(k))];
    return keys.map((k) => [
      h('dt', {}, LABELS[k] || k),
      h('dd', { 'data-test': `node-field-${k}` }, fieldValue(k, n[k], n)),
    ]).flat();
  }

  function showNode(n) {
    node = n;
    const name = str(n.name) || id;
    ctx.setTitle(`${name} · Node`);
    title.textContent = `Node ${name}`;
    const status = str(n.status);
    if (statusSlot.dataset.status !== status) {
      statusSlot.dataset.status = status;
      statusSlot.replaceChildren(badge(status, { 'data-test': 'node-status', 'data-status': status }));
    }
    renderIfChanged(fieldsDl, n, () => buildFields(n));
    if (heartbeatAge && n.heartbeat) heartbeatAge.textContent = relative(n.heartbeat);
    actions.show(n);
  }

  // ---- an id that names no node (in the caller's scope): a page that says so, not an error box ----
  function showNotFound() {
    ctx.setTitle('Node not found');
    ctx.clearError();
    const heading = ctx.heading('Node not found');
    ctx.root.replaceChildren(h('section', { class: 'not-found', 'data-test': 'node-not-found' },
      h('p', { class: 'crumbs' }, link('#/nodes', 'Nodes'), ' / ', h('span', { class: 'mono' }, id)),
      heading,
      h('p', {}, 'There is no node ', h('code', {}, id), ' in your scope. It may have been deleted, or the link may be wrong.'),
      h('p', {}, link('#/nodes', 'Back to the node inventory', { 'data-test': 'node-not-found-back' }))));
    heading.focus({ preventScroll: true });
  }

  // ---- the refresh loop ----
  function sectionError(slot, e) {
    if (isAbort(e) || (e instanceof ApiError && e.handled)) return;
    slot.replaceChildren(h('p', { class: 'form-error' }, `Could not load: ${e.message}`));
  }

  async function tick() {
    const [n, o, p, c] = await Promise.allSettled([
      api.get(base, null, { signal: ctx.signal }).then(showNode),
      ops.load(),
      peers.load(),
      cert.load(),
    ]);
    if (n.status === 'rejected') {
      const e = n.reason;
      if (e instanceof ApiError && e.status === 404) {
        poller.stop();
        showNotFound();
        return;
      }
      throw e;
    }
    if (o.status === 'rejected') sectionError(ops.slot, o.reason);
    if (p.status === 'rejected') sectionError(peers.slot, p.reason);
    if (c.status === 'rejected') sectionError(cert.slot, c.reason);
    ctx.clearError();
    refreshLabel.textContent = `Live · updated ${new Date().toLocaleTimeString()}`;
  }

  poller = ctx.poll(() => (ops.hasOpen() ? 3000 : 5000), tick, {
    onError: (e) => {
      ctx.error(e);
      refreshLabel.textContent = 'Refresh failed; retrying';
    },
  });
  // Keep the "12 s ago" of the last heartbeat moving between refreshes.
  const ageTimer = setInterval(() => {
    if (heartbeatAge && node && node.heartbeat) heartbeatAge.textContent = relative(node.heartbeat);
  }, 1000);
  ctx.onCleanup(() => clearInterval(ageTimer));
}
