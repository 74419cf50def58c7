// One node: every field, its peers and inbound rules, its operations, and the operation buttons.
// Refreshes every 5 s (every 3 s while an operation is pending or delivered).

import { api, can, seg, isAbort, ApiError } from './api.js';
import {
  h, btn, td, badge, chips, fmtTime, relative, pre, str, link, nodeHref, makeTable, emptyRow,
  field, errorBox, showFormError, clearFormError, confirmDialog, renderIfChanged, keyedRows,
} from './ui.js';
import { liveBadge } from './nodes.js';

const FIELD_ORDER = [
  'id', 'name', 'team', 'environment', 'status', 'heartbeat', 'address', 'public_key', 'endpoints', 'tags',
  'routes', 'relay', 'relay_status', 'services', 'ingress', 'acl_matches', 'policy_sync', 'telemetry',
  'created_at', 'updated_at',
];
const LABELS = {
  id: 'Id', name: 'Name', team: 'Team', environment: 'Environment', status: 'Status', heartbeat: 'Last heartbeat',
  address: 'Mesh address', public_key: 'Public key', endpoints: 'Endpoints', tags: 'Tags', routes: 'Routes',
  relay: 'Relay', relay_status: 'Relay status', services: 'Bound services', ingress: 'Ingress',
  acl_matches: 'ACL matches', policy_sync: 'Policy sync', telemetry: 'Telemetry', created_at: 'Enrolled',
  updated_at: 'Record updated',
};

/** Tags typed as "web, tag:db  batch" → ["tag:web", "tag:db", "tag:batch"]. */
export function parseTags(text) {
  return String(text).split(/[\s,]+/).filter(Boolean).map((t) => (t.startsWith('tag:') ? t : `tag:${t}`));
}

function parseList(text) {
  return String(text).split(/[\s,]+/).filter(Boolean);
}

function shortKey(k) {
  const s = str(k);
  return s.length > 16 ? `${s.slice(0, 12)}…` : s;
}

function opTarget(op) {
  const t = op.target && typeof op.target === 'object' ? op.target : {};
  if (op.kind === 'rekey') return h('span', { title: str(t.old_key) }, `old key ${shortKey(t.old_key)}`);
  if (op.kind === 'move_relay') return `${str(t.from) || '(none)'} → ${str(t.relay)}`;
  if (op.kind === 'drain_ingress') return `ingress ${str(t.name)}`;
  return str(op.target);
}

function opResult(op) {
  const r = op.result;
  if (!r || typeof r !== 'object') return h('span', { class: 'muted' }, '—');
  const parts = [h('span', {}, str(r.detail))];
  if (r.new_key) parts.push(h('span', { class: 'muted', title: str(r.new_key) }, ` (new key ${shortKey(r.new_key)})`));
  const rep = r.reported;
  if (rep && typeof rep === 'object' && str(rep.detail) !== str(r.detail)) {
    parts.push(h('div', { class: 'muted' }, `agent said: ${str(rep.status)}${rep.detail ? ` — ${str(rep.detail)}` : ''}`));
  }
  return parts;
}

function actorText(a) {
  if (!a || typeof a !== 'object') return str(a);
  return h('span', { title: `${str(a.type)} ${str(a.id)}` }, str(a.name) || str(a.id));
}

