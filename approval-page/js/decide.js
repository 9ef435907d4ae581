// The decision: approve (reason optional) or deny (reason required), with
// a second, explicit confirmation for risky kinds (network egress, file
// export, anything marked irreversible).  Shows what the gateway answered
// and asks the detail view to reload the new state.

import { h, replace } from './dom.js';
import { decide } from './api.js';
import { num, when, bytes } from './format.js';
import { riskKinds, networkHosts } from './risk.js';

const MAX_REASON = 1024;

function utf8(s)
{
    return new TextEncoder().encode(s).length;
}

// Resolves true when the reviewer confirms, false on Cancel or Escape.
function confirmRisky(rec, kinds)
{
    const s = rec.summary && typeof rec.summary === 'object' ? rec.summary : {};
    const items = kinds.filter((k) => k.confirm).map((k) => {
        if (k.kind === 'network') {
            const hosts = networkHosts(s.network);
            return h('li', null, 'Network egress: the sandbox may reach ',
                     hosts.length ? hosts.map((x, i) => [i ? ', ' : '',
                                                          h('code', null, x)])
                                  : 'the network', '.');
        }
        if (k.kind === 'export') {
            return h('li', null, 'File export: ',
                     h('code', null, String(s.path ?? '?')),
                     typeof s.size === 'number' ? ' (' + bytes(s.size) + ')'
                                                : '',
                     ' leaves the sandbox.');
        }
        return h('li', null, 'Irreversible: ',
                 typeof s.irreversible_reason === 'string'
                     ? s.irreversible_reason : 'it cannot be undone.');
    });

    const check = h('input', { type: 'checkbox', id: 'confirm-check' });
    const err = h('p', { class: 'field-error', id: 'confirm-error',
                         role: 'alert', hidden: true });
    const cancel = h('button', { type: 'button', class: 'secondary',
                                 id: 'confirm-cancel' }, 'Cancel');
    const ok = h('button', { type: 'button', class: 'approve',
                             id: 'confirm-ok' }, 'Approve');
    const dlg = h('dialog', { class: 'confirm', id: 'confirm',
                              'aria-labelledby': 'confirm-title',
                              'aria-describedby': 'confirm-list' },
        h('h3', { id: 'confirm-title' }, 'Approve a risky request?'),
        h('ul', { id: 'confirm-list' }, items),
        h('label', { class: 'check', for: 'confirm-check' }, check,
          ' I have checked ', kinds.some((k) => k.kind === 'network')
              ? 'the hosts' : kinds.some((k) => k.kind === 'export')
              ? 'the file' : 'the consequences', ' and approve them.'),
        err,
        h('div', { class: 'buttons' }, cancel, ok));

    document.body.append(dlg);

    return new Promise((resolve) => {
        cancel.addEventListener('click', () => dlg.close('cancel'));
        ok.addEventListener('click', () => {
            if (!check.checked) {
                err.hidden = false;
                err.textContent = 'Tick the box to confirm, or Cancel.';
                check.focus();
                return;
            }
            dlg.close('ok');
        });
        dlg.addEventListener('close', () => {
            const yes = dlg.returnValue === 'ok';
            dlg.remove();
            resolve(yes);
        });
        dlg.showModal();
        cancel.focus();     // the safe choice first
    });
}

