#!/usr/bin/perl
# Streamed execs through nginx (Accept: application/x-ndjson): the first
# line arrives while the command is provably still running, the result
# line equals the plain reply's result, text split mid-character stays
# text, control bytes go as base64, a client that goes away kills the
# command (and the record says so), a slow client slows the command
# instead of growing nginx, and the streamed exec is gated as the plain
# one (one canonical request).  Output bounds: seq 1 2000000 ends with
# SUMMARY, says how much was left out and where (the cut's line);
# output_bytes per exec within the policy's ceiling.

use strict;
use warnings;

use Test::More;
use MIME::Base64 qw(decode_base64);
use Time::HiRes qw(time sleep);
use lib 't/lib';
use VetoNginx;
use VetoStream;
use Eventually qw(eventually);

VetoNginx::need(qw(helper redis));

my $policy = VetoNginx::default_policy();
$policy->{tenants}{acme}{ceilings}{output_bytes} = 4 * 1024 * 1024;
$policy->{tenants}{acme}{agents}{'agent-apr'} = {
    approvals => { exec_argv => ['rm *'] },
};

my $n = VetoNginx->new;
$n->start_redis;
$n->start_helper;
$n->start(redis => 1, policy => $policy);

my $t = $n->token;
my $rev = $n->token(sub => 'human-1', scope => 'approvals:review audit:read');
my $nd = { Accept => 'application/x-ndjson' };
my ($st, $h, $b, $j);

($st, $h, $b, $j) = $n->request(POST => '/v1/sandboxes', $t,
                                { limits => { timeout_s => 30 } });
is($st, 201, 'create') or BAIL_OUT($b);
my $sb = $j->{id};

