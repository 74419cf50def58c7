// Users of the panel (permission users:manage): list, create, change role, disable/enable,
// reset password. GET/POST /api/v1/users, PATCH /api/v1/users/{id}.

import { api, currentUser, seg } from './api.js';
import {
  h, btn, td, badge, fmtTime, ageEl, str, field, select, errorBox, showFormError, showFormMessage,
  clearFormError, confirmDialog,
} from './ui.js';
import { listView } from './listview.js';

const ROLES = ['admin', 'operator', 'viewer'];
const ROLE_HELP = 'admin: everything, and users; operator: nodes, ACL, audit, events, non-admin tokens; viewer: read only.';

function passwordProblem(pw) {
  const n = [...pw].length;
  if (n < 12) return 'The password needs at least 12 characters.';
  if (n > 256) return 'The password may have at most 256 characters.';
  return null;
}

export function renderUsers(ctx) {
  ctx.setTitle('Users');
  const me = currentUser() || {};
  let view = null;
  const rowError = errorBox('user-row-error');

  // ---- create ----
  const username = h('input', { type: 'text', 'data-test': 'user-create-username', autocomplete: 'off', spellcheck: 'false', autocapitalize: 'none' });
  const password = h('input', { type: 'password', 'data-test': 'user-create-password', autocomplete: 'new-password' });
  const role = select(ROLES, 'viewer', { 'data-test': 'user-create-role' });
  const team = h('input', {
    type: 'text', 'data-test': 'user-create-team', autocomplete: 'off', spellcheck: 'false',
    value: me.team && me.team !== '*' ? str(me.team) : '', placeholder: me.team === '*' ? 'team slug, or *' : '',
  });
  const environment = h('input', {
    type: 'text', 'data-test': 'user-create-environment', autocomplete: 'off', spellcheck: 'false',
    value: me.environment && me.environment !== '*' ? str(me.environment) : '',
    placeholder: me.environment === '*' ? 'environment slug, or *' : '',
  });
  const submit = h('button', { type: 'submit', class: 'btn btn-primary', 'data-test': 'user-create-submit' }, 'Create user');
  const createErr = errorBox('user-create-error');
  const inputs = { username, password, role, team, environment };
  const form = h('form', { class: 'create-form', novalidate: true, 'aria-labelledby': 'user-create-h' },
    h('div', { class: 'form-row' },
      field('Username', username),
      field('Password', password, '12 to 256 characters'),
      field('Role', role),
      field('Team', team),
      field('Environment', environment)),
    h('p', { class: 'muted small' }, ROLE_HELP),
    createErr,
    h('div', { class: 'form-actions' }, submit));
  form.addEventListener('submit', async (e) => {
    e.preventDefault();
    clearFormError(createErr, inputs);
    const problem = passwordProblem(password.value);
    if (problem) {
      showFormMessage(createErr, problem);
      password.setAttribute('aria-invalid', 'true');
      password.focus();
      return;
    }
    submit.disabled = true;
    try {
      const u = await api.post('/users', {
        username: username.value.trim(), password: password.value, role: role.value,
        team: team.value.trim(), environment: environment.value.trim(),
      }, { signal: ctx.signal });
      ctx.flash(`User ${str(u && u.username)} created.`);
      username.value = '';
      password.value = '';
      view.reload();
    } catch (ex) {
      showFormError(createErr, ex, inputs);
    } finally {
      submit.disabled = false;
    }
  });

  // ---- rows ----
  async function patch(u, body, done) {
    clearFormError(rowError);
    try {
      await api.patch(`/users/${seg(u.id)}`, body, { signal: ctx.signal });
      ctx.flash(done);
      view.reload();
      return true;
    } catch (e) {
      showFormError(rowError, e);
      return false;
    }
  }

  function row(u) {
    const id = str(u.id);
    const name = str(u.username);
    const self = id === str(me.id);
    const disabled = u.disabled === true;

    const roleSelect = select(ROLES, str(u.role), {
      'data-test': 'user-role', 'aria-label': `Role of ${name}`, 'data-focus-key': `role:${id}`, disabled: self,
      title: self ? 'You cannot change your own role here.' : null,
    });
    roleSelect.addEventListener('change', async () => {
      const next = roleSelect.value;
      const ok = await confirmDialog({
        title: 'Change role',
        message: `Change the role of ${name} from ${str(u.role)} to ${next}?`,
        confirmLabel: 'Change role',
      });
      if (!ok || !(await patch(u, { role: next }, `${name} is now ${next}.`))) roleSelect.value = str(u.role);
    });

    const toggle = btn(disabled ? 'Enable' : 'Disable', {
      class: ['btn-small', disabled ? null : 'btn-danger'], 'data-test': 'user-toggle-disabled', 'data-focus-key': `toggle:${id}`,
      disabled: self, title: self ? 'You cannot disable yourself.' : null,
    });
    toggle.addEventListener('click', async () => {
      const ok = await confirmDialog({
        title: disabled ? 'Enable user' : 'Disable user',
        message: disabled ? `Let ${name} log in again?` : `Disable ${name}? They cannot log in until enabled again.`,
        confirmLabel: disabled ? 'Enable' : 'Disable',
        danger: !disabled,
      });
      if (ok) await patch(u, { disabled: !disabled }, `${name} ${disabled ? 'enabled' : 'disabled'}.`);
    });

    const reset = btn('Reset password', { class: 'btn-small', 'data-test': 'user-reset-password', 'data-focus-key': `reset:${id}` });
    reset.addEventListener('click', async () => {
      const input = h('input', { type: 'password', 'data-test': 'user-password-input', autocomplete: 'new-password' });
      const pw = await confirmDialog({
        title: 'Reset password',
        message: `A new password for ${name} (12 to 256 characters). Tell it to them through a safe channel.`,
        // The hidden username tells password managers whose password this is.
        body: [h('input', { type: 'text', autocomplete: 'username', value: name, hidden: true, readOnly: true, tabindex: '-1' }),
          field('New password', input)],
        confirmLabel: 'Set password',
        focus: 'input',
        validate: () => {
          const problem = passwordProblem(input.value);
          return problem ? { error: problem } : input.value;
        },
      });
      if (pw) await patch(u, { password: pw }, `Password of ${name} replaced.`);
    });

    return h('tr', {
      'data-test': 'user-row', 'data-user-id': id, 'data-username': name, 'data-role': str(u.role), 'data-disabled': String(disabled),
    },
    h('th', { scope: 'row' }, name, self ? h('span', { class: 'muted' }, ' (you)') : null),
    td(roleSelect),
    td(`${str(u.team)} / ${str(u.environment)}`),
    td(badge(disabled ? 'disabled' : 'enabled')),
    td(ageEl(u.last_login_at)),
    td(fmtTime(u.created_at)),
    td(h('span', { class: 'mono small' }, id)),
    td(h('div', { class: 'button-row' }, toggle, reset)));
  }

  view = listView(ctx, {
    path: '/users',
    prefix: 'users',
    caption: 'Users',
    tableTest: 'users-table',
    columns: ['Username', 'Role', 'Team / environment', 'State', 'Last login', 'Created', 'Id', 'Actions'],
    row,
    empty: 'No users.',
  });

  ctx.root.append(ctx.heading('Users'),
    h('section', { class: 'panel', 'aria-labelledby': 'user-create-h' }, h('h2', { id: 'user-create-h' }, 'Create a user'), form),
    h('section', { class: 'panel', 'aria-labelledby': 'user-list-h' }, h('h2', { id: 'user-list-h' }, 'Users'), rowError, view.element));
}
