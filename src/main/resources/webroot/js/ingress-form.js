// The ingress routes' editing (ingress:write): the create/replace form, the move and delete buttons of
// a row. Every change carries If-Match with the ETag of the list it was made from, so an edit made on
// an old list is refused (409 conflict) rather than applied to routes the user has not seen.
// A refusal is shown in the form: a field's error marks its input; policy_blocks says which ACL grant
// is missing, with a link to the team's policy.

import { request, seg, ApiError, isAbort } from './api.js';
import {
  h, btn, field, select, str, errorBox, showFormError, clearFormError, confirmDialog, link,
} from './ui.js';

const EXPOSURES = [['public', 'public (anyone who reaches the ingress node)'], ['mesh', 'mesh (mesh members only)']];
const TLS = [['acme', 'acme (a public CA)'], ['meshca', 'meshca (MeshCA)']];

/** The service names of a node's bound services ("web:8080" → "web"). */
function serviceNames(node) {
  return (Array.isArray(node && node.services) ? node.services : []).map((s) => str(s).split(':')[0]).filter(Boolean);
}

/** The body of a route for PUT, from a route of the list, with `changes` over it. */
export function routeBody(r, changes = {}) {
  const t = r.target && typeof r.target === 'object' ? r.target : {};
  return {
    team: str(r.team),
    environment: str(r.environment),
    position: r.position,
    hostname: str(r.hostname),
    path_prefix: str(r.path_prefix),
    target: { node: str(t.node), service: str(t.service) },
    exposure: str(r.exposure),
    tls: str(r.tls),
    ingress_tag: str(r.ingress_tag),
    ...changes,
  };
}

/** What a refusal means to the person who made it, when the problem alone does not say it well. */
function explain(e) {
  if (!(e instanceof ApiError)) return null;
  if (e.status === 409 && e.code === 'conflict') {
    return 'The routes changed since this list was loaded (someone else edited them). The list has been read again: check it and retry.';
  }
  return null;
}

/**
 * The editing parts of the page. `scope()` gives {team, environment, etag, routes, nodes} of what is
 * shown; `refresh()` reads the list again. Returns {section, edit(route), rowActions(route)}.
 */
