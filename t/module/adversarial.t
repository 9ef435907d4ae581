#!/usr/bin/perl
# An agent holding a valid token tries to get more than it was given:
# an approval stretched over another file (ambiguous ?path=), exec_argv
# rules dodged with a path, a wrapper or a shell, a command hidden from
# the reviewer by redaction or in stdin, a token that cannot be revoked,
# a revocation key of the wrong type, corrupted approval records, and
# refusals that left no trace in the tenant's audit stream.

use strict;
use warnings;

use Test::More;
use lib 't/lib';
use VetoNginx;
use Eventually qw(eventually);
use MIME::Base64 qw(encode_base64url);
use Time::HiRes qw(time sleep);
use IO::Socket::INET;

VetoNginx::need(qw(helper redis));

my $policy = {
    version => 1,
    tenants => {
        acme => {
            profiles => ['default'],
            ceilings => { memory_mb => 512, timeout_s => 30, ttl_s => 3600 },
            approvals => { export => JSON::PP::true,
                           exec_argv => ['curl *', 'git push*', 'sh -c *',
                                         'sh'] },
        },
    },
};

my $n = VetoNginx->new;
$n->start_redis;
$n->start_helper;
$n->start(redis => 1, policy => $policy);

my $J = $VetoNginx::JSON;
my $agent = $n->token(sub => 'agent-x');
my $rev = $n->token(sub => 'human-x',
                    scope => 'approvals:review audit:read');
my ($st, $h, $b, $j);

eventually('the gateway gets past Redis (not 503)', 10, sub {
    ($st, $h, $b, $j) = $n->request(POST => '/v1/sandboxes', $agent,
                                    { ttl_s => 600 });
    $st != 503;
});
is($st, 201, 'create') or diag $b;
my $sb = $j->{id};

for my $f (['ok.txt', "public\n"], ['secret.txt', "the secret\n"]) {
    ($st) = $n->request(PUT => "/v1/sandboxes/$sb/files?path=$f->[0]",
                        $agent, $f->[1]);
    is($st, 200, "write $f->[0]");
}

sub approve
{
    my ($id) = @_;
    my ($st, undef, $b) = $n->request(POST => "/v1/approvals/$id/approve",
                                      $rev, '');
    is($st, 200, "approve $id") or diag $b;
}

# ---- one approval, one file: ?path= must be unambiguous
# Both orders of two path= arguments hash alike (the canonical query
# sorts them); the API must not read one while the human approved the
# other.
for my $q ('path=ok.txt&path=secret.txt', 'path=ok.txt&PATH=secret.txt',
           'PATH=secret.txt&path=ok.txt', 'path=ok.txt&x=1',
           'path=%zz', 'path=ok.txt%2', 'pa%zzth=ok.txt')
{
    ($st, $h, $b, $j) = $n->request(GET => "/v1/sandboxes/$sb/files?$q",
                                    $agent);
    is($st, 400, "ambiguous query \"$q\": 400, no approval asked")
        or diag $b;
    # the argument at fault: path, the other one, or the query when a
    # name does not decode
    my $at = $q =~ /PATH=/ ? 'PATH' : $q =~ /x=1/ ? 'x'
           : $q =~ /^pa%zz/ ? 'query' : 'path';
    is($j->{field}, $at, "\"$q\": field $at");
}

($st, $h, $b, $j) = $n->request(GET => "/v1/sandboxes/$sb/files?p%61th=ok.txt",
                                $agent);
is($st, 202, 'an encoded but unambiguous name: approval asked');
is($j->{summary}{path}, 'ok.txt', 'the summary names the file read');
my $id = $j->{approval_id};
approve($id);
($st, $h, $b) = $n->request(GET => "/v1/sandboxes/$sb/files?path=ok.txt",
                            $agent, undef, { 'Veto-Approval' => $id });
is($st, 200, 'same canonical request, other spelling: served');
is($b, "public\n", 'the approved file');

