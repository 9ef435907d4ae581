# Lifetimes and honest ends: the lifetime (ttl_s) and the idle timeout
# (idle_s) end sandboxes by the helper's own timers with no client
# connected; update_lifetime moves them within the ceilings; every end has
# a reason that status, list and the ended op tell afterwards, for the
# retention period, then not_found: deleted, expired, idle,
# killed_by_limit (memory; a pids limit an exec hits is reported to it
# and ends nothing), helper_restart (kill -9 with running execs,
# and SIGTERM), termination_failed (a host process holding the tmpfs);
# state files are written atomically and survive what they must.  Time
# goes by on the helper's test clock (test_clock = on, clock_advance:
# t/helper/clock.t), not in sleeps: each wait is the clock moved to just
# short of the end, then the last second in real time, which the
# helper's own timers end with no client; or moved past it.
use strict;
use warnings;
use Test::More;
use Time::HiRes qw(time sleep);
use JSON::PP;
use lib 't/lib';
use VetoTest;
use Eventually qw(eventually);

# the advances below come to about 100 s: the first sandbox (the
# defaults) must live through them to end at the restart
my $h = VetoTest->start(test_clock => 'on', max_ttl_s => 600,
                        default_ttl_s => 300, max_idle_s => 300,
                        default_idle_s => 240);

# Moves the helper's lifetime clock; what it puts past its end is ending
# at the reply.  The lifetime clock's time (unix seconds).
sub advance
{
    my ($hh, $seconds) = @_;
    my ($r) = $hh->call({ op => 'clock_advance', seconds => $seconds });
    $r->{ok} or die "clock_advance $seconds: " . encode_json($r) . "\n";
    return $r->{now};
}

sub status
{
    my ($id, %a) = @_;
    my ($r) = $h->call({ op => 'status', tenant => 't1', agent => 'a1',
                         id => $id, %a });
    return $r;
}

