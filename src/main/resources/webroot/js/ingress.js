// Ingress (#/ingress, ingress:read): the ingress routes of one team and environment in their order
// and the ingress nodes that serve them (read as ingress-nodes.js says) with their routes sync and per-route traffic, and
// what needs attention first: routes whose status is not active, nodes behind or draining.
// With ingress:write, the form and row buttons of ingress-form.js. Refreshed every 5 s.

import { api, can, ApiError } from './api.js';
import {
  h, badge, str, makeTable, keyedRows, td, link, nodeHref, field, renderIfChanged,
} from './ui.js';
import { liveBadge } from './nodes.js';
import { ingressEditor } from './ingress-form.js';
import { readRoutes, readIngressNodes, ingressTags, routesOf, MAX_TAGS, NODES_PER_TAG } from './ingress-nodes.js';

const POLL_MS = 5000;

/** The route's status ({state} from the server), or "unknown" when the server does not say. */
export function routeState(r) {
  return r && r.status && typeof r.status === 'object' && typeof r.status.state === 'string' ? r.status.state : 'unknown';
}

function syncState(n) {
  return n && n.ingress_sync && typeof n.ingress_sync === 'object' ? str(n.ingress_sync.state) : '';
}

/** The states of the node's own ingress (§9) that are not plain serving: draining, drained. */
function drainStates(n) {
  return (Array.isArray(n.ingress) ? n.ingress : []).filter((i) => i && (i.state === 'draining' || i.state === 'drained'))
    .map((i) => `${str(i.name)} ${str(i.state)}`);
}

function nodeNeedsAttention(n) {
  return syncState(n) === 'behind' || n.status === 'stale' || drainStates(n).length > 0;
}

const num = (x) => (typeof x === 'number' ? x.toLocaleString() : '—');

