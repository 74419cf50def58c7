// The node page's actions: re-tag, bind services, move to another relay, re-key and delete (the
// "Actions" section, built once when the node is first known), and the "Ingress" section (its table with
// a Drain button per active ingress, and the form that assigns one). Every change goes through act():
// confirm, call, report in the flash or the form's error box, then refresh the page at once.

import { api, can, seg, isAbort } from './api.js';
import {
  h, btn, td, badge, str, makeTable, emptyRow, field, errorBox, showFormError, clearFormError, confirmDialog,
  renderIfChanged,
} from './ui.js';

/** Tags typed as "web, tag:db  batch" → ["tag:web", "tag:db", "tag:batch"]. */
export function parseTags(text) {
  return String(text).split(/[\s,]+/).filter(Boolean).map((t) => (t.startsWith('tag:') ? t : `tag:${t}`));
}

function parseList(text) {
  return String(text).split(/[\s,]+/).filter(Boolean);
}

function opMessage(what, op) {
  if (op && typeof op === 'object' && op.id) return `${what} requested: operation ${str(op.id)} is ${str(op.status)}.`;
  return `${what} requested.`;
}

/**
 * The actions of node id at base (`/nodes/{id}`). actionError is the page's error box (for the
 * buttons that have no form of their own); refresh() refreshes the page after a change.
 * Returns actionsSlot and ingressSlot (the two sections' bodies), show(n) (called with every fresh
 * record) and canAct (whether the user may use any action: the page shows the Actions section only then).
 */
export function nodeActions(ctx, { id, base, actionError, refresh }) {
  const canOperate = can('nodes:operate');
  const canServices = can('nodes:services');
  const actionsSlot = h('div', { class: 'slot' });
  const ingressSlot = h('div', { class: 'slot' });

  let node = null;
  let actionsBuilt = false;
  let relaySelect = null;
  let relaySubmit = null;
  let relaysLoaded = false;
  let relayTouched = false;

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
      await refresh();
      return true;
    } catch (e) {
      showFormError(box, e, inputs);
      return false;
    } finally {
      if (trigger) trigger.disabled = false;
    }
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
  ingressSlot.append(...[ingressTable, ingressForm].filter(Boolean)); // no form without nodes:operate (append(null) would print "null")

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

  /** Called with every fresh record: the ingress table, the actions (built the first time), the relay select. */
  function show(n) {
    node = n;
    renderIfChanged(ingressTable, { i: n.ingress || [] }, () => buildIngress(Array.isArray(n.ingress) ? n.ingress : []));
    if (!actionsBuilt && (canOperate || canServices)) buildActions(n);
    labelRelays();
  }

  return { actionsSlot, ingressSlot, show, canAct: canOperate || canServices };
}
