// Tokens for scripts: list (/api/v1/auth/tokens), create (the secret is shown once), rotate, revoke.

import { api, can, currentUser, serverNow, seg } from './api.js';
import {
  h, btn, td, badge, fmtTime, ageEl, str, field, select, errorBox, showFormError, showFormMessage,
  clearFormError, confirmDialog, copyText, localInputToIso,
} from './ui.js';
import { listView } from './listview.js';

const SURFACES = ['admin', 'operator', 'enrollment', 'pipeline', 'monitoring'];
const DURATIONS = [['1', '1 day'], ['7', '7 days'], ['30', '30 days'], ['90', '90 days']];
const RETIRE = [['0s', 'at once'], ['1h', 'in 1 hour'], ['24h', 'in 24 hours']];

/**
 * An `expires` for "N days from now": ISO 8601 UTC, from the server's clock (Date header), one
 * minute short so that "90 days" stays within tokens.max_lifetime (default 90d).
 */
export function expiresInDays(days) {
  return new Date(serverNow() + Number(days) * 86400000 - 60000).toISOString();
}

/** The surfaces this user's role may mint: admin any, operator all but admin. */
export function mintableSurfaces(role) {
  if (role === 'admin') return SURFACES;
  return SURFACES.filter((s) => s !== 'admin');
}

export function tokenState(t) {
  if (t.revoked_at) return 'revoked';
  const exp = Date.parse(t.expires);
  const past = Number.isFinite(exp) && exp <= serverNow();
  if (t.rotated_to) return past ? 'retired' : 'retiring';
  return past ? 'expired' : 'active';
}

