// The WAF page's "At the edge" sections: the ingress nodes that enforce the traffic policy (found as
// the Ingress page finds them, ingress-nodes.js), what needs attention (a node behind, a probe not
// passed for the current version, a compile error), each node's waf_sync and probe, the WAF counters
// per route summed over the nodes with their charts (waf-chart.js), the samples the nodes reported
// (GET /waf/samples) and a preview of the editor's text on those samples (POST /waf/preview without
// samples). Refreshed every 5 s while the page is shown.

import { api, can, isAbort } from './api.js';
import { h, badge, str, makeTable, keyedRows, td, link, nodeHref, fmtTime, errorBox, renderIfChanged } from './ui.js';
import { scopeQuery } from './acl-common.js';
import { readRoutes, readIngressNodes, ingressTags, routesOf, MAX_TAGS } from './ingress-nodes.js';
import { COUNTERS, wafCounters, trafficSeries, trafficCharts } from './waf-chart.js';
import { resultView } from './waf-preview.js';

const POLL_MS = 5000;
const COUNTER_LABELS = {
  evaluated: 'Evaluated', denied: 'Denied', rate_limited: 'Rate limited', logged: 'Logged', would_deny: 'Would deny (shadow)', errors: 'Errors', busy: 'Busy (503)',
};

const syncOf = (n) => (n && n.waf_sync && typeof n.waf_sync === 'object' ? n.waf_sync : {});
const probeOf = (n) => (syncOf(n).probe && typeof syncOf(n).probe === 'object' ? syncOf(n).probe : {});
const secondsTime = (s) => (typeof s === 'number' && s > 0 ? fmtTime(new Date(s * 1000).toISOString()) : h('span', { class: 'muted' }, '—'));
const ver = (v) => (v === null || v === undefined || v === '' ? 'none' : str(v));

/** Why node `n` needs attention: [[reason, text], …] (empty: it does not). */
export function wafProblems(n) {
  const s = syncOf(n);
  const p = probeOf(n);
  const out = [];
  if (s.state === 'behind') out.push(['behind', `has applied policy version ${ver(s.acknowledged)}, current is ${ver(s.current)}`]);
  if (s.current != null && s.state !== 'none' && p.state !== 'passed') {
    out.push([`probe ${str(p.state) || 'none'}`, p.state === 'failed' ? `its probe of version ${ver(p.version)} failed${p.detail ? `: ${str(p.detail)}` : ''}`
      : p.state === 'stale' ? `its last probe was of version ${ver(p.version)}, not the current ${ver(s.current)}`
        : `no probe proves version ${ver(s.current)} yet`]);
  }
  if (s.error) out.push(['error', `reports a compile error: ${str(s.error)}`]);
  return out;
}

/** "GET /admin?token=[redacted]" of a reported sample's request. */
function requestLine(s) {
  const r = s && s.request && typeof s.request === 'object' ? s.request : {};
  return `${str(r.method) || 'GET'} ${str(r.target)}`;
}

/** The reported samples as the server turns them into a preview's requests (those whose target a request can carry). */
function asRequests(samples) {
  return samples.filter((s) => {
    const t = s && s.request ? s.request.target : null;
    return typeof t === 'string' && t.startsWith('/') && ![...t].some((c) => c.charCodeAt(0) < 0x21 || c.charCodeAt(0) > 0x7e);
  }).map((s) => ({ method: str(s.request.method || 'GET').toUpperCase(), target: s.request.target, route: s.route }));
}

/**
 * The sections (`sections`), `stale()` when the editor changes (the preview on reported samples belongs
 * to the old text), `reset()` when the team and environment change. `candidate(box)` and `problem(box, e)`
 * are the editor's, as for waf-preview.js.
 */
