#!/usr/bin/perl
# What the gateway keeps in Redis must survive a Redis restart: with the
# append-only file as scripts/run-stack.sh configures it (appendonly yes,
# appendfsync everysec), a revoked token stays refused, a held quota slot
# stays held, an approved approval stays usable exactly once and the
# audit trail is still there, after a clean restart (SIGTERM) and after a
# crash (SIGKILL).  The same story on a Redis without persistence shows
# what an operator loses by running one: the revocation is undone.

use strict;
use warnings;

use Test::More;
use lib 't/lib';
use VetoNginx;
use Eventually qw(eventually);
use Time::HiRes qw(sleep);

VetoNginx::need(qw(helper redis));

my $policy = {
    version => 1,
    tenants => {
        acme => {
            ceilings => { memory_mb => 512, timeout_s => 30, ttl_s => 3600 },
            approvals => { exec_argv => ['echo gated*'] },
            quotas => { concurrent_sandboxes => 1 },
        },
    },
};

my ($st, $h, $b, $j);

# Health reports the worker's own Redis connection; after a restart the
# worker reconnects by itself (backoff up to 5 s).
sub redis_up
{
    my ($n) = @_;
    my (undef, undef, undef, $hj) = $n->request(GET => '/v1/health');
    my $state = $hj->{redis} // '';
    # the last "not yet" is the failure's diagnostic
    die "health says redis '$state'\n" unless $state eq 'up';
    return 1;
}

# ---------------------------------------------------------------- AOF
my $n = VetoNginx->new;
$n->start_redis(aof => 1);
$n->start_helper;
$n->start(redis => 1, policy => $policy);
eventually('redis up', 10, sub { redis_up($n) });
is($n->redis->config_get('appendonly')->[1], 'yes', 'redis runs with AOF');

my $agent = $n->token(sub => 'agent-1', jti => 'agent-1-live');
my $doomed = $n->token(sub => 'agent-1', jti => 'agent-1-stolen');
my $doomed2 = $n->token(sub => 'agent-1', jti => 'agent-1-stolen-2');
my $rev = $n->token(sub => 'human-1', scope => 'approvals:review');

($st, $h, $b, $j) = $n->request(POST => '/v1/sandboxes', $agent, { ttl_s => 600 });
is($st, 201, 'create: the tenant now holds its one quota slot') or diag $b;
my $sb = $j->{id};
($st, $h, $b, $j) = $n->request(POST => '/v1/sandboxes', $agent, { ttl_s => 600 });
is($st, 429, 'a second create is over the quota');

my $exec = { argv => ['echo', 'gated', 'run'] };
($st, $h, $b, $j) = $n->request(POST => "/v1/sandboxes/$sb/exec", $agent, $exec);
is($st, 202, 'a gated exec asks for a human') or diag $b;
my $apr = $j->{approval_id} // '';
($st, $h, $b, $j) = $n->request(POST => "/v1/approvals/$apr/approve", $rev,
                                { reason => 'before the restart' });
is($st, 200, 'approved before the restart') or diag $b;

($st) = $n->request(GET => '/v1/sandboxes', $doomed);
is($st, 200, 'the token to revoke works');
# the operator's revocation (docs/operations.md: Revocation), as with redis-cli
$n->redis->set('veto:{acme}:revoked:jti:agent-1-stolen', 1, 'EX', 600);
($st) = $n->request(GET => '/v1/sandboxes', $doomed);
is($st, 401, 'revoked: 401');

my $audit_before = $n->redis->xlen('veto:{acme}:audit');
ok($audit_before > 0, "audit records before the restart ($audit_before)");

# ---- a clean restart (systemctl restart, SIGTERM)
$n->restart_redis('TERM');
eventually('the worker reconnected after a clean restart', 10,
           sub { redis_up($n) });

