// Turning what an agent sent into text a reviewer can read exactly:
// shell quoting that shows every hidden character, sizes, times.

// Words a shell would read as themselves.
const BARE = /^[A-Za-z0-9_@%+=:,./-]+$/;

// Characters a terminal or a browser would hide, reorder or make look like
// something else: controls, format characters (bidi overrides, zero-width
// joiners, BOM), line and paragraph separators, unpaired surrogates,
// private use, spaces other than U+0020, and variation selectors.
const HIDDEN = /[\p{Cc}\p{Cf}\p{Zl}\p{Zp}\p{Cs}\p{Co}\u00a0\u1680\u2000-\u200a\u202f\u205f\u3000\u115f\u1160\u3164\uffa0\ufe00-\ufe0f]|[\u{e0100}-\u{e01ef}]/u;

const NAMED = { '\n': '\\n', '\t': '\\t', '\r': '\\r', '\x07': '\\a',
                '\b': '\\b', '\f': '\\f', '\v': '\\v', '\x1b': '\\E' };

function hex(n, width)
{
    return n.toString(16).padStart(width, '0');
}

export function hasHidden(s)
{
    return HIDDEN.test(s);
}

// One character spelled out when it would not show (\x1b, \u202e), or
// null when it shows as itself; newline and tab show as themselves in a
// block of text.
export function spellHidden(ch)
{
    if (ch === '\n' || ch === '\t' || !HIDDEN.test(ch)) {
        return null;
    }
    const cp = ch.codePointAt(0);
    return cp < 0x80 ? '\\x' + hex(cp, 2)
         : cp <= 0xffff ? '\\u' + hex(cp, 4) : '\\U' + hex(cp, 8);
}

// One argument as a POSIX shell would need it; bash's $'...' when it holds
// a character that would not show (so the reviewer sees \u202e, not a
// reversed word).
export function shellQuote(v)
{
    const s = typeof v === 'string' ? v : JSON.stringify(v);

    if (s === '') {
        return "''";
    }
    if (BARE.test(s)) {
        return s;
    }
    if (!HIDDEN.test(s)) {
        return "'" + s.replaceAll("'", "'\\''") + "'";
    }

    let out = "$'";
    for (const ch of s) {
        const cp = ch.codePointAt(0);
        if (ch === '\\' || ch === "'") {
            out += '\\' + ch;
        } else if (NAMED[ch]) {
            out += NAMED[ch];
        } else if (!HIDDEN.test(ch)) {
            out += ch;
        } else if (cp < 0x80) {
            out += '\\x' + hex(cp, 2);
        } else if (cp <= 0xffff) {
            out += '\\u' + hex(cp, 4);
        } else {
            out += '\\U' + hex(cp, 8);
        }
    }
    return out + "'";
}

export function utf8Length(s)
{
    return new TextEncoder().encode(s).length;
}

export function charLength(s)
{
    let n = 0;
    for (const _ of s) {        // eslint-disable-line no-unused-vars
        n++;
    }
    return n;
}

// The first `keep` characters of s (whole code points).
export function head(s, keep)
{
    let out = '';
    let n = 0;
    for (const ch of s) {
        if (n++ === keep) {
            break;
        }
        out += ch;
    }
    return out;
}

const NUM = new Intl.NumberFormat('en');

export function num(n)
{
    return NUM.format(n);
}

export function bytes(n)
{
    if (typeof n !== 'number' || !isFinite(n)) {
        return String(n);
    }
    const units = ['bytes', 'KiB', 'MiB', 'GiB', 'TiB'];
    let v = n;
    let u = 0;
    while (v >= 1024 && u < units.length - 1) {
        v /= 1024;
        u++;
    }
    return u === 0 ? num(n) + (n === 1 ? ' byte' : ' bytes')
                   : v.toFixed(v < 10 ? 1 : 0) + ' ' + units[u]
                     + ' (' + num(n) + ' bytes)';
}

// 45 s, 3 min 20 s, 2 h 5 min, 3 d 4 h
export function duration(ms)
{
    const s = Math.max(0, Math.floor(ms / 1000));
    if (s < 60) {
        return s + ' s';
    }
    const m = Math.floor(s / 60);
    if (m < 60) {
        return m + ' min' + (m < 10 && s % 60 ? ' ' + (s % 60) + ' s' : '');
    }
    const hr = Math.floor(m / 60);
    if (hr < 24) {
        return hr + ' h' + (m % 60 ? ' ' + (m % 60) + ' min' : '');
    }
    const d = Math.floor(hr / 24);
    return d + ' d' + (hr % 24 ? ' ' + (hr % 24) + ' h' : '');
}

export function when(ms)
{
    if (typeof ms !== 'number' || !isFinite(ms)) {
        return '—';
    }
    const d = new Date(ms);
    return d.toLocaleString('en-GB', { year: 'numeric', month: 'short',
                                       day: 'numeric', hour: '2-digit',
                                       minute: '2-digit', second: '2-digit' });
}

export function isoOrText(t)
{
    const ms = Date.parse(t);
    return isNaN(ms) ? String(t) : when(ms);
}

// Anything as readable text: strings as they are, the rest as JSON.
export function text(v)
{
    if (typeof v === 'string') {
        return v;
    }
    try {
        return JSON.stringify(v, null, 2);
    } catch {
        return String(v);
    }
}

export const ACTIONS = {
    'sandbox.exec': 'Run a command',
    'sandbox.create': 'Create a sandbox',
    'sandbox.delete': 'Delete a sandbox',
    'sandbox.files.write': 'Write a file into a sandbox',
    'sandbox.files.read': 'Export a file out of a sandbox',
};

export function actionLabel(a)
{
    return ACTIONS[a] || String(a);
}

// Names whose value changes what a command does (which binary runs,
// what gets preloaded or sourced, where traffic goes): only for a summary
// without env_flagged (an older gateway's); the gateway flags every name
// that is not inert.
const DANGEROUS_ENV = [
    /^PATH$/, /^LD_/, /^BASH_ENV$/, /^ENV$/, /^BASH_FUNC_/, /^SHELLOPTS$/,
    /^IFS$/, /^PS4$/, /^PROMPT_COMMAND$/, /^PYTHON/, /^NODE_OPTIONS$/,
    /^NODE_PATH$/, /^PERL5/, /^PERLLIB$/, /^RUBYOPT$/, /^RUBYLIB$/,
    /^GIT_/, /_PROXY$/i, /^HOME$/, /^TMPDIR$/, /^GCONV_PATH$/,
    /^MALLOC_/, /^JAVA_TOOL_OPTIONS$/, /^_JAVA_OPTIONS$/, /^CURL_HOME$/,
    /^SSL_CERT_(FILE|DIR)$/, /^REQUESTS_CA_BUNDLE$/, /^NPM_CONFIG_/i,
    /^PIP_/, /^XDG_CONFIG_HOME$/,
];

export function dangerousEnv(name)
{
    return DANGEROUS_ENV.some((re) => re.test(String(name)));
}
