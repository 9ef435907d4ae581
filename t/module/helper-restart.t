#!/usr/bin/perl
# Issue 7, item 3: a helper crash must not lock a tenant out of its quota.
# The gateway reconciles with its helper: each ownership record names the
# helper run (epoch) that made the sandbox, and a create first asks the
# helper its epoch, so after a restart this gateway's sandboxes of the old
# run are dropped; and a helper "not_found" for a sandbox Redis holds as
# live frees its slot and ownership record, when it is the asking agent's
# (never for another agent's sandbox, nor for a missing file); so does
# its answer that the sandbox ended (410, or GET's ENDED record).

use strict;
use warnings;

use Test::More;
use lib 't/lib';
use VetoNginx;
use Eventually qw(eventually);
use Time::HiRes qw(sleep);

VetoNginx::need(qw(helper redis));

my $policy = {
    version => 1,
    tenants => {
        acme => {
            ceilings => { memory_mb => 512, timeout_s => 30, ttl_s => 3600 },
            quotas => { concurrent_sandboxes => 2 },
        },
    },
};

my $n = VetoNginx->new;
$n->start_redis;
my $helper = $n->start_helper;
# the poll of the helper's ENDED records would free these slots too
# (t/module/lifetime.t): off, so that what is shown here is the reconciliation
# alone
$n->start(redis => 1, policy => $policy,
          http_extra => 'veto_sandbox_ended_poll 0;');

my $agent = $n->token(sub => 'agent-1');
my $agent2 = $n->token(sub => 'agent-2');
my $r = $n->redis;
my $LIVE = 'veto:{acme}:sbx:live';

my ($st, $h, $b, $j);
eventually('Redis is up', 10, sub {
    ($st, $h, $b, $j) = $n->request(GET => '/v1/health');
    ($j->{redis} // '') eq 'up';
});
is($j->{redis}, 'up', 'redis up');

sub create
{
    my ($tok) = @_;
    my ($st, $h, $b, $j) = $n->request(POST => '/v1/sandboxes', $tok // $agent,
                                       { ttl_s => 3600 });
    return ($st, $j->{id}, $j, $b);
}

sub counted { $r->zcard($LIVE) }

# bookkeeping after a reply is fire and forget: give it a moment
# ---- at the quota
my ($s1, $a) = create();
my ($s2, $bb) = create();
is("$s1 $s2", '201 201', 'two sandboxes (the quota)');
my ($s3, undef, $jq) = create();
is($s3, 429, 'a third: 429');

my $epoch = $helper->ping->{epoch};
like($epoch, qr/^[0-9a-f]{32}$/, 'the helper reports its epoch');
is($r->hget("veto:{acme}:sbx:own:$a", 'epoch'), $epoch,
   'the ownership record names the helper run that made the sandbox');

# another gateway's sandbox of an old run: not ours to drop
my $other = 'sb-ffffffffffffffffffffffff';
$r->zadd($LIVE, (time + 3600) * 1000, $other);
$r->hset("veto:{acme}:sbx:own:$other", 'agent', 'agent-9',
         'gateway', 'another-gateway', 'epoch', 'f' x 32);

# ---- kill -9 and restart the helper: it cleans its sandboxes up; Redis
# still counts them
$helper->kill9;
$helper->launch;
my $epoch2 = $helper->ping->{epoch};
isnt($epoch2, $epoch, 'the restarted helper has a new epoch');
is(counted(), 3, 'Redis still counts the two dead sandboxes (and the other)');

my ($s4, $c) = create();
is($s4, 201, 'the next create succeeds: the old run\'s sandboxes were dropped');
ok(defined $r->zscore($LIVE, $c) && !defined $r->zscore($LIVE, $a)
   && !defined $r->zscore($LIVE, $bb), 'the new sandbox is counted, the dead not');
ok(!$r->exists("veto:{acme}:sbx:own:$a") && !$r->exists("veto:{acme}:sbx:own:$bb"),
   'the dead sandboxes\' ownership records went');
ok(!defined $r->zscore('veto:{acme}:sbx:live:agent-1', $a),
   'and their agent\'s slots');
ok($r->exists("veto:{acme}:sbx:own:$other") && defined $r->zscore($LIVE, $other),
   'another gateway\'s sandbox stays');
$r->zrem($LIVE, $other);
$r->del("veto:{acme}:sbx:own:$other");
is($r->hget("veto:{acme}:sbx:own:$c", 'epoch'), $epoch2, 'the new one names the new run');

($st, $h, $b, $j) = $n->request(DELETE => "/v1/sandboxes/$a", $agent);
is($st, 410, 'DELETE of a sandbox the crash ended: 410');
is($j->{end_reason}, 'helper_restart', '... it ended with the helper\'s restart');

# ---- a sandbox the helper forgot without a restart (its own TTL, say):
# same epoch, so only its not_found tells
my ($s5, $d) = create();
is($s5, 201, 'a second sandbox: at the quota again');
my $gone = $helper->destroy($d, tenant => 'acme', agent => 'agent-1');
ok($gone->{ok}, 'the helper destroys it behind the gateway\'s back');
is(counted(), 2, 'Redis still counts it');
($st) = create();
is($st, 429, 'so a create gets 429');

# not another agent's not_found: the helper says that for other agents'
# sandboxes too
($st) = $n->request(DELETE => "/v1/sandboxes/$c", $agent2);
is($st, 404, 'another agent deleting a live sandbox: 404');
ok(defined $r->zscore($LIVE, $c), 'and it frees nothing');
# nor a missing file in a live sandbox
($st) = $n->request(GET => "/v1/sandboxes/$c/files?path=nope", $agent);
is($st, 404, 'a missing file: 404');
ok(defined $r->zscore($LIVE, $c), 'and the sandbox stays counted');

($st, $h, $b, $j) = $n->request(DELETE => "/v1/sandboxes/$d", $agent);
is($st, 410, 'DELETE of the dead id: 410 (it ended)');
eventually('and it freed the slot', 2, sub { !defined $r->zscore($LIVE, $d) });
ok(!$r->exists("veto:{acme}:sbx:own:$d"), 'and the ownership record');
my ($s6, $e) = create();
is($s6, 201, 'a create fits again');

# a read of a dead id frees it too
$helper->destroy($e, tenant => 'acme', agent => 'agent-1');
($st, $h, $b, $j) = $n->request(GET => "/v1/sandboxes/$e", $agent);
is($st, 200, 'GET of a dead id: 200');
is($j->{state}, 'ended', '... its ENDED record');
eventually('and it freed the slot', 2, sub { !defined $r->zscore($LIVE, $e) });

$n->request(DELETE => "/v1/sandboxes/$c", $agent);
eventually('nothing counted once all are gone', 2, sub { counted() == 0 });

done_testing();
