// The approval page in headless Debian chromium, driven by playwright-core
// (never a downloaded browser).  Run by t/ui/approval-page.t, which starts
// the stack, sets the scene and passes a fixture file; this prints
// "ok - name" / "not ok - name" lines and "# " diagnostics, which that
// test turns into its own results.  Agents' requests are made here with
// fetch against the same gateway, so they happen while the page is open.

import { chromium } from 'playwright-core';
import { readFileSync, writeFileSync } from 'node:fs';
import { execFileSync } from 'node:child_process';

import { ok, is, has, step, failures } from '../lib/tap.mjs';

const fx = JSON.parse(readFileSync(process.argv[2], 'utf8'));
const T = fx.tokens;
const WAIT = 15000;         // polls every 4 s; Redis timeout 1 s
const result = {};

// ---- the agents' side: the API, as an agent would call it

async function api(method, path, token, body, headers = {})
{
    const h = { ...headers };
    if (token) {
        h.Authorization = 'Bearer ' + token;
    }
    if (body !== undefined) {
        h['Content-Type'] = 'application/json';
    }
    const r = await fetch(fx.base + path, {
        method, headers: h,
        body: body === undefined ? undefined : JSON.stringify(body),
    });
    const text = await r.text();
    let json = null;
    try {
        json = JSON.parse(text);
    } catch {
        json = null;
    }
    return { status: r.status, json, text };
}

async function askExec(token, sandbox, body)
{
    const r = await api('POST', `/v1/sandboxes/${sandbox}/exec`, token, body);
    if (r.status !== 202) {
        throw new Error(`expected 202 for ${JSON.stringify(body)}, got `
                        + `${r.status}: ${r.text}`);
    }
    return r.json.approval_id;
}

async function stateOf(id)
{
    return (await api('GET', `/v1/approvals/${id}`, T.rev2)).json?.state;
}

// ---- the browser

const ctx = await chromium.launchPersistentContext(fx.out + '/profile', {
    executablePath: fx.chromium,
    headless: true,
    args: ['--no-sandbox', '--headless', '--disable-gpu', '--disable-quic',
           '--no-first-run', '--disable-background-networking',
           '--disable-component-update', '--disable-sync'],
    viewport: { width: 1280, height: 800 },
});

// CSP violations, as the page would see them (a payload parsed as HTML
// would be blocked, and reported here)
await ctx.addInitScript(() => {
    window.__csp = [];
    document.addEventListener('securitypolicyviolation', (e) => {
        window.__csp.push(e.violatedDirective + ' ' + e.blockedURI);
    });
});

const foreign = [];

async function newPage(viewport)
{
    const page = await ctx.newPage();
    if (viewport) {
        await page.setViewportSize(viewport);
    }
    const watch = { dialogs: [], errors: [] };
    page.on('dialog', (d) => {
        watch.dialogs.push(d.type() + ': ' + d.message());
        d.dismiss().catch(() => {});
    });
    page.on('console', (m) => {
        if (m.type() === 'error' || m.type() === 'warning') {
            watch.errors.push(m.type() + ': ' + m.text());
        }
    });
    page.on('pageerror', (e) => watch.errors.push('pageerror: ' + e.message));
    page.on('request', (r) => {
        if (!r.url().startsWith(fx.base + '/')) {
            foreign.push(r.url());
        }
    });
    return { page, watch };
}

async function signIn(page, token)
{
    await page.goto(fx.base + '/review/');
    await page.waitForSelector('#token');
    await page.fill('#token', token);
    await page.press('#token', 'Enter');
}

async function text(page, sel)
{
    return (await page.locator(sel).first().textContent({ timeout: WAIT })) ?? '';
}

async function go(page, hash)
{
    await page.evaluate((h) => { location.hash = h; }, hash);
}

async function openApproval(page, id)
{
    await go(page, '#/approval/' + id);
    await page.waitForSelector('#detail[aria-busy="false"]', { timeout: WAIT });
}

async function waitText(page, sel, part)
{
    await page.waitForFunction(([s, p]) => {
        const el = document.querySelector(s);
        return el && !el.hidden && el.textContent.includes(p);
    }, [sel, part], { timeout: WAIT });
}

async function itemIds(page)
{
    return page.$$eval('#items .item', (els) => els.map((e) => e.dataset.id));
}

// ===================================================================

const { page, watch } = await newPage();

