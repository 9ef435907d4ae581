#!/usr/bin/perl
# The gateway's Redis through Sentinel (issue 20): the master found by
# asking the sentinels in order (a dead first one skipped), ROLE checked,
# approval transitions and consumes confirmed by WAIT on a replica (and
# refused, nothing run, when no replica confirms), a manual failover
# followed by itself (the old master fenced off at the promotion, then
# +switch-master; what is approved after it is on the new master), nginx
# -t on the directives.  A
# real master, replica and three sentinels on loopback, started by this
# test; the real helper.

use strict;
use warnings;

use Test::More;
use JSON::PP ();
use lib 't/lib';
use VetoNginx;
use VetoSentinel;
use Eventually qw(eventually);
use Time::HiRes qw(sleep time);

VetoNginx::need(qw(helper redis));
VetoSentinel::need();

my $policy = {
    version => 1,
    tenants => {
        acme => {
            ceilings => { memory_mb => 512, timeout_s => 30, ttl_s => 3600 },
            approvals => { exec_argv => ['sh -c *'] },
        },
    },
};

my $n = VetoNginx->new;
$n->write_policy($policy);

# ---- nginx -t
my @bad = (
    [ "veto_sandbox_redis 127.0.0.1:1;\n"
      . "veto_sandbox_redis_sentinel m 127.0.0.1:2;",
      qr/conflicts with "veto_sandbox_redis"/, 'redis and sentinel' ],
    [ "veto_sandbox_redis_sentinel m 127.0.0.1:2;\n"
      . "veto_sandbox_redis 127.0.0.1:1;",
      qr/conflicts with "veto_sandbox_redis_sentinel"/, 'sentinel and redis' ],
    [ "veto_sandbox_redis_sentinel m;", qr/invalid number of arguments/,
      'sentinel without sentinels' ],
    [ "veto_sandbox_redis_sentinel m unix:/tmp/x.sock;", qr/over TCP/,
      'a unix socket sentinel' ],
    [ "veto_sandbox_redis_sentinel m 127.0.0.1:99999;", qr/veto_sandbox_redis/,
      'a bad port' ],
    [ "veto_sandbox_redis_wait 1;", qr/needs "veto_sandbox_redis"/,
      'wait without redis' ],
    [ "veto_sandbox_redis 127.0.0.1:1;\nveto_sandbox_redis_wait x;",
      qr/number of replicas/, 'wait: not a number' ],
    [ "veto_sandbox_redis 127.0.0.1:1;\nveto_sandbox_redis_wait 1 0s;",
      qr/positive timeout/, 'wait: zero timeout' ],
);
for my $c (@bad) {
    $n->render(http_extra => $c->[0]);
    my ($ok, $out) = $n->test_config;
    ok(!$ok, "nginx -t refuses: $c->[2]");
    like($out, $c->[1], "... naming why: $c->[2]");
}

my $s = VetoSentinel->new(addr => '127.0.0.1');
my $dead = VetoSentinel::free_port('127.0.0.1');   # no sentinel there
my $conf = $s->nginx_conf;
# a dead sentinel first: asked, skipped
$conf =~ s/(veto_sandbox_redis_sentinel \S+ )/$1 127.0.0.1:$dead /;

$n->start_helper;
$n->render(http_extra => $conf);
my ($ok, $out) = $n->test_config;
ok($ok, 'nginx -t: sentinels and wait') or diag $out;
$n->start(keep_conf => 1);

my $agent = $n->token(sub => 'agent-1');
my $rev = $n->token(sub => 'human-1', scope => 'approvals:review');
my ($st, $h, $b, $j);