export function renderNode(ctx, id) {
  ctx.setTitle('Node');
  const canOperate = can('nodes:operate');
  const canServices = can('nodes:services');

  const title = ctx.heading('Node');
  const statusSlot = h('span', { class: 'title-status' });
  const refreshLabel = h('span', { class: 'muted refresh-status', 'data-test': 'node-refreshed' });
  const fieldsDl = h('dl', { class: 'fields', 'data-test': 'node-fields' });
  const ingressSlot = h('div', { class: 'slot' });
  const opsSlot = h('div', { class: 'slot' }, h('p', { class: 'muted' }, 'Loading…'));
  const peersSlot = h('div', { class: 'slot' }, h('p', { class: 'muted' }, 'Loading…'));
  const actionsSlot = h('div', { class: 'slot' });
  const actionError = errorBox('node-action-error');

  let node = null;
  let openOps = false;
  let actionsBuilt = false;
  let heartbeatAge = null;
  let relaySelect = null;
  let relaySubmit = null;
  let relaysLoaded = false;
  let relayTouched = false;
  let poller = null;

  ctx.root.append(
    h('p', { class: 'crumbs' }, link('#/nodes', 'Nodes'), ' / ', h('span', { class: 'mono' }, id)),
    h('div', { class: 'page-head' }, title, statusSlot, refreshLabel),
    actionError,
    (canOperate || canServices) ? h('section', { class: 'panel', 'aria-labelledby': 'node-actions-h' },
      h('h2', { id: 'node-actions-h' }, 'Actions'), actionsSlot) : null,
    h('section', { class: 'panel', 'aria-labelledby': 'node-fields-h' }, h('h2', { id: 'node-fields-h' }, 'Record'), fieldsDl),
    h('section', { class: 'panel', 'aria-labelledby': 'node-ingress-h' }, h('h2', { id: 'node-ingress-h' }, 'Ingress'), ingressSlot),
    h('section', { class: 'panel', 'aria-labelledby': 'node-ops-h' }, h('h2', { id: 'node-ops-h' }, 'Operations'), opsSlot),
    h('section', { class: 'panel', 'aria-labelledby': 'node-peers-h' }, h('h2', { id: 'node-peers-h' }, 'Peers and inbound rules'), peersSlot));

  const base = `/nodes/${seg(id)}`;

  // ---- a mutation: confirm, call, report, refresh ----
  async function act({ trigger, box, confirm, call, done, inputs = {} }) {
    clearFormError(box, inputs);
    clearFormError(actionError);
    const ok = await confirmDialog(confirm);
    if (!ok) return false;
    if (trigger) trigger.disabled = true;
    try {
      const res = await call();
      const msg = done(res);
      if (msg) ctx.flash(msg);
      if (poller) await poller.kick();
      return true;
    } catch (e) {
      showFormError(box, e, inputs);
      return false;
    } finally {
      if (trigger) trigger.disabled = false;
    }
  }

  function opMessage(what, op) {
    if (op && typeof op === 'object' && op.id) return `${what} requested: operation ${str(op.id)} is ${str(op.status)}.`;
    return `${what} requested.`;
  }

  // ---- actions (built once, when the node is first known) ----
  function buildActions(n) {
    const blocks = [];
    const nameText = str(n.name) || id;
    if (canOperate) {
      const input = h('input', {
        type: 'text', 'data-test': 'node-retag-input', value: Array.isArray(n.tags) ? n.tags.join(' ') : '',
        autocomplete: 'off', spellcheck: 'false', placeholder: 'tag:web tag:db',
      });
      const submit = h('button', { type: 'submit', class: 'btn', 'data-test': 'node-retag-submit' }, 'Re-tag');
      const box = errorBox('node-retag-error');
      const form = h('form', { class: 'action-form', novalidate: true },
        field('Tags (comma or space separated; "web" means tag:web)', input), h('div', { class: 'form-actions' }, submit), box);
      form.addEventListener('submit', async (e) => {
        e.preventDefault();
        const tags = parseTags(input.value);
        await act({
          trigger: submit,
          box,
          inputs: { tags: input },
          confirm: {
            title: 'Re-tag node',
            message: [`Replace the tags of ${nameText} with:`, tags.length ? tags.join(', ') : '(no tags)',
              'Its peers and firewall rules follow the new tags.'],
            confirmLabel: 'Re-tag',
          },
          call: () => api.put(`${base}/tags`, { tags }, { signal: ctx.signal }),
          done: (rec) => {
            if (rec && Array.isArray(rec.tags)) input.value = rec.tags.join(' ');
            return `Tags of ${nameText} replaced.`;
          },
        });
      });
      blocks.push(h('div', { class: 'action' }, h('h3', {}, 'Tags'), form));
    }
    if (canServices) {
      const input = h('input', {
        type: 'text', 'data-test': 'node-services-input', value: Array.isArray(n.services) ? n.services.join(' ') : '',
        autocomplete: 'off', spellcheck: 'false', placeholder: 'ssh:22 web:8080',
      });
      const submit = h('button', { type: 'submit', class: 'btn', 'data-test': 'node-services-submit' }, 'Bind services');
      const box = errorBox('node-services-error');
      const form = h('form', { class: 'action-form', novalidate: true },
        field('Services, name:port (comma or space separated; empty unbinds all)', input),
        h('div', { class: 'form-actions' }, submit), box);
      form.addEventListener('submit', async (e) => {
        e.preventDefault();
        const services = parseList(input.value);
        await act({
          trigger: submit,
          box,
          inputs: { services: input },
          confirm: {
            title: 'Bind services',
            message: [`Bind exactly these services to ${nameText}:`, services.length ? services.join(', ') : '(none: unbind every service)'],
            confirmLabel: 'Bind',
          },
          call: () => api.put(`${base}/services`, { services }, { signal: ctx.signal }),
          done: (rec) => {
            if (rec && Array.isArray(rec.services)) input.value = rec.services.join(' ');
            return `Services of ${nameText} bound.`;
          },
        });
      });
      blocks.push(h('div', { class: 'action' }, h('h3', {}, 'Services'), form));
    }
    if (canOperate) {
      relaySelect = h('select', { 'data-test': 'node-relay-select', disabled: true }, h('option', { value: '' }, 'Loading relays…'));
      const submit = h('button', { type: 'submit', class: 'btn', 'data-test': 'node-relay-submit', disabled: true }, 'Move');
      relaySubmit = submit;
      const box = errorBox('node-relay-error');
      const form = h('form', { class: 'action-form', novalidate: true },
        field('Relay (the current one is selected; pick another to move)', relaySelect), h('div', { class: 'form-actions' }, submit), box);
      relaySelect.addEventListener('change', () => {
        relayTouched = true;
        syncRelaySubmit();
      });
      form.addEventListener('submit', async (e) => {
        e.preventDefault();
        const relay = relaySelect.value;
        if (!relay) return;
        await act({
          trigger: submit,
          box,
          inputs: { relay: relaySelect },
          confirm: {
            title: 'Move to another relay',
            message: [`Move ${nameText} from ${str(node && node.relay) || '(none)'} to ${relay}?`,
              'The assignment changes at once; it goes back if the node does not confirm the move before the deadline.'],
            confirmLabel: 'Move',
          },
          call: () => api.put(`${base}/relay`, { relay }, { signal: ctx.signal }),
          done: (op) => {
            relayTouched = false;
            return opMessage('Relay move', op);
          },
        });
      });
      api.get('/relays', null, { signal: ctx.signal }).then((data) => {
        const items = data && Array.isArray(data.items) ? data.items : [];
        relaySelect.replaceChildren(...(items.length
          ? items.map((r) => h('option', { value: str(r.name) }, `${str(r.name)} (${str(r.region)})`))
          : [h('option', { value: '' }, 'No relays configured')]));
        relaySelect.disabled = !items.length;
        relaysLoaded = items.length > 0;
        labelRelays();
      }).catch((e) => {
        if (isAbort(e)) return;
        relaySelect.replaceChildren(h('option', { value: '' }, 'Relays unavailable'));
        showFormError(box, e);
      });
      blocks.push(h('div', { class: 'action' }, h('h3', {}, 'Relay'), form));

      const rekey = btn('Re-key', { 'data-test': 'node-rekey' });
      rekey.addEventListener('click', () => act({
        trigger: rekey,
        box: actionError,
        confirm: {
          title: 'Re-key node',
          message: [`Ask ${nameText} to make a new key pair?`,
            'The node does it at its next heartbeat; the operation expires if it does not report in time.'],
          confirmLabel: 'Re-key',
        },
        call: () => api.post(`${base}/rekey`, undefined, { signal: ctx.signal }),
        done: (op) => opMessage('Re-key', op),
      }));
      const del = btn('Delete node', { 'data-test': 'node-delete', class: 'btn-danger' });
      del.addEventListener('click', async () => {
        clearFormError(actionError);
        const ok = await confirmDialog({
          title: 'Delete node',
          message: [`Delete ${nameText} (${id})?`,
            'Its agent credential is revoked at once and its address is never reused. This cannot be undone: the machine must enroll again.'],
          confirmLabel: 'Delete',
          danger: true,
        });
        if (!ok) return;
        del.disabled = true;
        try {
          await api.del(base, { signal: ctx.signal });
          ctx.flashAfterNavigation(`Node ${nameText} deleted.`);
          ctx.navigate('#/nodes');
        } catch (e) {
          showFormError(actionError, e);
          del.disabled = false;
        }
      });
      blocks.push(h('div', { class: 'action' }, h('h3', {}, 'Key and lifecycle'),
        h('div', { class: 'button-row' }, rekey, del)));
    }
    actionsSlot.replaceChildren(h('div', { class: 'actions-grid' }, blocks));
    actionsBuilt = true;
  }

  /** Marks the node's current relay in the select and selects it until the user picks another. */
  function labelRelays() {
    if (!relaySelect || !node) return;
    const current = str(node.relay);
    for (const opt of relaySelect.options) {
      if (!opt.value) continue;
      const base0 = opt.textContent.replace(/ — current$/, '');
      opt.textContent = opt.value === current ? `${base0} — current` : base0;
    }
    if (!relayTouched && [...relaySelect.options].some((o) => o.value && o.value === current)) relaySelect.value = current;
    syncRelaySubmit();
  }

  /** Move is offered once the relays are loaded and another relay than the node's is selected. */
  function syncRelaySubmit() {
    if (!relaySubmit || !relaySelect) return;
    relaySubmit.disabled = !relaysLoaded || !relaySelect.value || (node != null && relaySelect.value === str(node.relay));
  }

  // ---- ingress ----
  const ingressForm = (() => {
    if (!canOperate) return null;
    const name = h('input', { type: 'text', 'data-test': 'node-ingress-name', autocomplete: 'off', spellcheck: 'false', placeholder: 'web' });
    const hostname = h('input', { type: 'text', 'data-test': 'node-ingress-hostname', autocomplete: 'off', spellcheck: 'false', placeholder: 'web.example.net' });
    const port = h('input', { type: 'text', inputmode: 'numeric', 'data-test': 'node-ingress-port', autocomplete: 'off', placeholder: '443' });
    const submit = h('button', { type: 'submit', class: 'btn', 'data-test': 'node-ingress-submit' }, 'Assign ingress');
    const box = errorBox('node-ingress-error');
    const form = h('form', { class: 'action-form inline-form', novalidate: true, 'aria-label': 'Assign an ingress' },
      h('div', { class: 'form-row' }, field('Name', name), field('Hostname', hostname), field('Port', port),
        h('div', { class: 'form-actions' }, submit)), box);
    form.addEventListener('submit', async (e) => {
      e.preventDefault();
      const p = port.value.trim();
      const body = { name: name.value.trim(), hostname: hostname.value.trim(), port: /^\d{1,6}$/.test(p) ? Number(p) : p };
      const ok = await act({
        trigger: submit,
        box,
        inputs: { name, hostname, port },
        confirm: {
          title: 'Assign ingress',
          message: `Assign ingress ${body.name} (${body.hostname}:${str(body.port)}) to ${str(node && node.name) || id}?`,
          confirmLabel: 'Assign',
        },
        call: () => api.post(`${base}/ingress`, body, { signal: ctx.signal }),
        done: (res) => (res && res.kind ? opMessage('Ingress', res) : `Ingress ${body.name} assigned.`),
      });
      if (ok) {
        name.value = '';
        hostname.value = '';
        port.value = '';
      }
    });
    return form;
  })();
  const ingressTable = h('div');
  ingressSlot.append(ingressTable, ingressForm);

  function buildIngress(list) {
    const { wrap, tbody } = makeTable(['Name', 'Hostname', 'Port', 'State', ''], { caption: 'Ingress', test: 'node-ingress' });
    if (!list.length) tbody.append(emptyRow(5, 'No ingress assigned.'));
    for (const ing of list) {
      const name = str(ing.name);
      let action = null;
      if (canOperate && ing.state === 'active') {
        action = btn('Drain', { class: 'btn-small', 'data-test': 'node-ingress-drain', 'data-ingress-name': name, 'data-focus-key': `drain:${name}` });
        action.addEventListener('click', () => act({
          trigger: action,
          box: actionError,
          confirm: {
            title: 'Drain ingress',
            message: [`Drain ingress ${name} (${str(ing.hostname)}:${str(ing.port)})?`,
              'The node stops taking new connections there. A drained ingress stays listed until its name is assigned again.'],
            confirmLabel: 'Drain',
            danger: true,
          },
          call: () => api.post(`${base}/ingress/${seg(name)}/drain`, undefined, { signal: ctx.signal }),
          done: (op) => opMessage(`Drain of ${name}`, op),
        }));
      }
      tbody.append(h('tr', { 'data-test': 'ingress-row', 'data-ingress-name': name, 'data-state': str(ing.state) },
        h('th', { scope: 'row' }, name), td(str(ing.hostname)), td(str(ing.port)), td(badge(str(ing.state))), td(action)));
    }
    return wrap;
  }

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
    renderIfChanged(ingressTable, { i: n.ingress || [] }, () => buildIngress(Array.isArray(n.ingress) ? n.ingress : []));
    if (!actionsBuilt && (canOperate || canServices)) buildActions(n);
    labelRelays();
  }

  // ---- operations (rows kept by id: a row changes only when its operation does) ----
  function opRow(op) {
    return h('tr', {
      'data-test': 'node-operation', 'data-op-id': str(op.id), 'data-op-kind': str(op.kind), 'data-op-status': str(op.status),
    },
    td(fmtTime(op.requested_at)), td(str(op.kind)), td(badge(str(op.status))), td(opTarget(op)),
    td(actorText(op.requested_by)), td(fmtTime(op.delivered_at, '—')), td(fmtTime(op.completed_at, '—')),
    td(opResult(op)), td(h('span', { class: 'mono small' }, str(op.id))));
  }
  const opsTable = makeTable(
    ['Requested', 'Kind', 'Status', 'Target', 'Requested by', 'Delivered', 'Completed', 'Result', 'Id'],
    { caption: 'Operations', test: 'node-operations' });
  const opsNote = h('p', { class: 'muted small' }, 'Newest first. Operations expire at their deadline if the node does not report.');
  const showOps = keyedRows(opsTable.tbody, {
    keyOf: (op) => str(op.id), build: opRow, emptyText: 'No operations yet.', colspan: 9,
  });

  async function loadOps() {
    const all = [];
    let cursor = '';
    do {
      const d = await api.get(`${base}/operations`, { limit: 500, cursor: cursor || undefined }, { signal: ctx.signal });
      if (d && Array.isArray(d.items)) all.push(...d.items);
      cursor = d && typeof d.next_cursor === 'string' ? d.next_cursor : '';
    } while (cursor && all.length < 2000);
    openOps = all.some((o) => o.status === 'pending' || o.status === 'delivered');
    if (!opsSlot.contains(opsTable.wrap)) opsSlot.replaceChildren(opsTable.wrap, opsNote);
    showOps(all.reverse());
  }

  // ---- peers and inbound rules ----
  const peersMeta = h('p', { class: 'muted', 'data-test': 'node-peers-meta' });
  const peersTable = makeTable(['Peer', 'Address', 'Online', 'Relay', 'Endpoints', 'Public key'], { caption: 'Peers', test: 'node-peers' });
  const rulesTable = makeTable(['From (sources)', 'Ports'], { caption: 'Inbound rules', test: 'node-rules' });
  // the peers a page at a time (the API gives the whole set; a node may have thousands)
  const PEERS_PAGE = 50;
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

  async function loadPeers() {
    const p = await api.get(`${base}/peers`, null, { signal: ctx.signal });
    const peers = p && p.peers && Array.isArray(p.peers.items) ? p.peers.items : [];
    const rules = p && p.acl && Array.isArray(p.acl.rules) ? p.acl.rules : [];
    peersMeta.textContent = `Relay ${str(p && p.relay) || 'none'} · peers version ${str(p && p.peers && p.peers.version)} · ACL version ${str(p && p.acl && p.acl.version)}`;
    if (!peersSlot.contains(peersTable.wrap)) peersSlot.replaceChildren(...peersBlock);
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
    const [n, o, p] = await Promise.allSettled([
      api.get(base, null, { signal: ctx.signal }).then(showNode),
      loadOps(),
      loadPeers(),
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
    if (o.status === 'rejected') sectionError(opsSlot, o.reason);
    if (p.status === 'rejected') sectionError(peersSlot, p.reason);
    ctx.clearError();
    refreshLabel.textContent = `Live · updated ${new Date().toLocaleTimeString()}`;
  }

  poller = ctx.poll(() => (openOps ? 3000 : 5000), tick, {
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
