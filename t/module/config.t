#!/usr/bin/perl
# ngx_veto_sandbox_module: every kind of bad configuration fails
# "nginx -t" with a message naming the directive, file or field.

use strict;
use warnings;

use Test::More;
use lib 't/lib';
use VetoNginx;

VetoNginx::need();

my $n = VetoNginx->new;
my $d = $n->dir;

$n->write_policy(VetoNginx::default_policy());
$n->render;
my ($ok, $out) = $n->test_config;
ok($ok, 'the default test configuration passes nginx -t') or diag $out;

my $base = $n->default_veto;

# Replaces one directive line of the default set (or adds one) and
# expects nginx -t to fail with an error matching $re.
sub bad_conf
{
    my ($name, $re, %o) = @_;
    my $veto = $base;
    if (defined $o{drop}) {
        $veto =~ s/^\s*\Q$o{drop}\E[^\n]*\n//m or die "no $o{drop}";
    }
    $veto .= "\n        $o{add}\n" if defined $o{add};
    $n->render(veto => $veto, location_extra => $o{location_extra} // '',
               server_extra => $o{server_extra} // '');
    $n->write_policy($o{policy}) if defined $o{policy};
    my ($good, $text) = $n->test_config;
    ok(!$good, "$name: nginx -t fails");
    like($text, $re, "$name: message names the problem") or diag $text;
    $n->write_policy(VetoNginx::default_policy()) if defined $o{policy};
}

bad_conf('no issuer', qr/requires "veto_sandbox_jwt_issuer"/,
         drop => 'veto_sandbox_jwt_issuer');
bad_conf('no audience', qr/requires "veto_sandbox_jwt_audience"/,
         drop => 'veto_sandbox_jwt_audience');
bad_conf('no policy', qr/requires "veto_sandbox_policy"/,
         drop => 'veto_sandbox_policy');
bad_conf('no helper', qr/requires "veto_sandbox_helper"/,
         drop => 'veto_sandbox_helper ');

{
    my $veto = join "\n", grep { !/jwt_jwks|jwt_key / } split /\n/, $base;
    $n->render(veto => $veto);
    my ($good, $text) = $n->test_config;
    ok(!$good, 'no keys: nginx -t fails');
    like($text, qr/requires "veto_sandbox_jwt_jwks" or "veto_sandbox_jwt_key"/,
         'no keys: message names the directives');
}

bad_conf('tcp helper', qr/"veto_sandbox_helper" must be a unix socket/,
         drop => 'veto_sandbox_helper ',
         add => 'veto_sandbox_helper 127.0.0.1:9000;');
bad_conf('unknown alg', qr/"veto_sandbox_jwt_key": unsupported algorithm "none"/,
         add => "veto_sandbox_jwt_key k2 none $d/hs.secret;");
bad_conf('missing key file', qr/open\(\) ".*nope.pem" failed/,
         add => "veto_sandbox_jwt_key k2 RS256 $d/nope.pem;");
bad_conf('RSA key pinned to ES256', qr/does not fit its algorithm/,
         add => "veto_sandbox_jwt_key k2 ES256 $d/rsa.pub;");
bad_conf('private key as public key', qr/is not a PEM public key/,
         add => "veto_sandbox_jwt_key k2 RS256 $d/rsa.key;");
VetoNginx::spew("$d/short.secret", "short\n");
bad_conf('short HMAC secret', qr/HMAC secret in ".*short.secret" is 5 bytes/,
         add => "veto_sandbox_jwt_key k2 HS256 $d/short.secret;");
bad_conf('duplicate kid', qr/duplicate JWT key id "rsa-1"/,
         add => "veto_sandbox_jwt_key rsa-1 RS256 $d/rsa.pub;");

VetoNginx::spew("$d/bad-jwks.json", '{"keys": [ {"kty": "RSA", "kid": "x"');
bad_conf('JWKS not JSON', qr/"veto_sandbox_jwt_jwks": ".*bad-jwks.json" line/,
         drop => 'veto_sandbox_jwt_jwks',
         add => "veto_sandbox_jwt_jwks $d/bad-jwks.json;");
VetoNginx::spew("$d/oct-jwks.json",
                '{"keys": [{"kty": "oct", "kid": "x", "k": "c2VjcmV0"}]}');
bad_conf('JWKS oct key', qr/unsupported "kty" "oct"/,
         drop => 'veto_sandbox_jwt_jwks',
         add => "veto_sandbox_jwt_jwks $d/oct-jwks.json;");
VetoNginx::spew("$d/bad-ec-jwks.json",
    '{"keys": [{"kty": "EC", "kid": "x", "crv": "P-256", '
    . '"x": "AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA", '
    . '"y": "AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA"}]}');
bad_conf('JWKS EC point not on the curve', qr/keys\[0\] is not a valid EC/,
         drop => 'veto_sandbox_jwt_jwks',
         add => "veto_sandbox_jwt_jwks $d/bad-ec-jwks.json;");

bad_conf('bad cache zone', qr/"veto_sandbox_jwt_cache": expected "zone=name:size"/,
         drop => 'veto_sandbox_jwt_cache',
         add => 'veto_sandbox_jwt_cache veto_jwt:1m;');
bad_conf('bad leeway', qr/invalid value|"veto_sandbox_jwt_leeway"/,
         drop => 'veto_sandbox_jwt_leeway',
         add => 'veto_sandbox_jwt_leeway soon;');
bad_conf('api in a regex location', qr/must be in a prefix location/,
         server_extra => 'location ~ ^/v2/ { veto_sandbox_api; }');
bad_conf('api twice', qr/"veto_sandbox_api" directive is duplicate/,
         location_extra => 'veto_sandbox_api;');

# policy files
bad_conf('policy not JSON', qr/"veto_sandbox_policy": ".*policy.json" line 1/,
         policy => '{"version": 1, "tenants": {');
bad_conf('policy unknown top-level field', qr/unknown field "tenant"/,
         policy => '{"version": 1, "tenants": {}, "tenant": {}}');
bad_conf('policy wrong version', qr/"version" must be 1/,
         policy => '{"version": 2, "tenants": {}}');
bad_conf('policy unknown tenant field',
         qr/tenants\.acme: unknown field "profile"/,
         policy => '{"version": 1, "tenants": {"acme": {"profile": "x"}}}');
bad_conf('policy wrong type', qr/tenants\.acme: field "profiles" has the wrong type/,
         policy => '{"version": 1, "tenants": {"acme": {"profiles": "x"}}}');
bad_conf('policy unknown limit', qr/ceilings: unknown limit "memory"/,
         policy => '{"version": 1, "tenants": {"acme": {"ceilings": '
                   . '{"memory": 5}}}}');
bad_conf('policy negative limit', qr/ceilings\.pids must be a positive integer/,
         policy => '{"version": 1, "tenants": {"acme": {"ceilings": '
                   . '{"pids": -1}}}}');
bad_conf('policy default above ceiling',
         qr/defaults\.memory_mb 600 is above ceilings\.memory_mb 500/,
         policy => '{"version": 1, "tenants": {"acme": {"ceilings": '
                   . '{"memory_mb": 500}, "defaults": {"memory_mb": 600}}}}');
bad_conf('policy agent above tenant',
         qr/tenants\.acme\.agents\.a1: ceilings\.memory_mb exceeds the tenant's 500/,
         policy => '{"version": 1, "tenants": {"acme": {"ceilings": '
                   . '{"memory_mb": 500}, "agents": {"a1": {"ceilings": '
                   . '{"memory_mb": 900}}}}}}');
bad_conf('policy default profile not allowed',
         qr/default_profile "big" is not in profiles/,
         policy => '{"version": 1, "tenants": {"acme": {"profiles": '
                   . '["default"], "default_profile": "big"}}}');
bad_conf('policy reserved section not an object',
         qr/field "approvals" has the wrong type/,
         policy => '{"version": 1, "tenants": {"acme": {"approvals": true}}}');

done_testing;