await step('token form', async () => {
    await page.goto(fx.base + '/review/');
    await page.waitForSelector('#token-form');
    ok(true, 'the page asks for a token first');

    await page.press('#token', 'Enter');
    await waitText(page, '#token-error', 'Paste your reviewer token');
    ok(true, 'an empty token is refused on the page');

    await page.fill('#token', 'not a token');
    await page.press('#token', 'Enter');
    await waitText(page, '#token-error', 'does not look like a token');
    ok(true, 'a malformed token is refused on the page');

    await page.fill('#token', T.expired);
    await page.press('#token', 'Enter');
    await waitText(page, '#token-why', 'refused the token');
    ok(true, 'an expired token: the gateway refuses it and the page asks again');
    is(await page.evaluate(() => sessionStorage.length), 0,
       '... and forgets it');

    await signIn(page, T.rev);
    await waitText(page, '#list-title', 'Pending approvals');
    ok(true, 'the reviewer token opens the pending list');
    is(await page.evaluate(() => sessionStorage.getItem('veto-review-token')),
       T.rev, 'the token is kept in sessionStorage');
    is(await page.evaluate(() => document.cookie), '', 'no cookie');
    ok(!page.url().includes(T.rev.split('.')[2]), 'not in the URL');
    is(await text(page, '#who-sub'), 'human-1', 'signed in as human-1');
});

await step('list', async () => {
    await page.waitForSelector('#list[aria-busy="false"]', { timeout: WAIT });
    const ids = await itemIds(page);
    is(ids.length, 20, 'the first page holds 20');
    const all = (await api('GET', '/v1/approvals?state=pending', T.rev)).json.approvals;
    const newest = all.slice().sort((a, b) => b.created_ms - a.created_ms)
                      .slice(0, 20).map((a) => a.id);
    is(JSON.stringify(ids), JSON.stringify(newest), 'newest first');
    ok(ids[0] === fx.rich, 'the newest seed is on top');
    has(await text(page, '#page-info'), 'Page 1 of 2', 'two pages');
    const meta = await text(page, `.item[data-id="${fx.rich}"] .item-meta`);
    ok(/requested \d+ (s|min) ago · 1[45] min left · 0 of 1 approval/.test(meta),
       'age and time left', meta);
    const chips = await text(page, `.item[data-id="${fx.rich}"] .item-top`);
    has(chips, 'network egress', 'risk chip: network egress');
    has(chips, 'irreversible', 'risk chip: irreversible');

    await page.click('#page-older');
    await page.waitForFunction(() => document.querySelector('#page-info')
                                        .textContent.includes('Page 2 of 2'));
    const p2 = await itemIds(page);
    is(p2.length, all.length - 20, 'the second page holds the rest');
    ok(p2.includes(fx.xss_seed), 'the oldest is on the last page');
    await page.click('#page-newer');
    await page.waitForFunction(() => document.querySelector('#page-info')
                                        .textContent.includes('Page 1 of 2'));

    ok(!all.some((a) => a.id === fx.globex_approval)
       && !(await itemIds(page)).includes(fx.globex_approval),
       "another tenant's approval is not listed");

    await page.selectOption('#f-agent', 'agent-bulk');
    await page.waitForFunction(() => document.querySelector('#page-info')
                                        .textContent.includes('of 2'));
    const agents = await page.$$eval('#items .item-agent b',
                                     (els) => els.map((e) => e.textContent));
    ok(agents.length === 20 && agents.every((a) => a === 'agent-bulk'),
       'filter by agent', agents);
    await page.selectOption('#f-action', 'sandbox.exec');
    await waitText(page, '#list-state', 'No pending approvals match these filters');
    ok(true, 'filter by action: nothing of that agent matches');
    await page.selectOption('#f-action', 'sandbox.create');
    await page.waitForSelector('#items .item');
    await page.selectOption('#f-agent', '');
    await page.waitForFunction(() => document.querySelector('#page-info')
                                        .textContent.includes(' 24 pending'));
    ok(true, 'filter by action: the 24 creates');
    await page.selectOption('#f-action', '');
});

