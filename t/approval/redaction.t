#!/usr/bin/perl
# Secrets an agent puts in an exec (argv, stdin) never reach the audit
# trail: the token after "Authorization: token", the element after
# --password, curl -u's password, URL userinfo, bare GitHub/AWS/GitLab/
# Slack/OpenAI tokens, a PEM private key, "password = x" in a script; nor
# do secrets in an env, the sandbox's (create) or the exec's: a value is
# recorded redacted (HTTPS_PROXY's userinfo, GIT_CONFIG_PARAMETERS'
# token, a secret-named variable's value).  A reviewer sees a request
# exactly, so one a human must approve that carries such a value is
# refused (422 credential_inline; t/approval/reviewer-sees-all.t), and the
# sandbox's ownership record does not keep one.  An exec runs with the
# secrets it was given.  Read back through the audit and approvals APIs
# and straight from Redis; what the command was stays readable.  The
# redaction rules themselves are table-tested in
# t/unit/test_module_redact.c.

use strict;
use warnings;

use Test::More;
use lib 't/lib';
use VetoNginx;
use Eventually qw(eventually);
use Time::HiRes qw(sleep);

VetoNginx::need(qw(helper redis));

my $GHP = 'ghp_' . ('A1b2C3d4E5' x 3) . 'xYz123';
my $GHS = 'ghs_' . ('Zz9Yy8Xx7W' x 3);
my $AKIA = 'AKIAIOSFODNN7EXAMPL3';
my $GLPAT = 'glpat-' . ('q1w2e3r4t5' x 2);
my $SK = 'sk-proj-' . ('m9n8b7v6c5' x 3);
my $PEM_BODY = 'MIIEowIBAAKCAQEAsecretkeybody0123';
my $GHP_ENV = 'ghp_' . ('E5n6V7e8N9' x 3) . 'envTok';
my $NPM = 'npm_' . ('n0P1m2Q3r4' x 3) . 'abcdef';
my $AIZA = 'AIza' . ('Sy-0_1a2B3' x 3) . 'c4D5e';
my $HF = 'hf_' . ('HuGg1nGfAc' x 3) . 'e42x';
my $SG = 'SG.' . ('s3nDgR1d' x 3) . '.' . ('k3Y-b0dY_' x 5);
# issue 29's shapes: white space around '=', names, suffixes, prefixes
my @SHAPES = ("password\t=\tpwtab771", 'PASS=passv4l88', 'AUTH=authv4l99',
              'KEY=keyv4l11', 'DB_PWD=dbpwdv4l22', '--pass', 'passflag33',
              'Bearer: bearercolon44', $NPM, $AIZA, $HF, $SG);
my @SECRETS = ($GHP, $GHS, $AKIA, $GLPAT, $SK, $PEM_BODY, 'hunter2pw',
               'urlp4ssw0rd', 'curlpw77', 'stdinpw42', 'bearer0tok3n99',
               $GHP_ENV, 'createpr0xypw', 'execpr0xypw', 'npmw1thheld',
               'plainw1thheld', 'pwtab771', 'passv4l88', 'authv4l99',
               'keyv4l11', 'dbpwdv4l22', 'passflag33', 'bearercolon44', $NPM,
               $AIZA, $HF, $SG);

my $policy = {
    version => 1,
    tenants => {
        acme => {
            ceilings => { memory_mb => 512, timeout_s => 30, ttl_s => 3600 },
            approvals => { exec_argv => ['git push*'] },
        },
    },
};

my $n = VetoNginx->new;
$n->start_redis;
$n->start_helper;
$n->start(redis => 1, policy => $policy);

my $agent = $n->token(sub => 'agent-1');
my $rev = $n->token(sub => 'human-1', scope => 'approvals:review');
my $auditor = $n->token(sub => 'auditor-1', scope => 'audit:read');

my ($st, $h, $b, $j);
eventually('a create succeeds (Redis connected)', 10, sub {
    ($st, $h, $b, $j) = $n->request(POST => '/v1/sandboxes', $agent, {});
    $st == 201;
});
is($st, 201, 'create') or diag $b;
my $sb = $j->{id};

