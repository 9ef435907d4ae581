#!/usr/bin/perl
# nginx -t for the Redis directives and the policy's approvals/quotas:
# bad values fail with a message naming the directive or the field.

use strict;
use warnings;

use Test::More;
use lib 't/lib';
use VetoNginx;

VetoNginx::need();

my $n = VetoNginx->new;
$n->{redis_sock} = '/tmp/veto-no-such-redis.sock';   # nginx -t never connects

sub policy_with
{
    my (%rule) = @_;
    return { version => 1, tenants => { acme => { %rule } } };
}

sub check
{
    my ($name, $policy, $http, $expect_ok, $re) = @_;
    $n->write_policy($policy);
    $n->render(redis => 1, http_extra => $http // '');
    my ($ok, $out) = $n->test_config;
    if ($expect_ok) {
        ok($ok, $name) or diag $out;
    } else {
        ok(!$ok, "$name: refused");
        like($out, $re, "$name: message") if $re;
    }
}

my $good = policy_with(
    approvals => { always => ['sandbox.delete'], network => JSON::PP::true,
                   exec_argv => ['git push*'], export => JSON::PP::false,
                   profiles => ['privileged'], threshold => 2, ttl_s => 60 },
    quotas => { concurrent_sandboxes => 5, execs_per_minute => 60,
                per_agent => { concurrent_sandboxes => 1 } },
    agents => { a => { quotas => { execs_per_minute => 10 },
                       approvals => {} } });

check('a full policy', $good, undef, 1);
check('old policy files stay valid', VetoNginx::default_policy(), undef, 1);
check('unknown action', policy_with(approvals => { always => ['sandbox.fly'] }),
      undef, 0, qr/approvals\.always: unknown action/);
check('unknown approvals field', policy_with(approvals => { sometimes => [] }),
      undef, 0, qr/approvals: unknown field "sometimes"/);
check('threshold 0', policy_with(approvals => { threshold => 0 }),
      undef, 0, qr/approvals\.threshold/);
check('bad exec_argv', policy_with(approvals => { exec_argv => 'git' }),
      undef, 0, qr/approvals\.exec_argv/);
check('unknown quota', policy_with(quotas => { sandboxes => 1 }),
      undef, 0, qr/quotas: unknown field/);
check('negative quota', policy_with(quotas => { execs_per_minute => -1 }),
      undef, 0, qr/quotas: bad value/);
check('agent per_agent', policy_with(agents => { a => { quotas => { per_agent => {} } } }),
      undef, 0, qr/quotas: unknown field "per_agent"/);

check('threshold directive 0', $good, 'veto_sandbox_approval_threshold 0;', 0,
      qr/veto_sandbox_approval_threshold/);
check('redis_db -1', $good, 'veto_sandbox_redis_db -1;', 0, qr/veto_sandbox_redis_db/);
check('redis_timeout 0', $good, 'veto_sandbox_redis_timeout 0;', 0,
      qr/veto_sandbox_redis_timeout|duplicate/);
check('user without password', $good, 'veto_sandbox_redis_user u;', 0,
      qr/veto_sandbox_redis_user/);
check('user and password, db, maxlen, ttl, retention', $good,
      "veto_sandbox_redis_user u; veto_sandbox_redis_password p;\n"
      . "veto_sandbox_redis_db 3; veto_sandbox_audit_maxlen 1000;\n"
      . "veto_sandbox_approval_ttl 5m; veto_sandbox_approval_retention 1d;\n"
      . "veto_sandbox_approval_threshold 2;", 1);

# addresses
$n->write_policy($good);
for my $case (['unix:relative/path', 0], ['127.0.0.1:6400', 1], ['[::1]:6401', 1],
              ['localhost:6402', 1], ['unix:/' . ('x' x 120), 0]) {
    my ($addr, $ok) = @$case;
    $n->render(veto => $n->default_veto,
               http_extra => "veto_sandbox_redis $addr;");
    my ($r, $out) = $n->test_config;
    is(!!$r, !!$ok, "veto_sandbox_redis $addr: " . ($ok ? 'accepted' : 'refused'))
        or diag $out;
}

done_testing;
