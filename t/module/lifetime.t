#!/usr/bin/perl
# Lifetimes and honest ends through nginx, Redis and the helper: idle_s
# and ttl_s within the policy's ceilings (202 up to its ask_ceilings),
# PATCH extending the lifetime (Redis' quota slot and ownership record
# follow it); every end reason in GET (state "ended", end_reason,
# ended_at, termination_ms), in the list with ?include=ended, as 410 for
# anything else, and exactly once on the audit stream as "sandbox.end"
# (the gateway polls the helper's ENDED records: deleted, expired, idle
# with no client connected, killed_by_limit (memory; a pids limit an exec
# hits is told to the exec, its audit entry, its stream and background
# status, and ends nothing), termination_failed then its
# confirmation, helper_restart after kill -9 with a running exec); the
# quota slot and ownership record freed; with Redis paused nothing is
# lost; after the helper's retention GET is 404; audit entries go by age.

use strict;
use warnings;

use Test::More;
use lib 't/lib';
use VetoNginx;
use VetoTest;
use Eventually qw(eventually);
use JSON::PP;
use POSIX ();
use Time::HiRes qw(time sleep);
use HTTP::Tiny;

VetoNginx::need(qw(helper redis));

my $policy = {
    version => 1,
    tenants => {
        acme => {
            ceilings => { memory_mb => 512, disk_mb => 256, timeout_s => 30,
                          ttl_s => 600, idle_s => 600 },
            ask_ceilings => { ttl_s => 1800 },
            defaults => { idle_s => 300 },
            quotas => { concurrent_sandboxes => 20 },
            agents => {
                'agent-short' => { ceilings => { idle_s => 60 },
                                 defaults => { idle_s => 30 } },
            },
        },
    },
};

my $n = VetoNginx->new;
$n->start_redis;
my $hh = $n->start_helper(ended_retention_s => 30, max_ttl_s => 3600,
                          default_ttl_s => 600);
my $mcp_conf = $n->default_veto
    . "        veto_sandbox_mcp on;\n"
    . "        veto_sandbox_mcp_sessions zone=veto_mcp:1m max=16 per_agent=4;\n";
$n->start(redis => 1, policy => $policy, veto => $mcp_conf,
          http_extra => 'veto_sandbox_ended_poll 500ms;');

my $agent = $n->token(sub => 'agent-1');
my $netonly = $n->token(sub => 'agent-1', scope => 'sandbox:network');
my $rev = $n->token(sub => 'human-1', scope => 'approvals:review audit:read');
my $r = $n->redis;

my ($st, $h, $b, $j);
eventually('the gateway serves (Redis connected)', 10, sub {
    ($st) = $n->request(GET => '/v1/sandboxes', $agent);
    $st == 200;
});
is($st, 200, 'the gateway answers');

sub create
{
    my (%body) = @_;
    my @r = $n->request(POST => '/v1/sandboxes', $agent, \%body);
    return @r;
}

