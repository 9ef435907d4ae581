#!/usr/bin/perl
# Issue 14, notifications: when an approval is requested, each configured
# webhook gets the event through an internal location that proxy_passes
# to it.  Real nginx, Redis and helper; receivers on loopback
# (t/lib/webhook-receiver.pl, one process per request) that verify the
# signature as a user's receiver would.
#
# The event and its HMAC signature (and a tampered copy failing it), the
# Slack body with an agent's markup escaped, bounded retries against a
# failing receiver (counted at the receiver), no retry after a refusal,
# a receiver that is down and comes back, a slow receiver that holds its
# answer while the agent's 202 and its next request on the same
# keepalive connection are answered (and the attempt's deadline), a
# reload and a graceful stop with retries pending (the old worker
# delivers or gives up, then exits), a fast stop (what was pending is
# logged as dropped), a full webhook buffer (the event dropped, logged),
# the counters (as variables and in the Prometheus scrape, which promtool
# checks), nginx -t's errors, and no secret in any log.

use strict;
use warnings;

use Test::More;
use Digest::SHA qw(hmac_sha256_hex);
use IO::Socket::INET;
use JSON::PP ();
use POSIX qw(WNOHANG);
use lib 't/lib';
use VetoNginx;
use Eventually qw(eventually);
use Time::HiRes qw(sleep time);

VetoNginx::need(qw(helper redis));

my $JSON = JSON::PP->new->utf8(1)->canonical(1);
my $n = VetoNginx->new;
my $d = $n->dir;

# the receiver's path holds a credential, as a Slack webhook URL does
my $PATH_KEY = 'T0PATH' . join('', map { sprintf '%02x', int rand 256 } 1 .. 8);
my $SECRET = 'whsec-' . join('', map { sprintf '%02x', int rand 256 } 1 .. 24);
VetoNginx::spew("$d/webhook.secret", "$SECRET\n");
chmod 0600, "$d/webhook.secret";

my $policy = {
    version => 1,
    tenants => {
        acme => {
            ceilings => { memory_mb => 512, timeout_s => 30, ttl_s => 3600 },
            approvals => { always => ['sandbox.create', 'sandbox.exec'] },
        },
    },
};

# ---- receivers

my %RECV;   # name => { port, dir, pid }

sub receiver_start
{
    my ($name, %o) = @_;
    my $r = $RECV{$name} //= { port => VetoNginx::free_port(),
                               dir => "$d/recv-$name" };
    mkdir $r->{dir};
    receiver_mode($name, $o{mode} // 'ok');
    my $pid = fork();
    die "fork: $!" unless defined $pid;
    if ($pid == 0) {
        setpgrp(0, 0);
        open STDOUT, '>>', "$d/logs/receiver-$name.log" or die;
        open STDERR, '>&', \*STDOUT or die;
        exec $^X, "$VetoNginx::ROOT/t/lib/webhook-receiver.pl", $r->{port},
             $r->{dir}, $o{secret} ? "$d/webhook.secret" : ();
        die "exec: $!";
    }
    $r->{pid} = $pid;
    eventually("receiver $name listens", 5, sub {
        my $s = IO::Socket::INET->new(PeerAddr => "127.0.0.1:$r->{port}")
            or return 0;
        close $s;
        1;
    });
    # that probe was a connection: it left no request file, only a number
    return $r;
}

sub receiver_stop
{
    my ($name) = @_;
    my $r = $RECV{$name} or return;
    my $pid = delete $r->{pid} or return;
    kill 'KILL', -$pid;
    waitpid $pid, 0;
}

sub receiver_mode
{
    my ($name, $mode) = @_;
    VetoNginx::spew("$RECV{$name}{dir}/mode", "$mode\n");
}

# the requests a receiver got, in order, each decoded
sub received
{
    my ($name) = @_;
    my $dir = $RECV{$name}{dir};
    my @f = sort { ($a =~ /(\d+)\.req$/)[0] <=> ($b =~ /(\d+)\.req$/)[0] }
            glob "$dir/*.req";
    return map {
        my $j = $JSON->decode(VetoNginx::slurp($_));
        ($j->{seq}) = /(\d+)\.req$/;
        $j->{event} = eval { $JSON->decode($j->{body}) };
        $j;
    } @f;
}