// The approvals list does not page yet (one reply of up to 1000); the
// hardening work makes it cursor-paged.  Here the test splits the real
// reply into two pages with a "next" cursor, to show that the page asks
// for the next page with it and shows every request once, in order.
await step('the list follows a next cursor', async () => {
    const p = await newPage();
    const asked = [];
    await p.page.route(/\/v1\/approvals\?/, async (route) => {
        const url = new URL(route.request().url());
        asked.push(url.search);
        const cursor = url.searchParams.get('cursor');
        url.searchParams.delete('cursor');
        const res = await route.fetch({ url: url.toString() });
        const all = (await res.json()).approvals;
        await route.fulfill({
            response: res,
            json: cursor === null ? { approvals: all.slice(0, 10), next: 'p2' }
                : cursor === 'p2' ? { approvals: all.slice(10), next: null }
                : { approvals: [] },
        });
    });
    // hold the first reply back, to see the loading state
    let release;
    const held = new Promise((r) => { release = r; });
    await p.page.route(/\/v1\/approvals\?/, async (route) => {
        await held;
        await route.fallback();
    });
    await signIn(p.page, T.rev);
    await waitText(p.page, '#list-state', 'Loading…');
    is(await p.page.getAttribute('#list', 'aria-busy'), 'true', 'loading: said so, busy');
    release();
    await p.page.waitForSelector('#list[aria-busy="false"]');
    await p.page.waitForSelector('#items .item');
    const all = (await api('GET', '/v1/approvals?state=pending', T.rev)).json.approvals
        .sort((a, b) => b.created_ms - a.created_ms).map((a) => a.id);
    is(JSON.stringify(await itemIds(p.page)), JSON.stringify(all.slice(0, 10)),
       'the first server page: its 10, in order');
    has(await text(p.page, '#page-info'), '10+ pending', 'more to come, said so');
    ok(await p.page.isEnabled('#page-older'), 'Older is offered');
    await p.page.click('#page-older');
    await p.page.waitForFunction(() =>
        document.querySelectorAll('#items .item').length === 20);
    ok(asked.some((q) => q.includes('cursor=p2')), 'the next page asked for by its cursor',
       asked);
    is(JSON.stringify(await itemIds(p.page)), JSON.stringify(all.slice(0, 20)),
       'page 1 now full: nothing skipped');
    await p.page.click('#page-older');
    await p.page.waitForFunction(() => document.querySelector('#page-info')
                                        .textContent.includes('Page 2 of 2'));
    is(JSON.stringify(await itemIds(p.page)), JSON.stringify(all.slice(20)),
       'page 2: the rest');
    ok(await p.page.isDisabled('#page-older'), 'no page after the last');
    await p.page.close();
});

await step('a new request appears without a reload', async () => {
    await page.evaluate(() => { window.__marker = 'same-document'; });
    result.approved = await askExec(T.agent, fx.sandbox, {
        argv: ['sh', '-c', 'echo approved-by-page'], cwd: '/workspace',
        env: { GREETING: 'hello' },
    });
    await page.waitForSelector(`#items .item[data-id="${result.approved}"]`,
                               { timeout: WAIT });
    ok(true, 'the pending approval appeared');
    is(await page.evaluate(() => window.__marker), 'same-document',
       'without a reload');
    is((await itemIds(page))[0], result.approved, 'on top');

    // more for the screenshot: a push, an export
    await askExec(T.agent2, fx.sandbox2, { argv: ['git', 'push', 'origin', 'main'],
                                           env: { GIT_SSH_COMMAND: 'ssh -i key' } });
    const r = await api('GET', `/v1/sandboxes/${fx.sandbox}/files?path=out.txt`, T.agent);
    is(r.status, 202, 'an export needs approval');
    result.export = r.json.approval_id;
    result.push_pending = true;
    await page.waitForSelector(`#items .item[data-id="${result.export}"]`,
                               { timeout: WAIT });
    await page.mouse.move(0, 0);
    await page.screenshot({ path: fx.out + '/list.png' });
});

await step('the detail view of a real request', async () => {
    await page.click(`#items .item[data-id="${result.approved}"]`);
    await page.waitForSelector('#detail[aria-busy="false"]', { timeout: WAIT });
    is(await text(page, '#detail-title'), 'Run a command', 'title');
    is(await text(page, '#argv'), "sh -c 'echo approved-by-page'", 'argv, shell-quoted');
    has(await text(page, '#what'), '/workspace', 'cwd');
    has(await text(page, '#env-table'), 'GREETING', 'env names');
    const a = (await api('GET', `/v1/approvals/${result.approved}`, T.rev)).json;
    is(await text(page, '#hash'), a.hash, 'the request hash');
    await waitText(page, '#where', fx.sandbox);
    ok(true, 'the sandbox, found in the audit trail');
    await waitText(page, '#earlier', 'approved by human-1, then used');
    const earlier = await text(page, '#earlier');
    has(earlier, "sh -c 'make test'", 'history: the earlier approved command');
    has(earlier, 'denied by human-2: “not on Fridays”', 'history: the earlier denial and its reason');
    has(earlier, 'git push --force', 'history: the denied command');
    has(await text(page, '#history-summary'), '3 earlier approval requests by agent-1 in ' + fx.sandbox + ': 1 pending, 1 denied, 1 consumed.',
        'history: counted');
    await page.mouse.move(0, 0);
    await page.screenshot({ path: fx.out + '/detail.png', fullPage: true });
});

