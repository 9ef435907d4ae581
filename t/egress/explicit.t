#!/usr/bin/perl
# Egress through the proxy's explicit mode (HTTP_PROXY / HTTPS_PROXY as the
# helper sets them): curl, python and node inside a sandbox namespace reach
# an allowed registry over HTTP and through CONNECT; a host outside the
# allowlist gets the 403 that says so, and every attempt is recorded.
use strict;
use warnings;
use lib 't/lib';
use Test::More;
use VetoEgress;

my $e = VetoEgress->start;
my ($rc, $out) = $e->setup_sandbox(
    allow => ['registry.example.test', '*.example.test',
              'target.example.test:7000'],
    ask   => ['askme.test']);
is($rc, 0, 'sandbox set up through the seam') or diag($out);
like($out, qr/"ok":true/, 'proxy accepted the sandbox');

my %env = $e->proxy_env;
is($env{HTTP_PROXY}, 'http://127.0.0.1:3128', 'HTTP_PROXY names the proxy');
is($env{no_proxy}, 'localhost,127.0.0.1', 'no_proxy keeps loopback local');
my $ca = $e->{ca};

# curl: HTTP and CONNECT
($rc, $out) = $e->in_sandbox('curl -sS http://registry.example.test/pkg', %env);
is($rc, 0, 'curl http through the proxy');
like($out, qr/^registry-ok http registry.example.test \/pkg/, 'registry answered');

($rc, $out) = $e->in_sandbox("curl -sS --cacert $ca https://registry.example.test/tls", %env);
is($rc, 0, 'curl https through CONNECT');
like($out, qr/^registry-ok https registry.example.test \/tls/, 'TLS end to end');

