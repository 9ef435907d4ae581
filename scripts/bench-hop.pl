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
use File::Copy qw(copy);
use Time::HiRes qw(time sleep);

my $N = shift // 300;
chdir "$FindBin::Bin/..";

VetoNginx::need(qw(helper redis));

my $policy = { version => 1, tenants => { acme => {
    ceilings => { memory_mb => 512, timeout_s => 30, ttl_s => 3600 } } } };
my $key = unpack('H*', join '', map { chr int rand 256 } 1 .. 32);
my $s = VetoSentinel->new(addr => '127.0.0.1');
my ($first, %gw);
my $probe = 2_000_000_000 + ($$ % 2000) * 16 * 65536;
my $i = 0;
for my $name (qw(a b)) {
    my $n = VetoNginx->new;
    if ($first) {
        for my $f (qw(rsa.key rsa.pub ec.key ec.pub hs.secret jwks.json)) {
            copy($first->dir . "/$f", $n->dir . "/$f") or die "copy $f: $!";
        }
        $n->{secret} = $first->{secret};
    }
    $first //= $n;
    $n->write_policy($policy);
    VetoNginx::spew($n->dir . '/peer.key', "$key\n");
    $n->start_helper(max_sandboxes => 8, cgroup_name => "veto-bench-$$-$name",
                     uid_base => $probe + $i++ * 8 * 65536);
    $n->render(http_extra => $s->nginx_conf(wait => '')
               . "    veto_sandbox_host gw-$name 127.0.0.1:" . $n->port . ";\n"
               . "    veto_sandbox_peer_key peer.key;\n"
               . "    veto_sandbox_peer_pass \@veto_peer;\n"
               . "    upstream veto_sandbox_peers { veto_sandbox_peers; keepalive 8; }\n",
               server_extra => 'location @veto_peer {
            proxy_pass http://veto_sandbox_peers;
            proxy_http_version 1.1;
            proxy_set_header Connection "";
            proxy_set_header Veto-Peer-Credential $veto_peer_credential;
            proxy_buffering off;
        }');
    $n->start(keep_conf => 1);
    $gw{$name} = $n;
}
my ($A, $B) = @gw{qw(a b)};
for my $n ($A, $B) {
    my $deadline = time + 15;
    until (time > $deadline) {
        my (undef, undef, undef, $j) = $n->request(GET => '/v1/health');
        last if ($j->{redis} // '') eq 'up';
        sleep 0.05;
    }
}
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
