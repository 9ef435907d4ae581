// The gateway's MCP endpoint through the official MCP TypeScript SDK
// (@modelcontextprotocol/sdk, its Streamable HTTP client transport with a
// bearer token), as an agent host would use it.  Run by
// t/module/mcp-client.t, which starts nginx, Redis and the helper and passes a
// fixture file (URLs, tokens); this prints "ok - name" / "not ok - name"
// lines and "# " diagnostics that the prove file turns into its own
// results, and writes what it did to <out>/result.json for the checks
// made afterwards on the server's side (audit trail, helper).

import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport }
    from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import { discoverOAuthProtectedResourceMetadata, extractWWWAuthenticateParams }
    from '@modelcontextprotocol/sdk/client/auth.js';
import { createHash } from 'node:crypto';
import { readFileSync, writeFileSync } from 'node:fs';

import { ok, is, has, step, failures } from '../lib/tap.mjs';

const fx = JSON.parse(readFileSync(process.argv[2], 'utf8'));
const T = fx.tokens;
const result = { sandboxes: [], approvals: [] };

function text(res)
{
    return (res.content || []).filter(c => c.type === 'text')
                              .map(c => c.text).join('\n');
}

async function connect(token)
{
    const transport = new StreamableHTTPClientTransport(new URL(fx.mcp), {
        requestInit: { headers: token === null ? {}
                                : { Authorization: 'Bearer ' + token } }
    });
    const client = new Client({ name: 'veto-sandbox-test', version: '1.0.0' });
    await client.connect(transport);
    return { client, transport };
}

// The REST API, as a reviewer (or a REST client) calls it.
async function rest(method, path, token, body, headers = {})
{
    const h = { Authorization: 'Bearer ' + token, ...headers };
    let payload;
    if (body !== undefined) {
        payload = typeof body === 'string' ? body : JSON.stringify(body);
        h['Content-Type'] = 'application/json';
    }
    const res = await fetch(fx.base + path, { method, headers: h,
                                              body: payload });
    const raw = await res.text();
    let json;
    try { json = JSON.parse(raw); } catch (e) { json = undefined; }
    return { status: res.status, headers: res.headers, raw, json };
}

// The canonical request hash of docs/approvals.md, computed here from the
// REST twin a tool call stands for; context: what a sandbox adds to an
// exec's or a PATCH's ("sandbox-env <digest>").
function requestHash(method, path, query, body, context)
{
    const bodyHash = createHash('sha256').update(body).digest('hex');
    const canon = 'veto-request-v1\n' + method + '\n' + path + '\n' + query
                  + '\n' + bodyHash + '\n' + Buffer.byteLength(body) + '\n'
                  + (context ? context + '\n' : '');
    return createHash('sha256').update(canon).digest('hex');
}

// The context line of a sandbox created without env: the digest of {}.
const noEnv = 'sandbox-env ' + createHash('sha256').update('{}').digest('hex');

// JSON as the twin serializes arguments: compact, keys sorted.
function canonical(v)
{
    if (Array.isArray(v)) {
        return '[' + v.map(canonical).join(',') + ']';
    }
    if (v && typeof v === 'object') {
        return '{' + Object.keys(v).sort()
                     .map(k => JSON.stringify(k) + ':' + canonical(v[k]))
                     .join(',') + '}';
    }
    return JSON.stringify(v);
}

let agent, sb;

// ---------------------------------------------------------------- session
await step('initialize', async () => {
    agent = await connect(T.agent);
    const info = agent.client.getServerVersion();
    is(info && info.name, 'veto-sandbox', 'initialize: serverInfo names the gateway');
    ok(agent.client.getServerCapabilities().tools !== undefined,
       'initialize: the server offers tools');
    has(agent.client.getInstructions(), 'approval_id',
        'initialize: the instructions say how approvals work');
    ok(/^[0-9a-f]{32}$/.test(agent.transport.sessionId || ''),
       'initialize: an Mcp-Session-Id of 32 hex digits',
       agent.transport.sessionId);
    is(agent.transport.protocolVersion, '2025-11-25',
       'initialize: protocol version 2025-11-25 negotiated');
    result.session = agent.transport.sessionId;
});

