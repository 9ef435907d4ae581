#!/usr/bin/perl
# The cost of the hop between gateway hosts, measured in one run: the
# same exec ("true") of a sandbox held by host a, asked N times through a
# (the owner, the baseline) and N times through b (which decides it and
# proxies it to a over a keepalive connection), interleaved so that both
# see the same machine.  Prints medians, p90s and the ratio b/a; a number
# never fails the run, only a benchmark that cannot run does.
#
#   sudo scripts/bench-hop.pl [N]      (default 300; needs the module and
#                                       the helper built, redis-server and
#                                       redis-sentinel: the test set-up)

use strict;
use warnings;

use FindBin;
use lib "$FindBin::Bin/../t/lib";
use Test::More ();         # VetoNginx reports through it
use VetoNginx;
use VetoSentinel;
use VetoHosts qw(up);
use Eventually qw(eventually);
use Time::HiRes qw(time sleep);

my $N = shift // 300;
chdir "$FindBin::Bin/..";

VetoNginx::need(qw(helper redis));

my $policy = VetoHosts::acme_policy();
my $s = VetoSentinel->new(addr => '127.0.0.1');
my %gw = VetoHosts::gateways(names => [qw(a b)], sentinel => $s,
                             sentinel_conf => { wait => '' },
                             policy => $policy, address => 1, routing => 1,
                             cgroup => 'veto-bench');
my ($A, $B) = @gw{qw(a b)};
eventually('both hosts found the master', 15, sub { up($A) && up($B) })
    or die "the hosts found no master\n";
my $tok = $A->token(sub => 'bench');
my ($st, $h, $body, $j) = $A->request(POST => "/v1/sandboxes", $tok, {});
die "create: $st $body\n" unless $st == 201;
my $sb = $j->{id};
sleep 0.5;      # the ownership record is written after the 201

my (@ta, @tb);
for my $k (1 .. $N + 10) {
    for my $pair ([$A, \@ta], [$B, \@tb]) {
        my ($n, $acc) = @$pair;
        my $t0 = time;
        ($st, $h, $body) = $n->request(POST => "/v1/sandboxes/$sb/exec", $tok,
                                    { argv => ['true'] });
        my $dt = time - $t0;
        die "exec through " . ($n == $A ? 'a' : 'b') . ": $st $body\n"
            unless $st == 200;
        push @$acc, $dt if $k > 10;     # 10 rounds of warm-up
    }
}
$A->request(DELETE => "/v1/sandboxes/$sb", $tok);

sub pct { my ($p, @v) = @_; @v = sort { $::a <=> $::b } @v; $v[int($p * $#v)] }
my ($ma, $mb) = (pct(0.5, @ta), pct(0.5, @tb));
printf "exec \"true\", %d each, interleaved\n", $N;
printf "  through the owner (a):     median %.2f ms  p90 %.2f ms\n",
       $ma * 1000, pct(0.9, @ta) * 1000;
printf "  through a non-owner (b):   median %.2f ms  p90 %.2f ms\n",
       $mb * 1000, pct(0.9, @tb) * 1000;
printf "  ratio b/a (median):        %.2f  (the hop adds %.2f ms)\n",
       $mb / $ma, ($mb - $ma) * 1000;
$_->stop for $A, $B;
$s->stop;
