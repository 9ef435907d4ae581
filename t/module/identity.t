#!/usr/bin/perl
# ngx_veto_sandbox_module: identity (JWT attacks), scopes, bypass
# resistance, policy ceilings and problem+json for every error.  No helper
# runs here: a request that gets past identity and policy answers 503
# helper_unavailable, which is how "accepted" shows.

use strict;
use warnings;

use Test::More;
use MIME::Base64 qw(encode_base64url decode_base64url);
use lib 't/lib';
use VetoNginx;

VetoNginx::need();

my $n = VetoNginx->new;
my $d = $n->dir;

$n->start(server_extra => <<'EOF', max_body => '1m');
        location /v1/health-bypass { return 200 "bypassed\n"; }
        location = /v1/open { return 200 "open\n"; }
        rewrite ^/api/(.*)$ /v1/$1 last;
EOF

my $J = $VetoNginx::JSON;

sub is_problem
{
    my ($name, $st, $h, $body, $want) = @_;
    is($st, $want, "$name: status $want");
    like($h->{'content-type'} // '', qr{^application/problem\+json},
         "$name: problem+json");
    my $p = eval { $J->decode($body) } // {};
    is($p->{status}, $want, "$name: problem status");
    ok(defined $p->{type} && defined $p->{title} && defined $p->{detail},
       "$name: type, title, detail") or diag $body;
    return $p;
}

# ---- accepted tokens (RS256, ES256, HS256): past identity, helper down
for my $alg (qw(RS256 ES256 HS256)) {
    my ($st, $h, $b) = $n->request(GET => '/v1/sandboxes',
                                   $n->token(alg => $alg));
    my $p = is_problem("$alg accepted", $st, $h, $b, 503);
    is($p->{type}, 'urn:veto-sandbox:problem:helper_unavailable',
       "$alg: refused only for want of the helper");
}

# ---- refused tokens: 401 invalid_token with RFC 6750 challenge
sub refused
{
    my ($name, $tok, $reason) = @_;
    my ($st, $h, $b) = $n->request(GET => '/v1/sandboxes', undef, undef,
                                   { Authorization => "Bearer $tok" });
    my $p = is_problem($name, $st, $h, $b, 401);
    like($h->{'www-authenticate'} // '',
         qr/^Bearer realm="veto-sandbox", error="invalid_token", error_description="[^"]+"$/,
         "$name: WWW-Authenticate invalid_token");
    like($p->{detail} // '', $reason, "$name: detail says why")
        if $reason;
}

my $now = int(time);
my $good = $n->token;
my ($gh, $gp, $gs) = split /\./, $good;

refused('alg none, unsigned',
        encode_base64url($J->encode({ alg => 'none', kid => 'rsa-1' })) . ".$gp.",
        qr/unsigned/);
refused('alg none with a signature',
        encode_base64url($J->encode({ alg => 'none', kid => 'rsa-1' }))
        . ".$gp.$gs", qr/alg not accepted/);

# RS256 -> HS256 confusion: the public key PEM as the HMAC secret
my $pub = VetoNginx::slurp("$d/rsa.pub");
refused('RS->HS confusion (public key as HMAC secret)',
        $n->token(alg => 'HS256', kid => 'rsa-1', key => $pub),
        qr/alg does not match its key/);
refused('ES256 token under an RSA kid',
        $n->token(alg => 'ES256', kid => 'rsa-1'),
        qr/alg does not match/);
refused('wrong kid', $n->token(kid => 'rsa-9'), qr/unknown kid/);
refused('no kid with several keys', $n->token(kid => undef),
        qr/no kid/);
refused('signed by an unknown key under a known kid',
        $n->token(key => \VetoNginx::slurp("$d/rsa-other.key")),
        qr/bad signature/);