await step('ping', async () => {
    const r = await agent.client.ping();
    ok(r && typeof r === 'object', 'ping answers');
});

await step('tools/list', async () => {
    const { tools } = await agent.client.listTools();
    const names = tools.map(t => t.name).sort();
    is(names.join(','), ['allow_hosts', 'approval_status', 'create_sandbox',
                         'describe_isolation', 'destroy_sandbox', 'exec',
                         'extend_sandbox', 'get_sandbox', 'list_profiles',
                         'list_sandboxes', 'read_file', 'upload_archive',
                         'write_file', 'delete_snapshot', 'list_snapshots',
                         'pause_sandbox', 'resume_sandbox', 'sandbox_changes',
                         'snapshot_sandbox'].sort()
                        .join(','), 'tools/list: the nineteen tools');
    const by = Object.fromEntries(tools.map(t => [t.name, t]));
    for (const t of tools) {
        ok(t.inputSchema && t.inputSchema.type === 'object'
           && t.inputSchema.additionalProperties === false,
           `tools/list: ${t.name} has an object input schema, closed`);
        ok(typeof t.description === 'string' && t.description.length > 60,
           `tools/list: ${t.name} has a description`);
        ok(t.annotations && typeof t.annotations.readOnlyHint === 'boolean',
           `tools/list: ${t.name} says whether it is read-only`);
    }
    is(by.read_file.annotations.readOnlyHint, true, 'read_file is read-only');
    is(by.list_sandboxes.annotations.readOnlyHint, true,
       'list_sandboxes is read-only');
    is(by.list_profiles.annotations.readOnlyHint, true,
       'list_profiles is read-only');
    is(by.describe_isolation.annotations.readOnlyHint, true,
       'describe_isolation is read-only');
    is(by.destroy_sandbox.annotations.destructiveHint, true,
       'destroy_sandbox is destructive');
    is(by.exec.annotations.destructiveHint, true, 'exec is destructive');
    is(by.write_file.annotations.idempotentHint, true,
       'write_file is idempotent');
    is(by.upload_archive.annotations.destructiveHint, true,
       'upload_archive is destructive (it replaces files)');
    has(by.upload_archive.description, 'veto_sandbox_mcp_max_body',
        'upload_archive states its byte bound');
    has(by.upload_archive.description, 'archive_bytes',
        'upload_archive names the policy\'s archive bound');
    is(by.upload_archive.inputSchema.properties.content.contentEncoding,
       'base64', 'upload_archive: content is base64');
    has(by.exec.description, 'notifications/progress',
        'exec says how progress carries output');
    ok(by.exec.inputSchema.required.includes('argv')
       && by.exec.inputSchema.required.includes('sandbox_id'),
       'exec requires sandbox_id and argv');
    ok(by.exec.inputSchema.properties.approval_id !== undefined,
       'exec takes an approval_id');
    has(by.exec.description, 'approval_id', 'exec says how to retry an approval');
});

// ---------------------------------------------------------------- work
await step('create_sandbox', async () => {
    const r = await agent.client.callTool({ name: 'create_sandbox',
                                            arguments: { ttl_s: 600 } });
    ok(!r.isError, 'create_sandbox: not an error', r);
    sb = r.structuredContent && r.structuredContent.id;
    ok(/^sb-[0-9a-f]{24}$/.test(sb || ''), 'create_sandbox: a sandbox id', r);
    is(r.structuredContent.state, 'ready', 'create_sandbox: ready');
    has(text(r), sb, 'create_sandbox: the text names the sandbox');
    result.sandboxes.push(sb);
});

await step('write_file', async () => {
    const script = 'import sys\nprint("hello from", sys.argv[1])\n'
                   + 'open("out/result.txt", "w").write("42\\n")\n';
    let r = await agent.client.callTool({ name: 'write_file', arguments: {
        sandbox_id: sb, path: 'src/main.py', content: script } });
    ok(!r.isError, 'write_file: not an error', r);
    is(r.structuredContent.size, Buffer.byteLength(script),
       'write_file: the size written');
    is(r.structuredContent.sha256,
       createHash('sha256').update(script).digest('hex'),
       'write_file: the sha256 of what was sent');
    r = await agent.client.callTool({ name: 'write_file', arguments: {
        sandbox_id: sb, path: 'out/.keep', content: '' } });
    ok(!r.isError, 'write_file: an empty file', r);
    const bin = Buffer.from([0, 1, 2, 0xfe, 0xff, 0x80, 10]);
    r = await agent.client.callTool({ name: 'write_file', arguments: {
        sandbox_id: sb, path: 'bin/blob', content: bin.toString('base64'),
        encoding: 'base64' } });
    ok(!r.isError && r.structuredContent.size === bin.length,
       'write_file: binary content as base64', r);
});

