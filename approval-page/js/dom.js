// Every element the page makes goes through h().  Children that are not
// nodes become Text nodes, so nothing an agent sent is ever parsed as
// HTML; attributes come from an allowlist that has nothing which can run
// code or load anything (no href, src, style, on*).  The page never
// assigns markup to an HTML sink, and its Content-Security-Policy
// enforces Trusted Types, so a string assigned to one would throw anyway.

const ALLOWED = new Set([
    'id', 'class', 'type', 'name', 'value', 'for', 'role', 'tabindex',
    'hidden', 'disabled', 'checked', 'selected', 'autocomplete',
    'spellcheck', 'rows', 'maxlength', 'placeholder', 'required', 'title',
    'datetime', 'lang', 'dir', 'scope', 'open', 'inputmode', 'autocapitalize',
]);

function allowed(name)
{
    return ALLOWED.has(name) || /^(aria|data)-[a-z-]+$/.test(name);
}

export function append(el, children)
{
    for (const c of children.flat(Infinity)) {
        if (c === null || c === undefined || c === false) {
            continue;
        }
        el.append(c instanceof Node ? c : document.createTextNode(String(c)));
    }
    return el;
}

// h('p', {class: 'x', on: {click: fn}}, 'text', child, [more])
export function h(tag, attrs, ...children)
{
    const el = document.createElement(tag);

    for (const [k, v] of Object.entries(attrs || {})) {
        if (k === 'on') {
            for (const [ev, fn] of Object.entries(v)) {
                el.addEventListener(ev, fn);
            }
            continue;
        }
        if (!allowed(k)) {
            throw new Error('h(): attribute not allowed: ' + k);
        }
        if (v === null || v === undefined || v === false) {
            continue;
        }
        el.setAttribute(k, v === true ? '' : String(v));
    }

    return append(el, children);
}

export function replace(el, ...children)
{
    el.replaceChildren();
    return append(el, children);
}

export function $(id)
{
    return document.getElementById(id);
}
