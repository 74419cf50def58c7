// The login page: POST /api/v1/session {username, password}, and single sign-on through the
// identity provider when it is configured (GET /api/v1/session/oidc says so; the button goes to
// /api/v1/session/oidc/start, and a refused sign-on comes back as #/login?error=<code>).

import { login, loadSession, oidcInfo, ApiError } from './api.js';
import { h, field, errorBox, showFormError, showFormMessage, clearFormError, btn } from './ui.js';

/** What each refusal of a single sign-on means, for the person who just tried (codes of API.md §17). */
const SSO_ERRORS = {
  unavailable: 'The identity provider cannot be reached right now. Try again in a minute, or log in with a local account.',
  rate_limited: 'Too many sign-in attempts right now. Wait a minute and try again.',
  expired_login: 'This sign-in expired, was already used, or was started in another browser. Start again.',
  idp_refused: 'The identity provider did not sign you in (cancelled or refused). Start again.',
  exchange_failed: 'The identity provider did not confirm the sign-in. Start again; if it keeps failing, tell your administrator.',
  invalid_token: 'The identity provider\'s answer failed its security checks, so it was refused. Tell your administrator.',
  no_role: 'You signed in at the identity provider, but your account is not given any role in Meshplane '
    + '(no group or claim of yours is mapped). Ask your administrator for access.',
  disabled: 'Your Meshplane user is disabled. Ask your administrator.',
  failed: 'The sign-in could not be completed. Try again.',
};

/** The single sign-on part of the login page, filled once GET /session/oidc answers (nothing when it is off). */
function ssoSection(params) {
  const box = h('div', { class: 'login-sso', 'data-test': 'login-sso' });
  const code = params.get('error');
  if (code) {
    box.append(h('div', { class: 'form-error', role: 'alert', 'data-test': 'login-sso-error', 'data-code': code },
      SSO_ERRORS[code] || SSO_ERRORS.failed));
  }
  const fill = async () => {
    let info;
    try {
      info = await oidcInfo();
    } catch {
      return; // the panel itself is away: the password form says so when used
    }
    if (!info || !info.enabled) return;
    const label = String(info.label || 'single sign-on');
    box.querySelector('.login-sso-actions')?.remove();
    const actions = h('div', { class: 'login-sso-actions' });
    if (params.get('signed_out') === 'oidc' && info.end_session_url) {
      actions.append(h('p', { class: 'login-sso-note', 'data-test': 'login-sso-signed-out' },
        `You are logged out of Meshplane. You may still be signed in at ${label}: `,
        h('a', { href: info.end_session_url, 'data-test': 'login-sso-logout' }, `sign out of ${label} too`), '.'));
    }
    if (info.available) {
      actions.append(h('a', { href: '/api/v1/session/oidc/start', class: 'btn btn-primary login-sso-button', 'data-test': 'login-sso-start' },
        `Sign in with ${label}`));
    } else {
      const retry = btn('Try again', { class: 'btn-small', 'data-test': 'login-sso-retry' });
      retry.addEventListener('click', fill);
      actions.append(h('p', { class: 'login-sso-note', role: 'status', 'data-test': 'login-sso-unavailable' },
        `${label} cannot be reached right now; log in with a local account, or `, retry));
    }
    actions.append(h('p', { class: 'login-sso-or' }, 'or log in with a local account'));
    box.append(actions);
  };
  fill();
  return box;
}

/** Why the login did not stick: the browser did not send the session cookie back. */
function showCookieProblem(box) {
  const plain = window.location.protocol === 'http:';
  box.replaceChildren(
    h('p', { 'data-test': 'login-cookie-problem', 'data-protocol': window.location.protocol.replace(':', '') },
      plain
        ? 'Your password was accepted, but this browser did not keep the session cookie: the page is served over plain http and the panel marks its cookie Secure, which browsers only send over https. Every page would bring you back here.'
        : 'Your password was accepted, but this browser did not keep the session cookie (are cookies blocked for this site?). Every page would bring you back here.'),
    plain
      ? h('p', {}, 'Fix: open the panel over https, or, for local plain-http use only, start it with ',
        h('code', {}, 'MESH_PANEL_COOKIE_SECURE=false'), ' (or ', h('code', {}, 'panel.cookie_secure: false'), ' in the configuration file).')
      : null);
  box.hidden = false;
}

export function renderLogin(ctx, { next, done }) {
  ctx.setTitle('Log in');
  const username = h('input', {
    type: 'text', name: 'username', autocomplete: 'username', required: true, 'data-test': 'login-username',
    autocapitalize: 'none', spellcheck: 'false',
  });
  const password = h('input', {
    type: 'password', name: 'password', autocomplete: 'current-password', required: true, 'data-test': 'login-password',
  });
  const submit = h('button', { type: 'submit', class: 'btn btn-primary', 'data-test': 'login-submit' }, 'Log in');
  const err = errorBox('login-error');
  const form = h('form', { class: 'login-form', novalidate: true, 'aria-labelledby': 'login-title' },
    h('h1', { id: 'login-title', class: 'page-title', tabindex: '-1' }, 'Log in to Meshplane'),
    field('Username', username),
    field('Password', password),
    err,
    h('div', { class: 'form-actions' }, submit));

  form.addEventListener('submit', async (e) => {
    e.preventDefault();
    clearFormError(err);
    if (!username.value.trim() || !password.value) {
      showFormMessage(err, 'Enter your username and password.');
      (username.value.trim() ? password : username).focus();
      return;
    }
    submit.disabled = true;
    submit.textContent = 'Logging in…';
    try {
      await login(username.value.trim(), password.value);
      password.value = '';
      // The login answered 200, but does the browser send the cookie back? A Secure cookie set over
      // plain http is dropped, and every page would send you back here without saying why.
      let kept = true;
      try {
        kept = (await loadSession()) !== null;
      } catch {
        kept = true; // the check itself failed (network): let the next page say what is wrong
      }
      if (!kept) {
        showCookieProblem(err);
        username.focus();
        return;
      }
      done(next);
    } catch (ex) {
      if (ex instanceof ApiError && ex.status === 401) {
        const detail = typeof ex.problem.detail === 'string' && ex.problem.detail ? ex.problem.detail : '';
        showFormMessage(err, detail || 'Wrong username or password.');
      } else {
        showFormError(err, ex);
      }
      password.value = '';
      password.focus();
    } finally {
      submit.disabled = false;
      submit.textContent = 'Log in';
    }
  });

  ctx.root.append(h('div', { class: 'login-wrap' },
    h('div', { class: 'login-card' },
      h('div', { class: 'login-brand' }, h('img', { src: '/favicon.svg', alt: '', width: '32', height: '32' }), 'Meshplane'),
      ssoSection(ctx.params), form)));
  // Focus the username field (the router focuses the h1 only when nothing in the page has focus).
  username.focus();
}