sub received_for
{
    my ($name, $id) = @_;
    return grep { ($_->{event}{id} // $_->{body}) =~ /\Q$id\E/ }
           received($name);
}


sub log_lines
{
    my ($re) = @_;
    return grep { /$re/ } split /\n/, $n->error_log;
}

sub counters
{
    my ($st, $h, $b) = $n->request(GET => '/webhook-counters');
    return { $b =~ /(\w+)=(\d+)/g };
}

# the veto_sandbox_webhook_*_total series of a scrape, by counter name
my $scrapes = 0;

sub scraped
{
    my ($st, $h, $b) = $n->request(GET => '/metrics');
    my $f = "$d/scrape-" . ++$scrapes . '.txt';
    VetoNginx::spew($f, $b // '');
    return ({ ($b // '') =~ /^veto_sandbox_webhook_(\w+)_total (\d+)$/mg }, $f);
}

# the scrape says what the variables say, and passes promtool
sub scrape_agrees
{
    my ($name) = @_;
    local $Test::Builder::Level = $Test::Builder::Level + 1;
    my $vars = counters();
    my ($m, $f) = scraped();
    is_deeply($m, $vars, "$name: the scrape's veto_sandbox_webhook_*_total")
        or diag explain $m;
    my $out = `promtool check metrics < $f 2>&1`;
    is($?, 0, "$name: promtool check metrics passes") or diag $out;
}

sub verify_sig
{
    my ($header, $body, $secret) = @_;
    my ($t, $mac) = ($header // '') =~ /^t=(\d+),v1=([0-9a-f]{64})$/
        or return 0;
    return 0 if abs(time - $t) > 300;
    return hmac_sha256_hex("$t.$body", $secret) eq $mac ? 1 : 0;
}

# a daemonized master may be re-parented to us (a child subreaper): reap
sub gone
{
    my ($pid) = @_;
    return 1 if waitpid($pid, WNOHANG) == $pid;
    return !kill 0, $pid;
}

# ---- configuration

sub conf
{
    my (%o) = @_;
    my $veto = $n->default_veto . <<"EOF";
        veto_sandbox_webhook /_veto/hooks/json secret=$d/webhook.secret;
        veto_sandbox_webhook /_veto/hooks/slack format=slack;
        veto_sandbox_webhook_retries @{[ $o{retries} // 3 ]};
        veto_sandbox_webhook_backoff @{[ $o{backoff} // '200ms' ]};
        veto_sandbox_webhook_timeout @{[ $o{timeout} // '3s' ]};
        veto_sandbox_webhook_page https://gw.example/review/;
        @{[ $o{veto_extra} // '' ]}
EOF
    my $server = <<"EOF";
        location = /_veto/hooks/json {
            internal;
            proxy_pass http://127.0.0.1:$RECV{json}{port}/hook/$PATH_KEY;
        }
        location = /_veto/hooks/slack {
            internal;
            proxy_pass http://127.0.0.1:$RECV{slack}{port}/slack;
        }
        location = /webhook-counters {
            return 200 "queued=\$veto_webhook_queued delivered=\$veto_webhook_delivered retries=\$veto_webhook_retries failed=\$veto_webhook_failed dropped=\$veto_webhook_dropped\\n";
        }
        location = /metrics {
            veto_sandbox_metrics;
        }
EOF
    return (redis => 1, veto => $veto, server_extra => $server,
            policy => $policy, http_extra => $o{http_extra} // '');
}

# ---- nginx -t: what a bad directive says

$RECV{$_} = { port => VetoNginx::free_port(), dir => "$d/recv-$_" }
    for qw(json slack);
$n->write_policy($policy);
$n->start_redis;

VetoNginx::spew("$d/short.secret", "too-short\n");

my @bad = (
    [ 'veto_sandbox_webhook http://127.0.0.1:9/hook;',
      qr/takes the URI of an internal location that proxy_passes to the receiver, not "http:\/\/127\.0\.0\.1:9\/hook"/,
      'a URL instead of a location' ],
    [ 'veto_sandbox_webhook /_veto/hooks/x?a=b;',
      qr/is not a location's URI/, 'a URI with a query' ],
    [ 'veto_sandbox_webhook /_veto/hooks/x format=xml;',
      qr/unknown format "xml" \(json or slack\)/, 'an unknown format' ],
    [ 'veto_sandbox_webhook /_veto/hooks/x format=json format=slack;',
      qr/unknown or repeated parameter "format=slack"/, 'a repeated format' ],
    [ 'veto_sandbox_webhook /_veto/hooks/x colour=red;',
      qr/unknown or repeated parameter "colour=red"/, 'an unknown parameter' ],
    [ "veto_sandbox_webhook /_veto/hooks/x secret=$d/missing.secret;",
      qr/cannot open the secret file ".*missing\.secret"/, 'a missing secret file' ],
    [ "veto_sandbox_webhook /_veto/hooks/x secret=$d/short.secret;",
      qr/the secret in ".*short\.secret" must be 16 to 1024 bytes/,
      'a secret too short' ],
    [ 'veto_sandbox_webhook /v1/hook;',
      qr/"\/v1\/hook" is under the API's location "\/v1\/"/,
      'a webhook under the API' ],
    [ 'veto_sandbox_webhook_retries 11;',
      qr/"veto_sandbox_webhook_retries" must be 0\.\.10/, 'too many retries' ],
    [ 'veto_sandbox_webhook_timeout 0;',
      qr/"veto_sandbox_webhook_timeout" must be positive/, 'a zero timeout' ],
    [ 'veto_sandbox_webhook_backoff 2m;',
      qr/"veto_sandbox_webhook_backoff" must be positive and at most 60s/,
      'a backoff over a minute' ],
    [ 'veto_sandbox_webhook_page ftp://gw.example/;',
      qr/must be the approval page's http:\/\/ or https:\/\/ URL/,
      'a page that is not http(s)' ],
    [ 'veto_sandbox_webhook_page https://gw.example/review/#x;',
      qr/invalid character in "https:\/\/gw\.example\/review\/#x"/,
      'a page with a fragment' ],
);

for my $case (@bad) {
    my ($line, $re, $name) = @$case;
    my %c = conf();
    $c{veto} = $n->default_veto . "        $line\n";
    $n->render(%c);
    my ($ok, $out) = $n->test_config;
    ok(!$ok, "nginx -t fails: $name");
    like($out, $re, "... saying so") or diag $out;
    unlike($out, qr/\Q$SECRET\E|too-short/, '... and showing no secret');
}

{
    my %c = conf();
    $c{http_extra} = 'veto_sandbox_webhook_buffer 16k;';
    $n->render(%c);
    my ($ok, $out) = $n->test_config;
    ok(!$ok, 'nginx -t fails: a buffer that holds no event');
    like($out, qr/"veto_sandbox_webhook_buffer" must hold one event at least/,
         '... saying so') or diag $out;
}

{
    my %c = conf();
    $n->render(%c);
    my ($ok, $out) = $n->test_config;
    ok($ok, 'nginx -t accepts the webhooks') or diag $out;
}

# ---- the stack

receiver_start('json', secret => 1);
receiver_start('slack');
$n->start_helper;
$n->start(conf());

my $agent = $n->token(sub => 'agent-1', exp => time + 3600);
my $rev = $n->token(sub => 'human-1', scope => 'approvals:review',
                    exp => time + 3600);

my ($st, $h, $b, $j);
eventually('Redis is up', 10, sub {
    ($st, $h, $b, $j) = $n->request(GET => '/v1/health');
    ($j->{redis} // '') eq 'up';
});
is($j->{redis}, 'up', 'redis up');

is_deeply(counters(), { queued => 0, delivered => 0, retries => 0,
                        failed => 0, dropped => 0 }, 'counters start at 0');
scrape_agrees('at the start');

# ---- the signed event

my $create = { ttl_s => 600 };
($st, $h, $b, $j) = $n->request(POST => '/v1/sandboxes', $agent, $create);
is($st, 202, 'create needs an approval: 202') or diag $b;
my $apr = $j->{approval_id};
my $expires = $j->{expires_at};

my ($ev) = eventually('the json receiver', 10,
                      sub { my @r = received_for('json', $apr); $r[0] });
ok($ev, 'the json receiver got the event');
is($ev->{method}, 'POST', 'POST');
is($ev->{path}, "/hook/$PATH_KEY", 'to the proxy_pass URI');
like($ev->{headers}{'content-type'}, qr{^application/json$}, 'application/json');
is($ev->{headers}{'veto-delivery-attempt'}, 1, 'first attempt');
ok($ev->{verified}, 'the receiver verified the signature and its time');
ok(verify_sig($ev->{headers}{'veto-signature'}, $ev->{body}, $SECRET),
   'the signature verifies here too');
ok(!verify_sig($ev->{headers}{'veto-signature'}, $ev->{body} . ' ', $SECRET),
   'a changed body does not verify');
{
    my ($t, $mac) = $ev->{headers}{'veto-signature'} =~ /t=(\d+),v1=(\w+)/;
    ok(!verify_sig("t=" . ($t + 1) . ",v1=$mac", $ev->{body}, $SECRET),
       'a changed timestamp does not verify');
    ok(!verify_sig("t=" . ($t - 600) . ",v1="
                   . hmac_sha256_hex(($t - 600) . ".$ev->{body}", $SECRET),
                   $ev->{body}, $SECRET),
       'an old timestamp is refused even with a valid MAC');
}
# docs/operations.md's verify(), as a user's receiver would run it
{
    my ($code) = VetoNginx::slurp("$VetoNginx::ROOT/docs/operations.md")
        =~ /^```python\n(import hashlib.*?^def verify\(.*?)^```$/ms
        or die "docs/operations.md: no verify() snippet\n";
    VetoNginx::spew("$d/verify.py", $code . <<'PY');
import sys
secret = open(sys.argv[1], "rb").read().rstrip(b"\r\n \t")
body = open(sys.argv[3], "rb").read()
print(1 if verify(secret, sys.argv[2], body) else 0)
PY
    VetoNginx::spew("$d/event.body", $ev->{body});
    VetoNginx::spew("$d/event.tampered", $ev->{body} =~ s/agent-1/agent-2/r);
    my $sig = $ev->{headers}{'veto-signature'};
    is(`python3 $d/verify.py $d/webhook.secret '$sig' $d/event.body`, "1\n",
       "docs/operations.md's verify() accepts the event");
    is(`python3 $d/verify.py $d/webhook.secret '$sig' $d/event.tampered`,
       "0\n", '... and refuses it changed');
}
my $e = $ev->{event};
is($e->{type}, 'approval.requested', 'type');
is($e->{id}, $apr, 'the approval id');
is($e->{tenant}, 'acme', 'tenant');
is($e->{agent}, 'agent-1', 'agent');
is($e->{action}, 'sandbox.create', 'action');
is($e->{sandbox}, undef, 'no sandbox yet');
is($e->{summary}{action}, 'sandbox.create', 'the summary');
is($e->{summary}{ttl_s}, 600, '... with the request in it');
is($e->{expires_at}, $expires, 'expires_at as in the 202');
ok($e->{created_at} <= $e->{expires_at}, 'created_at');
is($e->{threshold}, 1, 'threshold');
like($e->{request_hash}, qr/^[0-9a-f]{64}$/, 'request hash');
is($e->{link}, "https://gw.example/review/#/approval/$apr", 'the link to the page');

my ($sl) = eventually('the slack receiver', 10,
                      sub { my @r = received_for('slack', $apr); $r[0] });
ok($sl, 'the slack receiver got its message');
is_deeply([sort keys %{ $sl->{event} }], ['text'], 'a Slack body: {"text"}');
like($sl->{event}{text}, qr/^\*Approval requested\*: `sandbox\.create` by agent `agent-1` of tenant `acme`/,
     'what is asked, by whom');
like($sl->{event}{text}, qr/<https:\/\/gw\.example\/review\/#\/approval\/$apr\|Review $apr>/,
     'a link to the page');
like($sl->{event}{text}, qr/Expires <!date\^$expires\^\{date_short_pretty\} \{time\}\|\d{4}-\d\d-\d\d \d\d:\d\d:\d\d UTC>/,
     'when it expires');
ok(!exists $sl->{headers}{'veto-signature'}, 'no signature without a secret');

eventually('the counters', 5, sub { counters()->{delivered} == 2 });
is_deeply(counters(), { queued => 2, delivered => 2, retries => 0,
                        failed => 0, dropped => 0 }, 'two queued, two delivered');
scrape_agrees('two delivered');

# the approval works as ever
($st) = $n->request(POST => "/v1/approvals/$apr/approve", $rev, '');
is($st, 200, 'approved');
($st, $h, $b, $j) = $n->request(POST => '/v1/sandboxes', $agent, $create,
                                { 'Veto-Approval' => $apr });
is($st, 201, 'the approved create runs') or diag $b;
my $sb = $j->{id};

sub exec_202
{
    my ($argv, $what) = @_;
    my ($st, $h, $b, $j) = $n->request(POST => "/v1/sandboxes/$sb/exec",
                                       $agent, { argv => $argv });
    is($st, 202, "$what: 202") or diag $b;
    return $j->{approval_id};
}

# ---- an agent's markup in Slack: shown, never acted on

my @nasty = ('sh', '-c', 'echo <!channel> `id` & <https://evil.example|click here>');
my $apr2 = exec_202(\@nasty, 'an exec with markup in its argv');
($sl) = eventually('slack', 10, sub { (received_for('slack', $apr2))[0] });
my $text = $sl->{event}{text} // '';
like($text, qr/on sandbox `$sb`/, 'the sandbox');
like($text, qr/\nargv: `sh -c 'echo &lt;!channel&gt; 'id' &amp; &lt;https:\/\/evil\.example\|click here&gt;'`/,
     'the argv escaped: no mention, no link, no code span broken');
unlike($text, qr/<!channel>|<https:\/\/evil/, 'no raw markup');
($ev) = eventually('json', 10, sub { (received_for('json', $apr2))[0] });
is_deeply($ev->{event}{summary}{argv}, \@nasty, 'the JSON event has the argv as it is');
is($ev->{event}{sandbox}, $sb, 'and the sandbox');

# ---- a failing receiver: bounded retries, then a logged failure

receiver_mode('json', 'fail');
receiver_mode('slack', 'refuse');
my $t0 = time;
my $apr3 = exec_202(['echo', 'three'], 'with receivers failing');
eventually('json: given up after 4 attempts, logged', 15, sub {
       log_lines(qr/not delivered after 4 attempts: the location answered 503.*approval: $apr3/) });
my @got = received_for('json', $apr3);
is(scalar @got, 4, 'the receiver saw exactly 1 + 3 retries');
is_deeply([map { $_->{headers}{'veto-delivery-attempt'} } @got], [1, 2, 3, 4],
          'numbered attempts');
ok((grep { $_->{verified} } @got) == 4, 'each one signed afresh and verified');
is(scalar(log_lines(qr/webhook attempt \d of 4 failed: the location answered 503; next in \d+ ms.*approval: $apr3/)),
   3, 'three retries, each logged with its wait');
eventually('slack: a 401 is a refusal, not retried', 10, sub {
       log_lines(qr/not delivered after 1 attempt: the location answered 401 \(a refusal: not retried\).*approval: $apr3/) });
sleep 1;    # longer than any wait left: nothing more comes
is(scalar(received_for('json', $apr3)), 4, 'no fifth attempt');
is(scalar(received_for('slack', $apr3)), 1, 'no second attempt after a refusal');
my $c = counters();
is($c->{failed}, 2, 'counted: 2 failed');
is($c->{retries}, 3, 'counted: 3 retries');
scrape_agrees('after failures and retries');

# the request flow did not notice
($st) = $n->request(POST => "/v1/approvals/$apr3/approve", $rev, '');
is($st, 200, 'the approval is usable');
($st, $h, $b, $j) = $n->request(POST => "/v1/sandboxes/$sb/exec", $agent,
                                { argv => ['echo', 'three'] },
                                { 'Veto-Approval' => $apr3 });
is($st, 200, 'and the exec runs') or diag $b;
is($j->{stdout}, "three\n", 'its output');

# ---- a receiver that is down, then back

receiver_mode('slack', 'ok');
receiver_stop('json');
my $apr4 = exec_202(['echo', 'four'], 'with the json receiver down');
eventually('down: the first attempt fails (502), logged', 10, sub {
       log_lines(qr/webhook attempt 1 of 4 failed: no valid answer \(502\).*approval: $apr4/) });
ok(log_lines(qr/connect\(\) failed \(111: Connection refused\).*webhook: "\/_veto\/hooks\/json", approval: $apr4, upstream: "http:\/\/127\.0\.0\.1:\d+"$/),
   "nginx's own error names the webhook, the approval and the receiver");
receiver_start('json', secret => 1);
($ev) = eventually('the json receiver back', 10,
                   sub { (received_for('json', $apr4))[0] });
ok($ev, 'back: the event arrives on a retry');
ok($ev->{headers}{'veto-delivery-attempt'} >= 2, '... a later attempt');
ok($ev->{verified}, '... signed at its own time, verified');
eventually('logged as delivered', 5, sub {
       log_lines(qr/webhook event delivered, status 200, attempt [2-4].*approval: $apr4/) });

# ---- a slow receiver never delays the agent

receiver_mode('json', 'slow-once');
my $sock = IO::Socket::INET->new(PeerAddr => "127.0.0.1:" . $n->port)
    or die "connect: $!";

sub raw_request
{
    my ($method, $path, $body) = @_;
    $body //= '';
    print $sock "$method $path HTTP/1.1\r\nHost: x\r\n"
              . "Authorization: Bearer $agent\r\n"
              . "Content-Type: application/json\r\n"
              . "Content-Length: " . length($body) . "\r\n\r\n$body";
    local $/ = "\r\n\r\n";
    my $head = <$sock> // '';
    my ($status) = $head =~ /^HTTP\/1\.1 (\d+)/;
    my ($len) = $head =~ /\r\nContent-Length: (\d+)/i;
    my $resp = '';
    read($sock, $resp, $len) if $len;
    return ($status // 0, $resp);
}

my ($st5, $b5) = raw_request(POST => "/v1/sandboxes/$sb/exec",
                             $JSON->encode({ argv => ['echo', 'five'] }));
is($st5, 202, 'the 202 arrives') or diag $b5;
my $apr5 = eval { $JSON->decode($b5)->{approval_id} } // '';
my $hold = eventually('the receiver holding', 10, sub {
    my ($r) = received_for('json', $apr5);
    $r && -e "$RECV{json}{dir}/$r->{seq}.holding" ? $r->{seq} : undef });
ok($hold, 'the receiver holds its answer (10 s)');
my ($st6, $b6) = raw_request(GET => "/v1/approvals/$apr5");
is($st6, 200, "the agent's next request on the same connection is answered");
ok(!-e "$RECV{json}{dir}/$hold.released",
   '... while the receiver still holds the webhook');
is(eval { $JSON->decode($b6)->{state} }, 'pending', '... with the state');
close $sock;
eventually('the held attempt ends at the deadline', 10, sub {
       log_lines(qr/webhook attempt 1 of 4 failed: no answer within 3000 ms.*approval: $apr5/) });
eventually('the next attempt is delivered', 10, sub {
       log_lines(qr/webhook event delivered, status 200, attempt 2.*approval: $apr5/) });

# ---- reload with a retry pending: the old worker delivers, then exits

# and a webhook whose location does not proxy: said so, not retried
$n->render(conf(backoff => '1s',
                veto_extra => 'veto_sandbox_webhook /_veto/hooks/none;'));
$n->reload;
receiver_stop('json');
my $apr7 = exec_202(['echo', 'seven'], 'reload: an exec');
eventually('reload: the first attempt failed', 10, sub {
       log_lines(qr/webhook attempt 1 of 4 failed.*approval: $apr7/) });
my @old = $n->worker_pids;
kill 'HUP', $n->master_pid;
receiver_start('json', secret => 1);
($ev) = eventually('the event after the reload', 15,
                   sub { (received_for('json', $apr7))[0] });
ok($ev && $ev->{verified}, 'reload: delivered, signed');
my ($line) = log_lines(qr/webhook event delivered.*approval: $apr7/);
my ($by) = ($line // '') =~ /\[info\] (\d+)#/;
ok($by && grep({ $_ == $by } @old), 'reload: by the old worker')
    or diag "delivered by " . ($by // '?') . ", old workers @old";
ok(log_lines(qr/not delivered after 1 attempt: answered \d+ without proxying: is "\/_veto\/hooks\/none" a location with proxy_pass\? \(a refusal: not retried\).*approval: $apr7/),
   'a location that does not proxy: named, not retried');
eventually('reload: the old worker exits once it is done', 10, sub {
       my %alive = map { $_ => 1 } $n->worker_pids;
       !grep { $alive{$_} } @old });

# ---- a graceful stop waits for the retries, which stay bounded

receiver_stop('json');
my $apr8 = exec_202(['echo', 'eight'], 'quit: an exec');
eventually('quit: the first attempt failed', 10, sub {
       log_lines(qr/webhook attempt 1 of 4 failed.*approval: $apr8/) });
my $master = $n->master_pid;
kill 'QUIT', $master;
eventually('quit: nginx exits (after 1 + 2 + 4 s of waits)', 30,
           sub { gone($master) });
$n->{running} = 0;
$n->check_sanitizer;
ok(log_lines(qr/not delivered after 4 attempts: no valid answer \(502\).*approval: $apr8/),
   'quit: every attempt was made first, the failure logged');
ok(!log_lines(qr/dropped.*approval: $apr8/), 'quit: nothing dropped');

# ---- a full buffer: the event is dropped, logged and counted

# the smallest buffer (one 64 KiB event and a delivery's overhead), a
# receiver down and a minute between attempts: json deliveries pile up
# until the next one does not fit
$n->start(conf(backoff => '60s',
               http_extra => 'veto_sandbox_webhook_buffer ' . (72 * 1024) . ';'));
eventually('redis up', 10, sub {
    my (undef, undef, undef, $hj) = $n->request(GET => '/v1/health');
    ($hj->{redis} // '') eq 'up' });
my ($base) = scraped();
is_deeply($base, { queued => 0, delivered => 0, retries => 0, failed => 0,
                   dropped => 0 }, 'buffer: a new nginx starts at 0');
my $full_re = qr/webhook event dropped: \d+ bytes of events already wait in this worker, "veto_sandbox_webhook_buffer" is 73728/;
my @full;
for my $i (1 .. 12) {
    push @full, exec_202(['echo', "full-$i"], "buffer: exec $i");
    last if log_lines($full_re);
}
ok(log_lines($full_re),
   'buffer: an event that does not fit is dropped, logged with the bound')
    or diag scalar(@full) . ' execs';
# the slack receiver answers at once: settled when nothing moves for
# half a second (the json receiver's next attempt is a minute away)
my $prev = '';
eventually('the counters settled', 10, sub {
    my $now = join ',', map { "$_=" . counters()->{$_} } sort keys %$base;
    my $same = $now eq $prev;
    $prev = $now;
    sleep 0.5 unless $same;
    $same });
$c = counters();
ok($c->{delivered} >= 1, "buffer: the slack events delivered ($c->{delivered})");
ok($c->{dropped} >= 1, "buffer: counted as dropped ($c->{dropped})");
is($c->{queued} + $c->{dropped}, 2 * scalar @full,
   'buffer: every event of every webhook queued or dropped');
scrape_agrees('a full buffer');
$master = $n->master_pid;
kill 'TERM', $master;
eventually('buffer: nginx stops', 10, sub { gone($master) });
$n->{running} = 0;
$n->check_sanitizer;

# ---- a fast stop: what is pending is logged as dropped

$n->render(conf(backoff => '1s',
                veto_extra => 'veto_sandbox_webhook /_veto/hooks/none;'));

$n->start(conf(backoff => '1s'), keep_conf => 1);
my $apr9 = exec_202(['echo', 'nine'], 'stop: an exec');
eventually('stop: the first attempt failed', 10, sub {
       log_lines(qr/webhook attempt 1 of 4 failed.*approval: $apr9/) });
$master = $n->master_pid;
kill 'TERM', $master;
eventually('stop: nginx exits at once', 10, sub { gone($master) });
$n->{running} = 0;
$n->check_sanitizer;
ok(log_lines(qr/webhook event dropped: the worker stopped after 1 attempt.*approval: $apr9/),
   'stop: the pending event is logged as dropped');

# ---- no secret anywhere

my @logs = ($n->error_log, $n->access_log,
            map { VetoNginx::slurp($_) } glob("$d/recv-*/*.req"),
            glob("$d/logs/receiver-*.log"));
ok(!(grep { /\Q$SECRET\E/ } @logs), 'the secret is in no log and no request');
ok($n->error_log !~ /\Q$PATH_KEY\E/ && $n->access_log !~ /\Q$PATH_KEY\E/,
   "the receiver's path (a credential in a Slack URL) is in no log");

receiver_stop($_) for keys %RECV;
$n->stop_redis;

done_testing;