await step('exec', async () => {
    const r = await agent.client.callTool({ name: 'exec', arguments: {
        sandbox_id: sb, argv: ['python3', 'src/main.py', 'mcp'] } });
    ok(!r.isError, 'exec: not an error', r);
    const s = r.structuredContent;
    is(s.exit_code, 0, 'exec: exit code 0');
    is(s.stdout, 'hello from mcp\n', 'exec: stdout');
    is(s.stdout_encoding, 'utf-8', 'exec: stdout as text');
    ok(s.usage && typeof s.usage.wall_ms === 'number', 'exec: usage', s);
    has(text(r), 'Exit code 0', 'exec: the text says how it ended');
    has(text(r), 'hello from mcp', 'exec: the text has the output');
});

await step('exec: failure is a result', async () => {
    const r = await agent.client.callTool({ name: 'exec', arguments: {
        sandbox_id: sb, argv: ['sh', '-c', 'echo oops >&2; exit 7'] } });
    ok(!r.isError, 'exec: a non-zero exit is not a tool error', r);
    is(r.structuredContent.exit_code, 7, 'exec: exit code 7');
    is(r.structuredContent.stderr, 'oops\n', 'exec: stderr');
});

await step('exec: long output, head and tail', async () => {
    const r = await agent.client.callTool({ name: 'exec', arguments: {
        sandbox_id: sb,
        argv: ['python3', '-c',
               'print("START"); print("x" * 100000); print("END")'] } });
    const s = r.structuredContent;
    ok(!r.isError && s.stdout && typeof s.stdout === 'object',
       'exec: long stdout comes as head and tail', r.structuredContent);
    ok(s.stdout.head.startsWith('START'), 'exec: the head is the start');
    ok(s.stdout.tail.endsWith('END\n'), 'exec: the tail is the end');
    is(s.stdout_bytes, 6 + 100001 + 4, 'exec: the whole size is said');
    ok(s.stdout_omitted_bytes > 0 && s.stdout.head.length
       + s.stdout.tail.length + s.stdout_omitted_bytes === 100011,
       'exec: what is left out is counted', s.stdout_omitted_bytes);
    ok(s.stdout.head.length + s.stdout.tail.length <= fx.reply_bytes,
       'exec: within veto_sandbox_mcp_reply_bytes');
    has(text(r), 'bytes left out here', 'exec: the text says so');
});

await step('exec: progress notifications carry the output', async () => {
    // what arrives, in order: each notification, then the result.  The
    // command waits for a file the client writes only once it has the
    // first notification: it ends only if progress comes as it runs.
    const seen = [];
    let go = null;
    const r = await agent.client.callTool({ name: 'exec', arguments: {
        sandbox_id: sb, timeout_s: 25,
        argv: ['sh', '-c', 'echo first; i=0; until [ -f go ]; do '
                           + 'sleep 0.05; i=$((i+1)); if [ $i -gt 400 ]; '
                           + 'then echo no-go >&2; exit 9; fi; done; '
                           + 'echo second >&2; echo third'] } },
        undefined, { onprogress: p => {
            seen.push({ kind: 'progress', p });
            if (go === null && p.message === 'stdout: first\n') {
                go = agent.client.callTool({ name: 'write_file', arguments: {
                    sandbox_id: sb, path: 'go', content: 'go' } });
            }
        } });
    seen.push({ kind: 'result', r });
    ok(!r.isError, 'progress exec: not an error', r);
    ok(go !== null && !(await go).isError,
       'progress exec: the first notification came while the command ran '
       + '(the client answered it)');
    is(r.structuredContent.exit_code, 0,
       'progress exec: the command saw the answer and ended', r);
    const notes = seen.filter(e => e.kind === 'progress').map(e => e.p);
    is(seen[seen.length - 1].kind, 'result',
       'progress exec: the notifications came before the result');
    is(notes.filter(n => n.message.startsWith('stdout')).map(n => n.message)
            .join('|'), 'stdout: first\n|stdout: third\n',
       'progress exec: stdout\'s messages carry its real output');
    is(notes.filter(n => n.message.startsWith('stderr')).map(n => n.message)
            .join('|'), 'stderr: second\n',
       'progress exec: stderr\'s too');
    ok(notes.every((n, i) => i === 0 || n.progress > notes[i - 1].progress),
       'progress exec: progress grows', notes);
    is(notes[notes.length - 1].progress, 6 + 7 + 6,
       'progress exec: progress is the bytes written');
    const s = r.structuredContent;
    is(s.stdout, 'first\nthird\n', 'progress exec: the result has stdout');
    is(s.stderr, 'second\n', 'progress exec: the result has stderr');
});

