#!/usr/bin/perl
# ngx_veto_sandbox_module with a private sandbox-helper: the full life
# cycle with RS256, ES256 and HS256 tokens, tenant isolation, streamed
# file bodies, exec output encodings, policy defaults and the helper's
# own ceilings behind the module's.

use strict;
use warnings;

use Test::More;
use Digest::SHA qw(sha256_hex);
use MIME::Base64 qw(decode_base64);
use lib 't/lib';
use VetoNginx;

VetoNginx::need(qw(helper));

my $n = VetoNginx->new;
$n->start_helper;
$n->start;

my ($st, $h, $b, $j);

($st, $h, $b, $j) = $n->request(GET => '/v1/health');
is($st, 200, 'health: helper up');
is($j->{status}, 'ok', 'health says ok');
is_deeply([ sort keys %{ $j->{helper} // {} } ],
          [ sort qw(version cgroup epoch seccomp landlock_abi namespaces
                    started_at egress) ],
          "health: the helper's liveness and boundary, not its profiles, "
          . 'ceilings or count');
like($j->{helper}{epoch} // '', qr/^[0-9a-f]{32}\z/, "health: the helper's epoch");

# ---- life cycle per algorithm
for my $alg (qw(RS256 ES256 HS256)) {
    my $t = $n->token(alg => $alg, sub => "agent-$alg");

    ($st, $h, $b, $j) = $n->request(POST => '/v1/sandboxes', $t,
        { limits => { memory_mb => 256 }, ttl_s => 300,
          env => { GREETING => 'hi' }, metadata => { task => $alg } });
    is($st, 201, "$alg: create 201") or diag $b;
    my $id = $j->{id} // '';
    like($id, qr/^sb-[0-9a-f]{24}$/, "$alg: sandbox id");
    is($h->{location}, "/v1/sandboxes/$id", "$alg: Location");
    is($j->{state}, 'ready', "$alg: state ready");
    is($j->{limits}{memory_mb}, 256, "$alg: effective limits");
    ok($j->{expires_at} > time, "$alg: expiry");
    is($j->{tenant}, 'acme', "$alg: tenant from the token");
    is($j->{agent}, "agent-$alg", "$alg: agent from the token");

    ($st, $h, $b, $j) = $n->request(PUT => "/v1/sandboxes/$id/files?path=src/main.sh",
                                    $t, "echo \"\$GREETING from $alg\"\nexit 7\n");
    is($st, 200, "$alg: write file") or diag $b;
    is($j->{sha256}, sha256_hex("echo \"\$GREETING from $alg\"\nexit 7\n"),
       "$alg: written sha256");

    ($st, $h, $b, $j) = $n->request(POST => "/v1/sandboxes/$id/exec", $t,
        { argv => ['sh', 'src/main.sh'], cwd => '/workspace', timeout_s => 10 });
    is($st, 200, "$alg: exec") or diag $b;
    is($j->{stdout}, "hi from $alg\n", "$alg: exec stdout");
    is($j->{exit_code}, 7, "$alg: exit code");
    is($j->{timed_out}, JSON::PP::false, "$alg: not timed out");
    ok(exists $j->{usage}{wall_ms}, "$alg: usage");

    ($st, $h, $b) = $n->request(GET => "/v1/sandboxes/$id/files?path=src/main.sh", $t);
    is($st, 200, "$alg: read file");
    is($b, "echo \"\$GREETING from $alg\"\nexit 7\n", "$alg: content back");
    is($h->{'content-type'}, 'application/octet-stream', "$alg: octet-stream");
    is($h->{'content-disposition'}, 'attachment', "$alg: attachment");
    is($h->{'x-content-type-options'}, 'nosniff', "$alg: nosniff");
    is($h->{'veto-untrusted'}, 'true', "$alg: marked untrusted");

    ($st, $h, $b, $j) = $n->request(GET => "/v1/sandboxes/$id", $t);
    is($st, 200, "$alg: get");
    is($j->{metadata}{task}, $alg, "$alg: metadata kept");

    ($st, $h, $b, $j) = $n->request(DELETE => "/v1/sandboxes/$id", $t);
    is($st, 200, "$alg: delete") or diag $b;
    is($j->{state}, 'terminated', "$alg: terminated");
    ok($j->{confirmed}{processes} && $j->{confirmed}{files},
       "$alg: termination confirmed");

    is($j->{ended}{end_reason}, 'deleted', "$alg: the delete's ENDED record");

    ($st, $h, $b, $j) = $n->request(GET => "/v1/sandboxes/$id", $t);
    is($st, 200, "$alg: after delete, GET tells how it ended");
    is($j->{state}, 'ended', "$alg: state ended");
    is($j->{end_reason}, 'deleted', "$alg: end_reason deleted");
    ok(!exists $j->{seq}, "$alg: no helper cursor in it");

    ($st, $h, $b, $j) = $n->request(POST => "/v1/sandboxes/$id/exec", $t,
                                    { argv => ['true'] });
    is($st, 410, "$alg: an exec in it: 410 Gone");
    is($j->{type}, 'urn:veto-sandbox:problem:ended', "$alg: problem ended");
    is($j->{end_reason}, 'deleted', "$alg: naming why");
}

# ---- tenant isolation: B sees A's sandbox exactly as an unknown one
{
    my $a = $n->token(tenant => 'acme', sub => 'agent-a');
    my $bt = $n->token(tenant => 'globex', sub => 'agent-a');
    ($st, $h, $b, $j) = $n->request(POST => '/v1/sandboxes', $a, {});
    is($st, 201, 'tenant A creates');
    my $id = $j->{id};
    my $unknown = 'sb-' . ('0' x 24);

    ($st, $h, $b, $j) = $n->request(GET => '/v1/sandboxes', $bt);
    is($st, 200, 'tenant B lists');
    is_deeply([map { $_->{id} } @{ $j->{sandboxes} }], [],
              "tenant B's list does not show A's sandbox");

    for my $target ($id, $unknown) {
        my $what = $target eq $id ? "A's sandbox" : 'an unknown id';
        my @r;
        @r = $n->request(GET => "/v1/sandboxes/$target", $bt);
        my $body404 = $r[2];
        is($r[0], 404, "B get $what: 404");
        @r = $n->request(GET => "/v1/sandboxes/$target/files?path=x", $bt);
        is($r[0], 404, "B read $what: 404");
        @r = $n->request(PUT => "/v1/sandboxes/$target/files?path=x", $bt, 'x');
        is($r[0], 404, "B write $what: 404");
        @r = $n->request(POST => "/v1/sandboxes/$target/exec", $bt,
                         { argv => ['true'] });
        is($r[0], 404, "B exec $what: 404");
        @r = $n->request(DELETE => "/v1/sandboxes/$target", $bt);
        is($r[0], 404, "B delete $what: 404");
        $n->{"b404_$what"} = $body404;
    }
    is($n->{"b404_A's sandbox"}, $n->{'b404_an unknown id'},
       "A's sandbox and an unknown id answer identically");

    ($st) = $n->request(GET => "/v1/sandboxes/$id", $a);
    is($st, 200, "A still has its sandbox");
    ($st) = $n->request(DELETE => "/v1/sandboxes/$id", $a);
    is($st, 200, 'A deletes it');
}

# ---- streaming, encodings, stdin, defaults, helper ceilings
{
    my $t = $n->token;
    ($st, $h, $b, $j) = $n->request(POST => '/v1/sandboxes', $t, {});
    is($st, 201, 'create with policy defaults');
    is($j->{limits}{memory_mb}, 128, 'policy default memory applied');
    my $id = $j->{id};

    # 3 MiB: beyond client_body_buffer_size, so the body lies in a temp
    # file and goes to the helper with sendfile
    my $big = join '', map { chr(($_ * 7) % 256) } 0 .. 3 * 1024 * 1024 - 1;
    ($st, $h, $b, $j) = $n->request(PUT => "/v1/sandboxes/$id/files?path=big.bin",
                                    $t, $big);
    is($st, 200, 'write 3 MiB') or diag $b;
    is($j->{size}, length $big, 'size');
    is($j->{sha256}, sha256_hex($big), 'sha256 of the streamed body');
    ($st, $h, $b) = $n->request(GET => "/v1/sandboxes/$id/files?path=big.bin", $t);
    is($st, 200, 'read 3 MiB');
    ok($b eq $big, 'identical content back');

    ($st, $h, $b, $j) = $n->request(POST => "/v1/sandboxes/$id/exec", $t,
        { argv => ['sh', '-c', 'printf "\377\376\000x"'] });
    is($st, 200, 'exec with binary output');
    is($j->{stdout_encoding}, 'base64', 'invalid UTF-8 comes as base64');
    is(decode_base64($j->{stdout}), "\377\376\000x", 'base64 decodes to the bytes');

    ($st, $h, $b, $j) = $n->request(POST => "/v1/sandboxes/$id/exec", $t,
        { argv => ['cat'], stdin => "line one\nline two\n" });
    is($j->{stdout}, "line one\nline two\n", 'stdin reaches the command');
    is($j->{stdout_encoding}, 'utf-8', 'UTF-8 output as a string');

    ($st, $h, $b, $j) = $n->request(POST => "/v1/sandboxes/$id/exec", $t,
        { argv => ['sh', '-c', 'sleep 5'], timeout_s => 1 });
    is($st, 200, 'exec past its timeout');
    is($j->{timed_out}, JSON::PP::true, 'timed_out');

    ($st, $h, $b, $j) = $n->request(PUT => "/v1/sandboxes/$id/files?path=../escape",
                                    $t, 'x');
    is($st, 400, 'path escaping the workspace: 400');
    like($h->{'content-type'}, qr/problem\+json/, 'as problem+json');

    ($st, $h, $b, $j) = $n->request(GET => "/v1/sandboxes/$id/files?path=missing",
                                    $t);
    ok($st >= 400 && $st < 500, "missing file: 4xx ($st)");

    ($st) = $n->request(DELETE => "/v1/sandboxes/$id", $t);
    is($st, 200, 'delete');

    # globex has no pids ceiling in the policy; the helper's (256) holds
    my $g = $n->token(tenant => 'globex');
    ($st, $h, $b, $j) = $n->request(POST => '/v1/sandboxes', $g,
                                    { limits => { pids => 100000 } });
    is($st, 422, "the helper's ceiling is the backstop");
    is($j->{limit}, 'pids', 'and names the limit');

    ($st, $h, $b, $j) = $n->request(POST => '/v1/sandboxes',
                                    $n->token(sub => 'agent-small'), {});
    is($j->{limits}{memory_mb}, 32, "the agent's default applies");
    $n->request(DELETE => "/v1/sandboxes/$j->{id}", $n->token(sub => 'agent-small'));
}

like($n->access_log, qr/^201 POST \/v1\/sandboxes agent=agent-RS256 tenant=acme decision=allow sandbox=sb-[0-9a-f]{24}$/m,
     '$veto_sandbox logged on create');
unlike($n->error_log, qr/\[(alert|emerg)\]|exited on signal/, 'no alerts');

done_testing;
