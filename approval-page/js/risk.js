// What makes a request risky enough to say so up front, and which kinds
// need a second, explicit confirmation before an approval is sent.

import { dangerousEnv, hasHidden } from './format.js';

// The hosts a request grants, as shown: "hosts", then those of
// "needs_approval" it lacks.  The gateway cuts long lists for display,
// keeping the hosts a human grants (needs_approval) first, so "hosts" may
// hold fewer of them, or none.
function networkHosts(net)
{
    if (!net || typeof net !== 'object' || Array.isArray(net)) {
        return [];
    }
    const out = Array.isArray(net.hosts) ? net.hosts.map(String) : [];
    if (Array.isArray(net.needs_approval)) {
        for (const x of net.needs_approval.map(String)) {
            if (!out.includes(x)) {
                out.push(x);
            }
        }
    }
    return out;
}

// How many hosts the request grants in all when the gateway cut the list
// for display (hosts_count), else 0.
export function networkCut(net)
{
    if (net && typeof net === 'object' && net.hosts_truncated === true
        && Number.isSafeInteger(net.hosts_count)) {
        return net.hosts_count;
    }
    return 0;
}

// A sandbox network other than "none" (a string or {mode, hosts}).
export function networkEgress(net)
{
    if (net === undefined || net === null || net === 'none') {
        return false;
    }
    if (typeof net === 'object' && !Array.isArray(net)) {
        const hosts = networkHosts(net);
        return hosts.length > 0
               || (net.mode !== undefined && net.mode !== 'none');
    }
    return true;
}

export { networkHosts };

function envNames(s)
{
    const names = new Set();
    if (Array.isArray(s.env_names)) {
        s.env_names.forEach((n) => names.add(String(n)));
    }
    if (s.env && typeof s.env === 'object' && !Array.isArray(s.env)) {
        Object.keys(s.env).forEach((n) => names.add(n));
    }
    return [...names];
}

export { envNames };

// [{kind, label, confirm}]: confirm marks the kinds that need the
// explicit confirmation step.
export function riskKinds(summary, action)
{
    const s = summary && typeof summary === 'object' ? summary : {};
    const out = [];

    if (networkEgress(s.network)) {
        out.push({ kind: 'network', label: 'network egress', confirm: true });
    }
    if (action === 'sandbox.files.read') {
        out.push({ kind: 'export', label: 'file export', confirm: true });
    }
    if (s.irreversible === true) {
        out.push({ kind: 'irreversible', label: 'irreversible',
                   confirm: true });
    }
    if (Array.isArray(s.env_flagged) ? s.env_flagged.length > 0
                                     : envNames(s).some(dangerousEnv)) {
        out.push({ kind: 'env', label: 'sensitive env', confirm: false });
    }
    if (s.argv_truncated === true || s.stdin_truncated === true
        || networkCut(s.network) > 0) {
        out.push({ kind: 'truncated', label: 'cut for display',
                   confirm: false });
    }
    if (Array.isArray(s.argv)
        && s.argv.some((a) => typeof a === 'string' && hasHidden(a))) {
        out.push({ kind: 'hidden', label: 'hidden characters',
                   confirm: false });
    }
    return out;
}