await step('exec: progress is bounded', async () => {
    const notes = [];
    const r = await agent.client.callTool({ name: 'exec', arguments: {
        sandbox_id: sb,
        argv: ['python3', '-c',
               'import sys\nfor i in range(200):\n    sys.stdout.write('
               + '"%04d" % i + "y" * 995 + "\\n"); sys.stdout.flush()\n'
               + 'print("END")'] } },
        undefined, { onprogress: p => notes.push(p) });
    ok(!r.isError, 'bounded progress: not an error', r);
    const carried = notes.filter(n => n.message.startsWith('stdout: ')
                                      && !/bytes written so far/.test(n.message))
                         .map(n => n.message.slice(8)).join('');
    ok(carried.length > 0 && carried.length <= fx.reply_bytes,
       'bounded progress: at most veto_sandbox_mcp_reply_bytes of output '
       + 'carried', carried.length);
    ok(carried.startsWith('0000yyy'), 'bounded progress: the start carried');
    ok(notes.some(n => /not carried in progress/.test(n.message)),
       'bounded progress: then the messages say the rest is not carried',
       notes.slice(-3));
    // 200 flushed writes of 1000 bytes, each maybe its own chunk: past
    // the bound at most one message per reply_bytes written
    const quiet = notes.filter(n => /bytes written so far/.test(n.message));
    ok(quiet.length >= 1
       && quiet.length <= Math.ceil(200 * 1000 / fx.reply_bytes) + 1,
       'bounded progress: not one per chunk past the bound', quiet.length);
    const s = r.structuredContent;
    // head and tail of reply_bytes kept, as for a plain exec's
    // output_bytes; the rest counted as left out
    is(s.stdout_dropped_bytes, 200 * 1000 + 4 - fx.reply_bytes,
       'bounded progress: what was left out is counted');
    is(s.stdout_truncated, true, 'bounded progress: and said to be');
    ok(s.stdout && s.stdout.tail && s.stdout.tail.endsWith('END\n'),
       'bounded progress: the result has the end', s.stdout);
    ok(s.stdout.head.startsWith('0000'), 'bounded progress: and the start');
});

await step('upload_archive, then exec over its files', async () => {
    let r = await agent.client.callTool({ name: 'upload_archive', arguments: {
        sandbox_id: sb, path: 'proj', content: fx.archive_b64 } });
    ok(!r.isError, 'upload_archive: not an error', r);
    const s = r.structuredContent;
    is(s.format, 'tar.gz', 'upload_archive: the format told by its bytes');
    is(s.size, Buffer.from(fx.archive_b64, 'base64').length,
       'upload_archive: the size of the archive');
    is(s.sha256, createHash('sha256')
                 .update(Buffer.from(fx.archive_b64, 'base64')).digest('hex'),
       'upload_archive: its sha256');
    has(text(r), 'proj', 'upload_archive: the text names the directory');
    r = await agent.client.callTool({ name: 'exec', arguments: {
        sandbox_id: sb, argv: ['sh', 'run.sh'], cwd: 'proj' } });
    is(r.structuredContent && r.structuredContent.stdout,
       'from the archive: hello\nlib/util.txt ok\n',
       'exec over the archive\'s files', r);
    r = await agent.client.callTool({ name: 'upload_archive', arguments: {
        sandbox_id: sb, content: 'not base64 at all!' } });
    ok(r.isError, 'upload_archive: bad base64 is a tool error', r);
    has(text(r), 'base64', 'upload_archive: ... naming the problem');
});

