// A paginated list page: filters kept in the hash, a table, previous/next through a cursor stack,
// a page size select and (optionally) a live refresh that keeps focus and filter input intact.

import { api, ApiError, isAbort } from './api.js';
import {
  h, btn, select, field, makeTable, emptyRow, replaceKeepFocus, errorBox, showFormError,
  clearFormError, debounce, isoToLocalInput, localInputToIso, uid, keyedRows,
} from './ui.js';

/**
 * opts:
 *   path            API path of the list (under /api/v1)
 *   prefix          data-test prefix: <prefix>-filter-<key>, <prefix>-prev, -next, -limit, -count
 *   filters         [{key, label, kind: 'text'|'select'|'datetime'|'checkbox', options, placeholder,
 *                     hint, datalist: [values], toApi(value) → value sent}]
 *   columns, row(item) → <tr>, tableTest, caption, empty
 *   pollMs          live refresh period (0: none)
 *   slowPoll        {sorts: [keys], ms}: in these orders (either direction) refresh every ms instead,
 *                   and say so next to the "Updated" time (<prefix>-refresh-note): orders whose page
 *                   costs a scan on the server
 *   sizes, defaultLimit
 *   fixedQuery()    more query parameters
 *   toolbar         extra elements next to the pager
 *   onData(items, data) after each successful load
 *   sorts           [key or null per column]: sortable headers (buttons with aria-sort) sending
 *                   sort=<key> or sort=-<key>, kept in the hash; data-test <prefix>-sort-<key>
 *   above           elements between the toolbar and the table (a bulk bar)
 */
