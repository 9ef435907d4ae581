#!/usr/bin/perl
# 20 concurrent uses of one approval through nginx (two workers, one
# Redis): exactly one runs, the others are refused as consumed.

use strict;
use warnings;

use Test::More;
use lib 't/lib';
use VetoNginx;
use Eventually qw(eventually);
use HTTP::Tiny;
use POSIX ();

VetoNginx::need(qw(helper redis));

my $N = 20;
my $policy = {
    version => 1,
    tenants => {
        acme => { ceilings => { memory_mb => 512, timeout_s => 30 },
                  approvals => { always => ['sandbox.exec'] } },
    },
};

my $n = VetoNginx->new;
$n->start_redis;
$n->start_helper;
$n->start(redis => 1, workers => 2, policy => $policy);

my $agent = $n->token(sub => 'agent-1');
my $rev = $n->token(sub => 'human-1', scope => 'approvals:review');

my ($st, $h, $b, $j);
eventually('a create succeeds (Redis connected)', 10, sub {
    ($st, $h, $b, $j) = $n->request(POST => '/v1/sandboxes', $agent, { ttl_s => 300 });
    $st == 201;
});
is($st, 201, 'create') or diag $b;
my $sb = $j->{id};

my $exec = { argv => ['echo', 'once'] };
($st, $h, $b, $j) = $n->request(POST => "/v1/sandboxes/$sb/exec", $agent, $exec);
is($st, 202, 'exec needs approval: 202') or diag $b;
my $id = $j->{approval_id};
($st) = $n->request(POST => "/v1/approvals/$id/approve", $rev, '');
is($st, 200, 'approved');

my $body = $VetoNginx::JSON->encode($exec);
pipe(my $go_r, my $go_w) or die "pipe: $!";
my @kids;
for my $i (1 .. $N) {
    pipe(my $res_r, my $res_w) or die "pipe: $!";
    my $pid = fork() // die "fork: $!";
    if ($pid == 0) {
        close $go_w;
        close $res_r;
        sysread($go_r, my $x, 1);            # wait for the start
        my $res = HTTP::Tiny->new(timeout => 30)->request(POST =>
            $n->url("/v1/sandboxes/$sb/exec"),
            { headers => { Authorization => "Bearer $agent",
                           'Content-Type' => 'application/json',
                           'Veto-Approval' => $id },
              content => $body });
        my $type = $res->{content} =~ /"type":"([^"]+)"/ ? $1 : '-';
        print {$res_w} "$res->{status} $type\n";
        close $res_w;
        POSIX::_exit(0);
    }
    close $res_w;
    push @kids, [$pid, $res_r];
}
close $go_r;
select(undef, undef, undef, 0.2);    # on purpose: all wait at the gate
close $go_w;

my %count;
for my $k (@kids) {
    my $fh = $k->[1];
    my $line = <$fh> // 'none';
    chomp $line;
    $count{$line}++;
    waitpid $k->[0], 0;
}

my $ok = $count{'200 -'} // 0;
is($ok, 1, 'exactly one of 20 concurrent uses ran') or diag explain \%count;
is($count{'403 urn:veto-sandbox:problem:approval_used'} // 0, $N - 1,
   'the others: consumed') or diag explain \%count;

my $r = $n->redis;
my $runs;
eventually('the exec is on record', 5, sub {
    $runs = grep { my %f = @{ $_->[1] }; ($f{outcome} // '') eq 'exec_finished' }
            @{ $r->xrange('veto:{acme}:audit', '-', '+') };
    $runs >= 1;
});
is($runs, 1, 'one exec on record');

done_testing;
