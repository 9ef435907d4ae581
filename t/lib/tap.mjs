// The results of a node test script run by a prove file (t/lib/VetoNode.pm):
// each check prints "ok - name" or "not ok - name", a failed one its
// diagnostics as "# " lines; failures() counts the failed ones, for the
// script's exit status.  Used by t/mcp/mcp-client.test.mjs and
// t/browser/approval-page.test.mjs.

let failed = 0;

export function ok(cond, name, ...diag)
{
    console.log((cond ? 'ok - ' : 'not ok - ') + name);
    if (!cond) {
        failed++;
        for (const d of diag) {
            const s = typeof d === 'string' ? d : JSON.stringify(d, null, 1);
            for (const l of String(s).split('\n').slice(0, 40)) {
                console.log('# ' + l);
            }
        }
    }
    return cond;
}

export function is(got, want, name)
{
    return ok(got === want, name, 'got:  ' + JSON.stringify(got),
              'want: ' + JSON.stringify(want));
}

export function has(text, part, name)
{
    return ok(typeof text === 'string' && text.includes(part), name,
              'missing: ' + JSON.stringify(part),
              'in: ' + JSON.stringify(String(text).slice(0, 2000)));
}

// runs fn; what it throws is a failed check named after the step
export async function step(name, fn)
{
    try {
        await fn();
    } catch (e) {
        ok(false, name + ': ' + String(e && e.message).split('\n')[0],
           String((e && e.stack) || e).split('\n').slice(0, 12).join('\n'));
    }
}

export function failures()
{
    return failed;
}