sub redis_up
{
    my (undef, undef, undef, $hj) = $n->request(GET => '/v1/health');
    return ($hj->{redis} // '') eq 'up';
}

eventually('the master found through the sentinels (the dead one '
                . 'skipped)', 10,
           sub { redis_up() });
like($n->error_log, qr/127\.0\.0\.1:$dead.*(refused|connect)/,
     'the dead sentinel was asked first and is in the log');
like($n->error_log, qr/connected \(the master, as the sentinels say\)/,
     'connected to the master, ROLE checked');

($st, $h, $b, $j) = $n->request(POST => '/v1/sandboxes', $agent, {});
is($st, 201, 'create through the sentinels\' master') or diag $b;
my $sb = $j->{id};

# an exec that needs a human: the approval is created, approved and
# consumed, each confirmed by the replica before it counts
my $exec = { argv => ['sh', '-c', 'echo ran-1 >> /workspace/log'] };
($st, $h, $b, $j) = $n->request(POST => "/v1/sandboxes/$sb/exec", $agent,
                                $exec);
is($st, 202, 'an approval is asked for');
my $apr = $j->{approval_id};
($st) = $n->request(POST => "/v1/approvals/$apr/approve", $rev, {});
is($st, 200, 'approved');

my ($mport, @rports) = ($s->master_port,
                        grep { $_ != $s->master_port } $s->redis_ports);
sub on_a_replica
{
    my ($key, $field) = @_;
    return join(',', sort map { $s->client($_)->hget($key, $field) // '-' }
                          @rports);
}
like(on_a_replica("veto:{acme}:appr:$apr", 'state'), qr/approved/,
     'a replica has the approval as approved when approve answers');

($st, $h, $b, $j) = $n->request(POST => "/v1/sandboxes/$sb/exec", $agent,
                                $exec, { 'Veto-Approval' => $apr });
is($st, 200, 'the approved exec runs') or diag $b;
like(on_a_replica("veto:{acme}:appr:$apr", 'state'), qr/consumed/,
     'a replica has it consumed when the exec answers');

# ---- no replica confirms: the consume is refused, nothing runs
($st, $h, $b, $j) = $n->request(POST => "/v1/sandboxes/$sb/exec", $agent,
    { argv => ['sh', '-c', 'echo ran-2 >> /workspace/log'] });
my $apr2 = $j->{approval_id};
($st) = $n->request(POST => "/v1/approvals/$apr2/approve", $rev, {});
is($st, 200, 'a second approval approved');

($st, $h, $b, $j) = $n->request(POST => "/v1/sandboxes/$sb/exec", $agent,
    { argv => ['sh', '-c', 'echo ran-3 >> /workspace/log'] });
is($st, 202, 'a third approval asked for');
my $apr3 = $j->{approval_id};

my @rpids = map { $s->{pids}{"redis$_"} } @rports;
kill 'STOP', @rpids;
($st, $h, $b, $j) = $n->request(POST => "/v1/sandboxes/$sb/exec", $agent,
    { argv => ['sh', '-c', 'echo ran-2 >> /workspace/log'] },
    { 'Veto-Approval' => $apr2 });
is($st, 503, 'replicas stopped: the consume is not confirmed, 503');
is($j->{type}, 'urn:veto-sandbox:problem:redis_unavailable',
   '... as the decision store being unavailable');
like($n->error_log, qr/WAIT: 0 of 1 replicas confirmed/,
     'the log says WAIT was not confirmed');

($st) = $n->request(POST => "/v1/approvals/$apr3/deny", $rev,
                    { reason => 'no' });
is($st, 503, 'a denial no replica confirms is refused too');
($st) = $n->request(POST => "/v1/sandboxes/$sb/exec", $agent,
    { argv => ['sh', '-c', 'echo ran-5 >> /workspace/log'] });
is($st, 503, 'so is a new approval: nothing is asked of a human that may '
             . 'be lost');
kill 'CONT', @rpids;

($st, $h, $b) = $n->request(GET => "/v1/sandboxes/$sb/files?path=log",
                            $agent);
is($st, 200, 'the log reads back');
is($b, "ran-1\n", 'only the confirmed exec ran (the unconfirmed one did '
                  . 'not)');

($st, $h, $b, $j) = $n->request(POST => "/v1/sandboxes/$sb/exec", $agent,
    { argv => ['sh', '-c', 'echo ran-2 >> /workspace/log'] },
    { 'Veto-Approval' => $apr2 });
is($st, 403, 'the approval whose consume was not confirmed is spent: 403');
is($j->{state}, 'consumed', '... as consumed (fail closed: used at most '
                            . 'once)');

# ---- a manual failover: the gateway follows by itself
my $old = $mport;
my $new = $s->failover;
isnt($new, $old, "the sentinels moved the master ($old -> $new)");

# writes (a new approval, WAITed for) work again once the worker is on
# the new master and the demoted one replicates from it
my $deadline = time + 15;
my $apr4;
while (time < $deadline) {
    ($st, $h, $b, $j) = $n->request(POST => "/v1/sandboxes/$sb/exec", $agent,
        { argv => ['sh', '-c', 'echo ran-4 >> /workspace/log'] });
    if ($st == 202) { $apr4 = $j->{approval_id}; last }
    is($st, 503, 'while the master moves: 503, never allowed')
        or diag $b;
    sleep 0.1;
}
ok($apr4, 'approvals work again after the failover, by themselves');
like($n->error_log,
     qr/a replica of "veto" is being promoted: 127\.0\.0\.1:$old fenced off/,
     'the worker fenced the old master off when a replica was promoted');
# +switch-master comes from each sentinel once it has the new
# configuration: wait for the first
my $heard = 0;
eventually('the gateway heard +switch-master', 10, sub {
    ($heard = $n->error_log =~ /\+switch-master "veto" to 127\.0\.0\.1:$new/);
});
ok($heard, 'the worker heard +switch-master');
($st) = $n->request(POST => "/v1/approvals/$apr4/approve", $rev, {});
is($st, 200, 'approve on the new master (its replica confirms)');
is($s->client($new)->hget("veto:{acme}:appr:$apr4", 'state'), 'approved',
   'the new master holds it');

($st) = $n->request(DELETE => "/v1/sandboxes/$sb", $agent);
is($st, 200, 'delete');

$n->stop;
unlike($n->error_log, qr/\[(alert|crit)\]/, "no alert in the log");
$n->helper->leaks_ok('after the sentinel tests');

done_testing;
