#!/usr/bin/perl
# Network egress through the real helper: the helper starts the egress
# proxy (in the test's world namespace, whose only way out leads to the
# test hosts), a sandbox created with an allowlist reaches an allowed host
# from curl, python and node (explicit HTTP, CONNECT, transparent), a host
# outside it is refused with the clear message and shows in the exec's
# "network" field, update_network adds a host, nothing else leaves the
# sandbox, a "none" sandbox fails at once and says why, and destroy takes
# the proxy's state with it.
use strict;
use warnings;
use lib 't/lib';
use IO::Socket::INET;
use Test::More;
use Time::HiRes qw(time sleep);
use VetoEgress;
use VetoTest;
use Eventually qw(eventually);

my $e = VetoEgress->start(helper => 1);
my $h = VetoTest->start($e->helper_conf, max_sandboxes => 8);

sub egress_up
{
    return scalar eventually('the helper says egress is available', 20, sub {
        my $p = $h->ping;
        $p->{egress} && $p->{egress}{available} ? $p->{egress} : undef;
    }) // $h->ping->{egress};
}

my $eg = egress_up();
ok($eg->{available}, 'ping: egress available') or diag explain $eg;
is($eg->{state}, 'up', 'ping: the proxy is up');
ok($eg->{nftables}, 'ping: nftables works here');
my ($proxy_pid) = $h->log_text =~ /started the egress proxy .* \(pid (\d+)\)/;
ok($proxy_pid && kill(0, $proxy_pid), "the helper started the proxy (pid $proxy_pid)");
my $proxy_fds = () = glob("/proc/$proxy_pid/fd/*");

# --- the schema -------------------------------------------------------------
my @bad = (
    [ 'x', 'bad_value', 'network' ],
    [ 7, 'bad_type', 'network' ],
    [ { allow => 'a.test' }, 'bad_type', 'network.allow' ],
    [ { allow => ['a b.test'] }, 'bad_value', 'network.allow' ],
    [ { allow => ['a.test:99999'] }, 'bad_value', 'network.allow' ],
    [ { allow => ['*.'] }, 'bad_value', 'network.allow' ],
    [ { allow => [''] }, 'bad_value', 'network.allow' ],
    [ { allow => ['a.test'], ask => [1] }, 'bad_type', 'network.ask' ],
    [ { allow => ['a.test'], deny => [] }, 'unknown_field', 'deny' ],
    [ { ask => ['a.test'] }, 'missing_field', 'network' ],
    [ { allow => [ map { "h$_.test" } 1 .. 65 ] }, 'over_ceiling', 'network.allow' ],
    [ { allow => [ map { ('x' x 63) . '.' . ('y' x 63) . '.' . ('z' x 63) . ".h$_.test" } 1 .. 60 ] }, 'over_ceiling', 'network.allow' ],
);
for my $b (@bad) {
    my $r = $h->create(network => $b->[0]);
    my $what = $h->json->encode({ n => $b->[0] });
    is($r->{error}, $b->[1], "create network " . substr($what, 0, 60) . ": $b->[1]")
        or diag explain $r;
    is($r->{field}, $b->[2], "... names field $b->[2]");
}
my $r = $h->create(network => { allow => [ map { "h$_.test" } 1 .. 65 ] });
is($r->{limit}, 'network_entries', 'too many entries: limit network_entries');
$r = $h->create(network => { allow => [ map { ('x' x 63) . '.' . ('y' x 63) . '.' . ('z' x 63) . ".h$_.test" } 1 .. 60 ] });
is($r->{limit}, 'network_bytes', 'too many bytes: limit network_bytes');
is($h->ping->{sandboxes}, 0, 'no sandbox made by a refused create');

# --- an allowlist sandbox ----------------------------------------------------
$r = $h->create(network => { allow => ['registry.example.test',
    '*.example.test', 'target.example.test:7000'], ask => ['askme.test'] });