# ---- exec_argv: a path, a wrapper or a shell does not dodge "curl *"
my %argv = (
    'absolute path'         => ['/usr/bin/curl', 'http://127.0.0.1:1/'],
    'env wrapper'           => ['env', 'A=1', 'curl', 'http://127.0.0.1:1/'],
    'timeout wrapper'       => ['timeout', '5', 'curl', 'http://127.0.0.1:1/'],
    'shell, after &&'       => ['bash', '-c', 'cd /tmp && curl http://127.0.0.1:1/'],
    'shell, after ;'        => ['bash', '-c', 'true;curl http://127.0.0.1:1/'],
    'shell, in $()'         => ['bash', '-c', 'echo $(curl http://127.0.0.1:1/)'],
    'git with a path'       => ['/usr/bin/git', 'push', 'origin'],
);
for my $name (sort keys %argv) {
    ($st, $h, $b, $j) = $n->request(POST => "/v1/sandboxes/$sb/exec", $agent,
                                    { argv => $argv{$name} });
    is($st, 202, "exec_argv: $name needs a human") or diag $b;
}
($st, $h, $b, $j) = $n->request(POST => "/v1/sandboxes/$sb/exec", $agent,
                                { argv => ['echo', 'curly'] });
is($st, 200, 'exec_argv: an unrelated command runs') or diag $b;

# a huge argv never reaches the pattern search in the event loop: over
# the helper's 64 KiB request it is refused before any approval is asked
($st, $h, $b, $j) = $n->request(POST => "/v1/sandboxes/$sb/exec", $agent,
                                { argv => ['echo', 'x' x 70000] });
is($st, 413, 'exec_argv: an argv over 64 KiB: 413, no approval asked');
is($j->{limit}, 'request_json', 'naming the limit');
($st, $h, $b, $j) = $n->request(POST => "/v1/sandboxes/$sb/exec", $agent,
                                { argv => ['echo', 'x' x 60000] });
is($st, 200, 'exec_argv: a 60 KiB argv is searched, and runs') or diag $b;

# ---- the reviewer sees what would run
my $cmd = 'PASSWORD="$(id${IFS}-u>/tmp/p)"; echo ok';
($st, $h, $b, $j) = $n->request(POST => "/v1/sandboxes/$sb/exec", $agent,
                                { argv => ['sh', '-c', $cmd] });
is($st, 202, 'sh -c: approval');
is($j->{summary}{argv}[2], $cmd,
   'a command in a secret-looking value is shown, exactly') or diag $b;
($st, $h, $b, $j) = $n->request(POST => "/v1/sandboxes/$sb/exec", $agent,
                  { argv => ['sh', '-c', "$cmd; echo password=hunter2"] });
is($st, 422, 'a plain password inline: refused, never shown hidden') or diag $b;
unlike($b, qr/hunter2/, '... and not echoed');

($st, $h, $b, $j) = $n->request(POST => "/v1/sandboxes/$sb/exec", $agent,
                                { argv => ['sh'],
                                  stdin => "id -u > /tmp/q\n" });
is($st, 202, 'sh with a script on stdin: approval');
is($j->{summary}{stdin}, "id -u > /tmp/q\n", 'the summary shows stdin');
is($j->{summary}{stdin_bytes}, 15, 'and its size');