refused('expired beyond leeway', $n->token(exp => $now - 120, iat => $now - 600),
        qr/expired/);
{
    my ($st) = $n->request(GET => '/v1/sandboxes',
                           $n->token(exp => $now - 10, iat => $now - 600));
    is($st, 503, 'expired 10 s ago, inside the 30 s leeway: accepted');
}
refused('no exp', $n->token(exp => undef), qr/no exp/);
refused('absurd exp (overflow attempt)', $n->token(exp => 2**62), qr/bad exp/);
refused('exp as a string', $n->token(exp => "9999999999"), qr/bad exp/);
refused('nbf in the future', $n->token(nbf => $now + 300), qr/not yet valid/);
{
    my ($st) = $n->request(GET => '/v1/sandboxes', $n->token(nbf => $now + 10));
    is($st, 503, 'nbf 10 s ahead, inside the leeway: accepted');
}
refused('iat in the future', $n->token(iat => $now + 300), qr/future/);
refused('wrong iss', $n->token(iss => 'https://evil.test'), qr/issuer/);
refused('no iss', $n->token(iss => undef), qr/issuer/);
refused('wrong aud', $n->token(aud => 'other'), qr/audience/);
{
    my ($st) = $n->request(GET => '/v1/sandboxes',
                           $n->token(aud => ['other', 'veto-sandbox']));
    is($st, 503, 'aud array containing ours: accepted');
}
refused('missing sub', $n->token(sub => undef), qr/sub/);
refused('empty sub', $n->token(sub => ''), qr/sub/);
refused('missing tenant', $n->token(tenant => undef), qr/tenant/);
refused('tenant not a string', $n->token(tenant => 7), qr/tenant/);

{
    my $claims = $J->decode(decode_base64url($gp));
    $claims->{tenant} = 'globex';
    refused('tampered payload',
            "$gh." . encode_base64url($J->encode($claims)) . ".$gs",
            qr/bad signature/);
    my $sig = decode_base64url($gs);
    substr($sig, 10, 1) = chr(ord(substr($sig, 10, 1)) ^ 1);
    refused('tampered signature', "$gh.$gp." . encode_base64url($sig),
            qr/bad signature/);
    refused('truncated', substr($good, 0, length($good) - 20),
            qr/bad signature|malformed/);
    refused('truncated to two parts', "$gh.$gp", qr/malformed/);

    # the same signature spelled otherwise: a bit past the data in the
    # last character (found by t/fuzz/fuzz_module_jwt_diff.c)
    my $b64 = join '', 'A' .. 'Z', 'a' .. 'z', '0' .. '9', '-', '_';
    ok(length($gs) % 4, 'the signature ends in a partial group');
    my $v = index($b64, substr($gs, -1));
    my $odd = substr($gs, 0, -1) . substr($b64, $v ^ 1, 1);
    is(decode_base64url($odd), decode_base64url($gs), '... which decodes alike');
    refused('a signature in a non-canonical spelling', "$gh.$gp.$odd",
            qr/malformed/);
}

refused('64 KiB token', $n->token(pad => 'x' x 65536), qr/too large/);
refused('garbage', 'garbage', qr/malformed/);
refused('bad base64', '!!!.###.$$$', qr/malformed/);
refused('bad JSON header',
        encode_base64url('{"alg":') . ".$gp.$gs", qr/malformed token header/);
refused('header not an object',
        encode_base64url('[1]') . ".$gp.$gs", qr/malformed token header/);

# ---- signature forms: the module checks signatures itself (OpenSSL, the
# key decoded at load), so each algorithm's exact encoding is enforced
{
    my $flip = sub {
        my ($sig, $at) = @_;
        substr($sig, $at, 1) = chr(ord(substr($sig, $at, 1)) ^ 0x80);
        return $sig;
    };
    my $with = sub {
        my ($tok, $sig) = @_;
        my ($h, $p) = split /\./, $tok;
        return "$h.$p." . encode_base64url($sig);
    };

    my $es = $n->token(alg => 'ES256');
    my $es_sig = decode_base64url((split /\./, $es)[2]);
    is(length $es_sig, 64, 'ES256 signature is R || S, 64 bytes');
    refused('ES256: r = s = 0 ("psychic signature")',
            $with->($es, "\0" x 64), qr/bad signature/);
    refused('ES256: R || S with s flipped', $with->($es, $flip->($es_sig, 40)),
            qr/bad signature/);
    refused('ES256: one byte short', $with->($es, substr($es_sig, 0, 63)),
            qr/bad signature/);
    refused('ES256: one byte over', $with->($es, "$es_sig\0"),
            qr/bad signature/);
    # the same (r, s) as DER, which OpenSSL itself would verify
    my $int = sub {
        my $v = shift;
        $v =~ s/^\0+//;
        $v = "\0$v" if ord($v) & 0x80;
        return "\x02" . chr(length $v) . $v;
    };
    my $der = $int->(substr($es_sig, 0, 32)) . $int->(substr($es_sig, 32));
    $der = "\x30" . chr(length $der) . $der;
    refused('ES256: the signature as DER, not R || S', $with->($es, $der),
            qr/bad signature/);
    refused('ES256: R || S with r = n + r (out of range)',
            $with->($es, ("\xff" x 32) . substr($es_sig, 32)),
            qr/bad signature/);

    my $rs_sig = decode_base64url($gs);
    refused('RS256: a leading zero byte added', $with->($good, "\0$rs_sig"),
            qr/bad signature/);
    refused('RS256: the last byte cut', $with->($good, substr($rs_sig, 0, -1)),
            qr/bad signature/);
    refused('RS256: a bit flipped', $with->($good, $flip->($rs_sig, 100)),
            qr/bad signature/);

    my $hs = $n->token(alg => 'HS256');
    my $hs_sig = decode_base64url((split /\./, $hs)[2]);
    refused('HS256: a bit flipped', $with->($hs, $flip->($hs_sig, 31)),
            qr/bad signature/);
    refused('HS256: the MAC truncated to 16 bytes',
            $with->($hs, substr($hs_sig, 0, 16)), qr/bad signature/);
    refused('HS256: the MAC twice', $with->($hs, $hs_sig x 2),
            qr/bad signature/);
    refused('HS256: a 4 KiB signature', $with->($hs, 'x' x 4096),
            qr/bad signature/);
    refused('HS256: signed with another secret',
            $n->token(alg => 'HS256', key => 'y' x 40), qr/bad signature/);

    my ($st) = $n->request(GET => '/v1/sandboxes', $hs);
    is($st, 503, 'HS256: the untouched token is still accepted');
    ($st) = $n->request(GET => '/v1/sandboxes', $es);
    is($st, 503, 'ES256: the untouched token is still accepted');
}

