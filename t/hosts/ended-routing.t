#!/usr/bin/perl
# An ended sandbox through every gateway host.  Three hosts (t/lib/
# VetoHosts.pm: each an nginx in its own network namespace with its own
# helper, routing between them, one Redis under Sentinel), the helpers'
# ENDED records kept for a short ended_retention_s.  A sandbox deleted
# through a keeps a routing record (veto:{T}:sbx:route:<id>: its owner,
# its run, how and when it ended, until the ENDED record's
# retained_until): a GET through b and c answers 200 "ended" "deleted"
# with a's very body; an exec (streamed too), a file write and a second
# DELETE through b or c are a's 410; another agent's is 404.  Host c dies with
# one ended and one live sandbox: the ended one answers its end from the record
# through a and b (not 503) once c's lease ran out; the live one, after
# the grace, ended as host_lost, answers host_lost (200 to a GET, 410 to
# an exec) through a and b, not 404.  After the retention the deleted
# sandbox is 404 through every host and its routing record is gone.

use strict;
use warnings;

use Test::More;
use lib 't/lib';
use VetoNginx;
use VetoSentinel;
use VetoHosts qw(hosts_ready);
use Eventually qw(eventually);
use JSON::PP;
use Time::HiRes qw(sleep time);

VetoNginx::need(qw(helper redis));
VetoSentinel::need();

my $policy = VetoHosts::acme_policy(quotas => { concurrent_sandboxes => 8 });

my $retention_s = 20;
my $lease_s = 2;
my $grace_s = 3;

my $net = VetoHosts->new(qw(a b c));
my $s = VetoSentinel->new(addr => $net->gateway);
my %gw = VetoHosts::gateways(
    names => [qw(a b c)], sentinel => $s, policy => $policy, net => $net,
    address => 1, routing => 1, read_timeout => '60s', check => 1,
    helper => { ended_retention_s => $retention_s },
    extra => "    veto_sandbox_host_lease ${lease_s}s;\n"
           . "    veto_sandbox_host_grace ${grace_s}s;\n");
my ($A, $B, $C) = @gw{qw(a b c)};

hosts_ready($s, %gw);
# the master, asked again whenever its connection went (a failover, or
# Sentinel's CLIENT KILL when it turns a server into a replica)
sub M { $s->live_master }

my $agent = $A->token(sub => 'agent-1');
my $other = $A->token(sub => 'agent-2');
my ($st, $h, $b, $j);

sub create
{
    my ($n) = @_;
    my ($cst, undef, $cb, $cj) = $n->request(POST => '/v1/sandboxes',
                                             $agent, {});
    is($cst, 201, 'a create') or diag $cb;
    return $cj->{id};
}

