#!/usr/bin/perl
# ngx_veto_sandbox_module keeps its connections to the helper: a worker
# reuses one only after a whole reply, and drops it on anything else.
# The helper's checks are per connection (the peer's uid, at accept) and
# per request (the owner of every sandbox named): a kept connection
# carries the same worker and every request is still checked.  A helper
# that restarts, is killed, or closes a kept connection costs no request;
# a client that gives up mid-exec still cancels its exec.

use strict;
use warnings;

use Test::More;
use HTTP::Tiny;
use POSIX qw(WNOHANG);
use lib 't/lib';
use VetoNginx;

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

# ---- one worker, one connection for many requests
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
    is(helper_conns(), 1, 'still one connection');
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

# ---- many at once: each request in flight has its own connection; at
# most 16 are kept afterwards
{
    my @kids;
    for my $i (1 .. 24) {
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
    is($failed, 0, '24 clients x 10 requests at once: all 200');
    my $c = helper_conns();
    ok($c >= 1 && $c <= 16, "kept connections bounded ($c, at most 16)");
}

# ---- a client that gives up mid-exec: the exec is cancelled (its
# connection closed, never kept), and the next requests are served
{
    my ($st, undef, undef, $j) = $n->request(POST => '/v1/sandboxes', $t, {});
    my $id = $j->{id};
    my $ua = HTTP::Tiny->new(timeout => 1);
    my $r = $ua->request(POST => $n->url("/v1/sandboxes/$id/exec"),
        { headers => { Authorization => "Bearer $t",
                       'Content-Type' => 'application/json' },
          content => '{"argv": ["sleep", "20"], "timeout_s": 25}' });
    is($r->{status}, 599, 'client gave up after 1 s');
    my $running = -1;
    for (1 .. 50) {
        (undef, undef, undef, $j) = $n->request(GET => "/v1/sandboxes/$id",
                                                $t);
        $running = $j->{execs_running} // -1;
        last if $running == 0;
        sleep 0.1;
    }
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

unlike($n->error_log, qr/\[(alert|emerg)\]|segfault|exited on signal/,
       'no alerts or crashes in the error log');

done_testing;
