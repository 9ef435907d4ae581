#!/usr/bin/perl
# Background execs through nginx: 202 with the exec id and a Location,
# its state and result, its output polled by offset while it runs and
# followed live (ndjson), a server it starts reached over loopback by a
# later exec, a kill with confirmation, its deadline, the sandbox's
# delete killing it (no process of the sandbox's uids is left), the
# approval gate (background is part of the canonical request), records,
# and the errors an agent can act on.

use strict;
use warnings;

use Test::More;
use JSON::PP;
use Time::HiRes qw(time sleep);
use lib 't/lib';
use VetoNginx;
use VetoStream;
use Eventually qw(eventually);

VetoNginx::need(qw(helper redis));

my $policy = VetoNginx::default_policy();
$policy->{tenants}{acme}{agents}{'agent-apr'} = {
    approvals => { always => ['sandbox.exec'] },
};

my $n = VetoNginx->new;
$n->start_redis;
my $helper = $n->start_helper;
$n->start(redis => 1, policy => $policy);

my $t = $n->token;
my $rev = $n->token(sub => 'human-1', scope => 'approvals:review audit:read');
my $true = JSON::PP::true;
my ($st, $h, $b, $j);

($st, $h, $b, $j) = $n->request(POST => '/v1/sandboxes', $t,
                                { limits => { timeout_s => 30 } });
is($st, 201, 'create') or BAIL_OUT($b);
my $sb = $j->{id};

