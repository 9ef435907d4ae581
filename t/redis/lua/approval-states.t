#!/usr/bin/perl
# Approval state machine, straight on the Lua scripts the module ships
# (ngx_veto_sandbox_module/lua/approval_*.lua after lua/prelude.lua),
# against a private redis-server.

use strict;
use warnings;

use FindBin;
use lib "$FindBin::Bin/../../lib";
use Test::More;
use Time::HiRes qw(sleep);
use VetoRedisTest qw(redis_conn scripts run_script);

my $r = redis_conn();
my $T = 'acme';
my $HASH = 'a' x 64;
my $n = 0;

sub keys_of {
    my ($id, $t) = @_;
    $t //= $T;
    return ("veto:{$t}:appr:$id", "veto:{$t}:appr:$id:rv", "veto:{$t}:appr:idx");
}

sub create {
    my (%o) = @_;
    my $id = sprintf 'apr_%032x', ++$n;
    my $res = run_script($r, 'approval_create', [keys_of($id)],
        [$id, $T, $o{agent} // 'agent-1', $o{action} // 'sandbox.exec',
         $o{hash} // $HASH, '{"argv":["make","test"]}', $o{ttl} // 60000,
         $o{threshold} // 1, 3600000]);
    is($res->[0], 'ok', "create $id");
    is($res->[1], 'pending', 'new approval is pending');
    return $id;
}

sub approve {
    my ($id, $who, $tenant) = @_;
    my @k = keys_of($id);
    return run_script($r, 'approval_approve', [@k[0, 1]], [$tenant // $T, $who]);
}

sub deny {
    my ($id, $who, $reason) = @_;
    my @k = keys_of($id);
    return run_script($r, 'approval_deny', [@k[0, 1]], [$T, $who, $reason]);
}

sub consume {
    my ($id, %o) = @_;
    my @k = keys_of($id);
    return run_script($r, 'approval_consume', [$k[0]],
        [$o{tenant} // $T, $o{agent} // 'agent-1', $o{action} // 'sandbox.exec',
         $o{hash} // $HASH]);
}

sub state_of {
    my ($id) = @_;
    return $r->hget((keys_of($id))[0], 'state');
}

ok(scripts()->{$_}, "script $_ found in lua/")
    for qw(approval_create approval_approve approval_deny approval_consume
           approval_expire approval_get approval_list);

# --- pending -> approved -> consumed, once
{
    my $id = create();
    my $ttl = $r->pttl((keys_of($id))[0]);
    ok($ttl > 3600000 && $ttl <= 3660000, 'record kept ttl + retention');

    is(consume($id)->[0], 'not_approved', 'pending approval cannot be used');
    is_deeply(approve($id, 'agent-1'), ['self_approval', 'pending'],
              'the requester cannot approve its own request');
    is(approve($id, '')->[0], 'self_approval', 'empty reviewer refused');
    is(approve($id, 'rev-1', 'other')->[0], 'not_found',
       'a reviewer of another tenant sees not_found');
    is(state_of($id), 'pending', 'still pending after refused approvals');

    my $res = approve($id, 'rev-1');
    is($res->[0], 'ok', 'reviewer approves');
    is($res->[1], 'approved', 'threshold 1: approved at once');
    is(approve($id, 'rev-2')->[0], 'not_pending', 'no approving twice');
    is(deny($id, 'rev-2', 'late')->[0], 'not_pending', 'no deny after approve');

    is_deeply(consume($id, hash => 'b' x 64), ['mismatch', 'approved', '0', 'hash'],
              'another request (hash) is refused');
    is(consume($id, agent => 'agent-2')->[3], 'agent', 'another agent is refused');
    is(consume($id, action => 'sandbox.create')->[3], 'action',
       'another action is refused');
    is(consume($id, tenant => 'other')->[0], 'not_found',
       'another tenant sees not_found');
    is(state_of($id), 'approved', 'refused uses do not burn the approval');

    is_deeply(consume($id), ['ok', 'consumed'], 'the exact request consumes it');
    is_deeply(consume($id), ['not_approved', 'consumed'], 'used once only');
    ok($r->hget((keys_of($id))[0], 'consumed_ms'), 'consumed_ms recorded');
}

# --- deny needs a reason; denied cannot be used
{
    my $id = create();
    is(deny($id, 'rev-1', '')->[0], 'reason_required', 'deny without reason refused');
    is(deny($id, 'rev-1', "  \t")->[0], 'reason_required', 'blank reason refused');
    is(deny($id, 'agent-1', 'no')->[0], 'self_approval',
       'the requester cannot decide its own request');
    is_deeply(deny($id, 'rev-1', 'touches prod'), ['ok', 'denied'], 'denied');
    my %h = @{ $r->hgetall((keys_of($id))[0]) };
    is($h{deny_reason}, 'touches prod', 'reason stored');
    is($h{denied_by}, 'rev-1', 'reviewer stored');
    is(approve($id, 'rev-2')->[0], 'not_pending', 'denied cannot be approved');
    is_deeply(consume($id), ['not_approved', 'denied', '0', 'touches prod'],
              'denied cannot be used; the reviewer\'s reason comes along');
}

# --- threshold 2: distinct reviewers
{
    my $id = create(threshold => 2);
    is_deeply(approve($id, 'rev-1'), ['ok', 'pending', '0', '1'], 'first of two');
    is(consume($id)->[0], 'not_approved', 'one of two is not enough');
    is_deeply(approve($id, 'rev-1'), ['already_approved', 'pending', '0', '1'],
              'the same reviewer does not count twice');
    is(approve($id, 'agent-1')->[0], 'self_approval', 'requester still refused');
    is_deeply(approve($id, 'rev-2'), ['ok', 'approved', '0', '2'],
              'second distinct reviewer approves');
    is_deeply([sort @{ $r->smembers((keys_of($id))[1]) }], ['rev-1', 'rev-2'],
              'reviewers recorded');
    is(consume($id)->[0], 'ok', 'then it can be used');
}

# --- expiry, lazily, on Redis' clock
{
    my $id = create(ttl => 300);
    my $id2 = create(ttl => 300);
    my $id3 = create(ttl => 300);
    my $id4 = create(ttl => 300);
    is(approve($id3, 'rev-1')->[1], 'approved', 'approved before expiry');
    sleep 0.45;    # on purpose: past the approval's ttl
    is_deeply(approve($id, 'rev-1'), ['expired', 'expired', '1'],
              'approve after expiry: expired, transition reported');
    is_deeply(approve($id, 'rev-2'), ['not_pending', 'expired'],
              'reported once only');
    is_deeply(deny($id2, 'rev-1', 'x'), ['expired', 'expired', '1'],
              'deny after expiry: expired');
    is_deeply(consume($id3), ['expired', 'expired', '1'],
              'an approved but unused approval expires too');
    my @k = keys_of($id4);
    is_deeply(run_script($r, 'approval_expire', [$k[0]], [$T, '0']),
              ['expired', 'expired', '1'], 'expire script marks it');
    is_deeply(run_script($r, 'approval_expire', [$k[0]], [$T, '0']),
              ['not_pending', 'expired'], 'once');
}

# --- forced expiry (operator), get and list
{
    my $id = create();
    my @k = keys_of($id);
    is_deeply(run_script($r, 'approval_expire', [$k[0]], [$T, '0']),
              ['not_pending', 'pending'], 'not yet due: untouched');
    is_deeply(run_script($r, 'approval_expire', [$k[0]], ['other', '1']),
              ['not_found', ''], 'other tenant cannot expire it');
    is_deeply(run_script($r, 'approval_expire', [$k[0]], [$T, '1']),
              ['expired', 'expired', '1'], 'forced');

    my $p = create(agent => 'agent-9');
    my @pk = keys_of($p);
    my $g = run_script($r, 'approval_get', [@pk[0, 1]], [$T]);
    is($g->[0], 'ok', 'get');
    is($g->[1], 'pending', 'get: state');
    my %h = @{ $g->[3] };
    is($h{agent}, 'agent-9', 'get: record fields');
    is($h{summary}, '{"argv":["make","test"]}', 'get: summary');
    is_deeply(run_script($r, 'approval_get', [@pk[0, 1]], ['other']),
              ['not_found', ''], 'get from another tenant: not_found');
    is_deeply(run_script($r, 'approval_get',
                         ["veto:{$T}:appr:apr_nope", "veto:{$T}:appr:apr_nope:rv"],
                         [$T]),
              ['not_found', ''], 'get of a missing id: not_found');

    my $l = run_script($r, 'approval_list', [$k[2]],
                       [$T, "veto:{$T}:appr:", 'pending', 100]);
    is($l->[0], 'ok', 'list');
    my @ids = map { my %e = @$_; $e{id} } @{ $l->[3] };
    is_deeply(\@ids, [$p], 'list ?state=pending: only the pending one');
    my $all = run_script($r, 'approval_list', [$k[2]],
                         [$T, "veto:{$T}:appr:", '', 3]);
    is(scalar @{ $all->[3] }, 3, 'list limit');
    my %first = @{ $all->[3][0] };
    is($first{id}, $p, 'newest first');

    # a record gone from Redis (retention) leaves the index
    $r->del("veto:{$T}:appr:$p");
    run_script($r, 'approval_list', [$k[2]], [$T, "veto:{$T}:appr:", '', 100]);
    ok(!defined $r->zscore($k[2], $p), 'dangling index entry removed');
}

# --- create refuses duplicates and bad arguments
{
    my $id = create();
    my $res = run_script($r, 'approval_create', [keys_of($id)],
        [$id, $T, 'agent-x', 'sandbox.exec', $HASH, '{}', 1000, 1, 1000]);
    is($res->[0], 'exists', 'an existing id is never overwritten');
    is($r->hget((keys_of($id))[0], 'agent'), 'agent-1', 'record untouched');
    my $err = eval {
        run_script($r, 'approval_create', [keys_of('apr_x')],
                   ['apr_x', $T, 'a', 'b', $HASH, '{}', 0, 1, 0]);
        1;
    } ? '' : $@;
    like($err, qr/bad ttl/, 'ttl 0 is an error');
}

# --- the list in pages: a cursor, each record once, newest first; the
# byte budget ends a page early
{
    my $P = 'pages';
    my $idx = "veto:{$P}:appr:idx";
    my @made;
    for my $i (1 .. 25) {
        my $id = sprintf 'apr_%032x', 1000 + $i;
        my $res = run_script($r, 'approval_create',
            ["veto:{$P}:appr:$id", "veto:{$P}:appr:$id:rv", $idx],
            [$id, $P, 'agent-1', 'sandbox.exec', $HASH,
             '{"argv":["' . ('x' x 2000) . '"]}', 60000, 1, 3600000]);
        is($res->[0], 'ok', "made $id") if $i == 1;
        push @made, $id;
    }

    # several in one millisecond share a score: the cursor tells them apart
    $r->zadd($idx, 5, $_) for @made[0 .. 9];

    my (@seen, $cursor, $pages);
    $cursor = '';
    for (1 .. 30) {
        my $l = run_script($r, 'approval_list', [$idx],
                           [$P, "veto:{$P}:appr:", '', 4, $cursor]);
        $pages++;
        push @seen, map { my %e = @$_; $e{id} } @{ $l->[3] };
        $cursor = $l->[5];
        last if $cursor eq '';
        like($cursor, qr/^\d+:apr_[0-9a-f]{32}$/, 'a cursor') if $pages == 1;
    }
    is(scalar @seen, 25, 'pages of 4 list all 25');
    my %u = map { $_ => 1 } @seen;
    is(scalar keys %u, 25, 'each once');
    is($seen[0], $made[-1], 'newest first');
    ok($pages >= 7, "in pages ($pages)");

    my $b = run_script($r, 'approval_list', [$idx],
                       [$P, "veto:{$P}:appr:", '', 100, '', 5000]);
    is(scalar @{ $b->[3] }, 3, 'a page ends once its summaries reach the byte budget');
    isnt($b->[5], '', 'with the cursor of the rest');

    my $err = eval {
        run_script($r, 'approval_list', [$idx], [$P, "veto:{$P}:appr:", '', 4, 'x:y']);
        1;
    } ? '' : $@;
    like($err, qr/bad cursor/, 'a bad cursor is an error');
}

# --- a tenant keeps at most max records: decided ones go first, and when
# all are still open a new request is refused ("full")
{
    my $C = 'cap';
    my $idx = "veto:{$C}:appr:idx";
    my $mk = sub {
        my ($i) = @_;
        my $id = sprintf 'apr_%032x', 5000 + $i;
        return ($id, run_script($r, 'approval_create',
            ["veto:{$C}:appr:$id", "veto:{$C}:appr:$id:rv", $idx],
            [$id, $C, 'agent-1', 'sandbox.exec', $HASH, '{}', 60000, 1,
             3600000, 3]));
    };
    my ($a) = $mk->(1);
    my ($b) = $mk->(2);
    my ($c) = $mk->(3);
    my ($d, $res) = $mk->(4);
    is_deeply($res, ['full', ''], 'three open records: the fourth is refused');
    ok(!$r->exists("veto:{$C}:appr:$d"), 'and not stored');
    run_script($r, 'approval_deny', ["veto:{$C}:appr:$a", "veto:{$C}:appr:$a:rv"],
               [$C, 'human', 'no']);
    ($d, $res) = $mk->(4);
    is($res->[0], 'ok', 'a decided one makes room');
    ok(!$r->exists("veto:{$C}:appr:$a"), 'the decided record went');
    ok(!defined $r->zscore($idx, $a), 'and left the index');
    is($r->zcard($idx), 3, 'still three');
}

# --- NOSCRIPT fallback: after SCRIPT FLUSH, run_script still works
{
    $r->script_flush;
    my $id = create();
    ok($id, 'EVAL fallback after SCRIPT FLUSH');
}

done_testing();