{
    my ($st, $h, $b) = $n->request(GET => '/v1/sandboxes');
    is_problem('no token', $st, $h, $b, 401);
    is($h->{'www-authenticate'}, 'Bearer realm="veto-sandbox"',
       'no token: challenge without an error code (RFC 6750 3.1)');
    ($st, $h, $b) = $n->request(GET => '/v1/sandboxes', undef, undef,
                                { Authorization => "Basic Zm9vOmJhcg==" });
    is_problem('Basic credentials', $st, $h, $b, 401);
}

# ---- bypass resistance
for my $m (qw(GET POST PUT DELETE OPTIONS PATCH HEAD)) {
    my ($st, $h, $b) = $n->request($m => '/v1/health-bypass');
    is($st, 401, "$m /v1/health-bypass (location with return) is 401");
}
{
    my ($st, $h, $b) = $n->request(GET => '/v1/open');
    is($st, 401, 'exact location with return under /v1/ is 401');
    ($st, $h, $b) = $n->request(OPTIONS => '/v1/sandboxes');
    is($st, 401, 'OPTIONS on the API is 401');
    ($st, $h, $b) = $n->request(GET => '/v1');
    is($st, 401, '/v1 itself is protected');
    ($st, $h, $b) = $n->request(GET => '/v1/./sandboxes');
    is($st, 401, 'dot segments are normalised before the check');
    ($st, $h, $b) = $n->request(GET => '//v1//sandboxes');
    is($st, 401, 'merged slashes are normalised before the check');
    ($st, $h, $b) = $n->request(GET => '/v1/%73andboxes');
    is($st, 401, 'percent-encoding is decoded before the check');
    ($st, $h, $b) = $n->request(GET => '/api/sandboxes');
    is_problem('rewrite into the API from outside (content handler re-check)',
               $st, $h, $b, 401);
    ($st, $h, $b) = $n->request(GET => '/v1/health-bypass', $n->token);
    is($st, 200, 'with a valid token the return location answers');
    ($st, $h, $b) = $n->request(GET => '/plain');
    is($st, 200, 'a location outside the API prefix is not affected');
    ($st, $h, $b) = $n->request(GET => '/v1/health');
    is_problem('health is public and pings the helper', $st, $h, $b, 503);
}

# ---- scopes
{
    my $t = $n->token(scope => 'sandbox:exec');
    my ($st, $h, $b) = $n->request(POST => '/v1/sandboxes', $t, {});
    my $p = is_problem('create without sandbox:create', $st, $h, $b, 403);
    like($h->{'www-authenticate'} // '',
         qr/error="insufficient_scope", scope="sandbox:create"/,
         'insufficient_scope challenge names the scope');
    is($p->{scope}, 'sandbox:create', 'problem names the scope');

    my $id = 'sb-' . ('a' x 24);
    ($st, $h, $b) = $n->request(PUT => "/v1/sandboxes/$id/files?path=x", $t, 'x');
    is($st, 403, 'write file without sandbox:files');
    ($st) = $n->request(GET => "/v1/sandboxes/$id/files?path=x", $t);
    is($st, 403, 'read file without sandbox:files');
    ($st) = $n->request(DELETE => "/v1/sandboxes/$id", $t);
    is($st, 403, 'delete without sandbox:create');
    ($st) = $n->request(POST => "/v1/sandboxes/$id/exec",
                        $n->token(scope => 'sandbox:files'), { argv => ['true'] });
    is($st, 403, 'exec without sandbox:exec');
    ($st) = $n->request(POST => "/v1/sandboxes/$id/exec",
                        $n->token(scope => ['sandbox:exec']), { argv => ['true'] });
    is($st, 503, 'scope as a JSON array works');
    ($st) = $n->request(GET => '/v1/sandboxes', $n->token(scope => undef));
    is($st, 403, 'no scope at all: list refused');
    ($st) = $n->request(GET => '/v1/sandboxes',
                        $n->token(scope => 'sandbox:createx sandbox'));
    is($st, 403, 'scope names match whole words only');
}

