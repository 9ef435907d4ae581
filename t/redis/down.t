#!/usr/bin/perl
# Fail closed: with Redis stopped or stalled (SIGSTOP), requests whose
# decision needs Redis get 503 within the timeout and nothing is allowed;
# requests that need no Redis answer at once; service resumes by itself
# when Redis returns, without touching nginx.

use strict;
use warnings;

use Test::More;
use lib 't/lib';
use VetoNginx;
use HTTP::Tiny;
use POSIX ();
use Time::HiRes qw(time sleep);
use Eventually qw(eventually);

VetoNginx::need(qw(helper redis));

my $policy = {
    version => 1,
    tenants => {
        acme => { ceilings => { memory_mb => 512, timeout_s => 30 },
                  approvals => { exec_argv => ['touch *'] } },
    },
};

my $n = VetoNginx->new;
$n->start_redis;
$n->start_helper;
$n->start(redis => 1, redis_timeout => '500ms', policy => $policy);

my $agent = $n->token(sub => 'agent-1');
my $rev = $n->token(sub => 'human-1', scope => 'approvals:review');

sub timed
{
    my (@req) = @_;
    my $t0 = time;
    my @r = $n->request(@req);
    return (time - $t0, @r);
}

sub wait_ok
{
    my (@req) = @_;
    my @r;
    eventually("$req[0] $req[1] answers other than 503", 15, sub {
        @r = $n->request(@req);
        $r[0] != 503;
    });
    return @r;
}

my ($t, $st, $h, $b, $j, $sb_new);

($st, $h, $b, $j) = wait_ok(POST => '/v1/sandboxes', $agent, { ttl_s => 600 });
is($st, 201, 'create with Redis up') or diag $b;
my $sb = $j->{id};

# an approved request, kept for later: while Redis is out it must not run
my $risky = { argv => ['touch', 'ran-while-redis-was-out'] };
($st, $h, $b, $j) = $n->request(POST => "/v1/sandboxes/$sb/exec", $agent, $risky);
is($st, 202, 'risky exec: 202');
my $id = $j->{approval_id};
($st) = $n->request(POST => "/v1/approvals/$id/approve", $rev, '');
is($st, 200, 'approved');