export function wafTraffic(ctx, sc, { candidate, problem }) {
  const readable = can('ingress:read') && can('nodes:read');
  const updated = h('p', { class: 'muted refresh-status', 'data-test': 'waf-edge-updated', role: 'status' }, 'Loading…');
  let shown = { routes: [], nodes: [], samples: [] };
  let series = trafficSeries();

  // ---- needs attention ----
  const attention = h('div', { 'data-test': 'waf-attention', 'aria-live': 'polite' });

  // ---- the nodes ----
  const nodesTable = makeTable(['Node', 'Status', 'Policy sync', 'Enforcing / shadowing', 'Probe', 'Error'], { caption: 'Ingress nodes and their traffic policy', test: 'waf-nodes' });
  const nodeRows = keyedRows(nodesTable.tbody, {
    keyOf: (n) => str(n.id),
    colspan: 6,
    emptyText: 'No ingress node: no node carries the ingress tags of these routes.',
    build: (n) => {
      const s = syncOf(n);
      const p = probeOf(n);
      const problems = wafProblems(n);
      const versions = (held, want, what) => h('div', {}, `${what} ${ver(held)}`,
        h('span', { class: 'muted' }, ` (current ${ver(want)})`), held != null && want != null && Number(held) !== Number(want) ? h('strong', {}, ' — differs') : '');
      return h('tr', {
        'data-test': 'waf-node', 'data-node-id': str(n.id), 'data-sync': str(s.state), 'data-probe': str(p.state), class: problems.length ? 'row-attention' : null,
      },
      h('th', { scope: 'row' }, link(nodeHref(str(n.id)), str(n.name) || str(n.id), { 'data-focus-key': `wnode:${str(n.id)}` }),
        problems.length ? h('span', { class: 'visually-hidden' }, ' (needs attention)') : null),
      td(badge(str(n.status))),
      td(badge(str(s.state) || 'unknown', { 'data-test': 'waf-node-sync' }),
        h('div', { class: 'muted small' }, `applied ${ver(s.acknowledged)}; current ${ver(s.current)}`)),
      td(h('div', { 'data-test': 'waf-node-versions' }, versions(s.enforcing, s.enforce, 'enforcing'),
        s.shadowing != null || s.shadow != null ? versions(s.shadowing, s.shadow, 'shadowing') : h('div', { class: 'muted small' }, 'no shadow version'))),
      td(badge(str(p.state) || 'none', { 'data-test': 'waf-node-probe' }),
        p.state && p.state !== 'none' ? h('div', { class: 'muted small' }, `version ${ver(p.version)}${p.status != null ? `, status ${str(p.status)}` : ''}, `, secondsTime(p.at),
          p.detail ? `: ${str(p.detail)}` : '') : ''),
      td(s.error ? h('span', { class: 'waf-eval-errors', 'data-test': 'waf-node-error' }, str(s.error)) : h('span', { class: 'muted' }, 'none')));
    },
  });

  // ---- traffic per route ----
  const trafficTable = makeTable(['Route', 'Nodes reporting', ...COUNTERS.map((c) => COUNTER_LABELS[c]), 'Top rules (hits)'],
    { caption: 'WAF counters per route, summed over the ingress nodes', test: 'waf-traffic' });
  const trafficRows = keyedRows(trafficTable.tbody, {
    keyOf: (x) => x.id,
    colspan: COUNTERS.length + 3,
    emptyText: 'No ingress route in this team and environment.',
    build: (x) => h('tr', { 'data-test': 'waf-traffic-route', 'data-route-id': x.id, ...Object.fromEntries(COUNTERS.map((c) => [`data-${c.replace('_', '-')}`, String(x.sums[c])])) },
      h('th', { scope: 'row' }, h('span', { class: 'mono' }, x.label)),
      td(x.reporting ? String(x.reporting) : h('span', { class: 'muted' }, 'none')),
      ...COUNTERS.map((c) => h('td', { class: 'num', 'data-test': `waf-traffic-${c.replace('_', '-')}` }, x.reporting ? x.sums[c].toLocaleString() : '—')),
      td(x.rules.length ? h('ul', { class: 'plain-list' }, x.rules.slice(0, 5).map(([k, v]) => h('li', { 'data-test': 'waf-traffic-rule', 'data-rule': k },
        h('span', { class: 'mono' }, k), ` ${v.toLocaleString()}`))) : h('span', { class: 'muted' }, 'none'))),
  });
  const chartsBox = h('div', {});
  const charts = trafficCharts(ctx, chartsBox);

  // ---- samples ----
  const samplesTable = makeTable(['Time', 'Node', 'Route', 'Rule', 'Outcome', 'Status', 'Request'], { caption: 'Samples the ingress nodes reported', test: 'waf-reported-samples' });
  const sampleRows = keyedRows(samplesTable.tbody, {
    keyOf: (x) => `${x.s.node} ${x.s.at} ${x.i}`,
    colspan: 7,
    emptyText: 'No sample reported: the ingress nodes denied nothing (and their shadow version would have denied nothing) lately.',
    build: ({ s, node, route }) => h('tr', {
      'data-test': 'waf-reported-sample', 'data-node-id': str(s.node), 'data-route-id': str(s.route), 'data-rule': str(s.rule), 'data-outcome': str(s.outcome),
    },
    td(secondsTime(s.at)),
    td(link(nodeHref(str(s.node)), node)),
    td(h('span', { class: 'mono' }, route)),
    td(h('span', { class: 'mono' }, str(s.rule))),
    td(badge(str(s.outcome))),
    td(str(s.status)),
    td(h('span', { class: 'mono waf-request' }, requestLine(s)))),
  });
  const reportedBtn = h('button', { type: 'button', class: 'btn', 'data-test': 'waf-preview-reported' }, 'Preview on reported samples');
  const reportedBox = errorBox('waf-reported-error');
  const reportedResult = h('div', { class: 'preview-result', 'data-test': 'waf-reported-result', 'aria-live': 'polite' });
  const reportedStale = h('p', { class: 'stale-note', 'data-test': 'waf-reported-stale', role: 'status', hidden: true },
    'The editor changed: the preview on reported samples shown for the earlier text was cleared. Preview again.');
  let generation = 0;

  reportedBtn.addEventListener('click', async () => {
    const doc = candidate(reportedBox);
    if (!doc) return;
    const asked = generation;
    reportedBtn.disabled = true;
    try {
      // the requests the server will evaluate, read first to label the rows (the answer gives each one's index and route)
      const list = await api.get('/waf/samples', scopeQuery(sc), { signal: ctx.signal });
      const r = await api.post('/waf/preview', { policy: doc }, { query: scopeQuery(sc), signal: ctx.signal });
      if (asked !== generation) return;
      let requests = asRequests(Array.isArray(list && list.samples) ? list.samples : []);
      const rows = Array.isArray(r.samples) ? r.samples : [];
      const same = requests.length === rows.length && rows.every((x, i) => str(x.route) === str(requests[i].route));
      requests = same ? requests.map((q) => ({ ...q, route: routeLabel(str(q.route)) })) : [];
      reportedStale.hidden = true;
      reportedResult.replaceChildren(
        ...(rows.length ? [] : [h('p', { class: 'muted', 'data-test': 'waf-reported-none' }, 'No sample was reported to evaluate the editor\'s policy on.')]),
        ...(same ? [] : [h('p', { class: 'muted' }, 'The samples changed while they were read: each row shows its route only.')]),
        ...resultView(r, requests, { test: 'waf-reported', noun: 'reported sample' }));
    } catch (e) {
      if (isAbort(e) || asked !== generation) return;
      reportedResult.replaceChildren();
      problem(reportedBox, e);
    } finally {
      reportedBtn.disabled = false;
    }
  });

  const routeLabel = (id) => {
    const r = shown.routes.find((x) => str(x.id) === id);
    return r ? `${str(r.hostname)}${str(r.path_prefix)}` : id;
  };
  const nodeLabel = (id) => {
    const n = shown.nodes.find((x) => str(x.id) === id);
    return n ? str(n.name) || id : id;
  };

  function showAttention() {
    const bad = shown.nodes.map((n) => [n, wafProblems(n)]).filter(([, p]) => p.length);
    renderIfChanged(attention, bad.map(([n, p]) => [n.id, n.name, p]), () => {
      if (!bad.length) {
        return h('p', { class: 'muted', 'data-test': 'waf-attention-none' }, shown.nodes.length
          ? 'Nothing: every ingress node enforces the current version, its probe passed, and none reports an error.'
          : 'Nothing: no ingress node serves these routes.');
      }
      return h('ul', { class: 'plain-list' }, bad.map(([n, problems]) => h('li', {
        'data-test': 'waf-attention-node', 'data-node-id': str(n.id), 'data-reasons': problems.map(([r]) => r).join(','),
      }, 'node ', link(nodeHref(str(n.id)), str(n.name) || str(n.id)), ': ',
      problems.map(([reason, text], i) => h('span', {}, i ? '; ' : '', badge(reason), ' ', text)))));
    });
  }

  function show() {
    const ids = shown.routes.map((r) => str(r.id));
    nodeRows(shown.nodes);
    showAttention();
    trafficRows(ids.map((id) => {
      const sums = Object.fromEntries(COUNTERS.map((c) => [c, 0]));
      const rules = {};
      let reporting = 0;
      for (const n of shown.nodes) {
        const w = wafCounters(n, id);
        if (!w) continue;
        reporting++;
        for (const c of COUNTERS) sums[c] += w[c];
        for (const [k, v] of Object.entries(w.rules)) rules[k] = (rules[k] || 0) + v;
      }
      return { id, label: routeLabel(id), reporting, sums, rules: Object.entries(rules).sort((a, b) => b[1] - a[1] || (a[0] < b[0] ? -1 : 1)) };
    }));
    charts.draw(series, ids, routeLabel);
    sampleRows(shown.samples.map((s, i) => ({ s, i, node: nodeLabel(str(s.node)), route: routeLabel(str(s.route)) })));
  }

  const poller = readable ? ctx.poll(POLL_MS, async () => {
    if (!sc.team || !sc.environment) {
      updated.textContent = 'Choose a team and an environment to see its ingress nodes.';
      return;
    }
    const scope = { team: sc.team, environment: sc.environment };
    const got = await readRoutes(scope, ctx.signal);
    if (!got) return;
    const [nodes, samples] = await Promise.all([
      readIngressNodes(scope, ingressTags(got.items), ctx.signal),
      api.get('/waf/samples', scopeQuery(sc), { signal: ctx.signal }),
    ]);
    if (scope.team !== sc.team || scope.environment !== sc.environment) return; // the scope changed meanwhile
    const served = nodes.filter((n) => routesOf(n, got.items).length);
    served.sort((a, b) => Number(wafProblems(b).length > 0) - Number(wafProblems(a).length > 0) || str(a.name).localeCompare(str(b.name)));
    series.add(Date.now() / 1000, served, got.items.map((r) => str(r.id)));
    shown = { routes: got.items, nodes: served, samples: Array.isArray(samples && samples.samples) ? samples.samples : [] };
    show();
    updated.textContent = `Live · ${served.length} ingress node${served.length === 1 ? '' : 's'}, ${got.items.length} route${got.items.length === 1 ? '' : 's'}, `
      + `${shown.samples.length} sample${shown.samples.length === 1 ? '' : 's'} · updated ${new Date().toLocaleTimeString()}`;
  }, {
    onError: (e) => {
      ctx.error(e);
      updated.textContent = 'The ingress nodes could not be refreshed; retrying.';
    },
  }) : null;

  const panel = (id, title, ...body) => h('section', { class: 'panel', 'aria-labelledby': id }, h('h2', { id }, title), ...body);
  const sections = readable ? [
    panel('waf-attention-h', 'At the edge: needs attention',
      h('p', { class: 'muted' }, 'The ingress nodes of this team and environment (those carrying its routes\' ingress tags, up to '
        + `${MAX_TAGS} tags, as on the Ingress page) that are behind the current version, whose probe has not passed for it, or that report a compile error. Live: refreshed every 5 s.`),
      updated, attention),
    panel('waf-nodes-h', 'Ingress nodes', h('p', { class: 'hint' }, 'What each node reported with its latest heartbeat: the policy version applied, the versions it enforces and shadows beside the current ones, the probe that proves the current version, its last compile error. Those needing attention first.'), nodesTable.wrap),
    panel('waf-traffic-h', 'Traffic per route',
      h('p', { class: 'hint' }, 'Counted by each node since its agent started, summed over the nodes. Rate limits (429) are apart from denials; "would deny" is the shadow version\'s.'),
      trafficTable.wrap,
      h('h3', {}, 'Over time, since this page was opened'),
      h('p', { class: 'hint', 'data-test': 'waf-traffic-charts-note' }, 'Built in this browser from the refreshes every 5 s since the page was opened (the server keeps no history of these counters; leaving the page or changing the team or environment starts again). '
        + 'Each point is what the nodes counted between two refreshes; a counter lower than at the refresh before is taken as an agent restart and counted from zero. '
        + 'Per route: requests evaluated, denied, and the hits of its top rules (denials, rate limits and logs); the caption gives the figures in words.'),
      chartsBox),
    panel('waf-reported-h', 'Samples the nodes reported',
      h('p', { class: 'hint' }, 'The last denied (and shadow-denied) requests of each ingress node, newest first, redacted at the edge (no cookies or credentials, such query values [redacted]).'),
      samplesTable.wrap,
      h('div', { class: 'button-row' }, reportedBtn,
        h('span', { class: 'muted' }, 'What the editor\'s policy would decide on these samples, beside the current version. Nothing is saved.')),
      reportedStale, reportedBox, reportedResult),
  ] : [panel('waf-attention-h', 'At the edge', h('p', { class: 'muted', 'data-test': 'waf-edge-unreadable' }, 'Your role cannot read the ingress routes and nodes, so the ingress nodes enforcing this policy are not shown.'))];

  return {
    sections,
    /** The editor changed: the preview on reported samples belongs to the old text. */
    stale() {
      generation++;
      const had = reportedResult.childNodes.length || !reportedBox.hidden;
      reportedResult.replaceChildren();
      reportedBox.replaceChildren();
      reportedBox.hidden = true;
      if (had) reportedStale.hidden = false;
    },
    /** The team and environment changed: the series start again, the tables wait for the next refresh. */
    reset() {
      series = trafficSeries();
      charts.clear();
      shown = { routes: [], nodes: [], samples: [] };
      if (poller) {
        updated.textContent = 'Loading…';
        show();
        poller.kick();
      }
    },
  };
}
