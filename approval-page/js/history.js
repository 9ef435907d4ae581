// This agent's earlier decisions in this sandbox, from the audit trail
// (GET /v1/audit, which needs the audit:read scope besides the review
// scope).  The agent's own records name the sandbox; reviewers' decisions
// on its earlier approvals are read back from those approvals.

import { h, replace } from './dom.js';
import { audit, getApproval, APPROVAL_ID } from './api.js';
import { isoOrText, shellQuote, head, num, actionLabel } from './format.js';

const MAX_RECORDS = 200;
const MAX_SHOWN = 30;
const MAX_ENRICHED = 10;

const OUTCOME = {
    approval_requested: 'asked for approval',
    approval_consumed: 'used an approval',
    approval_expired: 'an approval expired',
    approval_approved: 'approved',
    approval_denied: 'denied',
    exec_finished: 'ran a command',
    sandbox_created: 'created the sandbox',
    sandbox_destroyed: 'destroyed the sandbox',
    allowed: 'allowed',
    denied: 'refused by the gateway',
    error: 'failed',
};

function parseDetail(d)
{
    if (d && typeof d === 'object') {
        return d;
    }
    if (typeof d === 'string') {
        try {
            const v = JSON.parse(d);
            return v && typeof v === 'object' ? v : {};
        } catch {
            return {};
        }
    }
    return {};
}

function short(s, n)
{
    return s.length > n ? head(s, n - 1) + '…' : s;
}

function argvText(argv)
{
    return Array.isArray(argv) ? short(argv.map(shellQuote).join(' '), 120)
                               : '';
}

// What a record says beyond its outcome, as one line of text.
function details(r)
{
    const d = parseDetail(r.detail);
    if (r.outcome === 'approval_requested') {
        return argvText(d.argv) || (typeof d.path === 'string'
                                    ? shellQuote(d.path) : '');
    }
    if (r.outcome === 'exec_finished') {
        const what = argvText(d.request && d.request.argv);
        const how = d.timed_out === true ? 'timed out'
                  : typeof d.signal === 'number' ? 'signal ' + d.signal
                  : d.exit_code !== undefined ? 'exit ' + d.exit_code : '';
        return [what, how].filter(Boolean).join(' → ');
    }
    if (typeof r.reason === 'string') {
        return r.reason;
    }
    return actionLabel(r.action);
}

function finalState(a)
{
    if (!a) {
        return 'state unknown';
    }
    const by = Array.isArray(a.reviewers) && a.reviewers.length
               ? ' by ' + a.reviewers.join(', ') : '';
    switch (a.state) {
    case 'consumed':
        return 'approved' + by + ', then used';
    case 'approved':
        return 'approved' + by + ', not used yet';
    case 'denied':
        return 'denied' + (a.denied_by ? ' by ' + a.denied_by : '')
               + (typeof a.deny_reason === 'string'
                  ? ': “' + a.deny_reason + '”' : '');
    case 'expired':
        return 'expired undecided or unused';
    case 'pending':
        return 'still pending';
    default:
        return String(a.state);
    }
}

