// The policy editor of the ACL and WAF pages: CodeMirror 5 (served from its WebJar, /vendor/codemirror/…) over a textarea,
// with JSON highlighting and error marks in the gutter and the text: the JSON syntax error at its
// exact place, and the server's errors (JSON pointers such as /grants/2/src) at their line. CodeMirror
// is a set of classic scripts: they are added as <script src> elements (CSP script-src 'self'), once.
// Without CodeMirror (a script failed to load) the textarea itself is the editor.

import { h } from './ui.js';
import { positions, lineCh, locate } from './acl-pointer.js';

const CM = '/vendor/codemirror/5.65.19/';
const SCRIPTS = ['lib/codemirror.js', 'mode/javascript/javascript.js', 'addon/lint/lint.js'];
const STYLES = [CM + 'lib/codemirror.css', CM + 'addon/lint/lint.css', '/css/acl.css'];

let loading = null;

function addOnce(tag, attr, url, props) {
  if (document.head.querySelector(`${tag}[${attr}="${url}"]`)) return Promise.resolve();
  return new Promise((resolve, reject) => {
    const el = document.createElement(tag);
    Object.assign(el, props);
    el.addEventListener('load', () => resolve());
    el.addEventListener('error', () => reject(new Error(`${url} did not load`)));
    el.setAttribute(attr, url);
    document.head.append(el);
  });
}

/** The policy pages' styles (CodeMirror's and css/acl.css), as <link> elements, once. */
export function loadStyles() {
  return Promise.all(STYLES.map((u) => addOnce('link', 'href', u, { rel: 'stylesheet' })));
}

/** Loads CodeMirror's scripts in order and the styles; resolves to window.CodeMirror. */
export function loadCodeMirror() {
  if (!loading) {
    loading = (async () => {
      await loadStyles();
      for (const s of SCRIPTS) await addOnce('script', 'src', CM + s, { async: false });
      if (!window.CodeMirror) throw new Error('CodeMirror did not define itself');
      return window.CodeMirror;
    })();
    loading.catch(() => {
      loading = null;
    });
  }
  return loading;
}

/**
 * An editor over `textarea`: {value(), setValue(text), focus(), onChange(fn), setServerErrors(errors,
 * prefix), marks()}. The textarea keeps the text (it is written on every change), labelled by the
 * page; CodeMirror's own input is labelled the same way. `marksList` receives one item per mark.
 * `test` prefixes the data-test hooks: `<test>-code` on CodeMirror's element, `<test>-mark` on a mark.
 * A server error is {field, message} with `field` a JSON pointer, or {field, pointer, message} when the
 * API names fields another way (the WAF's `rules[2].expression`): the pointer places the mark, the
 * field is what the mark says.
 */
export function codeEditor(textarea, { label, readOnly, marksList, test = 'acl' }) {
  const listeners = [];
  let cm = null;
  let server = []; // [{field, message}] of the text as it was sent; cleared by the next edit
  let current = []; // the annotations shown: [{line, ch, len, message, field}]
  let quiet = false; // a change made by the page (setValue), not by the person
  const mode = (off) => (off ? 'nocursor' : readOnly ? true : false);

  function annotations(text) {
    const out = [];
    const { pointers, error } = positions(text);
    if (error) {
      const at = lineCh(text, error.pos);
      out.push({ line: at.line, ch: at.ch, len: 1, message: `JSON syntax: ${error.message}`, field: '(json)' });
    } else {
      for (const e of server) {
        const where = locate(pointers, e.pointer);
        if (!where) continue;
        const at = lineCh(text, where.from);
        const eol = text.indexOf('\n', where.from);
        const len = Math.max(1, Math.min(where.to, eol < 0 ? text.length : eol) - where.from);
        out.push({ line: at.line, ch: at.ch, len, message: `${e.field}: ${e.message}`, field: e.field });
      }
    }
    return out;
  }

  function showList() {
    if (!marksList) return;
    marksList.replaceChildren(...current.map((a) => h('li', { 'data-test': `${test}-mark`, 'data-line': String(a.line + 1), 'data-field': a.field },
      h('span', { class: 'mark-line' }, `Line ${a.line + 1}`), `: ${a.message}`)));
    marksList.hidden = !current.length;
  }

  function relint() {
    current = annotations(value());
    showList();
    if (cm) cm.performLint();
  }

  function value() {
    return cm ? cm.getValue() : textarea.value;
  }

  function changed() {
    if (cm) textarea.value = cm.getValue();
    if (quiet) return;
    server = [];
    for (const fn of listeners) fn(value());
  }
  textarea.addEventListener('input', () => {
    changed();
    relint();
  });

  const api = {
    value,
    setValue(text) {
      if (cm) {
        quiet = true;
        try {
          cm.setValue(text);
          cm.clearHistory();
        } finally {
          quiet = false;
        }
      }
      textarea.value = text;
      server = [];
      relint();
    },
    focus(line) {
      if (cm) {
        cm.focus();
        if (Number.isInteger(line)) cm.setCursor({ line, ch: 0 });
      } else {
        textarea.focus();
      }
    },
    onChange(fn) {
      listeners.push(fn);
    },
    /** Marks the server's errors (pointers under `prefix`, e.g. /policy, are taken relative to the document). */
    setServerErrors(errors, prefix = '') {
      server = errors.map((e) => {
        const ptr = e.pointer ?? e.field;
        const rel = prefix && ptr.startsWith(prefix + '/') ? ptr.slice(prefix.length) : ptr;
        return { ...e, field: e.pointer == null ? rel : e.field, pointer: rel };
      }).filter((e) => e.pointer.startsWith('/'));
      relint();
      return current.length ? current[0].line : null;
    },
    marks() {
      return current;
    },
    setDisabled(off) {
      textarea.disabled = off;
      if (cm) cm.setOption('readOnly', mode(off));
    },
    get codeMirror() {
      return cm;
    },
  };

  loadCodeMirror().then((CodeMirror) => {
    if (!textarea.isConnected) return;
    cm = CodeMirror.fromTextArea(textarea, {
      mode: { name: 'javascript', json: true },
      lineNumbers: true,
      gutters: ['CodeMirror-lint-markers', 'CodeMirror-linenumbers'],
      lint: {
        getAnnotations: () => current.map((a) => ({
          from: CodeMirror.Pos(a.line, a.ch), to: CodeMirror.Pos(a.line, a.ch + a.len), message: a.message, severity: 'error',
        })),
        lintOnChange: false,
      },
      readOnly: mode(textarea.disabled),
      tabSize: 2,
      indentUnit: 2,
      // Tab and Shift-Tab move the focus out of the editor, as in any form field (no keyboard trap)
      extraKeys: { Tab: false, 'Shift-Tab': false },
      screenReaderLabel: label,
      viewportMargin: Infinity,
    });
    cm.getWrapperElement().setAttribute('data-test', `${test}-code`);
    cm.on('changes', () => {
      changed();
      relint();
    });
    relint();
  }).catch(() => {
    /* the textarea stays the editor */
  });
  return api;
}
