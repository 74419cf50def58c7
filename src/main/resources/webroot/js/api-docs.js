// The API documentation page (/api-docs.html): Swagger UI (from its WebJar, loaded before this
// module by a classic deferred script) over the OpenAPI document the panel serves at /openapi.yaml.
//
// "Try it out" talks to this panel, same origin, with the session cookie: the document lists the
// routes the panel mirrors under /v1 (API.md §17), so /v1/… becomes /api/v1/…; a bearer token is
// never sent (the panel refuses one); every change (POST, PUT, PATCH, DELETE) carries the session's
// CSRF token, read from GET /api/v1/session just before it is sent.

const PANEL = '/api/v1';
const UNSAFE = new Set(['POST', 'PUT', 'PATCH', 'DELETE']);

/** The panel's path for a path of the document: /v1/x -> /api/v1/x, the rest (probes, /api/v1) as is. */
export function panelPath(path) {
  return path.startsWith('/v1/') ? PANEL + path.slice(3) : path;
}

async function readSession() {
  const r = await fetch(PANEL + '/session', { credentials: 'same-origin', headers: { Accept: 'application/json' } });
  return r.ok ? r.json() : null;
}

async function toPanel(req) {
  const url = new URL(req.url, location.href);
  // the document itself and anything not of this origin go out untouched
  if (url.origin !== location.origin || req.loadSpec) return req;
  url.pathname = panelPath(url.pathname);
  req.url = url.toString();
  req.credentials = 'same-origin';
  for (const name of Object.keys(req.headers || {})) {
    if (name.toLowerCase() === 'authorization') delete req.headers[name];
  }
  if (UNSAFE.has(String(req.method).toUpperCase())) {
    const s = await readSession().catch(() => null);
    if (s && s.csrf_token) req.headers['X-CSRF-Token'] = s.csrf_token;
  }
  return req;
}

/** Swagger UI's own dark styles (html.dark-mode) follow the system's setting, like the dashboard. */
function followColorScheme() {
  const dark = window.matchMedia('(prefers-color-scheme: dark)');
  const apply = () => document.documentElement.classList.toggle('dark-mode', dark.matches);
  apply();
  dark.addEventListener('change', apply);
}

async function showSession() {
  const line = document.getElementById('api-docs-session');
  const user = document.getElementById('api-docs-user');
  const s = await readSession().catch(() => null);
  if (s && s.user) {
    user.textContent = String(s.user.username ?? '');
    line.textContent = `Signed in as ${s.user.username} (${s.user.role}, ${s.user.team} / ${s.user.environment}): `
      + 'Try it out uses this session.';
  } else {
    line.textContent = 'Not signed in: Try it out answers 401 until you log in on the dashboard.';
  }
}

/**
 * Swagger UI leaves some controls without an accessible name (the example pickers, a parameter's value
 * list, the request body's editor) and its code blocks scroll without being focusable: each is given
 * a name (aria-label) and code blocks a tab stop as Swagger UI draws them.
 */
function nameFor(el) {
  const row = el.closest('tr[data-param-name]');
  if (row) return `${row.dataset.paramName} (${row.dataset.paramIn || 'parameter'})`;
  if (el.classList.contains('examples-select-element')) return 'Example';
  if (el.closest('.body-param, .opblock-section-request-body')) return el.tagName === 'TEXTAREA' ? 'Request body' : 'Request media type';
  if (el.closest('.responses-wrapper, .response-controls')) return 'Response media type';
  return el.getAttribute('title') || el.getAttribute('name') || 'Value';
}

function fixAccessibility(root) {
  for (const el of root.querySelectorAll('select, textarea, input')) {
    if ((el.labels && el.labels.length) || el.hasAttribute('aria-label') || el.hasAttribute('aria-labelledby')) continue;
    el.setAttribute('aria-label', nameFor(el));
  }
  for (const pre of root.querySelectorAll('.highlight-code pre:not([tabindex]), pre.microlight:not([tabindex])')) {
    pre.setAttribute('tabindex', '0');
  }
}

function watchAccessibility() {
  const root = document.getElementById('swagger-ui');
  new MutationObserver(() => fixAccessibility(root)).observe(root, { childList: true, subtree: true });
}

function start() {
  watchAccessibility();
  followColorScheme();
  showSession();
  // window.SwaggerUIBundle: the WebJar's UMD bundle, a classic script
  window.ui = window.SwaggerUIBundle({
    url: '/openapi.yaml',
    dom_id: '#swagger-ui',
    presets: [window.SwaggerUIBundle.presets.apis],
    layout: 'BaseLayout',
    deepLinking: false, // a deep link is a link inside each operation's button (axe: nested-interactive)
    validatorUrl: null, // no call to validator.swagger.io (connect-src 'self')
    displayRequestDuration: true,
    defaultModelsExpandDepth: 0,
    docExpansion: 'list',
    persistAuthorization: false,
    requestInterceptor: toPanel,
  });
}

start();
