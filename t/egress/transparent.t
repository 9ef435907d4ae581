#!/usr/bin/perl
# Transparent egress: clients that ignore proxy variables (none are set
# here) resolve names through the sandbox's DNS stub and connect to ports
# 80/443 directly; nftables in the sandbox's namespace redirects them to
# the proxy, which takes the destination from the TLS ClientHello's SNI or
# the HTTP Host header.  Names outside the allowlist answer NXDOMAIN at
# once (never a timeout).
use strict;
use warnings;
use lib 't/lib';
use Test::More;
use Time::HiRes qw(time);
use VetoEgress;

my $e = VetoEgress->start;
my ($rc, $out) = $e->setup_sandbox(
    allow => ['registry.example.test', '*.example.test'],
    ask   => ['askme.test']);
is($rc, 0, 'sandbox set up') or diag($out);
my $ca = $e->{ca};

# the namespace as the seam left it
($rc, $out) = VetoEgress::sh("ip netns exec $e->{sandbox} nft list table inet veto_egress");
like($out, qr/redirect to :3129/, 'nftables redirects 80/443 to the transparent socket');
like($out, qr/reject with tcp reset/, 'other TCP is reset');
($rc, $out) = VetoEgress::sh("ip -n $e->{sandbox} -o link");
my @links = grep { !/: lo:/ } split /\n/, $out;
is(scalar @links, 0, 'the sandbox namespace has no link but loopback') or diag($out);

# DNS stub
my $t0 = time;
($rc, $out) = $e->in_sandbox('getent hosts registry.example.test');
like($out, qr/^198\.18\.0\.1\s/m, 'allowed name answers with the sentinel address');
($rc, $out) = $e->in_sandbox('getent hosts notallowed.test; echo rc=$?');
like($out, qr/rc=2/, 'not-allowed name: NXDOMAIN (getent: not found)');
ok(time - $t0 < 5, 'answers are immediate, not a resolver timeout');
($rc, $out) = $e->in_sandbox(q{python3 -c '
import socket, struct
q = struct.pack("!HHHHHH", 0x1234, 0x0100, 1, 0, 0, 1)
q += b"".join(bytes([len(l)]) + l.encode() for l in "notallowed.test".split(".")) + b"\0"
q += struct.pack("!HH", 1, 1)
q += b"\0" + struct.pack("!HHIH", 41, 1232, 0, 0)
s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM); s.settimeout(3)
s.sendto(q, ("127.0.0.53", 53)); a = s.recv(512)
print("rcode", a[3] & 15, "ede" if b"blocked by Veto Sandbox egress policy" in a else "no-ede")
t = socket.create_connection(("127.0.0.53", 53), timeout=3)
t.sendall(struct.pack("!H", len(q)) + q)
n = struct.unpack("!H", t.recv(2))[0]; b = b""
while len(b) < n: b += t.recv(n - len(b))
print("tcp rcode", b[3] & 15)
'});
like($out, qr/rcode 3 ede/, 'NXDOMAIN with an Extended DNS Error saying why (EDNS)');
like($out, qr/tcp rcode 3/, 'DNS over TCP answers too');

# curl with no proxy variables
($rc, $out) = $e->in_sandbox('curl -sS -m 10 http://registry.example.test/t1');
like($out, qr/^registry-ok http registry.example.test \/t1/, 'transparent HTTP (Host)');
($rc, $out) = $e->in_sandbox("curl -sS -m 10 --cacert $ca https://registry.example.test/t2");
like($out, qr/^registry-ok https registry.example.test \/t2/, 'transparent HTTPS (SNI)');
($rc, $out) = $e->in_sandbox("curl -sS -m 10 --cacert $ca https://a.example.test/t3");
like($out, qr/registry-ok https a.example.test/, 'wildcard transparently');
($rc, $out) = $e->in_sandbox('curl -sS -m 10 http://notallowed.test/t4');
like($out, qr/Could not resolve host: notallowed.test/, 'not-allowed name never resolves');

# a client that names an allowed IP but a not-allowed Host / SNI
($rc, $out) = $e->in_sandbox('curl -sS -i -m 10 --resolve notallowed.test:80:198.18.0.1 http://notallowed.test/t5');
like($out, qr/blocked by Veto Sandbox egress policy: notallowed.test:80 is not allowed/,
    'transparent HTTP to a not-allowed Host: the 403 message');
($rc, $out) = $e->in_sandbox("curl -sS -m 10 --cacert $ca --resolve notallowed.test:443:198.18.0.1 https://notallowed.test/t6");
isnt($rc, 0, 'transparent TLS to a not-allowed SNI fails');
like($out, qr/alert access denied|access denied/i, 'with a TLS access_denied alert');
($rc, $out) = $e->in_sandbox("curl -sS -m 10 --cacert $ca --resolve evil-example.test:443:198.18.0.1 https://evil-example.test/");
isnt($rc, 0, 'evil-example.test refused transparently');

# python and node without proxy support
($rc, $out) = $e->in_sandbox(q{python3 -c '
import ssl, urllib.request, os
ctx = ssl.create_default_context(cafile=os.environ["TEST_CA"])
print(urllib.request.urlopen("https://registry.example.test/py", context=ctx).read().decode().strip())
print(urllib.request.urlopen("http://registry.example.test/py2").read().decode().strip())
'}, TEST_CA => $ca);
like($out, qr/registry-ok https registry.example.test \/py\n/, 'python https transparently');
like($out, qr/registry-ok http registry.example.test \/py2/, 'python http transparently');
($rc, $out) = $e->in_sandbox(q{node -e '
fetch("https://registry.example.test/nodefetch").then(r => r.text()).then(t => console.log(t.trim()))
  .catch(e => console.log("error", e.cause ? e.cause.code : e));
'}, NODE_EXTRA_CA_CERTS => $ca);
like($out, qr/registry-ok https registry.example.test \/nodefetch/, 'node fetch (no proxy support) transparently');

my @r = $e->records;
my ($tls) = grep { $_->{kind} eq 'tls' && $_->{decision} eq 'allowed' } @r;
ok($tls, 'transparent TLS attempt recorded as kind tls');
is($tls->{port}, 443, 'port from the original destination');
my ($dns) = grep { $_->{kind} eq 'dns' && $_->{host} eq 'notallowed.test' } @r;
is($dns->{decision}, 'refused', 'refused DNS question recorded');
my ($sni) = grep { $_->{kind} eq 'tls' && $_->{host} eq 'notallowed.test' } @r;
is($sni->{decision}, 'refused', 'refused SNI recorded');

is($e->trapped, 0, 'nothing was sent to any address but the test hosts');
$e->finish;
done_testing;