await step("approve, then the agent's retry runs", async () => {
    await page.fill('#reason', 'prints a greeting');
    await page.click('#approve');
    await waitText(page, '#outcome-text', 'Approved');
    await waitText(page, '#state-badge', 'approved');
    ok(true, 'the page shows the outcome and the new state');
    const r = await api('POST', `/v1/sandboxes/${fx.sandbox}/exec`, T.agent, {
        argv: ['sh', '-c', 'echo approved-by-page'], cwd: '/workspace',
        env: { GREETING: 'hello' },
    }, { 'Veto-Approval': result.approved });
    is(r.status, 200, "the agent's retry with the approval runs");
    is(r.json?.stdout, 'approved-by-page\n', '... and its output is there');
    await waitText(page, '#state-badge', 'consumed');
    ok(true, 'the page shows it used, without a reload');
});

await step('deny needs a reason', async () => {
    result.denied = await askExec(T.agent, fx.sandbox,
                                  { argv: ['sh', '-c', 'rm -rf /workspace/*'] });
    await openApproval(page, result.denied);
    await page.click('#deny');
    await waitText(page, '#reason-error', 'A denial needs a reason');
    is(await page.evaluate(() => document.activeElement.id), 'reason',
       'focus moves to the reason');
    is(await stateOf(result.denied), 'pending', 'nothing was sent: still pending');
    await page.fill('#reason', '   ');
    await page.click('#deny');
    await waitText(page, '#reason-error', 'A denial needs a reason');
    is(await stateOf(result.denied), 'pending', 'white space is no reason');

    result.deny_reason = 'wipes the workspace; ask the owner first';
    await page.fill('#reason', result.deny_reason);
    await page.click('#deny');
    await waitText(page, '#outcome-text', 'Denied');
    await waitText(page, '#state-badge', 'denied');
    is(await text(page, '#deny-reason'), result.deny_reason, 'the reason is shown');
    const r = await api('POST', `/v1/sandboxes/${fx.sandbox}/exec`, T.agent,
                        { argv: ['sh', '-c', 'rm -rf /workspace/*'] },
                        { 'Veto-Approval': result.denied });
    is(r.status, 403, "the agent's retry is refused");
});

await step('a file export needs a confirmation', async () => {
    await openApproval(page, result.export);
    ok(await page.locator('[data-risk="export"]').count() === 1, 'export is flagged');
    has(await text(page, '#file-path'), 'out.txt', 'the path');
    await page.click('#approve');
    await page.waitForSelector('#confirm[open]');
    has(await text(page, '#confirm-list'), 'out.txt', 'the dialog names the file');
    is(await page.evaluate(() => document.activeElement.id), 'confirm-cancel',
       'Cancel has the focus');
    await page.keyboard.press('Escape');
    await page.waitForSelector('#confirm', { state: 'detached' });
    await waitText(page, '#outcome-text', 'you cancelled');
    is(await stateOf(result.export), 'pending', 'Escape: nothing approved');

    await page.click('#approve');
    await page.waitForSelector('#confirm[open]');
    await page.click('#confirm-ok');
    await waitText(page, '#confirm-error', 'Tick the box');
    is(await stateOf(result.export), 'pending', 'not without ticking the box');
    await page.check('#confirm-check');
    await page.click('#confirm-ok');
    await waitText(page, '#outcome-text', 'Approved');
    const r = await api('GET', `/v1/sandboxes/${fx.sandbox}/files?path=out.txt`,
                        T.agent, undefined, { 'Veto-Approval': result.export });
    is(r.status, 200, 'the agent reads the file out with the approval');
    is(r.text, 'exported data\n', '... its content');
});

