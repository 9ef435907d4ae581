#!/usr/bin/perl
# A Sentinel failover under load (issue 20), twice: kill -9 the Redis
# master, then a planned SENTINEL FAILOVER (the old master stays up and
# keeps its replicas until Sentinel demotes it: the gateway must stop
# writing to it as soon as a replica is promoted), each while agents
# exec, consume approvals and ask for new ones and a human approves.
# During the switch requests fail closed (503, never run without their
# approval); service resumes by itself within seconds;
# approvals written before the crash (confirmed by WAIT on a replica) are
# honoured once or refused, never used twice and never granted when they
# were pending or denied; a revocation written with WAIT survives; the
# old master, restarted empty, rejoins as a replica and the gateway never
# writes to it.  A real master, two replicas and three sentinels on
# loopback, two nginx workers, the real helper.

use strict;
use warnings;

use Test::More;
use lib 't/lib';
use VetoNginx;
use VetoSentinel;
use Eventually qw(eventually);
use POSIX qw(_exit);
use Time::HiRes qw(sleep time);

VetoNginx::need(qw(helper redis));
VetoSentinel::need();

my $policy = {
    version => 1,
    tenants => {
        acme => {
            ceilings => { memory_mb => 512, timeout_s => 30, ttl_s => 3600 },
            approvals => { exec_argv => ['sh -c *'] },
        },
    },
};

my $s = VetoSentinel->new(addr => '127.0.0.1');
my $n = VetoNginx->new;
$n->write_policy($policy);
$n->start_helper;
$n->render(http_extra => $s->nginx_conf, workers => 2);
my ($ok, $out) = $n->test_config;
ok($ok, 'nginx -t') or diag $out;
$n->start(keep_conf => 1);

my $agent = $n->token(sub => 'agent-1');
my $rev = $n->token(sub => 'human-1', scope => 'approvals:review');
my ($st, $h, $b, $j);
my ($sb, $doomed);
my $NREADY = 40;

