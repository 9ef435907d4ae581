// The approvals and audit API, with the reviewer's bearer token.
//
// The token lives in sessionStorage only (this tab, until it closes): it
// is sent in the Authorization header, never in a URL, a cookie or
// anything the page logs.  Requests omit cookies and referrers and refuse
// redirects.

const TOKEN_KEY = 'veto-review-token';
const MAX_TOKEN = 16384;

export function getToken()
{
    try {
        return sessionStorage.getItem(TOKEN_KEY) || '';
    } catch {
        return '';
    }
}

export function setToken(t)
{
    sessionStorage.setItem(TOKEN_KEY, t);
}

export function forgetToken()
{
    try {
        sessionStorage.removeItem(TOKEN_KEY);
    } catch {
        /* storage disabled: nothing stored */
    }
}

// A JWT's shape (three base64url parts), not its validity: the gateway
// decides that.
export function tokenShapeError(t)
{
    if (t === '') {
        return 'Paste your reviewer token.';
    }
    if (t.length > MAX_TOKEN) {
        return 'That is longer than any token the gateway accepts.';
    }
    if (!/^[A-Za-z0-9_-]+\.[A-Za-z0-9_-]+\.[A-Za-z0-9_-]+$/.test(t)) {
        return 'That does not look like a token (three base64url parts '
               + 'separated by dots, without "Bearer ").';
    }
    return null;
}

// The token's claims as the page shows them ("signed in as"); unverified,
// for display only.
export function tokenClaims(t)
{
    try {
        let p = t.split('.')[1].replaceAll('-', '+').replaceAll('_', '/');
        p += '='.repeat((4 - p.length % 4) % 4);
        const bin = atob(p);
        const bytes = Uint8Array.from(bin, (c) => c.charCodeAt(0));
        const c = JSON.parse(new TextDecoder().decode(bytes));
        return c && typeof c === 'object' ? c : {};
    } catch {
        return {};
    }
}

// The gateway's clock (the Date header) against ours: approval times are
// the server's, and "time left" must not depend on this laptop's clock.
let skewMs = 0;

function noteDate(res)
{
    const d = Date.parse(res.headers.get('Date') || '');
    if (!isNaN(d)) {
        const s = d - Date.now();
        // Date has whole seconds: only a larger difference is skew
        skewMs = Math.abs(s) > 1500 ? s : 0;
    }
}

export function serverNow()
{
    return Date.now() + skewMs;
}

export class ApiError extends Error {
    constructor(kind, status, problem, message)
    {
        super(message);
        this.kind = kind;           // unauthorised, scope, redis, ...
        this.status = status;
        this.problem = problem || {};
    }

    get code()
    {
        const t = this.problem.type;
        return typeof t === 'string' ? t.replace(/^.*:/, '') : '';
    }
}

function problemText(p, fallback)
{
    const parts = [];
    if (p && typeof p.title === 'string') {
        parts.push(p.title);
    }
    if (p && typeof p.detail === 'string' && p.detail !== p.title) {
        parts.push(p.detail);
    }
    return parts.length ? parts.join(': ') : fallback;
}

function classify(status, p, res)
{
    const code = p && typeof p.type === 'string' ? p.type.replace(/^.*:/, '')
                                                 : '';
    if (status === 401) {
        const www = res.headers.get('WWW-Authenticate') || '';
        const m = /error_description="([^"]*)"/.exec(www);
        return new ApiError('unauthorised', status, p,
                            m ? 'The gateway refused the token: ' + m[1]
                              : problemText(p, 'The gateway refused the token'));
    }
    if (status === 403 && code === 'insufficient_scope') {
        return new ApiError('scope', status, p,
                            problemText(p, 'The token lacks a scope'));
    }
    if (status === 503 && code === 'redis_unavailable') {
        return new ApiError('redis', status, p,
                            'Redis is unavailable: the gateway can neither '
                            + 'read nor record decisions right now. Nothing '
                            + 'was decided; the page keeps trying.');
    }
    if (status === 503 || status === 502 || status === 504) {
        return new ApiError('unavailable', status, p,
                            problemText(p, 'The gateway is unavailable ('
                                           + status + ')'));
    }
    if (status === 404) {
        return new ApiError('not_found', status, p,
                            problemText(p, 'Not found'));
    }
    return new ApiError('error', status, p,
                        problemText(p, 'The gateway answered ' + status));
}

