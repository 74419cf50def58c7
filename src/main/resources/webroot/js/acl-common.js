// What both ACL pages share: which policy (team and environment), the tabs, the canonical text of a
// policy, the version line, and the editor's draft (kept per policy in sessionStorage, so that the
// history page can ask before it replaces unsaved edits). The WAF pages use the scope, the tabs, the
// actor's name and the draft too (with their own hash, hooks and draft key).

import { api, currentUser, ApiError } from './api.js';
import { h, btn, str, fmtTime, field } from './ui.js';

// ---- which policy: team and environment -----------------------------------------------------

export function scopeOf(ctx) {
  const user = currentUser() || {};
  const wildTeam = user.team === '*';
  const wildEnv = user.environment === '*';
  return {
    wildTeam,
    wildEnv,
    team: wildTeam ? (ctx.params.get('team') || '').trim() : str(user.team),
    environment: wildEnv ? (ctx.params.get('environment') || '').trim() : str(user.environment),
  };
}

export function scopeQuery(sc) {
  return { team: sc.team, environment: sc.environment };
}

export function scopeHash(sc, extra = {}) {
  const qs = new URLSearchParams();
  if (sc.wildTeam && sc.team) qs.set('team', sc.team);
  if (sc.wildEnv && sc.environment) qs.set('environment', sc.environment);
  for (const [k, v] of Object.entries(extra)) if (v !== '' && v != null) qs.set(k, String(v));
  return qs;
}

/**
 * Tabs (policy, history) and, when the user's scope is '*', the team/environment pickers. `page`
 * names the pages: their hash (`#/acl`, `#/waf`; the history is `<base>/history`), the prefix of the
 * data-test hooks (`acl-tab-policy`, `waf-team` …) and the tabs' label. The ACL pages' by default.
 */
export function scopeBar(ctx, sc, current, onChange, page = { base: '#/acl', test: 'acl', label: 'ACL pages' }) {
  const t = page.test;
  const policyTab = h('a', { 'data-test': `${t}-tab-policy`, class: 'tab' }, 'Policy');
  const historyTab = h('a', { 'data-test': `${t}-tab-history`, class: 'tab' }, 'History');
  (current === 'policy' ? policyTab : historyTab).setAttribute('aria-current', 'page');
  const label = h('span', { class: 'scope-label', 'data-test': `${t}-scope` });
  function refresh() {
    const qs = scopeHash(sc).toString();
    policyTab.setAttribute('href', page.base + (qs ? '?' + qs : ''));
    historyTab.setAttribute('href', page.base + '/history' + (qs ? '?' + qs : ''));
    label.textContent = sc.team && sc.environment ? `Policy of ${sc.team} / ${sc.environment}` : 'Choose a team and environment';
  }
  refresh();
  let form = null;
  if (sc.wildTeam || sc.wildEnv) {
    const team = h('input', { type: 'text', 'data-test': `${t}-team`, value: sc.team, autocomplete: 'off', spellcheck: 'false', placeholder: 'web', disabled: !sc.wildTeam });
    const env = h('input', { type: 'text', 'data-test': `${t}-environment`, value: sc.environment, autocomplete: 'off', spellcheck: 'false', placeholder: 'prod', disabled: !sc.wildEnv });
    const load = h('button', { type: 'submit', class: 'btn', 'data-test': `${t}-load` }, 'Load');
    form = h('form', { class: 'scope-form', novalidate: true, 'aria-label': 'Which policy' },
      h('div', { class: 'form-row' }, field('Team', team), field('Environment', env), h('div', { class: 'form-actions' }, load)));
    form.addEventListener('submit', (e) => {
      e.preventDefault();
      if (sc.wildTeam) sc.team = team.value.trim();
      if (sc.wildEnv) sc.environment = env.value.trim();
      ctx.setHashQuiet(scopeHash(sc));
      refresh();
      onChange();
    });
  }
  return h('div', { class: 'scope-bar' },
    h('nav', { class: 'tabs', 'aria-label': page.label }, policyTab, historyTab), label, form);
}

// ---- policy text ----------------------------------------------------------------------------

export function grantText(g, i) {
  const side = (x) => (Array.isArray(x) ? x.map(str).join(', ') : x === undefined ? '(missing)' : str(x));
  if (!g || typeof g !== 'object') return `grant ${i}: ${str(g)}`;
  return `grant ${i}: ${side(g.src)} → ${side(g.dst)} ${side(g.ports)}`;
}

/** Keys in the order the server writes them; any other key follows, alphabetically. */
const KEY_ORDER = ['grants', 'tests', 'src', 'dst', 'ports', 'accept', 'deny'];