# ---- jti: present means usable for revocation
for my $bad ([12345, 'a number'], ['j' x 129, '129 bytes'],
             ['a b', 'a space'])
{
    ($st, $h, $b) = $n->request(GET => '/v1/sandboxes',
                                $n->token(sub => 'agent-x', jti => $bad->[0]));
    is($st, 401, "jti as $bad->[1]: 401");
    like($h->{'www-authenticate'} // '', qr/invalid jti/, 'says jti');
}

# revocation on a cached token, and a revocation key of the wrong type
my $tk = $n->token(sub => 'agent-x', jti => 'jti-cached');
($st) = $n->request(GET => '/v1/sandboxes', $tk) for 1 .. 2;
is($st, 200, 'token accepted (and cached)');
$n->redis->set('veto:{acme}:revoked:jti:jti-cached', 1);
($st) = $n->request(GET => '/v1/sandboxes', $tk);
is($st, 401, 'revoked while cached: 401');
$n->redis->del('veto:{acme}:revoked:jti:jti-cached');
$n->redis->hset('veto:{acme}:revoked:agent:agent-x', 'by', 'mistake');
($st) = $n->request(GET => '/v1/sandboxes', $tk);
is($st, 401, 'an agent revocation key of the wrong type revokes (fail closed)');
$n->redis->del('veto:{acme}:revoked:agent:agent-x');
$n->redis->sadd('veto:{acme}:revoked:jti:jti-cached', 'x');
($st) = $n->request(GET => '/v1/sandboxes', $tk);
is($st, 401, 'a jti revocation key of the wrong type revokes');
$n->redis->del('veto:{acme}:revoked:jti:jti-cached');
($st) = $n->request(GET => '/v1/sandboxes', $tk);
is($st, 200, 'and the token works again once it is gone');

# ---- corrupted approval records never allow
my $argv = { argv => ['git', 'push', 'origin', 'main'] };
($st, $h, $b, $j) = $n->request(POST => "/v1/sandboxes/$sb/exec", $agent, $argv);
is($st, 202, 'git push: approval');
my $aid = $j->{approval_id};
my $hash = $j->{request_hash};
my $key = "veto:{acme}:appr:$aid";
$n->redis->del($key);
$n->redis->set($key, 'approved');
($st, $h, $b, $j) = $n->request(POST => "/v1/sandboxes/$sb/exec", $agent, $argv,
                                { 'Veto-Approval' => $aid });
is($st, 503, 'approval record of the wrong type: 503, not run') or diag $b;
$n->redis->del($key);
$n->redis->hset($key, 'tenant', 'acme', 'state', 'approved', 'agent', 'agent-x',
                'action', 'sandbox.exec', 'hash', $hash);
($st, $h, $b, $j) = $n->request(POST => "/v1/sandboxes/$sb/exec", $agent, $argv,
                                { 'Veto-Approval' => $aid });
is($st, 503, 'approved record without expires_ms: 503, not run') or diag $b;
$n->redis->hset($key, 'expires_ms', 'soon');
($st, $h, $b, $j) = $n->request(POST => "/v1/sandboxes/$sb/exec", $agent, $argv,
                                { 'Veto-Approval' => $aid });
isnt($st, 200, "approved record with a bad expires_ms: $st, not run");
$n->redis->hdel($key, 'hash');
$n->redis->hset($key, 'expires_ms', int(time() * 1000) + 60000);
($st, $h, $b, $j) = $n->request(POST => "/v1/sandboxes/$sb/exec", $agent, $argv,
                                { 'Veto-Approval' => $aid });
is($st, 403, 'approved record without its hash: 403 mismatch') or diag $b;

# ---- refusals before the gate are on the tenant's record
sub audit_count
{
    my ($tenant, $reason) = @_;
    my $r = $n->redis->xrange("veto:{$tenant}:audit", '-', '+');
    return scalar grep {
        my %f = @{ $_->[1] };
        ($f{outcome} // '') eq 'denied' && ($f{reason} // '') eq $reason
    } @$r;
}

sleep 0.2;    # the records of the requests before have landed
my $before = audit_count('acme', 'invalid_token');
($st) = $n->request(GET => '/v1/sandboxes',
                    $n->token(sub => 'agent-x', exp => int(time()) - 3600));
is($st, 401, 'expired token: 401');
($st) = $n->request(POST => "/v1/sandboxes/$sb/exec",
                    $n->token(sub => 'agent-x', scope => 'sandbox:files'),
                    { argv => ['true'] });
is($st, 403, 'missing scope: 403');
($st) = $n->request(POST => '/v1/sandboxes', $agent,
                    { limits => { memory_mb => 4096 } });
is($st, 422, 'over the ceiling: 422');
($st) = $n->request(POST => '/v1/sandboxes', $agent, { profile => 'root' });
is($st, 404, 'a profile the host does not have: 404 (not a policy matter)');
($st) = $n->request(GET => '/v1/sandboxes',
                    $n->token(sub => 'agent-x', tenant => 'nobody'));
is($st, 403, 'tenant not in the policy: 403');
# unsigned junk claiming a tenant writes nothing anywhere
my $junk = encode_base64url($J->encode({ alg => 'RS256', kid => 'rsa-1' }))
         . '.' . encode_base64url($J->encode({ sub => 'x', tenant => 'acme' }))
         . '.' . encode_base64url('nope');
($st) = $n->request(GET => '/v1/sandboxes', $junk);
is($st, 401, 'a forged token: 401');
eventually('the invalid_token record', 5,
           sub { audit_count('acme', 'invalid_token') - $before >= 1 });

is(audit_count('acme', 'invalid_token') - $before, 1,
   'audit: one invalid_token (the expired, signed token; not the forgery)');
is(audit_count('acme', 'insufficient_scope'), 1, 'audit: insufficient_scope');
is(audit_count('acme', 'over_ceiling'), 1, 'audit: over_ceiling');
is(audit_count('acme', 'profile_not_allowed'), 0,
   'audit: no profile_not_allowed for a profile that does not exist');
is(audit_count('nobody', 'policy'), 1, 'audit: tenant not in the policy');

my $r = $n->redis->xrange('veto:{acme}:audit', '-', '+');
my ($exp) = grep { my %f = @{ $_->[1] }; ($f{detail} // '') =~ /expired/ } @$r;
my %f = @{ $exp->[1] };
is($f{agent}, 'agent-x', 'the refused token\'s sub is recorded');
like($f{detail} // '', qr/token expired/, 'and why');
like($n->access_log, qr/401 GET \/v1\/sandboxes agent=agent-x tenant=acme decision=deny:invalid_token/,
     'the access log names the refused token\'s identity too');

# ---- JWT header fields that must not choose the key
{
    require Crypt::PK::RSA;
    my $evil = Crypt::PK::RSA->new;
    $evil->generate_key(256, 65537);
    my $jwk = $J->decode($evil->export_key_jwk('public'));
    my $t = $n->token(sub => 'agent-x', key => \$evil->export_key_pem('private'),
                      header => { jwk => $jwk, jku => 'http://127.0.0.1:1/k',
                                  x5u => 'http://127.0.0.1:1/c' });
    ($st) = $n->request(GET => '/v1/sandboxes', $t);
    is($st, 401, 'a token signed by the key in its own jwk header: 401');
    ($st) = $n->request(GET => '/v1/sandboxes',
                        $n->token(sub => 'agent-x',
                                  header => { jku => 'http://127.0.0.1:1/k' }));
    is($st, 200, 'jku is ignored: our key decides');
    ($st) = $n->request(GET => '/v1/sandboxes',
                        $n->token(sub => 'agent-x', kid => "rsa-1\x{7f}"));
    is($st, 401, 'kid with an odd byte: unknown kid');
}
for my $c (['sub', 'agent x', 'a space'], ['sub', 'a' x 129, '129 bytes'],
           ['tenant', { name => 'acme' }, 'an object'],
           ['exp', '' . (int(time()) + 300), 'a string'])
{
    ($st, $h, $b) = $n->request(GET => '/v1/sandboxes',
                                $n->token($c->[0] => $c->[1]));
    is($st, 401, "$c->[0] as $c->[2]: a clean 401");
    like($h->{'content-type'} // '', qr/problem\+json/, 'problem+json');
}
# hand-made HS256 tokens: raw JSON, so claims can be duplicated
sub hs_raw
{
    my ($hdr, $payload) = @_;
    require Digest::SHA;
    my $si = encode_base64url($hdr) . '.' . encode_base64url($payload);
    return "$si." . encode_base64url(Digest::SHA::hmac_sha256($si, $n->{secret}));
}
my $claims = sprintf('"iss":"%s","aud":"%s","exp":%d,"scope":"sandbox:create"',
                     $n->{issuer}, $n->{audience}, time() + 300);
($st) = $n->request(GET => '/v1/sandboxes',
                    hs_raw('{"alg":"HS256","kid":"hs-1"}',
                           qq({$claims,"sub":"agent-x","tenant":"acme"})));
is($st, 200, 'a hand-made HS256 token: accepted');
($st) = $n->request(GET => '/v1/sandboxes',
                    hs_raw('{"alg":"HS256","kid":"hs-1"}',
                           qq({$claims,"sub":"agent-x","tenant":"globex","tenant":"acme"})));
is($st, 401, 'a duplicated tenant claim: 401');
($st) = $n->request(GET => '/v1/sandboxes',
                    hs_raw('{"alg":"HS256","kid":"hs-1","kid":"rsa-1"}',
                           qq({$claims,"sub":"agent-x","tenant":"acme"})));
is($st, 401, 'a duplicated header field: 401');
($st) = $n->request(GET => '/v1/sandboxes',
                    hs_raw('{"alg":"HS256","kid":"hs-1","crit":["exp"]}',
                           qq({$claims,"sub":"agent-x","tenant":"acme"})));
is($st, 401, 'crit: 401');
($st) = $n->request(GET => '/v1/sandboxes',
                    hs_raw('{"alg":"HS256","kid":"hs-1"}',
                           qq({$claims,"sub":"agent-x","tenant":"acme","exp":1e300})));
is($st, 401, 'a huge (and duplicated) exp: 401');
($st) = $n->request(GET => '/v1/sandboxes', $n->token(exp => time() + 300.5));
is($st, 200, 'exp as a float: accepted');
($st) = $n->request(GET => '/v1/sandboxes', undef, undef,
                    { Authorization => 'bearer ' . $agent });
is($st, 200, 'lower-case scheme: accepted (RFC 7235)');
($st) = $n->request(GET => "/v1/sandboxes?access_token=$agent");
is($st, 401, 'a token in the query string is ignored');
($st) = $n->request(GET => '/v1/sandboxes', undef, undef,
                    { Cookie => "access_token=$agent" });
is($st, 401, 'a token in a cookie is ignored');
($st, $h) = $n->request(GET => '/v1/sandboxes', undef, undef,
                        { Authorization => ["Bearer $agent", "Bearer $junk"] });
is($st, 400, 'two Authorization headers: 400');
like($h->{'content-type'} // '', qr/problem\+json/, 'as problem+json');

# ---- request lines nginx parses its own way
sub raw
{
    my ($line, @hdr) = @_;
    my $s = IO::Socket::INET->new(PeerAddr => '127.0.0.1:' . $n->port,
                                  Timeout => 5) or die "connect: $!";
    print $s join("\r\n", $line, 'Host: x', @hdr, 'Connection: close', '', '');
    local $/;
    my $res = <$s> // '';
    close $s;
    return $res =~ m{^HTTP/1\.[01] (\d+)} ? $1 : 0;
}
is(raw('GET http://127.0.0.1/v1/sandboxes HTTP/1.1'), 401,
   'absolute-form request line: still 401');
is(raw('GET http://127.0.0.1/v1/sandboxes HTTP/1.1', "Authorization: Bearer $agent"),
   200, 'absolute-form with a token: served');
is(raw('FOO /v1/sandboxes HTTP/1.1'), 401, 'an unknown method: 401 first');
is(raw('TRACE /v1/sandboxes HTTP/1.1'), 405, 'TRACE: 405 from nginx');
is(raw("HEAD /v1/sandboxes/$sb/exec HTTP/1.1", "Authorization: Bearer $agent"),
   405, 'HEAD on exec: 405');
is(raw("GET /v1/sandboxes/$sb/exec HTTP/1.1", "Authorization: Bearer $agent"),
   405, 'GET on exec: 405');
is(raw('GET /v1/./sandboxes/../sandboxes HTTP/1.1'), 401, 'dot segments: 401');
is(raw('GET /v1/sandboxes%2F HTTP/1.1', "Authorization: Bearer $agent"), 404,
   'an encoded slash: no route');

# ---- a client that goes away while the request waits for Redis, or
# while a large file goes out: no crash, the next request is served
sub abort_after
{
    my ($req, $read) = @_;
    my $s = IO::Socket::INET->new(PeerAddr => '127.0.0.1:' . $n->port,
                                  Timeout => 5) or die "connect: $!";
    print $s $req;
    if ($read) {
        my $buf;
        sysread($s, $buf, $read);
    } else {
        sleep 0.2;    # on purpose: a client that waits, then goes
    }
    close $s;
}
$n->pause_redis;
abort_after("GET /v1/sandboxes HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer $agent\r\n\r\n")
    for 1 .. 5;
$n->resume_redis;
sleep 1.2;      # the commands' timers fire on requests long gone

my $big = 'z' x (4 * 1024 * 1024);
($st) = $n->request(PUT => "/v1/sandboxes/$sb/files?path=big.bin", $agent, $big);
is($st, 200, 'a 4 MiB file');
($st, $h, $b, $j) = $n->request(GET => "/v1/sandboxes/$sb/files?path=big.bin", $agent);
is($st, 202, 'its export asks');
approve($j->{approval_id});
abort_after("GET /v1/sandboxes/$sb/files?path=big.bin HTTP/1.1\r\nHost: x\r\n"
            . "Authorization: Bearer $agent\r\nVeto-Approval: $j->{approval_id}\r\n\r\n",
            65536);
($st) = $n->request(GET => '/v1/sandboxes', $agent);
is($st, 200, 'after the aborted requests the worker serves');
unlike($n->error_log, qr/\[(alert|emerg)\]|exited on signal/, 'no worker crashed');

done_testing;
