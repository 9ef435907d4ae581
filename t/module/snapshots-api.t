#!/usr/bin/perl
# Snapshots, forks, pause and resume, and change sets through the REST
# API and MCP (real nginx, Redis and helper): a snapshot of a sandbox
# (201, Location) is listed, read and forked; two forks of it diverge
# independently; a delete is confirmed (its files gone, then 404);
# the policy's count and byte quotas, ttl_s ceiling and retention refuse
# or expire by name; scopes (sandbox:create, sandbox:files for changes)
# and the export policy (a change set asks a human) hold; another tenant's and another agent's snapshots are 404 as an
# unknown one; pause stops a running loop (its output stops growing),
# execs and file reads while paused answer 409 paused, resume continues
# it; the changes of a known edit (json exactly, and the diff) are the
# helper's, marked untrusted; the MCP tools do the same; the audit has
# snapshot_created, a fork's sandbox_created with from_snapshot,
# snapshot_deleted, sandbox_paused and sandbox_resumed.

use strict;
use warnings;

use Test::More;
use JSON::PP;
use lib 't/lib';
use Eventually qw(eventually);
use VetoNginx;

VetoNginx::need(qw(helper redis));

my $policy = VetoNginx::default_policy();
my $acme = $policy->{tenants}{acme};
$acme->{ceilings}{snapshots} = 3;
$acme->{ceilings}{snapshot_ttl_s} = 3600;
$acme->{defaults}{snapshot_ttl_s} = 600;
# an agent whose snapshots may hold 10 bytes; one whose exports (and so
# change sets) a human approves
$acme->{agents}{'agent-tiny'} = { ceilings => { snapshot_bytes => 10 } };
$acme->{agents}{'agent-export'} = { approvals => { export => JSON::PP::true } };

my $n = VetoNginx->new;
$n->start_redis;
$n->start_helper(max_file_bytes => 128 * 1024,
                 snapshot_max_count => 8,
                 snapshot_max_bytes => 64 * 1024 * 1024,
                 snapshot_max_ttl_s => 86400,
                 snapshot_default_ttl_s => 600);
$n->start(redis => 1, policy => $policy, veto => $n->default_veto . <<"EOF");
        veto_sandbox_mcp on;
        veto_sandbox_mcp_sessions zone=veto_mcp:1m max=64 per_agent=8;
EOF

my $t = $n->token;
my $other_agent = $n->token(sub => 'agent-2');
my $other_tenant = $n->token(tenant => 'globex');
my $audit = $n->token(sub => 'human-1', scope => 'audit:read');
my ($st, $h, $b, $j);

sub req { return $n->request(@_) }

