#!/usr/bin/perl
# A snapshot's routing record (lua/snap_route.lua of the module): it names
# the host and the agent, expires when asked, and a later expiry (a fork
# made of the snapshot) pushes it later while an earlier one never brings
# it forward; an expiry that is not a positive number is refused, naming
# the script, and writes nothing.

use strict;
use warnings;

use FindBin;
use lib "$FindBin::Bin/../../lib";
use Test::More;
use VetoRedisTest qw(redis_conn run_script);

my $r = redis_conn();
my $key = 'veto:{sr}:snap:route:snap-000000000000000000000001';
$r->del($key);
my $now = time;

sub keep {
    my ($at, $gw) = @_;
    return run_script($r, 'snap_route', [$key], ['agent-1', $gw // 'gw-a', $at]);
}

is(keep($now + 100), 1, 'kept');
is_deeply({ @{ $r->hgetall($key) } }, { agent => 'agent-1', gateway => 'gw-a' },
          'naming the agent and the host');
my $ttl = $r->ttl($key);
ok($ttl > 95 && $ttl <= 100, "expiring when asked ($ttl s)");

keep($now + 1000);
$ttl = $r->ttl($key);
ok($ttl > 995 && $ttl <= 1000, "a later expiry pushes it later ($ttl s)");

keep($now + 50);
$ttl = $r->ttl($key);
ok($ttl > 995, "an earlier one does not bring it forward ($ttl s)");

$r->del($key);
for my $bad ('0', '-5', 'soon') {
    my $res = eval { keep($bad) };
    like($@, qr/veto snap_route: expires_at/, "expires_at '$bad' refused");
}
ok(!$r->exists($key), '... and nothing written');

done_testing;
