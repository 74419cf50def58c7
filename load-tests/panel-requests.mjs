// Sends N sequential requests over one keep-alive connection (Node's fetch) and prints the wall time
// and the status counts. Used by bench-panel.sh; loopback only.
//   node panel-requests.mjs URL N [header:value ...] [--post JSON]
const [url, nRaw, ...rest] = process.argv.slice(2);
const n = Number(nRaw);
if (!url || !Number.isInteger(n) || n < 1 || n > 1_000_000) throw new Error('usage: URL N [header:value ...] [--post JSON]');
if (!/^http:\/\/127\.0\.0\.1:\d+\//.test(url)) throw new Error('loopback only: ' + url);
const headers = {};
let body = null;
for (let i = 0; i < rest.length; i++) {
  if (rest[i] === '--post') { body = rest[++i]; continue; }
  const at = rest[i].indexOf(':');
  headers[rest[i].slice(0, at)] = rest[i].slice(at + 1);
}
if (body !== null) headers['Content-Type'] = 'application/json';
const statuses = {};
let bytes = 0;
const start = process.hrtime.bigint();
for (let i = 0; i < n; i++) {
  const r = await fetch(url, { method: body === null ? 'GET' : 'POST', headers, body });
  const b = await r.arrayBuffer();
  bytes += b.byteLength;
  statuses[r.status] = (statuses[r.status] || 0) + 1;
}
const ms = Number(process.hrtime.bigint() - start) / 1e6;
console.log(JSON.stringify({ url, n, ms: Math.round(ms), per_request_ms: +(ms / n).toFixed(3), bytes_per_answer: Math.round(bytes / n), statuses }));