# ---- policy
{
    my ($st, $h, $b) = $n->request(GET => '/v1/sandboxes',
                                   $n->token(tenant => 'initech'));
    is_problem('tenant not in the policy', $st, $h, $b, 403);

    my $t = $n->token;
    ($st, $h, $b) = $n->request(POST => '/v1/sandboxes', $t,
                                { limits => { memory_mb => 1024 } });
    my $p = is_problem('memory over the tenant ceiling', $st, $h, $b, 422);
    is($p->{limit}, 'memory_mb', '422 names the limit');
    is($p->{ceiling}, 512, '422 gives the ceiling');
    ($st, $h, $b) = $n->request(POST => '/v1/sandboxes', $t, { ttl_s => 7200 });
    $p = is_problem('ttl over the ceiling', $st, $h, $b, 422);
    is($p->{limit}, 'ttl_s', '422 names ttl_s');
    ($st, $h, $b) = $n->request(POST => '/v1/sandboxes',
                                $n->token(sub => 'agent-small'),
                                { limits => { memory_mb => 100 } });
    $p = is_problem('agent ceiling below the tenant', $st, $h, $b, 422);
    is($p->{ceiling}, 64, 'the agent ceiling applies');
    ($st, $h, $b) = $n->request(POST => '/v1/sandboxes', $t,
                                { profile => 'gpu' });
    is_problem('profile not allowed', $st, $h, $b, 403);
    ($st, $h, $b) = $n->request(POST => '/v1/sandboxes', $t,
                                { network => 'allowlist' });
    is_problem('network neither "none" nor an allowlist', $st, $h, $b, 400);
    ($st, $h, $b) = $n->request(POST => '/v1/sandboxes', $t,
                                { network => { allow => ['x.example.test'] } });
    $p = is_problem('a host the policy does not allow', $st, $h, $b, 422);
    is($p->{entry}, 'x.example.test', 'names the entry');
    my $id = 'sb-' . ('a' x 24);
    ($st, $h, $b) = $n->request(POST => "/v1/sandboxes/$id/exec", $t,
                                { argv => ['sleep', '1'], timeout_s => 31 });
    $p = is_problem('exec timeout over the ceiling', $st, $h, $b, 422);
    is($p->{limit}, 'timeout_s', 'names timeout_s');
    ($st, $h, $b) = $n->request(PUT => "/v1/sandboxes/$id/files?path=big", $t,
                                'x' x (9 * 1024 * 1024 / 10 * 10 / 10));
    ok($st == 413 || $st == 503, 'file body vs file_bytes ceiling');
}

