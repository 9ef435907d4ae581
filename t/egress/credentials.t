#!/usr/bin/perl
# Credentials the sandbox never holds: the proxy loads an operator's
# secrets (a bindings file and one file per value), a sandbox gets one
# attached with a placeholder, and the proxy, intercepting TLS for the
# bound host only (a leaf from its own CA), adds the real header upstream
# (the test server checks the token) on every request of a keep-alive
# connection, explicit and transparent.  The placeholder sent anywhere
# the binding does not cover (another allowed host over plain HTTP, the
# bound host outside its path prefix) is refused and recorded as an
# exfiltration attempt; a bound host reached with another SNI or Host is
# refused; an upstream whose certificate does not verify fails closed; a
# secret with CRLF (or readable by others) is refused at load, by name;
# and the value is in no record, log or file the test can find.
use strict;
use warnings;
use lib 't/lib';
use File::Path qw(make_path);
use Test::More;
use VetoEgress;

my $TOKEN = 'tok-' . join('', map { sprintf '%02x', int(rand(256)) } 1 .. 16);
my $PH = 'veto-cred-' . join('', map { sprintf '%02x', int(rand(256)) } 1 .. 16);
my $PH2 = 'veto-cred-' . join('', map { sprintf '%02x', int(rand(256)) } 1 .. 16);

sub write_secret
{
    my ($path, $value, $mode) = @_;
    open(my $fh, '>', $path) or die "$path: $!";
    print $fh $value;
    close $fh;
    chmod $mode, $path;
}

my $e = VetoEgress->start(
    token => $TOKEN,
    prepare => sub {
        my ($h) = @_;
        my $d = "$h->{dir}/creds";
        make_path("$d/secrets");
        chmod 0700, $d, "$d/secrets";
        $h->write_file('creds/bindings', join("\n",
            '# name host header template env [path]',
            'api-token host=a.example.test template="Bearer {{secret}}" env=API_TOKEN path=/private/',
            'wild-token host=*.a.example.test header=Authorization port=443 template="Bearer {{secret}}" env=WILD_TOKEN',
            'bad-upstream host=badcert.example.test template="Bearer {{secret}}" env=BAD_TOKEN',
            'crlf-token host=registry.example.test template="Bearer {{secret}}" env=CRLF_TOKEN',
            'shared-token host=registry.example.test template="Bearer {{secret}}" env=SHARED_TOKEN',
            ''));
        write_secret("$d/secrets/api-token", "$TOKEN\n", 0600);
        write_secret("$d/secrets/wild-token", $TOKEN, 0400);
        write_secret("$d/secrets/bad-upstream", $TOKEN, 0600);
        write_secret("$d/secrets/crlf-token", "$TOKEN\r\nX-Injected: 1", 0600);
        write_secret("$d/secrets/shared-token", $TOKEN, 0644);
        return ("credentials_dir = $d", "ca_dir = $h->{dir}/proxy-ca",
                "upstream_ca_file = $h->{dir}/ca.pem", "leaf_cache_size = 1");
    });
my $dir = $e->{dir};
my $pca = "$dir/proxy-ca/ca.pem";
VetoEgress::must("cat $pca $e->{ca} > $dir/both.pem");

# ---- load ------------------------------------------------------------
my $log = $e->proxy_log_text;
like($log, qr/ready: .*5 credentials/, 'the proxy started with 5 bindings');
like($log, qr/credential crlf-token refused: its value holds a CR or LF byte/,
    'a secret with CRLF is refused at load, by name');
like($log, qr/credential shared-token refused: .*readable by group or others/,
    'a secret readable by others is refused, by name');
like($log, qr/credential api-token loaded: header Authorization for a.example.test\/private\//,
    'a good secret is loaded');
ok(-f $pca, 'the proxy made its CA at first start');
ok(-f "$dir/proxy-ca/ca.key" && ((stat "$dir/proxy-ca/ca.key")[2] & 07777) == 0600,
    'the CA key is mode 0600');
my ($rc, $out) = VetoEgress::sh("openssl x509 -in $pca -noout -text");
like($out, qr/CA:TRUE/, 'the CA certificate is a CA');
like($out, qr/prime256v1|P-256/, 'with a P-256 key');

($rc, $out) = $e->setup_sandbox(id => "sb-crlf-$$", netns => $e->add_netns('x1'),
    allow => ['registry.example.test'],
    credential => ["crlf-token=$PH"]);
