#!/usr/bin/env node
// sim/openapi_gen.mjs - build-time generator of the OpenAPI definitions
// gpuq-sim serves for its built-in kinds (docs/sim.md, "OpenAPI").
//
//   node sim/openapi_gen.mjs --models DIR (--sim BINARY | --kinds FILE)
//                            --out FILE
//
// DIR is the generated-models folder of an installed
// @kubernetes/client-node (node_modules/@kubernetes/client-node/dist/gen/
// models). The kinds to describe are what `gpuq-sim --print-kinds`
// prints, the registry's built-in kinds, [{"group", "version", "kind",
// "listKind"}]: run from BINARY (--sim, as the build does) or read from
// FILE (--kinds).
// Nothing here is committed schema text: every type, description and
// required field is read from the package at build time.
//
// From each model class the package has, this reads
//   - attributeTypeMap (name, baseName, type, format) from the .js file:
//     the property types: "string", "number" (format int32, int64, double),
//     "boolean", "Date" (format date-time), "V1MicroTime", "any", "IntOrString",
//     "Array<T>", "{ [key: string]: T; }" and other class names;
//   - the doc comments of the .d.ts file: the class's description and each
//     property's, and which properties are required (declared without '?').
//
// The output is one JSON object:
//   {"source": "@kubernetes/client-node 1.1.3", "kubernetes": "v1.32.0",
//    "definitions": {"io.k8s.api.core.v1.Pod": SCHEMA, ...}}
// with each SCHEMA in the form of kube-apiserver's /openapi/v2 definitions
// (Swagger 2.0: "$ref": "#/definitions/NAME", a description beside it),
// the root kinds and their lists carrying x-kubernetes-group-version-kind.
// Only the definitions reachable from the kinds of --kinds (and the meta
// types every group uses) are written.
//
// Definition names follow kube-apiserver's (the Go package path):
// io.k8s.api.<group's first DNS label>.<version>.<Kind> ("" is core),
// io.k8s.apiextensions-apiserver.pkg.apis.apiextensions.v1.<Kind> and
// io.k8s.apimachinery.pkg.apis.meta.v1.<Kind>. The client's class names
// drop the package (V1PodSpec) except where two packages clash
// (CoreV1Event, EventsV1Event), so a nested type takes the package of the
// kind that reaches it first, in this order: the meta types, then the
// kinds of the core API (every model CoreV1Api.js deserializes, so
// PodTemplateSpec is core even when only a Job reaches it), then the
// served kinds in --kinds order. The served kinds themselves are named
// from --kinds before any of that.
//
// Exit status: 0 with the file written; 1 with a message on stderr.
import { readFileSync, readdirSync, writeFileSync, renameSync } from 'node:fs';
import { execFileSync } from 'node:child_process';
import { join } from 'node:path';
import { pathToFileURL } from 'node:url';

const META_PKG = 'io.k8s.apimachinery.pkg.apis.meta.v1';
// The metav1 types a served document refers to (ObjectMeta and ListMeta in
// every kind, Status in every error, LabelSelector and Condition in specs
// and statuses); the types they reach are meta too.
const META_SEEDS = ['V1ObjectMeta', 'V1ListMeta', 'V1Status', 'V1DeleteOptions',
  'V1LabelSelector', 'V1Condition', 'V1WatchEvent', 'V1APIResourceList'];

function die(msg) {
  process.stderr.write(`openapi_gen: ${msg}\n`);
  process.exit(1);
}

function args(argv) {
  const a = {};
  for (let i = 2; i < argv.length; i += 2) {
    const f = argv[i], v = argv[i + 1];
    if (!['--models', '--kinds', '--sim', '--out'].includes(f) || v === undefined)
      die(`usage: openapi_gen.mjs --models DIR (--sim BINARY | --kinds FILE) --out FILE (bad '${f}')`);
    a[f.slice(2)] = v;
  }
  for (const k of ['models', 'out'])
    if (!a[k]) die(`--${k} is required`);
  if (!a.kinds === !a.sim) die('give one of --sim and --kinds');
  return a;
}

