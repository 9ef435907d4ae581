#!/usr/bin/perl
# Prometheus metrics through nginx (veto_sandbox_metrics): every scrape
# passes "promtool check metrics"; the counters move as requests happen
# (routes and decisions, approvals by state, helper and exec latency, the
# token cache, Redis and helper errors) and are shared by the workers; the
# helper's own figures come from its stats op, and a scrape still answers
# with the helper slow, stopped or answering garbage (up 0); two scrapes
# at once share the worker's pipe under request ids of their own, so that
# a helper answering them crossed is caught (up 0); allow/deny
# restrict the location; nginx -t refuses a metrics location it could not
# serve.  Real nginx (two workers), Redis and helper; a fake helper on a
# unix socket for the garbage and for exec results with network attempts.

use strict;
use warnings;

use Test::More;
use lib 't/lib';
use VetoNginx;
use Eventually qw(eventually);
use HTTP::Tiny;
use IO::Socket::UNIX;
use POSIX qw(_exit);
use Time::HiRes qw(time sleep);

VetoNginx::need(qw(helper redis));
die "promtool is not installed (Debian's prometheus package: "
    . "scripts/install-deps.sh test)\n"
    unless system('promtool --version >/dev/null 2>&1') == 0;

my $policy = {
    version => 1,
    tenants => {
        acme => {
            ceilings => { memory_mb => 512, timeout_s => 30, ttl_s => 3600 },
            approvals => { exec_argv => ['sh -c *'] },
            agents => {
                'agent-fast' => { approvals => { exec_argv => ['sh -c *'],
                                                 ttl_s => 1 } },
            },
        },
        initech => {
            ceilings => { memory_mb => 512, timeout_s => 30 },
            approvals => { always => ['sandbox.exec'], threshold => 2 },
        },
        # no timeout ceiling: an exec without timeout_s runs up to the
        # sandbox's own, which the gateway waits for up to the helper's
        # ceiling; a sandbox quota: a create asks the helper's epoch
        globex => { ceilings => { memory_mb => 512 },
                    quotas => { concurrent_sandboxes => 50 } },
    },
};

my $METRICS = <<'EOF';
        location = /metrics {
            veto_sandbox_metrics;
            allow 127.0.0.1;
            deny all;
        }
EOF

# ---- nginx -t: what a metrics location cannot be
{
    my $c = VetoNginx->new;
    $c->write_policy($policy);
    $c->render(server_extra => "location /v1/metrics { veto_sandbox_metrics; }");
    my ($ok, $out) = $c->test_config;
    ok(!$ok, 'nginx -t: a metrics location under the API prefix fails');
    like($out, qr/"veto_sandbox_metrics" location "\/v1\/metrics" is under/,
         'the message says why');

    my $port = VetoNginx::free_port();
    $c->render(http_extra => "server { listen 127.0.0.1:$port; "
                             . "location = /metrics { veto_sandbox_metrics; } }");
    ($ok, $out) = $c->test_config;
    ok(!$ok, 'nginx -t: a server with metrics and no helper fails');
    like($out, qr/"veto_sandbox_metrics" requires "veto_sandbox_helper"/,
         'the message names the directive');

    $c->render(server_extra => "location = /metrics { veto_sandbox_metrics; "
                               . "veto_sandbox_metrics; }");
    ($ok, $out) = $c->test_config;
    ok(!$ok, 'nginx -t: twice in a location fails');

    $c->render(server_extra => "location = /metrics { veto_sandbox_metrics; } "
                               . "veto_sandbox_metrics_helper_timeout 0;");
    ($ok, $out) = $c->test_config;
    ok(!$ok, 'nginx -t: a zero helper timeout fails');
    like($out, qr/"veto_sandbox_metrics_helper_timeout" must be positive/,
         'naming the directive');

    $c->write_policy(VetoNginx::default_policy());
    $c->render(server_extra => "location = /metrics { veto_sandbox_metrics; }");
    ($ok, $out) = $c->test_config;
    ok($ok, 'nginx -t: a metrics location outside the API passes') or diag $out;
}

my $n = VetoNginx->new;
$n->start_redis;
$n->start_helper;
$n->start(redis => 1, workers => 2, policy => $policy,
          server_extra => $METRICS
                          . 'veto_sandbox_metrics_helper_timeout 500ms;');

