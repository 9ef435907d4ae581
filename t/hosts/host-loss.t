#!/usr/bin/perl
# Gateway hosts as one service (issue 20): each host's identity and
# lease, and what becomes of a lost host's sandboxes.  Two hosts, each an
# nginx with its own helper and `veto_sandbox_host <name> <address>`,
# sharing one Redis under Sentinel: each keeps a lease (boot epoch,
# address) in Redis; the agent's sandbox asked for through the host that
# does not hold it is 421 sandbox_elsewhere naming the holder and its
# address, before anything is counted, and so is a fork or a get of a
# snapshot a holds (snapshot_elsewhere); host a killed (nginx and helper,
# kill -9): its sandbox answers 503 host_unavailable through b as soon as
# a's lease ran out, its quota slot still held; after the grace period
# one reaper ends it as host_lost (one audit record), its quota slot is
# free; a back: a new boot epoch, no orphan (its helper's restart ended
# the sandbox).  nginx -t on the directives.

use strict;
use warnings;

use Test::More;
use lib 't/lib';
use VetoNginx;
use VetoSentinel;
use VetoHosts qw(up);
use Eventually qw(eventually);
use Time::HiRes qw(sleep time);

VetoNginx::need(qw(helper redis));
VetoSentinel::need();

my $policy = VetoHosts::acme_policy(quotas => { concurrent_sandboxes => 2 });

# ---- nginx -t
my $t = VetoNginx->new;
$t->write_policy($policy);
for my $c (['veto_sandbox_redis 127.0.0.1:1; veto_sandbox_host gw-a nohost;',
            qr/host:port/, 'an address without a port'],
           ['veto_sandbox_redis 127.0.0.1:1; veto_sandbox_host gw-a 10.0.0.1:80/x;',
            qr/host:port/, 'an address with a path'],
           ['veto_sandbox_host gw-a 10.0.0.1:8080;', qr/needs "veto_sandbox_redis"/,
            'an address without Redis'],
           ['veto_sandbox_redis 127.0.0.1:1; veto_sandbox_host gw-a 10.0.0.1:8080; '
            . 'veto_sandbox_host_lease 500ms;', qr/at least 1s/,
            'a lease under 1 s'])
{
    $t->render(http_extra => $c->[0]);
    my ($ok, $out) = $t->test_config;
    ok(!$ok, "nginx -t refuses $c->[2]");
    like($out, $c->[1], "... naming why: $c->[2]");
}
$t->render(http_extra => 'veto_sandbox_redis 127.0.0.1:1; '
                         . 'veto_sandbox_host gw-a 10.0.0.1:8080; '
                         . 'veto_sandbox_host_lease 3s; '
                         . 'veto_sandbox_host_grace 10s;');
my ($tok, $tout) = $t->test_config;
ok($tok, 'nginx -t accepts a host with an address, a lease and a grace')
    or diag $tout;

# ---- two hosts, each in its own network namespace with its own address
# on a bridge, one Redis under Sentinel on the bridge's address
my $hosts = VetoHosts->new(qw(a b));
my $s = VetoSentinel->new(addr => $hosts->gateway);
my $lease_s = 2;
my $grace_s = 3;
my %gw = VetoHosts::gateways(
    names => [qw(a b)], sentinel => $s, policy => $policy, net => $hosts,
    address => 1,
    extra => "    veto_sandbox_host_lease ${lease_s}s;\n"
           . "    veto_sandbox_host_grace ${grace_s}s;\n");
my ($A, $B) = @gw{qw(a b)};

eventually('both hosts found the master', 15, sub { up($A) && up($B) });

