#!/usr/bin/perl
# Issue 7, item 15, and issue 18's mark on what cannot be undone: what the
# reviewer and the auditor read.  The 202 gives times in milliseconds like
# the approvals API (expires_at, seconds, stays); the summary names the
# sandbox; an audit record's detail is a JSON object; file writes and
# reads are on record with path, size and SHA-256; a path the helper
# would refuse is refused before an approval is made for it (which its
# use would burn); irreversible requests (file export, what the policy
# marks) say so, with a reason, in the summary.

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

my $policy = {
    version => 1,
    tenants => {
        acme => {
            ceilings => { memory_mb => 512, timeout_s => 30, ttl_s => 3600 },
            approvals => { exec_argv => ['git push*', 'sh -c *'],
                           export => JSON::PP::true,
                           always => ['sandbox.delete'],
                           irreversible_argv => ['git push*'],
                           irreversible_actions => ['sandbox.delete'] },
        },
        globex => {
            ceilings => { memory_mb => 512, timeout_s => 30, ttl_s => 3600 },
            approvals => { always => ['sandbox.files.write'] },
        },
        initech => {
            ceilings => { memory_mb => 512, timeout_s => 30, ttl_s => 3600 },
        },
    },
};

my $n = VetoNginx->new;

# nginx -t: the new approval fields are checked like the others
$n->write_policy({ version => 1, tenants => { acme => { approvals => {
    irreversible_actions => ['sandbox.destroy'] } } } });
$n->start_redis;
$n->render(redis => 1);
my ($ok, $out) = $n->test_config;
ok(!$ok, 'nginx -t: an unknown irreversible action fails');
like($out, qr/approvals\.irreversible_actions: unknown action/, '... naming it');
$n->write_policy({ version => 1, tenants => { acme => { approvals => {
    irreversible_argv => 'git push*' } } } });
($ok, $out) = $n->test_config;
ok(!$ok, 'nginx -t: irreversible_argv must be an array');

$n->start_helper;
$n->start(redis => 1, policy => $policy);

my $agent = $n->token(sub => 'agent-1');
my $rev = $n->token(sub => 'human-1', scope => 'approvals:review audit:read');
my $g = $n->token(sub => 'agent-1', tenant => 'globex');
my $grev = $n->token(sub => 'human-1', tenant => 'globex',
                     scope => 'approvals:review audit:read');
my $i = $n->token(sub => 'agent-1', tenant => 'initech');
my $irev = $n->token(sub => 'human-1', tenant => 'initech', scope => 'audit:read');

