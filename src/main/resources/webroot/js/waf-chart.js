// The WAF page's traffic over time: the per-route WAF counters of the ingress nodes (their
// ingress_stats, cumulative since each agent started) turned into what was counted between two of
// the page's refreshes, summed over the nodes, and drawn per route with uPlot as the overview's charts
// are (served from the jar, styled through the CSSOM, colours from the page's CSS variables). The series
// live in this browser only: they start when the page is opened (or its team and environment change).

import uPlot from '/vendor/uplot/1.6.30/dist/uPlot.esm.js';
import { h, str } from './ui.js';

/** The counters of a route's `waf` report. */
export const COUNTERS = ['evaluated', 'denied', 'rate_limited', 'logged', 'would_deny', 'errors', 'busy'];
const MAX_POINTS = 720; // an hour of 5 s refreshes
const MAX_CHARTS = 8; // routes drawn (those with the most requests evaluated since the page was opened)
const TOP_RULES = 3; // rules drawn per route
const RULE_STYLE = [['--chart-2', '#1d7a3e', [6, 3]], ['--chart-3', '#b06f00', [2, 3]], ['--chart-axis', '#576173', [8, 3, 2, 3]]];

const TIME_INCRS = [1, 5, 10, 15, 30, 60, 120, 300, 600, 900, 1800, 3600];
const num = (v) => (typeof v === 'number' && Number.isFinite(v) && v >= 0 ? v : 0);

function cssVar(name, fallback) {
  const v = getComputedStyle(document.documentElement).getPropertyValue(name).trim();
  return v || fallback;
}

/** A route's `waf` counters as numbers ({evaluated, …, rules: {id: n}}), or null when the node reported none. */
export function wafCounters(n, routeId) {
  const stats = n && n.ingress_stats && typeof n.ingress_stats === 'object' ? n.ingress_stats[routeId] : null;
  const w = stats && typeof stats === 'object' && stats.waf && typeof stats.waf === 'object' ? stats.waf : null;
  if (!w) return null;
  const out = { rules: {} };
  for (const c of COUNTERS) out[c] = num(w[c]);
  if (w.rules && typeof w.rules === 'object') for (const [k, v] of Object.entries(w.rules)) out.rules[k] = num(v);
  return out;
}

/**
 * What each refresh added: `add(t, nodes, routeIds)` compares every node's counters per route with
 * the previous refresh's and keeps the differences, summed over the nodes, per route. A node (or
 * route) seen for the first time only sets the baseline; a counter lower than before means the agent
 * restarted, and the node's counters then count from zero. Returns {add, points, restarts}.
 */
export function trafficSeries() {
  let prev = new Map(); // `${node} ${route}` -> counters
  const points = []; // [{t, routes: {id: {evaluated, denied, …, rules}}}]
  let restarts = 0;

  function add(t, nodes, routeIds) {
    const next = new Map();
    const sums = {};
    for (const n of nodes) {
      for (const r of routeIds) {
        const cur = wafCounters(n, r);
        if (!cur) continue;
        const key = `${str(n.id)} ${r}`;
        next.set(key, cur);
        const old = prev.get(key);
        if (!old) continue; // first sight: the baseline
        const restarted = COUNTERS.some((c) => cur[c] < old[c]) || Object.entries(old.rules).some(([k, v]) => (cur.rules[k] ?? v) < v);
        if (restarted) restarts++;
        const s = sums[r] || (sums[r] = { rules: {} });
        for (const c of COUNTERS) s[c] = (s[c] || 0) + (restarted ? cur[c] : cur[c] - old[c]);
        for (const [k, v] of Object.entries(cur.rules)) {
          const d = restarted || old.rules[k] === undefined ? v : v - old.rules[k];
          if (d > 0) s.rules[k] = (s.rules[k] || 0) + d;
        }
      }
    }
    const first = prev.size === 0 && points.length === 0;
    prev = next;
    if (first && next.size) {
      points.push({ t, routes: {}, baseline: true });
    } else if (!first) {
      points.push({ t, routes: sums });
    }
    while (points.length > MAX_POINTS) points.shift();
  }

  return { add, points, get restarts() { return restarts; } };
}

/** Sums of a route over the points: {evaluated, denied, …, rules: [[id, n], …] most first}. */
export function routeTotals(points, routeId) {
  const t = { rules: {} };
  for (const c of COUNTERS) t[c] = 0;
  for (const p of points) {
    const s = p.routes[routeId];
    if (!s) continue;
    for (const c of COUNTERS) t[c] += s[c] || 0;
    for (const [k, v] of Object.entries(s.rules)) t.rules[k] = (t.rules[k] || 0) + v;
  }
  return { ...t, rules: Object.entries(t.rules).sort((a, b) => b[1] - a[1] || (a[0] < b[0] ? -1 : 1)) };
}

function options(rules, width) {
  const text = cssVar('--chart-axis', '#576173');
  const grid = cssVar('--chart-grid', '#e3e7ec');
  const axis = { stroke: text, grid: { stroke: grid, width: 1 }, ticks: { stroke: grid, width: 1 } };
  return {
    width,
    height: 180,
    legend: { show: true, live: false },
    cursor: { drag: { x: false, y: false } },
    scales: { y: { range: (u, min, max) => [0, max > 0 ? max * 1.1 : 1] } },
    // a point every 5 s: ticks of whole seconds at least, as clock times
    axes: [{ ...axis, incrs: TIME_INCRS, values: (u, splits) => splits.map((v) => new Date(v * 1000).toLocaleTimeString()) }, { ...axis, size: 48 }],
    series: [{},
      { label: 'evaluated', stroke: cssVar('--chart-1', '#1f5fbf'), width: 2, points: { show: false } },
      { label: 'denied', stroke: cssVar('--chart-4', '#b42318'), width: 3, points: { show: false } },
      ...rules.map((id, i) => ({
        label: `rule ${id}`, stroke: cssVar(RULE_STYLE[i][0], RULE_STYLE[i][1]), dash: RULE_STYLE[i][2], width: 1.5, points: { show: false },
      }))],
  };
}

