#!/usr/bin/perl
# Audit stream: the append script the module ships (bounded in entries and
# in bytes, per tenant) and the audit_query script behind GET /v1/audit
# (filters, pages with a next cursor, a byte budget per page), both read
# from ngx_veto_sandbox_module/lua/ (after its prelude.lua).

use strict;
use warnings;

use FindBin;
use lib "$FindBin::Bin/../../lib";
use Test::More;
use Time::HiRes qw(sleep time);
use VetoRedisTest qw(redis_conn run_script);

my $r = redis_conn();
my $K = 'veto:{acme}:audit';

# the module's append: byte budget, entry bound, field pairs
sub append {
    my ($key, $bytes, $maxlen, %f) = @_;
    return run_script($r, 'audit_append', [$key, "$key:bytes"],
                      [$bytes, $maxlen, 'time', 'x', %f]);
}

sub add {
    my (%f) = @_;
    return append($K, 64 * 1024 * 1024, 1000, %f);
}

my @ids;
for my $i (1 .. 30) {
    push @ids, add(agent => 'agent-' . ($i % 3), sandbox => 'sbx-' . ($i % 2),
                   action => 'sandbox.exec', outcome => 'allowed');
}
like($ids[0], qr/^\d+-\d+$/, 'append answers the entry id');

# entries and the next cursor
sub query {
    my ($hi, $lo, $n, $agent, $sbx, $budget, $bytes) = @_;
    return run_script($r, 'audit_query', [$K],
                      [$hi // '+', $lo // '-', $n // 100, $agent // '', $sbx // '',
                       $budget // 10000, $bytes // 524288]);
}

my ($all, $next) = @{ query() };
is(scalar @$all, 30, 'all entries');
is($next, '', 'nothing more: no cursor');
is($all->[0][0], $ids[-1], 'newest first');
my %f = @{ $all->[0][1] };
is($f{agent}, 'agent-0', 'fields come back as pairs');

my ($a1) = @{ query(undef, undef, 100, 'agent-1') };
is(scalar @$a1, 10, 'filter by agent');
ok(!grep({ my %e = @{ $_->[1] }; $e{agent} ne 'agent-1' } @$a1), 'only that agent');

my ($both) = @{ query(undef, undef, 100, 'agent-1', 'sbx-1') };
is(scalar @$both, 5, 'filter by agent and sandbox');

# pages: limit 4, then on from the cursor, each entry once
my (@seen, $page);
my $hi = '+';
for (1 .. 20) {
    ($page, $next) = @{ query($hi, undef, 7) };
    push @seen, map { $_->[0] } @$page;
    last if $next eq '';
    $hi = "($next";
}
is(scalar @seen, 30, 'pages of 7 cover the 30 entries');
is_deeply([reverse @seen], \@ids, 'in order, each once');

my ($few, $n2) = @{ query(undef, undef, 100, 'agent-1', '', 6) };
is(scalar @$few, 2, 'scan budget bounds the work of a filtered query');
ok($n2 ne '', '... and says where to go on');
my ($rest) = @{ query("($n2", undef, 100, 'agent-1') };
is(scalar(@$few) + scalar(@$rest), 10, 'the rest of the filtered query from the cursor');

# time range: ids are <ms>-<seq>
my ($ms_lo) = $ids[9] =~ /^(\d+)-/;
my ($ms_hi) = $ids[19] =~ /^(\d+)-/;
my ($range) = @{ query($ids[19], $ids[10]) };
is(scalar @$range, 10, 'id range');
my ($by_ms) = @{ query($ms_hi, $ms_lo) };
ok(scalar @$by_ms >= 10, 'millisecond range includes the whole ms');

is_deeply(query(undef, undef, 100, 'nobody'), [[], ''], 'no match: empty');
is_deeply(run_script($r, 'audit_query', ['veto:{other}:audit'],
                     ['+', '-', 100, '', '', 100, 524288]),
          [[], ''], 'another tenant has its own stream');

# batches: more entries than one XREVRANGE batch (200)
for my $i (1 .. 450) { add(agent => ($i == 1 ? 'rare' : 'common'), sandbox => 's') }
my ($rare) = @{ query(undef, undef, 100, 'rare') };
is(scalar @$rare, 1, 'filtered scan crosses batch boundaries');

# a page is bounded in bytes as well as in entries
for my $i (1 .. 40) { add(agent => 'big', detail => 'd' x 10000) }
my ($big, $bn) = @{ query(undef, undef, 1000, 'big', '', 10000, 100000) };
ok(@$big >= 9 && @$big <= 11, 'a page stops near its byte budget (' . scalar(@$big) . ')');
ok($bn ne '', 'and gives the cursor of the rest');

# --- the stream is bounded in entries ...
my $B = 'veto:{bound}:audit';
for my $i (1 .. 1500) { append($B, 64 * 1024 * 1024, 1000, n => $i) }
is($r->xlen($B), 1000, 'entries: exactly maxlen kept');
my $first = $r->xrange($B, '-', '+', 'COUNT', 1)->[0][1];
is($first->[3], '501', 'the oldest went first');

# ... and in bytes: each entry here is ~1 KiB of fields
my $C = 'veto:{bytes}:audit';
for my $i (1 .. 600) { append($C, 100 * 1024, 1_000_000, n => $i, pad => 'p' x 1000) }
my $bytes = $r->get("$C:bytes");
ok($bytes <= 100 * 1024, "counted bytes within the budget ($bytes)");
my $len = $r->xlen($C);
ok($len >= 90 && $len <= 102, "about budget / entry size entries kept ($len)");
my $real = 0;
for my $e (@{ $r->xrange($C, '-', '+') }) { $real += length($_) for @{ $e->[1] } }
is($real, $bytes, 'the counter is the bytes of the fields kept');

# a counter that drifted (an operator trimmed the stream) heals
$r->xtrim($C, 'MAXLEN', 0);
append($C, 100 * 1024, 1_000_000, n => 'after', pad => 'p' x 1000);
is($r->xlen($C), 1, 'after an outside trim the new entry stays');
ok($r->get("$C:bytes") < 2000, 'and the count starts again from it');
$r->del($C);
append($C, 100 * 1024, 1_000_000, n => 'fresh');
ok($r->get("$C:bytes") < 100, 'a stream made again starts its count afresh');

my $err = eval { append($C, 0, 10, n => 1); 1 } ? '' : $@;
like($err, qr/bad bounds/, 'bad bounds are an error, not a pass');

done_testing();