sub ends_of
{
    my ($id) = @_;
    return grep { ($_->{sandbox} // '') eq $id && $_->{action} eq 'sandbox.end' }
        map { my %f = @{ $_->[1] }; \%f }
        @{ $r->xrange('veto:{acme}:audit', '-', '+') };
}

# the audit stream's byte counter is what its entries hold: the ends
# and the age's trimming keep it (veto_sandbox_audit_bytes bounds it)
sub counter_ok
{
    my ($what) = @_;
    my $sum = 0;
    for my $e (@{ $r->xrange('veto:{acme}:audit', '-', '+') }) {
        $sum += length($_) for @{ $e->[1] };
    }
    is($r->get('veto:{acme}:audit:bytes') // 0, $sum,
       "$what: the audit byte counter is what the stream holds ($sum)");
}

sub wait_end_record
{
    my ($id, $reason, $timeout) = @_;
    return scalar eventually("the end record of $id ($reason)", $timeout // 10,
                      sub { (grep { $_->{outcome} eq $reason } ends_of($id))[0] });
}

# GET counts as a request naming it: only for sandboxes that have ended
sub get_ended
{
    my ($id, $what) = @_;
    ($st, $h, $b, $j) = $n->request(GET => "/v1/sandboxes/$id", $agent);
    is($st, 200, "$what: GET answers") or diag $b;
    is($j->{state}, 'ended', "$what: state ended") or diag explain $j;
    ok($j->{ended_at} && $j->{ended_at} >= $j->{created_at},
       "$what: ended_at");
    ok(defined $j->{termination_ms}, "$what: termination_ms "
       . ($j->{termination_ms} // 'missing'));
    ok(!exists $j->{seq}, "$what: no helper cursor");
    return $j;
}

sub end_ok
{
    my ($id, $reason, $what) = @_;
    my $rec = wait_end_record($id, $reason);
    ok($rec, "$what: sandbox.end $reason on the audit stream") or return;
    is($rec->{agent}, 'agent-1', "$what: the sandbox's agent");
    my $d = eval { decode_json($rec->{detail}) } // {};
    is($d->{end_reason}, $reason, "$what: detail names the reason");
    ok($d->{ended_at}, "$what: detail says when");
    return $rec;
}

sub slot_freed
{
    my ($id, $what) = @_;
    eventually("$what: quota slot freed", 10,
               sub { !defined $r->zscore('veto:{acme}:sbx:live', $id) });
    ok(!defined $r->zscore('veto:{acme}:sbx:live:agent-1', $id),
       "$what: the agent's slot freed");
    is($r->exists("veto:{acme}:sbx:own:$id"), 0,
       "$what: ownership record gone");
}

# ---- the policy: idle_s and ttl_s, ceilings and askable ceilings
($st, $h, $b, $j) = create(idle_s => 601);
is($st, 422, 'idle_s over the ceiling: 422');
is($j->{limit}, 'idle_s', 'limit idle_s');
($st, $h, $b, $j) = create(ttl_s => 1801);
is($st, 422, 'ttl_s over the askable ceiling: 422');
is($j->{ceiling}, 1800, 'the ceiling named is the askable one');
($st, $h, $b, $j) = create();
is($st, 201, 'create') or diag $b;
is($j->{idle_s}, 300, "the policy's default idle_s");
my $short = $n->token(sub => 'agent-short');
($st, $h, $b, $j) = $n->request(POST => '/v1/sandboxes', $short,
                                { idle_s => 61 });
is($st, 422, "an agent's own idle_s ceiling");

# ---- PATCH: the lifetime within the ceiling
($st, $h, $b, $j) = create(ttl_s => 60, idle_s => 600);
is($st, 201, 'a sandbox of 60 s') or diag $b;
my $sx = $j->{id};
my $exp0 = $r->zscore('veto:{acme}:sbx:live', $sx);
($st, $h, $b, $j) = $n->request(PATCH => "/v1/sandboxes/$sx", $agent,
                                { ttl_s => 500 });
is($st, 200, 'PATCH ttl_s 500: 200') or diag $b;
is($j->{ttl_s}, 500, 'ttl_s');
is($j->{expires_at}, $j->{created_at} + 500, 'expires_at from creation');
# bookkeeping after the answer: it lands a moment later
my $exp1;
eventually('the quota slot follows the new expiry', 2, sub {
    $exp1 = $r->zscore('veto:{acme}:sbx:live', $sx);
    $exp1 == $j->{expires_at} * 1000;
});
is($exp1, $j->{expires_at} * 1000, "the quota slot's expiry follows");
ok($exp1 > $exp0, '... later than before');
my $pttl = $r->pttl("veto:{acme}:sbx:own:$sx");
ok($pttl > 400_000, "the ownership record lives as long ($pttl ms)");
($st, $h, $b, $j) = $n->request(PATCH => "/v1/sandboxes/$sx", $agent,
                                { ttl_s => 500 });
is($st, 200, 'the same PATCH again: the same lifetime, not more');
is($j->{expires_at}, $j->{created_at} + 500, '... not extended twice');
($st, $h, $b, $j) = $n->request(PATCH => "/v1/sandboxes/$sx", $agent,
                                { idle_s => 120 });
is($j->{idle_s}, 120, 'PATCH idle_s');
($st, $h, $b, $j) = $n->request(GET => "/v1/sandboxes/$sx", $agent);
is($j->{ttl_s}, 500, 'GET shows the new lifetime');

# refusals
($st, $h, $b, $j) = $n->request(PATCH => "/v1/sandboxes/$sx", $agent,
                                { ttl_s => 1801 });
is($st, 422, 'past the askable ceiling: 422');
($st, $h, $b, $j) = $n->request(PATCH => "/v1/sandboxes/$sx", $agent,
                                { extend_s => 60 });
is($st, 400, 'extend_s: 400');
like($j->{detail}, qr/counted from creation/, '... saying what ttl_s is');
($st, $h, $b, $j) = $n->request(PATCH => "/v1/sandboxes/$sx", $agent,
                                { ttl_s => 500,
                                  network => { add => ['a.example.test'] } });
is($st, 400, 'lifetime and network in one PATCH: 400');
($st, $h, $b, $j) = $n->request(PATCH => "/v1/sandboxes/$sx", $netonly,
                                { ttl_s => 500 });
is($st, 403, 'the lifetime with sandbox:network only: 403');
is($j->{scope}, 'sandbox:create', '... naming sandbox:create');
($st, $h, $b, $j) = $n->request(PATCH => "/v1/sandboxes/$sx", $agent,
                                { ttl_s => 0 });
is($st, 400, 'ttl_s 0: 400');
sleep 1.2;    # on purpose: a second goes by
($st, $h, $b, $j) = $n->request(PATCH => "/v1/sandboxes/$sx", $agent,
                                { ttl_s => 1 });
is($st, 400, 'a lifetime already over: 400 from the helper');
like($j->{detail}, qr/counts from creation/, '... saying why');

# ---- PATCH past the ceiling, within the askable one: a human decides
my $body = { ttl_s => 1200 };
($st, $h, $b, $j) = $n->request(PATCH => "/v1/sandboxes/$sx", $agent, $body);
is($st, 202, 'ttl_s 1200, past the ceiling 600: 202') or diag $b;
my $apr = $j->{approval_id};
is($j->{summary}{ttl_s}, 1200, 'the approval shows the lifetime asked');
($st) = $n->request(POST => "/v1/approvals/$apr/approve", $rev, '');
is($st, 200, 'a reviewer approves');
($st, $h, $b, $j) = $n->request(PATCH => "/v1/sandboxes/$sx", $agent, $body,
                                { 'Veto-Approval' => $apr });
is($st, 200, 'the same PATCH with the approval: 200') or diag $b;
is($j->{ttl_s}, 1200, 'lifetime 1200');
# the record is written after the answer: waited for, not assumed
my $upd;
eventually('the lifetime_updated audit record', 5, sub {
    ($upd) = grep { $_->{outcome} eq 'lifetime_updated' && $_->{approval} }
        map { my %f = @{ $_->[1] }; \%f }
        @{ $r->xrange('veto:{acme}:audit', '-', '+') };
    $upd;
});
ok($upd, 'the extension is on the audit stream with its approval');

# ---- delete: status, list, 410, one sandbox.end record
($st, $h, $b, $j) = $n->request(DELETE => "/v1/sandboxes/$sx", $agent);
is($st, 200, 'delete') or diag $b;
is($j->{ended}{end_reason}, 'deleted', 'the reply has its ENDED record');
$j = get_ended($sx, 'deleted');
is($j->{end_reason}, 'deleted', 'end_reason deleted');
is_deeply($j->{confirmed}, { map { $_ => JSON::PP::true }
                             qw(processes cgroups network mounts files) },
          'every step confirmed');
($st, $h, $b, $j) = $n->request(POST => "/v1/sandboxes/$sx/exec", $agent,
                                { argv => ['true'] });
is($st, 410, 'exec in it: 410');
is($j->{end_reason}, 'deleted', '... end_reason');
($st, $h, $b, $j) = $n->request(PATCH => "/v1/sandboxes/$sx", $agent,
                                { ttl_s => 550 });
is($st, 410, 'extending it: 410');
($st, $h, $b, $j) = $n->request(DELETE => "/v1/sandboxes/$sx", $agent);
is($st, 410, 'a second delete: 410');
is($j->{end_reason}, 'deleted', '... end_reason');
($st, $h, $b, $j) = $n->request(GET => "/v1/sandboxes/$sx/files?path=x", $agent);
is($st, 410, 'its files: 410');
($st, $h, $b, $j) = $n->request(GET => '/v1/sandboxes', $agent);
ok(!grep({ $_->{id} eq $sx } @{ $j->{sandboxes} }), 'not among the live');
ok(!exists $j->{ended}, 'no ended list unless asked');
($st, $h, $b, $j) = $n->request(GET => '/v1/sandboxes?include=ended', $agent);
is($st, 200, '?include=ended');
my ($le) = grep { $_->{id} eq $sx } @{ $j->{ended} };
is($le->{end_reason}, 'deleted', 'the list has it, ended');
($st, $h, $b, $j) = $n->request(GET => '/v1/sandboxes?include=all', $agent);
is($st, 400, 'another query: 400');
end_ok($sx, 'deleted', 'delete');
sleep 1.5;    # on purpose: time for a second record that must not come
is(scalar(grep { $_->{outcome} eq 'deleted' } ends_of($sx)), 1,
   'exactly one sandbox.end record for it');

# ---- MCP: extend_sandbox, and what an agent is told of an end
my $JS = JSON::PP->new->utf8->canonical;
sub mcp
{
    my ($body, $sid) = @_;
    my $res = HTTP::Tiny->new(timeout => 30)->request(POST => $n->url('/v1/mcp'),
        { headers => { 'Content-Type' => 'application/json',
                       Accept => 'application/json, text/event-stream',
                       Authorization => "Bearer $agent",
                       $sid ? ('Mcp-Session-Id' => $sid,
                               'MCP-Protocol-Version' => '2025-11-25') : () },
          content => $JS->encode($body) });
    return ($res, eval { $JS->decode($res->{content}) });
}
my ($res, $m) = mcp({ jsonrpc => '2.0', id => 1, method => 'initialize',
                      params => { protocolVersion => '2025-11-25',
                                  capabilities => {},
                                  clientInfo => { name => 't3o', version => '1' } } });
my $sid = $res->{headers}{'mcp-session-id'};
ok($sid, 'MCP: a session') or diag $res->{content};
mcp({ jsonrpc => '2.0', method => 'notifications/initialized' }, $sid);
my $mid = 10;
sub tool
{
    my ($name, $args) = @_;
    my (undef, $m) = mcp({ jsonrpc => '2.0', id => ++$mid, method => 'tools/call',
                           params => { name => $name, arguments => $args } }, $sid);
    return $m->{result} // {};
}
($st, $h, $b, $j) = create(ttl_s => 60);
my $smc = $j->{id};
my $t = tool('extend_sandbox', { sandbox_id => $smc, ttl_s => 400, idle_s => 200 });
ok(!$t->{isError}, 'MCP extend_sandbox within the ceiling') or diag explain $t;
is($t->{structuredContent}{ttl_s}, 400, 'MCP: ttl_s 400');
is($t->{structuredContent}{idle_s}, 200, 'MCP: idle_s 200');
like($t->{content}[0]{text}, qr/now ends at .*lifetime of 400 s from its creation/,
     'MCP: the text says when it ends');
$t = tool('extend_sandbox', { sandbox_id => $smc, ttl_s => 1000 });
is($t->{structuredContent}{status}, 'approval_required',
   'MCP: past the ceiling, approval required') or diag explain $t;
$t = tool('extend_sandbox', { sandbox_id => $smc, ttl_s => 5000 });
ok($t->{isError}, 'MCP: past the askable ceiling, an error');
like($t->{content}[0]{text}, qr/1800/, '... naming the ceiling');
$t = tool('extend_sandbox', { sandbox_id => $smc });
ok($t->{isError}, 'MCP: neither ttl_s nor idle_s, an error');
$t = tool('get_sandbox', { sandbox_id => $sx });
ok(!$t->{isError}, 'MCP get_sandbox of an ended one') or diag explain $t;
like($t->{content}[0]{text}, qr/has ended \(deleted\) at \d{4}-/,
     'MCP: it has ended, why and when');
is($t->{structuredContent}{end_reason}, 'deleted', 'MCP: end_reason');
$t = tool('exec', { sandbox_id => $sx, argv => ['true'] });
ok($t->{isError}, 'MCP exec in an ended sandbox: an error');
like($t->{content}[0]{text}, qr/ended \(deleted\)/, '... saying it ended and why');
($st) = $n->request(DELETE => "/v1/sandboxes/$smc", $agent);
is($st, 200, 'MCP sandbox deleted');

# ---- idle with no client connected
($st, $h, $b, $j) = create(idle_s => 2);
my $si = $j->{id};
my $t0 = time;
sleep 4;    # on purpose: no request past idle_s (a request keeps it alive)
$j = get_ended($si, 'idle');
is($j->{end_reason}, 'idle', 'end_reason idle');
ok($j->{ended_at} <= int($t0) + 4, 'ended within its idle time');
end_ok($si, 'idle', 'idle');
slot_freed($si, 'idle');

# ---- lifetime with no client connected
($st, $h, $b, $j) = create(ttl_s => 2);
my $se = $j->{id};
# end_ok waits for the end record (10 s): past the ttl_s of 2 s
end_ok($se, 'expired', 'expired (no request meanwhile)');
slot_freed($se, 'expired');
$j = get_ended($se, 'expired');
is($j->{end_reason}, 'expired', 'GET: expired');
ok($j->{ended_at} >= $j->{expires_at}, 'at its expiry');

# ---- a memory limit that kills the sandbox
($st, $h, $b, $j) = create(limits => { memory_mb => 64, disk_mb => 256 });
my $sm = $j->{id};
($st, $h, $b, $j) = $n->request(POST => "/v1/sandboxes/$sm/exec", $agent,
    { argv => ['sh', '-c', 'head -c 200M /dev/zero > /workspace/fill'] });
is($st, 200, 'the filling exec answers') or diag $b;
ok($j->{oom_killed}, 'OOM-killed');
my $rec = end_ok($sm, 'killed_by_limit', 'memory');
is($rec->{reason}, 'memory_mb', 'the record names the limit');
$j = get_ended($sm, 'memory');
is($j->{limit}, 'memory_mb', 'GET: limit memory_mb');
slot_freed($sm, 'killed_by_limit');

# ---- a pids limit an exec hits: told to the exec, the sandbox goes on
my $bomb = join("\n", 'import os, time', 'n = 0', 'for i in range(64):',
    '    try:', '        pid = os.fork()', '    except OSError:',
    '        break', '    if pid == 0:', '        time.sleep(1)',
    '        os._exit(0)', '    n += 1', 'print(n)', '');
($st, $h, $b, $j) = create(limits => { pids => 8 });
is($st, 201, 'a sandbox of 8 pids') or diag $b;
my $spd = $j->{id};
($st, $h, $b, $j) = $n->request(POST => "/v1/sandboxes/$spd/exec", $agent,
    { argv => ['python3', '-c', $bomb] });
is($st, 200, 'a bounded fork bomb answers') or diag $b;
is($j->{exit_code}, 0, '... exits 0 once a fork is refused');
is_deeply($j->{limits_hit}, ['pids'], 'limits_hit: ["pids"]') or diag explain $j;
{
    # the entry is written after the answer: waited for
    my $ent;
    eventually('the exec_finished audit record', 5, sub {
        ($ent) = grep { ($_->{sandbox} // '') eq $spd
                        && ($_->{outcome} // '') eq 'exec_finished' }
            map { my %f = @{ $_->[1] }; \%f }
            @{ $r->xrange('veto:{acme}:audit', '-', '+') };
        $ent;
    });
    my $d = $ent && eval { decode_json($ent->{detail}) };
    is_deeply($d && $d->{limits_hit}, ['pids'],
              'the exec_finished audit entry carries limits_hit ["pids"]')
        or diag explain $ent;
}
($st, $h, $b, $j) = $n->request(POST => "/v1/sandboxes/$spd/exec", $agent,
    { argv => ['sh', '-c', 'sleep 0.1 & sleep 0.1 & wait; echo alive'] });
is($st, 200, 'the next exec runs') or diag $b;
is($j->{stdout}, "alive\n", '... forks and all');
is_deeply($j->{limits_hit}, [], '... hitting no limit');
($st, $h, $b, $j) = $n->request(GET => "/v1/sandboxes/$spd", $agent);
is($j->{state}, 'ready', 'the sandbox is still ready') or diag $b;
# streamed: the result line says it
($st, $h, $b) = $n->request(POST => "/v1/sandboxes/$spd/exec", $agent,
    { argv => ['python3', '-c', $bomb] }, { Accept => 'application/x-ndjson' });
is($st, 200, 'a streamed fork bomb') or diag $b;
{
    my ($last) = reverse grep { length } split /\n/, $b // '';
    my $l = eval { decode_json($last) };
    is_deeply($l && $l->{result} && $l->{result}{limits_hit}, ['pids'],
              'the stream\'s result line: limits_hit ["pids"]') or diag $b;
}
# background: its status says it
($st, $h, $b, $j) = $n->request(POST => "/v1/sandboxes/$spd/exec", $agent,
    { argv => ['python3', '-c', $bomb], background => JSON::PP::true });
is($st, 202, 'a background fork bomb') or diag $b;
{
    my $ex = $j->{id} // ($j->{exec} && $j->{exec}{id});
    eventually('the exec ends', 10, sub {
        ($st, $h, $b, $j) = $n->request(GET =>
            "/v1/sandboxes/$spd/execs/$ex", $agent);
        ($j->{state} // 'running') ne 'running';
    });
    is($j->{state}, 'exited', 'it exited') or diag $b;
    is_deeply($j->{result} && $j->{result}{limits_hit}, ['pids'],
              'GET …/execs/{exec}: result.limits_hit ["pids"]') or diag $b;
}
# a background exec holding the whole limit: the next exec is 429,
# naming the limit, not a 500
my $holder = join("\n", 'import os, time', 'for i in range(64):',
    '    try:', '        if os.fork() == 0:', '            time.sleep(60)',
    '            os._exit(0)', '    except OSError:', '        break',
    'print("full", flush=True)', 'time.sleep(60)', '');
($st, $h, $b, $j) = $n->request(POST => "/v1/sandboxes/$spd/exec", $agent,
    { argv => ['python3', '-c', $holder], background => JSON::PP::true });
is($st, 202, 'a background exec that holds every pid') or diag $b;
my $hx = $j->{id};
eventually('the output says full', 10, sub {
    ($st, $h, $b) = $n->request(GET =>
        "/v1/sandboxes/$spd/execs/$hx/output?stream=stdout", $agent);
    ($b // '') =~ /full/;
});
($st, $h, $b, $j) = $n->request(POST => "/v1/sandboxes/$spd/exec", $agent,
    { argv => ['true'] });
is($st, 429, 'the next exec: 429') or diag $b;
is($j->{limit}, 'pids', '... limit pids') or diag $b;
like($j->{detail} // '', qr/whole pids limit/, '... saying why');
ok($h->{'retry-after'}, '... with Retry-After');
($st) = $n->request(DELETE => "/v1/sandboxes/$spd/execs/$hx", $agent);
is($st, 200, 'the holder killed');
($st, $h, $b, $j) = $n->request(POST => "/v1/sandboxes/$spd/exec", $agent,
    { argv => ['true'] });
is($st, 200, 'then execs run again') or diag $b;

# MCP: the exec's text says it in words, its structured content as data
$t = tool('exec', { sandbox_id => $spd, argv => ['python3', '-c', $bomb] });
ok(!$t->{isError}, 'MCP exec of the fork bomb') or diag explain $t;
like($t->{content}[0]{text}, qr/Process limit reached: .*EAGAIN/,
     'MCP: the text says the process limit refused forks');
is_deeply($t->{structuredContent}{limits_hit}, ['pids'],
          'MCP: structuredContent.limits_hit ["pids"]') or diag explain $t;
($st) = $n->request(DELETE => "/v1/sandboxes/$spd", $agent);
is($st, 200, 'deleted');

# ---- termination failure, then its confirmation
($st, $h, $b, $j) = create();
my $sf = $j->{id};
($st) = $n->request(PUT => "/v1/sandboxes/$sf/files?path=held.txt", $agent,
                    "held\n");
is($st, 200, 'a file to hold');
my $held = $hh->state_dir . "/sb/$sf/root/workspace/held.txt";
open(my $hold, '<', $held) or die "open $held: $!";
($st, $h, $b, $j) = $n->request(DELETE => "/v1/sandboxes/$sf", $agent);
is($st, 500, 'delete while held: 500');
is($j->{step}, 'mounts', 'step mounts');
$j = get_ended($sf, 'termination_failed');
is($j->{end_reason}, 'termination_failed', 'GET: termination_failed');
is($j->{step}, 'mounts', 'GET: step');
is($j->{cause}, 'deleted', 'GET: cause');
$rec = end_ok($sf, 'termination_failed', 'termination failure');
is($rec->{reason}, 'mounts', 'the record names the step');
ok(defined $r->zscore('veto:{acme}:sbx:live', $sf),
   'its slot stays while its termination is unconfirmed');
close $hold;
($st, $h, $b, $j) = $n->request(DELETE => "/v1/sandboxes/$sf", $agent);
is($st, 200, 'the retry: 200') or diag $b;
end_ok($sf, 'deleted', 'the confirmation');
slot_freed($sf, 'confirmed');

# ---- Redis paused: an end is handled once it is back
($st, $h, $b, $j) = create(ttl_s => 2);
my $sp = $j->{id};
$n->pause_redis;
sleep 4;    # on purpose: the sandbox expires while Redis is out
$n->resume_redis;
end_ok($sp, 'expired', 'an end while Redis was out');

# ---- the helper killed -9 with a running exec, then restarted
($st, $h, $b, $j) = create();
my $sk = $j->{id};
my $pid = fork() // die "fork: $!";
if ($pid == 0) {
    $n->request(POST => "/v1/sandboxes/$sk/exec", $agent,
                { argv => ['sleep', '1000'], timeout_s => 30 });
    POSIX::_exit(0);
}
eventually('an exec runs', 5, sub { $hh->count_procs >= 1 });
$hh->kill9;
waitpid($pid, 0);
$hh->launch;
$rec = end_ok($sk, 'helper_restart', 'helper kill -9 and restart');
$j = get_ended($sk, 'helper_restart');
is($j->{end_reason}, 'helper_restart', 'GET: helper_restart');
slot_freed($sk, 'helper_restart');
eventually('no process of it left', 5, sub { !$hh->count_procs });

# ---- after the helper's retention: 404, and the markers are bounded
my $ttl = $r->ttl("veto:{acme}:sbx:end:$si:idle");
ok($ttl > 0 && $ttl <= 30 + 3600 + 5,
   "the end's marker goes after the record's retention ($ttl s)");
sleep 1 while time < $t0 + 32;    # on purpose: past ended_retention_s
($st) = $n->request(GET => "/v1/sandboxes/$si", $agent);
is($st, 404, 'after ended_retention_s: 404');
ok(!-e $hh->state_dir . "/ended/$si.json", "the helper's record is gone");

unlike($n->error_log, qr/\[(alert|emerg)\]/, 'no alert in the error log');
counter_ok('after the ends');

# ---- audit entries go by age (veto_sandbox_audit_max_age 8s): every
# entry so far is older than that when nginx starts again; the one made
# then is younger than 8 s until the old ones are gone (trims come every
# 4 s, the first about 4 s after the start)
$n->stop;
my @old = @{ $r->xrange('veto:{acme}:audit', '-', '+') };
ok(@old > 0, 'entries on the stream');
my $oldest = $old[-1][0];
my ($newest_ms) = $oldest =~ /^(\d+)-/;
# on purpose: the entries grow older than veto_sandbox_audit_max_age
sleep 0.2 while time * 1000 < $newest_ms + 8500;
$n->start(redis => 1, policy => $policy,
          http_extra => "veto_sandbox_ended_poll 500ms;\n"
                        . "    veto_sandbox_audit_max_age 8s;");
($st, $h, $b, $j) = create();
is($st, 201, 'a fresh entry') or diag $b;
eventually('entries older than veto_sandbox_audit_max_age are trimmed', 15,
           sub { !@{ $r->xrange('veto:{acme}:audit', '-', $oldest) } });
ok(scalar @{ $r->xrange('veto:{acme}:audit', "($oldest", '+') } >= 1,
   'the fresh one stays');
counter_ok('after trimming by age');

$n->stop;
unlike($n->error_log, qr/\[(alert|emerg)\]/, 'no alert in the error log');
done_testing;
