#!/usr/bin/perl
# Audit stream: bounded XADD as the module writes it, and the audit_query
# script (ngx_http_veto_sandbox_audit.c) behind GET /v1/audit.

use strict;
use warnings;

use FindBin;
use lib "$FindBin::Bin/lib";
use Test::More;
use Time::HiRes qw(sleep time);
use VetoRedisTest qw(redis_conn run_script);

my $r = redis_conn();
my $K = 'veto:{acme}:audit';

# the module's XADD: MAXLEN ~ bound, '*' id, field pairs
sub add {
    my (%f) = @_;
    return $r->xadd($K, 'MAXLEN', '~', 1000, '*', 'time', 'x', %f);
}

my @ids;
for my $i (1 .. 30) {
    push @ids, add(agent => 'agent-' . ($i % 3), sandbox => 'sbx-' . ($i % 2),
                   action => 'sandbox.exec', outcome => 'allowed');
}

sub query {
    my ($hi, $lo, $n, $agent, $sbx, $budget) = @_;
    return run_script($r, 'audit_query', [$K],
                      [$hi // '+', $lo // '-', $n // 100, $agent // '', $sbx // '',
                       $budget // 10000]);
}

my $all = query();
is(scalar @$all, 30, 'all entries');
is($all->[0][0], $ids[-1], 'newest first');
my %f = @{ $all->[0][1] };
is($f{agent}, 'agent-0', 'fields come back as pairs');

my $a1 = query(undef, undef, 100, 'agent-1');
is(scalar @$a1, 10, 'filter by agent');
ok(!grep({ my %e = @{ $_->[1] }; $e{agent} ne 'agent-1' } @$a1), 'only that agent');

my $both = query(undef, undef, 100, 'agent-1', 'sbx-1');
is(scalar @$both, 5, 'filter by agent and sandbox');

is(scalar @{ query(undef, undef, 4) }, 4, 'limit');
is(scalar @{ query(undef, undef, 100, 'agent-1', '', 6) }, 2,
   'scan budget bounds the work of a filtered query');

# time range: ids are <ms>-<seq>
my ($ms_lo) = $ids[9] =~ /^(\d+)-/;
my ($ms_hi) = $ids[19] =~ /^(\d+)-/;
my $range = query($ids[19], $ids[10]);
is(scalar @$range, 10, 'id range');
my $by_ms = query($ms_hi, $ms_lo);
ok(scalar @$by_ms >= 10, 'millisecond range includes the whole ms');

is_deeply(query(undef, undef, 100, 'nobody'), [], 'no match: empty');
is_deeply(run_script($r, 'audit_query', ['veto:{other}:audit'], ['+', '-', 100, '', '', 100]),
          [], 'another tenant has its own stream');

# batches: more entries than one XREVRANGE batch (200)
for my $i (1 .. 450) { add(agent => ($i == 1 ? 'rare' : 'common'), sandbox => 's') }
my $rare = query(undef, undef, 100, 'rare');
is(scalar @$rare, 1, 'filtered scan crosses batch boundaries');

# MAXLEN ~ keeps the stream bounded
for my $i (1 .. 3000) {
    $r->xadd('veto:{bound}:audit', 'MAXLEN', '~', 1000, '*', 'n', $i);
}
my $len = $r->xlen('veto:{bound}:audit');
ok($len >= 1000 && $len < 1300, "stream bounded near MAXLEN ($len)");

done_testing();