export function decisionPanel(app, id, getRecord, reload)
{
    const note = h('p', { class: 'decide-note', id: 'decide-note' });
    const reason = h('textarea', { id: 'reason', name: 'reason', rows: 3,
                                   maxlength: MAX_REASON, spellcheck: 'true',
                                   'aria-describedby': 'reason-hint' });
    const reasonErr = h('p', { class: 'field-error', id: 'reason-error',
                               role: 'alert', hidden: true });
    const approve = h('button', { type: 'button', class: 'approve',
                                  id: 'approve' }, 'Approve');
    const deny = h('button', { type: 'button', class: 'deny', id: 'deny' },
                   'Deny');
    const outcome = h('div', { class: 'outcome', id: 'outcome',
                               role: 'status', 'aria-live': 'polite' });
    const el = h('section', { class: 'card decide', id: 'decide',
                              'aria-labelledby': 'decide-h' },
        h('h3', { id: 'decide-h' }, 'Your decision'),
        note,
        h('label', { for: 'reason' }, 'Reason'),
        h('p', { class: 'hint', id: 'reason-hint' },
          'Required to deny, optional to approve; the agent and the audit '
          + 'trail see it. At most ' + num(MAX_REASON) + ' bytes.'),
        reason, reasonErr,
        h('div', { class: 'buttons' }, approve, deny),
        outcome);

    let busy = false;
    let stopped = false;

    function say(kind, ...msg)
    {
        replace(outcome, h('p', { class: 'result result-' + kind,
                                  id: 'outcome-text' }, ...msg));
    }

    function reasonError(msg)
    {
        reasonErr.hidden = !msg;
        reasonErr.textContent = msg || '';
        if (msg) {
            reason.setAttribute('aria-invalid', 'true');
            reason.focus();
        } else {
            reason.removeAttribute('aria-invalid');
        }
    }

    function update(rec)
    {
        const me = app.claims().sub;
        const reviewers = Array.isArray(rec.reviewers) ? rec.reviewers : [];
        let why = null;

        if (rec.state === 'expired') {
            why = 'It expired: there is nothing to decide.';
        } else if (rec.state === 'denied') {
            why = 'It was denied' + (rec.denied_by ? ' by ' + rec.denied_by : '')
                  + (rec.decided_ms ? ' at ' + when(Number(rec.decided_ms)) : '')
                  + '.';
        } else if (rec.state === 'approved') {
            why = 'It is approved; the agent may use it once before it '
                  + 'expires.';
        } else if (rec.state === 'consumed') {
            why = 'It was approved and the agent has used it.';
        } else if (rec.state !== 'pending') {
            why = 'Its state is "' + rec.state + '".';
        } else if (me !== undefined && me === rec.agent) {
            why = 'You made this request: another reviewer must decide it.';
        } else if (me !== undefined && reviewers.includes(me)) {
            why = 'You approved it already; ' + num(
                      Math.max(0, (Number(rec.threshold) || 1)
                                  - (Number(rec.approvals) || 0)))
                  + ' more reviewer(s) must approve.';
        }

        note.textContent = why || ((Number(rec.threshold) || 1) > 1
            ? 'It needs ' + num(Number(rec.threshold)) + ' different '
              + 'reviewers; ' + num(Number(rec.approvals) || 0)
              + ' approved so far.'
            : 'One approval lets it run once.');
        const closed = why !== null;
        approve.disabled = closed || busy;
        deny.disabled = (closed && !(rec.state === 'pending'
                                     && reviewers.includes(me))) || busy;
        reason.disabled = closed && deny.disabled;
    }

    async function send(verb)
    {
        const rec = getRecord();
        if (!rec || busy) {
            return;
        }
        const text = reason.value;

        if (verb === 'deny' && !/\S/.test(text)) {
            reasonError('A denial needs a reason: say why, for the agent and '
                        + 'the audit trail.');
            return;
        }
        if (utf8(text) > MAX_REASON) {
            reasonError('The reason is longer than ' + num(MAX_REASON)
                        + ' bytes.');
            return;
        }
        reasonError(null);

        if (verb === 'approve') {
            const kinds = riskKinds(rec.summary, rec.action);
            if (kinds.some((k) => k.confirm)) {
                const yes = await confirmRisky(rec, kinds);
                if (!yes) {
                    say('info', 'Not approved: you cancelled.');
                    approve.focus();
                    return;
                }
            }
        }

        busy = true;
        approve.disabled = deny.disabled = true;
        say('info', verb === 'approve' ? 'Approving…' : 'Denying…');

        try {
            const r = await decide(id, verb, /\S/.test(text) ? text : '');
            if (stopped) {
                return;
            }
            reason.value = '';
            if (verb === 'deny') {
                say('denied', 'Denied. The request will not run; the new '
                    + 'state is "' + r.state + '".');
            } else if (r.state === 'approved') {
                say('approved', 'Approved. The agent may now repeat its '
                    + 'request, once, before it expires. New state: "'
                    + r.state + '".');
            } else {
                const thr = Number(rec.threshold) || 1;
                say('approved', 'Your approval is counted (' + num(r.approvals)
                    + ' of ' + num(thr) + '). The state stays "' + r.state
                    + '" until ' + num(Math.max(0, thr - r.approvals))
                    + ' more reviewer(s) approve.');
            }
        } catch (e) {
            if (stopped || !app.fail(e)) {
                return;
            }
            const code = e.code;
            if (code === 'approval_expired') {
                say('error', 'Too late: the approval expired before your '
                    + 'decision reached the gateway. Nothing was decided.');
            } else if (code === 'not_pending') {
                say('error', 'Someone decided first: the request is now "'
                    + (e.problem.state ?? '?') + '". Your decision was not '
                    + 'recorded.');
            } else if (code === 'already_approved') {
                say('error', 'You approved it already; another reviewer '
                    + 'must.');
            } else if (code === 'self_approval') {
                say('error', 'You made this request: another reviewer must '
                    + 'decide it.');
            } else if (code === 'reason_required') {
                reasonError('A denial needs a reason.');
                say('error', e.message);
            } else if (e.kind === 'scope') {
                say('error', 'This token cannot decide: it needs the '
                    + 'approvals:review scope.');
            } else if (e.kind === 'not_found') {
                say('error', 'The gateway no longer knows this approval.');
            } else {
                say('error', e.message, ' Nothing was decided.');
            }
        } finally {
            busy = false;
        }
        if (getRecord()) {
            update(getRecord());
        }
        if (!stopped) {
            reload();
        }
    }

    approve.addEventListener('click', () => send('approve'));
    deny.addEventListener('click', () => send('deny'));
    reason.addEventListener('input', () => {
        if (!reasonErr.hidden && /\S/.test(reason.value)) {
            reasonError(null);
        }
    });

    return {
        el,
        update,
        stop() { stopped = true; },
    };
}
