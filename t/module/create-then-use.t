#!/usr/bin/perl
# What a create writes to Redis (the ownership record, the env a reviewer
# is shown, the quota slot under the real id) is there before the client
# has the 201: the next request, on a new connection that may reach the
# other nginx worker (its own Redis connection), finds it.  An exec that
# needs approval right after the create is asked for (202), never 409
# sandbox_env_unknown, and the list counts the new sandbox at once.
# (Before, the bookkeeping left on the worker's next event-loop turn,
# after the response: a worker descheduled in between let the client's
# next request, or its own read of Redis, come first.  A clean run under
# load met it in t/module/helper-restart.t and t/module/metrics.t; on an idle
# machine this test passes without the fix too: it guards the order, it cannot
# force the preemption.)

use strict;
use warnings;

use Test::More;
use lib 't/lib';
use VetoNginx;
use Eventually qw(eventually);

VetoNginx::need(qw(helper redis));

my $ROUNDS = 40;

my $policy = {
    version => 1,
    tenants => {
        acme => {
            quotas => { concurrent_sandboxes => 50 },
            approvals => { exec_argv => ['sh -c *'] },
        },
    },
};

my $n = VetoNginx->new;
$n->start_redis;
$n->start_helper;
$n->start(redis => 1, policy => $policy, workers => 2);

my $agent = $n->token(sub => 'agent-1');
my $m = $n->redis;
my ($st, $h, $b, $j);
eventually('the gateway serves (Redis connected)', 10, sub {
    ($st) = $n->request(GET => '/v1/sandboxes', $agent);
    $st == 200;
});
is($st, 200, 'the gateway answers');

my @bad;
for my $i (1 .. $ROUNDS) {
    ($st, $h, $b, $j) = $n->request(POST => '/v1/sandboxes', $agent, {});
    if ($st != 201) { push @bad, "create $i: $st"; next }
    my $id = $j->{id};
    # Redis, read the moment the 201 is in: the slot under the real id
    # and the ownership record with the env a reviewer is shown
    push @bad, "create $i: not counted in Redis yet"
        unless defined $m->zscore('veto:{acme}:sbx:live', $id);
    push @bad, "create $i: no ownership record with its env yet"
        unless defined $m->hget("veto:{acme}:sbx:own:$id", 'env_sha256');
    ($st, $h, $b, $j) = $n->request(POST => "/v1/sandboxes/$id/exec", $agent,
                                    { argv => ['sh', '-c', 'true'] });
    push @bad, "ask $i: $st " . ($j->{type} // '') if $st != 202;
    ($st, $h, $b, $j) = $n->request(GET => '/v1/sandboxes', $agent);
    my $listed = grep { ($_->{id} // '') eq $id } @{ $j->{sandboxes} // [] };
    push @bad, "list $i: $st, not listed" unless $st == 200 && $listed;
    ($st) = $n->request(DELETE => "/v1/sandboxes/$id", $agent);
    push @bad, "delete $i: $st" if $st != 200;
}
is_deeply(\@bad, [], "$ROUNDS creates, each used at once: asked (202) and "
                     . 'listed, never sandbox_env_unknown');

done_testing;
