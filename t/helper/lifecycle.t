# Nothing leaks: 50 create/exec/destroy cycles, TTL expiry, shutdown with
# live sandboxes, and restart cleanup after the helper is killed -9.
use strict;
use warnings;
use Test::More;
use Time::HiRes qw(time sleep);
use lib 't/lib';
use VetoTest;
use Eventually qw(eventually);

my $h = VetoTest->start;

# the helper's descriptors once it has made a sandbox: its flush process's
# socket is made with the first record and kept (sandbox-helper/durable.c)
$h->destroy($h->create_ok);
my $before = $h->leaks;
is_deeply($before, { cgroups => 0, mounts => 0, procs => 0, netns => 0,
                     files => 0 }, 'clean before')
    or diag $h->leak_detail;
my $fds_before = $h->count_fds;

my ($cycles_ok, @fail) = (0);
my $t0 = time;
for my $i (1 .. 50) {
    my $c = $h->create(limits => { memory_mb => 64, pids => 32, disk_mb => 16 });
    if (!$c->{ok}) { push @fail, "create $i: $c->{error}"; next; }
    my $id = $c->{sandbox}{id};
    my $w = $h->write_file($id, "in/$i.txt", "cycle $i\n");
    my ($e, $out) = $h->sh($id, $i % 5 ? "cat /workspace/in/$i.txt"
        : "cat /workspace/in/$i.txt; setsid -f sleep 1000; ( ( sleep 1000 & ) & )");
    push @fail, "exec $i: " . ($e->{error} // "out=$out")
        unless $e->{ok} && ($out // '') eq "cycle $i\n";
    my $d = $h->destroy($id);
    my $conf = $d->{confirmed} // {};
    if (($d->{state} // '') eq 'terminated'
        && 5 == grep { $conf->{$_} } qw(processes cgroups network mounts files)) {
        $cycles_ok++;
    } else {
        push @fail, "destroy $i: " . $h->json->encode($d);
    }
}
is($cycles_ok, 50, sprintf('50 cycles confirmed (%.1f s)', time - $t0))
    or diag join("\n", @fail[0 .. ($#fail > 9 ? 9 : $#fail)]);
my $after = $h->leaks;
is_deeply($after, $before, 'no cgroup, mount, netns, process or file left')
    or diag $h->leak_detail;
is($h->count_fds, $fds_before, 'helper descriptor count unchanged');
is($h->ping->{sandboxes}, 0, 'registry empty');

# --- destroy while execs run ------------------------------------------
{
    my $idx = $h->create_ok;
    my @conns;
    for my $n (1 .. 3) {
        my $c = $h->connect;
        VetoTest::write_all($c, VetoTest::frame({ op => 'exec', tenant => 't1',
            agent => 'a1', id => $idx,
            argv => [ '/bin/sh', '-c', 'setsid -f sleep 1000; sleep 1000' ] }));
        push @conns, $c;
    }
    eventually('three execs running', 5, sub { $h->count_procs >= 3 });
    my $t1 = time;
    my $d = $h->destroy($idx);
    is($d->{state}, 'terminated', 'destroy during running execs: terminated')
        or diag explain $d;
    ok(time - $t1 < 10, 'and promptly');
    is($h->count_procs, 0, 'no process left once destroy replied')
        or diag $h->leak_detail;
    my $answered = 0;
    for my $c (@conns) {
        my ($x) = VetoTest::recv_frame($c, 10);
        $answered++ if !$x || !defined $x->{exit_code};
    }
    is($answered, 3, 'each running exec ended (reply without an exit code, or closed)');
    $h->leaks_ok('after destroy during execs');
}

# --- TTL expiry ---------------------------------------------------------
my $id = $h->create_ok(ttl_s => 2);
my $s = $h->connect;
VetoTest::write_all($s, VetoTest::frame({ op => 'exec', tenant => 't1',
    agent => 'a1', id => $id, argv => [ 'sleep', '30' ] }));
my $r;
eventually('sandbox ended after its ttl', 10, sub {
    ($r) = $h->call({ op => 'status', tenant => 't1', agent => 'a1', id => $id });
    ($r->{sandbox}{state} // '') eq 'ended';
}) or diag explain $r;
is($r->{sandbox}{end_reason}, 'expired', 'end_reason expired');
my ($x) = VetoTest::recv_frame($s, 10);
ok(!$x || !$x->{ok} || !defined $x->{exit_code},
   'the exec running at expiry did not finish normally');
eventually('its processes are gone', 3, sub { !$h->count_procs });
$h->leaks_ok('after ttl expiry');
like($h->log_text, qr/\Q$id\E/, 'the expiry is logged with the id');

# --- SIGTERM with live sandboxes -----------------------------------------
my @live = map { $h->create_ok } 1 .. 3;
$s = $h->connect;
VetoTest::write_all($s, VetoTest::frame({ op => 'exec', tenant => 't1',
    agent => 'a1', id => $live[0], argv => [ 'sleep', '1000' ] }));
eventually('the exec runs', 5, sub { $h->count_procs >= 1 });
my $st = $h->stop;
is($st, 0, 'helper exits 0 on SIGTERM with live sandboxes');
$h->leaks_ok('after SIGTERM: every sandbox destroyed');

# --- kill -9 and restart cleanup ---------------------------------------
$h->launch;
my $epoch1 = $h->ping->{epoch};
my @old = map { $h->create_ok } 1 .. 3;
my ($sr) = $h->call({ op => 'status', tenant => 't1', agent => 'a1', id => $old[0] });
is($sr->{sandbox}{epoch}, $epoch1, 'a sandbox carries the epoch of its helper');
for my $i (0 .. 2) {
    ok($h->write_file($old[$i], 'data.txt', "old $i\n")->{ok}, "file in old $i");
}
my @bg;
for my $i (0 .. 1) {
    my $c = $h->connect;
    VetoTest::write_all($c, VetoTest::frame({ op => 'exec', tenant => 't1',
        agent => 'a1', id => $old[$i],
        argv => [ '/bin/sh', '-c', 'setsid -f sleep 1000; sleep 1000' ] }));
    push @bg, $c;
}
eventually('old sandboxes have processes running', 5,
           sub { $h->count_procs >= 2 });
ok($h->count_mounts >= 3, 'old sandboxes have mounts');
ok($h->count_cgroups >= 3, 'old sandboxes have cgroups');
$h->kill9;
ok($h->count_mounts >= 3, 'after kill -9 the mounts are still there');
# no restart needed for the workloads to stop: the inits' parent-death
# signal takes their pid namespaces down with the helper
eventually('old processes died with the helper, before any restart', 3,
           sub { !$h->count_procs })
    or diag $h->leak_detail;
$h->launch;
my $p2 = $h->ping;
like($p2->{epoch} // '', qr/^[0-9a-f]{32}\z/, 'the restarted helper has an epoch');
isnt($p2->{epoch}, $epoch1, 'a new one: its sandboxes from before are gone');
my $log = $h->log_text;
for my $i (0 .. 2) {
    like($log, qr/cleaned up.*\Q$old[$i]\E/, "restart logs cleanup of $old[$i]");
}
eventually('old processes killed', 5,
           sub { !$h->count_procs }) or diag $h->leak_detail;
$h->leaks_ok('after restart cleanup');
for my $i (0 .. 2) {
    ($r) = $h->call({ op => 'status', tenant => 't1', agent => 'a1', id => $old[$i] });
    is($r->{sandbox}{state}, 'ended', "old sandbox $i is not resurrected: ended")
        or diag explain $r;
    is($r->{sandbox}{end_reason}, 'helper_restart', '... by the restart');
    is($r->{sandbox}{epoch}, $epoch1, '... naming the run that made it');
}
($r) = $h->exec($old[0], ['true']);
is($r->{error}, 'ended', 'an exec in it: ended');
my $new = $h->create_ok;
my ($e, $out) = $h->sh($new, 'echo fresh');
is($out, "fresh\n", 'the restarted helper works');
is($h->destroy($new)->{state}, 'terminated', 'destroy');

$st = $h->stop;
is($st, 0, 'helper exits 0') or diag $h->log_text;
$h->leaks_ok('at the end');
done_testing;
