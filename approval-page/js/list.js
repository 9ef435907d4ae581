// The list: approvals of the reviewer's tenant in one state (pending by
// default), newest first, with age and time left, filters by agent and
// action, pages of PAGE_SIZE, refreshed by polling without a reload.

import { h, replace } from './dom.js';
import { listApprovals, serverNow, APPROVAL_ID } from './api.js';
import { actionLabel, duration, num, shellQuote, head } from './format.js';
import { riskKinds } from './risk.js';

export const POLL_MS = 4000;
const PAGE_SIZE = 20;
const MAX_SERVER_PAGES = 20;

// kept across visits to a detail view
const keep = {
    state: 'pending',
    agent: '',
    action: '',
    page: 0,
    serverPages: 1,
    focusId: null,
};

const STATES = ['pending', 'approved', 'denied', 'expired', 'consumed'];

function whatLine(a)
{
    const s = a.summary && typeof a.summary === 'object' ? a.summary : {};
    if (Array.isArray(s.argv)) {
        const line = s.argv.map(shellQuote).join(' ');
        return line.length > 160 ? head(line, 157) + '…' : line;
    }
    if (typeof s.path === 'string') {
        return shellQuote(s.path);
    }
    if (typeof s.profile === 'string') {
        return 'profile ' + s.profile;
    }
    return '';
}

function timeLeft(a)
{
    if (a.state !== 'pending' && a.state !== 'approved') {
        return null;
    }
    const left = Number(a.expires_ms) - serverNow();
    return left > 0 ? duration(left) + ' left' : 'expired';
}

function ageText(a)
{
    const c = Number(a.created_ms);
    return isFinite(c) && c > 0 ? duration(serverNow() - c) + ' ago'
                                : 'time unknown';
}

function options(values, current, all)
{
    const out = [h('option', { value: '' }, all)];
    for (const v of values) {
        out.push(h('option', { value: v, selected: v === current }, v));
    }
    return out;
}

