#!/usr/bin/perl
# The egress proxy's connections are shared fairly between tenants and
# between a tenant's sandboxes: one tenant's sandboxes flooding the proxy
# (half-sent CONNECT heads, or held tunnels) within their own limits leave
# another tenant's sandbox getting through every try.  Connections still
# sending their head have a small cap per sandbox and a short timeout.
# Plain HTTP: Host must name the authority the connection was allowed for,
# and one request is relayed per connection (a pipelined or keep-alive
# second request, of any Host, never reaches the upstream).
#
# The pool is scaled down (max_connections 64, 32 per sandbox) so the
# flood is cheap; the rule is the same at 2048.  idle_timeout_ms is 1 s:
# the upstream on :8080 ignores Connection: close, so the proxy's idle
# timeout is what ends those connections (and the clients read to EOF).
use strict;
use warnings;
use lib 't/lib';
use Test::More;
use Eventually qw(eventually);
use VetoEgress;

my $e = VetoEgress->start(header_timeout_ms => 1500,
    proxy_conf => ['max_connections = 64', 'max_sandbox_connections = 32',
                   'max_sandbox_head_connections = 16',
                   'idle_timeout_ms = 1000']);

my @allow = ('registry.example.test', 'registry.example.test:8080',
             'target.example.test:7000');

# tenant B: the harness's sandbox namespace
my ($rc, $out) = $e->setup_sandbox(id => "sb-b-$$", tenant => 'tenant-b',
                                   allow => \@allow);
is($rc, 0, 'tenant B sandbox set up') or diag($out);
# tenant A: four sandboxes in namespaces of their own
my @a;
for my $i (1 .. 4) {
    my $ns = $e->add_netns("a$i");
    ($rc, $out) = $e->setup_sandbox(id => "sb-a$i-$$", tenant => 'tenant-a',
                                    netns => $ns, allow => \@allow);
    is($rc, 0, "tenant A sandbox $i set up") or diag($out);
    push @a, { ns => $ns, id => "sb-a$i-$$" };
}
my $stats = $e->stats;
is($stats->{"sb-a1-$$"}{tenant}, 'tenant-a', 'the proxy knows each sandbox\'s tenant');

# Holds n connections to the explicit proxy and opens a new one for each
# the proxy closes (an attacker keeping the pressure on): "head" sends
# half a CONNECT head, "tunnel" a whole CONNECT to the echo host, which
# then waits for bytes that never come.
my $holder = <<'PY';
import select, socket, sys, time
mode, n = sys.argv[1], int(sys.argv[2])
def opn():
    s = socket.socket()
    try:
        s.connect(("127.0.0.1", 3128))
        if mode == "head":
            s.sendall(b"CONNECT target.example.test:7000 HTTP/1.1\r\nHost: tar")
        else:
            s.sendall(b"CONNECT target.example.test:7000 HTTP/1.1\r\n\r\n")
    except OSError:
        s.close()
        return None
    s.setblocking(False)
    return s
socks = [opn() for _ in range(n)]
print("holding", flush=True)
last = time.time()
while True:
    live = [s for s in socks if s is not None]
    r = select.select(live, [], [], 0.1)[0] if live else []
    for s in r:
        try:
            d = s.recv(4096)
        except OSError:
            d = b""
        if not d:
            s.close()
            socks[socks.index(s)] = None
    if time.time() - last >= 0.1:
        last = time.time()
        socks = [s if s is not None else opn() for s in socks]
PY
$e->write_file('holder.py', $holder);

my %env = $e->proxy_env;