export function renderIngress(ctx) {
  ctx.setTitle('Ingress');
  const user = (ctx.session && ctx.session.user) || {};
  const wideTeam = user.team === '*';
  const wideEnv = user.environment === '*';
  const team = ctx.params.get('team') || (wideTeam ? '' : str(user.team));
  const environment = ctx.params.get('environment') || (wideEnv ? '' : str(user.environment));
  const hostname = ctx.params.get('hostname') || '';
  const writer = can('ingress:write');

  // ---- the scope: which team and environment (a route list has one order per team and environment) ----
  const teamIn = h('input', { type: 'text', name: 'team', value: team, autocomplete: 'off', 'data-test': 'ingress-team', readOnly: !wideTeam });
  const envIn = h('input', { type: 'text', name: 'environment', value: environment, autocomplete: 'off', 'data-test': 'ingress-environment', readOnly: !wideEnv });
  const hostIn = h('input', { type: 'text', name: 'hostname', value: hostname, autocomplete: 'off', spellcheck: 'false', 'data-test': 'ingress-hostname' });
  const scopeForm = h('form', { class: 'scope-bar', 'aria-label': 'Team, environment and hostname', 'data-test': 'ingress-scope' },
    field('Team', teamIn), field('Environment', envIn), field('Hostname (exact)', hostIn),
    h('div', { class: 'form-actions' }, h('button', { type: 'submit', class: 'btn', 'data-test': 'ingress-scope-submit' }, 'Show')));
  scopeForm.addEventListener('submit', (e) => {
    e.preventDefault();
    const qs = new URLSearchParams();
    if (teamIn.value.trim()) qs.set('team', teamIn.value.trim());
    if (envIn.value.trim()) qs.set('environment', envIn.value.trim());
    if (hostIn.value.trim()) qs.set('hostname', hostIn.value.trim());
    const s = qs.toString();
    ctx.navigate('#/ingress' + (s ? '?' + s : ''));
  });

  const updated = h('p', { class: 'muted refresh-status', 'data-test': 'ingress-updated' }, 'Loading…');
  ctx.root.append(ctx.heading('Ingress'),
    h('p', { class: 'muted' }, 'The ingress routes of a team and environment, in the order their ingress nodes try them (the first match wins), '
      + 'and the nodes that serve them. Live: refreshed every 5 s.'),
    scopeForm, updated);
  if (!team || !environment) {
    updated.textContent = 'Choose a team and an environment: routes are ordered within one team and environment.';
    return;
  }

  // ---- state shared with the editor ----
  let shown = { team, environment, etag: null, routes: [], nodes: [], targets: [] };
  let poller = null;
  const refresh = async () => { if (poller) await poller.kick(); };
  const editor = writer ? ingressEditor(ctx, { scope: () => shown, refresh }) : null;

  // ---- needs attention ----
  const attention = h('div', { 'data-test': 'ingress-attention', 'aria-live': 'polite' });

  // ---- the routes ----
  const cols = ['#', 'Hostname', 'Path', 'Target', 'Exposure', 'TLS', 'Ingress tag', 'Status'];
  if (writer) cols.push('Actions');
  const routes = makeTable(cols, { caption: 'Ingress routes, in order', test: 'ingress-routes' });
  const nodeName = (id) => {
    const n = shown.nodes.find((x) => str(x.id) === id) || shown.targets.find((x) => str(x.id) === id);
    return n ? str(n.name) || id : id;
  };
  const routeRows = keyedRows(routes.tbody, {
    keyOf: (x) => str(x.r.id),
    colspan: cols.length,
    emptyText: hostname ? `No route for ${hostname} in ${team} / ${environment}.` : `No ingress route in ${team} / ${environment} yet.`,
    build: ({ r, count }) => {
      const state = routeState(r);
      const t = r.target && typeof r.target === 'object' ? r.target : {};
      const flagged = state !== 'active' && state !== 'unknown';
      return h('tr', {
        'data-test': 'ingress-route', 'data-route-id': str(r.id), 'data-hostname': str(r.hostname), 'data-state': state,
        class: flagged ? 'row-attention' : null,
      },
      td(h('span', { 'data-test': 'ingress-route-position' }, str(r.position))),
      h('th', { scope: 'row' }, h('span', { class: 'mono' }, str(r.hostname))),
      td(h('span', { class: 'mono' }, str(r.path_prefix))),
      td(link(nodeHref(str(t.node)), nodeName(str(t.node)), { title: str(t.node), 'data-focus-key': `target:${str(r.id)}` }), ' → ',
        h('span', { class: 'mono' }, str(t.service))),
      td(str(r.exposure)),
      td(str(r.tls)),
      td(h('span', { class: 'mono' }, str(r.ingress_tag))),
      td(badge(state, { 'data-test': 'ingress-route-status', title: state === 'unknown' ? 'The server does not report this route\'s status' : null }),
        flagged ? h('span', { class: 'visually-hidden' }, ' (needs attention)') : null),
      writer ? td(editor.rowActions(r, count)) : null);
    },
  });

  // ---- the ingress nodes ----
  const nodesTable = makeTable(['Node', 'Status', 'Ingress tags', 'Routes sync', 'Drain', 'Requests / errors by route'],
    { caption: 'Ingress nodes', test: 'ingress-nodes' });
  const nodeRows = keyedRows(nodesTable.tbody, {
    keyOf: (n) => str(n.id),
    colspan: 6,
    emptyText: 'No node carries these routes\' ingress tags.',
    build: (n) => {
      const sync = n.ingress_sync && typeof n.ingress_sync === 'object' ? n.ingress_sync : {};
      const stats = n.ingress_stats && typeof n.ingress_stats === 'object' ? n.ingress_stats : {};
      const drains = drainStates(n);
      const served = routesOf(n, shown.routes);
      const traffic = served.length
        ? h('ul', { class: 'plain-list' }, served.map((r) => {
          const s = stats[str(r.id)];
          return h('li', { 'data-test': 'ingress-node-traffic', 'data-route-id': str(r.id) }, h('span', { class: 'mono' }, `${str(r.hostname)}${str(r.path_prefix)}`), ': ',
            s && typeof s === 'object' ? `${num(s.requests)} / ${num(s.errors)}${typeof s.active === 'number' ? ` (${s.active} active)` : ''}` : h('span', { class: 'muted' }, 'no report'));
        }))
        : h('span', { class: 'muted' }, 'none');
      return h('tr', {
        'data-test': 'ingress-node', 'data-node-id': str(n.id), 'data-sync': syncState(n), class: nodeNeedsAttention(n) ? 'row-attention' : null,
      },
      h('th', { scope: 'row' }, link(nodeHref(str(n.id)), str(n.name) || str(n.id), { 'data-focus-key': `inode:${str(n.id)}` })),
      td(badge(str(n.status))),
      td((Array.isArray(n.tags) ? n.tags : []).map((x) => h('span', { class: 'chip' }, str(x)))),
      td(liveBadge(n, str(sync.state), 'ingress-node-sync') || badge(str(sync.state), { 'data-test': 'ingress-node-sync' }),
        h('div', { class: 'muted small' }, `applied ${sync.acknowledged ? str(sync.acknowledged) : '—'}; current ${sync.current ? str(sync.current) : '—'}`)),
      td(drains.length ? drains.map((d) => h('div', {}, badge(d.split(' ').pop()), ' ', d.split(' ')[0])) : h('span', { class: 'muted' }, 'serving')),
      td(traffic));
    },
  });

  ctx.root.append(
    h('section', { class: 'panel', 'aria-labelledby': 'ingress-attention-h' }, h('h2', { id: 'ingress-attention-h' }, 'Needs attention'), attention),
    h('section', { class: 'panel', 'aria-labelledby': 'ingress-routes-h' }, h('h2', { id: 'ingress-routes-h' }, `Routes of ${team} / ${environment}`),
      h('p', { class: 'hint' }, 'Tried in this order: the first rule whose hostname and path prefix match the request wins.'), routes.wrap),
    editor ? editor.section : '',
    h('section', { class: 'panel', 'aria-labelledby': 'ingress-nodes-h' }, h('h2', { id: 'ingress-nodes-h' }, 'Ingress nodes'),
      h('p', { class: 'hint' }, `The nodes of ${team} / ${environment} carrying the routes' ingress tags (up to ${MAX_TAGS} tags), those behind or draining first; `
        + 'their traffic is what each reported with its latest heartbeat.'), nodesTable.wrap));

  function showAttention() {
    const badRoutes = shown.routes.filter((r) => { const s = routeState(r); return s !== 'active' && s !== 'unknown'; });
    const badNodes = shown.nodes.filter(nodeNeedsAttention);
    renderIfChanged(attention, [badRoutes.map((r) => [r.id, routeState(r)]), badNodes.map((n) => [n.id, syncState(n), n.status, drainStates(n)])], () => {
      if (!badRoutes.length && !badNodes.length) {
        return h('p', { class: 'muted', 'data-test': 'ingress-attention-none' }, 'Nothing: every route with a known status is active and every ingress node is current.');
      }
      return h('ul', { class: 'plain-list' },
        badRoutes.map((r) => h('li', { 'data-test': 'ingress-attention-route', 'data-route-id': str(r.id) }, badge(routeState(r)), ' route ',
          h('span', { class: 'mono' }, `${str(r.hostname)}${str(r.path_prefix)}`), ` (position ${str(r.position)})`,
          routeState(r) === 'service_unbound' ? ': its target no longer has the service bound; ingress nodes are not sent it' : '',
          routeState(r) === 'target_missing' ? ': its target node was deleted; ingress nodes are not sent it' : '')),
        badNodes.map((n) => h('li', { 'data-test': 'ingress-attention-node', 'data-node-id': str(n.id) },
          n.status === 'stale' ? badge('stale') : badge(syncState(n) === 'behind' ? 'behind' : 'draining'), ' node ',
          link(nodeHref(str(n.id)), str(n.name) || str(n.id)),
          syncState(n) === 'behind' ? `: has applied routes version ${str(n.ingress_sync.acknowledged) || 'none'}, current is ${str(n.ingress_sync.current)}` : '',
          drainStates(n).length ? ` (${drainStates(n).join(', ')})` : '')));
    });
  }

  poller = ctx.poll(POLL_MS, async () => {
    const got = await readRoutes({ team, environment, hostname }, ctx.signal);
    if (!got) return;
    const [nodes, targets] = await Promise.all([
      readIngressNodes({ team, environment }, ingressTags(got.items), ctx.signal),
      writer || got.items.length ? api.get('/nodes', { team, environment, limit: NODES_PER_TAG }, { signal: ctx.signal }) : null,
    ]);
    const targetList = targets && Array.isArray(targets.items) ? targets.items : [];
    nodes.sort((a, b) => Number(nodeNeedsAttention(b)) - Number(nodeNeedsAttention(a)) || str(a.name).localeCompare(str(b.name)));
    shown = { team, environment, etag: got.etag, routes: got.items, nodes, targets: targetList };
    routeRows(got.items.map((r) => ({ r, count: got.items.length, name: nodeName(str(r.target && r.target.node)) })));
    nodeRows(nodes.map((n) => ({ ...n, served: routesOf(n, got.items).map((r) => [r.id, r.hostname, r.path_prefix]) })));
    if (editor) editor.setNodes(targetList);
    showAttention();
    ctx.clearError();
    updated.textContent = `Live · ${got.items.length} route${got.items.length === 1 ? '' : 's'}, version ${got.etag ? got.etag.replace(/"/g, '') : '—'} · updated ${new Date().toLocaleTimeString()}`;
  }, {
    onError: (e) => {
      ctx.error(e);
      updated.textContent = e instanceof ApiError && e.status === 400 ? 'Check the team, environment and hostname.' : 'Refresh failed; retrying.';
    },
  });
}
