// The login page: POST /api/v1/session {username, password}.

import { login, loadSession, ApiError } from './api.js';
import { h, field, errorBox, showFormError, showFormMessage, clearFormError } from './ui.js';

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
      form)));
  // Focus the username field (the router focuses the h1 only when nothing in the page has focus).
  username.focus();
}
