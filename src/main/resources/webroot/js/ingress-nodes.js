// How the pages find a team's ingress nodes (the Ingress page and the WAF page's "At the edge"): the
// ingress routes of one team and environment (GET /ingress/routes, every page of it: at most 500 routes),
// then the nodes carrying the routes' ingress tags (GET /nodes?tag= for each tag, one request per tag,
// not one per node). Both pages refresh every 5 s with these.

import { request, api } from './api.js';
import { str } from './ui.js';

const PAGE = 500;
const MAX_PAGES = 2; // 500 routes per team and environment at most: one page, a second if the server pages shorter
/** Ingress tags whose nodes are read (each one request). */
export const MAX_TAGS = 10;
/** Nodes read per ingress tag. */
export const NODES_PER_TAG = 100;

/**
 * The routes of `team` / `environment` (and `hostname`, exact, when given), in order: {items, etag}, or
 * null when the list changed while its pages were read (read it again at the next refresh).
 */
export async function readRoutes({ team, environment, hostname = '' }, signal) {
  const items = [];
  let etag = null;
  let cursor = null;
  for (let i = 0; i < MAX_PAGES; i++) {
    const r = await request('GET', '/ingress/routes', { query: { team, environment, hostname, limit: PAGE, cursor }, signal });
    if (i === 0) etag = r.headers.get('ETag');
    else if (r.headers.get('ETag') !== etag) return null;
    items.push(...(Array.isArray(r.data && r.data.items) ? r.data.items : []));
    cursor = r.data && r.data.next_cursor;
    if (!cursor) break;
  }
  return { items, etag };
}

/** The routes' ingress tags, each once, sorted. */
export function ingressTags(routes) {
  return [...new Set(routes.map((r) => str(r.ingress_tag)).filter(Boolean))].sort();
}

/** The nodes of `team` / `environment` carrying one of `tags` (the first MAX_TAGS), each once. */
export async function readIngressNodes({ team, environment }, tags, signal) {
  const lists = await Promise.all(tags.slice(0, MAX_TAGS).map((tag) =>
    api.get('/nodes', { team, environment, tag, limit: NODES_PER_TAG }, { signal })));
  const byId = new Map();
  for (const l of lists) for (const n of (Array.isArray(l && l.items) ? l.items : [])) byId.set(str(n.id), n);
  return [...byId.values()];
}

/** The routes `n` serves: those whose ingress tag the node carries. */
export function routesOf(n, routes) {
  return routes.filter((r) => Array.isArray(n.tags) && n.tags.includes(r.ingress_tag));
}