/**
 * The charts inside `container`, one per route: `draw(series, routes, label)` after each refresh
 * (`routes`: the route ids, `label(id)`: its hostname and path). Tears itself down with the page.
 */
export function trafficCharts(ctx, container) {
  const grid = h('div', { class: 'charts', 'data-test': 'waf-traffic-charts' });
  const none = h('p', { class: 'muted', 'data-test': 'waf-traffic-charts-none' }, 'The charts start at the second refresh after the page is opened.');
  container.append(none, grid);
  const figs = new Map(); // route id -> {fig, plotEl, latestEl, plot, rules}
  let last = null;

  function figure(id) {
    let f = figs.get(id);
    if (f) return f;
    const plotEl = h('div', { class: 'chart-plot', role: 'img', 'data-test': 'waf-traffic-chart', 'data-route-id': id });
    const titleEl = h('span', { class: 'chart-title mono' });
    const latestEl = h('span', { class: 'chart-latest', 'data-test': 'waf-traffic-chart-latest', 'data-route-id': id });
    const fig = h('figure', { class: 'chart' }, h('figcaption', {}, titleEl, ' ', latestEl), plotEl);
    f = { fig, plotEl, titleEl, latestEl, plot: null, rules: '' };
    figs.set(id, f);
    return f;
  }

  function draw(series, routes, label) {
    last = [series, routes, label];
    const points = series.points.filter((p) => !p.baseline);
    const xs = points.map((p) => p.t);
    const shown = routes.map((id) => ({ id, totals: routeTotals(points, id) }))
      .sort((a, b) => b.totals.evaluated - a.totals.evaluated || routes.indexOf(a.id) - routes.indexOf(b.id)).slice(0, MAX_CHARTS);
    none.hidden = points.length > 0 && shown.length > 0;
    if (!points.length) none.textContent = 'The charts start at the second refresh after the page is opened: each point is what the nodes counted between two refreshes.';
    else if (!shown.length) none.textContent = 'No route to chart.';
    for (const [id, f] of figs) {
      if (!shown.some((s) => s.id === id) || !points.length) {
        if (f.plot) f.plot.destroy();
        f.fig.remove();
        figs.delete(id);
      }
    }
    if (!points.length) return;
    shown.forEach(({ id, totals }, i) => {
      const f = figure(id);
      if (grid.children[i] !== f.fig) grid.insertBefore(f.fig, grid.children[i] || null);
      const top = totals.rules.slice(0, TOP_RULES);
      const rulesText = top.length ? `; hits by rule: ${top.map(([k, v]) => `${k} ${v}`).join(', ')}` : '';
      const text = `${totals.evaluated} evaluated, ${totals.denied} denied${rulesText}`;
      f.titleEl.textContent = label(id);
      f.latestEl.textContent = `(since the page was opened: ${text})`;
      f.latestEl.dataset.evaluated = String(totals.evaluated);
      f.latestEl.dataset.denied = String(totals.denied);
      f.latestEl.dataset.rules = top.map(([k, v]) => `${k}=${v}`).join(',');
      f.plotEl.setAttribute('aria-label', `Requests per refresh through ${label(id)} since the page was opened: ${text}`);
      const ids = top.map(([k]) => k);
      const data = [xs,
        points.map((p) => (p.routes[id] ? p.routes[id].evaluated : 0)),
        points.map((p) => (p.routes[id] ? p.routes[id].denied : 0)),
        ...ids.map((k) => points.map((p) => (p.routes[id] && p.routes[id].rules[k]) || 0))];
      const width = Math.max(240, Math.floor(f.plotEl.clientWidth || grid.clientWidth || 600));
      if (f.plot && f.rules === ids.join(' ')) {
        f.plot.setData(data);
      } else {
        if (f.plot) f.plot.destroy();
        f.rules = ids.join(' ');
        f.plot = new uPlot(options(ids, width), data, f.plotEl);
      }
    });
  }

  function clear() {
    for (const f of figs.values()) {
      if (f.plot) f.plot.destroy();
      f.fig.remove();
    }
    figs.clear();
    last = null;
    none.hidden = false;
  }

  function rebuild() {
    for (const f of figs.values()) {
      if (f.plot) f.plot.destroy();
      f.plot = null;
      f.rules = '';
    }
    if (last) draw(...last);
  }

  const scheme = window.matchMedia ? window.matchMedia('(prefers-color-scheme: dark)') : null;
  if (scheme) {
    scheme.addEventListener('change', rebuild);
    ctx.onCleanup(() => scheme.removeEventListener('change', rebuild));
  }
  let lastWidth = 0;
  const resize = new ResizeObserver(() => {
    const width = Math.floor(grid.clientWidth);
    if (width && Math.abs(width - lastWidth) > 8) {
      lastWidth = width;
      for (const f of figs.values()) if (f.plot) f.plot.setSize({ width: Math.max(240, Math.floor(f.plotEl.clientWidth)), height: 180 });
    }
  });
  resize.observe(grid);
  ctx.onCleanup(() => {
    resize.disconnect();
    clear();
  });
  return { draw, clear };
}