ok($r->{ok}, 'create with an allowlist') or diag explain $r;
my $id = $r->{sandbox}{id};
is_deeply($r->{sandbox}{network}, { allow => ['registry.example.test',
    '*.example.test', 'target.example.test:7000'], ask => ['askme.test'] },
    'SANDBOX.network is the allowlist');
my ($st) = $h->call({ op => 'status', tenant => 't1', agent => 'a1', id => $id });
is_deeply($st->{sandbox}{network}{allow}[0], 'registry.example.test', 'status shows it');
my ($ls) = $h->call({ op => 'list', tenant => 't1' });
is($ls->{sandboxes}[0]{network}, 'allowlist', 'list says allowlist (entries in status)');
ok($h->write_file($id, 'ca.pem', $e->slurp($e->{ca}))->{ok}, 'test CA into the workspace');

my ($x, $out, $err) = $h->sh($id, 'env | grep -i _proxy= | sort; cat /etc/resolv.conf');
like($out, qr{^HTTP_PROXY=http://127\.0\.0\.1:3128$}m, 'HTTP_PROXY names the proxy');
like($out, qr{^HTTPS_PROXY=http://127\.0\.0\.1:3128$}m, 'HTTPS_PROXY');
like($out, qr{^ALL_PROXY=http://127\.0\.0\.1:3128$}m, 'ALL_PROXY');
like($out, qr{^https_proxy=http://127\.0\.0\.1:3128$}m, 'and lower case');
like($out, qr{^NO_PROXY=localhost,127\.0\.0\.1$}m, 'NO_PROXY keeps loopback local');
like($out, qr{^nameserver 127\.0\.0\.53$}m, 'resolv.conf names the DNS stub');
is($x->{network}{complete}, JSON::PP::true, 'an exec without attempts: network complete');
is_deeply($x->{network}{attempts}, [], '... and no attempts');

# curl: explicit HTTP, CONNECT, transparent (no proxy variables)
($x, $out) = $h->sh($id, $VetoEgress::CURL_CLIENTS);
like($out, qr{registry-ok http registry.example.test /pkg}, 'curl: explicit HTTP');
like($out, qr{registry-ok https registry.example.test /tls}, 'curl: CONNECT');
like($out, qr{registry-ok https registry.example.test /tr}, 'curl: transparent TLS (SNI)');
like($out, qr{registry-ok http registry.example.test /trh}, 'curl: transparent HTTP (Host)');
my %kinds = map { $_->{kind} => 1 } @{ $x->{network}{attempts} };
is_deeply(\%kinds, { http => 1, connect => 1, tls => 1 }, 'the exec lists http, connect and tls attempts');
my @allowed = grep { $_->{decision} eq 'allowed' } @{ $x->{network}{attempts} };
is(scalar @allowed, 4, 'four allowed attempts');
my ($a0) = @allowed;
is($a0->{host}, 'registry.example.test', 'attempt: host');
like($a0->{address}, qr/^198\.19\.\d+\.2$/, 'attempt: the address dialled');
ok($a0->{bytes_in} > 0 && $a0->{bytes_out} > 0, 'attempt: bytes each way');
ok(defined $a0->{duration_ms} && defined $a0->{start_ms}, 'attempt: start and duration');
ok($x->{network}{complete}, 'network complete');

# python: explicit and transparent
($x, $out) = $h->exec($id, ['python3', '-c', $VetoEgress::PYTHON_CLIENT]);
like($out, qr{registry-ok http registry.example.test /py$}m, 'python: explicit HTTP');
like($out, qr{registry-ok https registry.example.test /pys}, 'python: CONNECT');
like($out, qr{registry-ok https registry.example.test /pyt}, 'python: transparent');
like($out, qr/^403 blocked by Veto Sandbox egress policy: notallowed.test:80 is not allowed$/m,
    'python: a not-allowed host gets the clear message');
my ($ref) = grep { $_->{decision} eq 'refused' } @{ $x->{network}{attempts} };
is($ref->{host}, 'notallowed.test', 'the refusal is in the exec\'s network field');
is($ref->{reason}, 'host not allowed', '... with its reason');
is($ref->{port}, 80, '... and port');
ok(!$ref->{address}, '... and no address: nothing was dialled');

# node: explicit (its http module speaks to the proxy as npm's agents do)
# and transparent (fetch, no proxy support)
($x, $out) = $h->exec($id, ['node', '-e', $VetoEgress::NODE_CLIENT],
    env => { NODE_EXTRA_CA_CERTS => '/workspace/ca.pem' });
like($out, qr{registry-ok http registry.example.test /node$}m, 'node: explicit HTTP');
like($out, qr{registry-ok https registry.example.test /nodetls}, 'node: CONNECT');
like($out, qr{registry-ok https registry.example.test /nodefetch}, 'node: transparent (fetch)');
like($out, qr/refused: ENOTFOUND/, 'node: a not-allowed name does not resolve');
my ($dns) = grep { $_->{kind} eq 'dns' } @{ $x->{network}{attempts} };
is($dns->{host}, 'notallowed.test', 'the refused DNS question is in the exec\'s network field');

# askable: the 403 names the approval, the attempt says askable
($x, $out) = $h->sh($id, 'curl -sS -i http://askme.test/x');
like($out, qr/askable: .*network allow "askme.test:80"/, 'askable host: the approval to ask for');
($ref) = @{ $x->{network}{attempts} };
ok($ref->{askable}, 'the attempt is marked askable');

# a CONNECT target on an explicitly allowed port
($x, $out) = $h->exec($id, ['python3', '-c', <<'PY']);
import socket
s = socket.create_connection(("127.0.0.1", 3128))
s.sendall(b"CONNECT target.example.test:7000 HTTP/1.1\r\nHost: target.example.test:7000\r\n\r\n")
h = b""
while b"\r\n\r\n" not in h: h += s.recv(1)
print(h.split(b"\r\n")[0].decode())
print(s.recv(100).decode().strip())
PY
like($out, qr{200 Connection established\ntarget-hello}, 'CONNECT to an allowed host:port');

# --- update_network ----------------------------------------------------------
($x, $out) = $h->sh($id, 'curl -sS http://notallowed.test/before');
like($out, qr/notallowed.test:80 is not allowed/, 'before: not allowed');
my ($u) = $h->call({ op => 'update_network', tenant => 't1', agent => 'a1',
    id => $id, add => ['notallowed.test:80'] });
ok($u->{ok}, 'update_network adds a host') or diag explain $u;
is_deeply($u->{added}, ['notallowed.test:80'], '... says what it added');
is($u->{network}{allow}[-1], 'notallowed.test:80', '... and the new allowlist');
($x, $out) = $h->sh($id, 'curl -sS http://notallowed.test/after');
like($out, qr{registry-ok http notallowed.test /after}, 'after: the host is reachable');
($u) = $h->call({ op => 'update_network', tenant => 't1', agent => 'a1',
    id => $id, add => ['bad host'] });
is($u->{error}, 'bad_value', 'update_network: a bad entry is refused');
($u) = $h->call({ op => 'update_network', tenant => 't1', agent => 'a1',
    id => $id, add => [] });
is($u->{error}, 'bad_value', 'update_network: nothing to add is refused');
($u) = $h->call({ op => 'update_network', tenant => 't1', agent => 'a1',
    id => $id, add => [ map { "u$_.test" } 1 .. 62 ] });
is($u->{limit}, 'network_entries', 'update_network: the ceiling counts the entries already there');
($u) = $h->call({ op => 'update_network', tenant => 't2', agent => 'a1',
    id => $id, add => ['x.test'] });
is($u->{error}, 'not_found', 'update_network: another tenant\'s sandbox is not found');

# --- nothing else leaves the sandbox ----------------------------------------
my $hostl = IO::Socket::INET->new(LocalAddr => '127.0.0.1', LocalPort => 0,
                                  Listen => 5, ReuseAddr => 1) or die "listener: $!";
my $hp = $hostl->sockport;
my $t0 = time;
($x, $out) = $h->exec($id, ['python3', '-c', <<PY]);
import socket, errno
def tcp(h, p):
    try:
        socket.create_connection((h, p), timeout=5); return "connected"
    except OSError as e: return errno.errorcode.get(e.errno, str(e))
print("tcp-world-6379", tcp("$e->{world_ip}", 6379))
print("tcp-reg-22", tcp("$e->{reg_ip}", 22))
print("tcp-target-7000", tcp("$e->{target_ip}", 7000))
print("tcp-host-loopback", tcp("127.0.0.1", $hp))
print("tcp-host-redis", tcp("127.0.0.1", 6379))
for dst in ("$e->{dns_ip}", "8.8.8.8"):
    u = socket.socket(socket.AF_INET, socket.SOCK_DGRAM); u.settimeout(3)
    try:
        u.sendto(b"\\x12\\x34\\x01\\x00\\x00\\x01\\x00\\x00\\x00\\x00\\x00\\x00\\x03foo\\x04test\\x00\\x00\\x01\\x00\\x01", (dst, 53))
        print("udp53", dst, "answered", u.recv(512)[:2])
    except OSError as ex: print("udp53", dst, type(ex).__name__)
for t in (socket.SOCK_RAW, socket.SOCK_DGRAM):
    try:
        r = socket.socket(socket.AF_INET, t, socket.IPPROTO_ICMP); r.settimeout(3)
        r.sendto(b"\\x08\\x00\\xf7\\xff\\x00\\x00\\x00\\x00", ("$e->{reg_ip}", 0))
        print("icmp", t, "reply" if r.recv(100) else "none")
    except OSError as ex: print("icmp", t, type(ex).__name__)
PY
close $hostl;
like($out, qr/tcp-world-6379 ECONNREFUSED/, 'TCP to the proxy host\'s Redis port fails');
like($out, qr/tcp-reg-22 ECONNREFUSED/, 'TCP to another port of a test host fails');
like($out, qr/tcp-target-7000 ECONNREFUSED/, 'TCP to the CONNECT target directly fails');
like($out, qr/tcp-host-loopback ECONNREFUSED/, 'TCP to a server on the host\'s loopback fails');
like($out, qr/tcp-host-redis ECONNREFUSED/, 'TCP to 127.0.0.1:6379 reaches only the sandbox\'s own loopback');
like($out, qr/udp53 \Q$e->{dns_ip}\E \w+Error/, 'UDP/53 to the test DNS server fails');
like($out, qr/udp53 8\.8\.8\.8 \w+Error/, 'UDP/53 to any other server fails (nothing is sent)');
unlike($out, qr/answered|reply/, '... no answer, no ICMP reply');
like($out, qr/icmp \d+ \w+Error/, 'ICMP fails');
ok(time - $t0 < 15, 'all at once (rejected, not timed out)');
is($e->trapped, 0, 'no packet reached an address that is not a test host');
ok(!grep({ ($_->{kind} // '') eq 'dns' && ($_->{name} // '') =~ /foo/ } $e->host_log),
   'the test DNS server never saw the sandbox');

# --- two execs share loopback, two sandboxes do not -------------------------
my $id2 = $h->create_ok(network => { allow => ['registry.example.test'] });
my $srv = $h->connect;
VetoTest::write_all($srv, VetoTest::frame({ op => 'exec', tenant => 't1',
    agent => 'a1', id => $id, argv => ['python3', '-c', <<'PY'] })) or die;
import socket
s = socket.socket(); s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
s.bind(("127.0.0.1", 8765)); s.listen(4); s.settimeout(20)
c, _ = s.accept(); c.sendall(b"hello-from-exec-1"); c.close()
PY
my $client = q{import socket, time, sys
for i in range(100):
    try:
        print(socket.create_connection(("127.0.0.1", 8765), timeout=3).recv(100).decode()); sys.exit(0)
    except ConnectionRefusedError:
        if sys.argv[1] == "once": print("refused"); sys.exit(0)
        time.sleep(0.05)
print("never")
};
($x, $out) = $h->exec($id2, ['python3', '-c', $client, 'once']);
is($out, "refused\n", 'another allowlist sandbox cannot reach its loopback server');
($x, $out) = $h->exec($id, ['python3', '-c', $client, 'wait']);
is($out, "hello-from-exec-1\n", 'a second exec of the sandbox reaches the first one\'s server');
my ($sr) = VetoTest::recv_frame($srv, 30);
is($sr->{exit_code}, 0, 'the server exec ended');
($x, $out) = $h->sh($id2, 'curl -sS --noproxy "" -x http://127.0.0.1:3128 '
    . 'http://127.0.0.1:8765/');
like($out, qr/blocked by Veto Sandbox egress policy: 127.0.0.1:8765 is not allowed/,
    'the proxy does not lead to loopback either') or diag($out);

# --- a "none" sandbox: loopback only, lookups fail at once and say why ------
my $idn = $h->create_ok;
($st) = $h->call({ op => 'status', tenant => 't1', agent => 'a1', id => $idn });
is($st->{sandbox}{network}, 'none', 'SANDBOX.network is "none"');
($x, $out) = $h->exec($idn, ['python3', '-c', <<'PY']);
import socket, os, time
t = time.time()
try:
    socket.getaddrinfo("pypi.org", 443)
except socket.gaierror as e:
    print("gai", e.errno, e.strerror)
print("took", round(time.time() - t, 1))
print("proxy vars:", [k for k in os.environ if k.lower().endswith("_proxy")])
print(open("/etc/resolv.conf").read())
PY
like($out, qr/^gai -2 Name or service not known$/m,
    'none: a lookup fails with "Name or service not known" (not a temporary failure)');
like($out, qr/^took 0\.\d$/m, 'none: at once');
like($out, qr/proxy vars: \[\]/, 'none: no proxy variables');
like($out, qr/network "none"/, 'none: resolv.conf says why');
is($x->{network}, 'none', 'none: the exec\'s network field says so');
($x, $out, $err) = $h->sh($idn, 'curl -sS https://pypi.org/ 2>&1; echo rc=$?');
like($out, qr/Could not resolve host: pypi.org\nrc=6/, 'none: curl cannot resolve');
($u) = $h->call({ op => 'update_network', tenant => 't1', agent => 'a1',
    id => $idn, add => ['x.test'] });
is($u->{error}, 'bad_value', 'update_network on a "none" sandbox is refused');
like($u->{detail}, qr/network "none"/, '... saying why');

# --- destroy takes the proxy's state along ----------------------------------
my $ns = $h->sandbox_netns($id);
for my $i ($id, $id2, $idn) {
    my $d = $h->destroy($i);
    is($d->{state}, 'terminated', "destroy $i") or diag explain $d;
    ok($d->{confirmed}{network}, '... network confirmed');
}
like($h->log_text, qr/sandbox \Q$id\E removed: \d+ connections, 5 sockets closed/,
    'the proxy closed the sandbox\'s five sockets');
my $now_fds = () = glob("/proc/$proxy_pid/fd/*");
is($now_fds, $proxy_fds, 'the proxy holds as many descriptors as before any sandbox');
is(scalar($h->netns_holders($ns)), 0, 'nothing holds the sandbox\'s namespace');
$h->live_ok(0, 'after destroy');
is($e->trapped, 0, 'still no packet to an address that is not a test host');

is($h->stop, 0, 'helper exits 0') or diag $h->log_text;
ok(!kill(0, $proxy_pid), 'the proxy stopped with the helper');
like($h->log_text, qr/egress: the egress proxy stopped/, 'the helper says so');
unlike($h->log_text, qr/ERROR: AddressSanitizer|runtime error:|LeakSanitizer/,
    'no sanitizer report from the helper or the proxy');
$h->leaks_ok('at the end');
$e->finish_hosts;
done_testing;