await step('the fields the summary will carry (seeded)', async () => {
    await openApproval(page, fx.rich);
    const who = await text(page, '#where');
    has(who, fx.sandbox, 'sandbox id from the summary');
    ok(!who.includes('from the audit trail'), '... not looked up');
    const argv = await text(page, '#argv');
    has(argv, "sh -c 'pip install -r requirements.txt && twine upload dist/*'",
        'argv, shell-quoted');
    has(argv, `[folded: ${fx.long_len.toLocaleString('en')} characters in all]`,
        'a long value folded, its length stated');
    ok(!argv.includes('THE-END'), '... its end not shown');
    has(argv, "$'admin\\u202etxt.exe'", 'a bidi override spelled out');
    await page.click('#unfold-argv');
    has(await text(page, '#argv'), 'A'.repeat(4990) + 'THE-END', 'unfolded in full');
    has(await text(page, '#argv-truncated'), '1.0 MiB (1,048,576 bytes)',
        'argv cut: its full size');
    has(await text(page, '#what'), 'Argv SHA-256', 'argv cut: its digest');
    const env = await text(page, '#env-table');
    has(env, '/workspace/bin:/usr/bin:/bin', 'env: the value of PATH');
    has(env, 'value withheld by the gateway', 'env: a withheld value');
    is(await page.locator('#env-table tr.dangerous').count(), 2,
       'env: PATH and LD_PRELOAD flagged (the summary\'s env_flagged)');
    has(env, 'changes how programs behave', 'env: the flag says what it means');
    has(env, 'xterm\\x1b]0;ok\\x07', 'env: invisible characters in a value spelled out');
    is(await page.locator('#env-table .hidden-char').count(), 2,
       '... each marked as such');
    is(JSON.stringify(await page.$$eval('#hosts li', (els) => els.map((e) => e.textContent))),
       JSON.stringify(['pypi.org', 'files.pythonhosted.org', 'upload.pypi.org']),
       'network hosts');
    has(await text(page, '[data-risk="irreversible"]'),
        'publishes a release to a public registry', 'irreversible, with its reason');
    const other = await text(page, '#other-fields');
    has(other, 'ticket', 'an unknown field: its name');
    has(other, 'OPS-1234', '... and value, as text');
    has(await text(page, '#settings'), 'not in the summary', 'profile and limits: absent, said so');
    await page.screenshot({ path: fx.out + '/detail-rich.png', fullPage: true });

    await page.click('#approve');
    await page.waitForSelector('#confirm[open]');
    const list = await text(page, '#confirm-list');
    has(list, 'upload.pypi.org', 'the confirmation names the hosts');
    has(list, 'publishes a release', '... and why it cannot be undone');
    await page.click('#confirm-cancel');
    await page.waitForSelector('#confirm', { state: 'detached' });
    is(await stateOf(fx.rich), 'pending', 'Cancel: nothing approved');
});

await step('every host a request grants (a real request)', async () => {
    await openApproval(page, fx.cut_hosts);
    const hosts = await page.$$eval('#hosts li', (els) => els.map((e) => e.textContent));
    is(hosts.length, 200, 'all 200 hosts are listed');
    is(hosts[0], fx.cut_hosts_first, '... in order');
    is(await page.locator('#hosts-cut').count(), 0, 'nothing said to be cut');
    is(await page.locator('[data-risk="truncated"]').count(), 0,
       '... up front either');
    has(await text(page, '[data-risk="irreversible"]'), 'network egress',
        'irreversible: network egress, the reason');
    has(await text(page, '[data-risk="network"]'), fx.cut_hosts_first,
        'network egress names the hosts');
});

await step('an approval that expires while open says so', async () => {
    const id = await askExec(T.fast, fx.sandbox_fast,
                             { argv: ['sh', '-c', 'echo too-late'] });
    await openApproval(page, id);
    has(await text(page, '#clock'), 'left', 'time left shown');
    ok(await page.isEnabled('#approve'), 'approve possible while it lasts');
    await waitText(page, '#expired-notice', 'expired while you had it open');
    ok(true, 'the page says it expired while open');
    ok(await page.isDisabled('#approve'), 'approve no longer offered');
    await waitText(page, '#state-badge', 'expired');
    is(await stateOf(id), 'expired', 'the gateway agrees');
});

await step('history needs the audit scope, and says so', async () => {
    const p = await newPage();
    await signIn(p.page, T.rev2);
    await p.page.waitForSelector('#list[aria-busy="false"]');
    await openApproval(p.page, fx.rich);
    await waitText(p.page, '#history-state', 'audit:read scope');
    ok(true, 'without audit:read: the page says why there is no history');
    await p.page.close();
});

await step('the empty state, and tenants apart', async () => {
    const p = await newPage();
    await signIn(p.page, T.globex_rev);
    await p.page.waitForSelector('#list[aria-busy="false"]');
    is(JSON.stringify(await itemIds(p.page)), JSON.stringify([fx.globex_approval]),
       "globex's reviewer sees globex's approval only");
    await p.page.selectOption('#f-state', 'consumed');
    await waitText(p.page, '#list-state', 'No consumed approvals');
    ok(true, 'an empty list says so');
    await go(p.page, '#/approval/' + fx.rich);
    await waitText(p.page, '#detail-state', 'No such approval in your tenant');
    ok(true, "another tenant's approval opened by id: not found");
    await p.page.close();
});

