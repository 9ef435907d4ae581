#!/usr/bin/perl
# Secrets an agent puts in an exec (argv, stdin) reach neither the audit
# trail nor the summary a reviewer approves: the token after
# "Authorization: token", the element after --password, curl -u's
# password, URL userinfo, bare GitHub/AWS/GitLab/Slack/OpenAI tokens, a
# PEM private key, "password = x" in a script; nor do secrets in an env,
# the sandbox's (create) or the exec's: a dangerous name's value is shown
# redacted (HTTPS_PROXY's userinfo, GIT_CONFIG_PARAMETERS' token), any
# other name's value never leaves the request.  An approved exec runs
# with the secrets it was given.  Read back through the audit and
# approvals APIs and straight from Redis; what the command was stays
# readable.  The approval page's view: t/50-approval-page.t.  The redaction rules themselves are table-tested in
# t/unit/test_module_redact.c.

use strict;
use warnings;

use Test::More;
use lib 't/lib';
use VetoNginx;
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
for (1 .. 40) {
    ($st, $h, $b, $j) = $n->request(POST => '/v1/sandboxes', $agent, {});
    last if $st == 201;
    sleep 0.05;
}
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

# ---- an exec that needs an approval, with a token in its URL and stdin
($st, $h, $b, $j) = $n->request(POST => "/v1/sandboxes/$sb/exec", $agent,
    { argv => ['git', 'push', "https://x-access-token:$GHS\@github.com/o/r",
               'main'],
      stdin => "export PASSWORD = stdinpw42\n" });
is($st, 202, 'git push needs an approval') or diag $b;
my $apr = $j->{approval_id};
my $body202 = $b;

($st, $h, $b, $j) = $n->request(GET => "/v1/approvals/$apr", $rev);
is($st, 200, 'the reviewer reads it') or diag $b;
my $review = $b;
is_deeply($j->{summary}{argv},
          ['git', 'push', 'https://x-access-token:[redacted]@github.com/o/r',
           'main'],
          'the reviewer sees the command, without the token');
is($j->{summary}{stdin}, "export PASSWORD = [redacted]\n",
   'and its stdin, without the password');

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
($st, $h, $b, $j) = $n->request(POST => "/v1/sandboxes/$sbe/exec", $agent,
                                $exec_env);
is($st, 202, 'git push with secrets in its env needs an approval') or diag $b;
my $apr_env = $j->{approval_id};
$body202 .= $b;

($st, $h, $b, $j) = $n->request(GET => "/v1/approvals/$apr_env", $rev);
is($st, 200, 'the reviewer reads it') or diag $b;
$review .= $b;
my $env = $j->{summary}{env} // {};
is($env->{HTTPS_PROXY}, 'http://proxyuser:[redacted]@proxy.test:3128',
   "the exec's proxy shown, its password hidden");
is($env->{HTTP_PROXY}, 'http://proxyuser:[redacted]@proxy.test:3128',
   "the sandbox's proxy shown, its password hidden");
like($env->{GIT_CONFIG_PARAMETERS} // '',
     qr/^'http\.extraheader=Authorization: token \[redacted\]'$/,
     'the git header shown, its token hidden');
ok(exists $env->{PLAIN_SECRET} && !defined $env->{PLAIN_SECRET},
   'a name that runs nothing: its value withheld');
ok(exists $env->{NPM_TOKEN} && !defined $env->{NPM_TOKEN},
   "... the sandbox's too");

($st, $h, $b, $j) = $n->request(GET => '/v1/approvals?state=pending', $rev);
is($st, 200, 'the pending list') or diag $b;
$review .= $b;

($st, $h, $b, $j) = $n->request(POST => "/v1/approvals/$apr_env/approve",
                                $rev, '');
is($st, 200, 'approved') or diag $b;

# the approved request itself, secrets and all, with its approval
($st, $h, $b, $j) = $n->request(POST => "/v1/sandboxes/$sbe/exec", $agent,
                                $exec_env, { 'Veto-Approval' => $apr_env });
is($st, 200, 'the approved exec runs') or diag $b;
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
                       && ($_->{approval} // '') eq $apr_env } @{ $j->{records} };
ok($run_env, 'the approved exec has its record');
my $renv = ref $run_env->{detail} eq 'HASH'
           ? $run_env->{detail}{request}{env} // {} : {};
is($renv->{HTTPS_PROXY}, 'http://proxyuser:[redacted]@proxy.test:3128',
   'its env on record: the proxy without its password');
ok(exists $renv->{PLAIN_SECRET} && !defined $renv->{PLAIN_SECRET},
   '... a plain value withheld');

# ---- nowhere, in any form
my $r = $n->redis;
my $raw = '';
for my $k ($r->keys('veto:*')) {
    my $type = $r->type($k);
    if ($type eq 'stream') {
        $raw .= join("\n", map { @{ $_->[1] } } @{ $r->xrange($k, '-', '+') });
    } elsif ($type eq 'hash') {
        $raw .= join("\n", $r->hgetall($k));
    } elsif ($type eq 'string') {
        $raw .= $r->get($k) // '';
    }
    $raw .= "\n";
}
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