# ---- an exec full of secrets, run at once
my @argv = ('true', 'curl', '-H', "Authorization: token $GHP", '-u',
            'alice:curlpw77', '--password', 'hunter2pw',
            'https://bob:urlp4ssw0rd@example.com/x', "AWS=$AKIA", $GLPAT,
            "-----BEGIN RSA PRIVATE KEY-----\n$PEM_BODY\n"
            . "-----END RSA PRIVATE KEY-----", 'Bearer', 'bearer0tok3n99',
            "OPENAI=$SK");
($st, $h, $b, $j) = $n->request(POST => "/v1/sandboxes/$sb/exec", $agent,
    { argv => \@argv,
      stdin => "export PASSWORD = stdinpw42\ngit remote add o "
               . "https://x-access-token:$GHS\@github.com/o/r\n" });
is($st, 200, 'the exec runs') or diag $b;
is($j->{exit_code}, 0, 'exit 0');

($st, $h, $b, $j) = $n->request(POST => "/v1/sandboxes/$sb/exec", $agent,
    { argv => ['true', 'shapes', @SHAPES, 'KEYBOARD=us', '--passes', '3'] });
is($st, 200, 'an exec with the other shapes of secrets runs') or diag $b;

# ---- an exec that needs an approval, with a token in its URL and stdin:
# a reviewer sees a request exactly, so it is refused
# (t/approval/reviewer-sees-all.t)
($st, $h, $b, $j) = $n->request(POST => "/v1/sandboxes/$sb/exec", $agent,
    { argv => ['git', 'push', "https://x-access-token:$GHS\@github.com/o/r",
               'main'],
      stdin => "export PASSWORD = stdinpw42\n" });
is($st, 422, 'git push with a token inline: 422') or diag $b;
is($j->{type}, 'urn:veto-sandbox:problem:credential_inline',
   '... credential_inline');
is($j->{field}, 'argv[2]', '... naming where');
my $body202 = $b;
my $review = '';

# ---- secrets in an env: the sandbox's and the exec's
($st, $h, $b, $j) = $n->request(POST => '/v1/sandboxes', $agent,
    { env => { HTTP_PROXY => 'http://proxyuser:createpr0xypw@proxy.test:3128',
               NPM_TOKEN => 'npmw1thheld' } });
is($st, 201, 'a sandbox created with secrets in its env') or diag $b;
my $sbe = $j->{id};
my $env_body = $b;

my $exec_env = {
    argv => ['git', 'push', 'origin', 'main'],
    env => { HTTPS_PROXY => 'http://proxyuser:execpr0xypw@proxy.test:3128',
             GIT_CONFIG_PARAMETERS =>
                 "'http.extraheader=Authorization: token $GHP_ENV'",
             PLAIN_SECRET => 'plainw1thheld' },
};
# a human would have to see them: refused
($st, $h, $b, $j) = $n->request(POST => "/v1/sandboxes/$sbe/exec", $agent,
                                $exec_env);
is($st, 422, 'git push with secrets in its env (the sandbox\'s): 422')
    or diag $b;
is($j->{type}, 'urn:veto-sandbox:problem:credential_inline',
   '... credential_inline');
$body202 .= $b;

($st, $h, $b, $j) = $n->request(GET => '/v1/approvals?state=pending', $rev);
is($st, 200, 'the pending list') or diag $b;
$review .= $b;

# one no human approves runs with them, and its record hides them
($st, $h, $b, $j) = $n->request(POST => "/v1/sandboxes/$sbe/exec", $agent,
                                { %$exec_env, argv => ['true', 'env-run'] });
is($st, 200, 'an exec with secrets in its env runs') or diag $b;
$body202 .= $b;
($st, $h, $b, $j) = $n->request(POST => "/v1/sandboxes/$sbe/exec", $agent,
    { argv => ['sh', '-c', 'printf %s "$HTTP_PROXY $NPM_TOKEN"'] });