export function ingressEditor(ctx, { scope, refresh }) {
  const heading = h('h2', { id: 'ingress-form-h' }, 'New route');
  const errBox = errorBox('ingress-form-error');
  const blocked = h('div', { class: 'form-error', role: 'alert', 'data-test': 'ingress-policy-blocks', hidden: true });
  const hostname = h('input', { type: 'text', name: 'hostname', autocomplete: 'off', spellcheck: 'false', 'data-test': 'ingress-form-hostname', required: true });
  const path = h('input', { type: 'text', name: 'path_prefix', autocomplete: 'off', spellcheck: 'false', value: '/', 'data-test': 'ingress-form-path' });
  const nodeSel = select([], null, { name: 'target.node', 'data-test': 'ingress-form-node' });
  const serviceSel = select([], null, { name: 'target.service', 'data-test': 'ingress-form-service' });
  const exposure = select(EXPOSURES, 'public', { name: 'exposure', 'data-test': 'ingress-form-exposure' });
  const tls = select(TLS, 'acme', { name: 'tls', 'data-test': 'ingress-form-tls' });
  const tag = h('input', { type: 'text', name: 'ingress_tag', autocomplete: 'off', spellcheck: 'false', placeholder: 'tag:edge', 'data-test': 'ingress-form-tag' });
  const position = h('input', { type: 'number', name: 'position', min: '1', step: '1', inputmode: 'numeric', 'data-test': 'ingress-form-position' });
  const submit = h('button', { type: 'submit', class: 'btn btn-primary', 'data-test': 'ingress-form-submit' }, 'Create route');
  const cancel = btn('Cancel edit', { 'data-test': 'ingress-form-cancel', hidden: true });
  const inputs = {
    hostname, path_prefix: path, 'target.node': nodeSel, 'target.service': serviceSel, target: nodeSel, exposure, tls, ingress_tag: tag, position,
  };
  let editing = null; // the route being replaced, else null (a create)
  let nodes = [];

  function fillServices(keep) {
    const node = nodes.find((n) => str(n.id) === nodeSel.value);
    const names = serviceNames(node);
    serviceSel.replaceChildren(...(names.length ? names : ['']).map((s) => h('option', { value: s }, s || '(no bound service)')));
    if (keep && names.includes(keep)) serviceSel.value = keep;
  }
  nodeSel.addEventListener('change', () => fillServices(null));

  /** The nodes of the team and environment that have a bound service (the possible targets). */
  function setNodes(list) {
    const chosen = nodeSel.value;
    const keepService = serviceSel.value;
    nodes = (Array.isArray(list) ? list : []).filter((n) => serviceNames(n).length);
    const opts = nodes.map((n) => [str(n.id), `${str(n.name) || str(n.id)} (${serviceNames(n).join(', ')})`]);
    if (editing && !opts.some(([v]) => v === str(editing.target && editing.target.node))) {
      const id = str(editing.target && editing.target.node);
      opts.push([id, `${id} (not listed)`]);
    }
    const same = nodeSel.options.length === opts.length && opts.every(([v, l], i) => nodeSel.options[i].value === v && nodeSel.options[i].text === l);
    if (!same) {
      nodeSel.replaceChildren(...(opts.length ? opts : [['', 'no node with a bound service']]).map(([v, l]) => h('option', { value: v }, l)));
      if (opts.some(([v]) => v === chosen)) nodeSel.value = chosen;
      fillServices(keepService);
    }
  }

  function clearErrors() {
    clearFormError(errBox, inputs);
    blocked.replaceChildren();
    blocked.hidden = true;
  }

  function showError(e) {
    if (isAbort(e) || (e instanceof ApiError && e.handled)) return;
    clearErrors();
    if (e instanceof ApiError && e.code === 'policy_blocks') {
      const s = scope();
      const grant = e.errors.find((x) => x.field === 'ingress_tag');
      blocked.append(h('p', { class: 'problem-detail' }, h('strong', {}, 'The ACL policy blocks this route. '),
        'The ingress nodes could not reach the target: '),
      h('p', { class: 'mono break', 'data-test': 'ingress-policy-blocks-detail' }, grant && grant.message ? grant.message : e.message),
      h('p', {}, link(`#/acl?team=${encodeURIComponent(s.team)}&environment=${encodeURIComponent(s.environment)}`,
        `Open the ACL policy of ${s.team} / ${s.environment}`, { 'data-test': 'ingress-policy-blocks-acl' })),
      e.requestId ? h('p', { class: 'request-id' }, `Request id ${e.requestId}`) : null);
      blocked.hidden = false;
      tag.setAttribute('aria-invalid', 'true');
      tag.focus();
      return;
    }
    const why = explain(e);
    if (why) {
      errBox.append(h('p', {}, why));
      errBox.hidden = false;
      refresh();
      return;
    }
    showFormError(errBox, e, inputs);
    const first = e instanceof ApiError ? e.errors.map((x) => inputs[x.field]).find(Boolean) : null;
    if (first) first.focus();
  }

  function reset() {
    editing = null;
    heading.textContent = 'New route';
    submit.textContent = 'Create route';
    cancel.hidden = true;
    hostname.value = '';
    path.value = '/';
    position.value = '';
    clearErrors();
  }
  cancel.addEventListener('click', () => {
    reset();
    hostname.focus();
  });

  function body() {
    const s = scope();
    const b = {
      team: s.team,
      environment: s.environment,
      hostname: hostname.value.trim(),
      path_prefix: path.value.trim() || '/',
      target: { node: nodeSel.value, service: serviceSel.value },
      exposure: exposure.value,
      tls: tls.value,
      ingress_tag: tag.value.trim(),
    };
    if (position.value.trim() !== '') b.position = Number(position.value);
    return b;
  }

  const form = h('form', { class: ['create-form', 'ingress-form'], novalidate: true, 'aria-labelledby': 'ingress-form-h', 'data-test': 'ingress-form' },
    h('div', { class: 'form-row' },
      field('Hostname', hostname, 'Lower case; *.example.com for one more label'),
      field('Path prefix', path, 'Matches on segment boundaries'),
      field('Target node', nodeSel),
      field('Service', serviceSel),
      field('Exposure', exposure),
      field('TLS', tls),
      field('Ingress tag', tag, 'The nodes that serve the route'),
      field('Position', position, 'Empty: at the end (create) or where it is (edit)')),
    errBox, blocked,
    h('div', { class: 'form-actions' }, submit, cancel));

  form.addEventListener('submit', async (ev) => {
    ev.preventDefault();
    clearErrors();
    const s = scope();
    submit.disabled = true;
    try {
      if (editing) {
        await request('PUT', `/ingress/routes/${seg(editing.id)}`, { body: body(), headers: s.etag ? { 'If-Match': s.etag } : {}, signal: ctx.signal });
        ctx.flash(`Route ${hostname.value.trim()}${path.value.trim() || '/'} replaced.`);
      } else {
        await request('POST', '/ingress/routes', { body: body(), signal: ctx.signal });
        ctx.flash(`Route ${hostname.value.trim()}${path.value.trim() || '/'} created.`);
      }
      reset();
      await refresh();
    } catch (e) {
      showError(e);
    } finally {
      submit.disabled = false;
    }
  });

  /** Loads a route into the form to replace it. */
  function edit(r) {
    editing = r;
    heading.textContent = `Edit route ${str(r.hostname)}${str(r.path_prefix)}`;
    submit.textContent = 'Replace route';
    cancel.hidden = false;
    clearErrors();
    hostname.value = str(r.hostname);
    path.value = str(r.path_prefix);
    setNodes(scope().nodes);
    const t = r.target || {};
    nodeSel.value = str(t.node);
    fillServices(str(t.service));
    exposure.value = str(r.exposure);
    tls.value = str(r.tls);
    tag.value = str(r.ingress_tag);
    position.value = String(r.position ?? '');
    hostname.focus();
  }

  async function change(label, doIt) {
    try {
      await doIt();
      ctx.flash(label);
      await refresh();
    } catch (e) {
      if (isAbort(e) || (e instanceof ApiError && e.handled)) return;
      const why = explain(e);
      if (why) refresh();
      ctx.errorText(why || `${e.message}`);
    }
  }

  /** The Edit, Up, Down and Delete buttons of a row. */
  function rowActions(r, count) {
    const id = str(r.id);
    const name = `${str(r.hostname)}${str(r.path_prefix)}`;
    const put = (pos) => () => request('PUT', `/ingress/routes/${seg(id)}`, {
      body: routeBody(r, { position: pos }), headers: scope().etag ? { 'If-Match': scope().etag } : {}, signal: ctx.signal,
    });
    const editBtn = btn('Edit', { class: 'btn-small', 'data-test': 'ingress-edit', 'aria-label': `Edit ${name}`, 'data-focus-key': `edit:${id}` });
    editBtn.addEventListener('click', () => edit(r));
    const up = btn('Up', { class: 'btn-small', 'data-test': 'ingress-up', 'aria-label': `Move ${name} up`, disabled: r.position <= 1, 'data-focus-key': `up:${id}` });
    up.addEventListener('click', () => change(`Route ${name} moved to position ${r.position - 1}.`, put(r.position - 1)));
    const down = btn('Down', { class: 'btn-small', 'data-test': 'ingress-down', 'aria-label': `Move ${name} down`, disabled: r.position >= count, 'data-focus-key': `down:${id}` });
    down.addEventListener('click', () => change(`Route ${name} moved to position ${r.position + 1}.`, put(r.position + 1)));
    const del = btn('Delete', { class: 'btn-small btn-danger', 'data-test': 'ingress-delete', 'aria-label': `Delete ${name}`, 'data-focus-key': `del:${id}` });
    del.addEventListener('click', async () => {
      const ok = await confirmDialog({
        title: 'Delete this route?',
        message: [`${name} → ${str(r.target && r.target.service)} (position ${r.position}).`,
          'Its ingress nodes stop serving it with their next heartbeat; the routes after it move up one.'],
        confirmLabel: 'Delete route',
        danger: true,
      });
      if (!ok) return;
      await change(`Route ${name} deleted.`, () => request('DELETE', `/ingress/routes/${seg(id)}`, {
        headers: scope().etag ? { 'If-Match': scope().etag } : {}, signal: ctx.signal,
      }));
    });
    return h('div', { class: 'button-row' }, editBtn, up, down, del);
  }

  const section = h('section', { class: 'panel', 'aria-labelledby': 'ingress-form-h', 'data-test': 'ingress-form-section' }, heading,
    h('p', { class: 'hint' }, 'A route is checked against the ACL policy when it is written: the ingress tag and each node carrying it '
      + 'must be allowed to reach the target on the service\'s port.'),
    form);
  return { section, setNodes, rowActions };
}
