#!/usr/bin/perl
# Quotas on the Lua scripts the module ships (lua/quota_*.lua of the module):
# concurrent sandboxes per tenant and agent, execs per window, Retry-After,
# their atomicity under concurrent gateways, and reconciliation with the
# helper (a restart's new epoch, a not_found).

use strict;
use warnings;

use FindBin;
use lib "$FindBin::Bin/../../lib";
use Test::More;
use POSIX ();
use Time::HiRes qw(sleep);
use VetoRedisTest qw(redis_conn run_script);

my $r = redis_conn();
my $T = 'q';

sub skeys {
    my ($agent, $id, $t) = @_;
    $t //= $T;
    return ("veto:{$t}:sbx:live", "veto:{$t}:sbx:live:$agent", "veto:{$t}:sbx:own:$id");
}

# code and retry-after (a third element counts stale entries dropped)
sub acquire {
    my ($agent, $id, $tmax, $amax, $ttl) = @_;
    my $res = run_script($r, 'quota_acquire', [skeys($agent, $id)],
                         [$id, $agent, $tmax, $amax, $ttl // 60000, 'gw-1']);
    return [@$res[0, 1]];
}

sub release {
    my ($agent, $id) = @_;
    return run_script($r, 'quota_release', [skeys($agent, $id)], [$id]);
}

# --- concurrent sandboxes
is_deeply(acquire('a1', 'sbx1', 3, 2), ['ok', '0'], 'first sandbox');
is_deeply(acquire('a1', 'sbx1', 3, 2), ['exists', '0'], 'same id not counted twice');
is_deeply(acquire('a1', 'sbx2', 3, 2), ['ok', '0'], 'second for the agent');
my $res = acquire('a1', 'sbx3', 3, 2);
is($res->[0], 'agent_limit', 'agent limit 2');
ok($res->[1] >= 59 && $res->[1] <= 60, "retry-after from the oldest lifetime ($res->[1])");
is_deeply(acquire('a2', 'sbx4', 3, 2), ['ok', '0'], 'another agent still fits');
is(acquire('a3', 'sbx5', 3, 2)->[0], 'tenant_limit', 'tenant limit 3');
is($r->zcard("veto:{$T}:sbx:live:a3"), 0, 'a refused call counts nothing');
is($r->hget((skeys('a1', 'sbx1'))[2], 'agent'), 'a1', 'ownership record: agent');
is($r->hget((skeys('a1', 'sbx1'))[2], 'gateway'), 'gw-1', 'ownership record: gateway');
is(acquire('a1', 'sbx9', 0, 0)->[0], 'ok', 'limit 0: unlimited');
release('a1', 'sbx9');

is_deeply(release('a1', 'sbx1'), ['ok', '1'], 'release');
ok(!$r->exists((skeys('a1', 'sbx1'))[2]), 'ownership record gone');
is_deeply(release('a1', 'sbx1'), ['ok', '0'], 'release is idempotent');
is(acquire('a3', 'sbx5', 3, 2)->[0], 'ok', 'a released slot is free again');

# a gateway that died without releasing: the slot frees itself after ttl
is(acquire('a4', 'sbx6', 0, 1, 300)->[0], 'ok', 'short-lived sandbox');
is(acquire('a4', 'sbx7', 0, 1, 300)->[0], 'agent_limit', 'full');
sleep 0.4;    # on purpose: past the slot's ttl
is(acquire('a4', 'sbx7', 0, 1, 300)->[0], 'ok', 'expired slot reclaimed');

# other tenants are separate
is(run_script($r, 'quota_acquire', [skeys('a1', 'x1', 'other')],
              ['x1', 'a1', 1, 1, 60000, 'gw'])->[0], 'ok', 'tenant isolation');

# --- ownership records name the helper run; a restarted helper's epoch
# drops this gateway's sandboxes of the old one (not another gateway's)
{
    my $T2 = 'ep';
    my $own = "veto:{$T2}:sbx:own:";
    my $live = "veto:{$T2}:sbx:live:";
    my $acq = sub {
        my ($agent, $id, $gw, $epoch, $tmax) = @_;
        return run_script($r, 'quota_acquire',
            ["veto:{$T2}:sbx:live", "veto:{$T2}:sbx:live:$agent",
             "veto:{$T2}:sbx:own:$id"],
            [$id, $agent, $tmax // 3, 0, 60000, $gw, $epoch, $own, $live,
             '{"PATH":"/x"}', 'a' x 64, '0']);
    };
    is($acq->('a1', 's1', 'gw-1', 'e1')->[0], 'ok', 'epoch e1: s1');
    is($acq->('a2', 's2', 'gw-1', 'e1')->[0], 'ok', 'epoch e1: s2');
    is($acq->('a1', 's3', 'gw-2', 'f1')->[0], 'ok', 'another gateway: s3');
    is($r->hget("${own}s1", 'epoch'), 'e1', 'the record names the epoch');
    is($r->hget("${own}s1", 'env'), '{"PATH":"/x"}', 'and the env view');
    is($r->hget("${own}s1", 'env_sha256'), 'a' x 64, 'and its digest');
    is($acq->('a3', 's4', 'gw-1', 'e1')->[0], 'tenant_limit', 'full at 3');
    my $res = $acq->('a3', 's4', 'gw-1', 'e2');
    is($res->[0], 'ok', 'the helper restarted (epoch e2): a slot again');
    is($res->[2], '2', 'two stale sandboxes of this gateway dropped');
    ok(!$r->exists("${own}s1") && !$r->exists("${own}s2"),
       'their ownership records went');
    ok(!defined $r->zscore("${live}a1", 's1')
       && !defined $r->zscore("${live}a2", 's2'), 'and their agents\' slots');
    ok(defined $r->zscore("veto:{$T2}:sbx:live", 's3'),
       'another gateway\'s sandbox stays');

    # quota_gone: the helper said not_found for a sandbox
    my $gone = sub {
        my ($agent, $id, $gw) = @_;
        return run_script($r, 'quota_gone',
            ["veto:{$T2}:sbx:live", "veto:{$T2}:sbx:live:$agent",
             "veto:{$T2}:sbx:own:$id"], [$id, $agent, $gw]);
    };
    is_deeply($gone->('a2', 's3', 'gw-2'), ['ok', '0'],
              'another agent\'s not_found frees nothing');
    is_deeply($gone->('a1', 's3', 'gw-1'), ['ok', '0'],
              'another gateway\'s helper does not know it: nothing');
    ok($r->exists("${own}s3"), 'the record stays');
    is_deeply($gone->('a1', 's3', 'gw-2'), ['ok', '1'], 'its owner\'s: freed');
    ok(!$r->exists("${own}s3"), 'record gone');
    is_deeply($gone->('a1', 's3', 'gw-2'), ['ok', '0'], 'idempotent');
}

# --- execs per window
sub exec_rate {
    my ($agent, $tmax, $amax, $win, $ev) = @_;
    return run_script($r, 'quota_exec_rate',
                      ["veto:{$T}:rate:exec", "veto:{$T}:rate:exec:$agent"],
                      [$tmax, $amax, $win, $ev]);
}

my $ev = 0;
is(exec_rate('e1', 5, 3, 1000, ++$ev)->[0], 'ok', "exec $_") for 1 .. 3;
$res = exec_rate('e1', 5, 3, 1000, ++$ev);
is($res->[0], 'agent_limit', 'fourth exec in the window refused');
is($res->[1], '1', 'retry-after in whole seconds, at least 1');
is(exec_rate('e2', 5, 3, 1000, ++$ev)->[0], 'ok', 'another agent');
is(exec_rate('e2', 5, 3, 1000, ++$ev)->[0], 'ok', 'another agent (5th for tenant)');
is(exec_rate('e3', 5, 3, 1000, ++$ev)->[0], 'tenant_limit', 'tenant limit 5');
$res = exec_rate('e3', 100, 100, 60000, ++$ev);
is($res->[0], 'ok', 'window is per call: a minute-wide limit passes');
sleep 1.05;    # on purpose: the window slides
is(exec_rate('e1', 5, 3, 1000, ++$ev)->[0], 'ok', 'window slid: allowed again');
my $err = eval { exec_rate('e1', 'x', 3, 1000, ++$ev); 1 } ? '' : $@;
like($err, qr/bad limits/, 'bad arguments are an error, not a pass');

# --- atomicity: 20 gateways race for 5 slots
{
    my $N = 20;
    pipe(my $go_r, my $go_w) or die;
    my @kids;
    for my $i (1 .. $N) {
        pipe(my $rr, my $rw) or die;
        my $pid = fork() // die;
        if ($pid == 0) {
            close $go_w; close $rr;
            my $c = redis_conn();
            $c->ping;
            sysread($go_r, my $b, 1);
            my $x = run_script($c, 'quota_acquire',
                               ["veto:{race}:sbx:live", "veto:{race}:sbx:live:a$i",
                                "veto:{race}:sbx:own:s$i"],
                               ["s$i", "a$i", 5, 1, 60000, 'gw']);
            print {$rw} "$x->[0]\n";
            close $rw;
            POSIX::_exit(0);
        }
        close $rw;
        push @kids, [$pid, $rr];
    }
    close $go_r;
    sleep 0.3;    # on purpose: every child waits at the gate
    close $go_w;
    my @res;
    for (@kids) { my $fh = $_->[1]; my $l = <$fh> // 'fail'; chomp $l; push @res, $l; waitpid $_->[0], 0 }
    is(scalar(grep { $_ eq 'ok' } @res), 5, '20 concurrent creates, tenant limit 5: exactly 5 win');
    is(scalar(grep { $_ eq 'tenant_limit' } @res), 15, 'the rest get tenant_limit');
    is($r->zcard('veto:{race}:sbx:live'), 5, 'and exactly 5 are counted');
}

done_testing();
