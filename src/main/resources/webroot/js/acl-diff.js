// A line diff of two policies' canonical texts (jsdiff, served from its WebJar as an ES module).
// Added lines are <ins> with a "+" sign, removed lines <del> with a "−" sign, each also saying
// "added" or "removed" to screen readers: colour is never the only sign. Long unchanged runs fold
// to a line saying how many lines they hold.

import { diffLines } from '/vendor/diff/5.1.0/lib/index.mjs';
import { h } from './ui.js';

const CONTEXT = 3;

function lines(text) {
  const out = text.split('\n');
  if (out.length && out[out.length - 1] === '') out.pop();
  return out;
}

/** [{kind: 'add'|'del'|'same', text}] from `before` to `after`. */
export function lineChanges(before, after) {
  const out = [];
  for (const part of diffLines(before.endsWith('\n') ? before : before + '\n', after.endsWith('\n') ? after : after + '\n')) {
    const kind = part.added ? 'add' : part.removed ? 'del' : 'same';
    for (const text of lines(part.value)) out.push({ kind, text });
  }
  return out;
}

function row(c) {
  if (c.kind === 'add') {
    return h('ins', { class: 'diff-line diff-add', 'data-test': 'acl-diff-add' },
      h('span', { class: 'diff-sign', 'aria-hidden': 'true' }, '+'), h('span', { class: 'visually-hidden' }, 'added: '), c.text);
  }
  if (c.kind === 'del') {
    return h('del', { class: 'diff-line diff-del', 'data-test': 'acl-diff-del' },
      h('span', { class: 'diff-sign', 'aria-hidden': 'true' }, '−'), h('span', { class: 'visually-hidden' }, 'removed: '), c.text);
  }
  return h('span', { class: 'diff-line diff-same' }, h('span', { class: 'diff-sign', 'aria-hidden': 'true' }, ' '), c.text);
}

/**
 * The diff from `before` to `after` (canonical texts), titled by the two labels: a summary line
 * ("2 lines added, 1 removed", or "no differences") and the lines with 3 lines of context.
 */
export function diffView(before, after, beforeLabel, afterLabel) {
  const changes = lineChanges(before, after);
  const added = changes.filter((c) => c.kind === 'add').length;
  const removed = changes.filter((c) => c.kind === 'del').length;
  const summary = h('p', { class: 'diff-summary', 'data-test': 'acl-diff-summary' },
    added || removed
      ? `From ${beforeLabel} to ${afterLabel}: ${added} line${added === 1 ? '' : 's'} added (+), ${removed} removed (−).`
      : `No differences between ${beforeLabel} and ${afterLabel} (formatting and key order are not compared).`);
  if (!added && !removed) return h('div', { class: 'diff', 'data-test': 'acl-diff' }, summary);
  const near = changes.map(() => false);
  changes.forEach((c, i) => {
    if (c.kind === 'same') return;
    for (let k = Math.max(0, i - CONTEXT); k <= Math.min(changes.length - 1, i + CONTEXT); k++) near[k] = true;
  });
  const body = [];
  for (let i = 0; i < changes.length;) {
    if (near[i]) {
      body.push(row(changes[i]));
      i++;
      continue;
    }
    let j = i;
    while (j < changes.length && !near[j]) j++;
    body.push(h('span', { class: 'diff-line diff-fold' }, `… ${j - i} unchanged line${j - i === 1 ? '' : 's'} …`));
    i = j;
  }
  return h('div', { class: 'diff', 'data-test': 'acl-diff' }, summary,
    h('pre', { class: 'diff-lines', 'aria-label': `Changes from ${beforeLabel} to ${afterLabel}` }, body));
}