await step('read_file', async () => {
    let r = await agent.client.callTool({ name: 'read_file', arguments: {
        sandbox_id: sb, path: 'out/result.txt' } });
    ok(!r.isError, 'read_file: not an error', r);
    is(r.structuredContent.content, '42\n', 'read_file: what the exec wrote');
    is(r.structuredContent.content_encoding, 'utf-8', 'read_file: as text');
    is(r.structuredContent.untrusted, true, 'read_file: marked untrusted');
    has(text(r), 'untrusted', 'read_file: the text warns it is untrusted');
    r = await agent.client.callTool({ name: 'read_file', arguments: {
        sandbox_id: sb, path: 'bin/blob' } });
    is(r.structuredContent.content_encoding, 'base64',
       'read_file: binary as base64');
    is(r.structuredContent.content,
       Buffer.from([0, 1, 2, 0xfe, 0xff, 0x80, 10]).toString('base64'),
       'read_file: the bytes round-trip');
    r = await agent.client.callTool({ name: 'read_file', arguments: {
        sandbox_id: sb, path: 'out/.keep' } });
    ok(!r.isError && r.structuredContent.content === ''
       && r.structuredContent.content_encoding === 'utf-8'
       && r.structuredContent.content_bytes === 0,
       'read_file: an empty file is empty text', r.structuredContent);
    r = await agent.client.callTool({ name: 'read_file', arguments: {
        sandbox_id: sb, path: 'no/such/file' } });
    ok(r.isError, 'read_file: a missing file is a tool error', r);
});

await step('bad arguments are tool errors', async () => {
    let r = await agent.client.callTool({ name: 'exec', arguments: {
        sandbox_id: sb, argv: [] } });
    ok(r.isError, 'exec with an empty argv: isError', r);
    has(text(r), 'argv', 'exec with an empty argv: names the argument');
    r = await agent.client.callTool({ name: 'exec', arguments: {
        sandbox_id: 'sb-nope', argv: ['true'] } });
    ok(r.isError, 'exec with a malformed sandbox id: isError', r);
    has(text(r), 'sandbox_id', '... naming sandbox_id');
    r = await agent.client.callTool({ name: 'exec', arguments: {
        sandbox_id: 'sb-0123456789abcdef01234567', argv: ['true'] } });
    ok(r.isError, 'exec in a sandbox that does not exist: isError', r);
    has(text(r), 'not_found', '... not found');
    r = await agent.client.callTool({ name: 'create_sandbox', arguments: {
        limits: { memory_mb: 1 << 20 } } });
    ok(r.isError, 'create over the policy ceiling: isError', r);
    has(text(r), 'over_ceiling', '... over_ceiling');
    has(text(r), 'memory_mb', '... naming the limit');
    r = await agent.client.callTool({ name: 'exec', arguments: {
        sandbox_id: sb, argv: ['true'], background: true } });
    ok(r.isError, 'an unknown argument: isError', r);
    has(text(r), 'background', '... naming it');
    let threw = false;
    try {
        await agent.client.callTool({ name: 'rm_rf', arguments: {} });
    } catch (e) {
        threw = /-32602|Unknown tool/.test(String(e.message));
    }
    ok(threw, 'an unknown tool is a protocol error (-32602)');
});

// ---------------------------------------------------------------- approval
const risky = { sandbox_id: null, argv: ['sh', '-c', 'echo approved-run > out/approved.txt; echo done'],
                timeout_s: 10 };
let apr;

