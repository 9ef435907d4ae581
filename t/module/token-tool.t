#!/usr/bin/perl
# veto-token (tools/veto-token.c): tokens it mints are accepted by the
# gateway for every algorithm and role, carry what was asked (claims,
# lifetime, a revocable jti), and expire; the JWKS it prints works as
# veto_sandbox_jwt_jwks with the keys' RFC 7638 thumbprints as kids; and
# every wrong input is refused with a message naming the problem and
# nothing on stdout.

use strict;
use warnings;

use Test::More;
use File::Temp qw(tempdir);
use JSON::PP;
use MIME::Base64 qw(decode_base64url);
use Time::HiRes qw(sleep);
use lib 't/lib';
use VetoNginx;
use Crypt::PK::ECC;
use Crypt::PK::RSA;

VetoNginx::need(qw(helper redis));

my $VT = $ENV{VETO_TOKEN} // "$VetoNginx::ROOT/build/veto-token";
die "veto-token not built: run make\n" unless -x $VT;

my $tmp = tempdir("veto-token-$$-XXXXXX", TMPDIR => 1, CLEANUP => 1);
my $JSON = JSON::PP->new->canonical(1);

# run(args...) -> (exit status, stdout, stderr)
sub run
{
    my (@args) = @_;
    my $pid = fork() // die "fork: $!";
    if ($pid == 0) {
        open STDOUT, '>', "$tmp/out" or die;
        open STDERR, '>', "$tmp/err" or die;
        exec $VT, @args;
        die "exec $VT: $!";
    }
    waitpid $pid, 0;
    my $rc = $? >> 8;
    return ($rc, VetoNginx::slurp("$tmp/out"), VetoNginx::slurp("$tmp/err"));
}

# mint(%opts) -> token; dies on failure
sub mint
{
    my (@args) = @_;
    my ($rc, $out, $err) = run('mint', @args);
    die "veto-token mint @args: status $rc: $err" if $rc;
    chomp $out;
    return $out;
}

sub parts
{
    my ($tok) = @_;
    my ($h, $c, $s) = split /\./, $tok;
    return ($JSON->decode(decode_base64url($h)),
            $JSON->decode(decode_base64url($c)), $s);
}

my $n = VetoNginx->new;
my $d = $n->dir;
my @base = ('--iss', 'https://issuer.veto.test', '--aud', 'veto-sandbox',
            '--tenant', 'acme');
$n->{leeway_s} = 1;
$n->start_redis;
$n->start_helper;
my $policy = VetoNginx::default_policy();
$policy->{tenants}{acme}{approvals} = { exec_argv => ['echo ask*'] };
$n->start(redis => 1, policy => $policy);

my ($st, $h, $b, $j);

# ---- tokens the gateway accepts, one per algorithm of its test keys
my $agent = mint(@base, '--key', "$d/rsa.key", '--kid', 'rsa-1',
                 '--sub', 'vt-agent', '--role', 'agent', '--ttl', '10m');
my ($hdr, $cl, $sig) = parts($agent);
is_deeply($hdr, { alg => 'RS256', typ => 'JWT', kid => 'rsa-1' },
          'RS256 header: alg from the key, kid as asked');
is($cl->{iss}, 'https://issuer.veto.test', 'iss');
is($cl->{aud}, 'veto-sandbox', 'aud');
is($cl->{sub}, 'vt-agent', 'sub');
is($cl->{tenant}, 'acme', 'tenant claim');
is($cl->{scope}, 'sandbox:create sandbox:exec sandbox:files',
   'agent role: the three sandbox scopes');
is($cl->{exp} - $cl->{iat}, 600, 'lifetime 10m');
ok(abs($cl->{iat} - time) <= 5, 'iat is now');
is($cl->{nbf}, $cl->{iat}, 'nbf = iat');
like($cl->{jti}, qr/^[0-9a-f]{32}$/, 'a random 128-bit jti by default');

($st, $h, $b, $j) = $n->request(POST => '/v1/sandboxes', $agent,
                                { ttl_s => 300 });
is($st, 201, 'RS256 agent token: create 201') or diag $b;
my $sb = $j->{id} // '';
is($j->{agent}, 'vt-agent', 'the sandbox belongs to the minted sub');

($st, $h, $b, $j) = $n->request(POST => "/v1/sandboxes/$sb/exec", $agent,
                                { argv => ['echo', 'minted'] });
is($st, 200, 'exec with the minted token') or diag $b;
is($j->{stdout}, "minted\n", 'exec output');