export function historySection(app, onSandbox)
{
    const body = h('div', { id: 'history-body' },
                   h('p', { class: 'state' }, 'Loading…'));
    const el = h('section', { class: 'card history', id: 'history',
                              'aria-labelledby': 'history-h' },
        h('h3', { id: 'history-h' },
          'Earlier decisions of this agent in this sandbox'),
        body);
    let stopped = false;

    function say(cls, ...msg)
    {
        replace(body, h('p', { class: 'state ' + cls, id: 'history-state' },
                        ...msg));
    }

    function render(rec, sb, records, approvals)
    {
        const ids = [...new Set(records.map((r) => r.approval)
                                       .filter((a) => typeof a === 'string'
                                                      && APPROVAL_ID.test(a)))];
        const asked = records.filter((r) => r.outcome === 'approval_requested');
        const counts = {};
        for (const a of ids) {
            const st = approvals.get(a)?.state ?? 'unknown';
            counts[st] = (counts[st] || 0) + 1;
        }

        const list = ids.slice(0, MAX_ENRICHED).map((a) => {
            const req = asked.find((r) => r.approval === a);
            return h('li', null,
                     h('span', { class: 'when' }, req ? isoOrText(req.time) : ''),
                     ' ', h('code', { class: 'mono' }, req ? details(req)
                                                           : a),
                     ' — ', h('b', { class: 'final' },
                              finalState(approvals.get(a))));
        });

        const rows = records.slice(0, MAX_SHOWN).map((r) =>
            h('tr', null,
              h('td', null, isoOrText(r.time)),
              h('td', null, OUTCOME[r.outcome] || String(r.outcome)),
              h('td', null, typeof r.approval === 'string'
                            ? h('code', { class: 'mono' },
                                short(r.approval, 12)) : ''),
              h('td', null, h('span', { class: 'mono' }, details(r)))));

        replace(body,
            h('p', { id: 'history-summary' },
              ids.length
                  ? [num(ids.length) + ' earlier approval request'
                     + (ids.length === 1 ? '' : 's') + ' by ',
                     h('code', null, String(rec.agent)), ' in ',
                     h('code', null, sb), ': ',
                     Object.entries(counts).map(([k, v]) => num(v) + ' ' + k)
                           .join(', '), '.']
                  : ['No earlier approval requests by ',
                     h('code', null, String(rec.agent)), ' in ',
                     h('code', null, sb), ' on record.']),
            list.length ? h('ul', { class: 'earlier', id: 'earlier' }, list)
                        : null,
            records.length
                ? h('details', null,
                    h('summary', null, (records.length === 1
                          ? 'The one record' : 'All ' + num(records.length)
                            + ' records') + ' of this agent in this sandbox'
                      + (records.length > MAX_SHOWN ? ' (newest '
                         + MAX_SHOWN + ' shown)' : '')),
                    h('table', { class: 'timeline' },
                      h('thead', null, h('tr', null,
                        h('th', { scope: 'col' }, 'When'),
                        h('th', { scope: 'col' }, 'What'),
                        h('th', { scope: 'col' }, 'Approval'),
                        h('th', { scope: 'col' }, 'Details'))),
                      h('tbody', null, rows)))
                : null);
    }

    async function load(rec, sandbox)
    {
        try {
            let sb = sandbox;
            if (!sb) {
                // the request's own record names the sandbox
                const c = Number(rec.created_ms) || 0;
                const near = await audit({ agent: rec.agent,
                                           from: Math.max(0, c - 5000),
                                           to: c + 60000,
                                           limit: MAX_RECORDS });
                const own = near.find((r) => r.approval === rec.id
                                             && r.outcome === 'approval_requested');
                if (own && typeof own.sandbox === 'string' && own.sandbox) {
                    sb = own.sandbox;
                    onSandbox(sb);
                }
            }
            if (stopped) {
                return;
            }
            if (!sb) {
                say('', 'This request names no sandbox (a create, or the '
                    + 'record of the request is gone), so there is no '
                    + 'sandbox history to show.');
                return;
            }

            const records = (await audit({ agent: rec.agent, sandbox: sb,
                                           limit: MAX_RECORDS }))
                .filter((r) => r.approval !== rec.id);
            const ids = [...new Set(records.map((r) => r.approval)
                                           .filter((a) => typeof a === 'string'
                                                          && APPROVAL_ID.test(a)))];
            const approvals = new Map();
            render(rec, sb, records, approvals);

            for (const a of ids.slice(0, MAX_ENRICHED)) {
                try {
                    approvals.set(a, await getApproval(a));
                } catch (e) {
                    if (e.kind !== 'not_found') {
                        throw e;
                    }
                }
                if (stopped) {
                    return;
                }
            }
            render(rec, sb, records, approvals);
        } catch (e) {
            if (stopped || !app.fail(e, { quiet: true })) {
                return;
            }
            if (e.kind === 'scope') {
                say('state-info', 'Not shown: your token does not have the '
                    + 'audit:read scope, which reading the audit trail '
                    + 'needs. Ask for a token with both approvals:review '
                    + 'and audit:read to see this agent\'s earlier '
                    + 'decisions here.');
            } else {
                say('state-error', 'Could not read the audit trail: '
                    + e.message);
            }
        }
    }

    return {
        el,
        load,
        stop() { stopped = true; },
    };
}
