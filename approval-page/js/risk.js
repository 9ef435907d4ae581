// What makes a request risky enough to say so up front, and which kinds
// need a second, explicit confirmation before an approval is sent.

import { dangerousEnv, hasHidden } from './format.js';

function networkHosts(net)
{
    if (net && typeof net === 'object' && Array.isArray(net.hosts)) {
        return net.hosts.map(String);
    }
    return [];
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
    if (envNames(s).some(dangerousEnv)) {
        out.push({ kind: 'env', label: 'sensitive env', confirm: false });
    }
    if (s.argv_truncated === true || s.stdin_truncated === true) {
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
