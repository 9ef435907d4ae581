# Termination under hostile conditions: a workload that stops itself,
# ignores SIGTERM, sits in vfork, floods stderr, closes its stdout, or
# forks while being destroyed; and a tmpfs held open on the host, which
# destroy must report, not hide behind a lazy unmount.  (100,000 files
# and a very deep tree at destroy: t/helper/teardown-files.t.)
use strict;
use warnings;
use Test::More;
use File::Temp qw(tempdir);
use Time::HiRes qw(time sleep);
use lib 't/lib';
use VetoTest;
use Eventually qw(eventually);

my $h = VetoTest->start;
my $id = $h->create_ok;

# --- processes that resist -------------------------------------------------
my @resist = (
    [ 'SIGSTOPs itself', 'echo up; kill -STOP $$; echo never' ],
    [ 'ignores SIGTERM', 'trap "" TERM HUP INT; echo up; while :; do sleep 1; done' ],
    [ 'stopped children ignoring SIGTERM',
      'echo up; for i in 1 2 3; do (trap "" TERM; kill -STOP $$ ; sleep 100) & done; wait' ],
);
for my $c (@resist) {
    my ($name, $script) = @$c;
    my $t0 = time;
    my ($e, $out) = $h->sh($id, $script, timeout_s => 2);
    ok($e->{ok} && $e->{timed_out}, "$name: timed out") or diag explain $e;
    like($out, qr/^up\n\z/, "$name: ran until the deadline");
    ok(time - $t0 < 8, sprintf("$name: reply %.1f s after start", time - $t0));
    eventually("$name: nothing left", 2, sub { !$h->count_procs });
}

# A parent blocked in vfork() while its child pauses.
my $tmp = tempdir(CLEANUP => 1);
open(my $fh, '>', "$tmp/vf.c") or die "write vf.c: $!";
print $fh <<'C';
#define _GNU_SOURCE
#include <stdio.h>
#include <unistd.h>
int main(void)
{
    puts("up");
    fflush(stdout);
    if (vfork() == 0) {
        for (;;) pause();
    }
    puts("never");
    return 0;
}
C
close $fh;
is(system('gcc', '-O0', '-static', '-o', "$tmp/vf", "$tmp/vf.c"), 0, 'vfork probe compiles');
open($fh, '<:raw', "$tmp/vf") or die "read vf: $!";
my $bin = do { local $/; <$fh> };
close $fh;
ok($h->write_file($id, 'vf', $bin, mode => 0755)->{ok}, 'vfork probe written');
my ($e, $out) = $h->exec($id, ['/workspace/vf'], timeout_s => 2);
ok($e->{ok} && $e->{timed_out}, 'a parent stuck in vfork is killed at the deadline');
is($out, "up\n", 'vfork probe output');
eventually('nothing left after vfork', 2, sub { !$h->count_procs });

# stderr forever, stdout closed early
my $s = $h->connect;
VetoTest::write_all($s, VetoTest::frame({ op => 'exec', tenant => 't1',
    agent => 'a1', id => $id, timeout_s => 3,
    argv => [ '/bin/sh', '-c', 'exec 1>&-; yes flood >&2' ] }));
my $slow = 0;
for (1 .. 10) {
    my $t0 = time;
    $slow++ unless $h->ping->{ok} && time - $t0 < 1;
    sleep 0.1;
}
is($slow, 0, 'pings answered promptly while stderr floods');
my ($r) = VetoTest::recv_frame($s, 30);
ok($r && $r->{timed_out} && $r->{stderr_truncated}, 'the flood ended at the deadline, stderr truncated');
is($r->{stdout_len}, 0, 'closed stdout: empty');
($e, $out) = $h->sh($id, 'exec 1>&- 2>&-; sleep 0.5; exit 3');
is($e->{exit_code}, 3, 'closing stdout and stderr early does not end the exec');

# forking as fast as it can while the sandbox is destroyed
my $idf = $h->create_ok(limits => { pids => 64 });
my $sf = $h->connect;
VetoTest::write_all($sf, VetoTest::frame({ op => 'exec', tenant => 't1',
    agent => 'a1', id => $idf, timeout_s => 30,
    argv => [ '/bin/sh', '-c', 'while :; do (sleep 100 &) 2>/dev/null; done' ] }));
# a second for the loop to get going (eventually scales it on an emulated
# CPU)
# (the count goes up and down as the loop's children come and go: the
# one seen is the one judged)
my $procs = eventually('the fork loop gets going', 1, sub {
    my $c = $h->count_procs;
    $c > 5 ? $c : undef;
});
ok($procs, 'the fork loop runs (' . ($procs // 'at most 5') . ' processes)');
my $t0 = time;
my $d = $h->destroy($idf);
is($d->{state}, 'terminated', 'destroy during a fork loop: terminated') or diag explain $d;
ok(time - $t0 < 10, sprintf('in %.1f s', time - $t0));
is($h->count_procs, 0, 'no process left once destroy replied');
VetoTest::recv_frame($sf, 10);

# --- a host process holding the tmpfs: no lazy unmount -----------------------
ok($h->write_file($id, 'held.txt', "held\n")->{ok}, 'file to hold');
my $held = $h->state_dir . "/sb/$id/root/workspace/held.txt";
open(my $hold, '<', $held) or die "open $held: $!";
$d = $h->destroy($id);
ok(!$d->{ok}, 'destroy while a host process holds a file there: not terminated')
    or diag explain $d;
is($d->{error}, 'termination_failed', 'termination_failed');
is($d->{step}, 'mounts', 'step mounts');
ok(-e $held, 'the file is still there, as reported');
($r) = $h->call({ op => 'status', tenant => 't1', agent => 'a1', id => $id });
ok($r->{ok}, 'the sandbox stays listed for a retry');
close $hold;
$d = $h->destroy($id);
is($d->{state}, 'terminated', 'the retry terminates') or diag explain $d;
ok(!-e $h->state_dir . "/sb/$id", 'its directory is gone');

$h->leaks_ok('after destroy');
is($h->stop, 0, 'helper exits 0');
done_testing;
