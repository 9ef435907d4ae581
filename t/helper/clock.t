# The test clock: with "test_clock = on" the clock_advance op moves the
# lifetime clock only (what idle_s, ttl_s and ended_retention_s count on,
# and the times reported for them), and an exec's timeout does not move
# (a 2 s exec with timeout_s 5 runs to its end across a 100 s advance).
# Off (the default) the op answers not_enabled and nothing moves; bad
# values are refused by name, within a ceiling per call and in all; the
# helper warns at start when the clock is on.
use strict;
use warnings;
use Test::More;
use Time::HiRes qw(time);
use JSON::PP;
use lib 't/lib';
use VetoTest;

my $ADVANCE_MAX = 31 * 24 * 3600;         # VSB_CLOCK_ADVANCE_MAX_S
my $OFFSET_MAX = 10 * 366 * 24 * 3600;    # VSB_CLOCK_OFFSET_MAX_S

sub advance
{
    my ($h, %a) = @_;
    my ($r) = $h->call({ op => 'clock_advance', %a });
    return $r;
}

sub status
{
    my ($h, $id) = @_;
    my ($r) = $h->call({ op => 'status', tenant => 't1', agent => 'a1',
                         id => $id });
    return $r->{sandbox};
}

# --- off (the default): not_enabled, and nothing moves ------------------
my $h = VetoTest->start(max_ttl_s => 600, max_idle_s => 300,
                        default_idle_s => 120);
unlike($h->log_text, qr/test_clock/, 'off: no test clock warning at start');
my $id = $h->create_ok(ttl_s => 60, idle_s => 30);
my $before = status($h, $id);
my $r = advance($h, seconds => 100, request_id => 'c1');
is($r->{error}, 'not_enabled', 'off: clock_advance is not_enabled')
    or diag explain $r;
is($r->{request_id}, 'c1', '... echoing request_id');
like($r->{detail} // '', qr/test_clock = on/, '... the detail names the key');
my $after = status($h, $id);
is($after->{state}, 'ready', '... the sandbox lives on');
is($after->{expires_at}, $before->{expires_at}, '... expires_at unchanged');
ok(abs($after->{active_at} - time) <= 2,
   '... active_at is the real time') or diag explain $after;
my $id2 = $h->create_ok;
ok(abs(status($h, $id2)->{created_at} - time) <= 2,
   '... a new sandbox is created at the real time');
$r = advance($h, seconds => 0);
is($r->{error}, 'bad_value', 'off: the schema is checked first');
is($h->stop, 0, 'helper exits 0');
$h->leaks_ok('off');

# --- on ------------------------------------------------------------------
my $hc = VetoTest->start(test_clock => 'on', max_ttl_s => 600,
                     max_idle_s => 300, default_idle_s => 120);
like($hc->log_text, qr/test_clock is on.*never in production/,
     'on: the helper warns at start');

# bad values, by name; none moves the clock
for my $c ([ 'no seconds', {}, 'missing_field' ],
           [ 'seconds 0', { seconds => 0 }, 'bad_value' ],
           [ 'negative', { seconds => -5 }, 'bad_value' ],
           [ 'a string', { seconds => '5' }, 'bad_type' ],
           [ 'a fraction', { seconds => 1.5 }, 'bad_type' ],
           [ 'null', { seconds => undef }, 'bad_type' ],
           [ 'true', { seconds => JSON::PP::true }, 'bad_type' ],
           [ 'past the ceiling', { seconds => $ADVANCE_MAX + 1 },
             'bad_value' ],
           [ 'far past it', { seconds => 9223372036854775807 }, 'bad_value' ])
{
    my ($what, $a, $err) = @$c;
    $r = advance($hc, %$a);
    is($r->{error}, $err, "$what: $err") or diag explain $r;
    is($r->{field}, 'seconds', '... field seconds');
}
$r = advance($hc, seconds => 5, until => 9);
is($r->{error}, 'unknown_field', 'an unknown field: unknown_field');
is($r->{field}, 'until', '... naming it');
($r) = $hc->call({ op => 'clock_advance', seconds => 5 }, 'payload');
is($r->{error}, 'bad_value', 'a payload: bad_value') or diag explain $r;
like($r->{detail} // '', qr/takes no payload/, '... takes no payload');

# an exec's timeout is real time: the advance does not reach it
$id = $hc->create_ok(ttl_s => 600, idle_s => 300);
my $created = status($hc, $id)->{created_at};
ok(abs($created - time) <= 2, 'before any advance: the real time');
my $s = $hc->connect;
my $t0 = time;
VetoTest::write_all($s, VetoTest::frame({ op => 'exec', tenant => 't1',
    agent => 'a1', id => $id, argv => ['sleep', '2'], timeout_s => 5 }));
$r = advance($hc, seconds => 100, request_id => 'c2');
ok($r->{ok}, 'clock_advance 100 s while the exec runs') or diag explain $r;
is($r->{request_id}, 'c2', '... echoing request_id');
is($r->{advanced_s}, 100, '... advanced_s');
is($r->{offset_s}, 100, '... offset_s: 100 in all');
ok(abs($r->{now} - (time + 100)) <= 2, '... now: 100 s ahead')
    or diag explain $r;
my ($x) = VetoTest::recv_frame($s, 30);
my $took = time - $t0;
ok($x && $x->{ok}, 'the exec answers') or diag explain $x;
is($x->{exit_code}, 0, '... sleep 2 ran to its end: exit 0');
ok(!$x->{timed_out}, '... not timed out');
ok($x->{usage}{wall_ms} >= 1900, "... after $x->{usage}{wall_ms} ms");
ok($took >= 1.9 && $took < 5, sprintf('... %.1f s of real time', $took));

# the lifetime clock is what lifetimes report; the sandbox lives on
my $st = status($hc, $id);
is($st->{state}, 'ready', '100 s inside its idle_s 300 and ttl_s 600: ready');
is($st->{created_at}, $created, 'created_at does not move');
ok($st->{active_at} >= $created + 100, 'active_at is on the lifetime clock')
    or diag explain $st;
my $idn = $hc->create_ok;
ok(abs(status($hc, $idn)->{created_at} - (time + 100)) <= 2,
   'a sandbox created now: created_at 100 s ahead');

# bounded in all: the offset stops at its ceiling, and says so
my ($n, $last) = (0, $r);
while ($n++ < 200) {
    $r = advance($hc, seconds => $ADVANCE_MAX);
    last unless $r->{ok};
    $last = $r;
}
is($r->{error}, 'bad_value', 'past the ceiling in all: bad_value')
    or diag explain $r;
like($r->{detail} // '', qr/ahead already/, '... saying how far ahead');
ok($last->{offset_s} <= $OFFSET_MAX, "... at $last->{offset_s} s in all");
ok($last->{offset_s} + $ADVANCE_MAX > $OFFSET_MAX, '... just short of it');
$r = advance($hc, seconds => 1);
is($r->{offset_s}, $last->{offset_s} + 1, 'a smaller step still fits')
    or diag explain $r;

is($hc->stop, 0, 'helper exits 0');
$hc->leaks_ok('on');

done_testing;
