// The approval page: asks once per browser session for the reviewer's
// token, then shows the list (#/) or one approval (#/approval/apr_…).
// Routing is in the fragment, so nothing but the static files is ever
// requested by URL; the token never appears in one.

import { h, replace, $ } from './dom.js';
import { getToken, setToken, forgetToken, tokenShapeError, tokenClaims,
         serverNow, APPROVAL_ID } from './api.js';
import { duration } from './format.js';
import { listView } from './list.js';
import { detailView } from './detail.js';

let view = null;
let claims = {};
let trouble = null;     // 'redis' | 'unavailable' | 'network' while failing

function stopView()
{
    if (view) {
        view.stop();
        view = null;
    }
}

function banner(msg)
{
    const b = $('banner');
    b.hidden = !msg;
    b.textContent = msg || '';
}

function who()
{
    const el = $('who');
    const exp = Number(claims.exp);
    const left = isFinite(exp) ? exp * 1000 - serverNow() : NaN;
    const forget = h('button', { type: 'button', class: 'secondary small',
                                 id: 'forget' }, 'Forget token');
    forget.addEventListener('click', () => {
        forgetToken();
        showTokenForm('Token forgotten. Paste one to continue.');
    });
    replace(el,
        h('span', { class: 'who-id' }, 'Signed in as ',
          h('b', { id: 'who-sub' }, String(claims.sub ?? '?')),
          claims.tenant !== undefined ? [' · tenant ',
                                         h('b', null, String(claims.tenant))]
                                      : null),
        h('span', { class: 'who-exp' },
          isNaN(left) ? '' : left > 0 ? ' · token valid ' + duration(left)
                                      : ' · token expired'),
        forget);
    el.hidden = false;
}

export const app = {
    claims()
    {
        return { sub: claims.sub, tenantValue: claims.tenant };
    },

    ok()
    {
        if (trouble) {
            trouble = null;
            banner(null);
        }
    },

    // true: the caller shows the error in place; false: the app took
    // over (the token must be entered again).
    fail(e)
    {
        if (e.kind === 'unauthorised') {
            forgetToken();
            showTokenForm(e.message + '. Enter a new token.');
            return false;
        }
        if (e.kind === 'redis' || e.kind === 'unavailable'
            || e.kind === 'network') {
            trouble = e.kind;
            banner(e.message);
        }
        return true;
    },

    pollDelay(base)
    {
        return document.hidden ? Math.max(base, 15000) : base;
    },
};

function showTokenForm(why)
{
    stopView();
    claims = {};
    $('who').hidden = true;
    banner(null);

    const input = h('input', { id: 'token', name: 'token', type: 'password',
                               autocomplete: 'off', spellcheck: 'false',
                               autocapitalize: 'off',
                               'aria-describedby': 'token-hint token-error' });
    const err = h('p', { class: 'field-error', id: 'token-error',
                         role: 'alert', hidden: true });
    const form = h('form', { class: 'card token-form', id: 'token-form',
                             'aria-labelledby': 'token-h' },
        h('h2', { id: 'token-h' }, 'Reviewer token'),
        why ? h('p', { class: 'notice notice-auth', id: 'token-why',
                       role: 'alert' }, why) : null,
        h('label', { for: 'token' }, 'Bearer token'),
        h('p', { class: 'hint', id: 'token-hint' },
          'A token of your tenant with the approvals:review scope (and '
          + 'audit:read to see earlier decisions). It stays in this tab '
          + '(sessionStorage) until you close the tab or press "Forget '
          + 'token", and is sent only to this gateway, in the '
          + 'Authorization header.'),
        input, err,
        h('div', { class: 'buttons' },
          h('button', { type: 'submit', class: 'approve', id: 'token-submit' },
            'Continue')));

    form.addEventListener('submit', (ev) => {
        ev.preventDefault();
        const t = input.value.trim().replace(/^Bearer\s+/i, '');
        const bad = tokenShapeError(t);
        if (bad) {
            err.hidden = false;
            err.textContent = bad;
            input.setAttribute('aria-invalid', 'true');
            input.focus();
            return;
        }
        input.value = '';
        setToken(t);
        route();
    });

    replace($('main'), form);
    input.focus();
}

function route()
{
    const token = getToken();
    if (!token) {
        showTokenForm(null);
        return;
    }
    stopView();
    claims = tokenClaims(token);
    who();

    const m = /^#\/approval\/([^/?#]+)$/.exec(location.hash);
    if (m && APPROVAL_ID.test(m[1])) {
        document.title = 'Approval · Veto Sandbox';
        view = detailView($('main'), app, m[1]);
    } else {
        if (location.hash !== '' && location.hash !== '#/') {
            history.replaceState(null, '', '#/');
        }
        view = listView($('main'), app);
    }
}

window.addEventListener('hashchange', route);
// a token entered in another tab of this session is not shared
// (sessionStorage is per tab); one forgotten here is forgotten here
route();
