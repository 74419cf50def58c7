// Validates Kubernetes manifests offline, as `kubectl apply --validate=strict` would against a live
// API server: usage `node validate.mjs FILE.yaml...`; exit 0 when every document is valid, else 1 with
// one line per finding ("file: document N (Kind name): where: what").
//
// Two passes over each document, both from the kubernetes-models packages (and
// @kubernetes-models/prometheus-operator for monitoring.coreos.com):
//   1. the model's JSON-schema validator: required fields, types, enums, formats;
//   2. the model's TypeScript type, checked by the TypeScript compiler: the JSON schemas allow unknown
//      fields, the compiler's excess-property check does not, so a misspelt or misplaced field
//      (`livenessprobe`, a container field one level too high) is an error, not silently dropped.
// YAML is read as YAML 1.1, like Kubernetes does (0440 is octal), and a key given twice is an error.
import { readFileSync } from "node:fs";
import { basename, dirname, join } from "node:path";
import { fileURLToPath } from "node:url";
import { parseAllDocuments } from "yaml";
import ts from "typescript";

const here = dirname(fileURLToPath(import.meta.url));
const CRD_MODELS = { "monitoring.coreos.com": "@kubernetes-models/prometheus-operator" };

function modelModule(apiVersion, kind) {
  const slash = apiVersion.lastIndexOf("/");
  const group = slash < 0 ? "" : apiVersion.slice(0, slash);
  const pkg = CRD_MODELS[group] ?? "kubernetes-models";
  return `${pkg}/${apiVersion}/${kind}`;
}

const findings = [];
const docs = [];
for (const file of process.argv.slice(2)) {
  const name = basename(file);
  const parsed = parseAllDocuments(readFileSync(file, "utf8"), { version: "1.1", uniqueKeys: true });
  if (!Array.isArray(parsed)) {
    findings.push(`${name}: not a YAML stream`);
    continue;
  }
  parsed.forEach((doc, i) => {
    for (const e of [...doc.errors, ...doc.warnings]) findings.push(`${name}: document ${i + 1}: ${e.message.split("\n")[0]}`);
    if (doc.errors.length) return;
    const obj = doc.toJS();
    if (obj === null || obj === undefined) return; // an empty document (comments only)
    const label = `${name}: document ${i + 1} (${obj.kind ?? "?"} ${obj.metadata?.name ?? "?"})`;
    if (typeof obj.apiVersion !== "string" || typeof obj.kind !== "string") {
      findings.push(`${label}: apiVersion and kind are required`);
      return;
    }
    docs.push({ label, obj, module: modelModule(obj.apiVersion, obj.kind) });
  });
}

// 1. JSON schema
for (const d of docs) {
  let Model;
  try {
    Model = (await import(d.module))[d.obj.kind];
  } catch (e) {
    Model = undefined;
  }
  if (typeof Model !== "function") {
    findings.push(`${d.label}: no schema for ${d.obj.apiVersion} ${d.obj.kind} (${d.module})`);
    d.skip = true;
    continue;
  }
  try {
    new Model(d.obj).validate();
  } catch (e) {
    for (const line of String(e.message).split(/,\s*(?=data\/)/)) findings.push(`${d.label}: ${line.trim()}`);
  }
}

// 2. TypeScript: unknown fields (and types again)
const checked = docs.filter((d) => !d.skip);
if (checked.length) {
  const file = join(here, "manifests.check.ts");
  let src = "";
  const ranges = [];
  checked.forEach((d, i) => {
    src += `import type { I${d.obj.kind} as T${i} } from "${d.module}";\n`;
  });
  checked.forEach((d, i) => {
    const start = src.length;
    src += `export const d${i}: T${i} = ${JSON.stringify(d.obj, null, 2)};\n`;
    ranges.push({ start, end: src.length, doc: d });
  });
  const options = {
    strict: true,
    noEmit: true,
    skipLibCheck: true,
    types: [],
    target: ts.ScriptTarget.ES2022,
    module: ts.ModuleKind.ESNext,
    moduleResolution: ts.ModuleResolutionKind.Bundler,
  };
  const host = ts.createCompilerHost(options);
  const readSource = host.getSourceFile;
  host.getSourceFile = (f, lang, ...rest) => (f === file ? ts.createSourceFile(f, src, lang, true) : readSource(f, lang, ...rest));
  host.fileExists = ((exists) => (f) => f === file || exists(f))(host.fileExists);
  const program = ts.createProgram([file], options, host);
  const source = program.getSourceFile(file);
  for (const diag of ts.getPreEmitDiagnostics(program)) {
    const text = ts.flattenDiagnosticMessageText(diag.messageText, " ");
    const range = diag.file === source ? ranges.find((r) => diag.start >= r.start && diag.start < r.end) : undefined;
    if (!range) {
      findings.push(`typescript: ${text}`);
      continue;
    }
    findings.push(`${range.doc.label}: ${pathAt(source, diag.start)}: ${text}`);
  }
}

// The JSON path of the node at a position of the generated source: spec.template.spec.containers[0].x
function pathAt(sf, pos) {
  let node = sf;
  for (;;) {
    const next = node.getChildren(sf).find((c) => c.getStart(sf) <= pos && pos < c.getEnd());
    if (!next) break;
    node = next;
  }
  const parts = [];
  for (let n = node; n && !ts.isVariableDeclaration(n); n = n.parent) {
    if (ts.isPropertyAssignment(n)) parts.unshift(JSON.parse(n.name.getText(sf)));
    else if (n.parent && ts.isArrayLiteralExpression(n.parent)) parts.unshift(`[${n.parent.elements.indexOf(n)}]`);
  }
  return parts.join(".").replace(/\.\[/g, "[") || "(document)";
}

for (const f of findings) console.log(f);
console.log(`${docs.length} documents in ${process.argv.length - 2} files: ${findings.length ? findings.length + " findings" : "valid"}`);
process.exit(findings.length ? 1 : 0);