sub scrape
{
    my ($inst, %o) = @_;
    my $ua = HTTP::Tiny->new(timeout => 10, keep_alive => 0,
                             $o{from} ? (local_address => $o{from}) : ());
    my $t0 = time;
    my $res = $ua->request($o{method} // 'GET', $inst->url('/metrics'));
    return ($res, time - $t0);
}

# name{labels} => value of every sample
sub samples
{
    my ($text) = @_;
    my %m;
    for my $l (split /\n/, $text) {
        next if $l =~ /^#/ || $l eq '';
        my ($k, $v) = $l =~ /^(\S+(?:\{.*\})?) (\S+)$/ or next;
        $m{$k} = $v;
    }
    return \%m;
}

sub metrics
{
    my ($inst) = @_;
    my ($res) = scrape($inst || $n);
    return samples($res->{content});
}

my $checked = 0;

sub promtool_ok
{
    my ($text, $name) = @_;
    my $f = $n->dir . '/scrape-' . ++$checked . '.txt';
    VetoNginx::spew($f, $text);
    my $out = `promtool check metrics < $f 2>&1`;
    is($?, 0, "$name: promtool check metrics passes") or diag $out;
}

sub v { $_[0]{$_[1]} // 0 }

# waits until the counter key has moved by at least want from base (the
# count is taken in the log phase, after the reply), then says whether
# it moved by exactly want
sub moved
{
    my ($key, $base, $want, $name) = @_;
    my $m;
    eventually("$key moves by $want", 3, sub {
        $m = metrics();
        v($m, $key) - v($base, $key) >= $want;
    });
    sleep 0.1;    # on purpose: a count past $want would show by now
    $m = metrics();
    local $Test::Builder::Level = $Test::Builder::Level + 1;
    is(v($m, $key) - v($base, $key), $want, "$name: $key +$want");
    return $m;
}

my $rq = sub { sprintf('veto_sandbox_requests_total{route="%s",decision="%s"}', @_) };
my $apr = sub { qq(veto_sandbox_approvals_total{state="$_[0]"}) };
my $hcount = sub { qq(veto_sandbox_helper_request_duration_seconds_count{op="$_[0]"}) };

my $agent = $n->token(sub => 'agent-1');
my $rev = $n->token(sub => 'reviewer-1', scope => 'approvals:review');
my $rev2 = $n->token(sub => 'reviewer-2', scope => 'approvals:review');
my ($st, $h, $b, $j);
eventually('the gateway serves (Redis connected)', 10, sub {
    ($st) = $n->request(GET => '/v1/sandboxes', $agent);
    $st == 200;
});
is($st, 200, 'the gateway answers');

# ---- a scrape: format, headers, the helper's figures
my ($res) = scrape($n);
is($res->{status}, 200, 'scrape: 200');
is($res->{headers}{'content-type'}, 'text/plain; version=0.0.4; charset=utf-8',
   'the text exposition format');
promtool_ok($res->{content}, 'first scrape');
my $m = samples($res->{content});
is(v($m, 'veto_sandbox_helper_up'), 1, 'helper up');
is(v($m, 'veto_sandbox_redis_up'), 1, 'redis up');
is(v($m, 'veto_sandbox_sandboxes'), 0, 'no sandbox yet');
is(v($m, 'veto_sandbox_sandboxes_max'), $n->helper->cf('max_sandboxes') // 16,
   "the helper's max_sandboxes");
ok(v($m, 'veto_sandbox_helper_buffer_limit_bytes') > 0, 'the buffer budget');
ok(exists $m->{'veto_sandbox_egress_proxy_state{state="off"}'},
   'the egress proxy state');
for my $s (qw(created approved denied expired consumed)) {
    ok(exists $m->{$apr->($s)}, "approvals{state=$s} is there from the start");
}
unlike($res->{content}, qr/[^\x20-\x7e\n]/, 'only printable ASCII');
unlike($res->{content}, qr/^veto_sandbox_webhook_/m,
       'no webhook configured: no webhook series (t/approval/webhooks.t has them)');

($res) = scrape($n, method => 'HEAD');
is($res->{status}, 200, 'HEAD: 200');
is($res->{content} // '', '', 'HEAD: no body');
($res) = scrape($n, method => 'POST');
is($res->{status}, 405, 'POST: 405');

# ---- allow/deny: another loopback address is refused
($res) = scrape($n, from => '127.0.0.2');
is($res->{status}, 403, 'scrape from 127.0.0.2: 403 (deny all)');
unlike($res->{content} // '', qr/veto_sandbox_/, 'and no figures');

# ---- an exec whose timeout is the sandbox's own: the gateway learns the
# helper's ceiling with one ping, then each worker keeps it (two workers
# here), and the create's epoch ping has told its worker already: six
# such execs, at most one ping (the other worker's; without the record:
# six)
{
    my $g = $n->token(sub => 'agent-g', tenant => 'globex');
    my $m0 = metrics();
    my ($gs, $gh, $gb, $gj) = $n->request(POST => '/v1/sandboxes', $g, {});
    is($gs, 201, 'globex: a sandbox') or diag $gb;
    my $sid = $gj->{id};
    my $pings = $hcount->('ping');
    # the create's own helper exchanges (its epoch ping among them) are
    # counted by its log phase, after the reply: wait for that first
    my $before = moved($rq->('sandbox.create', 'allow'), $m0, 1,
                       'globex: the create');
    for my $i (1 .. 6) {
        ($gs, $gh, $gb) = $n->request(POST => "/v1/sandboxes/$sid/exec",
                                      $g, { argv => ['true'] });
        is($gs, 200, "globex: exec $i without timeout_s") or diag $gb;
    }
    my $after = moved($hcount->('exec'), $before, 6, 'six execs');
    cmp_ok(v($after, $pings) - v($before, $pings), '<=', 1,
           "the helper's ceiling asked at most once for six execs (the "
           . "worker of the create heard it with its epoch)")
        or diag "pings: " . v($before, $pings) . ' -> ' . v($after, $pings);
    ($gs) = $n->request(DELETE => "/v1/sandboxes/$sid", $g);
    is($gs, 200, 'globex: its sandbox deleted');
}

# ---- requests by route and decision, the token cache
$m = metrics();
my $fresh = $n->token(sub => 'agent-1', jti => 'fresh-1');
($st) = $n->request(GET => '/v1/sandboxes', $fresh);
is($st, 200, 'a list');
$m = moved($rq->('sandbox.list', 'allow'), $m, 1, 'a list');
my $base = $m;
($st) = $n->request(GET => '/v1/sandboxes', $fresh);
$m = moved($rq->('sandbox.list', 'allow'), $base, 1, 'the same token again');
is(v($m, 'veto_sandbox_jwt_cache_lookups_total{result="hit"}')
   - v($base, 'veto_sandbox_jwt_cache_lookups_total{result="hit"}'), 1,
   'the same token again: a cache hit');

$base = $m;
($st) = $n->request(GET => '/v1/sandboxes');
is($st, 401, 'no token: 401');
moved($rq->('sandbox.list', 'deny:no_token'), $base, 1, 'no token');

$base = metrics();
my $exec_only = $n->token(sub => 'agent-1', scope => 'sandbox:exec');
($st) = $n->request(POST => '/v1/sandboxes', $exec_only, {});
is($st, 403, 'no create scope: 403');
moved($rq->('sandbox.create', 'deny:insufficient_scope'), $base, 1,
      'insufficient scope');

# one series for every URI no row takes: a client cannot make series
$base = metrics();
for my $i (1 .. 30) {
    ($st) = $n->request(GET => "/v1/no-such-thing-$i", $agent);
}
is($st, 404, 'no such resource: 404');
$m = moved($rq->('unmatched', 'none'), $base, 30, '30 unknown URIs');
is(scalar(grep { /no-such-thing/ } keys %$m), 0, 'no series names a URI');

# ---- create, exec, the helper's gauges
$base = metrics();
($st, $h, $b, $j) = $n->request(POST => '/v1/sandboxes', $agent, {});
is($st, 201, 'create') or diag $b;
my $sb = $j->{id};
$m = moved($rq->('sandbox.create', 'allow'), $base, 1, 'create');
is(v($m, $hcount->('create')) - v($base, $hcount->('create')), 1,
   'one helper create observed');
is(v($m, 'veto_sandbox_sandboxes'), 1, 'one sandbox live');

$base = $m;
($st, $h, $b) = $n->request(POST => "/v1/sandboxes/$sb/exec", $agent,
                            { argv => ['sleep', '0.3'] });
is($st, 200, 'exec') or diag $b;
$m = moved($rq->('sandbox.exec', 'allow'), $base, 1, 'exec');
is(v($m, 'veto_sandbox_exec_duration_seconds_count')
   - v($base, 'veto_sandbox_exec_duration_seconds_count'), 1, 'one exec observed');
ok(v($m, 'veto_sandbox_exec_duration_seconds_sum')
   - v($base, 'veto_sandbox_exec_duration_seconds_sum') >= 0.3,
   'its wall time is in the sum');
is(v($m, 'veto_sandbox_exec_duration_seconds_bucket{le="0.25"}')
   - v($base, 'veto_sandbox_exec_duration_seconds_bucket{le="0.25"}'), 0,
   'not in the 0.25 s bucket');
is(v($m, 'veto_sandbox_exec_duration_seconds_bucket{le="+Inf"}'),
   v($m, 'veto_sandbox_exec_duration_seconds_count'), '+Inf equals _count');

# an exec running now is in the helper's figures
my $pid = fork();
die "fork: $!" unless defined $pid;
if ($pid == 0) {
    $n->request(POST => "/v1/sandboxes/$sb/exec", $agent,
                { argv => ['sleep', '2'] });
    _exit(0);
}
my $running = 0;
eventually('the scrape counts a running exec', 5, sub {
    $running = v(metrics(), 'veto_sandbox_execs_running');
    $running;
});
is($running, 1, 'execs running: 1 while it runs');
waitpid $pid, 0;
is(v(metrics(), 'veto_sandbox_execs_running'), 0, 'and 0 after');

($st) = $n->request(DELETE => "/v1/sandboxes/$sb", $agent);
is($st, 200, 'delete');
is(v(metrics(), 'veto_sandbox_sandboxes'), 0, 'no sandbox live');

# ---- approvals by state
($st, $h, $b, $j) = $n->request(POST => '/v1/sandboxes', $agent, {});
$sb = $j->{id};
my $ask = { argv => ['sh', '-c', 'echo asked'], timeout_s => 10 };

$base = metrics();
($st, $h, $b, $j) = $n->request(POST => "/v1/sandboxes/$sb/exec", $agent, $ask);
is($st, 202, 'exec needing approval: 202') or diag $b;
my $id = $j->{approval_id};
$m = moved($apr->('created'), $base, 1, 'an approval asked for');
is(v($m, $rq->('sandbox.exec', 'approval_required'))
   - v($base, $rq->('sandbox.exec', 'approval_required')), 1,
   'decision approval_required');

$base = $m;
($st) = $n->request(POST => "/v1/approvals/$id/approve", $rev, '');
is($st, 200, 'approved');
moved($apr->('approved'), $base, 1, 'approve');

$base = metrics();
($st, $h, $b) = $n->request(POST => "/v1/sandboxes/$sb/exec", $agent, $ask,
                            { 'Veto-Approval' => $id });
is($st, 200, 'the approved exec runs') or diag $b;
$m = moved($apr->('consumed'), $base, 1, 'the approval used');
is(v($m, $rq->('sandbox.exec', 'allow:approved'))
   - v($base, $rq->('sandbox.exec', 'allow:approved')), 1,
   'decision allow:approved');

($st, $h, $b, $j) = $n->request(POST => "/v1/sandboxes/$sb/exec", $agent, $ask);
$id = $j->{approval_id};
$base = metrics();
($st) = $n->request(POST => "/v1/approvals/$id/deny", $rev, { reason => 'no' });
is($st, 200, 'denied');
moved($apr->('denied'), $base, 1, 'deny');

my $fast = $n->token(sub => 'agent-fast');
($st, $h, $b, $j) = $n->request(POST => '/v1/sandboxes', $fast, {});
my $sbf = $j->{id};
($st, $h, $b, $j) = $n->request(POST => "/v1/sandboxes/$sbf/exec", $fast, $ask);
is($st, 202, 'an approval that lives 1 s');
$id = $j->{approval_id};
sleep 1.3;    # on purpose: past the approval's ttl of 1 s
$base = metrics();
($st, $h, $b, $j) = $n->request(GET => "/v1/approvals/$id", $rev);
is($j->{state}, 'expired', 'it expired');
moved($apr->('expired'), $base, 1, 'expiry');

# threshold 2: approved once, when the second reviewer approves
my $ini = $n->token(sub => 'agent-i', tenant => 'initech');
my $irev = $n->token(sub => 'rev-i1', tenant => 'initech', scope => 'approvals:review');
my $irev2 = $n->token(sub => 'rev-i2', tenant => 'initech', scope => 'approvals:review');
($st, $h, $b, $j) = $n->request(POST => '/v1/sandboxes', $ini, {});
my $sbi = $j->{id};
($st, $h, $b, $j) = $n->request(POST => "/v1/sandboxes/$sbi/exec", $ini,
                                { argv => ['true'] });
is($st, 202, 'threshold 2: 202');
$id = $j->{approval_id};
$base = metrics();
($st, $h, $b, $j) = $n->request(POST => "/v1/approvals/$id/approve", $irev, '');
is($j->{state}, 'pending', 'one of two: pending');
sleep 0.2;    # on purpose: time for a wrong count to show
is(v(metrics(), $apr->('approved')) - v($base, $apr->('approved')), 0,
   'one approval of two is not an approved approval');
($st, $h, $b, $j) = $n->request(POST => "/v1/approvals/$id/approve", $irev2, '');
is($j->{state}, 'approved', 'two of two: approved');
moved($apr->('approved'), $base, 1, 'threshold met');

# ---- the counts are the zone's, not a worker's: many connections, two
# workers, one total
my @pids = $n->worker_pids;
is(scalar @pids, 2, 'two workers');
$base = metrics();
for (1 .. 40) {
    $n->request(GET => '/v1/sandboxes', $agent);
}
moved($rq->('sandbox.list', 'allow'), $base, 40, '40 lists over two workers');
my %seen;
for (1 .. 20) {
    my ($r2) = scrape($n);
    $seen{ v(samples($r2->{content}), $rq->('sandbox.list', 'allow')) }++;
}
is(scalar keys %seen, 1, 'every scrape, whichever worker answers, says the same');

# ---- a reload keeps the counts (the zone is reused)
$base = metrics();
$n->reload;
$m = metrics();
is(v($m, $rq->('sandbox.list', 'allow')), v($base, $rq->('sandbox.list', 'allow')),
   'after a reload the counters go on');
is(v($m, $apr->('created')), v($base, $apr->('created')), 'approvals too');

# ---- Redis errors, and Redis up
$base = metrics();
$n->stop_redis;
($st) = $n->request(POST => "/v1/sandboxes/$sb/exec", $agent, { argv => ['true'] });
is($st, 503, 'Redis down: 503');
$m = metrics();
ok(v($m, 'veto_sandbox_redis_errors_total{kind="unavailable"}')
   + v($m, 'veto_sandbox_redis_errors_total{kind="connection_lost"}')
   > v($base, 'veto_sandbox_redis_errors_total{kind="unavailable"}')
     + v($base, 'veto_sandbox_redis_errors_total{kind="connection_lost"}'),
   'Redis errors counted');
is(v($m, 'veto_sandbox_redis_up'), 0, 'redis up: 0');
moved($rq->('sandbox.exec', 'deny:redis_unavailable'), $base, 1, 'fail closed');
promtool_ok((scrape($n))[0]{content}, 'scrape with Redis down');
$n->start_redis;
my $up = 0;
eventually('the gateway serves and the scrape says Redis is up', 10, sub {
    ($st) = $n->request(GET => '/v1/sandboxes', $agent);
    $up = v(metrics(), 'veto_sandbox_redis_up');
    $st == 200 && $up;
});
is($up, 1, 'redis up: 1 again');
ok(v(metrics(), 'veto_sandbox_redis_errors_total{kind="reconnect"}') > 0,
   'reconnects counted');

# ---- a helper too slow for a scrape: up 0 within the scrape timeout
$base = metrics();
kill 'STOP', $n->helper->pid;
my $took;
($res, $took) = scrape($n);
kill 'CONT', $n->helper->pid;
is($res->{status}, 200, 'helper stalled: the scrape answers');
ok($took < 3, sprintf('within the 500 ms helper timeout (%.2f s)', $took));
$m = samples($res->{content});
is(v($m, 'veto_sandbox_helper_up'), 0, 'helper up: 0');
ok(!exists $m->{veto_sandbox_sandboxes}, "no helper figure it did not give");
promtool_ok($res->{content}, 'scrape with the helper stalled');
is(v($m, 'veto_sandbox_helper_errors_total{kind="timeout"}')
   - v($base, 'veto_sandbox_helper_errors_total{kind="timeout"}'), 1,
   'a helper timeout counted');
is(v(metrics(), 'veto_sandbox_helper_up'), 1, 'and up again once it runs');

# ---- the helper stopped
$n->request(DELETE => "/v1/sandboxes/$sb", $agent);
$n->request(DELETE => "/v1/sandboxes/$sbf", $fast);
$n->request(DELETE => "/v1/sandboxes/$sbi", $ini);
$n->helper->stop;
$base = metrics();
($st) = $n->request(GET => '/v1/sandboxes', $agent);
is($st, 503, 'helper stopped: 503');
($res) = scrape($n);
is($res->{status}, 200, 'helper stopped: the scrape answers');
$m = samples($res->{content});
is(v($m, 'veto_sandbox_helper_up'), 0, 'helper up: 0');
ok(v($m, 'veto_sandbox_helper_errors_total{kind="connect"}')
   - v($base, 'veto_sandbox_helper_errors_total{kind="connect"}') >= 2,
   'connect errors counted (the request and the scrape)');
ok(v($m, $rq->('sandbox.list', 'allow')) > 0, "the gateway's counters are all there");
promtool_ok($res->{content}, 'scrape with the helper stopped');

# ---- a helper answering garbage, and exec results with network attempts
# (a fake helper: the gateway's parsing is under test)
my $f = VetoNginx->new;
my $sock = $f->dir . '/fake-helper.sock';
my $srv = IO::Socket::UNIX->new(Local => $sock, Listen => 16)
    or die "listen $sock: $!";
my $fpid = fork();
die "fork: $!" unless defined $fpid;
if ($fpid == 0) {
    # a reply echoes the request's request_id, as the helper's do (the
    # worker checks it on its pipelined connection)
    my $rid;
    my $frame = sub {
        my ($json) = @_;
        $json =~ s/^\{/{"request_id":"$rid",/ if defined $rid;
        return 'VSB1' . pack('NN', length $json, 0) . $json;
    };
    while (my $c = $srv->accept) {
        my $hdr = '';
        while (length $hdr < 12) {
            sysread($c, $hdr, 12 - length $hdr, length $hdr) or last;
        }
        my ($jl, $pl) = unpack('NN', substr($hdr, 4, 8));
        my $body = '';
        while (length $body < $jl + $pl) {
            sysread($c, $body, $jl + $pl - length $body, length $body) or last;
        }
        ($rid) = $body =~ /"request_id":"([^"\\]*)"/;
        if ($body =~ /"op":"stats"/) {
            syswrite($c, $frame->('{"ok":true,"sandboxes":-5,"execs_running":"many",'
                . '"teardowns_failed":1e300,"uptime_s":1.5,'
                . '"connections":null,"buffered_bytes":[],'
                . '"egress":{"available":"yes","restarts":-1,'
                . '"state":"we\\"ird\\\\\\nstate"}}'));
        } elsif ($body =~ /"op":"exec"/) {
            syswrite($c, $frame->('{"ok":true,"exit_code":0,"signal":null,'
                . '"timed_out":false,"oom_killed":false,"stdout_len":0,'
                . '"stderr_len":0,"usage":{"wall_ms":1500},"network":'
                . '{"attempts":[{"decision":"allowed"},{"decision":"allowed"},'
                . '{"decision":"refused"},{"decision":"error"},'
                . '{"decision":"made\\"up"},{"host":"x"}],'
                . '"dropped":3,"complete":false}}'));
        } else {
            syswrite($c, $frame->('{"ok":false,"error":"internal","detail":"x"}'));
        }
        close $c;
    }
    _exit(0);
}
close $srv;
$f->{helper_sock} = $sock;
$f->start(server_extra => $METRICS,
          veto => $f->default_veto . "veto_sandbox_mcp on;\n"
                  . "veto_sandbox_mcp_sessions zone=veto_mcp:1m;\n");
my $ft = $f->token(sub => 'agent-1');
($res) = scrape($f);
is($res->{status}, 200, 'garbage stats: the scrape answers');
promtool_ok($res->{content}, 'garbage stats');
$m = samples($res->{content});
is(v($m, 'veto_sandbox_helper_up'), 1, 'the helper answered');
for my $g (qw(veto_sandbox_sandboxes veto_sandbox_execs_running
              veto_sandbox_teardowns_failed veto_sandbox_helper_uptime_seconds
              veto_sandbox_helper_connections veto_sandbox_helper_buffered_bytes
              veto_sandbox_egress_proxy_restarts_total)) {
    ok(!exists $m->{$g}, "$g: left out, not made up");
}
is(v($m, 'veto_sandbox_egress_proxy_up'), 0, '"available": "yes" is not true');
is(scalar(grep { /^veto_sandbox_egress_proxy_state\{/ && $m->{$_} == 1 } keys %$m),
   1, 'one egress state is current');
like($res->{content}, qr/^veto_sandbox_egress_proxy_state\{state="we\\"ird\\\\\\nstate"\} 1$/m,
     'an unknown state, escaped');

$base = $m;
my $fake_sb = 'sb-' . ('a' x 24);
($st, $h, $b) = $f->request(POST => "/v1/sandboxes/$fake_sb/exec", $ft,
                            { argv => ['true'] });
is($st, 200, 'an exec result with network attempts') or diag $b;
sleep 0.2;    # counts are taken in the log phase
$m = metrics($f);
my $eg = sub { qq(veto_sandbox_egress_attempts_total{outcome="$_[0]"}) };
is(v($m, $eg->('allowed')) - v($base, $eg->('allowed')), 2, 'egress: 2 allowed');
is(v($m, $eg->('refused')) - v($base, $eg->('refused')), 1, 'egress: 1 refused');
is(v($m, $eg->('error')) - v($base, $eg->('error')), 1, 'egress: 1 error');
is(v($m, $eg->('unlisted')) - v($base, $eg->('unlisted')), 3,
   'egress: 3 dropped from the list');
is(scalar(grep { /made/ } keys %$m), 0, 'a decision it does not know is no series');
is(v($m, 'veto_sandbox_exec_duration_seconds_sum'), 1.5, 'the wall time: 1.5 s');
is(v($m, 'veto_sandbox_exec_duration_seconds_bucket{le="1"}'), 0, 'not under 1 s');
is(v($m, 'veto_sandbox_exec_duration_seconds_bucket{le="2.5"}'), 1, 'under 2.5 s');

$base = $m;
($st) = $f->request(GET => '/v1/sandboxes', $ft);
is($st, 500, "the helper's internal error: 500");
sleep 0.2;    # counts are taken in the log phase
$m = metrics($f);
is(v($m, 'veto_sandbox_helper_errors_total{kind="internal"}')
   - v($base, 'veto_sandbox_helper_errors_total{kind="internal"}'), 1,
   "the helper's own error counted by name");
promtool_ok((scrape($f))[0]{content}, 'after the errors');

# an MCP message that is no tool call is route "mcp", not unmatched
$base = metrics($f);
my $res_mcp = HTTP::Tiny->new(timeout => 10, keep_alive => 0)->request(
    POST => $f->url('/v1/mcp'),
    { headers => { Authorization => "Bearer $ft",
                   'Content-Type' => 'application/json',
                   Accept => 'application/json, text/event-stream' },
      content => '{"jsonrpc":"2.0","id":1,"method":"initialize","params":'
                 . '{"protocolVersion":"2025-11-25","capabilities":{},'
                 . '"clientInfo":{"name":"t","version":"1"}}}' });
is($res_mcp->{status}, 200, 'MCP initialize') or diag $res_mcp->{content};
sleep 0.2;    # counts are taken in the log phase
$m = metrics($f);
is(scalar(grep { /route="mcp"/ && $m->{$_} - v($base, $_) == 1 } keys %$m), 1,
   'counted as route mcp');

kill 'KILL', $fpid;
waitpid $fpid, 0;
$f->stop;

# ---- two scrapes at once share the worker's pipe (stats is answered at
# once, VSB_OPS_AT_ONCE), each under a request_id of its own: a helper
# that answers them crossed (each reply echoing its own request's id) is
# caught, and no scrape shows the other's figures (with one fixed id for
# every scrape, the crossed replies passed as each other's)
{
    my $x = VetoNginx->new;
    my $xsock = $x->dir . '/crossing-helper.sock';
    my $seen = $x->dir . '/crossing-seen';
    my $xsrv = IO::Socket::UNIX->new(Local => $xsock, Listen => 16)
        or die "listen $xsock: $!";
    my $xpid = fork() // die "fork: $!";
    if ($xpid == 0) {
        my $read_frame = sub {
            my ($c, $wait) = @_;
            my $rin = '';
            vec($rin, fileno($c), 1) = 1;
            return undef unless select(my $rout = $rin, undef, undef, $wait);
            my $hdr = '';
            while (length $hdr < 12) {
                sysread($c, $hdr, 12 - length $hdr, length $hdr) or return undef;
            }
            my ($jl, $pl) = unpack('NN', substr($hdr, 4, 8));
            my $body = '';
            while (length $body < $jl + $pl) {
                sysread($c, $body, $jl + $pl - length $body, length $body)
                    or return undef;
            }
            return $body;
        };
        while (my $c = $xsrv->accept) {
            # the first frame, then a second one on the same connection
            # (the other scrape, pipelined) within 5 s
            my @rids;
            for my $wait (30, 5) {
                my $body = $read_frame->($c, $wait) // last;
                my ($rid) = $body =~ /"request_id":"([^"\\]*)"/;
                push @rids, $rid // '';
            }
            open(my $fh, '>>', $seen) or die "$seen: $!";
            print $fh join(' ', scalar(@rids), @rids), "\n";
            close $fh;
            # crossed: the second's reply first; each names how many
            # sandboxes by its place, 1 or 2
            for my $i (reverse 0 .. $#rids) {
                my $json = qq({"request_id":"$rids[$i]","ok":true,"sandboxes":)
                           . ($i + 1) . '}';
                syswrite($c, 'VSB1' . pack('NN', length $json, 0) . $json);
            }
            close $c;
        }
        _exit(0);
    }
    close $xsrv;
    $x->{helper_sock} = $xsock;
    $x->start(server_extra => $METRICS
                              . 'veto_sandbox_metrics_helper_timeout 15s;');
    my @kids;
    for my $k (1 .. 2) {
        pipe(my $rd, my $wr) or die "pipe: $!";
        my $pid = fork() // die "fork: $!";
        if ($pid == 0) {
            close $rd;
            my ($res) = scrape($x);
            my $m = samples($res->{content} // '');
            print $wr join(' ', $res->{status}, v($m, 'veto_sandbox_helper_up'),
                           $m->{veto_sandbox_sandboxes} // 'none'), "\n";
            close $wr;
            _exit(0);
        }
        close $wr;
        push @kids, [ $pid, $rd ];
    }
    my @out;
    for (@kids) {
        my $l = readline($_->[1]) // "no answer\n";
        chomp $l;
        push @out, $l;
        waitpid($_->[0], 0);
    }
    my @conns = split /\n/, (eval { VetoNginx::slurp($seen) } // '');
    is(scalar(@conns), 1, 'the two scrapes came on one connection')
        or diag explain \@conns;
    my ($nf, $r1, $r2) = split / /, ($conns[0] // '');
    is($nf, 2, '... pipelined: both frames before a reply');
    ok(defined $r2 && $r1 ne '' && $r1 ne $r2,
       '... each under a request_id of its own') or diag $conns[0];
    is_deeply([ sort @out ], [ '200 0 none', '200 0 none' ],
              'the crossed replies: both scrapes answer with the helper down, '
              . 'neither with the figures of the other')
        or diag explain \@out;
    like($x->error_log, qr/sent a reply that is not a JSON object with "ok" and the request's request_id/,
         'the worker says why');
    kill 'KILL', $xpid;
    waitpid $xpid, 0;
    $x->stop;
}

$n->stop;

# nginx's own [crit] for a unix socket that is not there is the stopped
# helper; anything else at that level is not expected
unlike(join("\n", grep { !/\[crit\].* connect\(\) to unix:.*No such file/ }
                  split /\n/, $n->error_log),
       qr/\[(alert|emerg|crit)\]/, 'no alert in the error log');

done_testing;