# the proxy rewrites the request: origin-form, Host from the target,
# Connection: close, no proxy headers
my ($seen) = grep { ($_->{path} // '') eq '/pkg' } $e->host_log;
is($seen->{headers}{host}, 'registry.example.test', 'Host set from the target');
is($seen->{headers}{connection}, 'close', 'upstream told Connection: close');
ok(!exists $seen->{headers}{'proxy-connection'}, 'Proxy-Connection dropped');

# wildcard: *.example.test matches below it, not beside it
($rc, $out) = $e->in_sandbox('curl -sS http://a.example.test/w', %env);
like($out, qr/registry-ok http a.example.test/, '*.example.test matches a.example.test');
($rc, $out) = $e->in_sandbox('curl -sS http://b.a.example.test/w', %env);
like($out, qr/registry-ok http b.a.example.test/, '... and b.a.example.test');
for my $h (qw(evil-example.test example.test.evil)) {
    ($rc, $out) = $e->in_sandbox("curl -sS -i http://$h/w", %env);
    like($out, qr{^HTTP/1.1 403}, "$h refused");
    like($out, qr/blocked by Veto Sandbox egress policy: \Q$h\E:80 is not allowed/,
        "$h: the clear message");
}
($rc, $out) = $e->in_sandbox('curl -sS -i http://example.test/w', %env);
like($out, qr/is not allowed/, '*.example.test does not match example.test itself');

# ports: no port in an entry means 80 and 443 only; an explicit port is exact
($rc, $out) = $e->in_sandbox('curl -sS -i http://registry.example.test:8080/x', %env);
like($out, qr/registry.example.test:8080 is not allowed/, 'port 8080 not allowed');

# not allowed: 403, the message, recorded; askable says what to ask for
($rc, $out) = $e->in_sandbox('curl -sS -i http://notallowed.test/x', %env);
like($out, qr{^HTTP/1.1 403 Forbidden}, 'not-allowed host: 403');
like($out, qr/blocked by Veto Sandbox egress policy: notallowed.test:80 is not allowed/,
    'not-allowed host: the message');
unlike($out, qr/askable/, 'not askable: no approval hint');
($rc, $out) = $e->in_sandbox("curl -sS -i -p --cacert $ca https://notallowed.test/x", %env);
isnt($rc, 0, 'CONNECT to a not-allowed host fails');
like($out, qr/CONNECT tunnel failed, response 403|403/, 'curl shows the 403 of the CONNECT');
($rc, $out) = $e->in_sandbox('curl -sS -i http://askme.test/x', %env);
like($out, qr/askable: .*network allow "askme.test:80"/, 'askable host: the approval to ask for');

# a raw CONNECT target on an explicitly allowed port
($rc, $out) = $e->in_sandbox(q{python3 -c '
import socket
s = socket.create_connection(("127.0.0.1", 3128))
s.sendall(b"CONNECT target.example.test:7000 HTTP/1.1\r\nHost: target.example.test:7000\r\n\r\n")
h = b""
while b"\r\n\r\n" not in h: h += s.recv(1)
print(h.split(b"\r\n")[0].decode())
print(s.recv(100).decode().strip())
s.sendall(b"ping")
print(s.recv(100).decode())
'});
like($out, qr{HTTP/1.1 200 Connection established\ntarget-hello\necho:ping},
    'CONNECT to target.example.test:7000 tunnels bytes both ways');

# python and node, explicit
($rc, $out) = $e->in_sandbox(q{python3 -c '
import urllib.request, urllib.error
print(urllib.request.urlopen("http://registry.example.test/py").read().decode().strip())
try:
    urllib.request.urlopen("http://notallowed.test/py")
except urllib.error.HTTPError as e:
    print(e.code, e.read().decode().splitlines()[0])
'}, %env);
like($out, qr/registry-ok http registry.example.test \/py/, 'python urllib through HTTP_PROXY');
like($out, qr/403 blocked by Veto Sandbox egress policy: notallowed.test:80 is not allowed/,
    'python sees the 403 and its message');
($rc, $out) = $e->in_sandbox(q{python3 -c '
import ssl, urllib.request
ctx = ssl.create_default_context(cafile="} . $ca . q{")
print(urllib.request.urlopen("https://registry.example.test/pys", context=ctx).read().decode().strip())
'}, %env);
like($out, qr/registry-ok https registry.example.test \/pys/, 'python https through CONNECT');

{
    # node ships with Debian (install-deps); its http module has no proxy
    # support, so the test speaks the proxy protocol as npm's agents do
    # (the explicit half of VetoEgress's $NODE_CLIENT, kept apart: this
    # test is of the explicit mode alone, and its CA is at $ca, not ./ca.pem)
    ($rc, $out) = $e->in_sandbox(q{node -e '
const http = require("http"), tls = require("tls"), fs = require("fs");
http.get({host: "127.0.0.1", port: 3128, path: "http://registry.example.test/node",
          headers: {Host: "registry.example.test"}}, r => {
  let b = ""; r.on("data", d => b += d); r.on("end", () => {
    console.log(b.trim());
    const req = http.request({host: "127.0.0.1", port: 3128, method: "CONNECT",
                              path: "registry.example.test:443"});
    req.on("connect", (res, sock) => {
      const t = tls.connect({socket: sock, servername: "registry.example.test",
                             ca: fs.readFileSync(process.env.TEST_CA)}, () => {
        t.write("GET /nodetls HTTP/1.1\r\nHost: registry.example.test\r\nConnection: close\r\n\r\n");
      });
      let s = ""; t.on("data", d => s += d); t.on("end", () => console.log(s.split("\r\n\r\n")[1].trim()));
    });
    req.end();
  });
});
'}, TEST_CA => $ca);
    like($out, qr/registry-ok http registry.example.test \/node/, 'node http through the proxy');
    like($out, qr/registry-ok https registry.example.test \/nodetls/, 'node https through CONNECT');
}

# no redirects followed by the proxy: the 302 goes back to the client
($rc, $out) = $e->in_sandbox('curl -sS -i http://registry.example.test/redirect', %env);
like($out, qr{^HTTP/1.1 302}, 'a redirect is passed back, not followed');

# the records: every attempt, allowed or refused
my @r = $e->records;
my ($ok) = grep { $_->{host} eq 'registry.example.test' && $_->{kind} eq 'http'
                  && $_->{decision} eq 'allowed' } @r;
ok($ok, 'allowed HTTP attempt recorded');
is($ok->{address}, $e->{reg_ip}, 'record names the address dialled');
ok($ok->{bytes_in} > 0 && $ok->{bytes_out} > 0, 'record counts bytes each way');
ok(defined $ok->{duration_ms}, 'record has a duration');
my ($conn) = grep { $_->{kind} eq 'connect' && $_->{decision} eq 'allowed' } @r;
ok($conn, 'allowed CONNECT recorded');
my ($bad) = grep { $_->{host} eq 'notallowed.test' && $_->{kind} eq 'http' } @r;
is($bad->{decision}, 'refused', 'refused attempt recorded');
is($bad->{reason}, 'host not allowed', 'with the reason');
ok(!exists $bad->{address}, 'a refused name was never resolved or dialled');
my ($ask) = grep { $_->{host} eq 'askme.test' } @r;
ok($ask->{askable}, 'askable refusal marked askable');
my @evil = grep { $_->{host} =~ /^(evil-example\.test|example\.test\.evil)$/ } @r;
is(scalar(grep { $_->{decision} eq 'refused' } @evil), 2, 'both look-alikes recorded refused');

# an allowlist update applies to new connections
($rc, $out) = $e->linkctl('update', '--proxy', $e->{ctl}, '--sandbox', "sb-test-$$",
    '--allow', 'notallowed.test');
is($rc, 0, 'allowlist updated') or diag($out);
($rc, $out) = $e->in_sandbox('curl -sS http://notallowed.test/now', %env);
like($out, qr/registry-ok http notallowed.test/, 'newly allowed host works');
($rc, $out) = $e->in_sandbox('curl -sS -i http://registry.example.test/gone', %env);
like($out, qr/registry.example.test:80 is not allowed/, 'and the old entries are gone');

is($e->trapped, 0, 'nothing was sent to any address but the test hosts');
$e->finish;
done_testing;
