#!/usr/bin/perl
# Issue 4 through nginx: the approval story with two identities, every
# way to misuse an approval, thresholds, the approvals API's scoping, and
# the audit trail of it all (with no secret in it).  Real Redis, real
# helper, started privately by this test.

use strict;
use warnings;

use Test::More;
use Digest::SHA ();
use JSON::PP ();
use lib 't/lib';
use VetoNginx;
use Time::HiRes qw(sleep time);

VetoNginx::need(qw(helper redis));

my $SECRET_ENV = 'sekrit-env-value-4711';

my $policy = {
    version => 1,
    tenants => {
        acme => {
            ceilings => { memory_mb => 512, timeout_s => 30, ttl_s => 3600 },
            approvals => { exec_argv => ['sh -c *', 'git push*'],
                           export => JSON::PP::true },
            agents => {
                'agent-fast' => { approvals => { exec_argv => ['sh -c *'],
                                                 ttl_s => 1 } },
            },
        },
        globex => {
            ceilings => { memory_mb => 512, timeout_s => 30 },
            approvals => { always => ['sandbox.exec'] },
        },
        initech => {
            ceilings => { memory_mb => 512, timeout_s => 30 },
            approvals => { always => ['sandbox.exec'], threshold => 2 },
        },
    },
};

my $n = VetoNginx->new;

# ---- nginx -t: a policy with approvals needs Redis
$n->write_policy($policy);
$n->render;
my ($ok, $out) = $n->test_config;
ok(!$ok, 'nginx -t: approvals without veto_sandbox_redis fail');
like($out, qr/need "veto_sandbox_redis"/, 'the message names the directive');

$n->start_redis;
$n->start_helper;
$n->render(redis => 1);
($ok, $out) = $n->test_config;
ok($ok, 'nginx -t with veto_sandbox_redis') or diag $out;
$n->start(redis => 1, keep_conf => 1, policy => $policy);

my $agent = $n->token(sub => 'agent-1', jti => 'jti-agent-1');
my $agent2 = $n->token(sub => 'agent-2');
my $fast = $n->token(sub => 'agent-fast');
my $rev = $n->token(sub => 'human-1', scope => 'approvals:review');
my $rev2 = $n->token(sub => 'human-2', scope => 'approvals:review');
my $noscope = $n->token(sub => 'human-3', scope => 'sandbox:exec');
my $other_rev = $n->token(sub => 'human-9', tenant => 'globex',
                          scope => 'approvals:review');
my $both = $n->token(sub => 'agent-1', scope =>
                     'sandbox:create sandbox:exec approvals:review');
my $auditor = $n->token(sub => 'auditor-1', scope => 'audit:read');

my ($st, $h, $b, $j);

