// Rendering pieces shared by the detail view and the history: definition
// rows, folded long values, the argv as a shell line.  Every value goes
// in as text.

import { h } from './dom.js';
import { shellQuote, charLength, utf8Length, head, num, text,
         spellHidden } from './format.js';

export const FOLD_AT = 200;      // characters shown before a value folds
const FOLD_KEEP = 160;

export function row(label, ...value)
{
    return h('div', { class: 'row' }, h('dt', null, label),
             h('dd', null, ...value));
}

export function missing(why)
{
    return h('span', { class: 'missing' }, why);
}

// The fold marker says how long the whole value is; it is page text in
// its own style, outside the quotes, so a value cannot pass itself off
// as one.
export function foldMark(full)
{
    const chars = charLength(full);
    const b = utf8Length(full);
    return h('span', { class: 'fold' },
             ' … [folded: ' + num(chars) + ' characters'
             + (b !== chars ? ', ' + num(b) + ' bytes' : '') + ' in all]');
}

// s as nodes, each character that would not show (a control, a bidi
// override, ...) spelled out in a marked span: never hidden, never
// passed off as the text around it.
export function visible(s)
{
    const out = [];
    let run = '';
    for (const ch of s) {
        const spelled = spellHidden(ch);
        if (spelled === null) {
            run += ch;
            continue;
        }
        if (run) {
            out.push(run);
            run = '';
        }
        out.push(h('span', { class: 'hidden-char', title: 'a character that '
                             + 'does not show' }, spelled));
    }
    if (run) {
        out.push(run);
    }
    return out;
}

// A possibly long text value, folded unless `open` (the fold is marked,
// and the caller offers to unfold).
export function longText(v, open, cls)
{
    const s = text(v);
    if (open || charLength(s) <= FOLD_AT) {
        return h('span', { class: cls || 'val' }, visible(s));
    }
    return h('span', { class: (cls || 'val') + ' folded' },
             visible(head(s, FOLD_KEEP)), foldMark(s));
}

// The argv as one shell line: each element quoted, long ones folded.
// Returns {el, folded} so the caller can offer to unfold.
export function shellLine(argv, open)
{
    let folded = false;
    const parts = [];
    argv.forEach((a, i) => {
        const raw = typeof a === 'string' ? a : JSON.stringify(a);
        const q = shellQuote(raw);
        if (i) {
            parts.push(' ');
        }
        if (open || charLength(q) <= FOLD_AT) {
            parts.push(h('span', { class: 'arg' }, q));
        } else {
            folded = true;
            parts.push(h('span', { class: 'arg folded' }, head(q, FOLD_KEEP),
                          foldMark(raw)));
        }
    });
    return { el: h('pre', { class: 'cmd', id: 'argv' }, parts), folded };
}

// A JSON value of unknown meaning, as text.
export function generic(v, open)
{
    if (v !== null && typeof v === 'object') {
        const s = text(v);
        return h('pre', { class: 'json' },
                 open || charLength(s) <= FOLD_AT * 4 ? s
                      : [head(s, FOLD_KEEP * 4), foldMark(s)]);
    }
    return longText(v, open, 'val mono');
}