# ---- a sandbox on a, deleted through a
my $sa = create($A);
eventually('owned by a', 5, sub {
    (M()->hget("veto:{acme}:sbx:own:$sa", 'gateway') // '') eq 'gw-a' });
($st, $h, $b) = $B->request(POST => "/v1/sandboxes/$sa/exec", $agent,
                            { argv => ['true'] });
is($st, 200, 'an exec through b while it lives') or diag $b;
my $epoch = M()->hget("veto:{acme}:sbx:own:$sa", 'epoch');

($st, $h, $b, $j) = $A->request(DELETE => "/v1/sandboxes/$sa", $agent);
is($st, 200, 'deleted through a') or diag $b;
my $until = $j->{ended}{retained_until};
ok($until, '... its ENDED record kept until retained_until');

my %r = @{ M()->hgetall("veto:{acme}:sbx:route:$sa") // [] };
ok(!M()->exists("veto:{acme}:sbx:own:$sa"), 'its ownership record is gone');
is($r{gateway}, 'gw-a', 'its routing record names host a');
is($r{agent}, 'agent-1', '... the agent');
is($r{epoch}, $epoch, "... the helper run that held it");
is($r{end_reason}, 'deleted', '... how it ended');
like($r{ended_at} // '', qr/^[0-9]+$/, '... and when');
my $ttl = M()->ttl("veto:{acme}:sbx:route:$sa");
ok($ttl > 0 && $ttl <= $retention_s,
   "it expires with the ENDED record ($ttl s)");
cmp_ok(length(join '', %r), '<', 512, '... a slim record');

($st, $h, my $body_a, $j) = $A->request(GET => "/v1/sandboxes/$sa", $agent);
is($st, 200, 'GET through a: 200') or diag $body_a;
is($j->{state}, 'ended', '... ended');
is($j->{end_reason}, 'deleted', '... deleted');
for my $n ([b => $B], [c => $C]) {
    ($st, $h, $b, $j) = $n->[1]->request(GET => "/v1/sandboxes/$sa", $agent);
    is($st, 200, "GET through $n->[0]: 200") or diag $b;
    is($j->{state}, 'ended', '... ended');
    is($j->{end_reason}, 'deleted', '... deleted');
    is($b, $body_a, "... a's very answer");
}

for my $req ([B => POST => "/v1/sandboxes/$sa/exec", { argv => ['true'] }],
             [C => PUT => "/v1/sandboxes/$sa/files?path=x", "x\n"],
             [B => DELETE => "/v1/sandboxes/$sa"])
{
    my ($via, $method, $path, $body) = @$req;
    my $n = $via eq 'B' ? $B : $C;
    ($st, $h, $b, $j) = $n->request($method, $path, $agent, $body);
    is($st, 410, "$method $path through " . lc($via) . ': 410') or diag $b;
    is($j->{type}, 'urn:veto-sandbox:problem:ended', '... ended');
    is($j->{end_reason}, 'deleted', '... deleted');
}
($st, $h, $b) = $A->request(POST => "/v1/sandboxes/$sa/exec", $agent,
                            { argv => ['true'] });
is($st, 410, '... as through a');
($st, $h, $b, $j) = $C->request(POST => "/v1/sandboxes/$sa/exec", $agent,
                                { argv => ['true'] },
                                { Accept => 'application/x-ndjson' });
is($st, 410, 'a streamed exec through c: 410') or diag $b;
is($j->{end_reason}, 'deleted', '... deleted');
($st, $h, $b) = $B->request(GET => "/v1/sandboxes/$sa", $other);
is($st, 404, "another agent's ended sandbox through b: 404") or diag $b;

# ---- c dies with an ended and a live sandbox
my $sc_ended = create($C);
my $sc_live = create($C);
eventually('two sandboxes on c', 5, sub {
    M()->exists("veto:{acme}:sbx:own:$sc_live")
        && M()->exists("veto:{acme}:sbx:own:$sc_ended") });
($st) = $B->request(DELETE => "/v1/sandboxes/$sc_ended", $agent);
is($st, 200, "one of c's deleted through b") or diag $b;
ok(M()->exists("veto:{acme}:sbx:route:$sc_ended"), '... its routing record');
($st, $h, $b, $j) = $A->request(GET => "/v1/sandboxes/$sc_ended", $agent);
is($j->{end_reason}, 'deleted', '... routed to c through a');
my $ended_at = $j->{ended_at};

kill 'KILL', $C->master_pid, $C->worker_pids;
$C->{running} = 0;
$C->helper->kill9;
eventually("c's lease runs out", $lease_s + 5,
           sub { !M()->exists('veto:{:hosts}:lease:gw-c') });

($st, $h, $b, $j) = $A->request(GET => "/v1/sandboxes/$sc_ended", $agent);
is($st, 200, "c's deleted sandbox through a, c gone: 200") or diag $b;
is($j->{state}, 'ended', '... ended');
is($j->{end_reason}, 'deleted', '... deleted (from its routing record)');
is($j->{ended_at}, $ended_at, '... when c said');
is($j->{host}, 'gw-c', '... on host c');
($st, $h, $b, $j) = $B->request(POST => "/v1/sandboxes/$sc_ended/exec",
                                $agent, { argv => ['true'] });
is($st, 410, '... an exec through b: 410') or diag $b;
is($j->{end_reason}, 'deleted', '... deleted');
($st, $h, $b, $j) = $B->request(POST => "/v1/sandboxes/$sc_ended/exec",
                                $agent, { argv => ['true'] },
                                { Accept => 'application/x-ndjson' });
is($st, 410, '... a streamed one: 410') or diag $b;
is($j->{end_reason}, 'deleted', '... deleted');
($st, $h, $b) = $B->request(GET => "/v1/sandboxes/$sc_ended", $other);
is($st, 404, "... another agent's: 404") or diag $b;

eventually("after the grace, c's live sandbox is ended",
           $lease_s + $grace_s + 15, sub { !M()->exists("veto:{acme}:sbx:own:$sc_live") });
%r = @{ M()->hgetall("veto:{acme}:sbx:route:$sc_live") // [] };
is($r{end_reason}, 'host_lost', '... its routing record: host_lost');
is($r{gateway}, 'gw-c', '... on host c');
for my $n ([a => $A], [b => $B]) {
    ($st, $h, $b, $j) = $n->[1]->request(GET => "/v1/sandboxes/$sc_live",
                                         $agent);
    is($st, 200, "GET through $n->[0]: 200") or diag $b;
    is($j->{state}, 'ended', '... ended');
    is($j->{end_reason}, 'host_lost', '... host_lost');
    ($st, $h, $b, $j) = $n->[1]->request(POST => "/v1/sandboxes/$sc_live/exec",
                                         $agent, { argv => ['true'] });
    is($st, 410, "an exec through $n->[0]: 410") or diag $b;
    is($j->{end_reason}, 'host_lost', '... host_lost');
}

# ---- after the retention: unknown everywhere
eventually('the routing record expires with the ENDED record',
           $until - time + 5, sub { !M()->exists("veto:{acme}:sbx:route:$sa") });
eventually("a's helper let its ENDED record go: 404 through a", 10, sub {
    my ($s1) = $A->request(GET => "/v1/sandboxes/$sa", $agent);
    $s1 == 404 });
for my $n ([b => $B], [a => $A]) {
    ($st, $h, $b, $j) = $n->[1]->request(GET => "/v1/sandboxes/$sa", $agent);
    is($st, 404, "the deleted sandbox through $n->[0]: 404") or diag $b;
    ($st, $h, $b, $j) = $n->[1]->request(POST => "/v1/sandboxes/$sa/exec",
                                         $agent, { argv => ['true'] });
    is($st, 404, "... an exec through $n->[0]: 404") or diag $b;
}
eventually("c's deleted sandbox's routing record expired too", 10,
           sub { !M()->exists("veto:{acme}:sbx:route:$sc_ended") });
($st, $h, $b) = $B->request(GET => "/v1/sandboxes/$sc_ended", $agent);
is($st, 404, '... 404 through b') or diag $b;

done_testing;
