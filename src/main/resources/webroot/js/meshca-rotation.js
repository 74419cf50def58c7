// The MeshCA page's Rotation section (GET /meshca/rotation): no rotation in progress and whether the automatic
// one is on, or the open rotation as a stepper of its four phases with what its next phase needs (the online
// nodes ready, the stale ones counted apart, the holdouts linked to their pages); the last finished rotations.
// With meshca:manage: start (intermediate, root), advance, roll back, each behind a confirmation
// (POST /meshca/rotations, …/{id}/advance, …/{id}/rollback with the phase seen). The CA is the whole
// deployment's: a session scoped to one team or environment sees the buttons disabled with the reason (the
// server would answer 403 out_of_scope). Read every 3 s while a rotation is open, every 30 s otherwise.

import { api, can, seg } from './api.js';
import {
  h, btn, badge, str, fmtTime, makeTable, keyedRows, td, link, nodeHref, errorBox, showFormError, clearFormError,
  confirmDialog, renderIfChanged,
} from './ui.js';

export const PHASES = [
  { phase: 'staged', label: 'Staged', what: 'The new authorities exist; nodes see nothing of them.' },
  { phase: 'distributing', label: 'Distributing', what: 'A root rotation\'s new root joins the trust bundle (an intermediate rotation changes none).' },
  { phase: 'issuing', label: 'Issuing', what: 'The new intermediate signs; nodes holding another authority\'s certificate renew.' },
  { phase: 'retired', label: 'Retired', what: 'The old authorities retire; the bundle loses the old root.' },
];
const OPEN_PHASES = ['staged', 'distributing', 'issuing'];
const OPEN_MS = 3000;
const IDLE_MS = 30000;

const num = (n) => (typeof n === 'number' && Number.isFinite(n) ? n.toLocaleString() : '—');
const label = (phase) => (PHASES.find((p) => p.phase === phase) || { label: str(phase) }).label;

/** What each start does, for its confirmation. */
const STARTS = {
  intermediate: {
    title: 'Start an intermediate rotation',
    message: ['Stage a new intermediate signed by the current root?',
      'Nothing changes for the nodes yet: the rotation then moves through distributing, issuing (the new intermediate signs '
      + 'and every node renews its certificate, spread by the signing budget) and retired (the old intermediate retires), '
      + 'one step at a time, each when the online nodes follow. Until retired it can be rolled back.'],
  },
  root: {
    title: 'Start a root rotation',
    message: ['Stage a new root, its intermediate, and the new root cross-signed by the current one?',
      'Nothing changes for the nodes yet. Distributing adds the new root to every node\'s trust bundle; issuing makes every node '
      + 'renew under the new intermediate (its chain verifies under the old root and the new one); retired removes the old root '
      + 'from the bundle for good. Until retired it can be rolled back.'],
  },
};

/** What advancing into each phase does, for its confirmation. */
const ADVANCES = {
  distributing: 'Nodes receive the new root with their next answer (an intermediate rotation changes no bundle).',
  issuing: 'The new intermediate starts signing and the old one stops; every node holding a certificate of another authority '
    + 'is told to renew now (spread by the signing budget).',
  retired: 'The old authorities retire and the trust bundle loses the old root. This finishes the rotation: it can no longer be rolled back.',
};

/**
 * The section's body. Returns {slot}; reads and redraws by itself (a poll of its own, stopped when the page is
 * left). `onStep()` is called when the rotation moved (a step taken here, or seen by a refresh), so that the
 * page reads the chain again.
 */