await step('the requester cannot decide its own request', async () => {
    const p = await newPage();
    await signIn(p.page, T.self);
    await p.page.waitForSelector('#list[aria-busy="false"]');
    await openApproval(p.page, fx.rich);
    has(await text(p.page, '#decide-note'), 'You made this request',
        'the page says why');
    ok(await p.page.isDisabled('#approve') && await p.page.isDisabled('#deny'),
       'approve and deny not offered');
    await p.page.close();
});

await step('agent-controlled text renders as text', async () => {
    const payloads = ['<script>window.__xss=1</script>',
                      '<img src=x onerror="window.__xss=2">',
                      'javascript:window.__xss=3'];
    const x1 = await askExec(T.agent, fx.sandbox, {
        argv: ['sh', '-c', ...payloads],
        // env names are [A-Za-z_][A-Za-z0-9_]* (the gateway refuses
        // others); the values of names that change what runs are shown
        env: { LD_PRELOAD: '<img src=x onerror=window.__xss=4>',
               PATH: '<script>window.__xss=5</script>' },
    });
    const path = '<img src=x onerror=window.__xss=6>.txt';
    const r = await api('GET', `/v1/sandboxes/${fx.sandbox}/files?path=`
                               + encodeURIComponent(path), T.agent);
    is(r.status, 202, 'an export of a file with a payload name needs approval');
    const x2 = r.json?.approval_id;
    const x3 = await askExec(T.xss, fx.sandbox_xss,
                             { argv: ['sh', '-c', 'echo javascript:alert(1)'] });

    const p = await newPage();
    await signIn(p.page, T.rev);
    await p.page.waitForSelector(`#items .item[data-id="${x3}"]`, { timeout: WAIT });
    const list = await text(p.page, '#items');
    for (const s of payloads) {
        has(list, s, 'list: literal ' + s);
    }
    has(list, fx.xss_agent, 'list: the agent name, literal');
    has(list, path, 'list: the path, literal');

    // what a parsed payload would leave behind, looked for in each view
    const made = [];
    const look = async (where) => {
        const n = await p.page.evaluate(() => ({
            images: document.images.length,
            scripts: document.scripts.length,
            handlers: [...document.querySelectorAll('*')].filter((e) =>
                [...e.attributes].some((a) => /^on/i.test(a.name))).length,
            links: document.querySelectorAll('a, area, iframe, object, embed, '
                                             + 'svg, form[action], base').length,
        }));
        if (n.images || n.scripts !== 1 || n.handlers || n.links) {
            made.push(where + ': ' + JSON.stringify(n));
        }
    };
    await look('list');

    await openApproval(p.page, x1);
    await look('argv and env values');
    const argv = await text(p.page, '#argv');
    for (const s of payloads) {
        has(argv, s, 'argv: literal ' + s);
    }
    const env = await text(p.page, '#env-table');
    has(env, '<img src=x onerror=window.__xss=4>', 'env value: literal <img>');
    has(env, '<script>window.__xss=5</script>', 'env value: literal <script>');

    await openApproval(p.page, x2);
    await look('path');
    is(await text(p.page, '#file-path'), path, 'path: literal');

    await openApproval(p.page, x3);
    await look('agent name');
    has(await text(p.page, '#where'), fx.xss_agent, 'agent name: literal');

    await openApproval(p.page, fx.xss_seed);
    await p.page.click('#unfold-other').catch(() => {});
    await look('every summary field');
    const body = await text(p.page, '#detail-body');
    for (let i = 11; i <= 27; i++) {
        ok(body.includes(`window.__xss=${i}`) || (await text(p.page, '#notices'))
                                                     .includes(`window.__xss=${i}`),
           `seeded payload ${i} is on the page as text`);
    }
    has(body, '<img src=x onerror="window.__xss=14">', 'sandbox id: literal');
    has(body, '<script>window.__xss=27</script>', 'an unknown field name: literal');
    has(await text(p.page, '#hosts'), 'javascript:window.__xss=21', 'host: literal');
    // the confirmation dialog renders them too
    await p.page.click('#approve');
    await p.page.waitForSelector('#confirm[open]');
    has(await text(p.page, '#confirm-list'), '<img src=x onerror=window.__xss=20>',
        'dialog: literal host');
    await look('confirmation dialog');
    await p.page.hover('#confirm-list');
    await p.page.keyboard.press('Escape');
    await p.page.waitForSelector('#confirm', { state: 'detached' });
    await p.page.hover('#notices');
    await go(p.page, '#/');
    await p.page.waitForSelector(`#items .item[data-id="${x3}"]`, { timeout: WAIT });
    await p.page.waitForTimeout(500);

    const dom = await p.page.evaluate(() => {
        const all = [...document.querySelectorAll('*')];
        return {
            xss: window.__xss ?? null,
            sub: window.__xss_sub ?? null,
            images: document.images.length,
            scripts: [...document.scripts].map((s) => s.getAttribute('src')),
            handlers: all.filter((e) => [...e.attributes]
                .some((a) => /^on/i.test(a.name))).length,
            links: document.querySelectorAll('a, area, iframe, object, embed, svg, form[action]').length,
            csp: window.__csp,
        };
    });
    is(JSON.stringify(made), '[]', 'no element made from a payload in any view');
    is(dom.xss, null, 'no payload ran (window.__xss unset)');
    is(dom.sub, null, 'the agent name did not run');
    is(dom.images, 0, 'no <img> made');
    is(JSON.stringify(dom.scripts), JSON.stringify(['js/app.js']),
       'no script but the page\'s own');
    is(dom.handlers, 0, 'no element with an on* attribute');
    is(dom.links, 0, 'no link, frame, object or svg made');
    is(JSON.stringify(dom.csp), '[]', 'no CSP violation (nothing was even tried)');
    is(JSON.stringify(p.watch.dialogs), '[]', 'no dialog opened');
    is(JSON.stringify(p.watch.errors), '[]', 'no console error');
    await p.page.close();
});