sub bg
{
    my ($argv, %o) = @_;
    return $n->request(POST => "/v1/sandboxes/$sb/exec", $o{token} // $t,
                       { argv => $argv, background => $true,
                         %{ $o{body} // {} } },
                       $o{headers});
}

sub state_of
{
    my ($id) = @_;
    my (undef, undef, undef, $j) = $n->request(GET =>
        "/v1/sandboxes/$sb/execs/$id", $t);
    return $j;
}

sub wait_ended
{
    my ($id, $secs) = @_;
    my $s;
    eventually("exec $id ends", $secs, sub {
        $s = state_of($id);
        ($s->{state} // 'running') ne 'running';
    });
    return $s;
}

sub audit_records
{
    my ($st, $h, $b, $j) = $n->request(GET => '/v1/audit?limit=300', $rev);
    return map { $_->{detail} = eval { decode_json($_->{detail}) }
                     // $_->{detail} unless ref $_->{detail}; $_ }
           @{ $j->{records} // [] };
}

# processes whose uid is one of the helper's sandbox uids
sub sandbox_procs
{
    my @p;
    for my $f (glob '/proc/[0-9]*/status') {
        open(my $fh, '<', $f) or next;
        local $/;
        my $s = <$fh> // '';
        my ($uid) = $s =~ /^Uid:\s+(\d+)/m or next;
        push @p, $f if $uid >= $helper->uid_base && $uid < $helper->uid_end;
    }
    return @p;
}

# ---- start, state, output by offset while it runs, then its result
my $ex;
{
    my $t0 = time;
    ($st, $h, $b, $j) = bg(['sh', '-c',
        'for i in 1 2 3 4 5 6; do echo "line $i"; sleep 0.4; done; '
        . 'echo done >&2; exit 4']);
    ok(time - $t0 < 2, 'answered at once');
    is($st, 202, 'background: 202') or diag $b;
    $ex = $j->{id};
    like($ex, qr/^ex-[0-9a-f]{16}$/, "exec id $ex");
    is($h->{location}, "/v1/sandboxes/$sb/execs/$ex", 'Location');
    is($j->{state}, 'running', 'running');

    # poll by offset while it runs: each poll takes up where the last ended
    my ($offset, $got, $polls_running) = (0, '', 0);
    my $end = time + 20;
    while (time < $end) {
        ($st, $h, $b, $j) = $n->request(GET =>
            "/v1/sandboxes/$sb/execs/$ex/output?stream=stdout&offset=$offset",
            $t);
        is($st, 200, "output from $offset") if $offset == 0;
        is($j->{offset}, $offset, "it starts at $offset") if $j->{len};
        $got .= $j->{data} // '';
        $offset = $j->{next_offset};
        $polls_running++ if $j->{exec}{state} eq 'running' && $j->{len};
        last if $j->{complete};
        sleep 0.3;
    }
    ok($polls_running >= 2,
       "output read while it ran ($polls_running polls with new bytes)");
    is($got, join('', map { "line $_\n" } 1 .. 6), 'all of it, in order');
    ok($j->{complete}, 'complete once it ended and all was read');

    my $s = state_of($ex);
    is($s->{state}, 'exited', 'state: exited');
    is($s->{result}{exit_code}, 4, 'result: exit code 4');
    is($s->{result}{stdout_bytes}, 42, 'result: stdout_bytes');
    ok($s->{ended_at}, 'ended_at');

    ($st, $h, $b, $j) = $n->request(GET =>
        "/v1/sandboxes/$sb/execs/$ex/output?stream=stderr", $t);
    is($j->{data}, "done\n", 'stderr by itself');
    ($st, $h, $b, $j) = $n->request(GET =>
        "/v1/sandboxes/$sb/execs/$ex/output?stream=stdout&offset=5&max_bytes=4",
        $t);
    is($j->{data}, '1\nli' =~ s/\\n/\n/r, 'max_bytes bounds one reply');
    is($j->{next_offset}, 9, 'next_offset');
    ($st, $h, $b, $j) = $n->request(GET =>
        "/v1/sandboxes/$sb/execs/$ex/output?stream=stdout&offset=999", $t);
    is($st, 400, 'an offset past the end: 400');
    is($j->{field}, 'offset', 'naming offset');
}

# ---- followed live with ndjson, from an offset, until it ends
{
    ($st, $h, $b, $j) = bg(['sh', '-c',
        'echo one; while [ ! -e /workspace/go ]; do sleep 0.05; done; '
        . 'echo two']);
    my $id = $j->{id};
    my $s = VetoStream->open($n, GET =>
        "/v1/sandboxes/$sb/execs/$id/output?stream=stdout&offset=0", $t,
        undef, { Accept => 'application/x-ndjson' });
    is($s->status, 200, 'follow: 200');
    is($s->headers->{'x-content-type-options'}, 'nosniff', 'follow: nosniff');
    my $l = $s->line(10);
    is_deeply($l, { stream => 'stdout', offset => 0, data => "one\n" },
              'follow: the first line while it runs');
    $n->request(PUT => "/v1/sandboxes/$sb/files?path=go", $t, '1');
    my @rest = $s->lines(20);
    is($rest[0]{data}, "two\n", 'follow: then the next');
    ok($rest[-1]{end}{complete}, 'follow: it ends with "end", complete');
    is($rest[-1]{end}{next_offset}, 8, 'follow: next_offset');
    is($rest[-1]{end}{exec}{state}, 'exited', 'follow: the exec ended');
    ok($s->done, 'the response ended with its last chunk');

    # following does not keep it alive, a follower gone does not kill it
    $n->request(POST => "/v1/sandboxes/$sb/exec", $t,
                { argv => ['rm', '-f', '/workspace/go'] });
    ($st, $h, $b, $j) = bg(['sh', '-c',
        'echo a; while [ ! -e /workspace/go ]; do sleep 0.05; done; echo b']);
    $id = $j->{id};
    $s = VetoStream->open($n, GET => "/v1/sandboxes/$sb/execs/$id/output",
                          $t, undef, { Accept => 'application/x-ndjson' });
    is($s->line(10)->{data}, "a\n", 'a second follower reads');
    $s->close;
    sleep 0.5;    # on purpose: time for a wrong kill to show
    is(state_of($id)->{state}, 'running', 'and leaving does not kill it');
    $n->request(PUT => "/v1/sandboxes/$sb/files?path=go", $t, '1');
    is(wait_ended($id, 10)->{state}, 'exited', 'it ends by itself');
    $n->request(POST => "/v1/sandboxes/$sb/exec", $t,
                { argv => ['rm', '-f', '/workspace/go'] });
}

# ---- a server in the background, reached over loopback by a later exec
{
    ($st, $h, $b, $j) = bg(['python3', '-m', 'http.server', '8765',
                            '--bind', '127.0.0.1', '--directory',
                            '/workspace']);
    is($st, 202, 'a server in the background');
    my $srv = $j->{id};
    $n->request(PUT => "/v1/sandboxes/$sb/files?path=hello.txt", $t,
                "hello from the workspace\n");
    my $got;
    eventually('the later exec reaches the server', 5, sub {
        ($st, $h, $b, $j) = $n->request(POST => "/v1/sandboxes/$sb/exec", $t,
            { argv => ['python3', '-c',
                       'import urllib.request as u; print(u.urlopen('
                       . '"http://127.0.0.1:8765/hello.txt", timeout=2)'
                       . '.read().decode(), end="")'] });
        $got = $j->{stdout};
        ($j->{exit_code} // 1) == 0;
    });
    is($got, "hello from the workspace\n",
       'a concurrent exec reaches the server over loopback');

    # ---- kill with confirmation
    ($st, $h, $b, $j) = $n->request(DELETE =>
        "/v1/sandboxes/$sb/execs/$srv", $t);
    is($st, 200, 'kill: 200') or diag $b;
    ok($j->{killed}, 'killed');
    ok($j->{confirmed}{processes}, 'confirmed: processes');
    is($j->{exec}{state}, 'killed', 'state: killed');
    ($st, $h, $b, $j) = $n->request(POST => "/v1/sandboxes/$sb/exec", $t,
        { argv => ['python3', '-c',
                   'import socket; s=socket.socket(); '
                   . 'print(s.connect_ex(("127.0.0.1", 8765)))'] });
    isnt($j->{stdout}, "0\n", 'nothing listens any more');
    ($st, $h, $b, $j) = $n->request(DELETE =>
        "/v1/sandboxes/$sb/execs/$srv", $t);
    is($st, 200, 'a second kill: 200');
    ok(!$j->{killed}, 'killed: false (it had ended)');
}

# ---- the deadline kills it
{
    ($st, $h, $b, $j) = bg(['sleep', '30'], body => { timeout_s => 1 });
    my $id = $j->{id};
    my $s = wait_ended($id, 10);
    is($s->{state}, 'timed_out', 'past its deadline: timed_out');
    ok($s->{result}{timed_out}, 'result: timed_out');
}

# ---- bad requests, unknown execs
{
    ($st, $h, $b, $j) = $n->request(GET =>
        "/v1/sandboxes/$sb/execs/ex-0000000000000000", $t);
    is($st, 404, 'an unknown exec: 404');
    is($j->{field}, 'exec', 'naming exec');
    like($j->{detail}, qr/no such exec/, 'no such exec (not "no such sandbox")');
    ($st, $h, $b, $j) = $n->request(GET => "/v1/sandboxes/$sb/execs/ex-XYZ",
                                    $t);
    is($st, 404, 'a malformed exec id: no such resource');
    ($st, $h, $b, $j) = $n->request(GET =>
        "/v1/sandboxes/$sb/execs/$ex/output?stream=stdin", $t);
    is($st, 400, 'stream=stdin: 400');
    is($j->{field}, 'stream', 'naming stream');
    ($st, $h, $b, $j) = $n->request(GET =>
        "/v1/sandboxes/$sb/execs/$ex/output?offset=-1", $t);
    is($j->{field}, 'offset', 'a negative offset: naming offset');
    ($st, $h, $b, $j) = $n->request(GET =>
        "/v1/sandboxes/$sb/execs/$ex/output?bogus=1", $t);
    is($st, 400, 'an unknown query argument: 400');
    is($j->{field}, 'bogus', 'naming it');
    ($st, $h, $b, $j) = bg(['true'], body => { background => 'yes' });
    is($st, 400, 'background: "yes": 400');
    is($j->{field}, 'background', 'naming background');
    my $other = $n->token(sub => 'agent-2');
    ($st, $h, $b, $j) = $n->request(GET => "/v1/sandboxes/$sb/execs/$ex",
                                    $other);
    is($st, 404, "another agent's exec: 404");
    is($j->{detail}, 'no such sandbox', 'as an unknown sandbox');
    ($st) = $n->request(GET => "/v1/sandboxes/$sb/execs/$ex",
                        $n->token(scope => 'sandbox:files'));
    is($st, 403, 'without sandbox:exec: 403');
}

# ---- approvals gate it: "background" is part of the request approved
{
    my $ta = $n->token(sub => 'agent-apr');
    ($st, $h, $b, $j) = $n->request(POST => '/v1/sandboxes', $ta, {});
    my $sa = $j->{id};
    my $cmd = { argv => ['sleep', '5'], background => $true };
    ($st, $h, $b, $j) = $n->request(POST => "/v1/sandboxes/$sa/exec", $ta,
                                    $cmd);
    is($st, 202, 'background under "always": an approval is needed');
    ok($j->{approval_id}, 'an approval id');
    is($j->{summary}{background}, $true, 'the reviewer sees "background"');
    my $apr = $j->{approval_id};
    ($st) = $n->request(POST => "/v1/approvals/$apr/approve", $rev, '');
    ($st, $h, $b, $j) = $n->request(POST => "/v1/sandboxes/$sa/exec", $ta,
                                    { argv => ['sleep', '5'] },
                                    { 'Veto-Approval' => $apr });
    is($st, 403, 'the approval does not cover a foreground exec');
    ($st, $h, $b, $j) = $n->request(POST => "/v1/sandboxes/$sa/exec", $ta,
                                    $cmd, { 'Veto-Approval' => $apr });
    is($st, 202, 'it covers the background exec it was given for');
    like($j->{id} // '', qr/^ex-/, 'which starts') or diag $b;
    $n->request(DELETE => "/v1/sandboxes/$sa", $ta);
}

# ---- the sandbox's delete kills its background execs
{
    ($st, $h, $b, $j) = bg(['sh', '-c', 'sleep 300 & sleep 300']);
    my $id = $j->{id};
    eventually('its processes run', 5, sub { sandbox_procs() >= 2 });
    ($st, $h, $b, $j) = $n->request(DELETE => "/v1/sandboxes/$sb", $t);
    is($st, 200, 'delete the sandbox');
    ok($j->{confirmed}{processes}, 'confirmed: processes');
    my @left = sandbox_procs();
    is(scalar @left, 0, 'no process of the sandbox is left');
    ($st, $h, $b, $j) = $n->request(GET => "/v1/sandboxes/$sb/execs/$id", $t);
    # the sandbox has ended (deleted): asked of it, 410 says so (issue 11)
    is($st, 410, 'its execs are gone with it: the sandbox ended');
    is($j->{end_reason}, 'deleted', '... deleted') or diag explain $j;
}

# ---- records: started, killed
{
    my @r;
    eventually('the kills are on record', 5, sub {
        @r = audit_records();
        (grep { $_->{outcome} eq 'exec_killed' } @r) >= 2;
    });
    my @started = grep { $_->{outcome} eq 'exec_started' } @r;
    ok(@started >= 5, scalar(@started) . ' exec_started records');
    my ($first) = grep { ($_->{detail}{exec} // '') eq $ex } @started;
    ok($first, 'one names the first exec');
    ok($first->{detail}{background}, 'detail: background');
    is_deeply($first->{detail}{request}{argv}[0], 'sh', 'detail: the argv');
    my @killed = grep { $_->{outcome} eq 'exec_killed' } @r;
    is(scalar @killed, 2, 'two kills on record');
    is(scalar(grep { $_->{detail}{killed} } @killed), 1,
       'one of which killed');
    is(scalar(grep { $_->{action} eq 'sandbox.exec.get'
                     && $_->{outcome} ne 'denied' } @r), 0,
       'reading state is no decision on record (only its 403 is)');
}

unlike($n->error_log, qr/\[(alert|emerg)\]|exited on signal/, 'no alerts');

done_testing;
