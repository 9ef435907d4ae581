# Deadlines: a timed-out exec is killed with its whole tree (setsid and
# double-forked children included), and nothing of a finished exec
# outlives it either.
use strict;
use warnings;
use Test::More;
use Time::HiRes qw(time);
use Digest::SHA ();
use lib 't/lib';
use VetoTest;
use Eventually qw(eventually);

my $h = VetoTest->start;
my $id = $h->create_ok;

# the deadline: the workload must get to its echo before it (3 times
# longer on an emulated CPU, VETO_TIME_SCALE)
my $dl = 2 * VetoTest::time_scale();
my $t0 = time;
my ($e, $out, $err) = $h->sh($id, join("\n",
    'setsid sleep 1000 &',                  # own session
    'setsid -f sleep 1001',                 # forked, own session, parent gone
    '( ( sleep 1002 & ) & )',               # double fork, reparented
    'sh -c "trap \"\" TERM HUP; sleep 1003" &',  # ignores SIGTERM
    'echo started',
    'sleep 1004'), timeout_s => $dl);
my $took = time - $t0;
ok($e->{ok}, 'exec reply') or diag explain $e;
ok($e->{timed_out}, 'timed_out true');
ok(!defined $e->{exit_code}, 'exit_code null after a timeout');
is($out, "started\n", 'output before the deadline kept');
ok($took >= $dl - 0.2 && $took < $dl + 8,
   sprintf('returned after the deadline of %d s (%.1f s)', $dl, $took));
ok(($e->{usage}{wall_ms} // 0) >= ($dl - 0.2) * 1000, 'wall_ms covers the deadline');

# Termination is confirmed before the reply: nothing with our uids left.
my @left = VetoTest::sandbox_uid_procs($h->uid_base, $h->uid_end);
is(scalar @left, 0, 'no sandbox process remains right after the reply')
    or diag join("\n", @left);

# A workload that exits at once but leaves daemons behind.
($e, $out) = $h->sh($id, 'setsid -f sleep 1000; ( ( sleep 1000 & ) & ); '
                       . 'nohup sleep 1000 >/dev/null 2>&1 & echo bye');
is($e->{exit_code}, 0, 'exit 0 with children left running');
ok(!$e->{timed_out}, 'not timed out');
is($out, "bye\n", 'stdout');
@left = VetoTest::sandbox_uid_procs($h->uid_base, $h->uid_end);
is(scalar @left, 0, 'orphaned daemons died with the exec') or diag join("\n", @left);

# A child that holds stdout open does not keep the exec alive past its
# deadline either.
$t0 = time;
($e) = $h->sh($id, 'setsid sh -c "sleep 1000" & exit 0', timeout_s => 3);
$took = time - $t0;
ok($took < 10, sprintf('exec with an inherited stdout returned (%.1f s)', $took));
eventually('nothing left', 2, sub { !$h->count_procs });

# The sandbox's default timeout applies when none is given.
my $id2 = $h->create_ok(limits => { timeout_s => 1 });
$t0 = time;
($e) = $h->exec($id2, ['sleep', '30']);
ok($e->{timed_out}, 'default timeout_s from the sandbox limits');
ok(time - $t0 < 8, 'and it was about 1 s');

# Other connections are served while an exec waits for its deadline.
my $s = $h->connect;
VetoTest::write_all($s, VetoTest::frame({ op => 'exec', tenant => 't1',
    agent => 'a1', id => $id, argv => [ 'sleep', '100' ], timeout_s => 3 }));
eventually('the exec runs', 3, sub { $h->count_procs >= 1 });
$t0 = time;
ok($h->ping->{ok}, 'ping while an exec runs');
ok(time - $t0 < 1, 'ping answered promptly');
my ($r2) = VetoTest::recv_frame($s, 30);
ok($r2 && $r2->{timed_out}, 'the concurrent exec timed out');

# A client that goes away mid-exec: the exec is cancelled and its
# processes are killed; the helper keeps serving.
{
    my $c = $h->connect;
    VetoTest::write_all($c, VetoTest::frame({ op => 'exec', tenant => 't1',
        agent => 'a1', id => $id,
        argv => [ '/bin/sh', '-c', 'setsid -f sleep 1000; sleep 1000' ] }));
    my $seen = 0;
    eventually('the exec runs', 2,
               sub { ($seen = $h->count_procs) >= 2 });
    ok($seen >= 2, 'exec running before the client leaves');
    close $c;
    eventually('client gone: the exec is killed', 5, sub { !$h->count_procs })
        or diag $h->leak_detail;
    ok($h->ping->{ok}, 'helper still serving');
    my ($x) = $h->call({ op => 'status', tenant => 't1', agent => 'a1', id => $id });
    is($x->{sandbox}{execs_running}, 0, 'no exec counted as running');
}

# Large stdin to a workload that never reads it does not stall anyone.
{
    my $t1 = time;
    my ($x) = $h->exec($id, ['true'], stdin => 'i' x (8 * 1024 * 1024));
    is($x->{exit_code}, 0, 'unread 8 MiB stdin: exit 0');
    ok(time - $t1 < 10, 'promptly');
    my ($y, $o) = $h->exec($id, [ 'sha256sum' ], stdin => 'i' x (8 * 1024 * 1024));
    like($o // '', qr/^\Q@{[Digest::SHA::sha256_hex('i' x (8 * 1024 * 1024))]}\E /,
         '8 MiB stdin delivered intact');
}

for ($id, $id2) {
    is($h->destroy($_)->{state}, 'terminated', 'destroy');
}
$h->leaks_ok('after destroy');
$h->stop;
done_testing;
