#!/usr/bin/perl
# Issue 29's review fixes, against real nginx and Redis:
#  * one agent cannot fill its tenant's approval table: its open (pending)
#    requests have their own cap (policy approvals.max_open_per_agent, a
#    quarter of veto_sandbox_approval_max when absent); past it 429
#    agent_approvals_full, while another agent of the tenant still gets
#    its 202; a decision frees a place;
#  * a reviewer whose sub equals the requester's but for case is the
#    requester: 403 self_approval, approving or denying;
#  * the reason given with an approve is kept: the agent reads it in
#    GET /v1/approvals/{id} (approve_reasons) and the audit has it.

use strict;
use warnings;

use Test::More;
use lib 't/lib';
use VetoNginx;
use Eventually qw(eventually);
use POSIX ();

VetoNginx::need(qw(helper redis));

my $policy = {
    version => 1,
    tenants => {
        acme => {
            approvals => { always => ['sandbox.create'],
                           max_open_per_agent => 2 },
        },
        # no max_open_per_agent: a quarter of veto_sandbox_approval_max (8)
        globex => {
            approvals => { always => ['sandbox.create'] },
        },
    },
};

my $n = VetoNginx->new;
$n->start_redis;
$n->start_helper;
$n->start(redis => 1, policy => $policy,
          http_extra => 'veto_sandbox_approval_max 8;');

my ($st, $h, $b, $j);

sub ask
{
    my ($tok) = @_;
    return $n->request(POST => '/v1/sandboxes', $tok, { ttl_s => 60 });
}

eventually('the worker reaches Redis', 10, sub {
    my (undef, undef, undef, $hj) = $n->request(GET => '/v1/health');
    ($hj->{redis} // '') eq 'up';
});

# ---- the agent's cap (policy) ----

my $a1 = $n->token(sub => 'agent-1');
my $a2 = $n->token(sub => 'agent-2');
my $rev = $n->token(sub => 'human-1', scope => 'approvals:review');

my @ids;
for my $i (1 .. 2) {
    ($st, $h, $b, $j) = ask($a1);
    is($st, 202, "agent-1: request $i waits for a human") or diag $b;
    push @ids, $j->{approval_id};
}

($st, $h, $b, $j) = ask($a1);
is($st, 429, 'agent-1: a third open request is refused');
is($j->{type}, 'urn:veto-sandbox:problem:agent_approvals_full',
   '... as agent_approvals_full') or diag $b;
is($j->{limit}, 2, '... naming the cap');
like($j->{detail}, qr/max_open_per_agent/, '... and the policy key');

($st, $h, $b, $j) = ask($a2);
is($st, 202, 'agent-2 of the same tenant still gets its 202') or diag $b;

($st, $h, $b, $j) = $n->request(POST => "/v1/approvals/$ids[0]/deny", $rev,
                                { reason => 'not now' });
is($st, 200, 'a reviewer denies one of agent-1\'s') or diag $b;
($st, $h, $b, $j) = ask($a1);
is($st, 202, 'agent-1: the decision freed a place') or diag $b;

# concurrent requests of one agent: the cap holds (one script decides)
{
    my $ar = $n->token(sub => 'agent-race');
    my @pids;
    for my $i (1 .. 8) {
        my $pid = fork() // die "fork: $!";
        if ($pid == 0) {
            my ($s) = ask($ar);
            POSIX::_exit($s == 202 ? 2 : $s == 429 ? 4 : 1);
        }
        push @pids, $pid;
    }
    my %by;
    for (@pids) { waitpid($_, 0); $by{$? >> 8}++; }
    is($by{2} // 0, 2, '8 at once: exactly the cap (2) get their 202');
    is($by{4} // 0, 6, '... the other 6 their 429');
}

# ---- the default cap: a quarter of veto_sandbox_approval_max ----

my $g1 = $n->token(sub => 'agent-1', tenant => 'globex');
my $g2 = $n->token(sub => 'agent-2', tenant => 'globex');
for my $i (1 .. 2) {
    ($st) = ask($g1);
    is($st, 202, "globex agent-1: request $i");
}
($st, $h, $b, $j) = ask($g1);
is($st, 429, 'globex agent-1: past 8 / 4 = 2 open requests, refused');
is($j->{type}, 'urn:veto-sandbox:problem:agent_approvals_full', '... by the agent cap');
is($j->{limit}, 2, '... of 2');
($st) = ask($g2);
is($st, 202, 'globex agent-2 still asks');

# ---- identities: a case variant of the requester is the requester ----

my $aa = $n->token(sub => 'agent-a');
($st, $h, $b, $j) = ask($aa);
is($st, 202, 'agent-a asks') or diag $b;
my $id = $j->{approval_id};

my $variant = $n->token(sub => 'Agent-A', scope => 'approvals:review');
($st, $h, $b, $j) = $n->request(POST => "/v1/approvals/$id/approve", $variant,
                                { reason => 'me, myself' });
is($st, 403, 'reviewer Agent-A cannot approve agent-a\'s request');
is($j->{type}, 'urn:veto-sandbox:problem:self_approval', '... self_approval')
    or diag $b;
($st, $h, $b, $j) = $n->request(POST => "/v1/approvals/$id/deny", $variant,
                                { reason => 'me, myself' });
is($st, 403, '... nor deny it');
is($j->{type}, 'urn:veto-sandbox:problem:self_approval', '... self_approval');

my $exact = $n->token(sub => 'agent-a', scope => 'approvals:review');
($st, $h, $b, $j) = $n->request(POST => "/v1/approvals/$id/approve", $exact);
is($st, 403, 'the requester itself: 403 as before');

# ---- the approve's reason: stored, shown to the agent, audited ----

my $why = "checked the image digest \x{2713}";
($st, $h, $b, $j) = $n->request(POST => "/v1/approvals/$id/approve", $rev,
                                { reason => $why });
is($st, 200, 'human-1 approves with a reason') or diag $b;
is($j->{state}, 'approved', '... approved');

($st, $h, $b, $j) = $n->request(GET => "/v1/approvals/$id", $aa);
is($st, 200, 'the agent reads its approval') or diag $b;
is_deeply($j->{approve_reasons}, { 'human-1' => $why },
          '... with the reviewer\'s reason') or diag $b;

($st, $h, $b, $j) = $n->request(POST => "/v1/approvals/$id/approve", $rev,
                                { reason => 'x' x 1025 });
is($st, 400, 'a reason past 1024 bytes is refused');
for my $v (qw(approve deny)) {
    ($st, $h, $b, $j) = $n->request(POST => "/v1/approvals/$id/$v", $rev,
                                    { reason => 'ok', scope => 'all' });
    is($st, 400, "$v with a field the decision does not take: 400") or diag $b;
    is($j->{field}, 'scope', '... naming it') or diag $b;
}

my $auditor = $n->token(sub => 'auditor-1', scope => 'audit:read');
my $rec = eventually('the approval_approved record', 10, sub {
    my (undef, undef, undef, $aj) = $n->request(GET => '/v1/audit?limit=1000',
                                                $auditor);
    (grep { $_->{outcome} eq 'approval_approved'
            && ($_->{approval} // '') eq $id } @{ $aj->{records} })[0];
});
is($rec->{reason}, $why, 'the audit record has the reason');
is($rec->{reviewer}, 'human-1', '... and the reviewer');

done_testing;
