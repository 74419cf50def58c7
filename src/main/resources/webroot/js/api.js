// The only module that talks to the panel API (/api/v1, same origin).
//
// - The session cookie is HttpOnly: this code never sees it. Requests go out with
//   credentials: 'same-origin'.
// - The CSRF token comes from the answer of POST or GET /api/v1/session and is kept in a module
//   variable (never in storage). Every POST/PUT/PATCH/DELETE carries it as X-CSRF-Token.
// - Errors are RFC 9457 problems; they become ApiError with the problem's fields.

const BASE = '/api/v1';

let session = null; // the answer of /session: {user, permissions, csrf_token, expires_at, idle_timeout_s}
let csrfToken = null;
let clockOffsetMs = 0; // server clock minus local clock, from the Date header
let onUnauthenticated = () => {};
let onSessionChange = () => {};

export class ApiError extends Error {
  constructor(status, problem, extra = {}) {
    const p = problem || {};
    super(extra.message || p.detail || p.title || `HTTP ${status}`);
    this.name = 'ApiError';
    this.status = status;
    this.problem = p;
    this.code = typeof p.code === 'string' ? p.code : '';
    this.requestId = typeof p.request_id === 'string' ? p.request_id : '';
    this.errors = Array.isArray(p.errors)
      ? p.errors.filter((e) => e && typeof e === 'object').map((e) => ({
        field: e.field == null ? '' : String(e.field),
        message: e.message == null ? '' : String(e.message),
      }))
      : [];
    this.retryAfter = extra.retryAfter ?? null;
    // handled: the API module already acted on it (401: gone to the login page). Pages stay quiet.
    this.handled = !!extra.handled;
  }
}

export function isAbort(e) {
  return !!e && (e.name === 'AbortError');
}

/** Hooks set by app.js: what to do on a 401, and when the session changes. */
export function configure({ unauthenticated, sessionChange } = {}) {
  if (unauthenticated) onUnauthenticated = unauthenticated;
  if (sessionChange) onSessionChange = sessionChange;
}

export function getSession() {
  return session;
}

export function currentUser() {
  return session ? session.user : null;
}

export function can(permission) {
  return !!session && Array.isArray(session.permissions) && session.permissions.includes(permission);
}

function setSession(s) {
  if (s && typeof s === 'object' && s.user && typeof s.csrf_token === 'string') {
    session = s;
    csrfToken = s.csrf_token;
  } else {
    session = null;
    csrfToken = null;
  }
  onSessionChange(session);
}

/** The server's idea of now (ms since the epoch), corrected by the Date header of the last answer. */
export function serverNow() {
  return Date.now() + clockOffsetMs;
}

function noteServerClock(res) {
  const d = res.headers.get('Date');
  if (!d) return;
  const t = Date.parse(d);
  if (Number.isFinite(t)) clockOffsetMs = t - Date.now();
}

/** Query string from an object; empty, null and undefined values are left out. */
export function buildQuery(query) {
  if (!query) return '';
  const qs = new URLSearchParams();
  for (const [k, v] of Object.entries(query)) {
    if (v === undefined || v === null || v === '') continue;
    qs.set(k, String(v));
  }
  // URLSearchParams writes a space as '+'; a literal '+' is already %2B, so this is exact.
  return qs.toString().replace(/\+/g, '%20');
}

function parseRetryAfter(value) {
  if (!value) return null;
  const v = value.trim();
  if (/^\d+$/.test(v)) return parseInt(v, 10);
  const t = Date.parse(v);
  if (Number.isFinite(t)) return Math.max(0, Math.ceil((t - Date.now()) / 1000));
  return null;
}

async function readBody(res) {
  if (res.status === 204 || res.status === 205) return null;
  const type = (res.headers.get('Content-Type') || '').toLowerCase();
  const text = await res.text();
  if (!text) return null;
  if (type.includes('json')) {
    try {
      return JSON.parse(text);
    } catch {
      return null;
    }
  }
  return null; // never show a body that is not JSON (an HTML error page of a proxy, for example)
}

function fallbackProblem(res) {
  return {
    type: 'about:blank',
    title: res.statusText || 'Error',
    status: res.status,
    detail: `The panel answered HTTP ${res.status}${res.statusText ? ' ' + res.statusText : ''}.`,
    code: '',
    request_id: res.headers.get('X-Request-Id') || '',
    errors: [],
  };
}

/**
 * One API call. Returns {status, data, headers}. Throws ApiError (or an AbortError when `signal`
 * aborts). Options: query, body (sent as JSON), headers, signal, authRedirect (default true: a 401
 * goes to the login page), noCsrf.
 */