my $m = $s->master;
sub lease
{
    my ($name) = @_;
    my %h = @{ $m->hgetall("veto:{:hosts}:lease:$name") // [] };
    return \%h;
}
eventually('each host holds a lease', 10,
           sub { lease('gw-a')->{epoch} && lease('gw-b')->{epoch} });
my $la = lease('gw-a');
is($la->{addr}, $A->addr . ':' . $A->port, "a's lease names its address");
like($la->{epoch}, qr/^[1-9][0-9]*$/, '... and its boot epoch');
is($m->get('veto:{:hosts}:boot:gw-a'), $la->{epoch},
   '... the one it took at its start');
my $pttl = $m->pttl('veto:{:hosts}:lease:gw-a');
ok($pttl > 0 && $pttl <= $lease_s * 1000, "the lease expires ($pttl ms)");
ok(defined $m->zscore('veto:{:hosts}:seen', 'gw-a')
   && defined $m->zscore('veto:{:hosts}:seen', 'gw-b'),
   'both hosts are in the seen set');

my $agent_a = $A->token(sub => 'agent-1');
my $agent_b = $B->token(sub => 'agent-1');
my $other_b = $B->token(sub => 'agent-2');
my ($st, $h, $b, $j);

($st, $h, $b, $j) = $A->request(POST => '/v1/sandboxes', $agent_a, {});
is($st, 201, 'create on host a') or diag $b;
my $sa = $j->{id};

sub owner_of
{
    my ($id) = @_;
    return scalar eventually("$id has an owner", 5,
                      sub { $m->hget("veto:{acme}:sbx:own:$id", 'gateway') });
}
is(owner_of($sa), 'gw-a', "a's sandbox is recorded as host a's");
# the load: the helper's live sandboxes and capacity (its max_sandboxes),
# from the gateway's poll of its ends (every 5 s by default)
eventually("a's lease carries its load", 12,
           sub { (lease('gw-a')->{sandboxes} // '') eq '1' })
    or diag explain lease('gw-a');
is(lease('gw-a')->{capacity}, '8', '... its capacity');
is(lease('gw-a')->{load}, '0.125', '... and their ratio');
eventually("b's: no sandbox", 12,
           sub { (lease('gw-b')->{sandboxes} // '') eq '0' })
    or diag explain lease('gw-b');

# ---- through b, a alive: 421 naming a and its address
for my $req ([POST => "/v1/sandboxes/$sa/exec", { argv => ['true'] }],
             [GET => "/v1/sandboxes/$sa/files?path=x"],
             [DELETE => "/v1/sandboxes/$sa"])
{
    ($st, $h, $b, $j) = $B->request($req->[0], $req->[1], $agent_b, $req->[2]);
    is($st, 421, "$req->[0] $req->[1] through b: 421") or diag $b;
    is($j->{type}, 'urn:veto-sandbox:problem:sandbox_elsewhere',
       '... sandbox_elsewhere');
    is($j->{host}, 'gw-a', '... naming host a');
    is($j->{address}, $A->addr . ':' . $A->port, '... and its address');
}
# a's snapshot: its fork and its get through b are 421 too, naming a
($st, $h, $b, $j) = $A->request(POST => "/v1/sandboxes/$sa/snapshots",
                                $agent_a);
is($st, 201, "a snapshot of a's sandbox, made on a") or diag $b;
my $snap = $j->{id} // '';
eventually("its routing record names a", 5, sub {
    ($m->hget("veto:{acme}:snap:route:$snap", 'gateway') // '') eq 'gw-a' });
for my $req ([POST => '/v1/sandboxes', { from_snapshot => $snap }],
             [GET => "/v1/snapshots/$snap"])
{
    ($st, $h, $b, $j) = $B->request($req->[0], $req->[1], $agent_b, $req->[2]);
    is($st, 421, "$req->[0] $req->[1] through b: 421") or diag $b;
    is($j->{type}, 'urn:veto-sandbox:problem:snapshot_elsewhere',
       '... snapshot_elsewhere');
    is($j->{host}, 'gw-a', '... naming host a');
    is($j->{address}, $A->addr . ':' . $A->port, '... and its address');
}
is($m->zcard('veto:{acme}:sbx:live:agent-1'), 1,
   '... the fork counted nothing');
# another agent's sandbox is not told apart from none
($st, $h, $b, $j) = $B->request(POST => "/v1/sandboxes/$sa/exec", $other_b,
                                { argv => ['true'] });
is($st, 404, "another agent asking for a's sandbox through b: 404") or diag $b;
ok(defined $m->zscore('veto:{acme}:sbx:live', $sa),
   "a's sandbox is still counted");
($st, $h, $b) = $A->request(POST => "/v1/sandboxes/$sa/exec", $agent_a,
                            { argv => ['sh', '-c', 'echo kept > /workspace/f'] });
is($st, 200, 'through a it runs') or diag $b;

# ---- a dies (nginx and helper, kill -9)
my $epoch_a = $la->{epoch};
my @pids = ($A->master_pid, $A->worker_pids);
kill 'KILL', @pids;
$A->{running} = 0;
$A->helper->kill9;
my $gone_at = time;

eventually("a's lease runs out", $lease_s + 2,
           sub { !$m->exists('veto:{:hosts}:lease:gw-a') });
($st, $h, $b, $j) = $B->request(POST => "/v1/sandboxes/$sa/exec", $agent_b,
                                { argv => ['true'] });
is($st, 503, "a's sandbox through b, a gone: 503") or diag $b;
is($j->{type}, 'urn:veto-sandbox:problem:host_unavailable',
   '... host_unavailable');
is($j->{host}, 'gw-a', '... naming host a');
ok(defined $m->zscore('veto:{acme}:sbx:live', $sa),
   '... its quota slot still held (a may come back)');
($st, $h, $b, $j) = $B->request(POST => '/v1/sandboxes', $agent_b, {});
is($st, 201, 'a create on b') or diag $b;
my $sb = $j->{id};
owner_of($sb);
($st) = $B->request(POST => '/v1/sandboxes', $agent_b, {});
is($st, 429, "the quota is full: a's slot is still counted");

# ---- after the grace: host_lost, once
eventually("after the grace, a's sandbox is ended", $lease_s + $grace_s + 10,
           sub { !$m->exists("veto:{acme}:sbx:own:$sa") });
my $took = time - $gone_at;
cmp_ok($took, '>=', $grace_s, "... not before the grace ($took s)");
ok(!defined $m->zscore('veto:{acme}:sbx:live', $sa),
   '... its quota slot is free');
ok(!defined $m->zscore('veto:{:hosts}:seen', 'gw-a'),
   '... the lost host left the seen set');
my $entries = $m->xrange('veto:{acme}:audit', '-', '+');
my @lost = grep {
    my %f = @{ $_->[1] };
    ($f{action} // '') eq 'sandbox.end' && ($f{sandbox} // '') eq $sa
} @$entries;
is(scalar @lost, 1, 'one audit record of the end');
my %f = @{ $lost[0][1] // [] };
is($f{outcome}, 'host_lost', '... outcome host_lost');
is($f{agent}, 'agent-1', '... the agent');
like($f{detail} // '', qr/"host":"gw-a"/, '... naming the host');
($st, $h, $b, $j) = $B->request(POST => '/v1/sandboxes', $agent_b, {});
is($st, 201, 'the quota is free again: a create on b') or diag $b;
my $sb2 = $j->{id};
($st, $h, $b, $j) = $B->request(POST => "/v1/sandboxes/$sa/exec", $agent_b,
                                { argv => ['true'] });
is($st, 410, "a's ended sandbox through b: 410 (its routing record)")
    or diag $b;
is($j->{end_reason}, 'host_lost', '... host_lost');
($st, $h, $b, $j) = $B->request(GET => "/v1/sandboxes/$sa", $agent_b);
is($st, 200, '... a GET through b: 200') or diag $b;
is($j->{state}, 'ended', '... ended');
is($j->{end_reason}, 'host_lost', '... host_lost');

# ---- a back: a new boot epoch; its helper's restart ended the sandbox
$A->helper->launch;
$A->start(keep_conf => 1);
eventually('a is back, under a new boot epoch', 15,
           sub { up($A) && (lease('gw-a')->{epoch} // 0) > $epoch_a });
($st, $h, $b, $j) = $A->request(POST => "/v1/sandboxes/$sa/exec", $agent_a,
                                { argv => ['true'] });
is($st, 410, "a's old sandbox is gone on a too (no orphan)") or diag $b;
is($j->{end_reason}, 'helper_restart', '... ended by its helper\'s restart');
# a answers for it again: b (without routing) sends the client there
($st, $h, $b, $j) = $B->request(POST => "/v1/sandboxes/$sa/exec", $agent_b,
                                { argv => ['true'] });
is($st, 421, '... through b: 421, as for a live one') or diag $b;
is($j->{host}, 'gw-a', '... naming a');
# a's poll of its helper's ends (the first a second after its start)
# hears of that end: it is on record already
eventually("a's poll heard of its helper's end of the sandbox", 10,
           sub { $m->exists("veto:{acme}:sbx:end:$sa:helper_restart") });
$entries = $m->xrange('veto:{acme}:audit', '-', '+');
@lost = grep {
    my %g = @{ $_->[1] };
    ($g{action} // '') eq 'sandbox.end' && ($g{sandbox} // '') eq $sa
} @$entries;
is(scalar @lost, 1, "still one record of the end of a's sandbox")
    or diag explain \@lost;

for ([$B, $sb, $agent_b], [$B, $sb2, $agent_b]) {
    my ($n, $id, $tok) = @$_;
    ($st) = $n->request(DELETE => "/v1/sandboxes/$id", $tok);
    is($st, 200, "delete $id");
}

# ---- a second run under b's name (a copy started by mistake): the
# newer boot epoch holds the name, the older run stops renewing
my $C = VetoNginx->new;
$C->write_policy($policy);
$C->{helper_sock} = $B->{helper_sock};
$C->render(http_extra => $s->nginx_conf
           . "    veto_sandbox_host gw-b 127.0.0.1:" . $C->port . ";\n"
           . "    veto_sandbox_host_lease ${lease_s}s;\n");
$C->start(keep_conf => 1);
my $epoch_b = lease('gw-b')->{epoch};
eventually("the newer run under b's name holds b's lease", 10,
           sub { (lease('gw-b')->{addr} // '') eq '127.0.0.1:' . $C->port });
eventually('... the older run says so and stops renewing', 10,
           sub { $B->error_log =~ /a newer run \(boot epoch \d+, this one $epoch_b\) holds this host's name/ });
sleep $lease_s;    # on purpose: a lease period goes by, and b's stays C's
is(lease('gw-b')->{addr}, '127.0.0.1:' . $C->port, '... and keeps it');
$C->stop;

for my $name (qw(a b)) {
    my $n = $gw{$name};
    $n->stop;
    my $log = $n->error_log;
    my @bad = grep { /\[(alert|crit)\]/ && !/worker process \d+ exited/
                     && !/a newer run/ }
              split /\n/, $log;
    ok(!@bad, "no alert in ${name}'s log") or diag join("\n", @bad);
    $n->helper->leaks_ok("host $name");
}
like($B->error_log, qr/host "gw-a" is lost/, "b's log says a was lost");

done_testing;