my $es = mint(@base, '--key', "$d/ec.key", '--kid', 'ec-1', '--sub',
              'vt-agent', '--scope', 'sandbox:exec sandbox:files');
is((parts($es))[0]{alg}, 'ES256', 'EC P-256 key: ES256');
($st, $h, $b, $j) = $n->request(GET => "/v1/sandboxes/$sb", $es);
is($st, 200, 'ES256 token (r||s signature) accepted') or diag $b;
($st, $h, $b, $j) = $n->request(POST => '/v1/sandboxes', $es, {});
is($st, 403, 'ES256 token with --scope only: create refused');
is($j->{scope}, 'sandbox:create', '... for the scope it lacks');

my $hs = mint(@base, '--key', "$d/hs.secret", '--alg', 'HS256', '--kid',
              'hs-1', '--sub', 'vt-agent', '--role', 'agent');
($st) = $n->request(GET => "/v1/sandboxes/$sb", $hs);
is($st, 200, 'HS256 token from the secret file (trailing newline dropped)');

# ---- the approval story with a reviewer token
($st, $h, $b, $j) = $n->request(POST => "/v1/sandboxes/$sb/exec", $agent,
                                { argv => ['echo', 'ask', 'first'] });
is($st, 202, 'the policy asks a human') or diag $b;
my $apr = $j->{approval_id} // '';
my $reviewer = mint(@base, '--key', "$d/ec.key", '--kid', 'ec-1',
                    '--sub', 'vt-alice', '--role', 'reviewer');
is((parts($reviewer))[1]{scope}, 'approvals:review', 'reviewer role scope');
($st, $h, $b, $j) = $n->request(GET => '/v1/approvals?state=pending',
                                $reviewer);