sub exec_stream
{
    my ($body, $hdr) = @_;
    return VetoStream->open($n, POST => "/v1/sandboxes/$sb/exec", $t, $body,
                            { %$nd, %{ $hdr // {} } });
}

sub audit_records
{
    my ($st, $h, $b, $j) = $n->request(GET => '/v1/audit?limit=200', $rev);
    return @{ $j->{records} // [] };
}

# ---- the first line before the end: the command waits for a file this
#      test writes only after it has read that line
{
    my $s = exec_stream({ argv => ['sh', '-c',
        'echo first; while [ ! -e /workspace/go ]; do sleep 0.05; done; '
        . 'echo second; echo oops >&2; exit 3'] });
    is($s->status, 200, 'streamed exec: 200');
    like($s->headers->{'content-type'}, qr{^application/x-ndjson},
         'application/x-ndjson');
    is($s->headers->{'transfer-encoding'}, 'chunked', 'chunked');
    is($s->headers->{'x-accel-buffering'}, 'no', 'X-Accel-Buffering: no');
    is($s->headers->{'x-content-type-options'}, 'nosniff',
       'nosniff: the output is the agent\'s untrusted data');

    my $l = $s->line(10);
    is_deeply($l, { stream => 'stdout', offset => 0, data => "first\n" },
              'the first line, while the command waits');
    ok(!$s->done, 'the response has not ended');

    # the command cannot have ended: it waits for this file
    ($st) = $n->request(PUT => "/v1/sandboxes/$sb/files?path=go", $t, "1");
    is($st, 200, 'the file it waits for is written now');

    my @rest = $s->lines(20);
    ok($s->done, 'the response ended with its last chunk');
    my ($out, $err) = ('', '');
    for (@rest) {
        $out .= $_->{data} if ($_->{stream} // '') eq 'stdout';
        $err .= $_->{data} if ($_->{stream} // '') eq 'stderr';
    }
    is($out, "second\n", 'then the rest of stdout');
    is($err, "oops\n", 'and stderr');
    my $r = $rest[-1]{result};
    ok($r, 'the last line is the result') or diag explain \@rest;
    is($r->{exit_code}, 3, 'result: exit code 3');
    is($r->{stdout_bytes}, 13, 'result: stdout_bytes');
    is($r->{stdout_dropped_bytes}, 0, 'nothing dropped');
    ok(!exists $r->{stdout}, 'no output in the result line');
    $n->request(POST => "/v1/sandboxes/$sb/exec", $t,
                { argv => ['rm', '-f', '/workspace/go'] });
}

# ---- the ndjson result line equals the plain reply's result
{
    my $cmd = { argv => ['sh', '-c', 'printf "a\nbb\n"; printf "e" >&2; '
                                     . 'exit 7'] };
    ($st, $h, $b, $j) = $n->request(POST => "/v1/sandboxes/$sb/exec", $t,
                                    $cmd);
    is($st, 200, 'the plain exec');
    my $s = exec_stream($cmd);
    my @l = $s->lines(20);
    my $r = $l[-1]{result};
    my %plain = %$j;
    delete @plain{qw(stdout stderr stdout_encoding stderr_encoding
                     stdout_head_len stderr_head_len usage)};
    my %streamed = %$r;
    delete $streamed{usage};
    is_deeply(\%streamed, \%plain,
              'the result line is the plain result (but usage, which varies, '
              . 'and the output it streamed)');
    is(join('', map { $_->{data} } grep { ($_->{stream} // '') eq 'stdout' }
            @l), $j->{stdout}, 'the lines carry the plain stdout');
    ok(exists $r->{usage}{wall_ms}, 'and it has usage');
}

# ---- text split mid-character across chunks stays text; control bytes
#      go as base64
{
    # 300000 bytes of "é" (2 bytes each): 64 KiB events cut some in two
    my $s = exec_stream({ argv => ['python3', '-c',
        'import sys; sys.stdout.write("\u00e9" * 150000)'] });
    my @l = $s->lines(30);
    my @data = grep { exists $_->{stream} } @l;
    ok(@data > 2, scalar(@data) . ' lines for 300000 bytes');
    is(scalar(grep { exists $_->{data_b64} } @data), 0,
       'every line is text: a split character waits for its end');
    my $all = join '', map { $_->{data} } @data;
    is(length $all, 150000, '150000 characters, none lost');
    is($all, "\x{e9}" x 150000, 'all of them é');
    is($l[-1]{result}{stdout_bytes}, 300000, 'result: 300000 bytes');

    $s = exec_stream({ argv => ['python3', '-c',
        'import sys; sys.stdout.buffer.write(bytes(range(32)) * 100)'] });
    @l = $s->lines(30);
    @data = grep { exists $_->{stream} } @l;
    ok(@data && !grep({ !exists $_->{data_b64} } @data),
       'control bytes: data_b64 (smaller than \\u00XX escapes)');
    is(join('', map { decode_base64($_->{data_b64}) } @data),
       join('', map { chr } 0 .. 31) x 100, 'decoded, the exact bytes');
}

# ---- a client that goes away kills the command; the record says so
{
    my $s = exec_stream({ argv => ['sh', '-c',
        # renamed into place: a kill between the shell's truncation and
        # date's write would leave the file empty
        'echo started; while :; do date +%s%N > /workspace/alive.new; '
        . 'mv /workspace/alive.new /workspace/alive; sleep 0.05; done'] });
    my $l = $s->line(10);
    is($l->{data}, "started\n", 'the command runs');
    sleep 0.3;    # on purpose: progress over time
    $s->close;
    sleep 1;    # on purpose: progress over time
    my (undef, undef, $a1) = $n->request(GET =>
        "/v1/sandboxes/$sb/files?path=alive", $t);
    sleep 0.6;    # on purpose: progress over time
    my (undef, undef, $a2) = $n->request(GET =>
        "/v1/sandboxes/$sb/files?path=alive", $t);
    ok(length $a1, 'it had been writing');
    is($a2, $a1, 'the command is gone: nothing writes any more');
    ($st, $h, $b, $j) = $n->request(GET => "/v1/sandboxes/$sb", $t);
    is($j->{execs_running}, 0, 'the sandbox runs no exec');

    my $rec = eventually('an audit record says client_gone', 5, sub {
        (grep { ($_->{reason} // '') eq 'client_gone' } audit_records())[0];
    }) or diag explain [audit_records()];
    is($rec->{action}, 'sandbox.exec', 'of the exec');
    is($rec->{outcome}, 'error', 'outcome error');
    my $d = ref $rec->{detail} ? $rec->{detail}
                               : JSON::PP->new->decode($rec->{detail} // '{}');
    ok($d->{killed}, 'detail: killed');
    ok($d->{streamed}, 'detail: streamed');
    is($d->{stdout_bytes}, 8, 'detail: the bytes it had streamed');
}

# ---- a client that reads nothing slows the command down, nginx holds no
#      more than a window of it
{
    my $s = exec_stream({ argv => ['sh', '-c',
        'i=0; while [ $i -lt 300 ]; do head -c 65536 /dev/zero | tr "\\0" x; '
        . 'i=$((i+1)); echo $i > /workspace/progress; done; echo END'],
        timeout_s => 30 });
    sleep 2;    # on purpose: progress over time
    my (undef, undef, $p1) = $n->request(GET =>
        "/v1/sandboxes/$sb/files?path=progress", $t);
    sleep 1;    # on purpose: progress over time
    my (undef, undef, $p2) = $n->request(GET =>
        "/v1/sandboxes/$sb/files?path=progress", $t);
    chomp($p1, $p2);
    ok($p1 > 0 && $p1 < 300, "the command wrote $p1 of 300 blocks, then");
    is($p2, $p1, 'it waits while the client reads nothing');
    my @l = $s->lines(60);
    my $total = 0;
    $total += length($_->{data} // '') for @l;
    is($total, 300 * 65536 + 4, 'then all 19.6 MB came through, in order');
    is($l[-1]{result}{exit_code}, 0, 'and the command ended well');
}

# ---- seq 1 2000000; echo SUMMARY: the head, a line where the cut is,
#      the tail, and how much was left out
{
    ($st, $h, $b, $j) = $n->request(POST => "/v1/sandboxes/$sb/exec", $t,
                                    { argv => ['sh', '-c',
                                               'seq 1 2000000; echo SUMMARY'] });
    is($st, 200, 'seq: 200');
    like($j->{stdout}, qr/\nSUMMARY\n\z/, 'stdout ends with SUMMARY');
    like($j->{stdout}, qr/\A1\n2\n3\n/, 'and begins with 1 2 3');
    is($j->{stdout_bytes}, 14888904, 'stdout_bytes: all it wrote');
    ok($j->{stdout_dropped_bytes} > 13_000_000,
       "stdout_dropped_bytes: $j->{stdout_dropped_bytes}");
    ok($j->{stdout_truncated}, 'stdout_truncated');
    my $cut = "[veto-sandbox: $j->{stdout_dropped_bytes} bytes of stdout "
            . "left out]\n";
    is(substr($j->{stdout}, $j->{stdout_head_len}, length $cut), $cut,
       'the cut is a line of its own, at stdout_head_len');
    like($j->{stdout}, qr/\n89232\n\Q$cut\E1934466\n/,
         'whole lines on either side of it');

    my $s = exec_stream({ argv => ['sh', '-c', 'seq 1 2000000; echo SUMMARY'] });
    my @l = $s->lines(60);
    my $all = join '', map { $_->{data} // '' } @l;
    is(length $all, 14888904, 'streamed: every byte, nothing dropped');
    like(substr($all, -20), qr/\n2000000\nSUMMARY\n\z/, 'streamed: SUMMARY');
    is($l[-1]{result}{stdout_dropped_bytes}, 0, 'streamed: dropped 0');
}

# ---- output_bytes per exec, within the policy's ceiling
{
    ($st, $h, $b, $j) = $n->request(POST => "/v1/sandboxes/$sb/exec", $t,
                                    { argv => ['seq', '1', '10000'],
                                      output_bytes => 1000 });
    is($st, 200, 'output_bytes 1000: 200');
    ok($j->{stdout_dropped_bytes} > 40000, 'most of it left out');
    ok(length($j->{stdout}) < 1200, 'what is kept is about 1000 bytes');
    like($j->{stdout}, qr/\n10000\n\z/, 'the tail is kept');
    ($st, $h, $b, $j) = $n->request(POST => "/v1/sandboxes/$sb/exec", $t,
                                    { argv => ['true'],
                                      output_bytes => 8 * 1024 * 1024 });
    is($st, 422, 'output_bytes over the policy ceiling: 422');
    is($j->{limit}, 'output_bytes', 'limit: output_bytes');
    ($st, $h, $b, $j) = $n->request(POST => "/v1/sandboxes/$sb/exec", $t,
                                    { argv => ['true'], output_bytes => 'x' });
    is($st, 400, 'output_bytes not an integer: 400');
    is($j->{field}, 'output_bytes', 'field: output_bytes');
}

# ---- a streamed exec is gated as the plain one: the same canonical
#      request, so one approval covers either way of reading it
{
    my $ta = $n->token(sub => 'agent-apr');
    ($st, $h, $b, $j) = $n->request(POST => '/v1/sandboxes', $ta, {});
    is($st, 201, 'create (agent-apr)');
    my $sa = $j->{id};
    my $cmd = { argv => ['rm', '-rf', '/workspace/tmp'] };
    ($st, $h, $b, $j) = $n->request(POST => "/v1/sandboxes/$sa/exec", $ta,
                                    $cmd);
    is($st, 202, 'plain rm: an approval is needed');
    my $apr = $j->{approval_id};
    my $s = VetoStream->open($n, POST => "/v1/sandboxes/$sa/exec", $ta, $cmd,
                             $nd);
    is($s->status, 202, 'streamed rm, no approval: 202 as well');
    ($st) = $n->request(POST => "/v1/approvals/$apr/approve", $rev, '');
    is($st, 200, 'a human approves the plain request');
    $s = VetoStream->open($n, POST => "/v1/sandboxes/$sa/exec", $ta, $cmd,
                          { %$nd, 'Veto-Approval' => $apr });
    is($s->status, 200, 'the streamed exec runs under that approval');
    my @l = $s->lines(20);
    is($l[-1]{result}{exit_code}, 0, 'and ends with its result');
    ($st) = $n->request(DELETE => "/v1/sandboxes/$sa", $ta);
    is($st, 200, 'delete (agent-apr)');
}

# ---- errors before the first byte are problem+json as ever
{
    my $s = VetoStream->open($n, POST => "/v1/sandboxes/$sb/exec", $t,
                             { argv => ['true'], cwd => '../x' }, $nd);
    is($s->status, 400, 'a bad cwd: 400');
    like($s->headers->{'content-type'}, qr{problem\+json}, 'problem+json');
    my $p = JSON::PP->new->decode($s->body(10));
    is($p->{field}, 'cwd', 'naming cwd');
    $s = VetoStream->open($n, POST => '/v1/sandboxes/sb-'
                          . ('0' x 24) . '/exec', $t, { argv => ['true'] },
                          $nd);
    is($s->status, 404, 'an unknown sandbox: 404');
}

($st) = $n->request(DELETE => "/v1/sandboxes/$sb", $t);
is($st, 200, 'delete');

unlike($n->error_log, qr/\[(alert|emerg)\]|exited on signal/, 'no alerts');

done_testing;
