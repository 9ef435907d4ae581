#!/usr/bin/perl
# Issue 7, item 2: a sandbox's create-time env can change what an
# approved command does (PATH=/workspace/bin:... and a planted "git").
# The env that will apply (the sandbox's, the exec's over it) is what the
# reviewer sees, every name with its value, the names that are not inert
# flagged, and what the approval binds (its digest in the request hash); the
# policy can refuse such names or make a human approve them, at create and at
# exec; the creation record lists the env's names.  An exec whose
# sandbox's env the gateway does not know is refused, never guessed.

use strict;
use warnings;

use Test::More;
use Digest::SHA ();
use JSON::PP ();
use lib 't/lib';
use VetoNginx;
use Eventually qw(eventually);
use Time::HiRes qw(sleep);

VetoNginx::need(qw(helper redis));

my $SECRET = 'ghp_sekrit4711sekrit4711sekrit4711';

my $policy = {
    version => 1,
    tenants => {
        acme => {
            ceilings => { memory_mb => 512, timeout_s => 30, ttl_s => 3600 },
            approvals => { exec_argv => ['git push*'] },
        },
        globex => {
            ceilings => { memory_mb => 512, timeout_s => 30, ttl_s => 3600 },
            env => { on_dangerous => 'refuse' },
        },
        initech => {
            ceilings => { memory_mb => 512, timeout_s => 30, ttl_s => 3600 },
            env => { on_dangerous => 'approve' },
        },
        umbrella => {
            ceilings => { memory_mb => 512, timeout_s => 30, ttl_s => 3600 },
            env => { dangerous => ['FOO_*'], on_dangerous => 'refuse' },
            agents => { free => { env => {} } },
        },
    },
};

my $n = VetoNginx->new;

# ---- nginx -t: the policy's "env" section
for my $bad ([{ on_dangerous => 'maybe' }, qr/env\.on_dangerous must be/],
             [{ dangerous => 'PATH' }, qr/env\.dangerous must be an array/],
             [{ dangerous => [''] }, qr/env\.dangerous must be an array/],
             [{ other => 1 }, qr/env: unknown field "other"/],
             ['refuse', qr/"env" must be an object/]) {
    my %p = %$policy;
    $p{tenants} = { acme => { env => $bad->[0] } };
    $n->write_policy(\%p);
    $n->render;
    my ($ok, $out) = $n->test_config;
    ok(!$ok, 'nginx -t refuses env ' . $VetoNginx::JSON->encode($bad->[0]));
    like($out, $bad->[1], '... naming the field');
}
$n->write_policy({ version => 1, tenants => {
    acme => { env => { on_dangerous => 'approve' } } } });
$n->render;
my ($ok, $out) = $n->test_config;
ok(!$ok, 'nginx -t: on_dangerous "approve" without Redis fails');
like($out, qr/need "veto_sandbox_redis"/, '... naming the directive');

# the same for approvals of a tenant without agents (it used to pass, and
# with no Redis the gate is open: nothing was ever asked)
$n->write_policy({ version => 1, tenants => {
    acme => { approvals => { always => ['sandbox.exec'] } } } });
$n->render;
($ok, $out) = $n->test_config;
ok(!$ok, 'nginx -t: a tenant\'s approvals without Redis fail, agents or not');
like($out, qr/need "veto_sandbox_redis"/, '... naming the directive');

$n->start_redis;
$n->start_helper;
$n->start(redis => 1, policy => $policy);

my $agent = $n->token(sub => 'agent-1');
my $rev = $n->token(sub => 'human-1', scope => 'approvals:review audit:read');
my %tok = map { $_ => $n->token(sub => 'agent-1', tenant => $_) }
          qw(globex initech umbrella);
$tok{free} = $n->token(sub => 'free', tenant => 'umbrella');