# a problem's name: the end of its type URN
sub code { return (($_[0] // {})->{type} // '') =~ s/^urn:veto-sandbox:problem://r }

sub exec_ok
{
    my ($sb, $script, $what) = @_;
    my ($st, undef, $b, $j) = req(POST => "/v1/sandboxes/$sb/exec", $t,
                                  { argv => ['sh', '-c', $script] });
    is($st, 200, $what) or diag $b;
    is($j->{exit_code}, 0, "$what: exit 0") or diag explain $j;
    return $j->{stdout} // '';
}

sub new_sandbox
{
    my ($body) = @_;
    my ($st, undef, $b, $j) = req(POST => '/v1/sandboxes', $t, $body // {});
    is($st, 201, 'a sandbox' . ($body && $body->{from_snapshot}
                                ? " forked from $body->{from_snapshot}" : ''))
        or diag $b;
    return $j->{id};
}

# ---- a snapshot of a sandbox with a known tree
my $sb = new_sandbox();
exec_ok($sb, 'mkdir -p /workspace/src && printf "one\ntwo\n" > '
        . '/workspace/src/a.txt && echo gone > /workspace/old.txt && '
        . 'echo x > /workspace/mode.sh && chmod 644 /workspace/mode.sh',
        'the tree');

($st, $h, $b, $j) = req(POST => "/v1/sandboxes/$sb/snapshots", $t,
                        { metadata => { note => 'deps installed' } });
is($st, 201, 'snapshot: 201') or diag $b;
my $snap = $j->{id} // '';
like($snap, qr/^snap-[0-9a-f]{24}$/, "snapshot id $snap");
is($h->{location}, "/v1/snapshots/$snap", 'Location');
is($j->{sandbox}, $sb, 'made of the sandbox');
like($j->{digest}, qr/^sha256:[0-9a-f]{64}$/, 'addressed by digest');
ok($j->{bytes} > 0 && $j->{files} >= 4, "size $j->{bytes} B, $j->{files} "
   . 'entries');
is($j->{ttl_s}, 600, "the policy's default ttl_s");

# an empty body is {}
($st, undef, $b, $j) = req(POST => "/v1/sandboxes/$sb/snapshots", $t);
is($st, 201, 'snapshot without a body: 201') or diag $b;
my $snap2 = $j->{id};

($st, undef, $b, $j) = req(GET => '/v1/snapshots', $t);
is($st, 200, 'list: 200') or diag $b;
is_deeply([sort map { $_->{id} } @{ $j->{snapshots} }],
          [sort $snap, $snap2], 'both listed');

($st, undef, $b, $j) = req(GET => "/v1/snapshots/$snap", $t);
is($st, 200, 'get: 200') or diag $b;
is($j->{metadata}{note}, 'deps installed', 'its metadata');

# ---- ownership: another agent, another tenant: 404 like an unknown one
for my $who ([$other_agent, 'another agent'], [$other_tenant,
                                                'another tenant'])
{
    ($st, undef, $b, $j) = req(GET => "/v1/snapshots/$snap", $who->[0]);
    is($st, 404, "$who->[1]: get 404") or diag $b;
    is(code($j), 'snapshot_not_found', "$who->[1]: snapshot_not_found");
    ($st, undef, $b, $j) = req(DELETE => "/v1/snapshots/$snap", $who->[0]);
    is($st, 404, "$who->[1]: delete 404") or diag $b;
    ($st, undef, $b, $j) = req(POST => '/v1/sandboxes', $who->[0],
                               { from_snapshot => $snap });
    is($st, 404, "$who->[1]: fork 404") or diag $b;
    ($st, undef, $b, $j) = req(GET => '/v1/snapshots', $who->[0]);
    is(scalar @{ $j->{snapshots} // [] }, 0, "$who->[1]: lists none");
}
($st, undef, $b, $j) = req(GET => '/v1/snapshots/snap-' . ('0' x 24), $t);
is($st, 404, 'an unknown snapshot: 404');
is(code($j), 'snapshot_not_found', 'snapshot_not_found');
($st) = req(GET => '/v1/snapshots/snap-XYZ', $t);
is($st, 404, 'an id that cannot exist: 404');
($st, undef, $b, $j) = req(POST => '/v1/sandboxes', $t,
                           { from_snapshot => 'snap-1' });
is($st, 400, 'a malformed from_snapshot: 400');
is($j->{field}, 'from_snapshot', 'named');

# ---- two forks diverge independently
my $f1 = new_sandbox({ from_snapshot => $snap });
my $f2 = new_sandbox({ from_snapshot => $snap });
is(exec_ok($f1, 'cat /workspace/src/a.txt', 'fork 1 reads'), "one\ntwo\n",
   'fork 1 sees the snapshot');
exec_ok($f1, 'echo f1 > /workspace/src/a.txt', 'fork 1 writes');
exec_ok($f2, 'echo f2 > /workspace/src/a.txt', 'fork 2 writes');
is(exec_ok($f1, 'cat /workspace/src/a.txt', 'fork 1 reads again'), "f1\n",
   'fork 1 sees its own write');
is(exec_ok($f2, 'cat /workspace/src/a.txt', 'fork 2 reads again'), "f2\n",
   "fork 2 its own, not fork 1's");
is(exec_ok($sb, 'cat /workspace/src/a.txt', 'the original reads'),
   "one\ntwo\n", 'the original is untouched');
($st, undef, $b, $j) = req(GET => "/v1/sandboxes/$f1", $t);
is($j->{from_snapshot}, $snap, 'GET names the snapshot it was forked from');

# a snapshot with live forks is not deleted
($st, undef, $b, $j) = req(DELETE => "/v1/snapshots/$snap", $t);
is($st, 409, 'delete with live forks: 409') or diag $b;
is(code($j), 'busy', 'busy');

# ---- the changes of a known edit, since the snapshot (fork 1)
exec_ok($f1, 'printf "one\nTWO\n" > /workspace/src/a.txt && rm '
        . '/workspace/old.txt && echo new > /workspace/new.txt && chmod 755 '
        . '/workspace/mode.sh', 'the edit');
($st, $h, $b, $j) = req(GET => "/v1/sandboxes/$f1/changes?since=$snap", $t);
is($st, 200, 'changes (json): 200') or diag $b;
is($h->{'veto-untrusted'}, 'true', 'marked untrusted');
my %ch = map { $_->{path} => $_->{change} } @{ $j->{changes} // [] };
# paths from the sandbox's root
is_deeply(\%ch, { 'workspace/src/a.txt' => 'modified',
                  'workspace/old.txt' => 'deleted',
                  'workspace/new.txt' => 'added',
                  'workspace/mode.sh' => 'mode_changed' },
          'exactly added, modified, deleted, mode changed')
    or diag explain $j;
is_deeply([@$j{qw(added modified deleted mode_changed)}], [1, 1, 1, 1],
          'the counts');
($st, $h, $b) = req(GET => "/v1/sandboxes/$f1/changes?since=$snap&format=diff",
                    $t);
is($st, 200, 'changes (diff): 200');
like($h->{'content-type'}, qr{^text/x-diff}, 'text/x-diff');
like($b, qr/^-two$/m, 'the diff has the old line');
like($b, qr/^\+TWO$/m, 'and the new one');
($st, undef, $b, $j) = req(GET => "/v1/sandboxes/$f1/changes?since=bogus", $t);
is($st, 400, 'since=bogus: 400');
is($j->{field}, 'since', 'named');
($st, undef, $b, $j) = req(GET => "/v1/sandboxes/$f1/changes?since=snap-"
                           . ('0' x 24), $t);
is($st, 404, 'since an unknown snapshot: 404');
($st, undef, $b, $j) = req(GET => "/v1/sandboxes/$sb/changes", $t);
is($st, 200, 'changes since created: 200') or diag $b;
ok(exists { map { $_->{path} => 1 } @{ $j->{changes} } }->{'workspace/src/a.txt'},
   'since created: the tree the first exec wrote');

# a change set larger than the helper sends (its max_file_bytes)
exec_ok($f1, 'seq 1 40000 > /workspace/big.txt', 'a 200 KB text file');
($st, undef, $b, $j) = req(GET => "/v1/sandboxes/$f1/changes?since=$snap"
                           . '&format=diff', $t);
is($st, 422, 'a diff over max_file_bytes: 422') or diag $b;
is_deeply([code($j), $j->{limit}], ['file_too_large', 'changes_bytes'],
          'file_too_large, limit changes_bytes');

# ---- pause stops a running loop; execs answer 409 paused; resume
($st, undef, $b, $j) = req(POST => "/v1/sandboxes/$f2/exec", $t,
    { argv => ['sh', '-c', 'while :; do echo tick; sleep 0.05; done'],
      background => JSON::PP::true, timeout_s => 30 });
is($st, 202, 'a running loop') or diag $b;
my $ex = $j->{id};
sub out_bytes
{
    my (undef, undef, undef, $j) = req(GET => "/v1/sandboxes/$f2/execs/$ex",
                                       $t);
    return $j->{stdout_bytes} // -1;
}
ok(scalar eventually('the loop prints', 10, sub { out_bytes() > 20 }), 'it prints');
($st, undef, $b, $j) = req(POST => "/v1/sandboxes/$f2/pause", $t);
is($st, 200, 'pause: 200') or diag $b;
is($j->{paused}, JSON::PP::true, 'paused');
# what is asserted is an absence: a window of 12 of the loop's periods
# (0.6 s) in which, running, it prints 12 lines
my $frozen = out_bytes();
select(undef, undef, undef, 0.6);
is(out_bytes(), $frozen, "paused: its output stops growing ($frozen B over "
   . '0.6 s, 12 of its periods)');
($st, undef, $b, $j) = req(POST => "/v1/sandboxes/$f2/exec", $t,
                           { argv => ['true'] });
is($st, 409, 'an exec while paused: 409') or diag $b;
is(code($j), 'paused', 'paused, by name');
($st, undef, $b, $j) = req(GET => "/v1/sandboxes/$f2/files?path=src/a.txt",
                           $t);
is($st, 409, 'a file read while paused: 409');
is(code($j), 'paused', 'paused');
($st, undef, $b, $j) = req(GET => "/v1/sandboxes/$f2", $t);
is($j->{paused}, JSON::PP::true, 'GET says paused');
($st, undef, $b, $j) = req(POST => "/v1/sandboxes/$f2/resume", $t);
is($st, 200, 'resume: 200') or diag $b;
is($j->{paused}, JSON::PP::false, 'not paused');
ok(scalar eventually('the loop prints on', 10, sub { out_bytes() > $frozen + 20 }),
   'resumed: it prints on');
is(exec_ok($f2, 'echo ok', 'an exec after resume'), "ok\n", 'it runs');

# ---- quota and retention
($st, undef, $b, $j) = req(POST => "/v1/sandboxes/$sb/snapshots", $t,
                           { ttl_s => 7200 });
is($st, 422, 'ttl_s over the policy ceiling: 422') or diag $b;
is($j->{limit}, 'snapshot_ttl_s', 'limit snapshot_ttl_s');
($st, undef, $b, $j) = req(POST => "/v1/sandboxes/$sb/snapshots", $t,
                           { ttl_s => 1 });
is($st, 201, 'a third snapshot, kept 1 s') or diag $b;
my $short = $j->{id};
($st, undef, $b, $j) = req(POST => "/v1/sandboxes/$sb/snapshots", $t);
is($st, 422, "a fourth: over the tenant's quota, 422") or diag $b;
is(code($j), 'over_ceiling', 'over_ceiling');
is($j->{limit}, 'snapshots', 'limit snapshots');
ok(scalar eventually('the 1 s snapshot expires', 10,
              sub { (req(GET => "/v1/snapshots/$short", $t))[0] == 404 }),
   'retention: gone after its ttl_s');

# the byte quota: the policy's, passed to the helper, which counts
($st, undef, $b, $j) = req(POST => '/v1/sandboxes', $n->token(sub => 'agent-tiny'),
                           {});
my $tiny = $j->{id};
($st, undef, $b, $j) = req(POST => "/v1/sandboxes/$tiny/snapshots",
                           $n->token(sub => 'agent-tiny'));
is($st, 422, 'over the byte quota: 422') or diag $b;
is($j->{limit}, 'snapshot_bytes', 'limit snapshot_bytes');
req(DELETE => "/v1/sandboxes/$tiny", $n->token(sub => 'agent-tiny'));

# ---- scopes and the export policy
($st, undef, $b, $j) = req(POST => "/v1/sandboxes/$sb/snapshots",
                           $n->token(scope => 'sandbox:exec sandbox:files'));
is($st, 403, 'a snapshot without sandbox:create: 403') or diag $b;
($st) = req(POST => "/v1/sandboxes/$sb/pause",
            $n->token(scope => 'sandbox:exec'));
is($st, 403, 'a pause without sandbox:create: 403');
($st) = req(GET => "/v1/sandboxes/$sb/changes",
            $n->token(scope => 'sandbox:create sandbox:exec'));
is($st, 403, 'changes without sandbox:files: 403');
($st) = req(GET => '/v1/snapshots', $n->token(scope => 'sandbox:exec'));
is($st, 200, 'a list with any sandbox scope: 200');
{
    my $te = $n->token(sub => 'agent-export');
    my (undef, undef, undef, $j) = req(POST => '/v1/sandboxes', $te, {});
    my $se = $j->{id};
    ($st, $h, $b, $j) = req(GET => "/v1/sandboxes/$se/changes", $te);
    is($st, 202, "changes under the policy's export approval: 202")
        or diag $b;
    like($j->{approval_id} // '', qr/^apr_/, 'an approval asked');
    req(DELETE => "/v1/sandboxes/$se", $te);
}

# ---- delete, confirmed: after its forks end
req(DELETE => "/v1/sandboxes/$_", $t) for ($f1, $f2);
($st, undef, $b, $j) = req(DELETE => "/v1/snapshots/$snap", $t);
is($st, 200, 'delete: 200') or diag $b;
is_deeply([$j->{deleted}, $j->{confirmed}{files}],
          [JSON::PP::true, JSON::PP::true], 'deleted, its files confirmed gone');
($st) = req(GET => "/v1/snapshots/$snap", $t);
is($st, 404, 'then 404');
($st, undef, $b, $j) = req(POST => '/v1/sandboxes', $t,
                           { from_snapshot => $snap });
is($st, 404, 'no fork of a deleted snapshot');

# ---- MCP: the same through tools
my %mh = (Accept => 'application/json, text/event-stream');
($st, $h) = req(POST => '/v1/mcp', $t,
                { jsonrpc => '2.0', id => 1, method => 'initialize',
                  params => { protocolVersion => '2025-06-18',
                              capabilities => {},
                              clientInfo => { name => 't5d', version => '1' } } },
                \%mh);
is($st, 200, 'MCP initialize');
my %ms = (%mh, 'Mcp-Session-Id' => $h->{'mcp-session-id'} // '',
          'MCP-Protocol-Version' => '2025-06-18');
req(POST => '/v1/mcp', $t, { jsonrpc => '2.0',
                             method => 'notifications/initialized' }, \%ms);
my $rpc_id = 10;
sub tool
{
    my ($name, $args) = @_;
    my (undef, undef, $b, $j) = req(POST => '/v1/mcp', $t,
        { jsonrpc => '2.0', id => $rpc_id++, method => 'tools/call',
          params => { name => $name, arguments => $args } }, \%ms);
    ok($j && $j->{result} && !$j->{result}{isError}, "MCP $name")
        or diag $b;
    return $j->{result} // {};
}
(undef, undef, $b, $j) = req(POST => '/v1/mcp', $t,
    { jsonrpc => '2.0', id => 2, method => 'tools/list' }, \%ms);
my %tools = map { $_->{name} => 1 } @{ $j->{result}{tools} // [] };
ok($tools{$_}, "tools/list has $_") for qw(snapshot_sandbox list_snapshots
    delete_snapshot pause_sandbox resume_sandbox sandbox_changes
    create_sandbox);
my $r = tool(snapshot_sandbox => { sandbox_id => $sb });
my $msnap = $r->{structuredContent}{id} // '';
like($msnap, qr/^snap-/, 'MCP: a snapshot');
$r = tool(list_snapshots => {});
ok((grep { $_->{id} eq $msnap } @{ $r->{structuredContent}{snapshots} }),
   'MCP: listed');
$r = tool(create_sandbox => { from_snapshot => $msnap });
my $mfork = $r->{structuredContent}{id} // '';
like($mfork, qr/^sb-/, 'MCP: a fork');
is($r->{structuredContent}{from_snapshot}, $msnap, 'MCP: of the snapshot');
req(DELETE => "/v1/sandboxes/$mfork", $t);
$r = tool(pause_sandbox => { sandbox_id => $sb });
is($r->{structuredContent}{paused}, JSON::PP::true, 'MCP: paused');
$r = tool(resume_sandbox => { sandbox_id => $sb });
is($r->{structuredContent}{paused}, JSON::PP::false, 'MCP: resumed');
exec_ok($sb, 'echo mcp > /workspace/mcp.txt', 'an edit');
$r = tool(sandbox_changes => { sandbox_id => $sb, since => $msnap });
is_deeply([map { "$_->{change} $_->{path}" }
           @{ $r->{structuredContent}{changes} // [] }], ['added workspace/mcp.txt'],
          'MCP: the changes since its snapshot');
$r = tool(sandbox_changes => { sandbox_id => $sb, since => $msnap,
                               format => 'diff' });
like($r->{content}[0]{text} // '', qr/\+mcp/, 'MCP: the diff');
$r = tool(delete_snapshot => { snapshot_id => $msnap });
is($r->{structuredContent}{deleted}, JSON::PP::true, 'MCP: deleted');

# ---- on record
my %seen;
ok(scalar eventually('the records', 10, sub {
    my (undef, undef, undef, $j) = req(GET => '/v1/audit?limit=500', $audit);
    %seen = ();
    for my $rec (@{ $j->{records} // [] }) {
        $seen{"$rec->{action} $rec->{outcome}"}++;
        my $d = ref $rec->{detail} ? encode_json($rec->{detail})
                                   : $rec->{detail} // '';
        $seen{fork}++ if $rec->{action} eq 'sandbox.create'
                         && $d =~ /"from_snapshot":"\Q$snap\E"/;
    }
    $seen{'snapshot.create snapshot_created'}
        && $seen{'snapshot.delete snapshot_deleted'}
        && $seen{'sandbox.pause sandbox_paused'}
        && $seen{'sandbox.resume sandbox_resumed'} && $seen{fork};
}), 'audit: snapshot_created, a fork, snapshot_deleted, sandbox_paused, '
    . 'sandbox_resumed') or diag explain \%seen;

req(DELETE => "/v1/sandboxes/$sb", $t);

done_testing;