# ---- malformed requests: problem+json 4xx
{
    my $t = $n->token;
    my $id = 'sb-' . ('a' x 24);
    my @cases = (
        ['malformed JSON', POST => '/v1/sandboxes', '{"limits": ', 400],
        ['JSON not an object', POST => '/v1/sandboxes', '[1,2]', 400],
        ['empty body', POST => '/v1/sandboxes', '', 400],
        ['unknown field', POST => '/v1/sandboxes', '{"profil": "default"}', 400],
        ['unknown limit', POST => '/v1/sandboxes',
         '{"limits": {"memory": 5}}', 400],
        ['limit wrong type', POST => '/v1/sandboxes',
         '{"limits": {"memory_mb": "5"}}', 400],
        ['limit negative', POST => '/v1/sandboxes',
         '{"limits": {"memory_mb": -5}}', 400],
        ['ttl wrong type', POST => '/v1/sandboxes', '{"ttl_s": 1.5}', 400],
        ['env not strings', POST => '/v1/sandboxes', '{"env": {"A": 1}}', 400],
        ['duplicate keys', POST => '/v1/sandboxes',
         '{"ttl_s": 5, "ttl_s": 6}', 400],
        ['exec without argv', POST => "/v1/sandboxes/$id/exec", '{}', 400],
        ['exec argv not strings', POST => "/v1/sandboxes/$id/exec",
         '{"argv": ["ls", 1]}', 400],
        ['exec argv empty', POST => "/v1/sandboxes/$id/exec",
         '{"argv": []}', 400],
        ['exec unknown field', POST => "/v1/sandboxes/$id/exec",
         '{"argv": ["ls"], "shell": true}', 400],
        ['exec stdin not a string', POST => "/v1/sandboxes/$id/exec",
         '{"argv": ["ls"], "stdin": 5}', 400],
        ['write without path', PUT => "/v1/sandboxes/$id/files", 'x', 400],
        ['write absolute path', PUT => "/v1/sandboxes/$id/files?path=/etc/x",
         'x', 400],
        ['JSON body over 1 MiB', POST => '/v1/sandboxes',
         '{"metadata": {"x": "' . ('y' x (1100 * 1024)) . '"}}', 413],
        ['body over client_max_body_size', PUT =>
         "/v1/sandboxes/$id/files?path=x", 'z' x (1100 * 1024), 413],
    );
    for my $c (@cases) {
        my ($name, $m, $path, $body, $want) = @$c;
        my ($st, $h, $b) = $n->request($m => $path, $t, $body,
                                       { 'Content-Type' => 'application/json' });
        is_problem($name, $st, $h, $b, $want);
    }

    my ($st, $h, $b) = $n->request(POST => '/v1/sandboxes', $t, '{}',
                                   { 'Content-Type' => 'text/plain' });
    is_problem('wrong content type', $st, $h, $b, 415);
    ($st, $h, $b) = $n->request(DELETE => '/v1/sandboxes', $t);
    is_problem('method not allowed', $st, $h, $b, 405);
    like($h->{allow} // '', qr/POST/, '405 has Allow');
    ($st, $h, $b) = $n->request(GET => '/v1/nothing', $t);
    is_problem('unknown API path', $st, $h, $b, 404);
    ($st, $h, $b) = $n->request(GET => '/v1/sandboxes/sb-XYZ', $t);
    is_problem('impossible id is 404, like an unknown one', $st, $h, $b, 404);
}

# ---- hostile tokens and bodies: mutations of a good token are refused,
# random bytes never crash the worker
{
    srand(42);
    my ($bad, $crash) = (0, 0);
    my @alphabet = ('A' .. 'Z', 'a' .. 'z', '0' .. '9', '-', '_', '.');
    for my $i (1 .. 300) {
        my $tok = $good;
        my $k = 1 + int rand 3;
        for (1 .. $k) {
            substr($tok, int rand length $tok, 1) =
                $alphabet[int rand @alphabet];
        }
        $tok = join '', map { $alphabet[int rand @alphabet] } 1 .. rand 400
            if $i % 3 == 0;
        next if $tok eq $good;
        my ($st) = $n->request(GET => '/v1/sandboxes', undef, undef,
                               { Authorization => "Bearer $tok" });
        $bad++ unless $st == 401 || $st == 503;
        $crash++ if $st == 599;
    }
    is($crash, 0, 'mutated and random tokens: no connection dropped');
    is($bad, 0, 'mutated and random tokens: 401 (or, for a mutation that '
               . 'leaves the signed bytes intact, accepted)');
    my $id = 'sb-' . ('a' x 24);
    for my $i (1 .. 100) {
        my $body = join '', map { chr(int rand 256) } 1 .. rand 300;
        my ($st) = $n->request(POST => "/v1/sandboxes/$id/exec", $good, $body,
                               { 'Content-Type' => 'application/json' });
        $bad++ unless $st == 400 || $st == 503;
    }
    is($bad, 0, 'random exec bodies: 400');
}

# ---- the access log carries the variables
{
    my $log = $n->access_log;
    like($log, qr/^401 GET \/v1\/sandboxes agent=- tenant=- decision=deny:invalid_token/m,
         'access log: refused token');
    like($log, qr/^503 GET \/v1\/sandboxes agent=agent-1 tenant=acme decision=allow/m,
         'access log: agent, tenant, decision');
    like($log, qr/^403 \S+ \S+ agent=agent-1 tenant=acme decision=deny:insufficient_scope/m,
         'access log: scope refusal');
}

unlike($n->error_log, qr/\[(alert|emerg)\]|segfault|exited on signal/,
       'no alerts or crashes in the error log');

done_testing;