my ($st, $h, $b, $j);
eventually('Redis is up', 10, sub {
    ($st, $h, $b, $j) = $n->request(GET => '/v1/health');
    ($j->{redis} // '') eq 'up';
});
is($j->{redis}, 'up', 'redis up');

($st, $h, $b, $j) = $n->request(POST => '/v1/sandboxes', $agent, { ttl_s => 600 });
is($st, 201, 'sandbox') or diag $b;
my $sb = $j->{id};

# ---- the 202: times in ms, the sandbox named, irreversible marked
($st, $h, $b, $j) = $n->request(POST => "/v1/sandboxes/$sb/exec", $agent,
                                { argv => ['git', 'push', 'origin', 'main'] });
is($st, 202, 'git push: 202') or diag $b;
my $id = $j->{approval_id};
ok($j->{created_ms} > 1_600_000_000_000, 'created_ms in milliseconds');
ok($j->{expires_ms} > $j->{created_ms}, 'expires_ms in milliseconds');
is($j->{expires_at}, int($j->{expires_ms} / 1000), 'expires_at stays, in seconds');
is($j->{summary}{sandbox}, $sb, 'the summary names the sandbox');
is($j->{summary}{irreversible}, JSON::PP::true, 'git push is marked irreversible');
like($j->{summary}{irreversible_reason}, qr/irreversible_argv/,
     '... with the reason');
my $exp = $j->{expires_ms};
($st, $h, $b, $j) = $n->request(GET => "/v1/approvals/$id", $rev);
is($j->{expires_ms}, $exp, 'the same expires_ms as the approvals API');
is($j->{summary}{sandbox}, $sb, 'the reviewer reads the sandbox');

($st, $h, $b, $j) = $n->request(POST => "/v1/sandboxes/$sb/exec", $agent,
                                { argv => ['sh', '-c', 'echo hi'] });
is($st, 202, 'sh -c: 202');
ok(!exists $j->{summary}{irreversible}, 'not marked: nothing says it cannot be undone');

($st, $h, $b, $j) = $n->request(GET => "/v1/sandboxes/$sb/files?path=out.txt", $agent);
is($st, 202, 'a file export: 202');
is($j->{summary}{irreversible}, JSON::PP::true, 'export is irreversible');
like($j->{summary}{irreversible_reason}, qr/file export/, '... because it leaves');
is($j->{summary}{path}, 'out.txt', 'the file named');

($st, $h, $b, $j) = $n->request(DELETE => "/v1/sandboxes/$sb", $agent);
is($st, 202, 'delete: 202');
is($j->{summary}{irreversible}, JSON::PP::true, 'the policy marks delete irreversible');
like($j->{summary}{irreversible_reason}, qr/irreversible_actions/, '... and says so');

# ---- a path the helper would refuse never gets an approval
($st, $h, $b, $j) = $n->request(POST => '/v1/sandboxes', $g, { ttl_s => 600 });
my $gsb = $j->{id};
for my $bad ('./x', 'a//b', 'a/./b', '../x', 'a/..', 'x%01y', 'a/', ('n' x 256),
             '/workspace/../x', '/workspace//x', '/workspace', '/etc/passwd') {
    ($st, $h, $b, $j) = $n->request(PUT => "/v1/sandboxes/$gsb/files?path=$bad", $g,
                                    'data');
    is($st, 400, "PUT ?path=$bad: 400 before any approval");
    is($j->{type}, 'urn:veto-sandbox:problem:bad_path', '... bad_path') if $bad eq './x';
    is($j->{field}, 'path', '... naming path') if $bad eq './x';
}
is($n->redis->zcard('veto:{globex}:appr:idx'), 0, 'no approval was made for any');
($st, $h, $b, $j) = $n->request(PUT => "/v1/sandboxes/$gsb/files?path=ok/x.txt", $g,
                                'data');
is($st, 202, 'a good path: 202');
my $wid = $j->{approval_id};
($st) = $n->request(POST => "/v1/approvals/$wid/approve", $grev, '');
($st, $h, $b, $j) = $n->request(PUT => "/v1/sandboxes/$gsb/files?path=ok/x.txt", $g,
                                'data', { 'Veto-Approval' => $wid });
is($st, 200, 'approved, it is written') or diag $b;

# ---- file records: path, size, sha256
($st, $h, $b, $j) = $n->request(POST => '/v1/sandboxes', $i, { ttl_s => 600 });
my $isb = $j->{id};
my $content = "exported bytes\n";
($st) = $n->request(PUT => "/v1/sandboxes/$isb/files?path=dir/out.patch", $i, $content);
is($st, 200, 'write');
($st) = $n->request(GET => "/v1/sandboxes/$isb/files?path=dir/out.patch", $i);
is($st, 200, 'read');
($st) = $n->request(GET => "/v1/sandboxes/$isb/files?path=dir/none", $i);
is($st, 404, 'read of a missing file');

my @recs;
eventually('both file reads in the audit', 3, sub {
    ($st, $h, $b, $j) = $n->request(GET => "/v1/audit?sandbox=$isb", $irev);
    @recs = @{ $j->{records} // [] };
    (grep { $_->{action} eq 'sandbox.files.read' } @recs) >= 2;
});
is($st, 200, 'audit');
my ($w) = grep { $_->{action} eq 'sandbox.files.write' } @recs;
my ($rd) = grep { $_->{action} eq 'sandbox.files.read' && $_->{outcome} eq 'allowed' } @recs;
my ($miss) = grep { $_->{action} eq 'sandbox.files.read' && $_->{outcome} eq 'error' } @recs;
is(ref $w->{detail}, 'HASH', 'detail is a JSON object, not a string');
is_deeply($w->{detail}, { path => 'dir/out.patch', size => length($content),
                          sha256 => Digest::SHA::sha256_hex($content) },
          'the write record: path, size, sha256');
is_deeply($rd->{detail}, { path => 'dir/out.patch', size => length($content),
                           sha256 => Digest::SHA::sha256_hex($content) },
          'the read record (what left): path, size, sha256');
is($miss->{detail}{path}, 'dir/none', 'a failed read names its path');
my ($cr) = grep { $_->{outcome} eq 'sandbox_created' } @recs;
is(ref $cr->{detail}, 'HASH', 'every detail is an object (sandbox_created)');
is($cr->{detail}{limits}{memory_mb} > 0, 1, '... with its fields');

done_testing();