await step('approval required', async () => {
    risky.sandbox_id = sb;
    const r = await agent.client.callTool({ name: 'exec', arguments: risky });
    ok(!r.isError, 'approval required: a result, not an error', r);
    const s = r.structuredContent;
    is(s.status, 'approval_required', 'approval required: status');
    apr = s.approval_id;
    ok(/^apr_[0-9a-f]{32}$/.test(apr || ''), 'approval required: an id', s);
    has(text(r), 'Approval required', 'approval required: said plainly');
    has(text(r), apr, 'approval required: the text gives the id');
    has(text(r), 'approval_status', 'approval required: says how to follow it');
    has(text(r), 'same arguments', 'approval required: says how to retry');
    is(s.retry && s.retry.tool, 'exec', 'approval required: the tool to retry');
    // the approval binds the REST twin's canonical request
    const body = canonical({ argv: risky.argv, timeout_s: risky.timeout_s });
    is(s.request_hash, requestHash('POST', `/v1/sandboxes/${sb}/exec`, '',
                                   body, noEnv),
       'approval required: bound to the REST twin (POST .../exec, the '
       + 'arguments as sorted compact JSON, the sandbox\'s env)');
    result.approvals.push(apr);

    const st = await agent.client.callTool({ name: 'approval_status',
                                             arguments: { approval_id: apr } });
    is(st.structuredContent.state, 'pending', 'approval_status: pending');
    has(text(st), 'not decided', 'approval_status: says no one decided yet');

    const early = await agent.client.callTool({ name: 'exec', arguments: {
        ...risky, approval_id: apr } });
    ok(early.isError, 'retry before a human decided: isError', early);
    has(text(early), 'approval_pending', '... not approved');
    const out = await agent.client.callTool({ name: 'read_file', arguments: {
        sandbox_id: sb, path: 'out/approved.txt' } });
    ok(out.isError, 'nothing ran before the approval', out);
});

await step('a reviewer approves through the REST API', async () => {
    const self = await rest('POST', `/v1/approvals/${apr}/approve`, T.both,
                            { reason: 'my own' });
    is(self.status, 403, 'the requester cannot approve its own request');
    const r = await rest('POST', `/v1/approvals/${apr}/approve`, T.reviewer,
                         { reason: 'looks fine' });
    is(r.status, 200, 'the reviewer approves: 200');
    const st = await agent.client.callTool({ name: 'approval_status',
                                             arguments: { approval_id: apr } });
    is(st.structuredContent.state, 'approved', 'approval_status: approved');
    has(text(st), 'same arguments', 'approval_status: says how to retry');
});

await step('retry with the approval', async () => {
    const wrong = await agent.client.callTool({ name: 'exec', arguments: {
        ...risky, argv: ['sh', '-c', 'echo approved-run-but-other'],
        approval_id: apr } });
    ok(wrong.isError, 'other arguments with the approval: isError', wrong);
    has(text(wrong), 'approval_mismatch', '... approval_mismatch');

    // the same arguments, another key order
    const args = { approval_id: apr, timeout_s: 10, argv: risky.argv,
                   sandbox_id: sb };
    const r = await agent.client.callTool({ name: 'exec', arguments: args });
    ok(!r.isError, 'the same call with the approval runs', r);
    is(r.structuredContent.stdout, 'done\n', 'its output');
    const again = await agent.client.callTool({ name: 'exec', arguments: args });
    ok(again.isError, 'the approval is used once', again);
    has(text(again), 'approval_used', '... used');
    const out = await agent.client.callTool({ name: 'read_file', arguments: {
        sandbox_id: sb, path: 'out/approved.txt' } });
    is(out.structuredContent && out.structuredContent.content,
       'approved-run\n', 'the approved command ran once');
});

