// One approval, laid out so a person can decide on it: who asks, in which
// sandbox, exactly what would run (argv, cwd, env, stdin, network, file),
// the sandbox's settings, what binds the approval, who has reviewed it,
// and the agent's earlier decisions there.  Polls while open, so a
// decision by someone else or an expiry shows by itself.

import { h, replace } from './dom.js';
import { getApproval, serverNow } from './api.js';
import { actionLabel, duration, when, bytes, num, shellQuote, hasHidden,
         dangerousEnv, text } from './format.js';
import { riskKinds, networkHosts, networkCut, envNames } from './risk.js';
import { row, missing, longText, shellLine, generic, FOLD_AT } from './show.js';
import { decisionPanel } from './decide.js';
import { historySection } from './history.js';
import { POLL_MS } from './list.js';

// Summary fields this view lays out itself; any other is shown as text
// under "Other fields".
const KNOWN_SUMMARY = new Set([
    'action', 'sandbox', 'argv', 'argv_truncated', 'argv_sha256',
    'argv_bytes', 'cwd', 'timeout_s', 'env', 'env_names', 'env_flagged',
    'stdin', 'stdin_bytes', 'stdin_truncated', 'stdin_sha256',
    'stdin_base64', 'network', 'path', 'size', 'sha256',
    'profile', 'limits', 'ttl_s', 'irreversible', 'irreversible_reason',
]);
const KNOWN_RECORD = new Set([
    'id', 'agent', 'action', 'hash', 'summary', 'state', 'created_ms',
    'expires_ms', 'threshold', 'approvals', 'reviewers', 'last_reviewer',
    'decided_ms', 'denied_by', 'deny_reason', 'consumed_ms', 'tenant',
    'sandbox',
]);

const STATE_TEXT = {
    pending: 'Pending: waiting for a decision',
    approved: 'Approved: the agent may repeat its request once',
    denied: 'Denied',
    expired: 'Expired: nothing was decided in time',
    consumed: 'Approved and used',
};

function section(id, title, ...body)
{
    return h('section', { class: 'card', id, 'aria-labelledby': id + '-h' },
             h('h3', { id: id + '-h' }, title), ...body);
}

function code(v)
{
    return h('code', { class: 'mono' }, String(v));
}

