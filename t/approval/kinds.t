#!/usr/bin/perl
# The other approval triggers through nginx: creating a listed profile,
# writing a file (the summary shows path, size and digest), and deleting;
# plus the audit API's time filter.

use strict;
use warnings;

use Test::More;
use lib 't/lib';
use VetoNginx;
use Eventually qw(eventually);
use Digest::SHA qw(sha256_hex);
use Time::HiRes qw(time sleep);

VetoNginx::need(qw(helper redis));

my $policy = {
    version => 1,
    tenants => {
        umbrella => {
            ceilings => { memory_mb => 512, timeout_s => 30, ttl_s => 3600 },
            approvals => { profiles => ['default'],
                           always => ['sandbox.files.write', 'sandbox.delete'] },
            quotas => { per_agent => { concurrent_sandboxes => 1 } },
        },
    },
};

my $n = VetoNginx->new;
$n->start_redis;
$n->start_helper;
$n->start(redis => 1, policy => $policy);

my $agent = $n->token(sub => 'agent-u', tenant => 'umbrella');
my $rev = $n->token(sub => 'human-u', tenant => 'umbrella',
                    scope => 'approvals:review audit:read');

my ($st, $h, $b, $j);
my $t0 = int(time() * 1000);

sub approve
{
    my ($id) = @_;
    my ($st) = $n->request(POST => "/v1/approvals/$id/approve", $rev, '');
    is($st, 200, "approve $id");
}

eventually('the gateway gets past Redis (not 503)', 10, sub {
    ($st, $h, $b, $j) = $n->request(POST => '/v1/sandboxes', $agent,
                                    { ttl_s => 300, metadata => { pw => 'x' } });
    $st != 503;
});
is($st, 202, 'create with a listed profile (default): 202') or diag $b;
is($j->{summary}{profile}, undef, 'no profile named in the body');
is($j->{action}, 'sandbox.create', 'action');
ok(!exists $j->{summary}{metadata}, 'metadata is not shown');
my $id = $j->{approval_id};
approve($id);
($st, $h, $b, $j) = $n->request(POST => '/v1/sandboxes', $agent,
                                { ttl_s => 300, metadata => { pw => 'x' } },
                                { 'Veto-Approval' => $id });
is($st, 201, 'create with the approval') or diag $b;
my $sb = $j->{id};

my $data = "print('hello')\n" x 10;
($st, $h, $b, $j) = $n->request(PUT => "/v1/sandboxes/$sb/files?path=src/a.py",
                                $agent, $data);
is($st, 202, 'write: 202');
is($j->{summary}{path}, 'src/a.py', 'summary: path');
is($j->{summary}{size}, length $data, 'summary: size');
is($j->{summary}{sha256}, sha256_hex($data), 'summary: digest');
$id = $j->{approval_id};
approve($id);
($st, $h, $b, $j) = $n->request(PUT => "/v1/sandboxes/$sb/files?path=src/a.py",
                                $agent, $data . "x", { 'Veto-Approval' => $id });
is($st, 403, 'other content under the same approval: refused');
($st, $h, $b, $j) = $n->request(PUT => "/v1/sandboxes/$sb/files?path=src/b.py",
                                $agent, $data, { 'Veto-Approval' => $id });
is($st, 403, 'other path (query) under the same approval: refused');
($st, $h, $b, $j) = $n->request(PUT => "/v1/sandboxes/$sb/files?path=src/a.py",
                                $agent, $data, { 'Veto-Approval' => $id });
is($st, 200, 'the approved write') or diag $b;
is($j->{sha256}, sha256_hex($data), 'written');

# quotas come before approvals: a refused request asks no human and a
# 429 never burns an approval
($st, $h, $b, $j) = $n->request(POST => '/v1/sandboxes', $agent, { ttl_s => 300 });
is($st, 429, 'second sandbox over the agent quota: 429, before any approval');
($st, $h, $b, $j) = $n->request(GET => '/v1/approvals?state=pending', $rev);
is(scalar @{ $j->{approvals} }, 0, 'no approval was asked for');

($st, $h, $b, $j) = $n->request(DELETE => "/v1/sandboxes/$sb", $agent);
is($st, 202, 'delete: 202');
$id = $j->{approval_id};
approve($id);
($st, $h, $b, $j) = $n->request(DELETE => "/v1/sandboxes/$sb", $agent, undef,
                                { 'Veto-Approval' => $id });
is($st, 200, 'approved delete') or diag $b;
is($j->{state}, 'terminated', 'terminated');

($st, $h, $b, $j) = $n->request(POST => '/v1/sandboxes', $agent, { ttl_s => 300 });
is($st, 202, 'a new create asks again');
sleep 0.2;    # on purpose: time for a wrong slot to show
is($n->redis->zcard('veto:{umbrella}:sbx:live:agent-u'), 0,
   'a 202 holds no quota slot');

sleep 0.2;    # the records are sent without waiting for Redis
($st, $h, $b, $j) = $n->request(GET => "/v1/audit?from=$t0", $rev);
is($st, 200, 'audit from t0');
my $all = @{ $j->{records} };
ok($all >= 10, "records since t0: $all");
my $later = int(time() * 1000) + 3600_000;
($st, $h, $b, $j) = $n->request(GET => "/v1/audit?from=$later", $rev);
is(scalar @{ $j->{records} }, 0, 'nothing in the future');
($st, $h, $b, $j) = $n->request(GET => "/v1/audit?to=$t0", $rev);
is(scalar @{ $j->{records} }, 0, 'nothing before t0');
($st, $h, $b, $j) = $n->request(GET => "/v1/audit?limit=3", $rev);
is(scalar @{ $j->{records} }, 3, 'limit');
($st, $h, $b, $j) = $n->request(GET => "/v1/audit?limit=0", $rev);
is($st, 400, 'bad limit: 400');
($st, $h, $b, $j) = $n->request(GET => "/v1/approvals?state=bogus", $rev);
is($st, 400, 'bad state filter: 400');
($st, $h, $b, $j) = $n->request(GET => "/v1/approvals?state=consumed", $rev);
is(scalar @{ $j->{approvals} }, 3, 'three consumed approvals');

done_testing;