isnt($rc, 0, 'attaching a refused secret fails');
like($out, qr/credential_unavailable.*crlf-token.*CR or LF/,
    'with an error naming the secret and why');
($rc, $out) = $e->setup_sandbox(id => "sb-unknown-$$", netns => $e->add_netns('x2'),
    allow => ['registry.example.test'], credential => ["nope=$PH"]);
like($out, qr/unknown_credential/, 'an unknown credential is refused');
($rc, $out) = $e->setup_sandbox(id => "sb-badph-$$", netns => $e->add_netns('x3'),
    allow => ['registry.example.test'], credential => ['api-token=veto-cred-xyz']);
like($out, qr/bad_value.*placeholder/, 'a malformed placeholder is refused');

# ---- a sandbox with the credential -------------------------------------
# a.example.test is in no allow entry: the binding brings it
($rc, $out) = $e->setup_sandbox(
    allow => ['registry.example.test'],
    credential => ["api-token=$PH", "bad-upstream=$PH2"]);
is($rc, 0, 'sandbox set up with two credentials') or diag($out);
my %env = $e->proxy_env;
my $curl = "curl -sS -m 10 --cacert $pca";

($rc, $out) = $e->in_sandbox("$curl -H 'Authorization: Bearer $PH' https://a.example.test/private/one", %env);
like($out, qr/^private-ok \/private\/one 0/,
    'explicit (CONNECT): the placeholder request gets the real token upstream');
($rc, $out) = $e->in_sandbox("$curl https://a.example.test/private/noauth", %env);
like($out, qr/^private-ok/, 'the binding adds the header even when none was sent');
($rc, $out) = $e->in_sandbox("$curl -H 'Authorization: Bearer wrong' https://a.example.test/private/replace", %env);
like($out, qr/^private-ok/, "the binding's header replaces the workload's");

# keep-alive: several requests on one connection, sized and chunked bodies
($rc, $out) = $e->in_sandbox("$curl -v https://a.example.test/private/k1 https://a.example.test/private/k2 2>&1", %env);
like($out, qr/private-ok \/private\/k1 0\n.*private-ok \/private\/k2 0\n/s,
    'keep-alive: the second request is parsed and gets the header too');
