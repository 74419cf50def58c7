// JSON text -> positions: where each JSON pointer's value starts and ends in the text, and where the
// first syntax error is. A small strict parser (RFC 8259), so that a server error such as
// /grants/2/src/0 can be marked at its line in the editor, and a syntax error at its exact place.
// pointerOf() turns the WAF API's field paths (rules[2].expression) into such pointers.

/** {pointers: Map(pointer -> {from, to, key}), error: null | {pos, message}} for `text`. */
export function positions(text) {
  const pointers = new Map();
  let i = 0;
  const fail = (message, at = i) => {
    const e = new Error(message);
    e.pos = Math.min(at, text.length);
    throw e;
  };
  const ws = () => {
    while (i < text.length && (text[i] === ' ' || text[i] === '\n' || text[i] === '\r' || text[i] === '\t')) i++;
  };
  const esc = (k) => k.replace(/~/g, '~0').replace(/\//g, '~1');
  const string = () => {
    const start = i;
    i++; // the opening quote
    let out = '';
    while (i < text.length) {
      const c = text[i];
      if (c === '"') {
        i++;
        return out;
      }
      if (c === '\\') {
        const n = text[i + 1];
        if (n === 'u') {
          if (!/^[0-9a-fA-F]{4}$/.test(text.slice(i + 2, i + 6))) fail('a \\u escape needs 4 hex digits', i);
          out += String.fromCharCode(parseInt(text.slice(i + 2, i + 6), 16));
          i += 6;
          continue;
        }
        const m = { '"': '"', '\\': '\\', '/': '/', b: '\b', f: '\f', n: '\n', r: '\r', t: '\t' }[n];
        if (m === undefined) fail('a bad escape in a string', i);
        out += m;
        i += 2;
        continue;
      }
      if (c < ' ') fail(c === '\n' ? 'a string must end on its line: a closing " is missing' : 'a control character in a string', i);
      out += c;
      i++;
    }
    return fail('a string is not closed: a " is missing', start);
  };
  const value = (ptr, key) => {
    ws();
    const from = i;
    if (i >= text.length) fail('the text ends where a value should be');
    const c = text[i];
    if (c === '{') {
      i++;
      ws();
      if (text[i] === '}') {
        i++;
      } else {
        for (;;) {
          ws();
          if (text[i] !== '"') fail(text[i] === '}' ? 'a comma before } (remove it)' : 'a key in double quotes is expected here');
          const keyAt = i;
          const k = string();
          ws();
          if (text[i] !== ':') fail('a : is expected after the key');
          i++;
          value(`${ptr}/${esc(k)}`, keyAt);
          ws();
          if (text[i] === ',') {
            i++;
            continue;
          }
          if (text[i] === '}') {
            i++;
            break;
          }
          fail('a , or } is expected here');
        }
      }
    } else if (c === '[') {
      i++;
      ws();
      if (text[i] === ']') {
        i++;
      } else {
        for (let n = 0; ; n++) {
          ws();
          if (text[i] === ']') fail('a comma before ] (remove it)');
          value(`${ptr}/${n}`, null);
          ws();
          if (text[i] === ',') {
            i++;
            continue;
          }
          if (text[i] === ']') {
            i++;
            break;
          }
          fail('a , or ] is expected here');
        }
      }
    } else if (c === '"') {
      string();
    } else if (/[-0-9]/.test(c)) {
      const m = /^-?(0|[1-9]\d*)(\.\d+)?([eE][+-]?\d+)?/.exec(text.slice(i));
      if (!m) fail('a malformed number');
      i += m[0].length;
    } else {
      const word = ['true', 'false', 'null'].find((w) => text.startsWith(w, i));
      if (!word) fail(c === "'" ? 'strings need double quotes, not single' : `unexpected character ${JSON.stringify(c)}`);
      i += word.length;
    }
    pointers.set(ptr, { from, to: i, key: key == null ? from : key });
  };
  try {
    value('', null);
    ws();
    if (i < text.length) fail('more text after the end of the document');
    return { pointers, error: null };
  } catch (e) {
    if (typeof e.pos !== 'number') throw e;
    return { pointers, error: { pos: e.pos, message: e.message } };
  }
}

/** {line, ch} (0-based) of offset `pos` in `text`. */
export function lineCh(text, pos) {
  let line = 0;
  let last = -1;
  for (let k = 0; k < pos && k < text.length; k++) {
    if (text[k] === '\n') {
      line++;
      last = k;
    }
  }
  return { line, ch: pos - last - 1 };
}

/**
 * Where `pointer` lies in the text: its value's {from, to} offsets (from its key, for a member), or
 * the nearest ancestor's that exists (a missing /grants/0/ports marks /grants/0), or null.
 */
export function locate(pointers, pointer) {
  let p = pointer;
  for (;;) {
    const at = pointers.get(p);
    if (at) return { from: at.key, to: at.to, exact: p === pointer };
    if (!p) return null;
    p = p.slice(0, p.lastIndexOf('/'));
  }
}

const PATH = /^[a-z_][^.[\]/]*(\[\d+\])*(\.[^.[\]]+(\[\d+\])*)*$/;

/**
 * The JSON pointer of a field path as the WAF API names fields (`rules[2].expression` →
 * /rules/2/expression, `tests[1]` → /tests/1, `managed.disable` → /managed/disable), or null when
 * `field` is not such a path (empty, `(json)`, already a pointer, a header such as `If-Match`).
 */
export function pointerOf(field) {
  if (typeof field !== 'string' || !PATH.test(field)) return null;
  const esc = (k) => k.replace(/~/g, '~0').replace(/\//g, '~1');
  let out = '';
  for (const part of field.split('.')) {
    const m = /^([^[]+)((?:\[\d+\])*)$/.exec(part);
    out += '/' + esc(m[1]);
    for (const i of m[2].matchAll(/\[(\d+)\]/g)) out += '/' + i[1];
  }
  return out;
}
