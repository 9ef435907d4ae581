#!/usr/bin/perl
# ngx_veto_sandbox_module keeps its connections to the helper: a worker
# reuses one only after a whole reply, and drops it on anything else.
# The helper's checks are per connection (the peer's uid, at accept) and
# per request (the owner of every sandbox named): a kept connection
# carries the same worker and every request is still checked.  A helper
# that restarts, is killed, or closes a kept connection costs no request;
# a client that gives up mid-exec still cancels its exec.  A streamed
# reply (events, then the reply) is kept only after its reply; a stream
# the client cuts closes its connection, and the requests after it get
# their own replies.  Quick requests (health, list, status) share the
# worker's pipelined connection (t/module/helper-pipeline.t): the counts of
# connections below are of the others, the pipe aside.

use strict;
use warnings;

use Test::More;
use POSIX qw(WNOHANG);
use JSON::PP ();
use Time::HiRes qw(sleep time);
use lib 't/lib';
use VetoNginx;
use VetoStream;
use Eventually qw(eventually);

VetoNginx::need(qw(helper));

my $n = VetoNginx->new;
my $hp = $n->start_helper;
$n->start;
my $t = $n->token;

sub helper_conns
{
    my $sock = $n->helper->socket_path;
    my @l = grep { /\bESTAB\b/ } `ss -xH src '$sock'`;
    return scalar @l;
}

sub all_ok
{
    my ($name, $count, @req) = @_;
    my %seen;
    for (1 .. $count) {
        my ($st) = $n->request(@req);
        $seen{$st}++;
    }
    is_deeply(\%seen, { 200 => $count }, "$name: $count answers, all 200")
        or diag explain \%seen;
}

# the connections the helper has open, waited for (a close is seen by
# ss a moment after it happened)
sub helper_conns_become
{
    my ($want, $within) = @_;
    my $c;
    eventually("$want connections to the helper", $within // 5,
               sub { ($c = helper_conns()) == $want });
    return $c;
}

# the connections besides the worker's pipe (opened, if it was not, by a
# health request), waited for as helper_conns_become() does
sub others
{
    my ($want, $within) = @_;
    my ($st) = $n->request(GET => '/v1/health');
    return helper_conns_become($want + 1, $within) - 1;
}

# ---- one worker, one connection for many requests (the pipe)
all_ok('health', 30, GET => '/v1/health');
is(helper_conns(), 1, 'one kept connection served 30 health requests');

all_ok('list', 30, GET => '/v1/sandboxes', $t);
is(helper_conns(), 1, 'and 30 authenticated requests after them');

# ---- every request is still the owner's: another agent's sandbox is
# not found on the same kept connection
{
    my ($st, undef, undef, $j) = $n->request(POST => '/v1/sandboxes', $t, {});
    is($st, 201, 'create on a kept connection');
    my $id = $j->{id};
    my $other = $n->token(sub => 'agent-2');
    ($st) = $n->request(GET => "/v1/sandboxes/$id", $other);
    is($st, 404, "another agent's request on the same connection: 404");
    ($st) = $n->request(POST => "/v1/sandboxes/$id/exec", $other,
                        { argv => ['true'] });
    is($st, 404, "another agent's exec on the same connection: 404");
    ($st, undef, undef, $j) = $n->request(POST => "/v1/sandboxes/$id/exec",
                                          $t, { argv => ['echo', 'mine'] });
    is($st, 200, "the owner's exec: 200");
    is($j->{stdout}, "mine\n", "the owner's exec ran");
    ($st) = $n->request(DELETE => "/v1/sandboxes/$id", $t);
    is($st, 200, 'delete');
    is(others(1), 1, 'still one connection (besides the pipe)');
}

# ---- the helper restarts: the kept connection is gone, no request fails
$hp->stop;
$hp->launch;
all_ok('after a helper restart', 10, GET => '/v1/sandboxes', $t);
is(helper_conns(), 1, 'one new connection after the restart');

# ---- killed (no goodbye at all)
$hp->kill9;
$hp->launch;
all_ok('after kill -9 and a new helper', 10, GET => '/v1/health');

# ---- many at once: lists share the pipe; at most 32 connections (per
# worker) are kept afterwards whatever went on
{
    my @kids;
    for my $i (1 .. 40) {
        my $pid = fork() // die "fork: $!";
        if ($pid == 0) {
            my $bad = 0;
            for (1 .. 10) {
                my ($st) = $n->request(GET => '/v1/sandboxes', $t);
                $bad++ unless $st == 200;
            }
            POSIX::_exit($bad ? 1 : 0);
        }
        push @kids, $pid;
    }
    my $failed = 0;
    for (@kids) {
        waitpid($_, 0);
        $failed++ if $?;
    }
    is($failed, 0, '40 clients x 10 requests at once: all 200');
    my $c = helper_conns();
    ok($c >= 1 && $c <= 32, "kept connections bounded ($c, at most 32)");
}