export function listView(main, app)
{
    let items = [];
    let more = null;
    let loaded = false;
    let timer = null;
    let ticker = null;
    let stopped = false;
    let clocks = [];
    let lastSig = '';
    let lastOptSig = '';

    const title = h('h2', { id: 'list-title', tabindex: '-1' });
    const stateSel = h('select', { id: 'f-state', name: 'state' });
    const agentSel = h('select', { id: 'f-agent', name: 'agent' });
    const actionSel = h('select', { id: 'f-action', name: 'action' });
    const refresh = h('button', { type: 'button', class: 'secondary',
                                  id: 'refresh' }, 'Refresh now');
    const status = h('p', { class: 'status', id: 'list-status' });
    // announced to screen readers only when the list changes, not on
    // every poll
    const announce = h('p', { class: 'sr', id: 'list-announce',
                              'aria-live': 'polite' });
    const list = h('ul', { class: 'items', id: 'items',
                           'aria-labelledby': 'list-title' });
    const empty = h('p', { class: 'state', id: 'list-state' }, 'Loading…');
    const newer = h('button', { type: 'button', class: 'secondary',
                                id: 'page-newer' }, '← Newer');
    const older = h('button', { type: 'button', class: 'secondary',
                                id: 'page-older' }, 'Older →');
    const pageInfo = h('span', { class: 'page-info', id: 'page-info' });

    document.title = 'Approvals · Veto Sandbox';
    replace(stateSel, STATES.map((s) => h('option', { value: s,
                                                       selected: s === keep.state },
                                          s)));

    replace(main,
        h('section', { class: 'list', 'aria-busy': 'true', id: 'list' },
          h('div', { class: 'list-head' }, title, refresh),
          h('div', { class: 'filters', role: 'group',
                     'aria-label': 'Filters' },
            h('label', { for: 'f-state' }, 'State', stateSel),
            h('label', { for: 'f-agent' }, 'Agent', agentSel),
            h('label', { for: 'f-action' }, 'Action', actionSel)),
          status, announce, empty, list,
          h('nav', { class: 'pager', 'aria-label': 'Pages' },
            newer, pageInfo, older)));

    function filtered()
    {
        return items.filter((a) => (!keep.agent || a.agent === keep.agent)
                                   && (!keep.action || a.action === keep.action));
    }

    function tick()
    {
        for (const c of clocks) {
            c.age.textContent = ageText(c.a);
            const left = timeLeft(c.a);
            if (c.left && left !== null) {
                c.left.textContent = left;
                c.left.classList.toggle('soon',
                    Number(c.a.expires_ms) - serverNow() < 60000);
            }
        }
    }

    function item(a)
    {
        const age = h('span', { class: 'age' }, ageText(a));
        const leftText = timeLeft(a);
        const left = leftText === null ? null
                   : h('span', { class: 'left' }, leftText);
        clocks.push({ a, age, left });

        const chips = riskKinds(a.summary, a.action).map((r) =>
            h('span', { class: 'chip chip-' + r.kind }, r.label));

        const thr = Number(a.threshold) || 1;
        const btn = h('button', {
            type: 'button', class: 'item state-' + a.state,
            'data-id': a.id,
            on: { click: () => open(a.id) },
        },
            h('span', { class: 'item-top' },
              h('span', { class: 'item-action' }, actionLabel(a.action)),
              h('span', { class: 'item-agent' }, 'by ', h('b', null, String(a.agent))),
              chips),
            h('code', { class: 'item-what' }, whatLine(a)),
            h('span', { class: 'item-meta' },
              'requested ', age,
              left ? [' · ', left] : [' · ', a.state],
              ' · ', num(Number(a.approvals) || 0), ' of ', num(thr),
              thr === 1 ? ' approval' : ' approvals'));
        return h('li', null, btn);
    }

    function open(id)
    {
        if (APPROVAL_ID.test(id)) {
            keep.focusId = id;
            location.hash = '#/approval/' + id;
        }
    }

    function render()
    {
        const f = filtered();
        const pages = Math.max(1, Math.ceil(f.length / PAGE_SIZE));
        if (keep.page >= pages && !more) {
            keep.page = pages - 1;
        }

        title.textContent = keep.state.charAt(0).toUpperCase()
                            + keep.state.slice(1) + ' approvals';

        const agents = [...new Set(items.map((a) => String(a.agent)))].sort();
        const actions = [...new Set(items.map((a) => String(a.action)))].sort();
        if (keep.agent && !agents.includes(keep.agent)) {
            agents.push(keep.agent);
        }
        if (keep.action && !actions.includes(keep.action)) {
            actions.push(keep.action);
        }
        // rebuilt only when they change: a poll must not close an open
        // drop-down under the reviewer's pointer
        const optSig = JSON.stringify([agents, actions, keep.agent,
                                       keep.action]);
        if (optSig !== lastOptSig) {
            lastOptSig = optSig;
            replace(agentSel, options(agents, keep.agent, 'All agents'));
            replace(actionSel, options(actions, keep.action, 'All actions'));
        }

        const slice = f.slice(keep.page * PAGE_SIZE,
                              (keep.page + 1) * PAGE_SIZE);

        const focused = document.activeElement
                        && document.activeElement.closest
                        && document.activeElement.closest('.item');
        const focusId = focused ? focused.getAttribute('data-id')
                                : null;

        clocks = [];
        replace(list, slice.map(item));

        if (loaded) {
            empty.classList.remove('state-error');
        }
        if (!loaded) {
            empty.hidden = false;
            empty.textContent = 'Loading…';
        } else if (items.length === 0) {
            empty.hidden = false;
            empty.textContent = 'No ' + keep.state + ' approvals. New '
                + 'requests appear here by themselves (checked every '
                + POLL_MS / 1000 + ' s).';
        } else if (f.length === 0) {
            empty.hidden = false;
            empty.textContent = 'No ' + keep.state + ' approvals match these '
                + 'filters (' + num(items.length) + ' in all).';
        } else {
            empty.hidden = true;
        }

        pageInfo.textContent = f.length
            ? 'Page ' + (keep.page + 1) + ' of ' + pages + ' · '
              + num(f.length) + (more ? '+' : '') + ' '
              + keep.state
            : '';
        newer.disabled = keep.page === 0;
        older.disabled = keep.page >= pages - 1 && !more;

        const want = focusId || keep.focusId;
        if (want) {
            const b = list.querySelector('.item[data-id="' + CSS.escape(want)
                                         + '"]');
            if (b) {
                b.focus();
                keep.focusId = null;
            } else if (loaded) {
                keep.focusId = null;
            }
        }
    }

    async function load()
    {
        clearTimeout(timer);
        try {
            const r = await listApprovals(keep.state, keep.serverPages);
            if (stopped) {
                return;
            }
            if (loaded) {
                const before = new Set(items.map((a) => a.id));
                const fresh = r.items.filter((a) => !before.has(a.id));
                if (fresh.length) {
                    announce.textContent = fresh.length === 1
                        ? 'New: ' + actionLabel(fresh[0].action) + ' by '
                          + String(fresh[0].agent)
                        : fresh.length + ' new requests';
                }
            }
            if (keep.state === 'pending') {
                document.title = (r.items.length ? '(' + r.items.length
                                  + (r.more ? '+' : '') + ') ' : '')
                                 + 'Approvals · Veto Sandbox';
            }
            items = r.items;
            more = r.more;
            loaded = true;
            app.ok();
            main.querySelector('#list').setAttribute('aria-busy', 'false');
            status.textContent = 'Updated ' + new Date().toLocaleTimeString('en-GB')
                + ' · checks every ' + POLL_MS / 1000 + ' s';
            status.classList.remove('stale');
            const sig = JSON.stringify(items.map((a) => [a.id, a.state,
                                                         a.approvals]))
                        + keep.agent + keep.action + keep.page + keep.state
                        + more;
            if (sig !== lastSig) {
                lastSig = sig;
                render();
            }
        } catch (e) {
            if (stopped) {
                return;
            }
            if (!app.fail(e)) {
                return;         // the app took over (new token needed)
            }
            status.textContent = e.message;
            status.classList.add('stale');
            if (!loaded) {
                empty.hidden = false;
                empty.textContent = e.kind === 'scope'
                    ? 'This token cannot list approvals: it needs the '
                      + 'approvals:review scope. ' + e.message
                    : 'Could not load the approvals. ' + e.message;
                empty.classList.add('state-error');
            }
        }
        if (!stopped) {
            timer = setTimeout(load, app.pollDelay(POLL_MS));
        }
    }

    stateSel.addEventListener('change', () => {
        keep.state = stateSel.value;
        keep.page = 0;
        keep.serverPages = 1;
        loaded = false;
        items = [];
        lastSig = '';
        render();
        load();
    });
    agentSel.addEventListener('change', () => {
        keep.agent = agentSel.value;
        keep.page = 0;
        lastSig = '';
        render();
    });
    actionSel.addEventListener('change', () => {
        keep.action = actionSel.value;
        keep.page = 0;
        lastSig = '';
        render();
    });
    refresh.addEventListener('click', () => load());
    newer.addEventListener('click', () => {
        keep.page = Math.max(0, keep.page - 1);
        lastSig = '';
        render();
        list.querySelector('.item')?.focus();
    });
    older.addEventListener('click', async () => {
        const pages = Math.ceil(filtered().length / PAGE_SIZE);
        if (keep.page < pages - 1) {
            keep.page++;
            lastSig = '';
            render();
        } else if (more && keep.serverPages < MAX_SERVER_PAGES) {
            // the next page starts at the first request not shown yet,
            // which may be on this page when it was not full
            const shown = filtered().length;
            keep.serverPages++;
            await load();
            keep.page = Math.min(Math.floor(shown / PAGE_SIZE),
                                 Math.max(0, Math.ceil(filtered().length
                                                       / PAGE_SIZE) - 1));
            lastSig = '';
            render();
        }
        list.querySelector('.item')?.focus();
    });

    render();
    ticker = setInterval(tick, 1000);
    load();

    return {
        stop()
        {
            stopped = true;
            clearTimeout(timer);
            clearInterval(ticker);
        },
    };
}