is($st, 200, 'reviewer lists approvals') or diag $b;
ok((grep { $_->{id} eq $apr } @{ $j->{approvals} // [] }),
   'the pending approval is listed');
($st, $h, $b, $j) = $n->request(POST => "/v1/approvals/$apr/approve",
                                $reviewer, { reason => 'fine' });
is($st, 200, 'reviewer approves') or diag $b;
($st, $h, $b, $j) = $n->request(POST => "/v1/sandboxes/$sb/exec", $agent,
    { argv => ['echo', 'ask', 'first'] }, { 'Veto-Approval' => $apr });
is($st, 200, 'the agent retries with the approval') or diag $b;
is($j->{stdout}, "ask first\n", 'and it ran');
($st) = $n->request(POST => "/v1/approvals/$apr/approve", $agent, {});
is($st, 403, 'an agent token cannot review');

my $auditor = mint(@base, '--key', "$d/rsa.key", '--kid', 'rsa-1',
                   '--sub', 'vt-audit', '--role', 'auditor');
($st, $h, $b, $j) = $n->request(GET => '/v1/audit?agent=vt-agent', $auditor);
is($st, 200, 'auditor role reads the audit trail') or diag $b;
ok(@{ $j->{records} // [] } > 0, 'records of the minted agent');

# ---- the default jti is revocable
my $jti = $cl->{jti};
$n->redis->set("veto:{acme}:revoked:jti:$jti", 1, 'EX', 300);
($st, $h) = $n->request(GET => "/v1/sandboxes/$sb", $agent);
is($st, 401, 'revoking the minted jti refuses the token');
like($h->{'www-authenticate'} // '', qr/revoked/, '... as revoked');
($st) = $n->request(GET => "/v1/sandboxes/$sb", $hs);
is($st, 200, 'another token of the same agent still works');

my $named = mint(@base, '--key', "$d/rsa.key", '--kid', 'rsa-1',
                 '--sub', 'vt-agent', '--role', 'agent', '--jti', 'ci-42');
is((parts($named))[1]{jti}, 'ci-42', '--jti sets the jti');
my $nojti = mint(@base, '--key', "$d/rsa.key", '--kid', 'rsa-1',
                 '--sub', 'vt-agent', '--role', 'agent', '--no-jti');
ok(!exists((parts($nojti))[1]{jti}), '--no-jti leaves it out');

# ---- expiry (leeway 1s here)
my $short = mint(@base, '--key', "$d/rsa.key", '--kid', 'rsa-1',
                 '--sub', 'vt-agent', '--role', 'agent', '--ttl', '1s');
($st) = $n->request(GET => "/v1/sandboxes/$sb", $short);
is($st, 200, 'a 1s token works at once');
sleep 3.2;    # on purpose: past the token's exp and the leeway
($st, $h) = $n->request(GET => "/v1/sandboxes/$sb", $short);
is($st, 401, '... and is refused after exp + leeway');
like($h->{'www-authenticate'} // '', qr/expired/, '... as expired');

# ---- a token signed by a key the gateway does not know
my $other = mint(@base, '--key', "$d/rsa-other.key", '--kid', 'rsa-1',
                 '--sub', 'vt-agent', '--role', 'agent');
($st) = $n->request(GET => "/v1/sandboxes/$sb", $other);
is($st, 401, 'a well-formed token from another key is refused');

($st, $h, $b, $j) = $n->request(DELETE => "/v1/sandboxes/$sb", $hs);
is($st, 200, 'delete with the HS256 token') or diag $b;
$n->stop;

# ---- the JWKS it prints, as the gateway's only keys
VetoNginx::run("openssl ecparam -name secp384r1 -genkey -noout "
               . "-out $tmp/p384.key 2>/dev/null");
VetoNginx::run("openssl ec -in $tmp/p384.key -pubout -out $tmp/p384.pub "
               . "2>/dev/null");
VetoNginx::run("openssl genrsa -out $tmp/rsa1024.key 1024 2>/dev/null");
VetoNginx::run("openssl genrsa -aes128 -passout pass:secret "
               . "-out $tmp/enc.key 2048 2>/dev/null");

my ($rc, $out, $err) = run('jwks', "$d/rsa.pub", "$d/ec.key");
is($rc, 0, 'jwks of an RSA public key and an EC private key') or diag $err;
my $jwks = $JSON->decode($out);
is(scalar @{ $jwks->{keys} }, 2, 'two keys');
my ($rj, $ej) = @{ $jwks->{keys} };
is($rj->{kty}, 'RSA', 'RSA JWK');
is($rj->{alg}, 'RS256', 'RSA alg');
is($rj->{use}, 'sig', 'use sig');
is($rj->{kid}, Crypt::PK::RSA->new("$d/rsa.pub")
                   ->export_key_jwk_thumbprint('SHA256'),
   'RSA kid = its RFC 7638 thumbprint (as Crypt::PK computes it)');
is($ej->{crv}, 'P-256', 'EC JWK on P-256');
is($ej->{alg}, 'ES256', 'EC alg');
is($ej->{kid}, Crypt::PK::ECC->new("$d/ec.pub")
                   ->export_key_jwk_thumbprint('SHA256'),
   'EC kid = its thumbprint');
ok(!exists $ej->{d}, 'no private member from a private key file');
is_deeply([sort keys %$ej], [qw(alg crv kid kty use x y)],
          'EC JWK members');
is($ej->{x}, $JSON->decode(Crypt::PK::ECC->new("$d/ec.pub")
                           ->export_key_jwk('public'))->{x},
   'EC x as Crypt::PK exports it');
VetoNginx::spew("$d/vt-jwks.json", $out);

(my $veto = $n->default_veto) =~ s{^\s*veto_sandbox_jwt_(jwks|key) .*\n}{}mg;
$veto .= "        veto_sandbox_jwt_jwks $d/vt-jwks.json;\n";
$n->start(redis => 1, policy => $policy, veto => $veto);

my $rt = mint(@base, '--key', "$d/rsa.key", '--sub', 'vt-agent',
              '--role', 'agent');
is((parts($rt))[0]{kid}, $rj->{kid}, 'mint without --kid: the thumbprint');
($st, $h, $b) = $n->request(GET => '/v1/sandboxes', $rt);
is($st, 200, 'RS256 token verified by the printed JWKS') or diag $b;
my $et = mint(@base, '--key', "$d/ec.key", '--sub', 'vt-agent',
              '--role', 'agent');
($st, $h, $b) = $n->request(GET => '/v1/sandboxes', $et);
is($st, 200, 'ES256 token verified by the printed JWKS') or diag $b;
my $ot = mint(@base, '--key', "$d/rsa-other.key", '--sub', 'vt-agent',
              '--role', 'agent');
($st) = $n->request(GET => '/v1/sandboxes', $ot);
is($st, 401, 'a key not in the JWKS: refused');
my $ht = mint(@base, '--key', "$d/hs.secret", '--alg', 'HS256', '--sub',
              'vt-agent', '--role', 'agent');
($st) = $n->request(GET => '/v1/sandboxes', $ht);
is($st, 401, 'an HMAC token against a JWKS-only gateway: refused');

($rc, $out) = run('jwks', '--kid', 'first', "$d/rsa.pub", "$d/ec.pub");
$jwks = $JSON->decode($out);
is($jwks->{keys}[0]{kid}, 'first', '--kid names the key after it');
like($jwks->{keys}[1]{kid}, qr/^[A-Za-z0-9_-]{43}$/,
     '... and only that one');
$n->stop;

# ---- other algorithms and claim names, through veto_sandbox_jwt_key
$veto = $n->default_veto;
$veto .= "        veto_sandbox_jwt_key p384 ES384 $tmp/p384.pub;\n"
       . "        veto_sandbox_jwt_key rs512 RS512 $d/rsa.pub;\n"
       . "        veto_sandbox_jwt_key hs512 HS512 $d/hs.secret;\n"
       . "        veto_sandbox_jwt_tenant_claim org;\n"
       . "        veto_sandbox_jwt_scope_claim perms;\n";
$n->start(redis => 1, policy => $policy, veto => $veto);
for my $case (['ES384', "$tmp/p384.key", 'p384', []],
              ['RS512', "$d/rsa.key", 'rs512', ['--alg', 'RS512']],
              ['HS512', "$d/hs.secret", 'hs512', ['--alg', 'HS512']]) {
    my ($alg, $key, $kid, $extra) = @$case;
    my $t = mint(@base, '--key', $key, '--kid', $kid, @$extra,
                 '--sub', 'vt-agent', '--role', 'agent',
                 '--tenant-claim', 'org', '--scope-claim', 'perms');
    my ($th, $tc) = parts($t);
    is($th->{alg}, $alg, "$alg token");
    is($tc->{org}, 'acme', "$alg: tenant in the claim named org");
    ($st, $h, $b) = $n->request(GET => '/v1/sandboxes', $t);
    is($st, 200, "$alg: accepted with renamed claims") or diag $b;
}
$n->stop;

# ---- wrong inputs: a clear message, status 1 (bad value) or 2 (usage),
# and nothing on stdout
my @ok = (@base, '--sub', 'a', '--role', 'agent');
my @cases = (
    [[], 2, qr/usage: veto-token mint/, 'no arguments'],
    [['sign'], 2, qr/unknown command "sign"/, 'unknown command'],
    [['mint', @base, '--sub', 'a', '--role', 'agent'], 2,
     qr/missing: --key/, 'no key'],
    [['mint', '--key', "$d/rsa.key", '--aud', 'x', '--sub', 'a',
      '--tenant', 't', '--role', 'agent'], 2, qr/missing: --iss/, 'no iss'],
    [['mint', '--key', "$d/rsa.key", @base, '--sub', 'a'], 2,
     qr/needs --role or --scope/, 'no scope'],
    [['mint', '--key', "$d/rsa.key", @ok, '--frobnicate'], 2,
     qr/unknown option "--frobnicate"/, 'unknown option'],
    [['mint', '--key', "$d/rsa.key", @ok, '--ttl'], 2,
     qr/--ttl needs a value/, 'option without its value'],
    [['mint', '--key', "$d/rsa.key", @ok, '--sub', 'b'], 2,
     qr/--sub given twice/, 'an option twice'],
    [['mint', '--key', "$tmp/none.key", @ok], 1,
     qr/cannot open key file "\Q$tmp\E\/none.key": No such file/,
     'missing key file'],
    [['mint', '--key', "$d/rsa.pub", @ok], 1,
     qr/it is a public key, minting needs the private one/, 'public key'],
    [['mint', '--key', "$d/rsa.key", '--alg', 'HS256', @ok], 1,
     qr/holds a PEM key, not an HMAC secret/, 'PEM key as HMAC secret'],
    [['mint', '--key', "$d/rsa.pub", '--alg', 'HS256', @ok], 1,
     qr/holds a PEM key, not an HMAC secret/,
     'public key as HMAC secret (the RS256-to-HS256 confusion)'],
    [['mint', '--key', "$d/hs.secret", @ok], 1,
     qr/is not a PEM key \(for an HMAC secret file give --alg HS256\)/,
     'secret without --alg'],
    [['mint', '--key', "$tmp/short", '--alg', 'HS256', @ok], 1,
     qr/HMAC secret is 10 bytes, at least 32 needed/, 'short secret'],
    [['mint', '--key', "$tmp/rsa1024.key", @ok], 1,
     qr/RSA key has 1024 bits, the gateway needs at least 2048/,
     '1024-bit RSA'],
    [['mint', '--key', "$d/rsa.key", '--alg', 'ES256', @ok], 1,
     qr/--alg ES256 does not fit .* an RSA key/, 'ES256 with an RSA key'],
    [['mint', '--key', "$d/ec.key", '--alg', 'ES384', @ok], 1,
     qr/--alg ES384 does not fit .* an EC P-256 key/, 'ES384 with P-256'],
    [['mint', '--key', "$d/rsa.key", '--alg', 'none', @ok], 1,
     qr/unknown algorithm "none"/, 'alg none'],
    [['mint', '--key', "$tmp/enc.key", @ok], 1,
     qr/is an encrypted private key; decrypt it first/, 'encrypted key'],
    [['mint', '--key', "$tmp/garbage", @ok], 1, qr/is not a PEM key/,
     'not a key at all'],
    [['mint', '--key', "$d/rsa.key", @base, '--sub', 'a b', '--role',
      'agent'], 1, qr/--sub: character 2 \(0x20\) is not printable ASCII/,
     'agent with a space'],
    [['mint', '--key', "$d/rsa.key", '--iss', 'i', '--aud', 'a', '--sub',
      'a', '--tenant', 'ac:me', '--role', 'agent'], 1,
     qr/--tenant: ':' is not allowed \(it cannot be part of a Redis key/,
     'tenant with a colon'],
    [['mint', '--key', "$d/rsa.key", @base, '--sub', 'x' x 129, '--role',
      'agent'], 1, qr/--sub: must be 1 to 128 characters, not 129/,
     '129-character agent'],
    [['mint', '--key', "$d/rsa.key", @ok, '--jti', 'a{b}'], 1,
     qr/--jti: '\{' is not allowed/, 'jti with a brace'],
    [['mint', '--key', "$d/rsa.key", @ok, '--ttl', '0'], 1,
     qr/--ttl: "0" is not a positive duration/, 'ttl 0'],
    [['mint', '--key', "$d/rsa.key", @ok, '--ttl', '-5m'], 1,
     qr/--ttl: "-5m" is not a positive duration/, 'negative ttl'],
    [['mint', '--key', "$d/rsa.key", @ok, '--ttl', '2y'], 1,
     qr/--ttl: unknown unit in "2y"/, 'ttl in years'],
    [['mint', '--key', "$d/rsa.key", @ok, '--ttl', '367d'], 1,
     qr/--ttl: "367d" is longer than 366 days/, 'ttl too long'],
    [['mint', '--key', "$d/rsa.key", @ok, '--ttl', '5mm'], 1,
     qr/--ttl: trailing characters in "5mm"/, 'ttl with junk'],
    [['mint', '--key', "$d/rsa.key", @ok, '--role', 'admin'], 1,
     qr/--role: unknown role "admin" \(agent, reviewer, auditor\)/,
     'unknown role'],
    [['mint', '--key', "$d/rsa.key", @ok, '--jti', 'x', '--no-jti'], 2,
     qr/--jti and --no-jti exclude each other/, 'jti and no-jti'],
    [['mint', '--key', "$d/rsa.key", @ok, '--tenant-claim', 'sub'], 1,
     qr/claim name "sub" is a registered claim/, 'tenant claim named sub'],
    [['jwks'], 2, qr/jwks needs at least one PEM key file/, 'jwks of nothing'],
    [['jwks', '--alg', 'HS256', "$d/hs.secret"], 1,
     qr/a shared secret has no public part/, 'jwks of an HMAC secret'],
    [['jwks', "$d/hs.secret"], 1, qr/is not a PEM key$/m,
     'jwks of a non-PEM file'],
    [['jwks', "$tmp/p384.pub"], 1,
     qr/the gateway's JWKS takes RSA and EC P-256 keys/, 'jwks of P-384'],
    [['jwks', "$d/rsa.pub", "$d/rsa.key"], 1,
     qr/kid "[^"]+" is already used by another key/, 'the same key twice'],
    [['jwks', "$d/rsa.pub", '--kid', 'x'], 2,
     qr/--kid\/--alg after the last key file apply to nothing/,
     'a dangling --kid'],
    [['jwks', '--alg', 'RS256', "$d/ec.pub"], 1,
     qr/--alg RS256 does not fit .* an EC P-256 key/, 'jwks alg mismatch'],
);
VetoNginx::spew("$tmp/short", "0123456789\n");
VetoNginx::spew("$tmp/garbage", "this is not a key\n");
for my $c (@cases) {
    my ($args, $want_rc, $want_err, $name) = @$c;
    my ($rc2, $out2, $err2) = run(@$args);
    is($rc2, $want_rc, "$name: status $want_rc");
    like($err2, $want_err, "$name: says why");
    is($out2, '', "$name: nothing on stdout");
}

my ($hrc, $hout, $herr) = run('--help');
is($hrc, 0, '--help: status 0');
like($herr, qr/usage: veto-token mint/, '--help prints the usage');

done_testing;
