// Entry point: restores the session, draws the header, routes the hash to a page.

import { configure, loadSession, logout, getSession, can, isAbort, ApiError } from './api.js';
import {
  h, btn, flash, clearFlash, pageError, pageErrorText, clearPageError, badge,
} from './ui.js';
import { renderLogin } from './login.js';
import { renderOverview } from './overview.js';
import { renderNodes } from './nodes.js';
import { renderNode } from './node.js';
import { renderOperations } from './operations.js';
import { renderTokens } from './tokens.js';
import { renderAcl, renderAclHistory } from './acl.js';
import { renderAudit, renderEvents } from './logs.js';
import { renderUsers } from './users.js';
import { renderMeshca } from './meshca.js';
import { renderIngress } from './ingress.js';
import { renderWaf, renderWafHistory } from './waf.js';

// Nav entries, in order; each shown only with its permission.
const NAV = [
  { page: 'overview', href: '#/', label: 'Overview', perm: 'nodes:read' },
  { page: 'nodes', href: '#/nodes', label: 'Nodes', perm: 'nodes:read' },
  { page: 'operations', href: '#/operations', label: 'Operations', perm: 'nodes:read' },
  { page: 'tokens', href: '#/tokens', label: 'Tokens', perm: 'tokens:read' },
  { page: 'acl', href: '#/acl', label: 'ACL policy', perm: 'acl:read' },
  { page: 'ingress', href: '#/ingress', label: 'Ingress', perm: 'ingress:read' },
  { page: 'waf', href: '#/waf', label: 'WAF', perm: 'waf:read' },
  { page: 'audit', href: '#/audit', label: 'Audit log', perm: 'audit:read' },
  { page: 'events', href: '#/events', label: 'Events', perm: 'events:read' },
  { page: 'meshca', href: '#/meshca', label: 'MeshCA', perm: 'meshca:read' },
  { page: 'users', href: '#/users', label: 'Users', perm: 'users:manage' },
  // a page of its own (Swagger UI over the OpenAPI document), not a route of this app; no permission
  { page: 'api-docs', href: '/api-docs.html', label: 'API docs', perm: null },
];

const allowed = (n) => !n.perm || can(n.perm);

const ROUTES = [
  { re: /^\/$/, nav: 'overview', perm: 'nodes:read', render: renderOverview },
  { re: /^\/nodes$/, nav: 'nodes', perm: 'nodes:read', render: renderNodes },
  { re: /^\/nodes\/([^/]+)$/, nav: 'nodes', perm: 'nodes:read', render: renderNode },
  { re: /^\/operations$/, nav: 'operations', perm: 'nodes:read', render: renderOperations },
  { re: /^\/tokens$/, nav: 'tokens', perm: 'tokens:read', render: renderTokens },
  { re: /^\/acl$/, nav: 'acl', perm: 'acl:read', render: renderAcl },
  { re: /^\/acl\/history$/, nav: 'acl', perm: 'acl:read', render: renderAclHistory },
  { re: /^\/ingress$/, nav: 'ingress', perm: 'ingress:read', render: renderIngress },
  { re: /^\/waf$/, nav: 'waf', perm: 'waf:read', render: renderWaf },
  { re: /^\/waf\/history$/, nav: 'waf', perm: 'waf:read', render: renderWafHistory },
  { re: /^\/audit$/, nav: 'audit', perm: 'audit:read', render: renderAudit },
  { re: /^\/events$/, nav: 'events', perm: 'events:read', render: renderEvents },
  { re: /^\/users$/, nav: 'users', perm: 'users:manage', render: renderUsers },
  { re: /^\/meshca$/, nav: 'meshca', perm: 'meshca:read', render: renderMeshca },
];

let current = null; // {controller, cleanups}
let lastActivity = Date.now();

/**
 * True when nobody has touched the page for the session's idle timeout: live refreshes pause
 * then, so that a forgotten tab does not keep the session alive for ever. Any key, click or
 * scroll resumes them.
 */
function isIdle() {
  const s = getSession();
  const limit = s && Number(s.idle_timeout_s) > 0 ? Number(s.idle_timeout_s) * 1000 : 0;
  return limit > 0 && Date.now() - lastActivity > limit;
}

function markActive() {
  const wasIdle = isIdle();
  lastActivity = Date.now();
  if (wasIdle) document.dispatchEvent(new Event('meshplane:active'));
}
let flashNext = null; // a message to show after the next navigation