my ($st, $h, $b, $j);
eventually('Redis is up', 10, sub {
    ($st, $h, $b, $j) = $n->request(GET => '/v1/health');
    ($j->{redis} // '') eq 'up';
});
is($j->{redis}, 'up', 'redis up');

# ---- the hijack story, which must now be in plain sight
my %env = (PATH => '/workspace/bin:/usr/bin:/bin', CI => '1');
($st, $h, $b, $j) = $n->request(POST => '/v1/sandboxes', $agent,
                                { ttl_s => 600, env => \%env });
is($st, 201, 'create with PATH set (the policy allows it)') or diag $b;
my $sb = $j->{id};

my $plant = q{mkdir -p /workspace/bin && printf '#!/bin/sh\necho planted "$@"\n' }
          . q{> /workspace/bin/git && chmod +x /workspace/bin/git};
($st, $h, $b, $j) = $n->request(POST => "/v1/sandboxes/$sb/exec", $agent,
                                { argv => ['sh', '-c', $plant] });
is($st, 200, 'a git is planted in /workspace/bin') or diag $b;

my $push = { argv => ['git', 'push', 'origin', 'main'] };
($st, $h, $b, $j) = $n->request(POST => "/v1/sandboxes/$sb/exec", $agent, $push);
is($st, 202, 'git push needs a human') or diag $b;
my $s = $j->{summary} // {};
is($s->{sandbox}, $sb, 'the summary names the sandbox');
is($s->{env}{PATH}, '/workspace/bin:/usr/bin:/bin',
   'the reviewer sees the sandbox\'s PATH and its value');
is($s->{env}{CI}, '1', 'an inert name: its value shown too');
is_deeply($s->{env_names}, ['CI', 'PATH'], 'every name');
is_deeply($s->{env_flagged}, ['PATH'], 'PATH flagged: it is not inert');
my $id = $j->{approval_id};

# the approval binds the sandbox's env: its digest is in the request hash
my $envjson = JSON::PP->new->canonical(1)->encode(\%env);
my $body = $VetoNginx::JSON->encode($push);
my $canon = "veto-request-v1\nPOST\n/v1/sandboxes/$sb/exec\n\n"
          . Digest::SHA::sha256_hex($body) . "\n" . length($body) . "\n";
is($j->{request_hash},
   Digest::SHA::sha256_hex($canon . 'sandbox-env '
                           . Digest::SHA::sha256_hex($envjson) . "\n"),
   'the request hash binds the sandbox\'s env (its digest)');
isnt($j->{request_hash}, Digest::SHA::sha256_hex($canon),
     '... it is not the hash of the request alone');
is($n->redis->hget("veto:{acme}:sbx:own:$sb", 'env_sha256'),
   Digest::SHA::sha256_hex($envjson), 'the ownership record keeps that digest');

# an exec's own env goes over the sandbox's
($st, $h, $b, $j) = $n->request(POST => "/v1/sandboxes/$sb/exec", $agent,
    { %$push, env => { PATH => '/usr/bin:/bin', LD_PRELOAD => '/workspace/x.so' } });
is($st, 202, 'git push with its own env');
is($j->{summary}{env}{PATH}, '/usr/bin:/bin', 'the exec\'s PATH wins');
is($j->{summary}{env}{LD_PRELOAD}, '/workspace/x.so', 'its LD_PRELOAD is shown');

# approved with all that in sight, it runs
($st) = $n->request(POST => "/v1/approvals/$id/approve", $rev, '');
is($st, 200, 'a reviewer approves, having seen PATH');
($st, $h, $b, $j) = $n->request(POST => "/v1/sandboxes/$sb/exec", $agent, $push,
                                { 'Veto-Approval' => $id });
is($st, 200, 'the approved request runs') or diag $b;
is($j->{stdout}, "planted push origin main\n",
   'what runs is what the summary said would (the sandbox\'s PATH)');

# a sandbox without env: an empty env is bound too
($st, $h, $b, $j) = $n->request(POST => '/v1/sandboxes', $agent, { ttl_s => 600 });
my $plain = $j->{id};
($st, $h, $b, $j) = $n->request(POST => "/v1/sandboxes/$plain/exec", $agent, $push);
is($st, 202, 'git push in a sandbox without env');
is_deeply($j->{summary}{env}, {}, 'no env to show');
$canon = "veto-request-v1\nPOST\n/v1/sandboxes/$plain/exec\n\n"
       . Digest::SHA::sha256_hex($body) . "\n" . length($body) . "\n";
is($j->{request_hash},
   Digest::SHA::sha256_hex($canon . 'sandbox-env '
                           . Digest::SHA::sha256_hex('{}') . "\n"),
   'the hash binds the empty env');

# the creation record lists the env's names (and the values that matter)
my $created = eventually('the sandbox_created record', 5, sub {
    ($st, $h, $b, $j) = $n->request(GET => "/v1/audit?sandbox=$sb", $rev);
    (grep { $_->{outcome} eq 'sandbox_created' } @{ $j->{records} })[0];
});
is_deeply([sort @{ $created->{detail}{env_names} // [] }], [qw(CI PATH)],
          'sandbox_created lists the env names');
is($created->{detail}{env}{PATH}, '/workspace/bin:/usr/bin:/bin',
   '... and the value of PATH');

# fail closed: a sandbox whose env the gateway does not know
my $count = $n->redis->zcard('veto:{acme}:appr:idx');
$n->redis->hdel("veto:{acme}:sbx:own:$plain", 'env_sha256');
($st, $h, $b, $j) = $n->request(POST => "/v1/sandboxes/$plain/exec", $agent, $push);
is($st, 409, 'an exec needing a human where the env is unknown: refused');
is($j->{type}, 'urn:veto-sandbox:problem:sandbox_env_unknown', '... saying why');
$n->redis->del("veto:{acme}:sbx:own:$plain");
($st, $h, $b, $j) = $n->request(POST => "/v1/sandboxes/$plain/exec", $agent, $push);
is($st, 409, 'no ownership record at all: the same');
is($n->redis->zcard('veto:{acme}:appr:idx'), $count, 'and nothing was asked');
($st) = $n->request(POST => "/v1/sandboxes/$plain/exec", $agent,
                    { argv => ['echo', 'free'] });
is($st, 200, 'an exec that needs no human still runs there');

# ---- policy "refuse": at create and at exec
for my $name (qw(PATH LD_PRELOAD GIT_SSH_COMMAND https_proxy HTTP_PROXY BASH_ENV
                 ENV PYTHONPATH NODE_OPTIONS PERL5OPT RUBYOPT)) {
    ($st, $h, $b, $j) = $n->request(POST => '/v1/sandboxes', $tok{globex},
                                    { env => { CI => '1', $name => 'x' } });
    is($st, 403, "refuse: create with $name: 403");
    is($j->{type}, 'urn:veto-sandbox:problem:env_not_allowed', '... env_not_allowed')
        if $name eq 'PATH';
    is($j->{name}, $name, '... naming it') if $name eq 'PATH';
    is($j->{field}, 'env', '... and the field') if $name eq 'PATH';
}
($st, $h, $b, $j) = $n->request(POST => '/v1/sandboxes', $tok{globex},
                                { env => { CI => '1', MY_SETTING => 'x' } });
is($st, 403, 'refuse: a name not known to be inert is refused');
($st, $h, $b, $j) = $n->request(POST => '/v1/sandboxes', $tok{globex},
                                { env => { CI => '1', LANG => 'C.UTF-8' } });
is($st, 201, 'refuse: inert names are fine') or diag $b;
my $gsb = $j->{id};
($st, $h, $b, $j) = $n->request(POST => "/v1/sandboxes/$gsb/exec", $tok{globex},
                                { argv => ['true'], env => { LD_PRELOAD => 'x' } });
is($st, 403, 'refuse: an exec with LD_PRELOAD');
($st) = $n->request(POST => "/v1/sandboxes/$gsb/exec", $tok{globex},
                    { argv => ['true'], env => { CI => '2' } });
is($st, 200, 'refuse: an exec with CI runs');

# the helper's own rules, before anything is asked of a human
($st, $h, $b, $j) = $n->request(POST => '/v1/sandboxes', $tok{globex},
                                { env => { '1BAD' => 'x' } });
is($st, 400, 'a name the helper refuses: 400 at once');
is($j->{field}, 'env', '... naming env');
($st, $h, $b, $j) = $n->request(POST => '/v1/sandboxes', $tok{globex},
                                { env => { map { ("V$_" => 'x') } 1 .. 257 } });
is($st, 400, 'more than 256 variables: 400');
($st, $h, $b, $j) = $n->request(POST => '/v1/sandboxes', $tok{globex},
                                { env => { map { ("V$_" => 'x' x 200) } 1 .. 200 } });
is($st, 413, 'an env over 32 KiB of JSON: 413');
is($j->{limit}, 'env_bytes', '... naming the limit');

# ---- policy "approve": a human decides, seeing the values
($st, $h, $b, $j) = $n->request(POST => '/v1/sandboxes', $tok{initech},
                                { env => { PATH => '/workspace/bin:/usr/bin' } });
is($st, 202, 'approve: create with PATH needs a human');
is($j->{summary}{env}{PATH}, '/workspace/bin:/usr/bin', '... who sees its value');
($st, $h, $b, $j) = $n->request(POST => '/v1/sandboxes', $tok{initech},
                                { env => { CI => '1' } });
is($st, 201, 'approve: harmless names need nobody');
my $isb = $j->{id};
($st, $h, $b, $j) = $n->request(POST => "/v1/sandboxes/$isb/exec", $tok{initech},
    { argv => ['true'], env => { NODE_OPTIONS => '--require /workspace/x.js' } });
is($st, 202, 'approve: an exec with NODE_OPTIONS needs a human');
is($j->{summary}{env}{NODE_OPTIONS}, '--require /workspace/x.js', '... shown');

# ---- the policy's "dangerous" names are never inert
($st, $h, $b, $j) = $n->request(POST => '/v1/sandboxes', $tok{umbrella},
                                { env => { FOO_BAR => '1' } });
is($st, 403, 'a policy list: FOO_BAR refused');
($st, $h, $b, $j) = $n->request(POST => '/v1/sandboxes', $tok{umbrella},
                                { env => { PATH => '/x' } });
is($st, 403, '... and PATH, not inert, refused as well');
($st) = $n->request(POST => '/v1/sandboxes', $tok{free}, { env => { FOO_BAR => '1' } });
is($st, 201, 'an agent\'s "env" replaces its tenant\'s');

# the refusals are on record
my $grev = $n->token(sub => 'human-9', tenant => 'globex', scope => 'audit:read');
eventually('env_not_allowed refusals are on record', 5, sub {
    ($st, $h, $b, $j) = $n->request(GET => '/v1/audit?limit=1000', $grev);
    grep { ($_->{reason} // '') eq 'env_not_allowed' } @{ $j->{records} };
});

# ---- a secret in a sandbox's env: never kept, so an exec a human
# approves there cannot be shown, and is refused
($st, $h, $b, $j) = $n->request(POST => '/v1/sandboxes', $agent,
                                { ttl_s => 600, env => { GIT_TOKEN => $SECRET } });
is($st, 201, 'create with a token in env') or diag $b;
my $tsb = $j->{id};
($st, $h, $b, $j) = $n->request(POST => "/v1/sandboxes/$tsb/exec", $agent, $push);
is($st, 422, 'git push there: 422, it cannot be shown whole') or diag $b;
is($j->{type}, 'urn:veto-sandbox:problem:credential_inline', '... credential_inline');
unlike($b, qr/\Q$SECRET\E/, 'no secret in the answer');

# ---- no secret value anywhere in Redis
unlike($n->redis_dump, qr/\Q$SECRET\E/, 'the secret env value is nowhere in Redis');

$n->request(DELETE => "/v1/sandboxes/$_", $agent) for $sb, $tsb;

done_testing();