for my $mode (qw(stopped stalled)) {

    if ($mode eq 'stopped') {
        $n->stop_redis;
    } else {
        $n->pause_redis;
    }

    for my $i (1 .. 2) {
        ($t, $st, $h, $b, $j) = timed(POST => "/v1/sandboxes/$sb/exec", $agent,
                                      $risky, { 'Veto-Approval' => $id });
        is($st, 503, "$mode: approved risky exec refused with 503 (#$i)");
        is($j->{type}, 'urn:veto-sandbox:problem:redis_unavailable',
           "$mode: problem+json");
        ok($t < 2.5, "$mode: within the timeout (" . sprintf('%.2f', $t) . 's)');
        is($h->{'retry-after'}, 1, "$mode: Retry-After");

        ($t, $st) = timed(POST => "/v1/sandboxes/$sb/exec", $agent,
                          { argv => ['echo', 'plain'] });
        is($st, 503, "$mode: any authenticated call needs revocation: 503");

        ($t, $st) = timed(GET => "/v1/approvals?state=approved", $rev);
        is($st, 503, "$mode: approvals API: 503");
    }

    # a request that needs no Redis, while one that does is waiting
    my $pid = fork() // die;
    if ($pid == 0) {
        $n->request(POST => "/v1/sandboxes/$sb/exec", $agent, $risky,
                    { 'Veto-Approval' => $id });
        POSIX::_exit(0);
    }
    sleep 0.05;    # on purpose: that request is under way
    ($t, $st, $h, $b, $j) = timed(GET => '/v1/health');
    is($st, 200, "$mode: health answers");
    ok($t < 0.4, "$mode: at once (" . sprintf('%.3f', $t) . 's)');
    is($j->{redis}, 'down', "$mode: health says redis down")
        if $mode eq 'stopped';
    ($t, $st) = timed(GET => '/plain');
    is($st, 200, "$mode: a plain location answers");
    ok($t < 0.4, "$mode: at once");
    waitpid $pid, 0;

    if ($mode eq 'stopped') {
        $n->start_redis;        # a fresh, empty Redis on the same socket
    } else {
        $n->resume_redis;
    }

    ($st, $h, $b, $j) = wait_ok(POST => "/v1/sandboxes/$sb/exec", $agent,
                                { argv => ['echo', "back-$mode"] });
    is($st, 200, "$mode: Redis back, service resumes without restarting nginx")
        or diag $b;
    is($j->{stdout}, "back-$mode\n", "$mode: it ran");

    if ($mode eq 'stopped') {
        # the restarted Redis is empty: the old approval is gone, and so
        # is the sandbox's record of what it runs with, which a reviewer
        # must see: an exec that needs a human is refused (fail closed)
        ($st, $h, $b, $j) = $n->request(POST => "/v1/sandboxes/$sb/exec", $agent,
                                        $risky, { 'Veto-Approval' => $id });
        is($st, 409, 'stopped: the lost approval is not honoured');
        is($j->{type}, 'urn:veto-sandbox:problem:sandbox_env_unknown',
           '... nor asked for again in a sandbox Redis forgot');
        ($st, $h, $b, $j) = $n->request(POST => '/v1/sandboxes', $agent,
                                        { ttl_s => 600 });
        is($st, 201, 'a new sandbox') or diag $b;
        $sb_new = $j->{id};
        ($st, $h, $b, $j) = $n->request(POST => "/v1/sandboxes/$sb_new/exec",
                                        $agent, $risky);
        is($st, 202, 'asks again');
        $id = $j->{approval_id};
        ($st) = $n->request(POST => "/v1/approvals/$id/approve", $rev, '');
        is($st, 200, 'approved again');
    }
}

# nothing ran while Redis was out: the approval is still unused
($st, $h, $b, $j) = $n->request(GET => "/v1/approvals/$id", $rev);
is($j->{state}, 'approved', 'the approval was not used while Redis was out');
($st, $h, $b) = $n->request(GET => "/v1/sandboxes/$sb/files?path=ran-while-redis-was-out", $agent);
is($st, 404, 'and the command never ran');
($st, $h, $b, $j) = $n->request(POST => "/v1/sandboxes/$sb_new/exec", $agent,
                                $risky, { 'Veto-Approval' => $id });
is($st, 200, 'now it runs, once') or diag $b;

# health says what Redis answers: stalled with nothing else asking it,
# the connection stays open and no command times out, so only health's
# own PING can tell
sub health_redis
{
    my ($want) = @_;
    my ($s, undef, undef, $hj) = $n->request(GET => '/v1/health');
    return $s == 200 && ($hj->{redis} // '') eq $want ? $hj : undef;
}
eventually('health: redis up', 10, sub { health_redis('up') });
$n->pause_redis;
my $hj = eventually('health: a stalled Redis is down', 5,
                    sub { health_redis('down') });
is($hj->{status}, 'degraded', 'health: the gateway says it is degraded (200)');
($t, $st, $h, $b, $j) = timed(GET => '/v1/health');
ok($t < 0.5, 'health stays quick while Redis is stalled ('
             . sprintf('%.3f', $t) . 's)');
is($j->{redis}, 'down', '... and says so each time');
$n->resume_redis;
$hj = eventually('health: redis back up', 10, sub { health_redis('up') });
is($hj->{status}, 'ok', 'health: ok again');

like($n->error_log, qr/veto_sandbox: redis .*(timed out|connect)/,
     'the error log says why');

$n->request(DELETE => "/v1/sandboxes/$_", $agent) for $sb, $sb_new;

done_testing;
