// What the editor's policy would change, before saving: for one node (POST /acl/preview {node}), for
// one connection (POST /acl/preview {src, dst, port}), and over the whole fleet (POST /acl/impact).
// Every result belongs to the text it was asked for: the editor's next change clears them all and
// says so (`stale()`), so that an old "all tests pass" never sits beside a new failure.

import { api, isAbort } from './api.js';
import { h, str, field, errorBox, showFormMessage, link, nodeHref, uid } from './ui.js';
import { scopeQuery } from './acl-common.js';

function matchList(items, test) {
  return Array.isArray(items) && items.length
    ? h('ul', { class: 'plain-list', 'data-test': test }, items.map((m) => h('li', { class: 'mono' }, str(m))))
    : h('p', { class: 'muted', 'data-test': test }, 'no grant names the node');
}

function nodeLink(n) {
  return n && n.id ? link(nodeHref(str(n.id)), str(n.name) || str(n.id)) : '?';
}

function peerList(items, sign, test) {
  if (!Array.isArray(items) || !items.length) return h('p', { class: 'muted', 'data-test': test }, 'none');
  return h('ul', { class: `plain-list ${sign === '+' ? 'gained' : 'lost'}`, 'data-test': test },
    items.map((p) => h('li', {}, h('span', { 'aria-hidden': 'true' }, `${sign} `),
      h('span', { class: 'visually-hidden' }, sign === '+' ? 'gained: ' : 'lost: '), nodeLink(p))));
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

function plural(n, one, many = `${one}s`) {
  return `${str(n)} ${Number(n) === 1 ? one : many}`;
}

function portChanges(items, count, sign, test) {
  if (!Array.isArray(items) || !items.length) return h('p', { class: 'muted', 'data-test': test }, 'none');
  const rows = items.map((c) => h('li', { 'data-test': `${test}-port`, 'data-port': str(c.port) },
    h('span', { 'aria-hidden': 'true' }, `${sign} `), h('span', { class: 'visually-hidden' }, sign === '+' ? 'gained: ' : 'lost: '),
    h('strong', { class: 'mono' }, str(c.port)), ` for ${plural(c.pairs, 'node pair')}, e.g. `,
    (Array.isArray(c.examples) ? c.examples : []).flatMap((e, i) => [i ? ', ' : '', nodeLink(e.src), ' → ', nodeLink(e.dst)])));
  return h('div', {}, h('ul', { class: `plain-list ${sign === '+' ? 'gained' : 'lost'}`, 'data-test': test }, rows),
    count > items.length ? h('p', { class: 'muted' }, `and ${count - items.length} more port changes`) : null);
}

function peerChange(p, sign, test) {
  const ex = Array.isArray(p && p.examples) ? p.examples : [];
  const verb = sign === '+' ? 'gain' : 'lose';
  return h('p', { 'data-test': test, class: !(p && p.nodes) ? 'muted' : sign === '+' ? 'gained' : 'lost' },
    h('span', { 'aria-hidden': 'true' }, `${sign} `),
    `${plural(p && p.nodes, 'node')} would ${verb} peers (${plural(p && p.pairs, 'node pair')})`,
    ex.length ? [', e.g. ', ex.flatMap((e, i) => [i ? ', ' : '', nodeLink(e.node), ' ↔ ', nodeLink(e.peer)])] : '', '.');
}

function impactView(r) {
  const peers = r.peers || {};
  const ports = r.ports || {};
  return [
    h('p', { class: 'muted' }, `Over all ${plural(r.nodes, 'node')} of ${str(r.team)} / ${str(r.environment)} (${plural(r.classes, 'class', 'classes')} of nodes with the same grants), against version ${str(r.current_version)}. Nothing is saved.`),
    peerChange(peers.gained, '+', 'acl-impact-gained'),
    peerChange(peers.lost, '−', 'acl-impact-lost'),
    h('div', { class: 'compare' },
      h('div', {}, h('h4', {}, 'Ports gained'), portChanges(ports.gained, ports.gained_count, '+', 'acl-impact-ports-gained')),
      h('div', {}, h('h4', {}, 'Ports lost'), portChanges(ports.lost, ports.lost_count, '−', 'acl-impact-ports-lost'))),
  ];
}

/**
 * The preview section. `candidate(box)` gives the editor's policy (or null, having said why in
 * `box`); `problem(box, e)` shows an API error. Returns {section, stale(), fillNodes(names)}.
 */
export function previewSection(ctx, sc, { candidate, problem }) {
  const datalistId = uid('acl-nodes');
  const datalist = h('datalist', { id: datalistId });
  const staleNote = h('p', { class: 'stale-note', 'data-test': 'acl-results-stale', role: 'status', hidden: true },
    'The editor changed: the results shown for the earlier text were cleared. Ask again.');
  const outputs = [];
  let generation = 0;

  /** One question: its form, its result area and error box; the answer is dropped when the editor changed meanwhile. */
  function question(form, button, box, result, ask) {
    outputs.push({ box, result });
    form.addEventListener('submit', async (e) => {
      e.preventDefault();
      const doc = candidate(box);
      if (!doc) return;
      const asked = generation;
      button.disabled = true;
      try {
        const parts = await ask(doc);
        if (!parts || asked !== generation) return;
        staleNote.hidden = true;
        result.replaceChildren(...parts);
      } catch (ex) {
        if (isAbort(ex) || asked !== generation) return;
        result.replaceChildren();
        problem(box, ex);
      } finally {
        button.disabled = false;
      }
    });
  }

  // one node
  const nodeInput = h('input', { type: 'text', list: datalistId, 'data-test': 'acl-preview-node', autocomplete: 'off', spellcheck: 'false', placeholder: 'node name or id' });
  const previewBtn = h('button', { type: 'submit', class: 'btn', 'data-test': 'acl-preview-submit' }, 'Preview');
  const previewErr = errorBox('acl-preview-error');
  const previewResult = h('div', { class: 'preview-result', 'data-test': 'acl-preview-result', 'aria-live': 'polite' });
  const previewForm = h('form', { class: 'inline-form', novalidate: true, 'aria-label': 'Preview for a node' },
    h('div', { class: 'form-row' }, field('Node', nodeInput), h('div', { class: 'form-actions' }, previewBtn)), datalist, previewErr);
  question(previewForm, previewBtn, previewErr, previewResult, async (doc) => {
    const node = nodeInput.value.trim();
    if (!node) {
      showFormMessage(previewErr, 'Name the node to preview.');
      nodeInput.focus();
      return null;
    }
    return nodePreview(await api.post('/acl/preview', { policy: doc, node }, { query: scopeQuery(sc), signal: ctx.signal }));
  });

  // one connection: src → dst on a port
  const connSrc = h('input', { type: 'text', list: datalistId, 'data-test': 'acl-conn-src', autocomplete: 'off', spellcheck: 'false', placeholder: 'web-1 or tag:web' });
  const connDst = h('input', { type: 'text', list: datalistId, 'data-test': 'acl-conn-dst', autocomplete: 'off', spellcheck: 'false', placeholder: 'db-1 or tag:db' });
  const connPort = h('input', { type: 'text', 'data-test': 'acl-conn-port', autocomplete: 'off', spellcheck: 'false', placeholder: 'tcp/5432, udp/53 or icmp' });
  const connBtn = h('button', { type: 'submit', class: 'btn', 'data-test': 'acl-conn-submit' }, 'Check');
  const connErr = errorBox('acl-conn-error');
  const connResult = h('div', { class: 'preview-result', 'data-test': 'acl-conn-result', 'aria-live': 'polite' });
  const connForm = h('form', { class: 'inline-form', novalidate: true, 'aria-label': 'Check one connection' },
    h('div', { class: 'form-row' }, field('From', connSrc), field('To', connDst), field('Port', connPort), h('div', { class: 'form-actions' }, connBtn)), connErr);
  question(connForm, connBtn, connErr, connResult, async (doc) => {
    const r = await api.post('/acl/preview', { policy: doc, src: connSrc.value.trim(), dst: connDst.value.trim(), port: connPort.value.trim() },
      { query: scopeQuery(sc), signal: ctx.signal });
    const yes = (b) => (b ? 'allowed' : 'denied');
    return [
      h('p', {}, `${str(r.src && r.src.name)} → ${str(r.dst && r.dst.name)} on ${str(r.port)}: `,
        h('strong', { 'data-test': 'acl-conn-allowed' }, yes(r.allowed)), ` with the editor's policy, ${yes(r.allowed_now)} now (version ${str(r.current_version)}).`),
      Array.isArray(r.grants) && r.grants.length
        ? h('ul', { class: 'plain-list' }, r.grants.map((g) => h('li', { class: 'mono' }, str(g))))
        : h('p', { class: 'muted' }, 'No grant of the editor\'s policy allows it.'),
      h('h4', {}, 'Tests'),
      testResults(r.tests, 'acl-conn-tests'),
    ];
  });

  // the whole fleet
  const impactBtn = h('button', { type: 'submit', class: 'btn', 'data-test': 'acl-impact-submit' }, 'Show the fleet-wide impact');
  const impactErr = errorBox('acl-impact-error');
  const impactResult = h('div', { class: 'preview-result', 'data-test': 'acl-impact-result', 'aria-live': 'polite' });
  const impactForm = h('form', { class: 'inline-form', novalidate: true, 'aria-label': 'Fleet-wide impact' },
    h('div', { class: 'form-actions' }, impactBtn), impactErr);
  question(impactForm, impactBtn, impactErr, impactResult, async (doc) =>
    impactView(await api.post('/acl/impact', { policy: doc }, { query: scopeQuery(sc), signal: ctx.signal })));

  const section = h('section', { class: 'panel', 'aria-labelledby': 'acl-preview-h' },
    h('h2', { id: 'acl-preview-h' }, 'Preview the editor\'s policy'),
    h('p', { class: 'muted' }, 'See what the policy in the editor would change before saving it.'),
    staleNote,
    h('div', { class: 'preview-columns' },
      h('div', {}, h('h3', {}, 'One node'), previewForm, previewResult,
        h('h3', {}, 'One connection'), connForm, connResult),
      h('div', {}, h('h3', {}, 'The whole fleet'),
        h('p', { class: 'muted' }, 'Every node that would gain or lose peers or ports, counted per class of nodes with the same grants.'),
        impactForm, impactResult)));

  return {
    section,
    /** The editor changed: every result and error shown belongs to the old text; clear them and say so. */
    stale() {
      generation++;
      let had = false;
      for (const { box, result } of outputs) {
        if (result.childNodes.length || !box.hidden) had = true;
        result.replaceChildren();
        box.replaceChildren();
        box.hidden = true;
      }
      if (had) staleNote.hidden = false;
    },
    fillNodes(names) {
      datalist.replaceChildren(...[...new Set(names)].sort().map((v) => h('option', { value: v })));
    },
  };
}
