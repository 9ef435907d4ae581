#!/usr/bin/perl
# Snapshots with several gateway hosts (routing on): a snapshot asked of
# any host is made on the host that holds its sandbox (the row names
# {id}, so it is routed there) and stays there; a fork is always made on
# the host that receives it, never placed on another: asked of the host
# holding the snapshot it works (and is then reachable through any host,
# as any sandbox), asked of another it is 404 snapshot_not_found, as are
# that host's get and delete of the snapshot (docs/api.md, "Several
# hosts").

use strict;
use warnings;

use Test::More;
use lib 't/lib';
use VetoNginx;
use VetoSentinel;
use VetoHosts qw(up);
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
    check => 1);
my ($A, $B) = @gw{qw(a b)};
eventually('both hosts found the master', 15, sub { up($A) && up($B) });
sub M { $s->live_master }
eventually('both hosts hold a lease', 10, sub {
    M()->exists('veto:{:hosts}:lease:gw-a')
        && M()->exists('veto:{:hosts}:lease:gw-b') });

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
($st, undef, $b, $j) = $B->request(POST => "/v1/sandboxes/$sb/snapshots", $t);
is($st, 201, 'a snapshot asked of b') or diag $b;
my $snap = $j->{id} // '';
like($snap, qr/^snap-/, "snapshot $snap");
($st) = $A->request(GET => "/v1/snapshots/$snap", $t);
is($st, 200, 'a holds it');
($st, undef, $b, $j) = $B->request(GET => "/v1/snapshots/$snap", $t);
is($st, 404, 'b does not: 404');
is(code($j), 'snapshot_not_found', 'snapshot_not_found');
($st, undef, $b, $j) = $B->request(GET => '/v1/snapshots', $t);
is(scalar @{ $j->{snapshots} // [] }, 0, "b's list: its own host's, none");

# a fork asked of b: made on b, whose helper has no such snapshot
($st, undef, $b, $j) = $B->request(POST => '/v1/sandboxes', $t,
                                   { from_snapshot => $snap });
is($st, 404, 'a fork asked of b: 404') or diag $b;
is(code($j), 'snapshot_not_found', 'snapshot_not_found');
is($j->{field}, 'from_snapshot', 'naming from_snapshot');

# asked of a: made on a, then reachable through b as any sandbox
($st, undef, $b, $j) = $A->request(POST => '/v1/sandboxes', $t,
                                   { from_snapshot => $snap });
is($st, 201, 'a fork asked of a: 201') or diag $b;
my $fork = $j->{id};
eventually('the fork is owned by a', 5, sub {
    (M()->hget("veto:{acme}:sbx:own:$fork", 'gateway') // '') eq 'gw-a' });
($st, undef, $b, $j) = $B->request(POST => "/v1/sandboxes/$fork/exec", $t,
    { argv => ['cat', '/workspace/base.txt'] });
is($st, 200, "the fork's exec through b") or diag $b;
is($j->{stdout}, "base\n", "... sees the snapshot's files");

# deletes: the fork through b (routed), the snapshot of a
($st) = $B->request(DELETE => "/v1/sandboxes/$fork", $t);
is($st, 200, 'the fork deleted through b');
($st, undef, $b) = $B->request(DELETE => "/v1/snapshots/$snap", $t);
is($st, 404, "b cannot delete a's snapshot: 404");
($st, undef, $b, $j) = $A->request(DELETE => "/v1/snapshots/$snap", $t);
is($st, 200, 'a deletes it') or diag $b;
is($j->{confirmed}{files}, JSON::PP::true, 'its files confirmed gone');
$A->request(DELETE => "/v1/sandboxes/$sb", $t);

done_testing;