// A real request with secrets in its argv and in both envs (the
// sandbox's, the exec's): a reviewer sees a request exactly, so the
// gateway refuses it (422 credential_inline) and no page ever shows them
// (the API and Redis side: t/approval/redaction.t,
// t/approval/reviewer-sees-all.t).
await step('secrets an agent sent are not in the view', async () => {
    const ghp = 'ghp_' + 'P4g3V1ew0x'.repeat(3) + 'pageTk';
    const secrets = [ghp, 'pagehunter2', 'pagepr0xypw', 'pagesbxpw',
                     'pagew1thheld'];
    const c = await api('POST', '/v1/sandboxes', T.agent, {
        ttl_s: 1800, env: { HTTP_PROXY: 'http://u:pagesbxpw@proxy.test:3128' },
    });
    is(c.status, 201, 'a sandbox with a secret in its env');
    const r = await api('POST', `/v1/sandboxes/${c.json.id}/exec`, T.agent, {
        argv: ['git', 'push', `https://x-access-token:${ghp}@github.com/o/r`,
               'main', '--password', 'pagehunter2'],
        env: { HTTPS_PROXY: 'http://u:pagepr0xypw@proxy.test:3128',
               PLAIN_TOKEN: 'pagew1thheld' },
    });
    is(r.status, 422, 'the request is refused: a reviewer would see them');
    is(r.json?.type, 'urn:veto-sandbox:problem:credential_inline',
       '... credential_inline');

    const p = await newPage();
    await signIn(p.page, T.rev);
    await p.page.waitForSelector('#list[aria-busy="false"]');
    const html = await p.page.content();
    for (const s of secrets) {
        ok(!html.includes(s), 'list: not on the page: ' + s);
    }
    await p.page.close();
});

await step('keyboard', async () => {
    await go(page, '#/');
    await page.waitForSelector('#list[aria-busy="false"]');
    await page.waitForSelector('#items .item');
    await page.evaluate(() => document.activeElement?.blur());
    let id = null;
    for (let i = 0; i < 30 && !id; i++) {
        await page.keyboard.press('Tab');
        id = await page.evaluate(() => document.activeElement?.classList
                                       .contains('item')
                                       ? document.activeElement.dataset.id : null);
    }
    ok(id !== null, 'Tab reaches the first request');
    const ring = await page.evaluate(() => {
        const s = getComputedStyle(document.activeElement);
        return [s.outlineStyle, parseFloat(s.outlineWidth)];
    });
    ok(ring[0] !== 'none' && ring[1] >= 2, 'with a visible focus ring', ring);
    await page.keyboard.press('Enter');
    await page.waitForSelector('#detail[aria-busy="false"]', { timeout: WAIT });
    is(await page.evaluate(() => document.activeElement.id), 'detail-title',
       'Enter opens it, focus on its title');
    const order = [];
    for (let i = 0; i < 60 && !order.includes('deny'); i++) {
        await page.keyboard.press('Tab');
        const f = await page.evaluate(() => document.activeElement.id);
        if (['reason', 'approve', 'deny'].includes(f)) {
            order.push(f);
        }
    }
    is(order.join(' '), 'reason approve deny', 'focus order: reason, approve, deny');
    await page.keyboard.press('Escape');
    await page.waitForSelector('#list');
    await page.waitForFunction((i) => document.activeElement?.dataset?.id === i,
                               id, { timeout: WAIT });
    ok(true, 'Escape goes back, focus on the request it came from');
});