like($out, qr/Re-using existing connection/, 'on one connection');
like($out, qr/ALPN: server accepted http\/1.1/, 'ALPN: http/1.1');
like($out, qr/issuer: CN=Veto Sandbox egress CA/, "the leaf is from the proxy's CA");
($rc, $out) = $e->in_sandbox(q{python3 -c '
import http.client, os, ssl
ctx = ssl.create_default_context(cafile=os.environ["PCA"])
c = http.client.HTTPSConnection("127.0.0.1", 3128, context=ctx, timeout=10)
c.set_tunnel("a.example.test", 443)
def go(method, path, body=None, chunked=False):
    h = {"Authorization": "Bearer " + os.environ["PH"]}
    if chunked:
        c.request(method, path, body=iter([body[:1000], body[1000:]]), headers=h, encode_chunked=True)
    else:
        c.request(method, path, body=body, headers=h)
    r = c.getresponse()
    print(r.status, r.read().decode().strip())
go("GET", "/private/k3")
go("POST", "/private/k4", b"x" * 70000)
go("POST", "/private/k5", b"y" * 70000, chunked=True)
go("GET", "/private/k6")
'}, PCA => $pca, PH => $PH, %env);
like($out, qr/^200 private-ok \/private\/k3 0\n200 private-ok \/private\/k4 70000\n200 private-ok \/private\/k5 70000\n200 private-ok \/private\/k6 0$/m,
    'one connection: a Content-Length body and a chunked body relayed whole, every request with the token')
    or diag($out);

# transparent: no proxy variables, the DNS stub answers for the bound host
($rc, $out) = $e->in_sandbox("$curl https://a.example.test/private/transparent");
like($out, qr/^private-ok \/private\/transparent/, 'transparent TLS: the token is added too');

my @hl = grep { ($_->{path} // '') =~ m{^/private/} } $e->host_log;
ok(@hl >= 8, 'the requests reached the server');
is(scalar(grep { ($_->{headers}{authorization} // '') ne 'token-ok' } @hl), 0,
    'every one of them carried the real token (the server checked)');

# ---- refusals -----------------------------------------------------------
($rc, $out) = $e->in_sandbox("curl -sS -i -m 10 -H 'Authorization: Bearer $PH' http://registry.example.test/leak", %env);
like($out, qr{^HTTP/1.1 403}, 'the placeholder to another allowed host (plain HTTP) is refused');
like($out, qr/placeholder of credential api-token was sent to a host it is not bound to/,
    'and says so');
($rc, $out) = $e->in_sandbox("curl -sS -i -m 10 'http://registry.example.test/q?t=$PH'", %env);
like($out, qr{^HTTP/1.1 403}, '... in the request line too');
($rc, $out) = $e->in_sandbox("curl -sS -i -m 10 --data 'token=$PH' http://registry.example.test/body", %env);
like($out, qr{^HTTP/1.1 403}, '... and in the first bytes of the body');
($rc, $out) = $e->in_sandbox("$curl -i -H 'X-Token: $PH' https://a.example.test/public/x", %env);
like($out, qr{^HTTP/1.1 403.*not cover}ms, 'the placeholder to the bound host outside its path prefix is refused');
($rc, $out) = $e->in_sandbox("$curl -i https://a.example.test/public/x", %env);
like($out, qr/registry-ok https a.example.test \/public\/x/,
    'outside the prefix without the placeholder: relayed, no header');
my ($pub) = grep { ($_->{path} // '') eq '/public/x' } $e->host_log;
ok($pub && !exists $pub->{headers}{authorization}, '... and the server saw no Authorization');
($rc, $out) = $e->in_sandbox("$curl -i https://a.example.test/private/..%2fpublic", %env);
my ($enc) = grep { ($_->{path} // '') =~ /%2f/ } $e->host_log;
ok(!$enc || !exists $enc->{headers}{authorization},
    'an encoded slash does not get the header');

# SNI and Host must be the bound host
($rc, $out) = $e->in_sandbox("$curl -i --proxy http://127.0.0.1:3128 --connect-to registry.example.test:443:a.example.test:443 https://registry.example.test/x 2>&1");
isnt($rc, 0, 'CONNECT to the bound host with another SNI fails');
($rc, $out) = $e->in_sandbox("$curl -i -H 'Host: registry.example.test' https://a.example.test/private/host", %env);
like($out, qr{^HTTP/1.1 400.*Host header names another host}ms, 'a Host other than the bound host is refused');
($rc, $out) = $e->in_sandbox("$curl -sS -m 10 --http2 https://a.example.test/private/h2 -w ' %{http_version}'", %env);
like($out, qr/private-ok.* 1.1$/s, 'a client offering h2 gets HTTP/1.1');

# a redirect to another host carries nothing: the proxy sees a new
# connection to a host no credential is bound to
($rc, $out) = $e->in_sandbox("$curl -L --location-trusted --cacert $dir/both.pem -H 'Authorization: Bearer $PH' https://a.example.test/private/redirect", %env);
like($out, qr/registry-ok https registry.example.test \/after-redirect/, 'a redirect to another host is followed');
my ($after) = grep { ($_->{path} // '') eq '/after-redirect' } $e->host_log;
isnt($after->{headers}{authorization} // '', 'token-ok', '... and the token does not follow it');

# on one intercepted connection: a second request naming another Host is
# refused (after the first got its answer); a head over 16 KiB is
# refused; a client offering only h2 in ALPN fails the handshake
($rc, $out) = $e->in_sandbox(q{python3 -c '
import os, socket, ssl
ctx = ssl.create_default_context(cafile=os.environ["PCA"])
def tunnel(alpn=None):
    s = socket.create_connection(("127.0.0.1", 3128), timeout=10)
    s.sendall(b"CONNECT a.example.test:443 HTTP/1.1\r\nHost: a.example.test:443\r\n\r\n")
    assert s.recv(4096).startswith(b"HTTP/1.1 200")
    if alpn:
        ctx.set_alpn_protocols(alpn)
    return ctx.wrap_socket(s, server_hostname="a.example.test")
def drain(t):
    out = b""
    while True:
        try:
            d = t.recv(65536)
        except (ssl.SSLError, ConnectionError):
            break
        if not d:
            break
        out += d
    return out.decode("latin-1")
t = tunnel()
t.sendall(b"GET /private/a HTTP/1.1\r\nHost: a.example.test\r\n\r\n")
first = b""
while b"private-ok" not in first:
    first += t.recv(4096)
t.sendall(b"GET /private/b HTTP/1.1\r\nHost: registry.example.test\r\n\r\n")
print("SEQ", (first.decode() + drain(t)).replace("\r\n", "|"))
t = tunnel()
t.sendall(b"GET /private/c HTTP/1.1\r\nHost: a.example.test\r\n\r\n"
          b"GET /private/d HTTP/1.1\r\nHost: registry.example.test\r\n\r\n")
print("PIPE", drain(t).split("\r\n")[0])
t = tunnel()
t.sendall(b"GET /private/big HTTP/1.1\r\nHost: a.example.test\r\nX-Pad: " + b"p" * 17000 + b"\r\n\r\n")
print("BIG", drain(t).split("\r\n")[0])
t = tunnel()
t.sendall(b"POST /private/s HTTP/1.1\r\nHost: a.example.test\r\nContent-Length: 3\r\nTransfer-Encoding: chunked\r\n\r\n0\r\n\r\n")
print("SMUGGLE", drain(t).split("\r\n")[0])
try:
    tunnel(["h2"]).sendall(b"x")
    print("H2 accepted")
except ssl.SSLError as e:
    print("H2 refused", e.reason)
'}, PCA => $pca, %env);
like($out, qr/^SEQ HTTP\/1.1 200 OK.*private-ok \/private\/a 0.*HTTP\/1.1 400 Bad Request.*Host header names another host/ms,
    'a second request naming another Host on the connection is refused (the first was answered)')
    or diag($out);
like($out, qr/^PIPE HTTP\/1.1 400/m, '... pipelined too (the refusal ends the connection)');
like($out, qr/^BIG HTTP\/1.1 400/m, 'a head over 16 KiB is refused');
like($out, qr/^SMUGGLE HTTP\/1.1 400/m, 'Content-Length with Transfer-Encoding is refused');
like($out, qr/^H2 refused/m, 'a client offering only h2 fails the handshake (HTTP/1.1 only)');
my @pipe = grep { ($_->{path} // '') =~ m{^/private/[bd]$} } $e->host_log;
is(scalar @pipe, 0, 'the refused requests never reached the host');

# upstream with a certificate that does not verify: closed, nothing sent
($rc, $out) = $e->in_sandbox("$curl -i https://badcert.example.test/private/bad", %env);
like($out, qr{^HTTP/1.1 502.*certificate is not trusted: hostname mismatch}ms,
    'an upstream with a bad certificate fails closed (502, says why)');
ok(!grep({ ($_->{path} // '') eq '/private/bad' } $e->host_log),
    'and no request reached it');

# leaves: minted once per host while cached; the cache holds
# leaf_cache_size (1 here) and replaces the least recently used
sub minted
{
    my ($r, $o) = $e->linkctl('stats', '--proxy', $e->{ctl});
    my $n;
    for my $l (split /\n/, $o) {
        my $j = eval { JSON::PP->new->decode($l) } or next;
        if (($j->{event} // '') eq 'attempt') {
            push @{ $e->{stashed} }, $j;    # records() returns them
        } elsif (($j->{op} // '') eq 'stats') {
            $n = $j->{leaf_certificates};
        }
    }
    return $n;
}
my $m0 = minted();
$e->in_sandbox("$curl https://a.example.test/private/leaf1", %env);
my $m1 = minted();
$e->in_sandbox("$curl https://a.example.test/private/leaf2", %env);
is(minted(), $m1, 'a second connection to the same host reuses its leaf');
$e->in_sandbox("$curl https://badcert.example.test/private/leaf3", %env);
is(minted(), $m1 + 1, 'another host gets its own leaf');
$e->in_sandbox("$curl https://a.example.test/private/leaf4", %env);
is(minted(), $m1 + 2, 'which replaced the first in a cache of one (bounded)');
($rc, $out) = VetoEgress::sh("ip netns exec $e->{sandbox} sh -c 'echo | openssl s_client -proxy 127.0.0.1:3128 -connect a.example.test:443 -servername a.example.test 2>/dev/null' | openssl x509 -noout -text");
like($out, qr/ASN1 OID: prime256v1/, 'the leaf is P-256');
like($out, qr/DNS:a.example.test/, 'named for the host');

# ---- records and counters -------------------------------------------------
my @r = $e->records;
my @inj = grep { ($_->{credential} // '') eq 'api-token' && $_->{decision} eq 'allowed' } @r;
ok(@inj >= 4, 'attempts name the credential used') or diag(explain(\@r));
my ($ka) = grep { ($_->{injections} // 0) == 4 } @inj;
ok($ka, 'the keep-alive connection counted one injection per request');
my @ex = grep { $_->{exfiltration} } @r;
ok(@ex >= 4, 'refused placeholders are recorded as exfiltration attempts');
is($ex[0]{credential}, 'api-token', 'naming the credential');
is($ex[0]{decision}, 'refused', 'refused');
my ($bad) = grep { ($_->{host} // '') eq 'badcert.example.test' } @r;
is($bad->{decision}, 'error', 'the bad upstream is recorded as an error');
like($bad->{reason}, qr/not trusted/, 'with why');
my ($sni) = grep { ($_->{host} // '') eq 'a.example.test' && ($_->{reason} // '') =~ /SNI/ } @r;
ok($sni && $sni->{decision} eq 'refused', 'the SNI mismatch is recorded, refused');

my $st = $e->stats->{"sb-test-$$"};
ok($st->{injections} >= 8, "stats count injections ($st->{injections})");
ok($st->{placeholders_refused} >= 4, "stats count refused placeholders ($st->{placeholders_refused})");

# ---- live attach and detach ---------------------------------------------
($rc, $out) = $e->linkctl('update', '--proxy', $e->{ctl}, '--sandbox', "sb-test-$$",
    '--allow', 'registry.example.test');
is($rc, 0, 'update without credentials keeps them') or diag($out);
($rc, $out) = $e->in_sandbox("$curl https://a.example.test/private/still", %env);
like($out, qr/^private-ok/, '... still injected');
($rc, $out) = $e->linkctl('raw', '--proxy', $e->{ctl}, qq({"op":"update","sandbox":"sb-test-$$","allow":["registry.example.test"],"credentials":[]}));
like($out, qr/"ok":true/, 'detached (credentials: [])');
($rc, $out) = $e->in_sandbox("curl -sS -m 10 https://a.example.test/private/gone 2>&1", %env);
like($out, qr/403|not allowed/, 'the bound host left the allowlist with it');
($rc, $out) = $e->linkctl('raw', '--proxy', $e->{ctl}, qq({"op":"update","sandbox":"sb-test-$$","allow":["registry.example.test"],"credentials":[{"name":"wild-token","placeholder":"$PH"}]}));
like($out, qr/"ok":true/, 'attached to the live sandbox');
($rc, $out) = $e->in_sandbox("$curl https://b.a.example.test/private/wild", %env);
like($out, qr/^private-ok/, '*.a.example.test covers b.a.example.test');
($rc, $out) = $e->in_sandbox("curl -sS -m 10 -i https://a.example.test/private/apex 2>&1", %env);
like($out, qr/403|not allowed/, '... never the apex a.example.test');

# ---- the value is nowhere ----------------------------------------------------
$e->records;
my $all = join("\n", map { JSON::PP->new->canonical->encode($_) } @{ $e->{all_records} });
unlike($all, qr/\Q$TOKEN\E/, 'no attempt record holds the value');
my $plog = $e->proxy_log_text;
unlike($plog, qr/\Q$TOKEN\E/, 'the proxy log does not hold it');
unlike($plog, qr/\Q$PH\E/, 'nor the placeholder');
($rc, $out) = VetoEgress::sh("grep -rl --exclude-dir=creds -- '$TOKEN' $dir");
is($out, '', 'no file of the test outside the secrets holds it (logs, records)');
# (this test's "sandbox" is a network namespace over the host's files:
# its environment is what a workload would hold; the files of a real
# sandbox are searched in t/egress/credentials-helper.t)
($rc, $out) = $e->in_sandbox("tr '\\0' '\\n' </proc/self/environ | grep -c -- '$TOKEN'; env | grep -c -- '$TOKEN'", %env);
is($out, "0\n0\n", 'nor the sandbox environment (/proc/self/environ, env)');

is($e->trapped, 0, 'nothing was sent to any address but the test hosts');
$e->finish;
done_testing;