function parseHash() {
  const raw = location.hash.replace(/^#/, '') || '/';
  const q = raw.indexOf('?');
  const path = (q < 0 ? raw : raw.slice(0, q)) || '/';
  const params = new URLSearchParams(q < 0 ? '' : raw.slice(q + 1));
  return { path, params };
}

/** A safe "next" location for after the login: only our own hash routes. */
function safeNext(next) {
  if (typeof next !== 'string' || !next.startsWith('#/') || next.startsWith('#/login')) return '#/';
  return next;
}

function loginHash() {
  const here = location.hash && location.hash !== '#' ? location.hash : '#/';
  return '#/login' + (here.startsWith('#/login') ? '' : '?next=' + encodeURIComponent(here));
}

export function navigate(hash, { replace = false } = {}) {
  if (location.hash === hash) {
    route();
  } else if (replace) {
    history.replaceState(null, '', hash);
    route();
  } else {
    location.hash = hash;
  }
}

function firstAllowedPage() {
  const entry = NAV.find((n) => n.perm && can(n.perm));
  return entry ? entry.href : null;
}

// ---- header ---------------------------------------------------------------------------------

function renderHeader(session) {
  const header = document.getElementById('app-header');
  const nav = document.getElementById('app-nav');
  const userBox = document.getElementById('user-box');
  if (!session) {
    header.hidden = true;
    nav.replaceChildren();
    userBox.replaceChildren();
    return;
  }
  const u = session.user || {};
  nav.replaceChildren(h('ul', { class: 'nav-list' }, NAV.filter(allowed).map((n) =>
    h('li', {}, h('a', { href: n.href, 'data-test': `nav-${n.page}`, 'data-page': n.page }, n.label)))));
  const logoutBtn = btn('Log out', { 'data-test': 'logout', class: 'btn-small' });
  logoutBtn.addEventListener('click', async () => {
    logoutBtn.disabled = true;
    // signed in through the identity provider: the login page then offers to sign out there too
    const viaIdp = getSession()?.user?.source === 'oidc';
    try {
      await logout();
    } catch (e) {
      if (!isAbort(e) && !(e instanceof ApiError && e.status === 401)) {
        flashNext = { text: 'Logged out here; the panel could not be told (' + e.message + ').', kind: 'info' };
      }
    }
    if (!flashNext) flashNext = { text: 'You are logged out.', kind: 'info' };
    navigate(viaIdp ? '#/login?signed_out=oidc' : '#/login');
  });
  userBox.replaceChildren(
    h('span', { class: 'user-name', 'data-test': 'header-username' }, String(u.username ?? '')),
    h('span', { 'data-test': 'header-role' }, badge(String(u.role ?? ''), { class: 'badge-role' })),
    h('span', { class: 'user-scope', 'data-test': 'header-scope', title: 'team / environment' },
      `${String(u.team ?? '')} / ${String(u.environment ?? '')}`),
    logoutBtn);
  header.hidden = false;
}

function markNav(navPage) {
  for (const a of document.querySelectorAll('#app-nav a')) {
    if (a.dataset.page === navPage) a.setAttribute('aria-current', 'page');
    else a.removeAttribute('aria-current');
  }
}

// ---- page context ---------------------------------------------------------------------------

function makeContext(path, params, page) {
  const controller = new AbortController();
  const cleanups = [];
  const root = document.getElementById('page');
  const ctx = {
    root,
    path,
    params,
    signal: controller.signal,
    session: getSession(),
    setTitle(title) {
      document.title = `${title} · Meshplane`;
    },
    /** The page's <h1>, focusable so that navigation can move focus to it. */
    heading(text) {
      return h('h1', { class: 'page-title', tabindex: '-1', 'data-test': 'page-title' }, text);
    },
    onCleanup(fn) {
      cleanups.push(fn);
    },
    flash,
    flashAfterNavigation(text, kind = 'success') {
      flashNext = { text, kind };
    },
    error: pageError,
    errorText: pageErrorText,
    clearError: clearPageError,
    navigate,
    /** Rewrites the query of the current hash without re-rendering the page. */
    setHashQuiet(qs) {
      const s = qs.toString();
      const hash = '#' + path + (s ? '?' + s : '');
      if (location.hash !== hash) history.replaceState(null, '', hash);
    },
    /**
     * Calls fn now and then every `interval` ms (a number, or a function giving it) while the
     * page is shown: never two at once, paused while the tab is hidden, stopped when the page is
     * left. Returns {kick(), stop()}.
     */
    poll(interval, fn, { onError = pageError } = {}) {
      let timer = null;
      let running = false;
      let again = false;
      let stopped = false;
      const period = typeof interval === 'function' ? interval : () => interval;
      const schedule = () => {
        if (!stopped) timer = setTimeout(tick, period());
      };
      async function tick() {
        if (stopped) return;
        clearTimeout(timer);
        timer = null;
        if (running) {
          again = true;
          return;
        }
        if (document.hidden || isIdle()) {
          schedule();
          return;
        }
        running = true;
        try {
          await fn();
        } catch (e) {
          if (!isAbort(e) && !stopped) onError(e);
        } finally {
          running = false;
        }
        if (again) {
          again = false;
          tick();
          return;
        }
        schedule();
      }
      const onVisible = () => {
        if (!document.hidden) tick();
      };
      const stop = () => {
        stopped = true;
        clearTimeout(timer);
        document.removeEventListener('visibilitychange', onVisible);
        document.removeEventListener('meshplane:active', onVisible);
      };
      document.addEventListener('visibilitychange', onVisible);
      document.addEventListener('meshplane:active', onVisible);
      controller.signal.addEventListener('abort', stop);
      tick();
      return { kick: tick, stop };
    },
  };
  current = { controller, cleanups, page };
  return ctx;
}

function teardown() {
  if (!current) return;
  current.controller.abort();
  for (const fn of current.cleanups) {
    try {
      fn();
    } catch {
      /* ignore */
    }
  }
  current = null;
  for (const d of document.querySelectorAll('dialog')) d.remove();
}

// ---- the router -----------------------------------------------------------------------------

function route() {
  const { path, params } = parseHash();
  teardown();
  clearPageError();
  clearFlash();
  if (flashNext) {
    flash(flashNext.text, flashNext.kind);
    flashNext = null;
  }
  const root = document.getElementById('page');
  root.replaceChildren();
  const session = getSession();

  if (path === '/login') {
    if (session) {
      navigate(safeNext(params.get('next')), { replace: true });
      return;
    }
    markNav(null);
    const ctx = makeContext(path, params, 'login');
    renderLogin(ctx, {
      next: safeNext(params.get('next')),
      done: (next) => navigate(safeNext(next)),
    });
    return;
  }
  if (!session) {
    navigate(loginHash(), { replace: true });
    return;
  }

  let match = null;
  let found = null;
  for (const r of ROUTES) {
    match = r.re.exec(path);
    if (match) {
      found = r;
      break;
    }
  }
  const ctx = makeContext(path, params, found ? found.nav : 'none');
  if (!found) {
    ctx.setTitle('Not found');
    root.append(ctx.heading('Page not found'),
      h('p', {}, 'There is no such page. '), h('p', {}, h('a', { href: '#/' }, 'Go to the overview')));
    markNav(null);
    focusHeading(root);
    return;
  }
  if (path === '/' && !can('nodes:read')) {
    const first = firstAllowedPage();
    if (first && first !== '#/') {
      navigate(first, { replace: true });
      return;
    }
  }
  markNav(found.nav);
  if (found.perm && !can(found.perm)) {
    ctx.setTitle('Not allowed');
    root.append(ctx.heading('Not allowed'));
    pageErrorText(`Your role does not include the permission ${found.perm} that this page needs.`);
    focusHeading(root);
    return;
  }
  let arg;
  try {
    arg = match[1] !== undefined ? decodeURIComponent(match[1]) : undefined;
  } catch {
    arg = match[1];
  }
  try {
    found.render(ctx, arg);
  } catch (e) {
    pageError(e);
  }
  focusHeading(root);
}

function focusHeading(root) {
  const heading = root.querySelector('h1[tabindex]');
  if (heading && !root.contains(document.activeElement)) heading.focus({ preventScroll: true });
}

// ---- start ----------------------------------------------------------------------------------

async function start() {
  configure({
    sessionChange: renderHeader,
    unauthenticated: () => {
      if (location.hash.startsWith('#/login')) return;
      flashNext = { text: 'Your session has ended. Please log in again.', kind: 'info' };
      navigate(loginHash(), { replace: true });
    },
  });
  for (const type of ['pointerdown', 'keydown', 'wheel', 'touchstart']) {
    window.addEventListener(type, markActive, { capture: true, passive: true });
  }
  document.getElementById('skip-link').addEventListener('click', () => {
    const heading = document.querySelector('#page h1');
    (heading || document.getElementById('main')).focus();
  });
  let bootError = null;
  try {
    await loadSession();
  } catch (e) {
    bootError = e; // the session could not be read (network, 503): the login page says why
  }
  window.addEventListener('hashchange', route);
  route();
  if (bootError) pageError(bootError);
}

start();