function canonical(v) {
  if (Array.isArray(v)) return v.map(canonical);
  if (!v || typeof v !== 'object') return v;
  const rank = (k) => (KEY_ORDER.includes(k) ? KEY_ORDER.indexOf(k) : KEY_ORDER.length);
  const keys = Object.keys(v).sort((a, b) => rank(a) - rank(b) || (a < b ? -1 : a > b ? 1 : 0));
  const out = {};
  for (const k of keys) out[k] = canonical(v[k]);
  return out;
}

/**
 * A policy as canonical pretty JSON: grants then tests (an absent tests is []), keys in one order,
 * two-space indent. Diffs compare this text, so that formatting and key order never show as changes.
 */
export function canonicalText(policy) {
  const p = policy && typeof policy === 'object' ? policy : {};
  const doc = { grants: p.grants === undefined ? [] : p.grants, tests: p.tests === undefined ? [] : p.tests };
  for (const [k, v] of Object.entries(p)) if (!(k in doc) && !['team', 'environment', 'version', 'created_at', 'created_by', 'restored_from'].includes(k)) doc[k] = v;
  return JSON.stringify(canonical(doc), null, 2);
}

export function actorName(a) {
  if (!a || typeof a !== 'object') return str(a) || '—';
  return `${str(a.name) || str(a.id)} (${str(a.type)})`;
}

/**
 * "Version 7 · stored <time> by alice (user), restored from version 3": elements, not a string
 * (`versionEl` shows the number and is kept by the caller).
 */
export function versionLine(p, versionEl) {
  versionEl.textContent = str(p.version);
  const parts = [h('span', { 'data-test': 'acl-version-label' }, 'Version '), versionEl];
  if (p.created_at) {
    parts.push(' · stored ', fmtTime(p.created_at), ' by ', h('span', { 'data-test': 'acl-version-actor' }, actorName(p.created_by)));
    if (p.restored_from != null) parts.push(`, restored from version ${str(p.restored_from)}`);
  } else {
    parts.push(' · no policy stored yet: default deny');
  }
  return parts;
}

// ---- the editor's draft ---------------------------------------------------------------------

function draftKey(sc, kind) {
  return `meshplane.${kind}-draft:${sc.team}/${sc.environment}`;
}

/** {text, base, from?} of unsaved edits of this policy (`kind`: acl or waf) in this tab, or null. */
export function readDraft(sc, kind = 'acl') {
  try {
    const d = JSON.parse(sessionStorage.getItem(draftKey(sc, kind)) || 'null');
    return d && typeof d.text === 'string' && Number.isInteger(d.base) ? d : null;
  } catch {
    return null;
  }
}

export function writeDraft(sc, draft, kind = 'acl') {
  try {
    if (draft) sessionStorage.setItem(draftKey(sc, kind), JSON.stringify(draft));
    else sessionStorage.removeItem(draftKey(sc, kind));
  } catch {
    /* storage full or refused: the draft only survives this page */
  }
}

// ---- the history pages: every version, and a restore refused as stale ------------------------

/** Every version of the policy at {@code base} ('/acl' or '/waf'), oldest first, read page by page (at most 10,000). */
export async function listVersions(base, sc, signal) {
  const all = [];
  let cursor = '';
  do {
    const d = await api.get(`${base}/versions`, { ...scopeQuery(sc), limit: 1000, cursor: cursor || undefined }, { signal });
    if (d && Array.isArray(d.items)) all.push(...d.items);
    cursor = d && typeof d.next_cursor === 'string' ? d.next_cursor : '';
  } while (cursor && all.length < 10000);
  return all;
}

/**
 * A restore's failure shown in {@code box}: a 409 says someone saved meanwhile (with the version now
 * and a Reload button calling {@code reload}); true when it was one, false for the caller to show.
 */
export async function restoreConflict(e, base, prefix, sc, signal, box, reload) {
  if (!(e instanceof ApiError && e.status === 409)) return false;
  let now = null;
  try {
    now = (await api.get(base, scopeQuery(sc), { signal })).version;
  } catch {
    /* keep null */
  }
  const again = btn('Reload', { 'data-test': `${prefix}-conflict-reload` });
  again.addEventListener('click', () => reload());
  box.replaceChildren(h('p', { 'data-test': `${prefix}-conflict` },
    `Someone saved version ${now ?? '(newer)'} meanwhile. Nothing was restored: reload the history and try again.`), again);
  box.hidden = false;
  return true;
}