await step('an MCP approval is the REST request\'s', async () => {
    // asked through MCP, approved, used through REST with the twin's body
    const args = { sandbox_id: sb, argv: ['sh', '-c', 'echo via-rest'] };
    const r = await agent.client.callTool({ name: 'exec', arguments: args });
    const id = r.structuredContent && r.structuredContent.approval_id;
    ok(id, 'asked through MCP', r);
    result.approvals.push(id);
    await rest('POST', `/v1/approvals/${id}/approve`, T.reviewer, {});
    const used = await rest('POST', `/v1/sandboxes/${sb}/exec`, T.agent,
                            canonical({ argv: args.argv }),
                            { 'Veto-Approval': id });
    is(used.status, 200, 'used through REST with the same request');
    is(used.json && used.json.stdout, 'via-rest\n', '... and it ran');

    // and the other way: asked through REST, used through MCP
    const asked = await rest('POST', `/v1/sandboxes/${sb}/exec`, T.agent,
                             canonical({ argv: ['sh', '-c', 'echo via-mcp'] }));
    is(asked.status, 202, 'asked through REST: 202');
    const id2 = asked.json && asked.json.approval_id;
    result.approvals.push(id2);
    await rest('POST', `/v1/approvals/${id2}/approve`, T.reviewer, {});
    const r2 = await agent.client.callTool({ name: 'exec', arguments: {
        argv: ['sh', '-c', 'echo via-mcp'], sandbox_id: sb,
        approval_id: id2 } });
    ok(!r2.isError, 'used through MCP', r2);
    is(r2.structuredContent && r2.structuredContent.stdout, 'via-mcp\n',
       '... and it ran');
});

await step('network', async () => {
    let r = await agent.client.callTool({ name: 'allow_hosts', arguments: {
        sandbox_id: sb, hosts: ['git.example.test'] } });
    const s = r.structuredContent || {};
    is(s.status, 'approval_required',
       'allow_hosts with a host the policy asks a human about: approval '
       + 'required', r);
    is(s.request_hash,
       requestHash('PATCH', `/v1/sandboxes/${sb}`, '',
                   canonical({ network: { add: ['git.example.test'] } }),
                   noEnv),
       'allow_hosts: bound to the REST twin (PATCH, {"network":{"add":...}}, '
       + 'the sandbox\'s env)');
    is(s.summary && s.summary.irreversible, true,
       'allow_hosts: the summary marks egress irreversible', s);
    result.approvals.push(s.approval_id);
    r = await agent.client.callTool({ name: 'allow_hosts', arguments: {
        sandbox_id: sb, hosts: ['evil.example.test'] } });
    ok(r.isError, 'allow_hosts with a host beyond the policy: isError', r);
    has(text(r), 'network_not_allowed', '... network_not_allowed');
    has(text(r), 'evil.example.test', '... naming the entry');
    r = await agent.client.callTool({ name: 'allow_hosts', arguments: {
        sandbox_id: sb } });
    ok(r.isError, 'allow_hosts without hosts: isError', r);
    has(text(r), 'hosts is required', '... saying what is missing');
    r = await agent.client.callTool({ name: 'create_sandbox', arguments: {
        network: { allow: ['evil.example.test'] } } });
    ok(r.isError, 'create_sandbox with a host beyond the policy: isError', r);
    has(text(r), 'evil.example.test', '... naming the entry');
});

await step('list_profiles', async () => {
    const r = await agent.client.callTool({ name: 'list_profiles' });
    ok(!r.isError, 'list_profiles: not an error', r);
    const def = r.structuredContent && r.structuredContent.profiles
                && r.structuredContent.profiles.find(p => p.name === 'default');
    ok(def && def.default === true && def.kind === 'directory',
       'list_profiles: the host profile, the default', r);
    has(text(r), 'default (directory)', 'list_profiles: the text names it');
});

await step('describe_isolation', async () => {
    const r = await agent.client.callTool({ name: 'describe_isolation' });
    ok(!r.isError, 'describe_isolation: not an error', r);
    const iso = r.structuredContent && r.structuredContent.isolation;
    ok(iso && Array.isArray(iso.namespaces) && iso.namespaces.includes('user')
       && iso.seccomp === 'allowlist' && /^v[12]$/.test(iso.cgroup),
       'describe_isolation: the layers in force', r);
    has(text(r), 'cgroup ' + (iso ? iso.cgroup : '?') + ' limits',
        'describe_isolation: the text names the cgroup version');
    has(text(r), 'does not promise', 'describe_isolation: and its limits');
});

await step('scope', async () => {
    const rev = await connect(T.reviewer);
    const r = await rev.client.callTool({ name: 'exec', arguments: {
        sandbox_id: sb, argv: ['true'] } });
    ok(r.isError, 'a reviewer token cannot exec: isError', r);
    has(text(r), 'insufficient_scope', '... insufficient_scope');
    has(text(r), 'sandbox:exec', '... naming the scope');
    const l = await rev.client.callTool({ name: 'list_sandboxes' });
    ok(l.isError, 'a reviewer token lists no sandboxes', l);
    await rev.transport.terminateSession();
    await rev.client.close();
});