export function renderTokens(ctx) {
  ctx.setTitle('Tokens');
  const user = currentUser() || {};
  const canWrite = can('tokens:write');
  const isAdmin = user.role === 'admin';
  let view = null;

  // ---- the secret, shown once ----
  const secretTitle = h('h2', { id: 'token-secret-h' }, 'New token');
  const secretMeta = h('p', { class: 'muted', 'data-test': 'token-secret-meta' });
  const secretCode = h('code', { 'data-test': 'token-secret', class: 'secret' });
  const copyStatus = h('span', { class: 'muted', 'data-test': 'token-copy-status', 'aria-live': 'polite' });
  const copyBtn = btn('Copy', { 'data-test': 'token-copy', class: 'btn-primary' });
  const dismissBtn = btn('I have stored it', { 'data-test': 'token-secret-dismiss' });
  const secretBox = h('section', { class: 'secret-box', 'data-test': 'token-secret-box', 'aria-labelledby': 'token-secret-h', hidden: true },
    secretTitle,
    h('p', { class: 'warning' }, 'Copy this token now. It is shown only this once and cannot be retrieved later.'),
    secretMeta,
    h('pre', { class: 'secret-pre' }, secretCode),
    h('div', { class: 'button-row' }, copyBtn, dismissBtn, copyStatus));
  copyBtn.addEventListener('click', async () => {
    copyStatus.textContent = await copyText(secretCode);
  });
  dismissBtn.addEventListener('click', () => {
    secretCode.textContent = '';
    secretBox.hidden = true;
  });
  function showSecret(tok, heading) {
    secretTitle.textContent = heading;
    const scope = tok && tok.scope ? tok.scope : {};
    secretMeta.replaceChildren(`${str(tok.name)} (${str(tok.id)}), ${str(scope.surface)} for ${str(scope.team)} / ${str(scope.environment)}, expires `,
      fmtTime(tok.expires), tok.old ? '. The old token stops working ' : '', tok.old ? fmtTime(tok.old.expires) : '', '.');
    secretCode.textContent = str(tok.token);
    copyStatus.textContent = '';
    secretBox.hidden = false;
    copyBtn.focus();
  }

  // ---- create ----
  let createSection = null;
  if (canWrite) {
    const name = h('input', { type: 'text', 'data-test': 'token-create-name', autocomplete: 'off', maxlength: '64', placeholder: 'web-prod-deploy' });
    const surfaces = mintableSurfaces(user.role);
    const surface = select(surfaces, surfaces.includes('pipeline') ? 'pipeline' : surfaces[0], { 'data-test': 'token-create-surface' });
    const team = h('input', {
      type: 'text', 'data-test': 'token-create-team', autocomplete: 'off', spellcheck: 'false', required: true, 'aria-required': 'true',
      value: user.team && user.team !== '*' ? str(user.team) : '', placeholder: user.team === '*' ? 'team slug, or *' : '',
    });
    const environment = h('input', {
      type: 'text', 'data-test': 'token-create-environment', autocomplete: 'off', spellcheck: 'false', required: true, 'aria-required': 'true',
      value: user.environment && user.environment !== '*' ? str(user.environment) : '',
      placeholder: user.environment === '*' ? 'environment slug, or *' : '',
    });
    const expires = select([...DURATIONS, ['custom', 'Pick a date…']], '30', { 'data-test': 'token-create-expires' });
    const custom = h('input', { type: 'datetime-local', 'data-test': 'token-create-expires-custom' });
    const customField = field('Expires at (your local time)', custom);
    customField.hidden = true;
    expires.addEventListener('change', () => {
      customField.hidden = expires.value !== 'custom';
    });
    const submit = h('button', { type: 'submit', class: 'btn btn-primary', 'data-test': 'token-create-submit' }, 'Create token');
    const err = errorBox('token-create-error');
    const inputs = { name, 'scope.surface': surface, 'scope.team': team, 'scope.environment': environment, expires, scope: surface };
    const form = h('form', { class: 'create-form', novalidate: true, 'aria-labelledby': 'token-create-h' },
      h('div', { class: 'form-row' },
        field('Name', name),
        field('Surface', surface),
        field('Team (required)', team),
        field('Environment (required)', environment),
        field('Expires in', expires),
        customField),
      err,
      h('div', { class: 'form-actions' }, submit));
    form.addEventListener('submit', async (e) => {
      e.preventDefault();
      clearFormError(err, inputs);
      // a token needs a scope: with your own scope `*` nothing is filled in for you, so say so here
      const missing = [['scope.team', team, 'team'], ['scope.environment', environment, 'environment']]
        .filter(([, input]) => !input.value.trim());
      if (missing.length) {
        showFormMessage(err, `Enter the token's ${missing.map((m) => m[2]).join(' and ')}: a slug such as web or prod, or * for every one.`);
        for (const [, input] of missing) input.setAttribute('aria-invalid', 'true');
        missing[0][1].focus();
        return;
      }
      let exp;
      if (expires.value === 'custom') {
        exp = localInputToIso(custom.value);
        if (!exp) {
          showFormMessage(err, 'Pick the expiry date and time.');
          custom.focus();
          return;
        }
      } else {
        exp = expiresInDays(expires.value);
      }
      const body = {
        name: name.value,
        scope: { team: team.value.trim(), environment: environment.value.trim(), surface: surface.value },
        expires: exp,
      };
      submit.disabled = true;
      try {
        const tok = await api.post('/auth/tokens', body, { signal: ctx.signal });
        showSecret(tok, `Token "${str(tok.name)}" created`);
        ctx.flash(`Token ${str(tok.name)} created.`);
        name.value = '';
        view.reload();
      } catch (ex) {
        showFormError(err, ex, inputs);
      } finally {
        submit.disabled = false;
      }
    });
    createSection = h('section', { class: 'panel', 'aria-labelledby': 'token-create-h' },
      h('h2', { id: 'token-create-h' }, 'Create a token'),
      h('p', { class: 'muted' }, user.role === 'admin'
        ? 'Tokens are for scripts and machines. Yours may not be wider than your own team and environment.'
        : 'Tokens are for scripts and machines. Your role may create every surface but admin, within your own team and environment.'),
      form);
  }

  // ---- rows ----
  const rowError = errorBox('token-row-error');

  function mayManage(t) {
    return canWrite && (isAdmin || !(t.scope && t.scope.surface === 'admin'));
  }

  async function rotate(t, trigger) {
    clearFormError(rowError);
    const exp = select(DURATIONS, '30', { 'data-test': 'token-rotate-expires' });
    const retire = select(RETIRE, '24h', { 'data-test': 'token-rotate-retire' });
    const choice = await confirmDialog({
      title: 'Rotate token',
      message: [`Issue a new secret for "${str(t.name)}" with the same scope, and retire the old one?`,
        'The new secret is shown once.'],
      body: h('div', { class: 'form-row' }, field('New token expires in', exp), field('Old token stops working', retire)),
      confirmLabel: 'Rotate',
      validate: () => ({ expires: expiresInDays(exp.value), retire_old_in: retire.value }),
    });
    if (!choice) return;
    trigger.disabled = true;
    try {
      const tok = await api.post(`/auth/tokens/${seg(t.id)}/rotate`, choice, { signal: ctx.signal });
      showSecret(tok, `Token "${str(tok.name)}" rotated: the new secret`);
      ctx.flash(`Token ${str(t.name)} rotated.`);
      view.reload();
    } catch (e) {
      showFormError(rowError, e);
      trigger.disabled = false;
    }
  }

  async function revoke(t, trigger) {
    clearFormError(rowError);
    const ok = await confirmDialog({
      title: 'Revoke token',
      message: [`Revoke "${str(t.name)}" (${str(t.id)})?`, 'Every replica refuses it within about a second. This cannot be undone.'],
      confirmLabel: 'Revoke',
      danger: true,
    });
    if (!ok) return;
    trigger.disabled = true;
    try {
      await api.del(`/auth/tokens/${seg(t.id)}`, { signal: ctx.signal });
      ctx.flash(`Token ${str(t.name)} revoked.`);
      view.reload();
    } catch (e) {
      showFormError(rowError, e);
      trigger.disabled = false;
    }
  }

  function row(t) {
    const id = str(t.id);
    const state = tokenState(t);
    const scope = t.scope && typeof t.scope === 'object' ? t.scope : {};
    const actions = [];
    if (mayManage(t) && state === 'active') {
      const b = btn('Rotate', { class: 'btn-small', 'data-test': 'token-rotate', 'data-focus-key': `rotate:${id}` });
      b.addEventListener('click', () => rotate(t, b));
      actions.push(b);
    }
    if (mayManage(t) && state !== 'revoked') {
      const b = btn('Revoke', { class: 'btn-small btn-danger', 'data-test': 'token-revoke', 'data-focus-key': `revoke:${id}` });
      b.addEventListener('click', () => revoke(t, b));
      actions.push(b);
    }
    return h('tr', {
      'data-test': 'token-row', 'data-token-id': id, 'data-token-name': str(t.name), 'data-token-state': state,
      'data-token-surface': str(scope.surface),
    },
    h('th', { scope: 'row' }, str(t.name)),
    td(str(scope.surface)),
    td(`${str(scope.team)} / ${str(scope.environment)}`),
    td(badge(state), t.revoked_at ? [' ', fmtTime(t.revoked_at)] : null),
    td(fmtTime(t.expires)),
    td(ageEl(t.last_used_at)),
    td(fmtTime(t.created_at)),
    td(h('span', { class: 'mono small' }, str(t.created_by))),
    td(h('span', { class: 'mono small' }, id), t.rotated_to ? h('div', { class: 'muted small' }, `rotated to ${str(t.rotated_to)}`) : null),
    td(h('div', { class: 'button-row' }, actions)));
  }

  view = listView(ctx, {
    path: '/auth/tokens',
    prefix: 'tokens',
    caption: 'Tokens',
    tableTest: 'tokens-table',
    columns: ['Name', 'Surface', 'Team / environment', 'State', 'Expires', 'Last used', 'Created', 'Created by', 'Id', 'Actions'],
    row,
    empty: 'No tokens.',
    filters: [{ key: 'include_revoked', label: 'Include revoked tokens', kind: 'checkbox' }],
  });

  ctx.root.append(ctx.heading('Tokens'), secretBox, createSection,
    h('section', { class: 'panel', 'aria-labelledby': 'token-list-h' },
      h('h2', { id: 'token-list-h' }, 'Tokens'), rowError, view.element));
}
