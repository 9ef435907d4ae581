#!/usr/bin/perl
# A GET right after a DELETE that answered 200 answers the end, every
# time: state "ended", end_reason "deleted", never 404 and never live.
# The helper puts the ENDED record on file before it answers the destroy
# (destroy.c), and with one gateway host a GET goes to that helper
# whatever Redis holds (the ownership record the DELETE and the ENDED
# poll free is read only with several hosts), so this holds with two
# nginx workers (the GET may reach the other one, on a new connection or
# the DELETE's kept one), the gateway polling the helper's ENDED records
# every 100 ms, and execs, files and another agent's requests in
# between.  (The packages VM once saw 404 here: a build from before
# ENDED records existed, when 404 was the answer.  With several hosts,
# see docs/operations.md, "Several gateway hosts", ended sandboxes.)

use strict;
use warnings;

use Test::More;
use lib 't/lib';
use VetoNginx;
use VetoTest;
use Eventually qw(eventually);
use JSON::PP;
use Time::HiRes qw(time sleep);
use HTTP::Tiny;

VetoNginx::need(qw(helper redis));

my $ROUNDS = 60;

my $policy = {
    version => 1,
    tenants => {
        acme => { quotas => { concurrent_sandboxes => 50 } },
    },
};

my $n = VetoNginx->new;
$n->start_redis;
my $hh = $n->start_helper;
my $pidlog = $n->dir . '/logs/pid.log';
$n->start(redis => 1, policy => $policy, workers => 2,
          http_extra => "veto_sandbox_ended_poll 100ms;\n"
                        . "log_format bypid '\$pid \$request_method \$uri';\n"
                        . "access_log $pidlog bypid;");

my $agent = $n->token(sub => 'agent-1');
my $other = $n->token(sub => 'agent-2');
my $JS = JSON::PP->new->utf8;

my ($st, $h, $b, $j);
eventually('the gateway serves (Redis connected)', 10, sub {
    ($st) = $n->request(GET => '/v1/sandboxes', $agent);
    $st == 200;
});
is($st, 200, 'the gateway answers');

# a kept client connection: the GET on the connection the DELETE used
my $kept = HTTP::Tiny->new(timeout => 60, keep_alive => 1);

sub kept_request
{
    my ($method, $path, $token, $body) = @_;
    my %hd = (Authorization => "Bearer $token");
    my %o = (headers => \%hd);
    if (defined $body) {
        $hd{'Content-Type'} = 'application/json';
        $o{content} = $JS->encode($body);
    }
    my $res = $kept->request($method, $n->url($path), \%o);
    my $js = eval { $JS->decode($res->{content}) };
    return ($res->{status}, $res->{headers}, $res->{content}, $js);
}

my (%bad, @ids);

for my $i (1 .. $ROUNDS) {
    ($st, $h, $b, $j) = $n->request(POST => '/v1/sandboxes', $agent, {});
    if ($st != 201) {
        $bad{"create $st"}++;
        diag $b;
        next;
    }
    my $id = $j->{id};
    push @ids, $id;

    # something for the delete to end: an exec or a file, now and then
    if ($i % 3 == 0) {
        $n->request(POST => "/v1/sandboxes/$id/exec", $agent,
                    { argv => ['true'] });
    } elsif ($i % 3 == 1) {
        $n->request(PUT => "/v1/sandboxes/$id/files?path=a.txt", $agent, "a\n");
    }

    # another agent's traffic on the same helper meanwhile
    $n->request(GET => '/v1/sandboxes', $other);

    my $keep = $i % 2;
    my @del = $keep ? kept_request(DELETE => "/v1/sandboxes/$id", $agent)
                    : $n->request(DELETE => "/v1/sandboxes/$id", $agent);
    if ($del[0] != 200) {
        $bad{"delete $del[0]"}++;
        diag $del[2];
        next;
    }

    # at once, twice: by the kept connection or a new one (either worker)
    for my $k (1 .. 2) {
        my @g = ($keep && $k == 1)
            ? kept_request(GET => "/v1/sandboxes/$id", $agent)
            : $n->request(GET => "/v1/sandboxes/$id", $agent);
        my $got = "$g[0] " . (($g[3] && $g[3]{state}) // '-') . ' '
                . (($g[3] && $g[3]{end_reason}) // '-');
        if ($got ne '200 ended deleted') {
            $bad{$got}++;
            diag "round $i, GET $k after DELETE: $got: $g[2]";
        }
    }
}

is(scalar(@ids), $ROUNDS, "$ROUNDS sandboxes created");
is_deeply(\%bad, {}, "every GET right after a DELETE answered 200 ended "
          . "deleted ($ROUNDS rounds, 2 GETs each, two workers)");

# both workers served: the GETs did not all go to one
my %pids_seen;
if (open(my $fh, '<', $pidlog)) {
    while (<$fh>) {
        $pids_seen{$1}++ if m{^(\d+) GET /v1/sandboxes/sb-};
    }
}
ok(keys(%pids_seen) >= 2, 'both nginx workers answered GETs ('
   . join(', ', map { "$_: $pids_seen{$_}" } sort keys %pids_seen) . ')');

# the gateway learned of each end (its poll): the slots are free
my $r = $n->redis;
my $live;
eventually('the quota slots are free', 10, sub {
    $live = grep { defined $r->zscore('veto:{acme}:sbx:live', $_) } @ids;
    $live == 0;
});
is($live, 0, 'no quota slot left for the deleted sandboxes');

done_testing;