export function rotationSection(ctx, { onStep = () => {} } = {}) {
  const manage = can('meshca:manage');
  const user = (ctx.session && ctx.session.user) || {};
  const everywhere = user.team === '*' && user.environment === '*';
  const outOfScope = `A CA rotation changes what every team trusts: it needs meshca:manage in every team and environment, `
    + `and your scope is ${str(user.team)} / ${str(user.environment)}.`;

  const stateBox = h('div', { 'data-test': 'meshca-rotation-state', 'data-phase': 'loading' }, h('p', { class: 'muted' }, 'Loading…'));
  const box = errorBox('meshca-rotation-error');
  const actions = h('div', { 'data-test': 'meshca-rotation-actions', hidden: !manage });
  const hist = makeTable(['Kind', 'Outcome', 'Started', 'Finished', 'Automatic', 'Id'], { caption: 'Finished rotations', test: 'meshca-rotation-history' });
  const histRows = keyedRows(hist.tbody, {
    keyOf: (r) => str(r.id),
    colspan: 6,
    emptyText: 'No rotation has finished yet.',
    build: (r) => h('tr', { 'data-test': 'meshca-rotation-past', 'data-rotation-id': str(r.id), 'data-kind': str(r.kind), 'data-phase': str(r.phase) },
      td(str(r.kind)), td(badge(str(r.phase))), td(fmtTime(r.started_at)), td(fmtTime(r.finished_at)),
      td(r.automatic ? 'yes' : 'no'), td(h('span', { class: 'mono' }, str(r.id)))),
  });
  const slot = h('div', { class: 'slot', 'data-test': 'meshca-rotation' },
    stateBox, actions, box,
    h('h3', {}, 'Finished rotations'),
    h('p', { class: 'hint' }, 'The last ones, newest first.'),
    hist.wrap);

  let last = null; // the last answer
  let seen; // "id phase" of the open rotation last shown (null: none; undefined: not read yet)
  let busy = false;
  let poller = null;

  // ---- the state ----
  function stepper(r) {
    const at = PHASES.findIndex((p) => p.phase === r.phase);
    return h('ol', { class: 'stepper', 'data-test': 'meshca-rotation-stepper', 'aria-label': 'Phases of the rotation' },
      PHASES.map((p, i) => {
        const state = i < at ? 'done' : i === at ? 'current' : 'todo';
        const mark = state === 'done' ? '✓' : String(i + 1);
        return h('li', {
          class: ['step', `step-${state}`], 'data-test': 'meshca-rotation-step', 'data-phase': p.phase, 'data-state': state,
          'aria-current': state === 'current' ? 'step' : null,
        },
        h('span', { class: 'step-mark', 'aria-hidden': 'true' }, mark),
        h('span', { class: 'step-text' },
          h('span', { class: 'step-label' }, p.label),
          h('span', { class: 'step-state' }, state === 'done' ? 'done' : state === 'current' ? 'current phase' : 'to come'),
          h('span', { class: 'step-what' }, p.what)));
      }));
  }

  function previewNodes(p) {
    if (!p) return [];
    const out = [h('p', { 'data-test': 'meshca-rotation-needs' },
      h('strong', {}, `Next: ${label(p.next_phase)}. `), `Needs: ${str(p.needs)}.`)];
    if (typeof p.online === 'number') {
      const ready = Math.max(0, p.online - (p.behind || 0));
      const stale = p.stale_behind || 0;
      const text = `${num(ready)} of ${num(p.online)} online node${p.online === 1 ? '' : 's'} ready; `
        + `${num(stale)} stale node${stale === 1 ? '' : 's'} counted apart`;
      const bar = h('progress', {
        class: 'rotation-progress', max: String(Math.max(1, p.online)), value: String(p.online === 0 ? 1 : ready),
        'aria-label': 'Online nodes ready for the next phase', 'aria-valuetext': text,
      });
      out.push(h('div', { class: 'rotation-progress-row' }, bar,
        h('span', { 'data-test': 'meshca-rotation-progress', 'data-online': String(p.online), 'data-behind': String(p.behind || 0),
          'data-stale-behind': String(stale) }, text)));
      if (p.online === 0) out.push(h('p', { class: 'hint' }, 'No online node reports a pki block: nothing holds the rotation back.'));
    }
    const holdouts = Array.isArray(p.holdouts) ? p.holdouts : [];
    if (holdouts.length) {
      out.push(h('p', {}, `Holding it back (${holdouts.length < (p.behind || 0) ? `the first ${holdouts.length} by id` : 'by id'}):`),
        h('ul', { class: 'chips holdouts', 'data-test': 'meshca-rotation-holdouts', 'aria-label': 'Nodes holding the rotation back' },
          holdouts.map((id) => h('li', {}, link(nodeHref(id), str(id), {
            class: 'mono', 'data-test': 'meshca-rotation-holdout', 'data-node-id': str(id), 'data-focus-key': `holdout-${str(id)}`,
          })))));
    }
    return out;
  }

  function stateNodes(s) {
    const r = s.rotation;
    const auto = s.automatic || {};
    const autoLine = h('p', { class: 'hint', 'data-test': 'meshca-rotation-automatic', 'data-enabled': String(!!auto.enabled) },
      auto.enabled
        ? `Automatic rotation is on: every ${num(auto.period_s)} s the coordinator looks at the intermediate, starts an intermediate `
          + 'rotation from two thirds of its life and advances it as the nodes follow.'
        : 'Automatic rotation is off (meshca.auto_rotate): rotations start by hand.');
    if (!r) return [h('p', { 'data-test': 'meshca-rotation-none' }, 'No rotation in progress.'), autoLine];
    return [
      h('dl', { class: 'fields' },
        h('dt', {}, 'Kind'), h('dd', { 'data-test': 'meshca-rotation-kind' }, str(r.kind)),
        h('dt', {}, 'Phase'), h('dd', {}, badge(str(r.phase), { 'data-test': 'meshca-rotation-phase' })),
        h('dt', {}, 'Started'), h('dd', {}, fmtTime(r.started_at), ' ',
          h('span', { 'data-test': 'meshca-rotation-started-by', 'data-automatic': String(!!r.automatic) },
            r.automatic ? 'automatically, by the coordinator (which also advances it)' : 'by hand')),
        h('dt', {}, 'New intermediate'), h('dd', { class: 'mono' }, str(r.new_intermediate)),
        r.new_root ? [h('dt', {}, 'New root'), h('dd', { class: 'mono' }, str(r.new_root))] : null,
        h('dt', {}, 'Id'), h('dd', { class: 'mono' }, str(r.id))),
      stepper(r),
      h('div', { class: 'rotation-preview', 'data-test': 'meshca-rotation-preview', 'data-ready': String(!!(s.preview && s.preview.ready)),
        'data-next-phase': s.preview ? str(s.preview.next_phase) : '' }, previewNodes(s.preview)),
      autoLine,
    ];
  }

  // ---- the buttons ----
  function reasonId(name) {
    return `meshca-rotation-${name}-why`;
  }

  function action(text, name, { danger = false, why = null, onClick }) {
    const b = btn(text, {
      class: danger ? 'btn-danger' : 'btn-primary', 'data-test': `meshca-rotation-${name}`, 'data-focus-key': `rotation-${name}`,
      disabled: busy || !!why, 'aria-describedby': why ? reasonId(name) : null,
    });
    b.addEventListener('click', () => onClick(b));
    return [b, why ? h('span', { class: 'hint', id: reasonId(name), 'data-test': `meshca-rotation-${name}-reason` }, why) : null];
  }

  function actionNodes(s) {
    if (!manage) return [];
    const r = s.rotation;
    const scopeWhy = everywhere ? null : outOfScope;
    const out = [];
    if (!r) {
      out.push(h('div', { class: 'button-row' },
        action('Start intermediate rotation', 'start-intermediate', { why: scopeWhy, onClick: (b) => start('intermediate', b) }),
        action('Start root rotation', 'start-root', { why: scopeWhy, onClick: (b) => start('root', b) })));
    } else {
      const p = s.preview;
      const notReady = p && !p.ready
        ? `Not yet: ${num(p.behind)} online ${p.behind === 1 ? 'node does' : 'nodes do'} not hold what ${label(p.next_phase).toLowerCase()} needs.`
        : null;
      const next = r.next_phase;
      const canRoll = OPEN_PHASES.includes(r.phase);
      out.push(h('div', { class: 'button-row' },
        next ? action(`Advance to ${label(next).toLowerCase()}`, 'advance', { why: scopeWhy || notReady, onClick: (b) => advance(r, b) }) : null,
        action('Roll back', 'rollback', {
          danger: true, why: scopeWhy || (canRoll ? null : `A rotation at phase ${str(r.phase)} cannot be rolled back.`), onClick: (b) => rollback(r, b),
        })));
    }
    return out;
  }

  // ---- the calls ----
  async function run(trigger, call, done) {
    clearFormError(box);
    busy = true;
    trigger.disabled = true;
    try {
      const r = await call();
      ctx.flash(done(r));
    } catch (e) {
      showFormError(box, e);
    } finally {
      busy = false;
      trigger.disabled = false;
      if (poller) await poller.kick();
      // the button pressed may be gone (a start leaves no start button): keep the keyboard in the section
      if (!document.activeElement || document.activeElement === document.body) {
        const same = actions.querySelector(`[data-focus-key="${trigger.dataset.focusKey}"]:not([disabled])`);
        const any = same || actions.querySelector('button:not([disabled])');
        if (any) any.focus();
      }
    }
  }

  async function start(kind, trigger) {
    const s = STARTS[kind];
    const ok = await confirmDialog({ title: s.title, message: s.message, confirmLabel: 'Start rotation' });
    if (!ok) return;
    await run(trigger, () => api.post('/meshca/rotations', { kind }, { signal: ctx.signal }),
      (r) => `${kind === 'root' ? 'A root' : 'An intermediate'} rotation is staged (${str(r && r.id)}).`);
  }

  async function advance(r, trigger) {
    const next = r.next_phase;
    const ok = await confirmDialog({
      title: `Advance to ${label(next).toLowerCase()}`,
      message: [`Move the ${str(r.kind)} rotation from ${str(r.phase)} to ${next}?`, ADVANCES[next] || ''],
      confirmLabel: 'Advance',
    });
    if (!ok) return;
    await run(trigger, () => api.post(`/meshca/rotations/${seg(r.id)}/advance`, { phase: r.phase }, { signal: ctx.signal }),
      (moved) => `The rotation is at phase ${str(moved && moved.phase)}.`);
  }

  async function rollback(r, trigger) {
    const ok = await confirmDialog({
      title: 'Roll back the rotation',
      message: [`Roll the ${str(r.kind)} rotation back from ${str(r.phase)}?`,
        'The old intermediate signs again and the trust bundle is the old one; the new authorities retire for good. Nodes that '
        + 'already hold a certificate of the new intermediate are told to renew (their chains verify under the old root meanwhile).'],
      confirmLabel: 'Roll back',
      danger: true,
    });
    if (!ok) return;
    await run(trigger, () => api.post(`/meshca/rotations/${seg(r.id)}/rollback`, { phase: r.phase }, { signal: ctx.signal }),
      () => 'The rotation was rolled back: the old intermediate signs again.');
  }

  // ---- the refresh ----
  function show(s) {
    last = s;
    const r = s.rotation;
    stateBox.dataset.phase = r ? str(r.phase) : 'none';
    stateBox.dataset.rotationId = r ? str(r.id) : '';
    renderIfChanged(stateBox, { r, p: s.preview, a: s.automatic }, () => stateNodes(s));
    renderIfChanged(actions, { r, p: s.preview, busy }, () => actionNodes(s));
    histRows(Array.isArray(s.history) ? s.history : []);
    const now = r ? `${r.id} ${r.phase}` : null;
    if (seen !== undefined && now !== seen) onStep();
    seen = now;
  }

  poller = ctx.poll(() => (last && last.rotation ? OPEN_MS : IDLE_MS), async () => {
    show(await api.get('/meshca/rotation', null, { signal: ctx.signal }));
  }, { onError: (e) => ctx.error(e) });

  return { slot };
}
