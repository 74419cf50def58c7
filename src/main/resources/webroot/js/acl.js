// ACL policy: the editor (GET/PUT /api/v1/acl with If-Match), the preview (POST /acl/preview),
// and the history with roll back (GET /acl/versions, POST /acl/versions/{v}/restore).

import { api, request, can, currentUser, seg, isAbort, ApiError } from './api.js';
import {
  h, btn, td, str, fmtTime, pre, field, makeTable, emptyRow, errorBox, showFormError, showFormMessage,
  clearFormError, confirmDialog, link, nodeHref, uid, debounce,
} from './ui.js';

// ---- which policy: team and environment -----------------------------------------------------

function scopeOf(ctx) {
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

function scopeQuery(sc) {
  return { team: sc.team, environment: sc.environment };
}

function scopeHash(sc, extra = {}) {
  const qs = new URLSearchParams();
  if (sc.wildTeam && sc.team) qs.set('team', sc.team);
  if (sc.wildEnv && sc.environment) qs.set('environment', sc.environment);
  for (const [k, v] of Object.entries(extra)) if (v !== '' && v != null) qs.set(k, String(v));
  return qs;
}

/** Tabs (policy, history) and, when the user's scope is '*', the team/environment pickers. */
function scopeBar(ctx, sc, current, onChange) {
  const policyTab = h('a', { 'data-test': 'acl-tab-policy', class: 'tab' }, 'Policy');
  const historyTab = h('a', { 'data-test': 'acl-tab-history', class: 'tab' }, 'History');
  (current === 'policy' ? policyTab : historyTab).setAttribute('aria-current', 'page');
  const label = h('span', { class: 'scope-label', 'data-test': 'acl-scope' });
  function refresh() {
    const qs = scopeHash(sc).toString();
    policyTab.setAttribute('href', '#/acl' + (qs ? '?' + qs : ''));
    historyTab.setAttribute('href', '#/acl/history' + (qs ? '?' + qs : ''));
    label.textContent = sc.team && sc.environment ? `Policy of ${sc.team} / ${sc.environment}` : 'Choose a team and environment';
  }
  refresh();
  let form = null;
  if (sc.wildTeam || sc.wildEnv) {
    const team = h('input', { type: 'text', 'data-test': 'acl-team', value: sc.team, autocomplete: 'off', spellcheck: 'false', placeholder: 'web', disabled: !sc.wildTeam });
    const env = h('input', { type: 'text', 'data-test': 'acl-environment', value: sc.environment, autocomplete: 'off', spellcheck: 'false', placeholder: 'prod', disabled: !sc.wildEnv });
    const load = h('button', { type: 'submit', class: 'btn', 'data-test': 'acl-load' }, 'Load');
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
    h('nav', { class: 'tabs', 'aria-label': 'ACL pages' }, policyTab, historyTab), label, form);
}

function grantText(g, i) {
  const side = (x) => (Array.isArray(x) ? x.map(str).join(', ') : x === undefined ? '(missing)' : str(x));
  if (!g || typeof g !== 'object') return `grant ${i}: ${str(g)}`;
  return `grant ${i}: ${side(g.src)} → ${side(g.dst)} ${side(g.ports)}`;
}

function docText(policy) {
  return JSON.stringify({ grants: policy.grants || [], tests: policy.tests || [] }, null, 2);
}

function actorName(a) {
  if (!a || typeof a !== 'object') return str(a) || '—';
  return `${str(a.name) || str(a.id)} (${str(a.type)})`;
}

/** Parses the editor: {doc} or {error, field}. */
function parseDoc(text) {
  let doc;
  try {
    doc = JSON.parse(text);
  } catch (e) {
    let where = '';
    const m = /position (\d+)/.exec(e.message);
    if (m) {
      const pos = Number(m[1]);
      const before = text.slice(0, pos);
      const line = before.split('\n').length;
      const col = pos - before.lastIndexOf('\n');
      where = ` (line ${line}, column ${col})`;
    }
    return { error: `The editor does not hold valid JSON${where}: ${e.message}` };
  }
  if (!doc || typeof doc !== 'object' || Array.isArray(doc)) {
    return { error: 'The policy must be a JSON object: {"grants": [...], "tests": [...]}.' };
  }
  return { doc };
}

// ---- the editor page ------------------------------------------------------------------------

export function renderAcl(ctx) {
  ctx.setTitle('ACL policy');
  const canWrite = can('acl:write');
  const sc = scopeOf(ctx);
  let loaded = null;
  let loadedText = '';
  let grantItems = [];

  const versionEl = h('strong', { 'data-test': 'acl-version' }, '—');
  const metaEl = h('span', { class: 'muted', 'data-test': 'acl-meta' });
  const editorId = uid('acl-editor');
  const editor = h('textarea', {
    id: editorId, 'data-test': 'acl-editor', class: 'code-editor', rows: '22', spellcheck: 'false',
    autocomplete: 'off', autocapitalize: 'off', readOnly: !canWrite, disabled: true,
  });
  const saveBtn = canWrite ? h('button', { type: 'button', class: 'btn btn-primary', 'data-test': 'acl-save', disabled: true }, 'Save') : null;
  const formatBtn = btn('Format JSON', { 'data-test': 'acl-format' });
  const reloadBtn = btn('Reload', { 'data-test': 'acl-reload' });
  const errorsBox = h('div', { class: 'acl-errors form-error', 'data-test': 'acl-errors', role: 'alert', hidden: true });
  const grantsList = h('ul', { class: 'grant-list', 'data-test': 'acl-grants' });
  const testsNote = h('p', { class: 'muted' });

  // ---- summary of the grants, errors beside them ----
  function renderSummary(text) {
    const parsed = parseDoc(text);
    grantItems = [];
    if (parsed.error) {
      grantsList.replaceChildren(h('li', { class: 'muted' }, 'The editor does not hold a valid JSON object yet.'));
      testsNote.textContent = '';
      return;
    }
    const grants = parsed.doc.grants;
    if (!Array.isArray(grants)) {
      grantsList.replaceChildren(h('li', { class: 'muted' }, 'No "grants" array: the policy needs one ([] allows nothing).'));
    } else if (!grants.length) {
      grantsList.replaceChildren(h('li', { class: 'muted' }, 'No grants: default deny, no node reaches another.'));
    } else {
      grantItems = grants.map((g, i) => h('li', { 'data-test': 'acl-grant', 'data-grant-index': String(i) },
        h('span', { class: 'mono' }, grantText(g, i)), h('ul', { class: 'grant-errors' })));
      grantsList.replaceChildren(...grantItems);
    }
    const tests = parsed.doc.tests;
    testsNote.textContent = Array.isArray(tests)
      ? `${tests.length} test${tests.length === 1 ? '' : 's'} run on every save, and on every preview below (before saving).` : '';
  }
  let summarized = '';
  const resummarize = debounce(() => {
    if (editor.value !== summarized) {
      summarized = editor.value;
      renderSummary(editor.value);
    }
  }, 400);
  editor.addEventListener('input', resummarize);

  function clearErrors() {
    errorsBox.replaceChildren();
    errorsBox.hidden = true;
    for (const li of grantItems) {
      li.classList.remove('has-error');
      li.querySelector('.grant-errors').replaceChildren();
    }
  }

  /** Puts each error beside its grant when its pointer is /grants/N…; returns the others. */
  function placeGrantErrors(errors, prefix = '') {
    const rest = [];
    for (const e of errors) {
      let ptr = e.field;
      if (prefix && ptr.startsWith(prefix + '/')) ptr = ptr.slice(prefix.length);
      const m = /^\/grants\/(\d+)(?:\/|$)/.exec(ptr);
      const li = m ? grantItems[Number(m[1])] : null;
      if (li) {
        li.classList.add('has-error');
        li.querySelector('.grant-errors').append(h('li', { 'data-test': 'acl-grant-error', 'data-field': e.field }, `${e.field}: ${e.message}`));
      } else {
        rest.push(e);
      }
    }
    return rest;
  }

  function showGeneral(detail, rest, besideCount, extra = []) {
    const tests = rest.filter((e) => e.field.startsWith('/tests'));
    const others = rest.filter((e) => !e.field.startsWith('/tests'));
    const item = (e) => h('li', { 'data-test': 'acl-error', 'data-field': e.field }, e.field ? `${e.field}: ${e.message}` : e.message);
    const nodes = [h('p', { class: 'problem-detail' }, detail)];
    if (others.length) nodes.push(h('ul', { class: 'problem-errors' }, others.map(item)));
    if (tests.length) {
      const failed = tests.some((e) => /^test \d+/.test(e.message));
      nodes.push(h('h3', { class: 'test-failure-title', 'data-test': 'acl-test-failure' },
        failed ? 'A policy test failed: nothing was saved' : 'Errors in the tests'));
      nodes.push(h('ul', { class: 'problem-errors test-failures' }, tests.map(item)));
    }
    if (besideCount) nodes.push(h('p', {}, `${besideCount} error${besideCount === 1 ? ' is' : 's are'} shown beside ${besideCount === 1 ? 'its grant' : 'their grants'} below the editor.`));
    nodes.push(...extra);
    errorsBox.replaceChildren(...nodes);
    errorsBox.hidden = false;
  }

  // the editor is tall: bring the first error (at its grant, or the general box) into view
  function revealFirstError() {
    const shown = [...document.querySelectorAll('[data-test="acl-grant-error"], [data-test="acl-errors"]')]
      .find((el) => el.offsetParent !== null);
    if (shown) shown.scrollIntoView({ block: 'center' });
  }

  function showProblem(e, prefix = '') {
    if (isAbort(e) || (e instanceof ApiError && e.handled)) return;
    if (e instanceof ApiError && e.status === 400 && e.errors.length) {
      const rest = placeGrantErrors(e.errors, prefix);
      showGeneral(e.message, rest, e.errors.length - rest.length);
    } else {
      showGeneral(e.message, [], 0, e instanceof ApiError && e.requestId ? [h('p', { class: 'request-id' }, `Request id ${e.requestId}`)] : []);
    }
  }

  // ---- load ----
  async function load() {
    clearErrors();
    if (!sc.team || !sc.environment) {
      editor.disabled = true;
      if (saveBtn) saveBtn.disabled = true;
      versionEl.textContent = '—';
      metaEl.textContent = '';
      return;
    }
    try {
      const r = await request('GET', '/acl', { query: scopeQuery(sc), signal: ctx.signal });
      applyPolicy(r.data);
      fillNodes();
    } catch (e) {
      if (isAbort(e)) return;
      editor.disabled = true;
      if (saveBtn) saveBtn.disabled = true;
      ctx.error(e);
    }
  }

  function applyPolicy(p) {
    loaded = p;
    editor.value = docText(p);
    loadedText = editor.value;
    editor.disabled = false;
    if (saveBtn) saveBtn.disabled = false;
    versionEl.textContent = str(p.version);
    metaEl.replaceChildren(p.created_at
      ? [' stored ', fmtTime(p.created_at), ` by ${actorName(p.created_by)}`, p.restored_from ? `, restored from version ${str(p.restored_from)}` : '']
      : ' (no policy stored yet: default deny)');
    summarized = editor.value;
    renderSummary(editor.value);
  }

  reloadBtn.addEventListener('click', async () => {
    if (loaded && editor.value !== loadedText) {
      const ok = await confirmDialog({ title: 'Discard your edits?', message: 'Reloading replaces the editor with the stored policy.', confirmLabel: 'Discard and reload', danger: true });
      if (!ok) return;
    }
    ctx.clearError();
    load();
  });

  formatBtn.addEventListener('click', () => {
    clearErrors();
    const parsed = parseDoc(editor.value);
    if (parsed.error) {
      showGeneral(parsed.error, [{ field: '(json)', message: parsed.error }], 0);
      return;
    }
    editor.value = JSON.stringify(parsed.doc, null, 2);
    resummarize();
  });

  // ---- save ----
  if (saveBtn) {
    saveBtn.addEventListener('click', async () => {
      clearErrors();
      resummarize.cancel();
      const parsed = parseDoc(editor.value);
      summarized = editor.value;
      renderSummary(editor.value);
      if (parsed.error) {
        showGeneral('Nothing was saved.', [{ field: '(json)', message: parsed.error }], 0);
        editor.focus();
        return;
      }
      saveBtn.disabled = true;
      try {
        const r = await request('PUT', '/acl', {
          query: scopeQuery(sc), body: parsed.doc, headers: { 'If-Match': `"${str(loaded.version)}"` }, signal: ctx.signal,
        });
        applyPolicy(r.data);
        ctx.flash(`Policy saved as version ${str(r.data.version)}.`);
      } catch (e) {
        if (e instanceof ApiError && e.status === 409) {
          await showConflict(e);
        } else {
          showProblem(e);
          revealFirstError();
        }
      } finally {
        saveBtn.disabled = false;
      }
    });
  }

  async function showConflict(e) {
    let now = null;
    try {
      const cur = await api.get('/acl', scopeQuery(sc), { signal: ctx.signal });
      now = cur && cur.version;
    } catch {
      const m = /version (\d+)/.exec(e.message);
      now = m ? m[1] : null;
    }
    const reload = btn(`Reload version ${now ?? ''}`.trim(), { 'data-test': 'acl-conflict-reload' });
    reload.addEventListener('click', () => {
      ctx.clearError();
      load();
    });
    errorsBox.replaceChildren(
      h('p', { class: 'problem-detail', 'data-test': 'acl-conflict' },
        `Someone saved version ${now ?? '(newer)'} meanwhile, after the version ${str(loaded && loaded.version)} you edited. Nothing was saved. Reload to see it (copy your edits first: reloading replaces them).`),
      reload);
    errorsBox.hidden = false;
  }

  // ---- preview ----
  const datalistId = uid('acl-nodes');
  const datalist = h('datalist', { id: datalistId });
  const nodeInput = h('input', { type: 'text', list: datalistId, 'data-test': 'acl-preview-node', autocomplete: 'off', spellcheck: 'false', placeholder: 'node name or id' });
  const previewBtn = h('button', { type: 'submit', class: 'btn', 'data-test': 'acl-preview-submit' }, 'Preview');
  const previewErr = errorBox('acl-preview-error');
  const previewResult = h('div', { class: 'preview-result', 'data-test': 'acl-preview-result', 'aria-live': 'polite' });
  const previewForm = h('form', { class: 'inline-form', novalidate: true, 'aria-label': 'Preview for a node' },
    h('div', { class: 'form-row' }, field('Node', nodeInput), h('div', { class: 'form-actions' }, previewBtn)), datalist, previewErr);

  function candidate(box) {
    clearFormError(box);
    clearErrors();
    resummarize.cancel();
    summarized = editor.value;
    renderSummary(editor.value);
    const parsed = parseDoc(editor.value);
    if (parsed.error) {
      showFormMessage(box, parsed.error);
      return null;
    }
    return parsed.doc;
  }

  function previewProblem(box, e) {
    if (e instanceof ApiError && e.status === 400 && e.errors.length) {
      const rest = placeGrantErrors(e.errors, '/policy');
      const beside = e.errors.length - rest.length;
      const err = new ApiError(400, { ...e.problem, errors: rest });
      showFormError(box, err);
      if (beside) box.append(h('p', {}, `${beside} error${beside === 1 ? ' is' : 's are'} shown beside the grants.`));
    } else {
      showFormError(box, e);
    }
  }

  previewForm.addEventListener('submit', async (e) => {
    e.preventDefault();
    const doc = candidate(previewErr);
    if (!doc) return;
    const node = nodeInput.value.trim();
    if (!node) {
      showFormMessage(previewErr, 'Name the node to preview.');
      nodeInput.focus();
      return;
    }
    previewBtn.disabled = true;
    try {
      const r = await api.post('/acl/preview', { policy: doc, node }, { query: scopeQuery(sc), signal: ctx.signal });
      previewResult.replaceChildren(...nodePreview(r));
    } catch (ex) {
      previewResult.replaceChildren();
      previewProblem(previewErr, ex);
    } finally {
      previewBtn.disabled = false;
    }
  });

  function matchList(items, test) {
    return Array.isArray(items) && items.length
      ? h('ul', { class: 'plain-list', 'data-test': test }, items.map((m) => h('li', { class: 'mono' }, str(m))))
      : h('p', { class: 'muted', 'data-test': test }, 'no grant names the node');
  }

  function peerList(items, sign, test) {
    if (!Array.isArray(items) || !items.length) return h('p', { class: 'muted', 'data-test': test }, 'none');
    return h('ul', { class: `plain-list ${sign === '+' ? 'gained' : 'lost'}`, 'data-test': test },
      items.map((p) => h('li', {}, `${sign} `, link(nodeHref(str(p.id)), str(p.name) || str(p.id)))));
  }

  /** The candidate's own tests, run by the preview against the inventory: what saving it would say. */
  function testResults(t, test) {
    if (!t || !t.run) return h('p', { class: 'muted', 'data-test': test }, 'The editor\'s policy has no tests.');
    if (t.passed) {
      return h('p', { class: 'flash', 'data-test': test }, `All ${str(t.run)} test${t.run === 1 ? '' : 's'} pass: saving would not be refused by them.`);
    }
    const failures = Array.isArray(t.failures) ? t.failures : [];
    return h('div', { class: 'form-error', role: 'alert', 'data-test': test },
      h('p', {}, `${failures.length} of the tests' checks fail: saving would be refused.`),
      h('ul', { class: 'problem-errors' }, failures.map((f) => h('li', {}, `${str(f.field)}: ${str(f.message)}`))));
  }

  function nodePreview(r) {
    const n = r.node || {};
    const peers = r.peers || {};
    return [
      h('h3', {}, `${str(n.name)} (${str(n.id)})`),
      h('p', { class: 'muted' }, `Compared with the current policy, version ${str(r.current_version)}, of ${str(r.team)} / ${str(r.environment)}. Nothing is saved.`),
      h('div', { class: 'compare' },
        h('div', {}, h('h4', {}, `Now (version ${str(r.current_version)})`), matchList(r.acl_matches_now, 'acl-preview-now')),
        h('div', {}, h('h4', {}, 'With the editor\'s policy'), matchList(r.acl_matches, 'acl-preview-candidate'))),
      h('p', { 'data-test': 'acl-preview-peers' }, `Peers: ${str(peers.count_now)} now, ${str(peers.count)} with the editor's policy.`),
      h('div', { class: 'compare' },
        h('div', {}, h('h4', {}, 'Peers gained'), peerList(peers.gained, '+', 'acl-preview-gained')),
        h('div', {}, h('h4', {}, 'Peers lost'), peerList(peers.lost, '−', 'acl-preview-lost'))),
      h('h4', {}, 'Tests'),
      testResults(r.tests, 'acl-preview-tests'),
    ];
  }

  // one connection: src → dst on a port
  const connSrc = h('input', { type: 'text', list: datalistId, 'data-test': 'acl-conn-src', autocomplete: 'off', spellcheck: 'false', placeholder: 'web-1 or tag:web' });
  const connDst = h('input', { type: 'text', list: datalistId, 'data-test': 'acl-conn-dst', autocomplete: 'off', spellcheck: 'false', placeholder: 'db-1 or tag:db' });
  const connPort = h('input', { type: 'text', 'data-test': 'acl-conn-port', autocomplete: 'off', spellcheck: 'false', placeholder: 'tcp/5432, udp/53 or icmp' });
  const connBtn = h('button', { type: 'submit', class: 'btn', 'data-test': 'acl-conn-submit' }, 'Check');
  const connErr = errorBox('acl-conn-error');
  const connResult = h('div', { class: 'preview-result', 'data-test': 'acl-conn-result', 'aria-live': 'polite' });
  const connForm = h('form', { class: 'inline-form', novalidate: true, 'aria-label': 'Check one connection' },
    h('div', { class: 'form-row' }, field('From', connSrc), field('To', connDst), field('Port', connPort), h('div', { class: 'form-actions' }, connBtn)), connErr);
  connForm.addEventListener('submit', async (e) => {
    e.preventDefault();
    const doc = candidate(connErr);
    if (!doc) return;
    connBtn.disabled = true;
    try {
      const r = await api.post('/acl/preview', { policy: doc, src: connSrc.value.trim(), dst: connDst.value.trim(), port: connPort.value.trim() },
        { query: scopeQuery(sc), signal: ctx.signal });
      const yes = (b) => (b ? 'allowed' : 'denied');
      connResult.replaceChildren(
        h('p', {}, `${str(r.src && r.src.name)} → ${str(r.dst && r.dst.name)} on ${str(r.port)}: `,
          h('strong', { 'data-test': 'acl-conn-allowed' }, yes(r.allowed)), ` with the editor's policy, ${yes(r.allowed_now)} now (version ${str(r.current_version)}).`),
        Array.isArray(r.grants) && r.grants.length
          ? h('ul', { class: 'plain-list' }, r.grants.map((g) => h('li', { class: 'mono' }, str(g))))
          : h('p', { class: 'muted' }, 'No grant of the editor\'s policy allows it.'),
        h('h4', {}, 'Tests'),
        testResults(r.tests, 'acl-conn-tests'));
    } catch (ex) {
      connResult.replaceChildren();
      previewProblem(connErr, ex);
    } finally {
      connBtn.disabled = false;
    }
  });

  async function fillNodes() {
    if (!can('nodes:read')) return;
    try {
      const d = await api.get('/nodes', { limit: 1000 }, { signal: ctx.signal });
      const items = d && Array.isArray(d.items) ? d.items : [];
      const names = items.filter((n) => str(n.team) === sc.team && str(n.environment) === sc.environment).map((n) => str(n.name));
      datalist.replaceChildren(...[...new Set(names)].sort().map((v) => h('option', { value: v })));
    } catch {
      /* the list is a convenience: free text still works */
    }
  }

  // ---- layout ----
  ctx.root.append(
    ctx.heading('ACL policy'),
    scopeBar(ctx, sc, 'policy', () => {
      ctx.clearError();
      load();
    }),
    h('section', { class: 'panel', 'aria-labelledby': 'acl-editor-h' },
      h('h2', { id: 'acl-editor-h' }, 'Policy document'),
      h('p', {}, 'Version ', versionEl, metaEl),
      h('label', { for: editorId, class: 'visually-hidden' }, 'Policy JSON'),
      editor,
      h('div', { class: 'button-row' }, saveBtn, formatBtn, reloadBtn,
        canWrite ? null : h('span', { class: 'muted' }, 'Your role can read the policy and preview changes, not save them.')),
      errorsBox,
      h('h3', {}, 'Grants'),
      grantsList,
      testsNote),
    h('section', { class: 'panel', 'aria-labelledby': 'acl-preview-h' },
      h('h2', { id: 'acl-preview-h' }, 'Preview the editor\'s policy'),
      h('p', { class: 'muted' }, 'See what the policy in the editor would change before saving it.'),
      previewForm, previewResult,
      h('h3', {}, 'One connection'),
      connForm, connResult));

  load();
}

// ---- the history page -----------------------------------------------------------------------

export function renderAclHistory(ctx) {
  ctx.setTitle('ACL history');
  const canWrite = can('acl:write');
  const sc = scopeOf(ctx);
  let currentVersion = null;

  const histError = h('div', { class: 'form-error', 'data-test': 'acl-history-error', role: 'alert', hidden: true });
  const tableSlot = h('div', { class: 'slot' });
  const viewTitle = h('h2', { id: 'acl-view-h' }, 'Version');
  const viewMeta = h('p', { class: 'muted' });
  const viewPre = h('div', { 'data-test': 'acl-history-policy' });
  const viewSection = h('section', { class: 'panel', 'aria-labelledby': 'acl-view-h', hidden: true }, viewTitle, viewMeta, viewPre);

  function showHistError(e) {
    if (isAbort(e) || (e instanceof ApiError && e.handled)) return;
    const nodes = [h('p', { class: 'problem-detail' }, e.message)];
    if (e instanceof ApiError && e.errors.length) {
      nodes.push(h('ul', { class: 'problem-errors' }, e.errors.map((x) => h('li', { 'data-test': 'acl-error', 'data-field': x.field }, `${x.field}: ${x.message}`))));
    }
    histError.replaceChildren(...nodes);
    histError.hidden = false;
  }

  async function view(v) {
    try {
      const p = await api.get(`/acl/versions/${seg(v)}`, scopeQuery(sc), { signal: ctx.signal });
      viewTitle.textContent = `Version ${str(p.version)}`;
      viewMeta.replaceChildren('Stored ', fmtTime(p.created_at), ` by ${actorName(p.created_by)}`,
        p.restored_from ? `, restored from version ${str(p.restored_from)}` : '', '.');
      viewPre.replaceChildren(pre({ grants: p.grants, tests: p.tests }));
      viewSection.hidden = false;
      ctx.setHashQuiet(scopeHash(sc, { v }));
      viewTitle.setAttribute('tabindex', '-1');
      viewTitle.focus();
    } catch (e) {
      showHistError(e);
    }
  }

  async function restore(v, trigger) {
    const ok = await confirmDialog({
      title: 'Roll back the policy',
      message: [`Store the grants and tests of version ${v} again, as a new version of ${sc.team} / ${sc.environment}?`,
        'Its tests run again against today\'s nodes; history is kept.'],
      confirmLabel: `Roll back to version ${v}`,
    });
    if (!ok) return;
    trigger.disabled = true;
    histError.hidden = true;
    try {
      const headers = currentVersion === null ? {} : { 'If-Match': `"${currentVersion}"` };
      const r = await request('POST', `/acl/versions/${seg(v)}/restore`, { query: scopeQuery(sc), headers, signal: ctx.signal });
      ctx.flash(`Version ${v} restored as version ${str(r.data && r.data.version)}.`);
      await load();
    } catch (e) {
      if (e instanceof ApiError && e.status === 409) {
        let now = null;
        try {
          now = (await api.get('/acl', scopeQuery(sc), { signal: ctx.signal })).version;
        } catch {
          /* keep null */
        }
        const reload = btn('Reload', { 'data-test': 'acl-conflict-reload' });
        reload.addEventListener('click', () => load());
        histError.replaceChildren(h('p', { 'data-test': 'acl-conflict' },
          `Someone saved version ${now ?? '(newer)'} meanwhile. Nothing was restored: reload the history and try again.`), reload);
        histError.hidden = false;
      } else {
        showHistError(e);
      }
      trigger.disabled = false;
    }
  }

  async function load() {
    histError.hidden = true;
    if (!sc.team || !sc.environment) {
      tableSlot.replaceChildren(h('p', { class: 'muted' }, 'Choose a team and environment.'));
      return;
    }
    try {
      const [cur, versions] = await Promise.all([
        api.get('/acl', scopeQuery(sc), { signal: ctx.signal }),
        (async () => {
          const all = [];
          let cursor = '';
          do {
            const d = await api.get('/acl/versions', { ...scopeQuery(sc), limit: 1000, cursor: cursor || undefined }, { signal: ctx.signal });
            if (d && Array.isArray(d.items)) all.push(...d.items);
            cursor = d && typeof d.next_cursor === 'string' ? d.next_cursor : '';
          } while (cursor && all.length < 10000);
          return all;
        })(),
      ]);
      currentVersion = cur ? cur.version : null;
      const { wrap, tbody } = makeTable(['Version', 'Stored by', 'When', 'Restored from', 'Grants', 'Actions'],
        { caption: 'Policy versions', test: 'acl-history-table' });
      if (!versions.length) tbody.append(emptyRow(6, 'No version stored yet: the policy is the empty one (version 0).'));
      for (const item of [...versions].reverse()) {
        const v = str(item.version);
        const viewBtn = btn('View', { class: 'btn-small', 'data-test': 'acl-history-view', 'data-version': v });
        viewBtn.addEventListener('click', () => view(v));
        let restoreBtn = null;
        if (canWrite && item.version !== currentVersion) {
          restoreBtn = btn('Roll back to this', { class: 'btn-small', 'data-test': 'acl-history-restore', 'data-version': v });
          restoreBtn.addEventListener('click', () => restore(v, restoreBtn));
        }
        tbody.append(h('tr', { 'data-test': 'acl-version-row', 'data-version': v },
          h('th', { scope: 'row' }, v, item.version === currentVersion ? h('span', { class: 'muted' }, ' (current)') : null),
          td(actorName(item.created_by)), td(fmtTime(item.created_at)),
          td(item.restored_from == null ? '—' : str(item.restored_from)), td(str(item.grants)),
          td(h('div', { class: 'button-row' }, viewBtn, restoreBtn))));
      }
      tableSlot.replaceChildren(wrap);
    } catch (e) {
      if (isAbort(e)) return;
      tableSlot.replaceChildren();
      ctx.error(e);
    }
  }

  ctx.root.append(
    ctx.heading('ACL history'),
    scopeBar(ctx, sc, 'history', () => {
      ctx.clearError();
      viewSection.hidden = true;
      load();
    }),
    histError,
    h('section', { class: 'panel', 'aria-labelledby': 'acl-versions-h' }, h('h2', { id: 'acl-versions-h' }, 'Versions, newest first'), tableSlot),
    viewSection);
  load().then(() => {
    const v = ctx.params.get('v');
    if (v && /^\d+$/.test(v)) view(v);
  });
}
