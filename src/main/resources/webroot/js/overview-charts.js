// The overview's charts (GET /api/v1/overview/series): heartbeats per second, nodes by status and
// operations by outcome over the last hour or the last 24 h, drawn with uPlot (served from the jar).
// uPlot styles its elements through the CSSOM (element.style), which the strict CSP allows; colours
// come from the page's CSS variables, read again when the colour scheme changes.

import uPlot from '/vendor/uplot/1.6.30/dist/uPlot.esm.js';
import { api } from './api.js';
import { h, btn } from './ui.js';

const WINDOWS = [
  { key: '1h', label: 'Last hour', span: 'over the last hour', pollMs: 10000 },
  { key: '24h', label: 'Last 24 h', span: 'over the last 24 hours', pollMs: 60000 },
];

// Each chart: its series (name in the answer, label, CSS variable of its colour and a fallback).
const CHARTS = [
  {
    key: 'hbps',
    title: 'Heartbeats per second',
    series: [{ name: 'heartbeats_per_second', label: 'heartbeats/s', color: ['--accent', '#1f5fbf'] }],
    summary: (last) => `latest ${fmt(last.heartbeats_per_second)} heartbeats per second`,
  },
  {
    key: 'nodes',
    title: 'Nodes by status',
    series: [
      { name: 'online', label: 'online', color: ['--ok', '#1d7a3e'] },
      { name: 'stale', label: 'stale', color: ['--warn', '#8a5a00'] },
      { name: 'pending', label: 'pending', color: ['--grey', '#4b5563'] },
    ],
    summary: (last) => `latest ${fmt(last.online)} online, ${fmt(last.stale)} stale, ${fmt(last.pending)} pending`,
  },
  {
    key: 'ops',
    title: 'Operations by outcome',
    stepped: true,
    series: [
      { name: 'operations_succeeded', label: 'succeeded', color: ['--ok', '#1d7a3e'] },
      { name: 'operations_failed', label: 'failed', color: ['--bad', '#b42318'] },
      { name: 'operations_expired', label: 'expired', color: ['--warn', '#8a5a00'] },
    ],
    summary: (last, sums, span) => `${sums.operations_succeeded} succeeded, ${sums.operations_failed} failed, `
      + `${sums.operations_expired} expired ${span}`,
  },
];

function fmt(v) {
  if (typeof v !== 'number' || !Number.isFinite(v)) return 'no data';
  return String(Math.round(v * 100) / 100);
}

function cssVar(name, fallback) {
  const v = getComputedStyle(document.documentElement).getPropertyValue(name).trim();
  return v || fallback;
}

/** The newest non-null value of each series, and the sum of each over the window. */
function summarize(data) {
  const last = {};
  const sums = {};
  for (const [name, values] of Object.entries(data.series || {})) {
    last[name] = null;
    sums[name] = 0;
    if (!Array.isArray(values)) continue;
    for (let i = values.length - 1; i >= 0; i -= 1) {
      if (typeof values[i] === 'number') {
        if (last[name] === null) last[name] = values[i];
        sums[name] += values[i];
      }
    }
  }
  return { last, sums };
}

function options(chart, width) {
  const text = cssVar('--muted', '#5c6677');
  const grid = cssVar('--border', '#d9dde3');
  const axis = { stroke: text, grid: { stroke: grid, width: 1 }, ticks: { stroke: grid, width: 1 } };
  return {
    width,
    height: 180,
    legend: { show: true, live: false },
    cursor: { drag: { x: false, y: false } },
    scales: { y: { range: (u, min, max) => [0, max > 0 ? max * 1.1 : 1] } },
    axes: [{ ...axis }, { ...axis, size: 56 }],
    series: [{}, ...chart.series.map((s) => ({
      label: s.label,
      stroke: cssVar(s.color[0], s.color[1]),
      width: 2,
      spanGaps: false,
      points: { show: false },
      paths: chart.stepped ? uPlot.paths.stepped({ align: 1 }) : undefined,
    }))],
  };
}

/**
 * Renders the charts section into `ctx.root`'s `container`, polling the series while the page is
 * shown. Returns nothing; stops with the page (ctx.signal).
 */