// One API call: {status, data} or an ApiError.
export async function call(method, path, body)
{
    const token = getToken();
    if (!token) {
        throw new ApiError('unauthorised', 401, null, 'No token entered');
    }

    const headers = { Authorization: 'Bearer ' + token,
                      Accept: 'application/json' };
    const init = { method, headers, cache: 'no-store', credentials: 'omit',
                   redirect: 'error', referrerPolicy: 'no-referrer' };
    if (body !== undefined) {
        headers['Content-Type'] = 'application/json';
        init.body = JSON.stringify(body);
    }

    let res;
    try {
        res = await fetch(path, init);
    } catch {
        throw new ApiError('network', 0, null,
                           'The gateway cannot be reached (network error)');
    }

    noteDate(res);

    let data = null;
    if (/json/.test(res.headers.get('Content-Type') || '')) {
        try {
            data = await res.json();
        } catch {
            data = null;
        }
    }

    if (res.ok) {
        if (data === null || typeof data !== 'object') {
            throw new ApiError('error', res.status, null,
                               'The gateway sent a reply this page cannot read');
        }
        return { status: res.status, data };
    }

    throw classify(res.status, data, res);
}

export const APPROVAL_ID = /^apr_[0-9a-f]{32}$/;

// The cursor of the next page: a "next" (or "next_cursor", "cursor")
// field when the API pages, absent or null on the last page and in the
// unpaged replies of today.  A path is followed only within the same
// endpoint; anything else is sent back as ?cursor=.
export function nextPath(basePath, data)
{
    const n = data.next ?? data.next_cursor ?? data.cursor ?? null;
    if (typeof n !== 'string' || n === '') {
        return null;
    }
    const endpoint = basePath.split('?')[0];
    if (n.startsWith(endpoint + '?')) {
        return n;
    }
    if (n.startsWith('/')) {
        return null;            // somewhere else: not followed
    }
    const u = new URLSearchParams(basePath.split('?')[1] || '');
    u.set('cursor', n);
    return endpoint + '?' + u.toString();
}

// Approvals in one state, newest first: the first `pages` pages.
export async function listApprovals(state, pages)
{
    const base = '/v1/approvals?state=' + encodeURIComponent(state);
    const items = [];
    let path = base;
    let more = null;

    for (let i = 0; path && i < pages; i++) {
        const { data } = await call('GET', path);
        if (!Array.isArray(data.approvals)) {
            throw new ApiError('error', 200, null,
                               'The approvals reply has no "approvals" list');
        }
        items.push(...data.approvals);
        path = nextPath(base, data);
        more = path;
    }

    // newest first whatever the server's order; one entry per id
    const seen = new Set();
    const out = items.filter((a) => a && typeof a.id === 'string'
                                    && !seen.has(a.id) && seen.add(a.id));
    out.sort((a, b) => (Number(b.created_ms) || 0) - (Number(a.created_ms) || 0));
    return { items: out, more };
}

export async function getApproval(id)
{
    return (await call('GET', '/v1/approvals/' + encodeURIComponent(id))).data;
}

export async function decide(id, verb, reason)
{
    const body = reason ? { reason } : {};
    return (await call('POST', '/v1/approvals/' + encodeURIComponent(id)
                               + '/' + verb, body)).data;
}

export async function audit(params)
{
    const u = new URLSearchParams();
    for (const [k, v] of Object.entries(params)) {
        if (v !== undefined && v !== null && v !== '') {
            u.set(k, String(v));
        }
    }
    const { data } = await call('GET', '/v1/audit?' + u.toString());
    return Array.isArray(data.records) ? data.records : [];
}
