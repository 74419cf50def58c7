// The MeshCA page's chart: the nodes' current certificates by time to expiry (GET /api/v1/meshca/summary,
// its time_to_expiry buckets), a bar chart drawn with uPlot as the overview's charts are (served from the
// jar, styled through the CSSOM, colours from the page's CSS variables, rebuilt when the scheme changes).

import uPlot from '/vendor/uplot/1.6.30/dist/uPlot.esm.js';
import { h } from './ui.js';

const LABELS = {
  under_1h: '< 1 h', '1h_6h': '1–6 h', '6h_12h': '6–12 h', '12h_24h': '12–24 h', '1d_7d': '1–7 d', over_7d: '> 7 d',
};

function cssVar(name, fallback) {
  const v = getComputedStyle(document.documentElement).getPropertyValue(name).trim();
  return v || fallback;
}

function options(names, width) {
  const text = cssVar('--muted', '#5c6677');
  const grid = cssVar('--border', '#d9dde3');
  const axis = { stroke: text, grid: { stroke: grid, width: 1 }, ticks: { stroke: grid, width: 1 } };
  return {
    width,
    height: 200,
    legend: { show: false },
    cursor: { drag: { x: false, y: false }, points: { show: false } },
    scales: { x: { time: false, range: [-0.5, names.length - 0.5] }, y: { range: (u, min, max) => [0, max > 0 ? max * 1.15 : 1] } },
    axes: [
      { ...axis, splits: () => names.map((_, i) => i), values: (u, splits) => splits.map((i) => LABELS[names[i]] || names[i] || '') },
      { ...axis, size: 56 },
    ],
    series: [{}, {
      label: 'nodes',
      stroke: cssVar('--accent', '#1f5fbf'),
      fill: cssVar('--accent', '#1f5fbf'),
      width: 1,
      points: { show: false },
      paths: uPlot.paths.bars({ size: [0.6, 80] }),
    }],
  };
}

/**
 * The chart inside `container`: returns {draw(summary)} (called with each answer) and tears itself
 * down with the page (ctx.onCleanup).
 */
export function expiryChart(ctx, container) {
  const plotEl = h('div', {
    class: 'chart-plot', role: 'img', 'data-test': 'meshca-chart-expiry', 'aria-label': 'Node certificates by time to expiry',
  });
  const latestEl = h('span', { class: 'chart-latest', 'data-test': 'meshca-chart-expiry-latest' }, 'Loading…');
  container.append(h('figure', { class: 'chart' },
    h('figcaption', {}, h('span', { class: 'chart-title' }, 'Current certificates by time to expiry'), ' ', latestEl), plotEl));
  let plot = null;
  let last = null;

  function draw(summary) {
    last = summary;
    const buckets = Array.isArray(summary && summary.time_to_expiry) ? summary.time_to_expiry : [];
    const names = buckets.map((b) => String(b.name));
    const counts = buckets.map((b) => (typeof b.count === 'number' ? b.count : 0));
    const text = buckets.length
      ? buckets.map((b, i) => `${LABELS[names[i]] || names[i]}: ${counts[i]}`).join(', ')
      : 'no data';
    latestEl.textContent = `(${text})`;
    latestEl.dataset.total = String(counts.reduce((a, b) => a + b, 0));
    plotEl.setAttribute('aria-label', `Current node certificates by time to expiry: ${text}`);
    const data = [names.map((_, i) => i), counts];
    const width = Math.max(240, Math.floor(plotEl.clientWidth || container.clientWidth || 600));
    if (!plot) plot = new uPlot(options(names, width), data, plotEl);
    else plot.setData(data);
  }

  function rebuild() {
    if (plot) plot.destroy();
    plot = null;
    if (last) draw(last);
  }

  const scheme = window.matchMedia ? window.matchMedia('(prefers-color-scheme: dark)') : null;
  if (scheme) {
    scheme.addEventListener('change', rebuild);
    ctx.onCleanup(() => scheme.removeEventListener('change', rebuild));
  }
  let lastWidth = 0;
  const resize = new ResizeObserver(() => {
    const width = Math.floor(plotEl.clientWidth);
    if (plot && width && Math.abs(width - lastWidth) > 8) {
      lastWidth = width;
      plot.setSize({ width: Math.max(240, width), height: 200 });
    }
  });
  resize.observe(plotEl);
  ctx.onCleanup(() => {
    resize.disconnect();
    if (plot) plot.destroy();
  });
  return { draw };
}
