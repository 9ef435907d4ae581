#!/usr/bin/perl
# ngx_veto_sandbox_module under operation: one worker serves 20 slow execs
# at once without blocking, the helper going away and coming back, and
# "nginx -s reload" with a changed policy.

use strict;
use warnings;

use Test::More;
use POSIX qw(_exit);
use Time::HiRes qw(time sleep);
use lib 't/lib';
use VetoNginx;
use Eventually qw(eventually);

VetoNginx::need(qw(helper));

my $n = VetoNginx->new;
$n->start_helper(max_execs_per_sandbox => 24);
$n->start(workers => 1);

my $t = $n->token;
my ($st, $h, $b, $j);

# ---- the worker is never blocked: 20 concurrent "sleep 1" execs
{
    my @ids;
    for (1 .. 3) {
        ($st, $h, $b, $j) = $n->request(POST => '/v1/sandboxes', $t, {});
        is($st, 201, "create sandbox $_") or diag $b;
        push @ids, $j->{id};
    }

    my $t0 = time;
    my @kids;
    for my $i (0 .. 19) {
        my $pid = fork() // die "fork: $!";
        if ($pid == 0) {
            my ($s, undef, undef, $r) = $n->request(POST =>
                "/v1/sandboxes/$ids[$i % 3]/exec", $t,
                { argv => ['sleep', '1'], timeout_s => 20 });
            _exit(($s == 200 && defined $r->{exit_code} && $r->{exit_code} == 0)
                  ? 0 : 1);
        }
        push @kids, $pid;
    }

    # while they run, cheap requests answer at once
    sleep 0.3;    # on purpose: the slow execs are under way
    my $c0 = time;
    ($st) = $n->request(GET => '/plain');
    my $plain = time - $c0;
    $c0 = time;
    my ($lst) = $n->request(GET => '/v1/sandboxes', $t);
    my $list = time - $c0;
    is($st, 200, 'a plain request during the execs');
    ok($plain < 1, sprintf('answered in %.3f s (< 1 s)', $plain));
    is($lst, 200, 'an API request during the execs');
    ok($list < 1, sprintf('answered in %.3f s (< 1 s)', $list));

    my $fails = 0;
    for my $pid (@kids) {
        waitpid($pid, 0);
        $fails++ if $?;
    }
    my $total = time - $t0;
    is($fails, 0, '20 concurrent execs all succeeded');
    ok($total < 8, sprintf('20 x sleep 1 took %.2f s in total (< 8 s; '
                           . 'sequential would be 20 s)', $total));

    for my $id (@ids) {
        ($st) = $n->request(DELETE => "/v1/sandboxes/$id", $t);
        is($st, 200, "delete $id");
    }
}

# ---- helper down -> 503, helper back -> service resumes, same nginx
{
    my $master = $n->master_pid;
    $n->helper->stop;

    ($st, $h, $b, $j) = $n->request(GET => '/v1/sandboxes', $t);
    is($st, 503, 'helper stopped: 503');
    like($h->{'content-type'}, qr/problem\+json/, '503 is problem+json');
    ($st) = $n->request(GET => '/v1/health');
    is($st, 503, 'health reports the helper down');
    ($st) = $n->request(GET => '/plain');
    is($st, 200, 'nginx itself stays up');

    $n->helper->launch;

    ($st, $h, $b, $j) = $n->request(GET => '/v1/sandboxes', $t);
    is($st, 200, 'helper restarted: requests succeed again') or diag $b;
    ($st) = $n->request(GET => '/v1/health');
    is($st, 200, 'health is back');
    is($n->master_pid, $master, 'no nginx restart was needed');
}

# ---- reload with a changed policy; sandboxes survive the reload
{
    ($st, $h, $b, $j) = $n->request(POST => '/v1/sandboxes', $t,
                                    { limits => { memory_mb => 256 } });
    is($st, 201, 'memory 256 allowed by the first policy');
    my $id = $j->{id};

    my $p = VetoNginx::default_policy();
    $p->{tenants}{acme}{ceilings}{memory_mb} = 200;
    $p->{tenants}{acme}{defaults}{memory_mb} = 100;
    $p->{tenants}{acme}{agents}{'agent-small'}{ceilings}{memory_mb} = 64;
    $n->write_policy($p);
    $n->reload;

    ($st, $h, $b, $j) = $n->request(POST => '/v1/sandboxes', $t,
                                    { limits => { memory_mb => 256 } });
    is($st, 422, 'after reload the new ceiling applies');
    is($j->{ceiling}, 200, 'the new ceiling is named');

    ($st, $h, $b, $j) = $n->request(GET => "/v1/sandboxes/$id", $t);
    is($st, 200, 'the sandbox created before the reload survives');
    ($st, $h, $b, $j) = $n->request(POST => "/v1/sandboxes/$id/exec", $t,
                                    { argv => ['echo', 'still here'] });
    is($j->{stdout}, "still here\n", 'and still runs commands');
    ($st) = $n->request(DELETE => "/v1/sandboxes/$id", $t);
    is($st, 200, 'delete it');

    # a bad policy is refused by reload; the old config keeps serving
    $n->write_policy('{"version": 1, "tenants": {"acme": {"ceilings": 5}}}');
    my ($ok, $out) = $n->test_config;
    ok(!$ok, 'nginx -t refuses the bad policy');
    like($out, qr/tenants\.acme: "ceilings" must be an object/, 'naming the field');
    kill 'HUP', $n->master_pid;
    sleep 1;    # on purpose: time for a wrong reload
    ($st, $h, $b, $j) = $n->request(POST => '/v1/sandboxes', $t,
                                    { limits => { memory_mb => 256 } });
    is($st, 422, 'the previous good policy is still in force');
}

# ---- a client that gives up cancels its exec in the helper
{
    ($st, $h, $b, $j) = $n->request(POST => '/v1/sandboxes', $t, {});
    my $id = $j->{id};
    is($n->abandon_exec($id, $t), 599, 'client gave up after 1 s');
    my $running = $n->execs_running_settled($id, $t);
    is($running, 0, "the abandoned exec was cancelled, not left running");
    $n->request(DELETE => "/v1/sandboxes/$id", $t);
}

# ---- a reload invalidates cached verifications (new keys, new epoch)
{
    my $hs = $n->token(alg => 'HS256');
    ($st) = $n->request(GET => '/v1/sandboxes', $hs);
    is($st, 200, 'HS256 token accepted (and cached)');
    ($st) = $n->request(GET => '/v1/sandboxes', $hs);
    is($st, 200, 'accepted again from the cache');
    $n->write_policy(VetoNginx::default_policy());
    my $veto = join "\n", grep { !/jwt_key hs-1/ } split /\n/, $n->default_veto;
    $n->render(veto => $veto);
    $n->reload;
    ($st) = $n->request(GET => '/v1/sandboxes', $hs);
    is($st, 401, 'after the HMAC key is removed the cached token is refused');
}

my @bad = grep { /\[(alert|emerg)\]|exited on signal/ && !/veto_sandbox_policy/ }
          split /\n/, $n->error_log;
is_deeply(\@bad, [], 'no alerts or crashes (beyond the refused policy)');

done_testing;