($st, $h, $b, $j) = $n->request(GET => '/v1/sandboxes', $doomed);
is($st, 401, 'clean restart: the revoked token is still refused');
is($j->{detail} // '', 'token revoked', '... as revoked');
($st) = $n->request(GET => '/v1/sandboxes', $agent);
is($st, 200, 'the agent\'s other token still works');
($st, $h, $b, $j) = $n->request(POST => '/v1/sandboxes', $agent, { ttl_s => 600 });
is($st, 429, 'clean restart: the quota slot is still held');
ok($n->redis->xlen('veto:{acme}:audit') >= $audit_before,
   'clean restart: the audit trail is still there');

# ---- a crash (SIGKILL): what was acknowledged is in the file already
$n->redis->set('veto:{acme}:revoked:jti:agent-1-stolen-2', 1, 'EX', 600);
($st) = $n->request(GET => '/v1/sandboxes', $doomed2);
is($st, 401, 'second token revoked');
$n->restart_redis('KILL');
eventually('the worker reconnected after a crash', 10, sub { redis_up($n) });

($st) = $n->request(GET => '/v1/sandboxes', $doomed2);
is($st, 401, 'after a crash: the token revoked last is still refused');
($st) = $n->request(GET => '/v1/sandboxes', $doomed);
is($st, 401, 'after a crash: the first revoked token too');
($st, $h, $b, $j) = $n->request(POST => '/v1/sandboxes', $agent, { ttl_s => 600 });
is($st, 429, 'after a crash: the quota slot is still held');

($st, $h, $b, $j) = $n->request(POST => "/v1/sandboxes/$sb/exec", $agent, $exec,
                                { 'Veto-Approval' => $apr });
is($st, 200, 'the approval given before both restarts runs the request') or diag $b;
is($j->{stdout} // '', "gated run\n", '... the approved command');
($st, $h, $b, $j) = $n->request(POST => "/v1/sandboxes/$sb/exec", $agent, $exec,
                                { 'Veto-Approval' => $apr });
is($st, 403, '... once');
ok($n->redis->xlen('veto:{acme}:audit') > $audit_before,
   'the audit trail kept what came before and goes on');

($st) = $n->request(DELETE => "/v1/sandboxes/$sb", $agent);
is($st, 200, 'delete');
$n->stop;
$n->helper->stop;
$n->stop_redis;

# ---------------------------------------- the same without persistence
my $m = VetoNginx->new;
$m->start_redis;    # save "", appendonly no
$m->start_helper;
$m->start(redis => 1, policy => $policy);
eventually('redis without persistence up', 10, sub { redis_up($m) });
is($m->redis->config_get('appendonly')->[1], 'no', 'no AOF');

my $ok = $m->token(sub => 'agent-1', jti => 'agent-1-live');
($st, $h, $b, $j) = $m->request(POST => '/v1/sandboxes', $ok, { ttl_s => 600 });
is($st, 201, 'create: the one quota slot is taken') or diag $b;
my $sb2 = $j->{id};
($st) = $m->request(POST => '/v1/sandboxes', $ok, { ttl_s => 600 });
is($st, 429, 'a second create is over the quota');
ok($m->redis->xlen('veto:{acme}:audit') > 0, 'audit records written');

my $t = $m->token(sub => 'agent-1', jti => 'agent-1-stolen');
$m->redis->set('veto:{acme}:revoked:jti:agent-1-stolen', 1, 'EX', 600);
($st) = $m->request(GET => '/v1/sandboxes', $t);
is($st, 401, 'revoked on a Redis without persistence');
($st) = $m->request(POST => '/v1/sandboxes', $t, { ttl_s => 600 });
is($st, 401, '... also for a create');
$m->restart_redis('TERM');
eventually('the worker reconnected', 10, sub { redis_up($m) });
($st) = $m->request(GET => '/v1/sandboxes', $t);
is($st, 200, 'without persistence a Redis restart undoes the revocation '
   . '(why run-stack runs AOF)');
is($m->redis->xlen('veto:{acme}:audit'), 0, '... the audit trail is gone');
($st, $h, $b, $j) = $m->request(POST => '/v1/sandboxes', $ok, { ttl_s => 600 });
is($st, 201, '... and the quota slot is free again: one sandbox over the quota');
for my $id ($sb2, $j->{id} // ()) {
    ($st) = $m->request(DELETE => "/v1/sandboxes/$id", $ok);
    is($st, 200, "delete $id");
}

$m->stop;
$m->helper->stop;
$m->stop_redis;

done_testing;
