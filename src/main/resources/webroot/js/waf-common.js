// What the WAF pages (#/waf, #/waf/history) share: their hash and hooks for the shared scope bar, the
// document's text in the editor, the version line with the mode, a decision as text, and the API's
// field paths (rules[2].expression) as JSON pointers for the editor's marks. The scope (team and
// environment), the tabs and the editor's draft are the ACL pages' (acl-common.js), with these names.

import { h, str, fmtTime, badge } from './ui.js';
import { actorName } from './acl-common.js';
import { pointerOf } from './acl-pointer.js';

/** The WAF pages for scopeBar(): their hash, the prefix of their hooks, the tabs' label. */
export const WAF_PAGES = { base: '#/waf', test: 'waf', label: 'WAF pages' };

/** The draft's kind (readDraft / writeDraft): kept apart from the ACL's. */
export const DRAFT = 'waf';

/** A stored document as the editor shows it: the document as stored, two-space indent ({} before the first version). */
export function docText(p) {
  const doc = p && p.policy && typeof p.policy === 'object' ? p.policy : {};
  return JSON.stringify(doc, null, 2);
}

/** The mode as a badge (its text is the mode), with what it means unless `explain` is false (a table's cell). */
export function modeBadge(mode, test, explain = true) {
  const m = str(mode) || 'enforce';
  const meaning = m === 'shadow' ? ' (evaluated and reported, nothing is denied)' : m === 'enforce' ? ' (the edge applies the decisions)' : '';
  return h('span', { class: 'waf-mode' }, badge(m, { 'data-test': test }), explain ? meaning : '');
}

/**
 * "Version 4 · mode enforce (…) · stored <time> by alice (user), restored from version 2": elements;
 * `versionEl` shows the number and is kept by the caller.
 */
export function wafVersionLine(p, versionEl) {
  versionEl.textContent = str(p.version);
  const parts = [h('span', {}, 'Version '), versionEl, ' · mode ', modeBadge(p.mode, 'waf-mode')];
  if (p.created_at) {
    parts.push(' · stored ', fmtTime(p.created_at), ' by ', h('span', { 'data-test': 'waf-version-actor' }, actorName(p.created_by)));
    if (p.restored_from != null) parts.push(`, restored from version ${str(p.restored_from)}`);
  } else {
    parts.push(' · no policy stored yet: every request passes');
  }
  return parts;
}

/** A decision ({outcome, status, rule, matched, errors}) as elements: "deny 403 by rule no-admin; matched …". */
export function decisionText(d, test) {
  if (!d) return h('span', { class: 'muted', 'data-test': test, 'data-outcome': '' }, 'no policy yet: pass');
  const matched = Array.isArray(d.matched) ? d.matched.map(str) : [];
  const errors = Array.isArray(d.errors) ? d.errors.map(str) : [];
  return h('span', { 'data-test': test, 'data-outcome': str(d.outcome) },
    badge(str(d.outcome)),
    d.status != null ? ` ${str(d.status)}` : '',
    d.rule ? [' by rule ', h('span', { class: 'mono' }, str(d.rule))] : '',
    matched.length ? h('span', { class: 'muted' }, ` · matched ${matched.join(', ')}`) : '',
    errors.length ? h('span', { class: 'waf-eval-errors' }, ` · evaluation errors: ${errors.join('; ')}`) : '');
}

/** The API's errors with the JSON pointer of each field path (`pointer`, '' when the field is none), for codeEditor().setServerErrors. */
export function withPointers(errors) {
  return errors.map((e) => ({ ...e, pointer: pointerOf(e.field) ?? '' }));
}

/** True for an error of the document's tests: `tests`, `tests[1]`, `tests[0].request.target` (with `policy.` before it in a preview). */
export function isTestError(e, prefix = '') {
  const f = prefix && e.field.startsWith(prefix) ? e.field.slice(prefix.length) : e.field;
  return f === 'tests' || f.startsWith('tests[') || f.startsWith('tests.');
}

/** True for a failing test (`tests[1]` itself: the decision it got was not the one expected). */
export function isTestFailure(e, prefix = '') {
  const f = prefix && e.field.startsWith(prefix) ? e.field.slice(prefix.length) : e.field;
  return /^tests\[\d+\]$/.test(f);
}
