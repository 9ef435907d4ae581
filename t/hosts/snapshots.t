#!/usr/bin/perl
# Snapshots with several gateway hosts (routing on): a snapshot asked of
# any host is made on the host that holds its sandbox (the row names
# {id}, so it is routed there) and stays there, its routing record in
# Redis naming that host for as long as the snapshot lives.  A fork asked
# of another host is routed to the holder and the new sandbox lives there
# (then reachable through any host, as any sandbox); get and delete asked
# of another host are routed likewise (the delete takes the routing
# record with it); a fork's lifetime lengthened by PATCH lengthens the
# record's; another agent's snapshot is not found through any
# host; the holder down (its lease ran out): a fork or a get through
# another host is 503 snapshot_host_unavailable naming it, never a local
# 404 (docs/api.md, "Several hosts").

use strict;
use warnings;

use Test::More;
use lib 't/lib';
use VetoNginx;
use VetoSentinel;
use VetoHosts qw(hosts_ready);
use Eventually qw(eventually);

VetoNginx::need(qw(helper redis));
VetoSentinel::need();

my $policy = VetoHosts::acme_policy();
my $peer_key = unpack('H*', join '', map { chr int rand 256 } 1 .. 32);

my $hosts = VetoHosts->new(qw(a b));
my $s = VetoSentinel->new(addr => $hosts->gateway);
my %gw = VetoHosts::gateways(
    names => [qw(a b)], sentinel => $s, policy => $policy, net => $hosts,
    address => 1, routing => 1, peer_key => $peer_key, read_timeout => '60s',
    extra => "    veto_sandbox_host_lease 2s;\n", check => 1);
my ($A, $B) = @gw{qw(a b)};
hosts_ready($s, %gw);
sub M { $s->live_master }

my $t = $A->token(sub => 'agent-1');
my ($st, $h, $b, $j);