($st, $h, $b, $j) = $n->request(GET => '/v1/health');
is($st, 200, 'health');
# the worker connects in the background
for (1 .. 40) { last if ($j->{redis} // '') eq 'up'; sleep 0.05;
                ($st, $h, $b, $j) = $n->request(GET => '/v1/health'); }
is($j->{redis}, 'up', 'health: redis up');

sub create_sb
{
    my ($tok, $env) = @_;
    my ($st, $h, $b, $j) = $n->request(POST => '/v1/sandboxes', $tok,
                                       { ttl_s => 300,
                                         env => $env // { APP_MODE => 'staging' } });
    is($st, 201, 'create sandbox') or diag $b;
    return $j->{id};
}

# a secret in a sandbox's env reaches no record (below)
create_sb($agent, { API_TOKEN => $SECRET_ENV });

my $sb = create_sb($agent);
my $exec = { argv => ['sh', '-c', 'echo approved-run'], timeout_s => 10,
             env => { LOG_LEVEL => 'debug' } };

# ---- no approval needed: runs at once
($st, $h, $b, $j) = $n->request(POST => "/v1/sandboxes/$sb/exec", $agent,
                                { argv => ['echo', 'free'] });
is($st, 200, 'exec not matching any pattern runs') or diag $b;
is($j->{stdout}, "free\n", 'its output');

# ---- the story
($st, $h, $b, $j) = $n->request(POST => "/v1/sandboxes/$sb/exec", $agent, $exec);
is($st, 202, 'risky exec: 202') or diag $b;
my $id = $j->{approval_id} // '';
like($id, qr/^apr_[0-9a-f]{32}$/, 'approval id');
is($h->{location}, "/v1/approvals/$id", 'Location');
is($j->{state}, 'pending', 'state pending');
is($j->{action}, 'sandbox.exec', 'action');
is_deeply($j->{summary}{argv}, ['sh', '-c', 'echo approved-run'],
          'summary shows argv');
# the env that will apply: the sandbox's and the exec's, every value, the
# names that are not inert flagged
is_deeply($j->{summary}{env_names}, ['APP_MODE', 'LOG_LEVEL'],
          'env names: the sandbox\'s and the exec\'s');
is_deeply($j->{summary}{env}, { APP_MODE => 'staging', LOG_LEVEL => 'debug' },
          'their values');
is_deeply($j->{summary}{env_flagged}, ['APP_MODE', 'LOG_LEVEL'],
          'neither is inert: both flagged');
my $hash = $j->{request_hash};
like($hash, qr/^[0-9a-f]{64}$/, 'request hash');

# still pending: the header does not help
($st, $h, $b, $j) = $n->request(POST => "/v1/sandboxes/$sb/exec", $agent, $exec,
                                { 'Veto-Approval' => $id });
is($st, 403, 'pending approval refused');
is($j->{state}, 'pending', '... saying pending');
is($j->{type}, 'urn:veto-sandbox:problem:approval_pending', '... approval_pending');

($st, $h, $b, $j) = $n->request(GET => '/v1/approvals?state=pending', $rev);
is($st, 200, 'reviewer lists pending') or diag $b;
ok((grep { $_->{id} eq $id } @{ $j->{approvals} }), 'the approval is listed');

($st, $h, $b, $j) = $n->request(GET => "/v1/approvals/$id", $rev);
is($st, 200, 'reviewer reads it');
is($j->{agent}, 'agent-1', 'requester');
is($j->{hash}, $hash, 'hash');
is($j->{state}, 'pending', 'pending');
ok($j->{expires_ms} > $j->{created_ms}, 'created/expires');

($st, $h, $b, $j) = $n->request(GET => "/v1/approvals/$id", $agent);
is($st, 200, 'the requester may read its own approval');
($st) = $n->request(GET => "/v1/approvals/$id", $agent2);
is($st, 404, 'another agent without review scope: 404');

# scoping of decisions
($st, $h, $b, $j) = $n->request(POST => "/v1/approvals/$id/approve", $noscope, '');
is($st, 403, 'reviewer without scope: 403');
($st, $h, $b, $j) = $n->request(POST => "/v1/approvals/$id/approve", $other_rev, '');
is($st, 404, "other tenant's reviewer: 404");
($st, $h, $b, $j) = $n->request(GET => "/v1/approvals/$id", $other_rev);
is($st, 404, "other tenant's reviewer cannot read it");
($st, $h, $b, $j) = $n->request(POST => "/v1/approvals/$id/approve", $both, '');
is($st, 403, 'self-approval refused');
is($j->{type}, 'urn:veto-sandbox:problem:self_approval', '... as self_approval');

($st, $h, $b, $j) = $n->request(POST => "/v1/approvals/$id/approve", $rev,
                                { reason => 'looks fine' });
is($st, 200, 'reviewer approves') or diag $b;
is($j->{state}, 'approved', 'approved');

($st, $h, $b, $j) = $n->request(POST => "/v1/sandboxes/$sb/exec", $agent, $exec,
                                { 'Veto-Approval' => $id });
is($st, 200, 'agent repeats with Veto-Approval: runs') or diag $b;
is($j->{stdout}, "approved-run\n", 'the approved command ran');

($st, $h, $b, $j) = $n->request(POST => "/v1/sandboxes/$sb/exec", $agent, $exec,
                                { 'Veto-Approval' => $id });
is($st, 403, 'repeating again: refused');
is($j->{type}, 'urn:veto-sandbox:problem:approval_used', '... approval_used');

($st, $h, $b, $j) = $n->request(GET => "/v1/approvals/$id", $rev);
is($j->{state}, 'consumed', 'state consumed');

my $story_id = $id;

# ---- misuse
sub approved
{
    my ($tok, $body, $sbx) = @_;
    my ($st, $h, $b, $j) = $n->request(POST => "/v1/sandboxes/$sbx/exec", $tok,
                                       $body);
    is($st, 202, 'needs approval') or diag $b;
    my $id = $j->{approval_id};
    ($st, $h, $b, $j) = $n->request(POST => "/v1/approvals/$id/approve", $rev, '');
    is($st, 200, 'approved') or diag $b;
    return $id;
}

# A used on B: same path, different argv
$id = approved($agent, $exec, $sb);
($st, $h, $b, $j) = $n->request(POST => "/v1/sandboxes/$sb/exec", $agent,
    { %$exec, argv => ['sh', '-c', 'echo something-else'] },
    { 'Veto-Approval' => $id });
is($st, 403, 'approval for A used on B: refused');
is($j->{type}, 'urn:veto-sandbox:problem:approval_mismatch', '... mismatch');
is($j->{mismatch}, 'hash', '... of the request hash');

# other agent (same tenant, own sandbox, same body and path shape)
my $sb2 = create_sb($agent2);
($st, $h, $b, $j) = $n->request(POST => "/v1/sandboxes/$sb2/exec", $agent2, $exec,
                                { 'Veto-Approval' => $id });
ok($st == 403, 'other agent: refused');
is($j->{type}, 'urn:veto-sandbox:problem:approval_mismatch', '... mismatch');
is($j->{mismatch}, 'agent', '... of the agent');

# in a sandbox that is not its own, another agent gets what an unknown
# sandbox gets: its env cannot be shown, nothing is asked or used
($st, $h, $b, $j) = $n->request(POST => "/v1/sandboxes/$sb/exec", $agent2, $exec,
                                { 'Veto-Approval' => $id });
is($st, 409, 'other agent in the owner\'s sandbox: refused');
is($j->{type}, 'urn:veto-sandbox:problem:sandbox_env_unknown',
   '... as an unknown sandbox');

# other tenant: the same
my $g = $n->token(sub => 'agent-1', tenant => 'globex');
($st, $h, $b, $j) = $n->request(POST => "/v1/sandboxes/$sb/exec", $g, $exec,
                                { 'Veto-Approval' => $id });
is($st, 409, 'other tenant: refused');
is($j->{type}, 'urn:veto-sandbox:problem:sandbox_env_unknown', '... unknown there');

# the rightful use still works after all those refusals
($st, $h, $b, $j) = $n->request(POST => "/v1/sandboxes/$sb/exec", $agent, $exec,
                                { 'Veto-Approval' => $id });
is($st, 200, 'refusals did not use it up') or diag $b;

# the binding is over the JSON's values (RFC 8785 form), not its bytes: a
# client that serializes the same body again, with other spacing, key
# order and escapes, matches; one changed value does not
{
    my $compact = JSON::PP->new->canonical->encode($exec);
    my $respaced = "{\n  \"timeout_s\" : 10 ,\n  \"env\" : { \"LOG_LEVEL\" : "
        . "\"\\u0064ebug\" } ,\n"
        . "  \"argv\" : [ \"sh\", \"\\u002dc\", \"echo approved\\/run\" ] }";
    $respaced =~ s{approved\\/run}{approved-run};
    isnt($respaced, $compact, 'the repeat is other bytes');
    is_deeply(JSON::PP->new->decode($respaced), $exec, '... of the same values');
    my %json = ('Content-Type' => 'application/json');
    $id = approved($agent, $exec, $sb);
    ($st, $h, $b, $j) = $n->request(POST => "/v1/sandboxes/$sb/exec", $agent,
                                    $respaced, { %json, 'Veto-Approval' => $id });
    is($st, 200, 'the same values re-serialized: the approval matches')
        or diag $b;
    is($j->{stdout}, "approved-run\n", '... and it ran');

    $id = approved($agent, $exec, $sb);
    (my $changed = $respaced) =~ s{"timeout_s" : 10}{"timeout_s" : 11};
    ($st, $h, $b, $j) = $n->request(POST => "/v1/sandboxes/$sb/exec", $agent,
                                    $changed, { %json, 'Veto-Approval' => $id });
    is($st, 403, 'one value changed: refused');
    is($j->{type}, 'urn:veto-sandbox:problem:approval_mismatch',
       '... approval_mismatch');
    # a duplicate key could give one approved body two readings: refused
    # before the gate
    (my $dup = $compact) =~ s/^\{/{"timeout_s":10,/;
    ($st, $h, $b, $j) = $n->request(POST => "/v1/sandboxes/$sb/exec", $agent,
                                    $dup, { %json, 'Veto-Approval' => $id });
    is($st, 400, 'a duplicate key: 400');
    is($j->{type}, 'urn:veto-sandbox:problem:bad_json', '... bad_json');
    ($st, $h, $b, $j) = $n->request(POST => "/v1/sandboxes/$sb/exec", $agent,
                                    $compact, { %json, 'Veto-Approval' => $id });
    is($st, 200, 'the refusals did not use it up') or diag $b;
}

# denied
($st, $h, $b, $j) = $n->request(POST => "/v1/sandboxes/$sb/exec", $agent, $exec);
$id = $j->{approval_id};
($st, $h, $b, $j) = $n->request(POST => "/v1/approvals/$id/deny", $rev, '');
is($st, 422, 'deny without a reason: 422');
($st, $h, $b, $j) = $n->request(POST => "/v1/approvals/$id/deny", $rev,
                                { reason => 'not today' });
is($st, 200, 'deny with a reason') or diag $b;
is($j->{state}, 'denied', 'denied');
($st, $h, $b, $j) = $n->request(POST => "/v1/sandboxes/$sb/exec", $agent, $exec,
                                { 'Veto-Approval' => $id });
is($st, 403, 'denied approval: refused');
is($j->{type}, 'urn:veto-sandbox:problem:approval_denied', '... approval_denied');
is($j->{reason}, 'not today', "... with the reviewer's reason");
($st, $h, $b, $j) = $n->request(POST => "/v1/approvals/$id/approve", $rev2, '');
is($st, 409, 'approving a denied approval: 409');

# expired (agent-fast: ttl 1 s)
my $sbf = create_sb($fast);
$id = approved($fast, $exec, $sbf);
sleep 1.3;    # on purpose: past the approval's ttl of 1 s
($st, $h, $b, $j) = $n->request(POST => "/v1/sandboxes/$sbf/exec", $fast, $exec,
                                { 'Veto-Approval' => $id });
is($st, 403, 'expired approval: refused');
is($j->{type}, 'urn:veto-sandbox:problem:approval_expired', '... expired');

# a made-up id
($st, $h, $b, $j) = $n->request(POST => "/v1/sandboxes/$sb/exec", $agent, $exec,
                                { 'Veto-Approval' => 'apr_' . ('0' x 32) });
is($st, 403, 'unknown approval id: refused');
($st, $h, $b, $j) = $n->request(POST => "/v1/sandboxes/$sb/exec", $agent, $exec,
                                { 'Veto-Approval' => 'nonsense' });
is($st, 403, 'malformed approval id: refused');

# ---- threshold 2 (initech)
my $ia = $n->token(sub => 'agent-i', tenant => 'initech');
my $ir1 = $n->token(sub => 'rev-a', tenant => 'initech', scope => 'approvals:review');
my $ir2 = $n->token(sub => 'rev-b', tenant => 'initech', scope => 'approvals:review');
my $isb = create_sb($ia);
my $iexec = { argv => ['echo', 'two-people'] };
($st, $h, $b, $j) = $n->request(POST => "/v1/sandboxes/$isb/exec", $ia, $iexec);
is($st, 202, 'threshold: 202');
is($j->{threshold}, 2, 'threshold 2');
$id = $j->{approval_id};
($st, $h, $b, $j) = $n->request(POST => "/v1/approvals/$id/approve", $ir1, '');
is($j->{state}, 'pending', 'one approval: still pending');
is($j->{approvals}, 1, 'count 1');
($st, $h, $b, $j) = $n->request(POST => "/v1/approvals/$id/approve", $ir1, '');
is($st, 409, 'the same reviewer twice: 409');
($st, $h, $b, $j) = $n->request(POST => "/v1/sandboxes/$isb/exec", $ia, $iexec,
                                { 'Veto-Approval' => $id });
is($st, 403, 'one of two: not usable');
($st, $h, $b, $j) = $n->request(POST => "/v1/approvals/$id/approve", $ir2, '');
is($j->{state}, 'approved', 'second reviewer: approved');
($st, $h, $b, $j) = $n->request(POST => "/v1/sandboxes/$isb/exec", $ia, $iexec,
                                { 'Veto-Approval' => $id });
is($st, 200, 'two of two: runs') or diag $b;

# ---- export needs approval (files read)
($st) = $n->request(PUT => "/v1/sandboxes/$sb/files?path=out.txt", $agent, "data\n");
is($st, 200, 'write a file (no approval needed)');
($st, $h, $b, $j) = $n->request(GET => "/v1/sandboxes/$sb/files?path=out.txt", $agent);
is($st, 202, 'export: 202');
is($j->{summary}{path}, 'out.txt', 'summary names the path');
$id = $j->{approval_id};
$n->request(POST => "/v1/approvals/$id/approve", $rev, '');
($st, $h, $b) = $n->request(GET => "/v1/sandboxes/$sb/files?path=out.txt", $agent,
                            undef, { 'Veto-Approval' => $id });
is($st, 200, 'export with approval');
is($b, "data\n", 'content');

# ---- delete, audit
($st) = $n->request(DELETE => "/v1/sandboxes/$sb", $agent);
is($st, 200, 'delete');

sleep 0.2;     # fire-and-forget records are on the same connection

($st, $h, $b, $j) = $n->request(GET => '/v1/audit', $agent);
is($st, 403, 'audit needs audit:read');
($st, $h, $b, $j) = $n->request(GET => '/v1/audit?limit=1000', $auditor);
is($st, 200, 'auditor reads the audit') or diag $b;
my @recs = @{ $j->{records} // [] };
ok(@recs > 10, 'records: ' . scalar @recs);
ok(!(grep { $_->{tenant} ne 'acme' } @recs), 'tenant-scoped');

my @story = reverse grep { ($_->{approval} // '') eq $story_id } @recs;
# A reviewer without the review scope is on record (refused with this
# tenant's token); the other tenant's 404 is not (nothing of this tenant
# was decided).
my @noscope = grep { ($_->{reason} // '') eq 'insufficient_scope' } @story;
is(scalar @noscope, 1, 'the refused reviewer without the scope is on record');
is($noscope[0]{detail}{path}, "/v1/approvals/$story_id/approve",
   'with what it asked for');
@story = grep { ($_->{reason} // '') ne 'insufficient_scope' } @story;
# requested; the premature use; the self-approval; the approval; the
# consume; the run; the replay.  The approval with the reason given.
is_deeply([map { $_->{outcome} . ':' . ($_->{reason} // '') } @story],
          [qw(approval_requested: denied:approval_pending
              denied:self_approval), 'approval_approved:looks fine',
           qw(approval_consumed: exec_finished: denied:approval_used)],
          'one record per decision of the story, in order')
    or diag explain \@story;
is($story[3]{reviewer}, 'human-1', 'approver on record');
is($story[2]{reviewer}, 'agent-1', 'self-approver on record');
is($story[0]{agent}, 'agent-1', 'requester on record');
is($story[0]{request_hash}, $hash, 'request hash on record');
is($story[4]{request_hash}, $hash, 'consumed for the same hash');
is($story[5]{detail}{exit_code}, 0, 'exit status on record');
is($story[5]{sandbox}, $sb, 'sandbox on record');
# the execution record: what ran, and the size and hash of what came out
my $run = $story[5]{detail} // {};
is_deeply($run->{request}{argv}, ['sh', '-c', 'echo approved-run'],
          'argv on the execution record');
is($run->{stdout_bytes}, length("approved-run\n"), 'stdout size on record');
is($run->{stdout_sha256}, Digest::SHA::sha256_hex("approved-run\n"),
   'stdout hash on record');
is($run->{stderr_sha256}, Digest::SHA::sha256_hex(''), 'stderr hash on record');
ok(defined $run->{usage}{wall_ms}, 'usage on record');
my ($created) = grep { $_->{outcome} eq 'sandbox_created'
                       && ($_->{sandbox} // '') eq $sb } @recs;
my $given = $created->{detail} // {};
ok($given->{limits}{memory_mb} && $given->{ttl_s},
   'limits and ttl on the creation record') or diag explain $created;
ok($story[0]{time} && $story[0]{request_id}, 'time and request id');

ok((grep { $_->{outcome} eq 'sandbox_created' } @recs), 'sandbox_created');
ok((grep { $_->{outcome} eq 'sandbox_destroyed' } @recs), 'sandbox_destroyed');
ok((grep { $_->{outcome} eq 'approval_denied' && $_->{reason} eq 'not today' }
    @recs), 'approval_denied with reason');
ok((grep { $_->{outcome} eq 'approval_expired' } 
    @{ ($n->request(GET => '/v1/audit?limit=1000&agent=agent-fast', $auditor))[3]{records} }),
   'approval_expired (filter by agent)');

($st, $h, $b, $j) = $n->request(GET => "/v1/audit?sandbox=$sb2", $auditor);
ok(@{ $j->{records} } >= 1 && !(grep { ($_->{sandbox} // '') ne $sb2 } @{ $j->{records} }),
   'filter by sandbox');

# no secret anywhere in any stream
my $r = $n->redis;
my $all = '';
for my $k ($r->keys('veto:*:audit')) {
    for my $e (@{ $r->xrange($k, '-', '+') }) {
        $all .= join("\n", @{ $e->[1] }) . "\n";
    }
}
ok(length $all > 1000, 'audit streams read directly');
for my $tok ($agent, $agent2, $fast, $rev, $rev2, $both, $ia, $ir1, $ir2) {
    my ($sig) = $tok =~ /\.([^.]+)$/;
    unlike($all, qr/\Q$sig\E/, 'no token in the audit') ;
}
unlike($all, qr/Bearer|Authorization/i, 'no Authorization header');
unlike($all, qr/\Q$SECRET_ENV\E/, 'no env value');
unlike($all, qr/eyJ/, 'nothing JWT-shaped');

done_testing;