# ---- a client that gives up mid-exec: the exec is cancelled (its
# connection closed, never kept), and the next requests are served
{
    my ($st, undef, undef, $j) = $n->request(POST => '/v1/sandboxes', $t, {});
    my $id = $j->{id};
    is($n->abandon_exec($id, $t), 599, 'client gave up after 1 s');
    my $running = $n->execs_running_settled($id, $t);
    is($running, 0, 'the abandoned exec was cancelled');
    ($st) = $n->request(DELETE => "/v1/sandboxes/$id", $t);
    is($st, 200, 'delete after the cancel');
}

# ---- the helper goes away while a connection is kept: the hangup is
# seen while idle, the next request is answered at once (no helper: 503)
# and the one after a new helper starts is served
{
    all_ok('before the idle check', 3, GET => '/v1/health');
    my $before = helper_conns();
    $hp->stop;
    # nothing listens now: the kept connection saw the hangup
    my ($st) = $n->request(GET => '/v1/health');
    ok($st == 503 || $st == 502, "helper gone: $st, not a hang");
    $hp->launch;
    all_ok('helper back', 5, GET => '/v1/health');
    ok($before >= 1, "there were kept connections to lose ($before)");
}

# ---- streams on kept connections: a streamed reply is several frames
# (events, then the reply); its connection goes back to the worker only
# after the reply, and a stream the client cuts (mid-frame, paused or
# not) closes its connection: the helper's frames still under way are
# never read as the next request's reply
{
    my $nd = { Accept => 'application/x-ndjson' };
    my ($st, undef, $b, $j) = $n->request(POST => '/v1/sandboxes', $t,
                                          { limits => { timeout_s => 30 } });
    is($st, 201, "streams: create") or BAIL_OUT($b);
    my $id = $j->{id};
    my $k = 0;

    # every request after a cut gets its own reply: an exec that echoes
    # a token never seen before, a streamed one, a read of a file
    my $mixed = sub {
        my ($name) = @_;
        my $bad = 0;
        for (1 .. 5) {
            my $tok = 'tok-' . ++$k;
            my ($st, undef, $b, $j) = $n->request(POST =>
                "/v1/sandboxes/$id/exec", $t, { argv => ['echo', $tok] });
            $bad++, diag("$name: exec $st $b")
                unless $st == 200 && ($j->{stdout} // '') eq "$tok\n";
            my $s = VetoStream->open($n, POST => "/v1/sandboxes/$id/exec",
                                     $t, { argv => ['echo', "s$tok"] }, $nd);
            my @l = $s->lines(30);
            $s->close;
            $bad++, diag("$name: stream " . JSON::PP->new->encode(\@l))
                unless $s->status == 200 && @l == 2
                       && ($l[0]{data} // '') eq "s$tok\n"
                       && ($l[1]{result}{exit_code} // -1) == 0;
            ($st, undef, $b) = $n->request(GET =>
                "/v1/sandboxes/$id/files?path=marker", $t);
            $bad++, diag("$name: read $st")
                unless $st == 200 && $b eq "marker\n";
        }
        is($bad, 0, "$name: 15 requests, each with its own reply");
    };

    ($st) = $n->request(PUT => "/v1/sandboxes/$id/files?path=marker", $t,
                        "marker\n");
    is($st, 200, 'streams: a file to read back');
    is(others(1), 1, 'streams: one kept connection');

    # a whole stream: several frames, then the reply; then it is kept
    my $s = VetoStream->open($n, POST => "/v1/sandboxes/$id/exec", $t,
        { argv => ['sh', '-c', 'for i in 1 2 3; do echo l$i; sleep 0.2; done'] },
        $nd);
    my @l = $s->lines(30);
    $s->close;
    is(scalar(@l), 4, 'a whole stream: three lines and the result');
    is($l[-1]{result}{exit_code}, 0, 'a whole stream: exit 0');
    is(others(1), 1,
       'a whole stream: its connection kept (still one)');
    $mixed->('after a whole stream');
    is(others(1), 1, 'and still one connection');

    # cut between frames: the command is quiet, nothing is under way on
    # the connection, so only closing it tells the helper; kept, it would
    # carry this exec's next event into the next request's reply
    $s = VetoStream->open($n, POST => "/v1/sandboxes/$id/exec", $t,
        { argv => ['sh', '-c', 'echo first; sleep 2; echo late; '
                   . 'echo late > /workspace/late'] }, $nd);
    is($s->line(10)->{data} // '', "first\n", 'quiet: the first line came');
    $s->close;
    is(others(0, 1.5), 0,
       'cut between frames: its connection closed at once, not kept');
    $mixed->('after a stream cut between frames');
    sleep 2.5;    # on purpose: time to go on
    ($st) = $n->request(GET => "/v1/sandboxes/$id/files?path=late", $t);
    is($st, 404, 'the cut exec was killed before it went on');
    $mixed->('after the cut exec\'s time');

    # cut while frames pour in (the helper is mid-frame, most likely)
    $s = VetoStream->open($n, POST => "/v1/sandboxes/$id/exec", $t,
        { argv => ['sh', '-c', 'echo first; exec seq 1 100000000'],
          output_bytes => 1 << 20 }, $nd);
    like($s->line(10)->{data} // '', qr/^first\n/, 'cut: the first line came');
    $s->close;
    is(others(0), 0,
       'cut mid-stream: its connection closed, not kept');
    $mixed->('after a stream cut mid-frame');

    my $running = $n->execs_running_settled($id, $t);
    is($running, 0, 'the cut exec was killed');

    # cut while paused: the client read nothing, the helper waits for it
    $s = VetoStream->open($n, POST => "/v1/sandboxes/$id/exec", $t,
        { argv => ['sh', '-c', 'echo first; exec yes'],
          output_bytes => 1 << 20 }, $nd);
    is($s->status, 200, 'paused: 200');
    sleep 1.5;                      # nginx's buffers and the socket's fill
    $s->close;
    is(others(0), 0, 'cut while paused: connection closed');
    $mixed->('after a stream cut while paused');

    # a follower cut: the background exec goes on, its kill is answered
    # on a kept connection, and the requests after it are right
    ($st, undef, $b, $j) = $n->request(POST => "/v1/sandboxes/$id/exec", $t,
        { argv => ['sh', '-c', 'while :; do echo x; sleep 0.01; done'],
          background => JSON::PP::true() });
    is($st, 202, 'background: 202') or diag $b;
    my $ex = $j->{id};
    $s = VetoStream->open($n, GET =>
        "/v1/sandboxes/$id/execs/$ex/output?stream=stdout&offset=0", $t,
        undef, $nd);
    is($s->line(10)->{data} // '', "x\n", 'follow: a line');
    $s->close;
    is(others(0), 0, 'a follower cut: connection closed');
    ($st, undef, $b, $j) = $n->request(GET =>
        "/v1/sandboxes/$id/execs/$ex", $t);
    is($j->{state}, 'running', 'the followed exec runs on') or diag $b;
    $mixed->('after a follower cut');
    ($st, undef, $b, $j) = $n->request(DELETE =>
        "/v1/sandboxes/$id/execs/$ex", $t);
    is($st, 200, 'kill: 200') or diag $b;
    ok($j->{killed}, 'kill: killed');
    $mixed->('after a kill');

    # an export cut after its first bytes
    ($st) = $n->request(POST => "/v1/sandboxes/$id/exec", $t,
        { argv => ['sh', '-c', 'mkdir -p /workspace/big && head -c 6000000 '
                   . '/dev/urandom > /workspace/big/r.bin'] });
    is($st, 200, 'export: 6 MB of random bytes');
    $s = VetoStream->open($n, GET => "/v1/sandboxes/$id/archive?path=big",
                          $t);
    is($s->status, 200, 'export: 200');
    $s->close;
    is(others(0), 0, 'an export cut: connection closed');
    $mixed->('after an export cut');

    # and a whole export, then its connection kept
    $s = VetoStream->open($n, GET => "/v1/sandboxes/$id/archive?path=big",
                          $t);
    my $tar = $s->body(60);
    ok($s->done, 'a whole export: its last chunk');
    ok(length($tar) > 6000000, 'a whole export: ' . length($tar) . ' bytes');
    is(others(1), 1, 'a whole export: its connection kept');
    $mixed->('after a whole export');

    ($st) = $n->request(DELETE => "/v1/sandboxes/$id", $t);
    is($st, 200, 'streams: delete');
}

unlike($n->error_log, qr/\[(alert|emerg)\]|segfault|exited on signal/,
       'no alerts or crashes in the error log');

done_testing;