# both workers: health answers from whichever took the connection
# health says redis up 8 polls in a row
sub wait_up
{
    my ($what, $secs) = @_;
    my $up = 0;
    return scalar eventually($what, $secs, sub {
        my (undef, undef, undef, $hj) = $n->request(GET => '/v1/health');
        $up = ($hj->{redis} // '') eq 'up' ? $up + 1 : 0;
        $up >= 8;
    });
}
wait_up('the gateway found the master through the sentinels', 15);


# the command that leaves the approval it ran with in the workspace log
sub gated { { argv => ['sh', '-c', "echo $_[0] >> /workspace/log"] } }

sub ask
{
    my ($tag) = @_;
    my ($st, undef, $b, $j) = $n->request(POST => "/v1/sandboxes/$sb/exec",
                                          $agent, gated($tag));
    return $st == 202 ? $j->{approval_id} : undef;
}

sub consume
{
    my ($apr, $tag) = @_;
    return $n->request(POST => "/v1/sandboxes/$sb/exec", $agent,
                       gated($tag), { 'Veto-Approval' => $apr });
}

# seconds from $t0 until a plain exec and a new approval both work
# (undef if not within $secs)
sub serving
{
    my ($t0, $secs) = @_;
    my $ok = eventually('a plain exec and a new approval work',
                        $t0 + $secs - time, sub {
        my ($st1) = $n->request(POST => "/v1/sandboxes/$sb/exec", $agent,
                                { argv => ['true'] });
        $st1 == 200 && ask("probe");
    });
    return $ok ? time - $t0 : undef;
}

# One failover under load; $how: "crash" (kill -9 the master) or
# "switchover" (SENTINEL FAILOVER).  Returns the old and new master ports.
sub phase
{
    my ($how, $revoked) = @_;
    note "---- $how";

    ($st, $h, $b, $j) = $n->request(POST => '/v1/sandboxes', $agent, {});
    is($st, 201, "$how: create") or diag $b;
    $sb = $j->{id};
    $doomed = $n->token(sub => $revoked, iat => int(time()) - 10);

    # before the failover: approvals in every state, each confirmed by WAIT
    # (the "ready" ones are used one by one while the master moves: one
    # used on a master the failover leaves would be approved again on the
    # new one)
    my %apr;
    my @rtags = map { "ready$_" } 1 .. $NREADY;
    my ($asked, $approved) = (0, 0);
    for my $t (qw(used1 used2 pending denied), @rtags) {
        $apr{$t} = ask($t);
        $asked++ if $apr{$t};
    }
    is($asked, 4 + $NREADY, 'approvals asked for');
    for my $t (qw(used1 used2), @rtags) {
        ($st) = $n->request(POST => "/v1/approvals/$apr{$t}/approve", $rev,
                            {});
        $approved++ if $st == 200;
    }
    is($approved, 2 + $NREADY, 'approvals approved');
    ($st) = $n->request(POST => "/v1/approvals/$apr{denied}/deny", $rev,
                        { reason => 'no' });
    is($st, 200, "approval 'denied' denied");
    for my $t (qw(used1 used2)) {
        ($st, $h, $b) = consume($apr{$t}, $t);
        is($st, 200, "approval '$t' used") or diag $b;
    }

    # the operator revokes an agent the documented way: SET, then WAIT
    ($st) = $n->request(GET => '/v1/sandboxes', $doomed);
    is($st, 200, "$revoked works before its revocation");
    my $m = $s->master;
    $m->set("veto:{acme}:revoked:agent:$revoked", int(time()));
    cmp_ok($m->wait(1, 1000), '>=', 1, 'the revocation is on a replica');
    ($st) = $n->request(GET => '/v1/sandboxes', $doomed);
    is($st, 401, "$revoked revoked");

    # ---- load: agents race for the same approved approvals, plain execs,
    # new approvals asked for and approved, while the master is killed
    my $dir = $n->dir . "/$how";
    mkdir $dir or die "$dir: $!";
    my $stop = "$dir/stop-load";
    my @kids;

    my $kid = sub {
        my ($name, $body) = @_;
        my $pid = fork() // die "fork: $!";
        if ($pid == 0) {
            open(my $fh, '>', "$dir/load-$name") or _exit(1);
            $fh->autoflush(1);
            while (!-e $stop) {
                $body->($fh);
            }
            close $fh;
            _exit(0);
        }
        push @kids, $pid;
    };

    my @ready = map { $apr{$_} } @rtags;
    for my $k (1 .. 2) {
        my $i = 0;
        $kid->("race$k", sub {
            my ($fh) = @_;
            my ($st, $j);
            if ($i < @ready) {
                ($st, undef, undef, $j) = consume($ready[$i], $rtags[$i]);
                print $fh "consume $ready[$i] $st " . ($j->{type} // '-')
                          . " $rtags[$i]\n";
                $i++;
            }
            ($st, undef, undef, $j) = $n->request(POST =>
                                                  "/v1/sandboxes/$sb/exec",
                                                  $agent,
                                                  { argv => ['true'] });
            print $fh "plain - $st " . ($j->{type} // '-') . "\n";
            sleep 0.1;
        });
    }
    my $seq = 0;
    $kid->('human', sub {
        my ($fh) = @_;
        $seq++;
        my $tag = "$how-$$-$seq";
        my ($st, undef, undef, $j) = $n->request(POST => "/v1/sandboxes/$sb/exec",
                                                 $agent, gated($tag));
        print $fh "ask - $st " . ($j->{type} // '-') . "\n";
        return sleep(0.05) unless $st == 202;
        my $id = $j->{approval_id};
        ($st, undef, undef, $j) = $n->request(POST => "/v1/approvals/$id/approve",
                                              $rev, {});
        print $fh "approve $id $st " . ($j->{type} // '-') . "\n";
        for (1 .. 2) {
            ($st, undef, undef, $j) = consume($id, $tag);
            print $fh "consume $id $st " . ($j->{type} // '-') . " $tag\n";
        }
    });

    sleep 1.5;    # on purpose: load on the old master first
    my ($old, $new, $t0);
    if ($how eq 'crash') {
        $old = $s->kill_master;
        $t0 = time;
        $new = $s->wait_failover($old, 30);
    } else {
        $old = $s->master_port;
        $t0 = time;
        $new = $s->failover;
    }
    my $t_elected = time - $t0;
    isnt($new, $old, "$how: the master was $old; the sentinels promoted $new");

    # service resumes by itself: a plain exec and a new approval work
    my $resumed = serving($t0, 30);
    ok(defined $resumed, "$how: service resumed by itself after the failover");
    diag(sprintf "$how: a new master after %.1f s, the gateway writes again "
                 . "after %.1f s", $t_elected, $resumed // -1);
    sleep 1.5;      # more load on the new master
    open(my $sfh, '>', $stop) or die "$stop: $!";
    close $sfh;
    my @fail = grep { waitpid($_, 0); $? != 0 } @kids;
    is_deeply(\@fail, [], 'the load ended');

    # ---- what the load saw
    my (%used, %seen, %tag_of, @bad);
    for my $f (glob "$dir/load-*") {
        open(my $fh, '<', $f) or die "$f: $!";
        while (<$fh>) {
            my ($what, $id, $st, $type, $tag) = split;
            $tag_of{$id} = $tag if $tag;
            $seen{"$what $st"}++;
            push @bad, $_ if $st !~ /^(200|202|403|503)$/;
            push @bad, $_ if $st == 503 && $type ne 'urn:veto-sandbox:problem:redis_unavailable';
            $used{$id}++ if $what eq 'consume' && $st == 200;
        }
    }
    diag "$how: " . join(', ', map { "$_: $seen{$_}" } sort keys %seen);
    is_deeply(\@bad, [], 'only 200, 202, 403 and 503 redis_unavailable');
    ok(($seen{'plain 503'} // 0) + ($seen{'consume 503'} // 0) > 0,
       "$how: the switch was seen: requests refused with 503 while it lasted");
    ok(($seen{'consume 200'} // 0) > 0, 'approvals were used under load');
    my @twice = grep { $used{$_} > 1 } keys %used;
    is_deeply(\@twice, [], "$how: no approval used twice under load");

    # the sentinels may still be moving replicas (a second reconfiguration
    # leaves the new master without a replica for WAIT for a moment): the
    # facts below are checked once the service answers again
    my $t1 = time;
    my $back = serving($t1, 30);
    ok(defined $back, "$how: service answers after the load");
    diag(sprintf "$how: service answered again %.1f s after the load",
                 $back) if defined $back && $back > 1;
    ($st, $h, $b) = $n->request(GET => "/v1/sandboxes/$sb/files?path=log",
                                $agent);
    is($st, 200, 'the workspace log reads back');
    my %ran;
    $ran{$_}++ for split /\n/, $b;
    my @ran_twice = grep { $ran{$_} > 1 } keys %ran;
    is_deeply(\@ran_twice, [], "$how: no command ran twice on one approval");
    is($ran{used1}, 1, "'used1' ran once, before the crash");
    is($ran{used2}, 1, "'used2' ran once, before the crash");
    ok(!$ran{pending}, "the pending approval's command never ran");
    ok(!$ran{denied}, "the denied approval's command never ran");
    # every 200 ran its command once, and nothing else ran
    my %want = map { $tag_of{$_} => 1 } keys %used;
    $want{$_} = 1 for qw(used1 used2);
    is_deeply([ sort keys %ran ], [ sort keys %want ],
              "$how: the commands that ran are exactly those whose approval was "
              . 'used (200): none without its approval');

    # ---- after the failover, on the new master
    for my $t (qw(used1 used2)) {
        ($st, $h, $b, $j) = consume($apr{$t}, $t);
        is($st, 403, "'$t', used before the crash, is refused after it");
        is($j->{state}, 'consumed', '... as consumed');
    }
    ($st, $h, $b, $j) = consume($apr{pending}, 'pending');
    is($st, 403, 'the pending approval is still not granted');
    is($j->{state}, 'pending', '... still pending');
    ($st, $h, $b, $j) = consume($apr{denied}, 'denied');
    is($st, 403, 'the denied approval is still refused');
    is($j->{state}, 'denied', '... still denied');
    # each "ready" approval once more, the same request: one used under
    # load is spent (on the new master too), one not used is usable once
    my ($spent, $usable, @wrong) = (0, 0);
    for my $i (0 .. $#ready) {
        ($st, $h, $b, $j) = consume($ready[$i], $rtags[$i]);
        if ($used{$ready[$i]}) {
            ($st == 403 && ($j->{state} // '') eq 'consumed')
                ? $spent++ : push @wrong, "$rtags[$i] used, then $st";
        } elsif ($st == 200 || ($st == 403
                                && ($j->{state} // '') eq 'consumed')) {
            $usable++;      # or spent by a consume whose answer was lost
        } else {
            push @wrong, "$rtags[$i] unused, then $st";
        }
    }
    is_deeply(\@wrong, [], "$how: every approval used under load is spent "
                           . 'after the failover, never usable again');
    ($st, $h, $b) = $n->request(GET => "/v1/sandboxes/$sb/files?path=log",
                                $agent);
    my %again;
    $again{$_}++ for split /\n/, $b;
    is_deeply([ grep { $again{$_} > 1 } keys %again ], [],
              "$how: and no command ran twice in the end");

    ($st) = $n->request(GET => '/v1/sandboxes', $doomed);
    is($st, 401, "$how: the revocation survived the failover");

    return ($old, $new);
}

my ($old, $new) = phase('crash', 'agent-2');
# ---- the old master comes back, empty (no persistence here): the
# sentinels make it a replica; the gateway never writes to it
$s->restart($old);
my ($role, $wrote_old) = ('', 0);
my $deadline = time + 30;
while (time < $deadline) {
    $role = eval { $s->client($old)->role->[0] } // '';
    last if $role eq 'slave';
    if ($role eq 'master') {
        my $id = ask('while-old-returns');
        # the key on the old master while it still says it is one: a
        # write made there (once it is a replica, it syncs the new
        # master's keys, this one included)
        my $there = $id && defined eval {
            $s->client($old)->hget("veto:{acme}:appr:$id", 'state') };
        my $still = eval { $s->client($old)->role->[0] } // '';
        $wrote_old++ if $there && $still eq 'master';
    }
    sleep 0.2;
}
is($wrote_old, 0, 'nothing was written to the restarted old master');
is($role, 'slave', 'the old master rejoined as a replica');
my $id = ask('after-rejoin');
ok($id, 'approvals work with the old master back as a replica');
($st) = $n->request(POST => "/v1/approvals/$id/approve", $rev, {});
is($st, 200, '... approved (WAIT confirmed)');
($st) = consume($id, 'after-rejoin');
is($st, 200, '... and used');
($st) = $n->request(GET => '/v1/sandboxes', $doomed);
is($st, 401, 'the revocation is still there');
($st) = $n->request(DELETE => "/v1/sandboxes/$sb", $agent);
is($st, 200, 'delete');


# ---- a planned switchover: the old master is up and keeps its replicas
# for a while; writes to it then would be lost (an approval consumed there
# usable again).  The gateway stops at the promotion.
$s->wait_healthy;
my ($old2, $new2) = phase('switchover', 'agent-3');
($st) = $n->request(DELETE => "/v1/sandboxes/$sb", $agent);
is($st, 200, 'delete');
like($n->error_log,
     qr/a replica of "veto" is being promoted: 127\.0\.0\.1:$old2 fenced off/,
     'switchover: the workers fenced the old master off at the promotion');

$n->stop;
my $log = $n->error_log;
unlike($log, qr/\[(alert|crit)\]/, 'no alert in the log');
like($log, qr/\+switch-master "veto" to 127\.0\.0\.1:$new/,
     'the workers heard +switch-master');
like($log, qr/\+switch-master "veto" to 127\.0\.0\.1:$new2/,
     '... both times');
$n->helper->leaks_ok('after the failover');

# a failure here is a timing story: tell it
unless (Test::More->builder->is_passing) {
    diag "the sentinels' and servers' events:\n" . $s->events;
    diag "the gateway's Redis lines:\n"
         . join('', grep { /redis/ && !/could not decide/ }
                    split /^/, $log);
}

done_testing;