export function detailView(main, app, id)
{
    let rec = null;
    let sig = '';
    let timer = null;
    let ticker = null;
    let stopped = false;
    let expiredSeen = false;
    let sawLive = false;        // pending or approved while open
    let sandboxFromAudit = null;
    const open = new Set();     // sections whose long values are unfolded

    const back = h('button', { type: 'button', class: 'back secondary',
                               id: 'back' }, '← All approvals');
    const title = h('h2', { id: 'detail-title', tabindex: '-1' }, 'Approval');
    const badge = h('span', { class: 'badge', id: 'state-badge' });
    const clock = h('p', { class: 'clock', id: 'clock', 'aria-live': 'off' });
    const notices = h('div', { id: 'notices' });
    const body = h('div', { class: 'detail-body', id: 'detail-body' },
                   h('p', { class: 'state', id: 'detail-state' }, 'Loading…'));
    const history = historySection(app, (sb) => {
        sandboxFromAudit = sb;
        if (rec) {
            renderBody();
        }
    });
    const decision = decisionPanel(app, id, () => rec, () => load());

    replace(main,
        h('article', { class: 'detail', 'aria-labelledby': 'detail-title',
                       'aria-busy': 'true', id: 'detail' },
          h('nav', { class: 'crumbs' }, back),
          h('div', { class: 'detail-head' }, title, badge),
          clock, notices, body, decision.el, history.el));

    title.focus();

    back.addEventListener('click', () => {
        location.hash = '#/';
    });

    function summary()
    {
        return rec && rec.summary && typeof rec.summary === 'object'
               && !Array.isArray(rec.summary) ? rec.summary : {};
    }

    function sandboxId()
    {
        const s = summary();
        if (typeof s.sandbox === 'string' && s.sandbox) {
            return s.sandbox;
        }
        if (typeof rec.sandbox === 'string' && rec.sandbox) {
            return rec.sandbox;
        }
        return null;
    }

    function live()
    {
        return rec && (rec.state === 'pending' || rec.state === 'approved');
    }

    function timeLeftMs()
    {
        return Number(rec.expires_ms) - serverNow();
    }

    function tick()
    {
        if (!rec) {
            return;
        }
        const created = Number(rec.created_ms);
        const age = isFinite(created) ? 'Requested ' + duration(serverNow() - created)
                                        + ' ago' : '';
        if (live()) {
            const left = timeLeftMs();
            if (left > 0) {
                clock.textContent = age + ' · ' + duration(left) + ' left';
                clock.classList.toggle('soon', left < 60000);
            } else {
                clock.textContent = age + ' · expired';
                if (!expiredSeen) {
                    expiredSeen = true;
                    showExpired();
                    load();         // the gateway confirms it
                }
            }
        } else {
            clock.textContent = age;
            clock.classList.remove('soon');
        }
    }

    function showExpired()
    {
        badge.textContent = 'expired';
        badge.className = 'badge state-expired';
        replace(notices, h('p', { class: 'notice notice-expired',
                                  id: 'expired-notice', role: 'alert' },
            sawLive
                ? 'This approval expired while you had it open. Nothing was '
                  + 'decided; if the agent still needs it, it must ask again.'
                : 'This approval has expired. Nothing can be decided any more.'),
            riskNotices());
        decision.update(Object.assign({}, rec, { state: 'expired' }));
    }

    function riskNotices()
    {
        const s = summary();
        const out = [];
        for (const r of riskKinds(s, rec.action)) {
            let t;
            if (r.kind === 'network') {
                const hosts = networkHosts(s.network);
                t = ['Network egress: the sandbox asks to reach ',
                     hosts.length ? hosts.map((x, i) => [i ? ', ' : '',
                                                          code(x)])
                                  : 'the network', '.'];
            } else if (r.kind === 'export') {
                t = ['File export: a file leaves the sandbox (',
                     typeof s.path === 'string' ? code(s.path) : 'path unknown',
                     ').'];
            } else if (r.kind === 'irreversible') {
                t = ['Irreversible: ',
                     typeof s.irreversible_reason === 'string'
                         ? h('span', { class: 'val' }, s.irreversible_reason)
                         : 'the gateway marks this request as one that '
                           + 'cannot be undone.'];
            } else if (r.kind === 'env') {
                t = 'Environment: it sets variables not known to be inert; '
                    + 'they change how programs behave (flagged below).';
            } else if (r.kind === 'truncated') {
                t = 'Cut for display: part of the request is not shown '
                    + 'here (details below). The approval binds the whole '
                    + 'request through its hash.';
            } else if (r.kind === 'hidden') {
                t = 'Hidden characters: an argument holds characters that '
                    + 'do not show on a screen (control, bidirectional or '
                    + 'zero-width); they are spelled out as $\'\\u…\' below.';
            }
            out.push(h('p', { class: 'notice notice-' + r.kind,
                              'data-risk': r.kind }, t));
        }
        return out;
    }

    function toggle(key, label)
    {
        const isOpen = open.has(key);
        return h('button', {
            type: 'button', class: 'link-button', 'aria-expanded': isOpen,
            id: 'unfold-' + key,
            on: { click: () => {
                if (open.has(key)) {
                    open.delete(key);
                } else {
                    open.add(key);
                }
                renderBody();
                document.getElementById('unfold-' + key)?.focus();
            } },
        }, isOpen ? 'Fold long values' : label);
    }

    function whoSection()
    {
        const claims = app.claims();
        const sb = sandboxId();
        const created = Number(rec.created_ms);
        const expires = Number(rec.expires_ms);
        return section('where', 'Who and where', h('dl', null,
            row('Agent', code(rec.agent)),
            row('Tenant', typeof rec.tenant === 'string' ? code(rec.tenant)
                : claims.tenantValue !== undefined
                    ? [code(claims.tenantValue), ' (yours: the gateway shows '
                       + 'each reviewer only their own tenant)']
                    : missing('yours (the gateway shows each reviewer only '
                              + 'their own tenant)')),
            row('Sandbox', sb ? code(sb)
                : sandboxFromAudit ? [code(sandboxFromAudit),
                                      ' (from the audit trail)']
                : missing('not in the summary this gateway sends')),
            row('Action', code(rec.action), ' · ', actionLabel(rec.action)),
            row('Requested', when(created)),
            row('Expires', when(expires))));
    }

    function commandSection(s)
    {
        const parts = [];
        if (Array.isArray(s.argv)) {
            const line = shellLine(s.argv, open.has('argv'));
            parts.push(row('Command',
                h('div', { class: 'cmd-wrap' }, line.el,
                  h('p', { class: 'hint' },
                    num(s.argv.length) + (s.argv.length === 1 ? ' argument'
                                                              : ' arguments')
                    + ', shell-quoted',
                    line.folded ? [' · ', toggle('argv', 'Show full values')]
                                : null))));
            if (s.argv_truncated === true) {
                parts.push(row('Cut',
                    h('span', { class: 'warn', id: 'argv-truncated' },
                      'The argv above is cut for display.',
                      typeof s.argv_bytes === 'number'
                          ? ' The whole argv is ' + bytes(s.argv_bytes) + '.'
                          : '',
                      ' The approval binds the whole request (request hash).')));
            }
            if (typeof s.argv_sha256 === 'string') {
                parts.push(row('Argv SHA-256', code(s.argv_sha256)));
            }
        }
        if (s.cwd !== undefined) {
            parts.push(row('Working directory', code(shellQuote(s.cwd))));
        }
        if (s.timeout_s !== undefined) {
            parts.push(row('Timeout', typeof s.timeout_s === 'number'
                ? duration(s.timeout_s * 1000) : generic(s.timeout_s)));
        }
        if (s.stdin_bytes !== undefined || s.stdin !== undefined
            || s.stdin_base64 !== undefined) {
            const all = s.stdin !== undefined ? s.stdin : s.stdin_base64;
            parts.push(row('Standard input',
                typeof s.stdin_bytes === 'number' ? bytes(s.stdin_bytes) : '',
                s.stdin !== undefined
                    ? h('pre', { class: 'stdin', id: 'stdin' },
                        longText(s.stdin, open.has('stdin'), 'val'))
                    : s.stdin_base64 !== undefined
                    ? [h('p', { class: 'hint' }, 'not text: its bytes, '
                                                 + 'base64-encoded'),
                       h('pre', { class: 'stdin', id: 'stdin' },
                         longText(s.stdin_base64, open.has('stdin'),
                                  'val mono'))]
                    : h('p', { class: 'hint' }, 'not text: not shown'),
                s.stdin_truncated === true
                    ? h('p', { class: 'warn' }, 'Only the start is shown; '
                        + 'the rest is bound by the request hash.')
                    : null,
                all !== undefined && String(all).length > 200
                    ? toggle('stdin', 'Show all of it') : null));
            if (typeof s.stdin_sha256 === 'string') {
                parts.push(row('Stdin SHA-256', code(s.stdin_sha256)));
            }
        }
        return parts.length ? section('what', 'What would run',
                                      h('dl', null, parts)) : null;
    }

    function envSection(s)
    {
        const names = envNames(s);
        if (!names.length && s.env === undefined && s.env_names === undefined) {
            return null;
        }
        const values = s.env && typeof s.env === 'object'
                       && !Array.isArray(s.env) ? s.env : null;
        // the gateway's word on which names are not inert; an older
        // gateway's summary has none: the page's own list then
        const flagged = Array.isArray(s.env_flagged)
                        ? new Set(s.env_flagged.map(String)) : null;
        const rows = names.map((n) => {
            let val;
            if (values && Object.prototype.hasOwnProperty.call(values, n)) {
                val = values[n] === null
                    ? missing('value withheld by the gateway')
                    : longText(values[n], open.has('env'), 'val mono');
            } else {
                val = missing('value not shown (the gateway sends names only)');
            }
            const bad = flagged ? flagged.has(n) : dangerousEnv(n);
            return h('tr', { class: bad ? 'dangerous' : null },
                     h('th', { scope: 'row' },
                       h('code', { class: 'mono' },
                         hasHidden(n) ? shellQuote(n) : n)),
                     h('td', null, val),
                     h('td', null, bad ? h('span', { class: 'chip chip-env' },
                                           'changes how programs behave')
                                     : ''));
        });
        const anyLong = values && Object.values(values).some(
            (v) => typeof v === 'string' && v.length > 200);
        return section('env', 'Environment that will apply',
            rows.length
                ? h('table', { class: 'env', id: 'env-table' },
                    h('thead', null, h('tr', null,
                      h('th', { scope: 'col' }, 'Name'),
                      h('th', { scope: 'col' }, 'Value'),
                      h('th', { scope: 'col' }, h('span', { class: 'sr' },
                                                  'Warning')))),
                    h('tbody', null, rows))
                : h('p', null, 'No variables.'),
            anyLong ? toggle('env', 'Show full values') : null,
            values ? null
                   : h('p', { class: 'hint' }, 'This gateway shows variable '
                       + 'names only. A name such as PATH, LD_PRELOAD or '
                       + 'BASH_ENV can change what a command does: deny if '
                       + 'you do not expect it.'));
    }

    function networkSection(s)
    {
        if (s.network === undefined) {
            return null;
        }
        const net = s.network;
        const rows = [];
        if (typeof net === 'string') {
            rows.push(row('Mode', code(net)));
        } else if (net && typeof net === 'object' && !Array.isArray(net)) {
            if (net.mode !== undefined) {
                rows.push(row('Mode', code(net.mode)));
            }
            const hosts = networkHosts(net);
            const all = networkCut(net);
            rows.push(row('Hosts requested', hosts.length
                ? h('ul', { class: 'hosts', id: 'hosts' },
                    hosts.map((x) => h('li', null, code(x))))
                : missing(all ? 'none shown' : 'none')));
            if (all) {
                rows.push(row('Not shown', h('span', { class: 'warn',
                                                       id: 'hosts-cut' },
                    `${Math.max(all - hosts.length, 0).toLocaleString('en')} `
                    + `more, ${all.toLocaleString('en')} hosts in all (cut `
                    + 'for display; the approval grants them all)')));
            }
            for (const [k, v] of Object.entries(net)) {
                if (k !== 'mode' && k !== 'hosts'
                    && !(all && (k === 'hosts_truncated'
                                 || k === 'hosts_count'))) {
                    rows.push(row(k, generic(v)));
                }
            }
        } else {
            rows.push(row('Network', generic(net)));
        }
        return section('network', 'Network', h('dl', null, rows));
    }

    function fileSection(s)
    {
        if (s.path === undefined && s.size === undefined
            && s.sha256 === undefined) {
            return null;
        }
        return section('file', rec.action === 'sandbox.files.read'
                                 ? 'File leaving the sandbox' : 'File',
            h('dl', null,
              s.path !== undefined ? row('Path', h('code', { class: 'mono',
                                                             id: 'file-path' },
                                                   typeof s.path === 'string'
                                                       && hasHidden(s.path)
                                                       ? shellQuote(s.path)
                                                       : String(s.path)))
                                   : null,
              s.size !== undefined ? row('Size', bytes(s.size)) : null,
              s.sha256 !== undefined ? row('SHA-256', code(s.sha256)) : null));
    }

    function settingsSection(s)
    {
        const rows = [];
        if (s.profile !== undefined) {
            rows.push(row('Profile', code(s.profile)));
        }
        if (s.limits && typeof s.limits === 'object') {
            rows.push(row('Limits', h('dl', { class: 'limits', id: 'limits' },
                Object.entries(s.limits).map(([k, v]) => row(k,
                    h('span', { class: 'mono' }, String(v)))))));
        } else if (s.limits !== undefined) {
            rows.push(row('Limits', generic(s.limits)));
        }
        if (s.ttl_s !== undefined) {
            rows.push(row('Lifetime', typeof s.ttl_s === 'number'
                ? duration(s.ttl_s * 1000) : generic(s.ttl_s)));
        }
        if (!rows.length) {
            rows.push(row('Profile and limits', missing(
                rec.action === 'sandbox.create' ? 'the defaults of the policy'
                : 'not in the summary this gateway sends')));
        }
        return section('settings', 'Sandbox profile and limits',
                       h('dl', null, rows));
    }

    function otherSection(s)
    {
        const rows = [];
        let long = false;
        const add = (k, v) => {
            rows.push(row(k, generic(v, open.has('other'))));
            long = long || text(v).length > (v !== null && typeof v === 'object'
                                             ? FOLD_AT * 4 : FOLD_AT);
        };
        for (const [k, v] of Object.entries(s)) {
            if (!KNOWN_SUMMARY.has(k)) {
                add(k, v);
            }
        }
        for (const [k, v] of Object.entries(rec)) {
            if (!KNOWN_RECORD.has(k)) {
                add(k, v);
            }
        }
        return rows.length ? section('other', 'Other fields',
            h('p', { class: 'hint' }, 'Sent by the gateway; this page does '
              + 'not know their meaning and shows them as text.'),
            h('dl', { id: 'other-fields' }, rows),
            long ? toggle('other', 'Show full values') : null) : null;
    }

    function bindingSection()
    {
        return section('binding', 'What the approval binds', h('dl', null,
            row('Approval id', code(rec.id || id)),
            row('Request hash', h('code', { class: 'mono hash', id: 'hash' },
                                  String(rec.hash ?? '—'))),
            row('Bound to', 'this agent, this tenant, this action and the '
                + 'exact request (method, path, query, body); it can be used '
                + 'once, before it expires.')));
    }

    function reviewSection()
    {
        const thr = Number(rec.threshold) || 1;
        const reviewers = Array.isArray(rec.reviewers) ? rec.reviewers : [];
        const rows = [
            row('State', STATE_TEXT[rec.state] || String(rec.state)),
            row('Approvals', num(Number(rec.approvals) || 0) + ' of '
                + num(thr) + ' needed'),
            row('Approved by', reviewers.length
                ? h('ul', { class: 'reviewers', id: 'reviewers' },
                    reviewers.map((r) => h('li', null, code(r))))
                : missing('nobody yet')),
        ];
        if (rec.denied_by !== undefined) {
            rows.push(row('Denied by', code(rec.denied_by)));
        }
        if (rec.deny_reason !== undefined) {
            rows.push(row('Reason', h('span', { class: 'val',
                                                id: 'deny-reason' },
                                      String(rec.deny_reason))));
        }
        if (rec.decided_ms !== undefined) {
            rows.push(row('Decided', when(Number(rec.decided_ms))));
        }
        if (rec.consumed_ms !== undefined) {
            rows.push(row('Used', when(Number(rec.consumed_ms))));
        }
        return section('reviews', 'Reviews', h('dl', null, rows));
    }

    function renderHead()
    {
        title.textContent = actionLabel(rec.action);
        const st = String(rec.state);
        badge.textContent = st;
        badge.className = 'badge state-' + st.replace(/[^a-z]/g, '');
        if (rec.state === 'expired' || (live() && timeLeftMs() <= 0)) {
            showExpired();
        } else {
            replace(notices, riskNotices());
        }
    }

    function renderBody()
    {
        const s = summary();
        replace(body,
            whoSection(),
            reviewSection(),
            commandSection(s),
            envSection(s),
            networkSection(s),
            fileSection(s),
            settingsSection(s),
            bindingSection(),
            otherSection(s));
    }

    async function load()
    {
        clearTimeout(timer);
        try {
            const r = await getApproval(id);
            if (stopped) {
                return;
            }
            app.ok();
            const next = JSON.stringify(r);
            if (next !== sig) {
                const first = rec === null;
                sig = next;
                rec = r;
                if (live() && timeLeftMs() > 0) {
                    sawLive = true;
                }
                renderHead();
                renderBody();
                decision.update(live() && timeLeftMs() <= 0
                                ? Object.assign({}, rec, { state: 'expired' })
                                : rec);
                main.querySelector('#detail').setAttribute('aria-busy', 'false');
                if (first) {
                    history.load(rec, sandboxId());
                }
            }
            tick();
        } catch (e) {
            if (stopped || !app.fail(e)) {
                return;
            }
            if (!rec) {
                replace(body, h('p', { class: 'state state-error',
                                       id: 'detail-state', role: 'alert' },
                    e.kind === 'not_found'
                        ? 'No such approval in your tenant (it may have '
                          + 'been removed after its retention period).'
                        : e.kind === 'scope'
                        ? 'This token cannot read approvals: it needs the '
                          + 'approvals:review scope.'
                        : 'Could not load the approval. ' + e.message));
                main.querySelector('#detail').setAttribute('aria-busy', 'false');
                if (e.kind === 'not_found') {
                    return;
                }
            }
        }
        if (!stopped) {
            timer = setTimeout(load, app.pollDelay(POLL_MS));
        }
    }

    function onKey(ev)
    {
        if (ev.key !== 'Escape' || ev.defaultPrevented
            || document.querySelector('dialog[open]')) {
            return;
        }
        const t = ev.target;
        if (t && t.id === 'reason' && t.value !== '') {
            return;             // Escape must not throw a typed reason away
        }
        location.hash = '#/';
    }

    document.addEventListener('keydown', onKey);
    ticker = setInterval(tick, 1000);
    load();

    return {
        stop()
        {
            stopped = true;
            clearTimeout(timer);
            clearInterval(ticker);
            document.removeEventListener('keydown', onKey);
            decision.stop();
            history.stop();
        },
    };
}