export async function request(method, path, opts = {}) {
  const { query, body, headers = {}, signal, authRedirect = true, noCsrf = false } = opts;
  let url = BASE + path;
  const qs = buildQuery(query);
  if (qs) url += '?' + qs;
  const h = { Accept: 'application/json', ...headers };
  const mutating = method !== 'GET' && method !== 'HEAD';
  if (mutating && !noCsrf && csrfToken) h['X-CSRF-Token'] = csrfToken;
  let payload;
  if (body !== undefined) {
    h['Content-Type'] = 'application/json';
    payload = JSON.stringify(body);
  }
  let res;
  try {
    res = await fetch(url, {
      method,
      headers: h,
      body: payload,
      credentials: 'same-origin',
      cache: 'no-store',
      signal,
    });
  } catch (e) {
    if (isAbort(e)) throw e;
    throw new ApiError(0, {
      title: 'Network error',
      detail: 'The panel could not be reached. Check the connection and retry.',
      errors: [],
    });
  }
  noteServerClock(res);
  const data = await readBody(res);
  if (res.ok) return { status: res.status, data, headers: res.headers };

  const problem = data && typeof data === 'object' && !Array.isArray(data)
    ? { ...fallbackProblem(res), ...data }
    : fallbackProblem(res);

  if (res.status === 401 && authRedirect) {
    setSession(null);
    onUnauthenticated();
    throw new ApiError(401, problem, { handled: true });
  }
  if (res.status === 403 && problem.code === 'csrf_failed') {
    // The session's CSRF token is not the one we hold (for example the session was renewed in
    // another tab). Read the session again once, then ask the user to retry: never auto-retry a
    // change.
    try {
      await loadSession();
    } catch {
      /* reported below */
    }
    throw new ApiError(403, problem, {
      message: 'Your session\'s security token was out of date and has been renewed. Please retry.',
    });
  }
  if (res.status === 429) {
    const retryAfter = parseRetryAfter(res.headers.get('Retry-After'));
    const n = retryAfter == null ? 'a few' : String(retryAfter);
    throw new ApiError(429, problem, { retryAfter, message: `Too many requests, retry in ${n} s` });
  }
  throw new ApiError(res.status, problem);
}

export const api = {
  get: async (path, query, opts = {}) => (await request('GET', path, { ...opts, query })).data,
  post: async (path, body, opts = {}) => (await request('POST', path, { ...opts, body })).data,
  put: async (path, body, opts = {}) => (await request('PUT', path, { ...opts, body })).data,
  patch: async (path, body, opts = {}) => (await request('PATCH', path, { ...opts, body })).data,
  del: async (path, opts = {}) => (await request('DELETE', path, opts)).data,
};

/** GET with a few waits on 429 (Retry-After), for loops that walk many pages (CSV export). */
export async function getPatiently(path, query, opts = {}) {
  for (let attempt = 0; ; attempt++) {
    try {
      return await api.get(path, query, opts);
    } catch (e) {
      if (!(e instanceof ApiError) || e.status !== 429 || attempt >= 4) throw e;
      const wait = Math.min(30, Math.max(1, e.retryAfter ?? 2)) * 1000;
      await new Promise((resolve, reject) => {
        const t = setTimeout(resolve, wait);
        if (opts.signal) {
          opts.signal.addEventListener('abort', () => {
            clearTimeout(t);
            reject(new DOMException('aborted', 'AbortError'));
          }, { once: true });
        }
      });
    }
  }
}

/** Percent-encodes one path segment (ids, names). */
export function seg(value) {
  return encodeURIComponent(String(value));
}

// ---- the session ---------------------------------------------------------------------------

/** GET /api/v1/session: the current session, or null when there is none (401). */
export async function loadSession() {
  try {
    const r = await request('GET', '/session', { authRedirect: false });
    setSession(r.data);
    return session;
  } catch (e) {
    if (e instanceof ApiError && e.status === 401) {
      setSession(null);
      return null;
    }
    throw e;
  }
}

/** POST /api/v1/session. Throws ApiError (401 wrong credentials, 429 too many failures). */
export async function login(username, password) {
  const r = await request('POST', '/session', {
    body: { username, password },
    authRedirect: false,
    noCsrf: true,
  });
  setSession(r.data);
  return session;
}

/** GET /api/v1/session/oidc: whether single sign-on is on and its IdP answers ({enabled, available, label, end_session_url}). */
export async function oidcInfo() {
  const r = await request('GET', '/session/oidc', { authRedirect: false });
  return r.data;
}

/** DELETE /api/v1/session; the local session is dropped whatever the answer. */
export async function logout() {
  try {
    await request('DELETE', '/session', { authRedirect: false });
  } finally {
    setSession(null);
  }
}