# list does not name a sandbox, so it does not count as activity
sub ended_of
{
    my ($hh, $id) = @_;
    my ($r) = $hh->call({ op => 'list', tenant => 't1', agent => 'a1',
                          ended => JSON::PP::true });
    my ($e) = grep { $_->{id} eq $id } @{ $r->{ended} // [] };
    return $e;
}

# its state in the list of the live (not a request naming it)
sub live_state
{
    my ($hh, $id) = @_;
    my ($r) = $hh->call({ op => 'list', tenant => 't1', agent => 'a1' });
    my ($sb) = grep { $_->{id} eq $id } @{ $r->{sandboxes} // [] };
    return $sb ? $sb->{state} : 'gone';
}

sub wait_ended
{
    my ($hh, $id, $timeout) = @_;
    return scalar eventually("$id ends", $timeout // 20, sub { ended_of($hh, $id) });
}

sub ended_ok
{
    my ($e, $reason, $what) = @_;
    ok($e, "$what: ended") or return;
    is($e->{state}, 'ended', "$what: state ended");
    is($e->{end_reason}, $reason, "$what: end_reason $reason")
        or diag explain $e;
    ok($e->{ended_at} >= $e->{created_at}, "$what: ended_at after created_at");
    ok(defined $e->{termination_ms} && $e->{termination_ms} >= 0
       && $e->{termination_ms} < 20000,
       "$what: termination took $e->{termination_ms} ms");
    ok($e->{retained_until} > $e->{ended_at}, "$what: retained_until");
}

# --- the defaults, the ceilings ---------------------------------------
my $r = $h->create(idle_s => 301);
is($r->{error}, 'over_ceiling', 'idle_s past max_idle_s: over_ceiling');
is($r->{limit}, 'idle_s', 'limit idle_s');
$r = $h->create(idle_s => 0);
is($r->{error}, 'bad_value', 'idle_s 0: bad_value');
$r = $h->create;
is($r->{sandbox}{idle_s}, 240, 'default_idle_s applies');
is($r->{sandbox}{ttl_s}, 300, 'default_ttl_s applies');
ok($r->{sandbox}{active_at} >= $r->{sandbox}{created_at}, 'active_at');
my $id0 = $r->{sandbox}{id};
ok(-f $h->state_dir . "/run/$id0.json", 'a live sandbox has a state file');
my $sf = do { local $/; open(my $fh, '<', $h->state_dir . "/run/$id0.json")
              or die; <$fh> };
my $st = decode_json($sf);
is($st->{tenant}, 't1', 'state file: owner');
is($st->{ttl_s}, 300, 'state file: ttl_s');
is((stat($h->state_dir . "/run/$id0.json"))[2] & 07777, 0600,
   'state file: mode 0600');
is((stat($h->state_dir . "/run"))[2] & 07777, 0700, 'run/: mode 0700');
unlike($sf, qr/\Q${\ $h->marker }\E/, 'no env value in the state file');
$h->live_ok(1, 'with one sandbox');

# --- idle: no client connected ----------------------------------------
$r = $h->create(idle_s => 10);
my $idi = $r->{sandbox}{id};
my $ci = $r->{sandbox}{created_at};
advance($h, 9);
is(live_state($h, $idi), 'ready', '9 s of its idle_s 10: ready');
my $e = wait_ended($h, $idi, 5);    # the last second: the helper's timer
ended_ok($e, 'idle', 'idle with no client');
is($e->{idle_s}, 10, 'the record names its idle_s');
like($e->{detail} // '', qr/10 s/, 'detail says how long');
ok($e->{ended_at} >= $ci + 10, 'ended after its idle_s, by the clock')
    or diag explain $e;
$r = status($idi);
is($r->{sandbox}{end_reason}, 'idle', 'status: idle');
ok(!-e $h->state_dir . "/sb/$idi", 'its directory is gone');
eventually('its state file is gone', 10,
           sub { !-e $h->state_file($idi) });
ok(-f $h->state_dir . "/ended/$idi.json", 'its ENDED record is on disk');

# requests keep it alive
$r = $h->create(idle_s => 10);
my $ida = $r->{sandbox}{id};
my $ca = $r->{sandbox}{created_at};
for (1 .. 5) {
    advance($h, 4);    # 20 s go by, past idle_s, with requests
    $r = status($ida);
}
is($r->{sandbox}{state}, 'ready', 'status every 4 s for 20 s: not idle');
ok($r->{sandbox}{active_at} >= $ca + 20,
   'active_at: the last request, by the clock') or diag explain $r;

# a running exec keeps it alive, background ones too
my ($bg) = $h->call({ op => 'exec', tenant => 't1', agent => 'a1', id => $ida,
                      argv => ['sleep', '1000'], background => JSON::PP::true });
ok($bg->{ok}, 'a background exec') or diag explain $bg;
advance($h, 15);
is(live_state($h, $ida), 'ready',
   'no request for 15 s, but an exec runs: ready, not idle');
($r) = $h->exec_op('exec_kill', $ida, $bg->{exec}{id});
ok($r->{killed}, 'the exec killed') or diag explain $r;
eventually('the exec ended', 10, sub {
    my ($x) = $h->exec_op('exec_status', $ida, $bg->{exec}{id});
    ($x->{exec}{state} // '') ne 'running';
});
advance($h, 11);
$e = wait_ended($h, $ida, 5);
ended_ok($e, 'idle', 'idle once the exec ended');

# --- lifetime: no client connected -------------------------------------
my $idt = $h->create_ok(ttl_s => 10, idle_s => 300);
$r = status($idt);
my $created = $r->{sandbox}{created_at};
is($r->{sandbox}{expires_at}, $created + 10, 'expires_at');
advance($h, 9);
is(status($idt)->{sandbox}{state}, 'ready', '9 s of its ttl_s 10: ready');
$e = wait_ended($h, $idt, 5);    # the last second: the helper's timer
ended_ok($e, 'expired', 'expired with no client');
ok($e->{ended_at} >= $created + 10, 'ended at or after expires_at');
is($e->{expires_at}, $created + 10, 'the record keeps expires_at');

# --- extension ----------------------------------------------------------
my $idx = $h->create_ok(ttl_s => 10, idle_s => 300);
($r) = $h->call({ op => 'update_lifetime', tenant => 't1', agent => 'a1',
                  id => $idx, ttl_s => 30 });
ok($r->{ok}, 'update_lifetime ttl_s 30') or diag explain $r;
is($r->{ttl_s}, 30, '... ttl_s');
is($r->{expires_at}, $r->{created_at} + 30, '... expires_at');
my $cx = $r->{created_at};
$st = decode_json(do { local $/; open(my $fh, '<',
    $h->state_dir . "/run/$idx.json") or die; <$fh> });
is($st->{ttl_s}, 30, 'the state file has the new lifetime');
($r) = $h->call({ op => 'update_lifetime', tenant => 't1', agent => 'a1',
                  id => $idx, ttl_s => 601 });
is($r->{error}, 'over_ceiling', 'past max_ttl_s: over_ceiling');
is($r->{limit}, 'ttl_s', 'limit ttl_s');
($r) = $h->call({ op => 'update_lifetime', tenant => 't1', agent => 'a1',
                  id => $idx });
is($r->{error}, 'missing_field', 'nothing to change: missing_field');
($r) = $h->call({ op => 'update_lifetime', tenant => 't1', agent => 'a1',
                  id => $idx, idle_s => 301 });
is($r->{limit}, 'idle_s', 'idle_s past its ceiling');
($r) = $h->call({ op => 'update_lifetime', tenant => 't1', agent => 'a2',
                  id => $idx, ttl_s => 10 });
is($r->{error}, 'not_found', "another agent's sandbox: not_found");
advance($h, 12);    # past the first ttl_s
is(status($idx)->{sandbox}{state}, 'ready', 'alive past its first lifetime');
($r) = $h->call({ op => 'update_lifetime', tenant => 't1', agent => 'a1',
                  id => $idx, ttl_s => 11 });
is($r->{error}, 'bad_value', 'a lifetime already over: bad_value');
like($r->{detail} // '', qr/lived 1[23] s/, '... it has lived 12 s, by the clock')
    or diag explain $r;
advance($h, 19);    # 31 s: past the extended one
$e = wait_ended($h, $idx, 5);
ended_ok($e, 'expired', 'the extended lifetime');
is($e->{ttl_s}, 30, 'with its new ttl_s');
ok($e->{ended_at} >= $cx + 30, '... ended after it, by the clock');
($r) = $h->call({ op => 'update_lifetime', tenant => 't1', agent => 'a1',
                  id => $idx, ttl_s => 60 });
is($r->{error}, 'ended', 'extending an ended sandbox: ended');
is($r->{end_reason}, 'expired', '... naming why');

# idle_s can be changed too, from now on
my $idy = $h->create_ok(idle_s => 300);
($r) = $h->call({ op => 'update_lifetime', tenant => 't1', agent => 'a1',
                  id => $idy, idle_s => 1 });
is($r->{idle_s}, 1, 'idle_s lowered to 1');
advance($h, 2);
$e = wait_ended($h, $idy, 10);
ended_ok($e, 'idle', 'the lowered idle_s');

# --- memory: a limit that kills the sandbox ----------------------------
my $idm = $h->create_ok(limits => { memory_mb => 64, disk_mb => 256 },
                         idle_s => 300);
my ($x) = $h->exec($idm, ['python3', '-c', 'a = bytearray(256 << 20)']);
ok($x->{oom_killed}, 'a process past memory_mb is OOM-killed') or diag explain $x;
is_deeply($x->{limits_hit}, ['memory'], '... limits_hit: ["memory"]')
    or diag explain $x;
sleep 0.5;    # on purpose: time for a wrong end to show
is(status($idm)->{sandbox}{state}, 'ready',
   '... and the sandbox goes on: its files leave room');
($x) = $h->sh($idm, 'head -c 200M /dev/zero > /workspace/fill');
ok($x->{oom_killed}, 'filling its memory with files: OOM-killed')
    or diag explain $x;
$e = wait_ended($h, $idm, 10);
ended_ok($e, 'killed_by_limit', 'files holding its whole memory');
is($e->{limit}, 'memory_mb', 'limit memory_mb');
like($e->{detail} // '', qr/OOM/, 'detail: the OOM killer');
($x) = $h->sh($idm, 'true');
is($x->{error}, 'ended', 'an exec in it: ended');
is($x->{end_reason}, 'killed_by_limit', '... killed_by_limit');

# --- pids: a limit an exec runs into, that leaves the sandbox usable --
# No process of a sandbox outlives its exec, so the pids an exec held are
# free again when it ends: the exec is told (limits_hit), the sandbox goes
# on.  The bomb is bounded: it forks until a fork is refused.
my $bomb = 'import os, time' . "\n"
         . 'n = 0' . "\n"
         . 'for i in range(64):' . "\n"
         . '    try:' . "\n"
         . '        pid = os.fork()' . "\n"
         . '    except OSError:' . "\n"
         . '        break' . "\n"
         . '    if pid == 0:' . "\n"
         . '        time.sleep(1)' . "\n"
         . '        os._exit(0)' . "\n"
         . '    n += 1' . "\n"
         . 'print(n)' . "\n";
my $idp = $h->create_ok(limits => { pids => 8 }, idle_s => 300);
my ($xo, $xout);
($x, $xout) = $h->exec($idp, ['python3', '-c', $bomb]);
is($x->{exit_code}, 0, 'a bounded fork bomb exits 0') or diag explain $x;
chomp $xout;
ok($xout ne '' && $xout < 64, "its forks were refused after $xout")
    or diag explain $x;
is_deeply($x->{limits_hit}, ['pids'], 'limits_hit: ["pids"]')
    or diag explain $x;
ok(!$x->{oom_killed}, '... not oom_killed');
sleep 0.3;    # on purpose: time for a wrong end to show
is(status($idp)->{sandbox}{state}, 'ready', 'the sandbox is still ready');
($x, $xout) = $h->sh($idp, 'echo alive');
is($xout, "alive\n", 'the next exec runs');
is_deeply($x->{limits_hit}, [], '... and hit no limit') or diag explain $x;
ok(!ended_of($h, $idp), 'no ENDED record: it did not end');

# the same in the background: its status carries it
($r) = $h->call({ op => 'exec', tenant => 't1', agent => 'a1', id => $idp,
                  argv => ['python3', '-c', $bomb],
                  background => JSON::PP::true });
my $bgx = $r->{exec}{id};
ok($bgx, 'a background fork bomb') or diag explain $r;
my $bgs;
eventually('the background exec ends', 10, sub {
    ($bgs) = $h->exec_op('exec_status', $idp, $bgx);
    ($bgs->{exec}{state} // '') ne 'running';
});
is($bgs->{exec}{state}, 'exited', 'it exited') or diag explain $bgs;
is_deeply($bgs->{exec}{result}{limits_hit}, ['pids'],
          'exec_status: result.limits_hit ["pids"]') or diag explain $bgs;
($x, $xout) = $h->sh($idp, 'echo still');
is($xout, "still\n", 'the sandbox still runs execs');

# a background exec that holds the whole limit: the next exec cannot
# start, and is told why (busy, limit pids), not exec_failed
my $holder = 'import os, time' . "\n"
           . 'for i in range(64):' . "\n"
           . '    try:' . "\n"
           . '        if os.fork() == 0:' . "\n"
           . '            time.sleep(60)' . "\n"
           . '            os._exit(0)' . "\n"
           . '    except OSError:' . "\n"
           . '        break' . "\n"
           . 'print("full", flush=True)' . "\n"
           . 'time.sleep(60)' . "\n";
($r) = $h->call({ op => 'exec', tenant => 't1', agent => 'a1', id => $idp,
                  argv => ['python3', '-c', $holder],
                  background => JSON::PP::true });
my $hx = $r->{exec}{id};
ok($hx, 'a background exec that holds every pid') or diag explain $r;
eventually('the output says full', 10, sub {
    my (undef, $p) = $h->exec_op('exec_output', $idp, $hx, stream => 'stdout');
    ($p // '') =~ /full/;
});
($x) = $h->sh($idp, 'echo hi');
is($x->{error}, 'busy', 'the next exec: busy') or diag explain $x;
is($x->{limit}, 'pids', '... limit pids');
like($x->{detail} // '', qr/whole pids limit \(8\).*exec_kill/,
     '... saying the sandbox\'s processes hold it, and what to do');
($r) = $h->exec_op('exec_kill', $idp, $hx);
ok($r->{killed}, 'the holder killed') or diag explain $r;
($x, $xout) = $h->sh($idp, 'echo free');
is($xout, "free\n", 'then execs run again');

# a streamed exec's final reply carries it too
{
    my $s = $h->connect;
    VetoTest::write_all($s, VetoTest::frame({ op => 'exec', tenant => 't1',
        agent => 'a1', id => $idp, stream => JSON::PP::true,
        argv => ['python3', '-c', $bomb] }));
    my $fin;
    for (1 .. 50) {
        my ($f) = VetoTest::recv_frame($s, 30);
        last unless $f;
        if (!defined $f->{event}) { $fin = $f; last; }
    }
    is_deeply($fin && $fin->{limits_hit}, ['pids'],
              'a streamed exec: the final reply says limits_hit ["pids"]')
        or diag explain $fin;
}

# --- termination failure: a host process holds the tmpfs ---------------
my $idf = $h->create_ok(idle_s => 300);
ok($h->write_file($idf, 'held.txt', "held\n")->{ok}, 'file to hold');
my $held = $h->state_dir . "/sb/$idf/root/workspace/held.txt";
open(my $hold, '<', $held) or die "open $held: $!";
my $d = $h->destroy($idf);
is($d->{error}, 'termination_failed', 'destroy while held: termination_failed');
$r = status($idf);
is($r->{sandbox}{state}, 'ended', 'status: ended') or diag explain $r;
is($r->{sandbox}{end_reason}, 'termination_failed', 'end_reason termination_failed');
is($r->{sandbox}{step}, 'mounts', 'step mounts');
is($r->{sandbox}{cause}, 'deleted', 'cause deleted');
is_deeply($r->{sandbox}{confirmed},
          { processes => JSON::PP::true, cgroups => JSON::PP::true,
            network => JSON::PP::true, mounts => JSON::PP::false,
            files => JSON::PP::false }, 'confirmed up to the step');
ok(ended_of($h, $idf), 'the list has it among the ended');
($r) = $h->call({ op => 'list', tenant => 't1', agent => 'a1' });
ok(!grep({ $_->{id} eq $idf } @{ $r->{sandboxes} }), '... not among the live');
($x) = $h->sh($idf, 'true');
is($x->{end_reason}, 'termination_failed', 'an exec: ended, termination_failed');
ok(-f $h->state_dir . "/run/$idf.json", 'its state file stays, for a restart');
close $hold;
$d = $h->destroy($idf);
is($d->{state}, 'terminated', 'the retry terminates') or diag explain $d;
is($d->{ended}{end_reason}, 'deleted', 'now: deleted');
eventually('... and its state file is gone', 10,
           sub { !-e $h->state_file($idf) });

# --- the ended op: every tenant's, in order, paged ----------------------
my $ido = $h->create_ok(tenant => 't2', agent => 'b');
($r) = $h->call({ op => 'destroy', tenant => 't2', agent => 'b', id => $ido });
ok($r->{ok}, "another tenant's sandbox deleted");
($r) = $h->call({ op => 'ended' });
ok($r->{ok}, 'ended') or diag explain $r;
is($r->{epoch}, $h->ping->{epoch}, 'ended names the epoch');
my @all = @{ $r->{ended} };
my @page = @all;
my $next = $r->{next};
while ($r->{more}) {
    ($r) = $h->call({ op => 'ended', after => $next });
    push @all, @{ $r->{ended} };
    $next = $r->{next};
}
my %seen = map { $_->{id} => $_->{end_reason} } @all;
is($seen{$ido}, 'deleted', "another tenant's end is there");
is($seen{$idm}, 'killed_by_limit', 'and the limit kill');
my @seqs = map { $_->{seq} } @all;
is_deeply(\@seqs, [ sort { $a <=> $b } @seqs ], 'oldest first, by seq');
($r) = $h->call({ op => 'ended', after => $seqs[0], max => 1 });
is(scalar @{ $r->{ended} }, 1, 'max 1: one');
is($r->{ended}[0]{seq}, $seqs[1], 'after: the next one');
ok($r->{more}, 'more');
($r) = $h->call({ op => 'ended', after => $next });
is_deeply($r->{ended}, [], 'after the last: none');
ok(!$r->{more}, 'no more');
($r) = $h->call({ op => 'ended', max => 65 });
is($r->{error}, 'bad_value', 'max past 64: bad_value');
($r) = $h->call({ op => 'list', tenant => 't1', agent => 'a1' });
ok(!exists $r->{ended}, 'list without ended: no ended records');
($r) = $h->call({ op => 'list', tenant => 't2', ended => JSON::PP::true });
is_deeply([ map { $_->{id} } @{ $r->{ended} } ], [$ido],
          'a tenant sees only its own ended sandboxes');

# --- helper kill -9 with running execs, then a restart -----------------
my $epoch1 = $h->ping->{epoch};
my $idk = $h->create_ok(idle_s => 300);
my $idk2 = $h->create_ok(idle_s => 300);
my $s = $h->connect;
VetoTest::write_all($s, VetoTest::frame({ op => 'exec', tenant => 't1',
    agent => 'a1', id => $idk, argv => [ 'sleep', '1000' ] }));
($bg) = $h->call({ op => 'exec', tenant => 't1', agent => 'a1', id => $idk2,
                   argv => ['sleep', '1000'], background => JSON::PP::true });
ok($bg->{ok}, 'a background exec runs');
eventually('execs running', 5, sub { $h->count_procs >= 2 });
my @before = $h->ended_files;
$h->kill9;
$h->launch;
isnt($h->ping->{epoch}, $epoch1, 'a new run');
for my $k ($idk, $idk2) {
    $r = status($k);
    is($r->{sandbox}{state}, 'ended', "$k: ended after the restart")
        or diag explain $r;
    is($r->{sandbox}{end_reason}, 'helper_restart', '... helper_restart');
    is($r->{sandbox}{epoch}, $epoch1, '... made by the run that crashed');
    ok(-f $h->state_dir . "/ended/$k.json", '... on disk');
    ok(!-e $h->state_dir . "/run/$k.json", '... its state file gone');
}
like($h->log_text, qr/\Q$idk\E.*helper_restart/, 'the restart logs it');
eventually('no process of the crashed run', 5, sub { !$h->count_procs });
is(status($id0)->{sandbox}{end_reason}, 'helper_restart',
   'the idle one too');
is(status($idi)->{sandbox}{end_reason}, 'idle',
   'records of the last run survive the restart');
($r) = $h->call({ op => 'ended' });
ok(scalar @{ $r->{ended} } > 0, 'the ended op after a restart: from 0 again');
$h->leaks_ok('after kill -9 and restart');

# --- a crashed run's sandbox that cannot be removed: no start ----------
my $idh = $h->create_ok(idle_s => 300);
ok($h->write_file($idh, 'held.txt', "held\n")->{ok}, 'file to hold');
$held = $h->state_dir . "/sb/$idh/root/workspace/held.txt";
$h->kill9;
open($hold, '<', $held) or die "open $held: $!";
ok(!eval { $h->launch; 1 }, 'a helper cannot start while a crashed run\'s '
   . 'tmpfs is held') or $h->kill9;
like($@, qr/not starting/, '... and says why');
my $rec = decode_json(do { local $/; open(my $fh, '<',
    $h->state_dir . "/ended/$idh.json") or die "no record: $!"; <$fh> });
is($rec->{end_reason}, 'termination_failed', 'its record: termination_failed');
is($rec->{step}, 'mounts', 'step mounts');
is($rec->{cause}, 'helper_restart', 'cause helper_restart');
ok(-f $h->state_dir . "/run/$idh.json", 'its state file stays');
close $hold;
$h->launch;
is(status($idh)->{sandbox}{end_reason}, 'helper_restart',
   'released: the next start ends it, helper_restart');
$h->leaks_ok('after the held restart');

# --- SIGTERM: live sandboxes end on record ------------------------------
my $ids = $h->create_ok;
is($h->stop, 0, 'SIGTERM with a live sandbox: exit 0');
$h->launch;
$r = status($ids);
is($r->{sandbox}{end_reason}, 'helper_restart', 'stopped: helper_restart');
like($r->{sandbox}{detail} // '', qr/stopped/, '... the detail says stopped');

# --- what a crash mid-write leaves ---------------------------------------
$h->stop;
my $tmp = $h->state_dir . "/ended/.$ids.json.tmp";
open(my $fh, '>', $tmp) or die; print $fh '{"torn'; close $fh;
my $bad = $h->state_dir . '/ended/sb-000000000000000000000000.json';
open($fh, '>', $bad) or die; print $fh '{"id":"sb-000000000000000000000000"}';
close $fh;
$h->launch;
ok(!-e $tmp, 'a torn temporary record is removed at start');
ok(!-e $bad, 'a record that is not one is removed');
like($h->log_text, qr/not an ENDED record/, '... and logged');
is(status($ids)->{sandbox}{end_reason}, 'helper_restart',
   'the record before the torn write holds');

is($h->stop, 0, 'helper exits 0');
$h->leaks_ok('at the end');

# --- retention: then not_found, and the files are gone -----------------
my $h2 = VetoTest->start(test_clock => 'on', ended_retention_s => 60,
                         ended_max => 3);
my @ids = map { $h2->create_ok } 1 .. 4;
$h2->destroy($_) for @ids[0, 1];
is(scalar(() = $h2->ended_files), 2, 'two ENDED records on disk');
my ($r2) = $h2->call({ op => 'status', tenant => 't1', agent => 'a1',
                       id => $ids[0] });
is($r2->{sandbox}{end_reason}, 'deleted', 'within retention: deleted');
is($r2->{sandbox}{retained_until}, $r2->{sandbox}{ended_at} + 60,
   'retained_until is ended_at + ended_retention_s');
advance($h2, 55);
($r2) = $h2->call({ op => 'status', tenant => 't1', agent => 'a1',
                    id => $ids[0] });
is($r2->{sandbox}{end_reason}, 'deleted', '55 s of 60: still retained');
is(scalar(() = $h2->ended_files), 2, '... both on disk');
advance($h2, 6);    # past ended_retention_s
($r2) = $h2->call({ op => 'status', tenant => 't1', agent => 'a1',
                    id => $ids[0] });
is($r2->{error}, 'not_found', 'after the retention: not_found');
is(scalar(() = $h2->ended_files), 0, 'and their files are gone');
like($h2->log_text, qr/ended record of \Q$ids[1]\E removed \(retention\)/,
     'each removal is logged');
$h2->destroy($_) for @ids[2, 3];
my @more = map { $h2->create_ok } 1 .. 2;
$h2->destroy($_) for @more;
my @kept = sort $h2->ended_files;
is(scalar @kept, 3, 'ended_max 3: three kept');
ok(!grep({ $_ eq $ids[2] } @kept), 'the oldest went first');
is($h2->stop, 0, 'helper exits 0');
$h2->leaks_ok('at the end');

done_testing;