// "\'" and "\"" in the generator's comments are plain quotes.
function unescape(s) {
  return s.replace(/\\(['"\\])/g, '$1');
}

// The doc comment text of a /** ... */ block, lines joined with spaces.
function commentText(block) {
  return unescape(block.split('\n').map((l) => l.replace(/^\s*\*\s?/, ''))
    .join('\n').trim());
}

// {description, props: {name: {description, required}}} from a .d.ts.
function parseDts(text, cls) {
  const out = { description: '', props: {} };
  const head = text.indexOf(`export declare class ${cls} `);
  if (head < 0) return out;
  const before = text.slice(0, head);
  const m = before.match(/\/\*\*\n((?:(?!\*\/)[\s\S])*)\*\/\s*$/);
  if (m) out.description = commentText(m[1]);
  const body = text.slice(head);
  const re = /\/\*\*\n((?:(?!\*\/)[\s\S])*?)\*\/\s*\n\s*'([^']+)'(\??):|\n\s*'([^']+)'(\??):/g;
  let p;
  while ((p = re.exec(body)) !== null) {
    const name = p[2] ?? p[4];
    const opt = p[2] !== undefined ? p[3] : p[5];
    out.props[name] = {
      description: p[1] !== undefined ? commentText(p[1]) : '',
      required: opt !== '?',
    };
  }
  return out;
}

// The package of a served kind's group (kube-apiserver's Go package path).
function groupPkg(group, version) {
  if (group === '') return `io.k8s.api.core.${version}`;
  if (group === 'apiextensions.k8s.io')
    return `io.k8s.apiextensions-apiserver.pkg.apis.apiextensions.${version}`;
  return `io.k8s.api.${group.split('.')[0]}.${version}`;
}

// The class prefix the client uses when two packages clash: "Core" for
// "", "Events" for events.k8s.io, "Admissionregistration" for ...
function groupPrefix(group) {
  const label = group === '' ? 'core' : group.split('.')[0];
  return label[0].toUpperCase() + label.slice(1);
}

// "V1PodSpec" -> "PodSpec", "CoreV1Event" -> "Event".
function shortName(cls) {
  const m = cls.match(/^(?:[A-Z][a-z]+)?V\d+(?:(?:alpha|beta)\d+)?([A-Z]\w*)$/);
  return m ? m[1] : cls;
}

async function loadModels(dir) {
  const models = new Map();
  for (const f of readdirSync(dir)) {
    const m = f.match(/^(\w+)\.js$/);
    if (!m || ['all', 'models', 'ObjectSerializer'].includes(m[1])) continue;
    const cls = m[1];
    const mod = await import(pathToFileURL(join(dir, f)).href);
    const c = mod[cls];
    if (!c || !Array.isArray(c.attributeTypeMap)) continue;
    let dts = '';
    try { dts = readFileSync(join(dir, `${cls}.d.ts`), 'utf8'); } catch { /* none */ }
    models.set(cls, { attrs: c.attributeTypeMap, doc: parseDts(dts, cls) });
  }
  if (models.size === 0) die(`no models in '${dir}'`);
  return models;
}

// The classes a type string refers to.
function refsOf(type, models) {
  return (type.match(/[A-Za-z_]\w*/g) || []).filter((t) => models.has(t));
}

// A JSON-schema node for a property's type string.
function typeSchema(type, format, names) {
  let m;
  if ((m = type.match(/^Array<(.+)>$/)))
    return { type: 'array', items: typeSchema(m[1], '', names) };
  if ((m = type.match(/^\{ \[key: string\]: (.+); \}$/)))
    return { type: 'object', additionalProperties: typeSchema(m[1], '', names) };
  switch (type) {
    case 'string': return format ? { type: 'string', format } : { type: 'string' };
    case 'boolean': return { type: 'boolean' };
    case 'number':
      return ['int32', 'int64'].includes(format) ? { type: 'integer', format }
        : format ? { type: 'number', format } : { type: 'number' };
    case 'Date':
    case 'V1MicroTime': // metav1.MicroTime: an RFC 3339 time with microseconds
      return { type: 'string', format: 'date-time' };
    case 'IntOrString':
      return { type: 'string', format: 'int-or-string', 'x-kubernetes-int-or-string': true };
    case 'any': return { 'x-kubernetes-preserve-unknown-fields': true };
    default:
      if (names.has(type)) return { $ref: `#/definitions/${names.get(type)}` };
      die(`unknown type '${type}'`);
  }
  return null;
}

// The client's generator writes no doc comment on a property whose type is
// another model (V1Pod's metadata, spec, status): such a property gets
// the description of that model, so `kubectl explain` has something to
// say ("PodSpec is a description of a pod.") where kube-apiserver has the
// field's own words.
function definition(model, names, models) {
  const props = {}, required = [];
  for (const a of model.attrs) {
    const d = model.doc.props[a.name] || { description: '', required: false };
    const s = typeSchema(a.type, a.format, names);
    const desc = d.description || (models.has(a.type) ? models.get(a.type).doc.description : '');
    if (desc) s.description = desc;
    props[a.baseName] = s;
    if (d.required) required.push(a.baseName);
  }
  const out = { type: 'object' };
  if (model.doc.description) out.description = model.doc.description;
  out.properties = props;
  if (required.length) out.required = required;
  return out;
}

async function main() {
  const a = args(process.argv);
  const models = await loadModels(a.models);
  const kinds = JSON.parse(a.sim
    ? execFileSync(a.sim, ['--print-kinds'], { encoding: 'utf8' })
    : readFileSync(a.kinds, 'utf8'));
  const names = new Map(); // class -> definition name
  const gvk = new Map();   // class -> [{group, version, kind}]
  const roots = [];

  // The served kinds and their lists, named from the registry.
  for (const k of kinds) {
    for (const kind of [k.kind, k.listKind].filter(Boolean)) {
      const pre = `${groupPrefix(k.group)}${k.version[0].toUpperCase()}${k.version.slice(1)}${kind}`;
      const plain = `${k.version[0].toUpperCase()}${k.version.slice(1)}${kind}`;
      const cls = models.has(pre) ? pre : plain;
      if (!models.has(cls)) die(`no model for ${k.group || 'core'}/${k.version} ${kind} (looked for ${pre}, ${plain})`);
      names.set(cls, `${groupPkg(k.group, k.version)}.${kind}`);
      gvk.set(cls, [...(gvk.get(cls) || []), { group: k.group, version: k.version, kind }]);
      roots.push(cls);
    }
  }
  const assign = (seeds, pkg) => {
    const todo = [...seeds];
    while (todo.length) {
      const cls = todo.shift();
      if (!models.has(cls)) continue;
      if (!names.has(cls)) names.set(cls, `${pkg(cls)}.${shortName(cls)}`);
      for (const attr of models.get(cls).attrs)
        for (const r of refsOf(attr.type, models))
          if (!names.has(r)) todo.push(r);
    }
  };
  assign(META_SEEDS, () => META_PKG);
  let core = [];
  try {
    const api = readFileSync(join(a.models, '..', 'apis', 'CoreV1Api.js'), 'utf8');
    core = [...new Set(api.match(/"V1\w+"/g) || [])].map((s) => s.slice(1, -1));
  } catch { /* an older layout: the served core kinds still name theirs */ }
  assign(core, () => 'io.k8s.api.core.v1');
  for (const k of kinds)
    assign(roots.filter((c) => names.get(c).startsWith(`${groupPkg(k.group, k.version)}.`)),
      () => groupPkg(k.group, k.version));

  // What the roots reach, as definitions.
  const defs = {}, seen = new Set(), todo = [...META_SEEDS.filter((c) => models.has(c)), ...roots];
  while (todo.length) {
    const cls = todo.shift();
    if (seen.has(cls)) continue;
    seen.add(cls);
    const d = definition(models.get(cls), names, models);
    if (gvk.has(cls)) d['x-kubernetes-group-version-kind'] = gvk.get(cls);
    defs[names.get(cls)] = d;
    for (const attr of models.get(cls).attrs) todo.push(...refsOf(attr.type, models));
  }
  const sorted = Object.fromEntries(Object.keys(defs).sort().map((k) => [k, defs[k]]));
  let pkgVersion = 'unknown', k8s = 'unknown';
  try {
    pkgVersion = JSON.parse(readFileSync(join(a.models, '..', '..', '..', 'package.json'), 'utf8')).version;
  } catch { /* left unknown */ }
  const header = readFileSync(join(a.models, 'V1Pod.js'), 'utf8').match(/OpenAPI spec version: (\S+)/);
  if (header) k8s = header[1];
  const doc = { source: `@kubernetes/client-node ${pkgVersion}`, kubernetes: k8s, definitions: sorted };
  writeFileSync(`${a.out}.tmp`, JSON.stringify(doc));
  renameSync(`${a.out}.tmp`, a.out);
}

main().catch((e) => die(e.stack || String(e)));