await step('phone width', async () => {
    const p = await newPage({ width: 390, height: 844 });
    await signIn(p.page, T.rev);
    await p.page.waitForSelector('#items .item');
    const fits = () => p.page.evaluate(() => document.documentElement.scrollWidth
                                             <= window.innerWidth);
    const wide = () => p.page.evaluate(() => [...document.querySelectorAll('body *')]
        .filter((e) => e.getBoundingClientRect().right > window.innerWidth + 0.5)
        .map((e) => e.tagName + '#' + e.id + '.' + e.className).slice(0, 8));
    ok(await fits(), 'the list fits 390 px (no sideways scrolling)', await wide());
    await p.page.screenshot({ path: fx.out + '/phone-list.png' });
    await openApproval(p.page, fx.rich);
    ok(await fits(), 'the detail fits 390 px', await wide());
    await p.page.screenshot({ path: fx.out + '/phone-detail.png', fullPage: true });

    // contrast of text against what is behind it (WCAG AA: 4.5:1)
    const low = await p.page.evaluate(() => {
        function rgb(c) {
            const m = c.match(/[\d.]+/g).map(Number);
            return { r: m[0], g: m[1], b: m[2], a: m.length > 3 ? m[3] : 1 };
        }
        function lum({ r, g, b }) {
            const f = (v) => { v /= 255; return v <= 0.03928 ? v / 12.92
                                                             : ((v + 0.055) / 1.055) ** 2.4; };
            return 0.2126 * f(r) + 0.7152 * f(g) + 0.0722 * f(b);
        }
        function bg(el) {
            for (let e = el; e; e = e.parentElement) {
                const c = rgb(getComputedStyle(e).backgroundColor);
                if (c.a > 0.5) {
                    return c;
                }
            }
            return { r: 255, g: 255, b: 255 };
        }
        const bad = [];
        for (const el of document.querySelectorAll('body *')) {
            const own = [...el.childNodes].some((n) => n.nodeType === 3
                                                       && n.textContent.trim());
            if (!own || !el.getClientRects().length) {
                continue;
            }
            const a = lum(rgb(getComputedStyle(el).color));
            const b = lum(bg(el));
            const ratio = (Math.max(a, b) + 0.05) / (Math.min(a, b) + 0.05);
            if (ratio < 4.5) {
                bad.push(el.tagName + '.' + el.className + ' ' + ratio.toFixed(2));
            }
        }
        return bad;
    });
    is(JSON.stringify(low), '[]', 'every text has at least 4.5:1 contrast');
    await p.page.close();
});

await step('an expired or revoked token: asked for a new one', async () => {
    const p = await newPage();
    await signIn(p.page, T.revoked);
    await p.page.waitForSelector('#list[aria-busy="false"]');
    execFileSync('redis-cli', ['-s', fx.redis_sock, 'SET', fx.revoke_key, '1']);
    await waitText(p.page, '#token-why', 'refused the token');
    ok(true, 'revoked while open: the page asks for a new token');
    is(await p.page.evaluate(() => sessionStorage.length), 0, 'and forgot the old one');
    await p.page.close();
});

await step('Redis unavailable', async () => {
    await openApproval(page, fx.rich);
    await page.waitForSelector('#approve:enabled');
    process.kill(fx.redis_pid, 'SIGSTOP');
    try {
        await waitText(page, '#banner', 'Redis is unavailable');
        ok(true, 'polling: the page says Redis is unavailable');
        await page.click('#approve');
        await page.waitForSelector('#confirm[open]');
        await page.check('#confirm-check');
        await page.click('#confirm-ok');
        await waitText(page, '#outcome-text', 'Nothing was decided');
        has(await text(page, '#outcome-text'), 'Redis is unavailable',
            'a decision while Redis is out: said so');
        const p = await newPage();
        await signIn(p.page, T.rev);
        await waitText(p.page, '#list-state', 'Could not load the approvals');
        has(await text(p.page, '#list-state'), 'Redis is unavailable',
            'a first load while Redis is out: said so');
        await p.page.close();
    } finally {
        process.kill(fx.redis_pid, 'SIGCONT');
    }
    await page.waitForSelector('#banner', { state: 'hidden', timeout: 30000 });
    ok(true, 'Redis back: the page recovers by itself');
    is(await stateOf(fx.rich), 'pending', 'nothing was decided');
});

ok(foreign.length === 0, 'the page asked no other origin', foreign);

writeFileSync(fx.out + '/result.json', JSON.stringify(result));
await ctx.close();
process.exit(failures() ? 1 : 0);
