// The node page's peers and inbound rules (GET /api/v1/nodes/{id}/peers): the relay and versions line,
// the peers sorted by name and shown a page at a time in the browser (the API gives the whole set; a
// node may have thousands), and the rules that let traffic in. Rows are kept by key across refreshes.

import { api } from './api.js';
import { h, btn, td, badge, chips, str, link, nodeHref, makeTable, keyedRows } from './ui.js';

const PEERS_PAGE = 50;

/** A key cut short for a table cell (the caller puts the whole key in a title). */
export function shortKey(k) {
  const s = str(k);
  return s.length > 16 ? `${s.slice(0, 12)}…` : s;
}

/**
 * The "Peers and inbound rules" section of the node at base (`/nodes/{id}`).
 * Returns slot (the section's body: "Loading…" until the first answer) and load() (one refresh).
 */
export function nodePeers(ctx, base) {
  const slot = h('div', { class: 'slot' }, h('p', { class: 'muted' }, 'Loading…'));
  const peersMeta = h('p', { class: 'muted', 'data-test': 'node-peers-meta' });
  const peersTable = makeTable(['Peer', 'Address', 'Online', 'Relay', 'Endpoints', 'Public key'], { caption: 'Peers', test: 'node-peers' });
  const rulesTable = makeTable(['From (sources)', 'Ports'], { caption: 'Inbound rules', test: 'node-rules' });
  let peersAll = [];
  let peersPage = 0;
  const peersPrev = btn('Previous', { 'data-test': 'node-peers-prev', class: 'btn-small', disabled: true });
  const peersNext = btn('Next', { 'data-test': 'node-peers-next', class: 'btn-small', disabled: true });
  const peersRange = h('span', { class: 'page-label', 'data-test': 'node-peers-page', 'aria-live': 'polite' });
  const peersPager = h('div', { class: 'pager', hidden: true }, peersPrev, peersRange, peersNext);
  peersPrev.addEventListener('click', () => {
    peersPage -= 1;
    showPeersPage();
  });
  peersNext.addEventListener('click', () => {
    peersPage += 1;
    showPeersPage();
  });
  const peersBlock = [peersMeta, h('h3', {}, 'Peers'), peersPager, peersTable.wrap, h('h3', {}, 'Inbound rules'), rulesTable.wrap];
  const showPeers = keyedRows(peersTable.tbody, {
    keyOf: (peer) => str(peer.id),
    emptyText: 'No peers: no grant connects this node to another.',
    colspan: 6,
    build: (peer) => {
      const pid = str(peer.id);
      return h('tr', { 'data-test': 'peer-row', 'data-peer-id': pid },
        h('th', { scope: 'row' }, link(nodeHref(pid), str(peer.name) || pid, { 'data-focus-key': `peer:${pid}` })),
        td(h('span', { class: 'mono' }, str(peer.address))),
        td(badge(peer.online ? 'online' : 'offline')),
        td(str(peer.relay)),
        td(chips(peer.endpoints)),
        td(h('span', { class: 'mono', title: str(peer.public_key) }, shortKey(peer.public_key))));
    },
  });
  const showRules = keyedRows(rulesTable.tbody, {
    keyOf: (r) => JSON.stringify(r),
    emptyText: 'No inbound rules: the node accepts nothing.',
    colspan: 2,
    build: (r) => h('tr', { 'data-test': 'rule-row' }, td(chips(r.src)), td(chips(r.ports))),
  });

  async function load() {
    const p = await api.get(`${base}/peers`, null, { signal: ctx.signal });
    const peers = p && p.peers && Array.isArray(p.peers.items) ? p.peers.items : [];
    const rules = p && p.acl && Array.isArray(p.acl.rules) ? p.acl.rules : [];
    peersMeta.textContent = `Relay ${str(p && p.relay) || 'none'} · peers version ${str(p && p.peers && p.peers.version)} · ACL version ${str(p && p.acl && p.acl.version)}`;
    if (!slot.contains(peersTable.wrap)) slot.replaceChildren(...peersBlock);
    peersAll = [...peers].sort((a, b) => str(a.name).localeCompare(str(b.name)));
    showPeersPage();
    showRules(rules);
  }

  function showPeersPage() {
    const pages = Math.max(1, Math.ceil(peersAll.length / PEERS_PAGE));
    peersPage = Math.min(Math.max(0, peersPage), pages - 1);
    const from = peersPage * PEERS_PAGE;
    const slice = peersAll.slice(from, from + PEERS_PAGE);
    showPeers(slice);
    peersPager.hidden = peersAll.length <= PEERS_PAGE;
    peersRange.textContent = `Peers ${peersAll.length ? from + 1 : 0}–${from + slice.length} of ${peersAll.length}`;
    peersPrev.disabled = peersPage === 0;
    peersNext.disabled = peersPage >= pages - 1;
  }

  return { slot, load };
}