sub flood
{
    my ($mode) = @_;
    my @pids;
    for my $s (@a) {
        push @pids, $e->spawn("$e->{dir}/holder-$mode-$s->{ns}.log", 'ip',
            'netns', 'exec', $s->{ns}, 'python3', "$e->{dir}/holder.py",
            $mode, 32);
    }
    # the flood is on: tenant A holds most of the pool
    my $held = eventually("tenant A's $mode flood holds the pool", 20, sub {
        my $st = $e->stats;
        my $n = 0;
        $n += $st->{$_->{id}}{connections} for @a;
        $n >= 48 ? $n : undef;
    });
    ok($held, "tenant A holds $held of the proxy's 64 connections ($mode)");

    my $ok = 0;
    my @fail;
    for my $i (1 .. 16) {
        my ($r, $o) = $e->in_sandbox(
            "curl -sS -i -m 10 http://registry.example.test/fair-$mode-$i", %env);
        if ($o =~ m{registry-ok http registry.example.test /fair-$mode-$i}) {
            $ok++;
        } else {
            push @fail, $o;
        }
    }
    is($ok, 16, "tenant B gets through 16 of 16 tries during tenant A's $mode flood")
        or diag(substr($fail[0] // '', 0, 600));

    my $st = $e->stats;
    my $n = 0;
    $n += $st->{$_->{id}}{connections} for @a;
    ok($n <= 58, "tenant A never holds more than its share: the pool less the reserve ($n <= 58)");

    for my $p (@pids) {
        kill 'TERM', $p;
        waitpid($p, 0);
    }
    eventually("tenant A's $mode connections are closed", 10, sub {
        my $s2 = $e->stats;
        my $m = 0;
        $m += $s2->{$_->{id}}{connections} for @a;
        $m == 0;
    });
}

flood('head');
flood('tunnel');

my @r = $e->records;
my @refused = grep { ($_->{sandbox} // '') =~ /^sb-a/ && $_->{decision} eq 'refused'
                     && ($_->{reason} // '') =~ /share exhausted/ } @r;
ok(@refused > 0, 'tenant A\'s refusals are recorded, naming the share exhausted')
    or diag(join("\n", map { $_->{reason} // '' } @r[0 .. ($#r < 5 ? $#r : 5)]));
ok((grep { ($_->{reason} // '') =~ /^tenant share exhausted/ } @refused),
    'the tenant share is named');
ok(!(grep { ($_->{sandbox} // '') eq "sb-b-$$" && $_->{decision} ne 'allowed' } @r),
    'tenant B was never refused');

# the head cap: 20 half-sent heads from one sandbox, 16 held, the others
# answered 429 at once; the 16 end after header_timeout_ms (1.5 s)
my $a1 = $a[0];
my $one = $e->spawn("$e->{dir}/heads.log", 'ip', 'netns', 'exec', $a1->{ns},
    'python3', '-c', <<'PY');
import socket, time
socks = []
for i in range(20):
    s = socket.socket(); s.connect(("127.0.0.1", 3128))
    s.sendall(b"CONNECT target.example.test:7000 HTTP/1.1\r\nHost: ta")
    socks.append(s)
t0 = time.time()
for s in socks:
    s.settimeout(10)
    try:
        d = s.recv(200)
    except OSError as e:
        d = str(e).encode()
    print("%.2f %s" % (time.time() - t0, d.split(b"\r\n")[0].decode()), flush=True)
PY
my $heads = eventually('16 heads held for one sandbox', 10, sub {
    my $h = $e->stats->{$a1->{id}}{head_connections};
    $h == 16 ? $h : undef;
});
is($heads, 16, 'the sandbox holds 16 connections still sending their head');
($rc, $out) = VetoEgress::sh("ip netns exec $a1->{ns} curl -sS -i -m 5 "
    . "-x http://127.0.0.1:3128 http://registry.example.test/head-17");
like($out, qr{^HTTP/1.1 429}, 'one more connection: 429 at once');
like($out, qr/reason: head share exhausted: 16 connections of this sandbox are still sending/,
    'the 429 says which share was exhausted');
my ($log, $took) = eventually('the held heads time out', 10, sub {
    my $l = $e->slurp("$e->{dir}/heads.log");
    (() = $l =~ /^\S+ HTTP\/1.1 408/mg) == 16 ? $l : undef;
});
is((() = $log =~ /^\S+ HTTP\/1.1 429/mg), 4, 'of 20 heads sent at once, 4 were refused 429');
my @t = $log =~ /^(\S+) HTTP\/1.1 408/mg;
ok($t[-1] >= 1.2 && $t[-1] < 4, "the heads ended after header_timeout_ms (last after $t[-1] s)");
waitpid($one, 0);
($rc, $out) = VetoEgress::sh("ip netns exec $a1->{ns} curl -sS -m 5 "
    . "-x http://127.0.0.1:3128 http://registry.example.test/head-after");
like($out, qr/registry-ok http registry.example.test \/head-after/,
    'after the timeout the sandbox connects again');
@r = $e->records;
ok((grep { ($_->{reason} // '') =~ /^head share exhausted/ } @r),
    'head refusals recorded');

# Host must name the authority the connection is for
sub raw
{
    my ($host, $port, $bytes, $send_after) = @_;
    my $py = sprintf(<<'PY', $host, $port);
import socket, sys
s = socket.create_connection(("%s", %d), timeout=10)
s.sendall(sys.stdin.buffer.read().replace(b"\n", b"\r\n").replace(b"\r\r\n", b"\r\n"))
out = b""
try:
    while True:
        d = s.recv(65536)
        if not d:
            break
        out += d
except OSError as e:
    out += b"\n[" + str(e).encode() + b"]"
sys.stdout.write(out.decode("latin-1"))
PY
    $e->write_file('raw.py', $py);
    $e->write_file('raw.in', $bytes);
    my ($r, $o) = $e->in_sandbox("python3 $e->{dir}/raw.py < $e->{dir}/raw.in");
    return $o;
}

sub seen
{
    my ($path) = @_;
    return grep { ($_->{path} // '') =~ /\Q$path\E/ } $e->host_log;
}

# transparent: absolute-form target, another Host
$out = raw('registry.example.test', 80,
    "GET http://registry.example.test/t-abs HTTP/1.1\nHost: notallowed.test\n\n");
like($out, qr{^HTTP/1.1 400}, 'transparent: absolute-form target with another Host: 400');
like($out, qr/Host header names notallowed.test:80 but the request is for registry.example.test:80/,
    '... saying what differs');
ok(!seen('/t-abs'), '... and nothing reached the upstream');
# transparent: origin-form, Host names another port than the connection's
$out = raw('registry.example.test', 80,
    "GET /t-port HTTP/1.1\nHost: registry.example.test:8080\n\n");
like($out, qr{^HTTP/1.1 400.*port 8080 but the connection was to port 80}s,
    'transparent: Host naming another port: 400');
# explicit: absolute-form target, another Host
$out = raw('127.0.0.1', 3128,
    "GET http://registry.example.test/x-abs HTTP/1.1\nHost: notallowed.test\n\n");
like($out, qr{^HTTP/1.1 400}, 'explicit: target and Host differ: 400');
like($out, qr/Host header names notallowed.test:80 but the request is for registry.example.test:80/,
    '... saying what differs');
ok(!seen('/x-abs'), '... and nothing reached the upstream');
$out = raw('127.0.0.1', 3128,
    "GET http://registry.example.test/x-same HTTP/1.1\nHost: REGISTRY.example.test:80\n\n");
like($out, qr{registry-ok http registry.example.test /x-same}, 'explicit: the same authority spelled otherwise passes');

# one request per connection: pipelined, with a body, and keep-alive; the
# upstream on :8080 serves every request it reads (ignores Connection: close)
$out = raw('127.0.0.1', 3128,
    "GET http://registry.example.test:8080/p-first HTTP/1.1\nHost: registry.example.test:8080\n\n"
    . "GET /p-second HTTP/1.1\nHost: notallowed.test\n\n");
like($out, qr{ka-ok registry.example.test:8080 /p-first}, 'explicit pipelined: the first request is answered');
ok(seen('/p-first'), '... it reached the upstream');
ok(!seen('/p-second'), '... the pipelined second request (another Host) did not');
$out = raw('127.0.0.1', 3128,
    "POST http://registry.example.test:8080/b-post HTTP/1.1\nHost: registry.example.test:8080\n"
    . "Content-Length: 5\n\nhelloGET /b-smuggled HTTP/1.1\nHost: notallowed.test\n\n");
my ($post) = seen('/b-post');
is($post->{body}, 'hello', 'a request body goes through, exactly its Content-Length');
ok(!seen('/b-smuggled'), 'what follows the body is not relayed');
$out = raw('127.0.0.1', 3128,
    "POST http://registry.example.test:8080/c-chunked HTTP/1.1\nHost: registry.example.test:8080\n"
    . "Transfer-Encoding: chunked\n\n0\n\n");
like($out, qr{^HTTP/1.1 411}, 'a chunked request body over plain HTTP: 411');
ok(!seen('/c-chunked'), '... not forwarded');
($rc, $out) = $e->in_sandbox(q{python3 -c '
import socket
s = socket.create_connection(("127.0.0.1", 3128), timeout=10)
s.sendall(b"GET http://registry.example.test:8080/k-first HTTP/1.1\r\nHost: registry.example.test:8080\r\n\r\n")
b = b""
while b"ka-ok" not in b or not b.endswith(b"\n"):
    b += s.recv(4096)
print(b.split(b"\r\n")[0].decode())
a = b""
try:
    s.sendall(b"GET /k-second HTTP/1.1\r\nHost: notallowed.test\r\n\r\n")
    while True:
        d = s.recv(4096)
        if not d:
            break
        a += d
except OSError as e:
    a += str(e).encode()
print("after:", repr(a))
'});
like($out, qr{HTTP/1.1 200}, 'explicit keep-alive: the first request is answered');
like($out, qr/after: b''/, '... the second gets no answer: the connection ends');
ok(!seen('/k-second'), '... a second request on the connection never reaches the upstream');
# transparent: pipelined to :80 (that upstream keeps connections alive
# unless told Connection: close)
$out = raw('registry.example.test', 80,
    "GET /tp-first HTTP/1.1\nHost: registry.example.test\n\n"
    . "GET /tp-second HTTP/1.1\nHost: notallowed.test\n\n");
like($out, qr{registry-ok http registry.example.test /tp-first}, 'transparent pipelined: the first request is answered');
my ($tp) = seen('/tp-first');
is($tp->{headers}{connection}, 'close', '... the upstream was told Connection: close');
ok(!seen('/tp-second'), '... the pipelined second request did not reach the upstream');
@r = $e->records;
ok((grep { ($_->{reason} // '') =~ /after the first request were not forwarded/ } @r),
    'the dropped bytes are recorded');

is($e->trapped, 0, 'nothing was sent to any address but the test hosts');
$e->finish;
done_testing;