sub code { return (($_[0] // {})->{type} // '') =~ s/^urn:veto-sandbox:problem://r }

($st, undef, $b, $j) = $A->request(POST => '/v1/sandboxes', $t, {});
is($st, 201, 'a sandbox, made on a') or diag $b;
my $sb = $j->{id};
eventually('owned by a', 5, sub {
    (M()->hget("veto:{acme}:sbx:own:$sb", 'gateway') // '') eq 'gw-a' });
($st, undef, $b, $j) = $B->request(POST => "/v1/sandboxes/$sb/exec", $t,
    { argv => ['sh', '-c', 'echo base > /workspace/base.txt'] });
is($st, 200, 'an exec through b') or diag $b;

# the snapshot asked of b: routed to a, where its sandbox is
($st, undef, $b, $j) = $B->request(POST => "/v1/sandboxes/$sb/snapshots", $t,
                                   { ttl_s => 120 });
is($st, 201, 'a snapshot asked of b') or diag $b;
my $snap = $j->{id} // '';
like($snap, qr/^snap-/, "snapshot $snap");
my $rkey = "veto:{acme}:snap:route:$snap";
eventually('its routing record names a', 5, sub {
    (M()->hget($rkey, 'gateway') // '') eq 'gw-a' });
is(M()->hget($rkey, 'agent'), 'agent-1', '... and its agent');
my $ttl = M()->ttl($rkey);
ok($ttl > 0 && abs(time + $ttl - $j->{expires_at}) <= 2,
   "... kept until the snapshot's expiry (ttl $ttl s)");
($st) = $A->request(GET => "/v1/snapshots/$snap", $t);
is($st, 200, 'a holds it');
($st, undef, $b, $j) = $B->request(GET => "/v1/snapshots/$snap", $t);
is($st, 200, "b's get: routed to a, 200") or diag $b;
is($j->{id}, $snap, '... the snapshot');
($st, undef, $b, $j) = $B->request(GET => '/v1/snapshots', $t);
is(scalar @{ $j->{snapshots} // [] }, 0, "b's list: its own host's, none");

# another agent's: not found through either host, never routed for it
my $t2 = $A->token(sub => 'agent-2');
($st, undef, $b, $j) = $B->request(POST => '/v1/sandboxes', $t2,
                                   { from_snapshot => $snap });
is($st, 404, "another agent's fork through b: 404") or diag $b;
is(code($j), 'snapshot_not_found', 'snapshot_not_found');
($st, undef, $b, $j) = $A->request(GET => "/v1/snapshots/$snap", $t2);
is($st, 404, "another agent's get through a: 404");

# a fork asked of b: routed to a, made there, reachable through b
($st, undef, $b, $j) = $B->request(POST => '/v1/sandboxes', $t,
                                   { from_snapshot => $snap });
is($st, 201, 'a fork asked of b: 201') or diag $b;
my $fork = $j->{id};
my $fork_until = $j->{expires_at} // 0;
eventually('the fork is owned by a', 5, sub {
    (M()->hget("veto:{acme}:sbx:own:$fork", 'gateway') // '') eq 'gw-a' });
eventually("the fork holds its quota slot (counted once, through b)", 5, sub {
    defined M()->zscore('veto:{acme}:sbx:live', $fork) });
is(M()->zcard('veto:{acme}:sbx:live:agent-1'), 2,
   '... two sandboxes counted: the first and the fork');
# the helper keeps a snapshot while a fork of it lives: so is its record
ok($fork_until > time + 120, "the fork outlives the snapshot's ttl_s");
$ttl = M()->ttl($rkey);
ok(abs(time + $ttl - $fork_until) <= 2,
   "the routing record now lasts as long as the fork (ttl $ttl s)");
($st, undef, $b, $j) = $A->request(POST => "/v1/sandboxes/$fork/exec", $t,
    { argv => ['cat', '/workspace/base.txt'] });
is($st, 200, "the fork's exec through a") or diag $b;
is($j->{stdout}, "base\n", "... sees the snapshot's files");
($st, undef, $b, $j) = $B->request(POST => "/v1/sandboxes/$fork/exec", $t,
    { argv => ['sh', '-c', 'echo fork > /workspace/base.txt; cat /workspace/base.txt'] });
is($st, 200, "the fork's exec through b") or diag $b;
is($j->{stdout}, "fork\n", '... writes its own layer');
# the fork's lifetime lengthened (through b): the record follows it
($st, undef, $b, $j) = $B->request(PATCH => "/v1/sandboxes/$fork", $t,
                                   { ttl_s => 3000 });
is($st, 200, "the fork's ttl_s lengthened through b") or diag $b;
ok(($j->{expires_at} // 0) > $fork_until, '... it expires later') or diag $b;
$fork_until = $j->{expires_at} // 0;
eventually('... and so does the routing record', 5, sub {
    my $ttl = M()->ttl($rkey);
    abs(time + $ttl - $fork_until) <= 2 });

# deletes through b: the fork (routed), the snapshot (routed, with its
# routing record)
($st) = $B->request(DELETE => "/v1/sandboxes/$fork", $t);
is($st, 200, 'the fork deleted through b');
($st, undef, $b, $j) = $B->request(DELETE => "/v1/snapshots/$snap", $t);
is($st, 200, 'b deletes it (routed to a)') or diag $b;
is($j->{confirmed}{files}, JSON::PP::true, 'its files confirmed gone');
eventually('its routing record is gone', 5, sub { !M()->exists($rkey) });
($st, undef, $b, $j) = $A->request(GET => "/v1/snapshots/$snap", $t);
is($st, 404, 'a no longer has it');
is(code($j), 'snapshot_not_found', 'snapshot_not_found');

# the holder down: a clear 503 naming it, never b's own 404
($st, undef, $b, $j) = $B->request(POST => "/v1/sandboxes/$sb/snapshots", $t);
is($st, 201, 'another snapshot, asked of b') or diag $b;
my $snap2 = $j->{id} // '';
eventually('its routing record names a', 5, sub {
    (M()->hget("veto:{acme}:snap:route:$snap2", 'gateway') // '') eq 'gw-a' });
$A->stop;
eventually("a's lease runs out", 10, sub {
    !M()->exists('veto:{:hosts}:lease:gw-a') });
($st, undef, $b, $j) = $B->request(POST => '/v1/sandboxes', $t,
                                   { from_snapshot => $snap2 });
is($st, 503, 'a fork through b, a down: 503') or diag $b;
is(code($j), 'snapshot_host_unavailable', 'snapshot_host_unavailable');
is($j->{host}, 'gw-a', '... naming host a');
($st, undef, $b, $j) = $B->request(GET => "/v1/snapshots/$snap2", $t);
is($st, 503, 'its get through b: 503') or diag $b;
is(code($j), 'snapshot_host_unavailable', 'snapshot_host_unavailable');
is(M()->zcard('veto:{acme}:sbx:live:agent-1'), 1,
   'the refused fork holds no quota slot (only the first sandbox, on a)');

done_testing;