// ---------------------------------------------------------------- end
await step('list and destroy', async () => {
    let r = await agent.client.callTool({ name: 'list_sandboxes' });
    ok(!r.isError && r.structuredContent.sandboxes.some(s => s.id === sb),
       'list_sandboxes: ours is there', r);
    r = await agent.client.callTool({ name: 'get_sandbox',
                                      arguments: { sandbox_id: sb } });
    is(r.structuredContent && r.structuredContent.id, sb, 'get_sandbox');
    r = await agent.client.callTool({ name: 'destroy_sandbox',
                                      arguments: { sandbox_id: sb } });
    ok(!r.isError, 'destroy_sandbox: not an error', r);
    is(r.structuredContent.state, 'terminated', 'destroy_sandbox: terminated');
    ok(r.structuredContent.confirmed && r.structuredContent.confirmed.files,
       'destroy_sandbox: the files confirmed gone');
    r = await agent.client.callTool({ name: 'list_sandboxes' });
    ok(!r.structuredContent.sandboxes.some(s => s.id === sb),
       'list_sandboxes: gone');
});

await step('end the session', async () => {
    await agent.transport.terminateSession();
    ok(agent.transport.sessionId === undefined, 'DELETE ended the session');
    const res = await fetch(fx.mcp, { method: 'POST', headers: {
        Authorization: 'Bearer ' + T.agent, 'Content-Type': 'application/json',
        Accept: 'application/json, text/event-stream',
        'Mcp-Session-Id': result.session,
        'MCP-Protocol-Version': '2025-11-25' },
        body: JSON.stringify({ jsonrpc: '2.0', id: 9, method: 'ping' }) });
    is(res.status, 404, 'the ended session is not found');
    await agent.client.close();
});

// ---------------------------------------------------------------- tokens
for (const [what, token] of [['forged', T.forged], ['expired', T.expired],
                             ['missing', null]]) {
    await step(`${what} token`, async () => {
        let err;
        try {
            const c = await connect(token);
            await c.client.close();
        } catch (e) {
            err = e;
        }
        ok(err !== undefined, `${what} token: the SDK cannot connect`);
        ok(err && (err.code === 401 || /401/.test(String(err.message))),
           `${what} token: 401`, String(err && err.message));

        const res = await fetch(fx.mcp, { method: 'POST', headers: {
            ...(token === null ? {} : { Authorization: 'Bearer ' + token }),
            'Content-Type': 'application/json',
            Accept: 'application/json, text/event-stream' },
            body: JSON.stringify({ jsonrpc: '2.0', id: 1, method: 'initialize',
                                   params: { protocolVersion: '2025-11-25',
                                             capabilities: {},
                                             clientInfo: { name: 'x',
                                                           version: '1' } } })
        });
        is(res.status, 401, `${what} token: HTTP 401`);
        const { resourceMetadataUrl } = extractWWWAuthenticateParams(res);
        is(resourceMetadataUrl && resourceMetadataUrl.href, fx.metadata,
           `${what} token: WWW-Authenticate names the resource metadata`);
        ok(res.headers.get('mcp-session-id') === null,
           `${what} token: no session`);
    });
}

await step('protected resource metadata', async () => {
    const md = await discoverOAuthProtectedResourceMetadata(fx.mcp,
                         { resourceMetadataUrl: new URL(fx.metadata) });
    is(md.resource, fx.mcp, 'metadata: the resource is the MCP endpoint');
    ok(Array.isArray(md.authorization_servers)
       && md.authorization_servers[0] === fx.issuer,
       'metadata: the configured issuer is the authorization server', md);
    ok(md.scopes_supported.includes('sandbox:exec'),
       'metadata: the scopes the tools take');
    const root = await discoverOAuthProtectedResourceMetadata(fx.mcp);
    is(root.resource, fx.mcp, 'metadata: found by well-known discovery too');
});

writeFileSync(fx.out + '/result.json', JSON.stringify(result));
console.log(`# ${failures()} failures`);
process.exit(failures() ? 1 : 0);