is($st, 200, 'an exec in that sandbox') or diag $b;
is($j->{stdout}, 'http://proxyuser:createpr0xypw@proxy.test:3128 npmw1thheld',
   "the sandbox's env really holds the secrets (the agent's own output)");

sleep 0.3;      # the records are sent without waiting for Redis

($st, $h, $b, $j) = $n->request(GET => '/v1/audit?limit=1000', $auditor);
is($st, 200, 'the auditor reads the trail') or diag $b;
my $audit = $b;
my ($run) = grep { $_->{outcome} eq 'exec_finished'
                   && ref $_->{detail} eq 'HASH'
                   && ($_->{detail}{request}{argv}[0] // '') eq 'true'
                   && ($_->{detail}{request}{argv}[1] // '') eq 'curl' }
            @{ $j->{records} };
ok($run, 'the execution record is there');
my $detail = ref $run->{detail} eq 'HASH' ? $run->{detail} : {};
is_deeply($detail->{request}{argv},
          ['true', 'curl', '-H', 'Authorization: token [redacted]', '-u',
           'alice:[redacted]', '--password', '[redacted]',
           'https://bob:[redacted]@example.com/x', 'AWS=[redacted]',
           '[redacted]',
           "-----BEGIN RSA PRIVATE KEY-----[redacted]"
           . "-----END RSA PRIVATE KEY-----", 'Bearer', '[redacted]',
           'OPENAI=[redacted]'],
          'the argv on record: what ran, each secret hidden')
    or diag explain $detail->{request}{argv};

my ($shapes) = grep { $_->{outcome} eq 'exec_finished'
                      && ref $_->{detail} eq 'HASH'
                      && ($_->{detail}{request}{argv}[1] // '') eq 'shapes' }
               @{ $j->{records} };
is_deeply(ref $shapes eq 'HASH' ? $shapes->{detail}{request}{argv} : undef,
          ['true', 'shapes', "password\t=\t[redacted]", 'PASS=[redacted]',
           'AUTH=[redacted]', 'KEY=[redacted]', 'DB_PWD=[redacted]', '--pass',
           '[redacted]', 'Bearer: [redacted]', ('[redacted]') x 4,
           'KEYBOARD=us', '--passes', '3'],
          'the other shapes on record: each secret hidden, the rest kept')
    or diag explain $shapes;

my ($run_env) = grep { $_->{outcome} eq 'exec_finished'
                       && ref $_->{detail} eq 'HASH'
                       && ($_->{detail}{request}{argv}[1] // '') eq 'env-run' }
                @{ $j->{records} };
ok($run_env, 'the exec with secrets in its env has its record');
my $renv = ref $run_env->{detail} eq 'HASH'
           ? $run_env->{detail}{request}{env} // {} : {};
is($renv->{HTTPS_PROXY}, 'http://proxyuser:[redacted]@proxy.test:3128',
   'its env on record: the proxy without its password');
like($renv->{GIT_CONFIG_PARAMETERS} // '',
     qr/^'http\.extraheader=Authorization: token \[redacted\]'$/,
   '... the git header without its token');
ok(exists $renv->{PLAIN_SECRET}, '... every name');

# ---- nowhere, in any form
my $raw = $n->redis_dump;
ok(length $raw > 500, 'Redis read directly (' . length($raw) . ' bytes)');
for my $s (@SECRETS) {
    unlike($audit, qr/\Q$s\E/, "not in the audit API: $s");
    unlike($raw, qr/\Q$s\E/, "not in Redis: $s");
}
for my $s ($GHS, 'stdinpw42', $GHP_ENV, 'createpr0xypw', 'execpr0xypw',
           'npmw1thheld', 'plainw1thheld') {
    unlike($review, qr/\Q$s\E/, "not in the approval: $s");
    unlike($body202, qr/\Q$s\E/, "not in the 202s and 200s: $s");
}
unlike($env_body, qr/createpr0xypw|npmw1thheld/,
       'not in the create reply either');

unlike($n->error_log, qr/\[(alert|emerg)\]|exited on signal/, 'no alerts');

done_testing;
