// The node page's Certificate section (meshca:read): the node's current MeshCA certificate, its latest
// unrevoked one (GET /meshca/certificates?node=…&order=latest), and, with meshca:revoke, a Revoke button
// with a reason picker behind a confirmation (POST /meshca/certificates/{serial}/revoke).

import { api, can, seg } from './api.js';
import {
  h, btn, badge, str, fmtTime, field, select, errorBox, showFormError, clearFormError, confirmDialog, renderIfChanged, expiresIn,
} from './ui.js';

// RFC 5280's reasons, as the API takes them (certificateHold is not offered: a revocation is final)
const REASONS = [
  ['keyCompromise', 'Key compromise'],
  ['superseded', 'Superseded'],
  ['cessationOfOperation', 'Cessation of operation'],
  ['affiliationChanged', 'Affiliation changed'],
  ['privilegeWithdrawn', 'Privilege withdrawn'],
  ['unspecified', 'Unspecified'],
  ['cACompromise', 'CA compromise'],
  ['aACompromise', 'AA compromise'],
];
/** How many of the node's certificates, latest to expire first, are looked through for an unrevoked one. */
const LOOKED_AT = 20;

/**
 * The section's body for node `id`: returns {slot, load(), enabled}. load() reads the certificates and
 * redraws (called with every refresh of the page); enabled is false without meshca:read (the page then
 * shows no section).
 */
export function nodeCertificate(ctx, id, { refresh }) {
  const enabled = can('meshca:read');
  const canRevoke = can('meshca:revoke');
  const slot = h('div', { class: 'slot', 'data-test': 'node-certificate' });
  const box = errorBox('node-certificate-error');

  async function revoke(c, trigger) {
    clearFormError(box);
    const reason = select(REASONS, 'superseded', { 'data-test': 'node-certificate-reason' });
    const choice = await confirmDialog({
      title: 'Revoke certificate',
      message: [`Revoke the certificate ${str(c.serial)} of this node?`,
        'Every replica adds it to the revocation list and the CRL at once, and peers refuse it. The node asks for a new '
        + 'certificate with its next heartbeat (for the same key unless the reason makes its agent make a new one). This cannot be undone.'],
      body: field('Reason', reason),
      confirmLabel: 'Revoke',
      danger: true,
      validate: () => ({ reason: reason.value }),
    });
    if (!choice) return;
    trigger.disabled = true;
    try {
      await api.post(`/meshca/certificates/${seg(c.serial)}/revoke`, choice, { signal: ctx.signal });
      ctx.flash(`Certificate ${str(c.serial)} revoked (${choice.reason}).`);
      await refresh();
    } catch (e) {
      showFormError(box, e);
    } finally {
      trigger.disabled = false;
    }
  }

  function show(current, revokedLatest) {
    renderIfChanged(slot, { current, revokedLatest }, () => {
      if (!current) {
        return [h('p', { class: 'muted', 'data-test': 'node-certificate-none' },
          revokedLatest ? 'No current certificate: the latest one was revoked.' : 'This node holds no MeshCA certificate.'), box];
      }
      const rows = [
        ['Serial', h('span', { class: 'mono break', 'data-test': 'node-certificate-serial' }, str(current.serial))],
        ['State', badge(str(current.state), { 'data-test': 'node-certificate-state' })],
        ['Expires', [fmtTime(current.not_after), ' ', h('span', { class: 'muted', 'data-test': 'node-certificate-expires' },
          `(${expiresIn(Math.round((Date.parse(current.not_after) - Date.now()) / 1000))})`)]],
        ['Valid from', fmtTime(current.not_before)],
        ['Renew after', h('span', { class: 'muted' }, 'not kept by the coordinator (told to the node: 30–40 % of the lifetime)')],
        ['Issuer', h('span', { class: 'mono', 'data-test': 'node-certificate-issuer' }, str(current.issuer))],
        ['SPIFFE ID', h('span', { class: 'mono break' }, str(current.spiffe_id))],
        ['WireGuard key', h('span', { class: 'mono break' }, str(current.wireguard_key))],
      ];
      const out = [h('dl', { class: 'fields' }, rows.map(([k, v]) => [h('dt', {}, k), h('dd', {}, v)]).flat())];
      if (canRevoke) {
        const b = btn('Revoke certificate', { class: 'btn-danger', 'data-test': 'node-certificate-revoke' });
        b.addEventListener('click', () => revoke(current, b));
        out.push(h('div', { class: 'button-row' }, b));
      }
      out.push(box);
      return out;
    });
  }

  async function load() {
    if (!enabled) return;
    const page = await api.get('/meshca/certificates', { node: id, order: 'latest', limit: LOOKED_AT }, { signal: ctx.signal });
    const items = Array.isArray(page && page.items) ? page.items : [];
    show(items.find((c) => c.state !== 'revoked') || null, items.length > 0 && items[0].state === 'revoked');
  }

  return { slot, load, enabled };
}