export function renderCharts(ctx, container) {
  let windowKey = WINDOWS.some((w) => w.key === ctx.params.get('window')) ? ctx.params.get('window') : '1h';
  let latest = null; // the last answer
  const plots = {};
  const buttons = WINDOWS.map((w) => btn(w.label, {
    class: 'btn-small', 'data-test': `overview-window-${w.key}`, 'aria-pressed': String(w.key === windowKey),
  }));
  const note = h('p', { class: 'muted', 'data-test': 'overview-series-note', hidden: true });
  const status = h('p', { class: 'muted refresh-status', 'data-test': 'overview-series-updated' }, 'Loading the charts…');
  const figures = CHARTS.map((c) => {
    const plotEl = h('div', { class: 'chart-plot', role: 'img', 'data-test': `overview-chart-${c.key}`, 'aria-label': c.title });
    const latestEl = h('span', { class: 'chart-latest', 'data-test': `overview-chart-${c.key}-latest` }, 'Loading…');
    const fig = h('figure', { class: 'chart' }, h('figcaption', {}, h('span', { class: 'chart-title' }, c.title), ' ', latestEl), plotEl);
    return { chart: c, fig, plotEl, latestEl };
  });
  container.append(
    h('div', { class: 'section-head' },
      h('h2', { id: 'overview-charts-title' }, 'Trends'),
      h('div', { class: 'toggle', role: 'group', 'aria-label': 'Time window' }, buttons)),
    note,
    h('div', { class: 'charts', 'data-test': 'overview-charts', 'data-window': windowKey }, figures.map((f) => f.fig)),
    status);
  const chartsEl = container.querySelector('[data-test="overview-charts"]');

  function draw() {
    if (!latest) return;
    const w = WINDOWS.find((x) => x.key === latest.window) || WINDOWS[0];
    const withheld = latest.scope !== 'mesh';
    note.hidden = !withheld;
    note.textContent = withheld ? `Charts are kept for the whole mesh only: ${latest.detail || ''}` : '';
    const { last, sums } = summarize(latest);
    const xs = Array.isArray(latest.timestamps) ? latest.timestamps : [];
    for (const f of figures) {
      f.fig.hidden = withheld;
      if (withheld) continue;
      const data = [xs, ...f.chart.series.map((s) => (Array.isArray(latest.series[s.name]) ? latest.series[s.name] : []))];
      const any = data.slice(1).some((vs) => vs.some((v) => typeof v === 'number'));
      const summary = any ? f.chart.summary(last, sums, w.span) : `no data ${w.span} yet`;
      f.latestEl.textContent = `(${summary})`;
      f.latestEl.dataset.hasData = String(any);
      f.plotEl.setAttribute('aria-label', `${f.chart.title} ${w.span}: ${summary}`);
      const width = Math.max(240, Math.floor(f.plotEl.clientWidth || chartsEl.clientWidth || 600));
      if (!plots[f.chart.key]) {
        plots[f.chart.key] = new uPlot(options(f.chart, width), data, f.plotEl);
      } else {
        plots[f.chart.key].setData(data);
      }
    }
    chartsEl.dataset.window = latest.window;
    status.textContent = `One point every ${latest.step_s} s, merged from every replica; refreshed every ${period() / 1000} s.`;
  }

  /** Rebuilds the charts (a new colour scheme, a new width). */
  function rebuild() {
    for (const key of Object.keys(plots)) {
      plots[key].destroy();
      delete plots[key];
    }
    draw();
  }

  // a new point every step_s: the last hour is asked again every step (2 to 10 s), the last day every minute
  const period = () => {
    const w = WINDOWS.find((x) => x.key === windowKey) || WINDOWS[0];
    const step = latest && latest.window === w.key && typeof latest.step_s === 'number' ? latest.step_s * 1000 : w.pollMs;
    return Math.min(w.pollMs, Math.max(2000, step));
  };
  const poller = ctx.poll(period, async () => {
    const asked = windowKey;
    const data = await api.get('/overview/series', { window: asked }, { signal: ctx.signal });
    if (asked !== windowKey || !data || typeof data !== 'object') return;
    latest = data;
    draw();
  }, {
    onError: (e) => {
      ctx.error(e);
      status.textContent = 'The charts could not be refreshed; retrying.';
    },
  });

  buttons.forEach((b, i) => b.addEventListener('click', () => {
    const key = WINDOWS[i].key;
    if (key === windowKey) return;
    windowKey = key;
    buttons.forEach((x, j) => x.setAttribute('aria-pressed', String(j === i)));
    const q = new URLSearchParams(ctx.params);
    q.set('window', key);
    ctx.setHashQuiet(q);
    status.textContent = 'Loading…';
    poller.kick();
  }));

  // colours follow the scheme; widths follow the window
  const scheme = window.matchMedia ? window.matchMedia('(prefers-color-scheme: dark)') : null;
  if (scheme) {
    scheme.addEventListener('change', rebuild);
    ctx.onCleanup(() => scheme.removeEventListener('change', rebuild));
  }
  let lastWidth = 0;
  const resize = new ResizeObserver(() => {
    const width = Math.floor(chartsEl.clientWidth);
    if (width && Math.abs(width - lastWidth) > 8) {
      lastWidth = width;
      for (const f of figures) {
        const p = plots[f.chart.key];
        if (p) p.setSize({ width: Math.max(240, Math.floor(f.plotEl.clientWidth)), height: 180 });
      }
    }
  });
  resize.observe(chartsEl);
  ctx.onCleanup(() => {
    resize.disconnect();
    for (const p of Object.values(plots)) p.destroy();
  });
}