export function listView(ctx, opts) {
  const {
    path, prefix, filters = [], columns, row, tableTest, caption = '', empty = 'Nothing to show.',
    pollMs = 0, sizes = [25, 50, 100, 200], defaultLimit = 50, fixedQuery = () => ({}),
    toolbar = [], onData = null, sorts = null, above = [], slowPoll = null,
  } = opts;
  const sortKeys = (sorts || []).filter(Boolean);
  const askedSort = ctx.params.get('sort') || '';
  let sort = sortKeys.includes(askedSort.replace(/^-/, '')) ? askedSort : '';

  const values = {};
  const inputs = {};
  for (const f of filters) values[f.key] = ctx.params.get(f.key) || '';
  const askedLimit = Number(ctx.params.get('limit'));
  let limit = sizes.includes(askedLimit) ? askedLimit : defaultLimit;
  const pager = { stack: [], cursor: '', next: null };
  let seq = 0;
  let poller = null;
  let lastItems = [];

  // ---- filters ----
  const filterError = errorBox(`${prefix}-filter-error`);
  const typed = debounce(() => apply(), 600);
  const controls = filters.map((f) => {
    const test = `${prefix}-filter-${f.key}`;
    let input;
    if (f.kind === 'select') {
      input = select([['', f.anyLabel || 'Any'], ...f.options], values[f.key], { 'data-test': test, name: f.key });
      input.addEventListener('change', () => apply());
    } else if (f.kind === 'checkbox') {
      input = h('input', { type: 'checkbox', 'data-test': test, name: f.key, checked: values[f.key] === 'true' });
      input.addEventListener('change', () => apply());
      inputs[f.key] = input;
      const id = uid('f');
      input.id = id;
      return h('div', { class: 'field field-check' }, input, h('label', { for: id }, f.label));
    } else if (f.kind === 'datetime') {
      input = h('input', { type: 'datetime-local', 'data-test': test, name: f.key, value: isoToLocalInput(values[f.key]), step: '1' });
      input.addEventListener('change', () => apply());
    } else {
      let listId = null;
      let datalist = null;
      if (f.datalist) {
        listId = uid('dl');
        datalist = h('datalist', { id: listId }, f.datalist.map((v) => h('option', { value: v })));
      }
      input = h('input', {
        type: 'text', 'data-test': test, name: f.key, value: values[f.key], placeholder: f.placeholder || '',
        autocomplete: 'off', spellcheck: 'false', list: listId,
      });
      input.addEventListener('input', typed);
      inputs[f.key] = input;
      const wrap = field(f.label, input, f.hint);
      if (datalist) wrap.append(datalist);
      return wrap;
    }
    inputs[f.key] = input;
    return field(f.label, input, f.hint);
  });

  const applyBtn = h('button', { type: 'submit', class: 'btn', 'data-test': `${prefix}-filter-apply` }, 'Apply');
  const clearBtn = btn('Clear', { 'data-test': `${prefix}-filter-clear` });
  clearBtn.addEventListener('click', () => {
    for (const f of filters) {
      const input = inputs[f.key];
      if (f.kind === 'checkbox') input.checked = false;
      else input.value = '';
    }
    apply();
  });
  const form = filters.length
    ? h('form', { class: 'filters', 'aria-label': 'Filters', role: 'search', novalidate: true },
      h('div', { class: 'filter-fields' }, controls, h('div', { class: 'filter-actions' }, applyBtn, clearBtn)),
      filterError)
    : null;
  if (form) {
    form.addEventListener('submit', (e) => {
      e.preventDefault();
      typed.cancel();
      apply();
    });
  }

  function readValues() {
    const out = {};
    for (const f of filters) {
      const input = inputs[f.key];
      if (f.kind === 'checkbox') out[f.key] = input.checked ? 'true' : '';
      else if (f.kind === 'datetime') out[f.key] = localInputToIso(input.value);
      else out[f.key] = input.value.trim();
    }
    return out;
  }

  function apiQuery() {
    const q = { ...fixedQuery() };
    if (sort) q.sort = sort;
    for (const f of filters) {
      const v = values[f.key];
      if (v === '') continue;
      q[f.key] = f.toApi ? f.toApi(v) : v;
    }
    return q;
  }

  function syncHash() {
    const qs = new URLSearchParams();
    for (const f of filters) if (values[f.key] !== '') qs.set(f.key, values[f.key]);
    if (limit !== defaultLimit) qs.set('limit', String(limit));
    if (sort) qs.set('sort', sort);
    ctx.setHashQuiet(qs);
  }

  function apply() {
    typed.cancel();
    Object.assign(values, readValues());
    syncHash();
    pager.stack = [];
    pager.cursor = '';
    reload();
  }

  // ---- pager ----
  const prevBtn = btn('Previous', { 'data-test': `${prefix}-prev`, disabled: true });
  const nextBtn = btn('Next', { 'data-test': `${prefix}-next`, disabled: true });
  const pageLabel = h('span', { class: 'page-label', 'data-test': `${prefix}-page`, 'aria-live': 'polite' }, 'Page 1');
  const sizeSelect = select(sizes.map((s) => [String(s), `${s} per page`]), String(limit), {
    'data-test': `${prefix}-limit`, 'aria-label': 'Page size',
  });
  const countLabel = h('span', { class: 'muted', 'data-test': `${prefix}-count` });
  const refreshLabel = h('span', { class: 'muted refresh-status', 'data-test': `${prefix}-refreshed`, 'aria-live': 'off' });
  const refreshNote = h('span', { class: 'muted refresh-status', 'data-test': `${prefix}-refresh-note`, hidden: true });
  function slowOrder() {
    return !!slowPoll && slowPoll.sorts.includes(sort.replace(/^-/, ''));
  }
  function period() {
    return slowOrder() ? slowPoll.ms : pollMs;
  }
  function showRefreshNote() {
    const slow = slowOrder();
    refreshNote.hidden = !slow;
    refreshNote.textContent = slow ? `refreshed every ${Math.round(slowPoll.ms / 1000)} s in this order` : '';
  }
  prevBtn.addEventListener('click', () => {
    if (!pager.stack.length) return;
    pager.cursor = pager.stack.pop();
    reload();
  });
  nextBtn.addEventListener('click', () => {
    if (!pager.next) return;
    pager.stack.push(pager.cursor);
    pager.cursor = pager.next;
    reload();
  });
  sizeSelect.addEventListener('change', () => {
    limit = Number(sizeSelect.value);
    pager.stack = [];
    pager.cursor = '';
    syncHash();
    reload();
  });
  function updatePager(count) {
    prevBtn.disabled = pager.stack.length === 0;
    nextBtn.disabled = !pager.next;
    pageLabel.textContent = `Page ${pager.stack.length + 1}`;
    countLabel.textContent = `${count} shown${pager.next ? ', more on the next page' : ''}`;
  }

  // ---- table ----
  const { wrap, table, tbody } = makeTable(columns, { caption, test: tableTest });
  const sortButtons = [];
  if (sorts) {
    const ths = table.tHead.rows[0].cells;
    sorts.forEach((key, i) => {
      if (!key || !ths[i]) return;
      const label = ths[i].textContent;
      const arrow = h('span', { class: 'sort-arrow', 'aria-hidden': 'true' });
      const b = h('button', { type: 'button', class: 'sort-button', 'data-test': `${prefix}-sort-${key}` }, label, arrow);
      b.addEventListener('click', () => {
        sort = sort === key ? `-${key}` : key;
        markSort();
        syncHash();
        pager.stack = [];
        pager.cursor = '';
        reload();
      });
      ths[i].replaceChildren(b);
      sortButtons.push({ key, th: ths[i], arrow, button: b, label });
    });
  }
  function markSort() {
    for (const s of sortButtons) {
      const state = sort === s.key ? 'ascending' : sort === `-${s.key}` ? 'descending' : 'none';
      s.th.setAttribute('aria-sort', state);
      s.arrow.textContent = state === 'ascending' ? ' ▲' : state === 'descending' ? ' ▼' : '';
      s.button.setAttribute('aria-label', `Sort by ${s.label}${state === 'ascending' ? ', ascending now; activate for descending' : state === 'descending' ? ', descending now; activate for ascending' : ''}`);
    }
  }
  markSort();
  tbody.append(emptyRow(columns.length, 'Loading…'));
  const showRows = keyedRows(tbody, {
    keyOf: (it) => (it && typeof it === 'object' && it.id != null ? String(it.id) : null),
    build: row,
    emptyText: empty,
    colspan: columns.length,
  });

  async function load() {
    const my = ++seq;
    try {
      const data = await api.get(path, { ...apiQuery(), limit, cursor: pager.cursor || undefined }, { signal: ctx.signal });
      if (my !== seq) return;
      const items = data && Array.isArray(data.items) ? data.items : [];
      lastItems = items;
      showRows(items);
      pager.next = data && typeof data.next_cursor === 'string' && data.next_cursor ? data.next_cursor : null;
      updatePager(items.length);
      clearFormError(filterError, inputs);
      ctx.clearError();
      refreshLabel.textContent = `Updated ${new Date().toLocaleTimeString()}`;
      showRefreshNote();
      if (onData) onData(items, data);
    } catch (e) {
      if (my !== seq || isAbort(e)) return;
      const mine = new Set([...filters.map((f) => f.key), 'cursor', 'limit', 'sort']);
      if (e instanceof ApiError && e.status === 400 && e.errors.some((x) => mine.has(x.field))) {
        showFormError(filterError, e, inputs);
        showRows([]);
        replaceKeepFocus(tbody, emptyRow(columns.length, 'Fix the filters above.'));
        pager.next = null;
        updatePager(0);
        return;
      }
      throw e;
    }
  }

  function reload() {
    if (poller) poller.kick();
    else load().catch((e) => ctx.error(e));
  }

  const element = h('div', { class: 'list-view' },
    form,
    h('div', { class: 'list-toolbar' },
      h('div', { class: 'pager' }, prevBtn, pageLabel, nextBtn, sizeSelect),
      h('div', { class: 'list-meta' }, countLabel, pollMs ? refreshLabel : null, pollMs ? refreshNote : null, toolbar)),
    above,
    wrap);

  if (pollMs) {
    poller = ctx.poll(period, load, {
      onError: (e) => {
        ctx.error(e);
        refreshLabel.textContent = 'Refresh failed; retrying';
      },
    });
  } else {
    reload();
  }

  return {
    element,
    reload,
    query: apiQuery,
    values,
    items: () => lastItems,
    sort: () => sort,
  };
}
