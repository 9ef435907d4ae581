#!/usr/bin/perl
# The API's description (docs/openapi.json, OpenAPI 3.1) against the API
# itself.  This file drives the real stack (nginx with the module, Redis,
# the helper) through every route of the op table and /v1/mcp, success
# and problem+json errors, and records each response (method, the row's
# path template, status, content type, body) to a JSON lines file; then
# t/openapi/validate.mjs (Ajv with ajv-formats, pinned by t/openapi's
# lock file) checks the document against the OpenAPI 3.1 schema, each
# recorded response against the document's schema for its path, method,
# status and media type, that every row of the op table
# (ngx_veto_sandbox_module/ngx_http_veto_sandbox_ops.c) is described and
# was driven here, and that the document describes nothing else.  Each
# of its findings is a test here.  Also: GET /v1/openapi.json serves
# docs/openapi.json byte for byte, without a token and with any.

use strict;
use warnings;

use Test::More;
use JSON::PP ();
use lib 't/lib';
use VetoNginx;
use VetoEgress;
use Eventually qw(eventually);

VetoNginx::need(qw(helper redis));

my $ROOT = $VetoNginx::ROOT;
my $DIR = "$ROOT/t/openapi";

# A test that cannot run fails: no node, no Ajv.
die "node is not installed: run scripts/install-deps.sh\n"
    unless system('node --version >/dev/null 2>&1') == 0;
unless (-f "$DIR/node_modules/ajv/package.json"
        && -f "$DIR/node_modules/ajv-formats/package.json")
{
    system("cd '$DIR' && npm ci --no-audit --no-fund >&2") == 0
        or die "npm ci in t/openapi failed\n";
}

my $JSON = JSON::PP->new->utf8(1)->canonical(1);

my $policy = {
    version => 1,
    tenants => {
        acme => {
            profiles => ['default'],
            ceilings => { memory_mb => 512, pids => 256, timeout_s => 30,
                          ttl_s => 3600, file_bytes => 64 * 1024 },
            defaults => { memory_mb => 128, ttl_s => 600 },
            approvals => { exec_argv => ['sh -c echo needs-a-human*'] },
            network => { allow => ['registry.example.test',
                                   'a.example.test'] },
        },
    },
};

# egress on (the test's own network namespaces): PATCH, a sandbox with an
# allowlist and an exec's network attempts are real
my $e = VetoEgress->start(helper => 1);
my $n = VetoNginx->new;
$n->start_redis;
$n->start_helper($e->helper_conf);
my $veto = $n->default_veto . <<"EOF";
        veto_sandbox_mcp on;
        veto_sandbox_mcp_sessions zone=veto_mcp:1m max=64 per_agent=8;
EOF
$n->start(redis => 1, veto => $veto, policy => $policy);

eventually('Redis is up and egress available', 10, sub {
    my (undef, undef, undef, $j) = $n->request(GET => '/v1/health');
    ($j->{redis} // '') eq 'up' && $j->{egress}{available};
});

my %tok = (
    agent  => $n->token(sub => 'agent-1', scope => 'sandbox:create '
                        . 'sandbox:exec sandbox:files sandbox:network'),
    rev    => $n->token(sub => 'reviewer-1', scope => 'approvals:review'),
    audit  => $n->token(sub => 'auditor-1', scope => 'audit:read'),
    none   => $n->token(sub => 'agent-1', scope => 'nothing:here'),
    admin  => $n->token(sub => 'admin-1', scope => 'admin:revoke'),
    forged => $n->token(sub => 'agent-1', key => 'not-the-key',
                        alg => 'HS256'),
);

my $rec_file = $n->dir . '/responses.jsonl';
open(my $rec, '>', $rec_file) or die "$rec_file: $!";

# call(template, method, path, token, body, headers): the request, its
# response recorded under the row's path template
sub call
{
    my ($tpl, $m, $path, $t, $body, $hdr) = @_;
    my ($st, $h, $b, $j) = $n->request($m => $path, $t, $body, $hdr);
    print $rec $JSON->encode({
        method => $m, path => $tpl, status => $st + 0,
        request => ref $body ? $JSON->encode($body) : undef,
        content_type => $h->{'content-type'} // '',
        body => $b // '',
    }), "\n";
    return ($st, $h, $b, $j);
}

my $sb_tpl = '/v1/sandboxes/{id}';
my $unknown_sb = 'sb-' . ('0' x 24);
my $unknown_apr = 'apr_' . ('0' x 32);

# ---- public
call('/v1/health', GET => '/v1/health');
call('/v1/health', HEAD => '/v1/health');
my ($st, $h, $b, $j) = call('/v1/openapi.json', GET => '/v1/openapi.json');
is($st, 200, 'GET /v1/openapi.json without a token: 200');
like($h->{'content-type'}, qr{^application/json}, 'as application/json');
ok($b eq VetoNginx::slurp("$ROOT/docs/openapi.json"),
   'the body is docs/openapi.json byte for byte (compiled in)');
($st, undef, $b) = call('/v1/openapi.json', GET => '/v1/openapi.json',
                        $tok{forged});
is($st, 200, 'with a forged token too: the token is not read');
($st) = call('/v1/openapi.json', POST => '/v1/openapi.json', $tok{agent});
is($st, 405, 'POST /v1/openapi.json: 405');
($st) = call('/v1/openapi.json', POST => '/v1/openapi.json');
is($st, 401, 'POST /v1/openapi.json without a token: 401, as any unrouted method');

# ---- discovery
call('/v1/about', GET => '/v1/about', $tok{agent});
call('/v1/about', GET => '/v1/about');
call('/v1/about', GET => '/v1/about', $tok{forged});
call('/v1/profiles', GET => '/v1/profiles', $tok{agent});
call('/v1/profiles', GET => '/v1/profiles', $tok{rev});

# ---- sandboxes
call('/v1/sandboxes', POST => '/v1/sandboxes', $tok{agent},
     { limits => { memory_mb => 4096 } });
call('/v1/sandboxes', POST => '/v1/sandboxes', $tok{agent}, '{not json',
     { 'Content-Type' => 'application/json' });
call('/v1/sandboxes', POST => '/v1/sandboxes', $tok{agent},
     { no_such_field => 1 });
call('/v1/sandboxes', POST => '/v1/sandboxes', $tok{rev}, {});
($st, undef, undef, $j) = call('/v1/sandboxes', POST => '/v1/sandboxes',
                               $tok{agent},
                               { limits => { memory_mb => 64 },
                                 metadata => { task => 'openapi' } });
is($st, 201, 'a sandbox is made') or diag explain $j;
my $id = $j->{id} // $unknown_sb;
my $sb = "/v1/sandboxes/$id";

call('/v1/sandboxes', GET => '/v1/sandboxes', $tok{agent});
call('/v1/sandboxes', GET => '/v1/sandboxes', $tok{none});
call('/v1/sandboxes', GET => '/v1/sandboxes?include=ended', $tok{agent});
call($sb_tpl, GET => $sb, $tok{agent});
call($sb_tpl, GET => "/v1/sandboxes/$unknown_sb", $tok{agent});
($st, undef, undef, $j) = call("$sb_tpl/usage", GET => "$sb/usage",
                               $tok{agent});
is($st, 200, 'GET .../usage: 200') or diag explain $j;
call("$sb_tpl/usage", GET => "/v1/sandboxes/$unknown_sb/usage", $tok{agent});
call("$sb_tpl/usage", GET => "$sb/usage", $tok{rev});
call("$sb_tpl/usage", GET => "$sb/usage");
call("$sb_tpl/usage", POST => "$sb/usage", $tok{agent}, {});
call($sb_tpl, PATCH => $sb, $tok{agent}, { network => { add => 'x' } });
call($sb_tpl, PATCH => $sb, $tok{agent}, { bogus => 1 });
call($sb_tpl, PATCH => "/v1/sandboxes/$unknown_sb", $tok{agent},
     { network => { add => ['registry.example.test'] } });
call($sb_tpl, PATCH => $sb, $tok{agent},
     { network => { add => ['registry.example.test'] } });

# the lifetime: within the ceilings at once, beyond refused
call($sb_tpl, PATCH => $sb, $tok{agent}, { ttl_s => 1200, idle_s => 600 });
call($sb_tpl, PATCH => $sb, $tok{agent}, { ttl_s => 999999 });
call($sb_tpl, PATCH => $sb, $tok{agent}, { extend_s => 60 });

# a sandbox with a way out: its allowlist grows, an exec's attempts
my $net_body = { network => { allow => ['registry.example.test'] } };
(undef, undef, undef, $j) = call('/v1/sandboxes', POST => '/v1/sandboxes',
                                 $tok{agent}, $net_body);
my $nsb = '/v1/sandboxes/' . ($j->{id} // $unknown_sb);
($st) = call($sb_tpl, PATCH => $nsb, $tok{agent},
             { network => { add => ['a.example.test'] } });
is($st, 200, 'PATCH adds an allowed host');
call($sb_tpl, PATCH => $nsb, $tok{agent},
     { network => { add => ['elsewhere.test'] } });
call("$sb_tpl/exec", POST => "$nsb/exec", $tok{agent},
     { argv => ['sh', '-c', 'curl -sS -m 5 http://registry.example.test/x; '
                . 'curl -sS -m 5 http://refused.test/; true'] });
call($sb_tpl, GET => $nsb, $tok{agent});
call($sb_tpl, DELETE => $nsb, $tok{agent});

# files
call("$sb_tpl/files", PUT => "$sb/files?path=hello.txt", $tok{agent},
     "hello, world\n", { 'Content-Type' => 'application/octet-stream' });
call("$sb_tpl/files", PUT => "$sb/files?path=big.bin", $tok{agent},
     'x' x (65 * 1024), { 'Content-Type' => 'application/octet-stream' });
call("$sb_tpl/files", PUT => "$sb/files?path=../escape", $tok{agent}, 'x',
     { 'Content-Type' => 'application/octet-stream' });
call("$sb_tpl/files", PUT => "$sb/files", $tok{agent}, 'x',
     { 'Content-Type' => 'application/octet-stream' });
call("$sb_tpl/files", GET => "$sb/files?path=hello.txt", $tok{agent});
call("$sb_tpl/files", GET => "$sb/files?path=missing.txt", $tok{agent});
call("$sb_tpl/files", GET => "$sb/files?path=hello.txt", $tok{rev});

# exec
call("$sb_tpl/exec", POST => "$sb/exec", $tok{agent},
     { argv => ['sh', '-c', 'echo out; echo err >&2; exit 3'] });
call("$sb_tpl/exec", POST => "$sb/exec", $tok{agent},
     { argv => ['sleep', '5'], timeout_s => 1 });
call("$sb_tpl/exec", POST => "$sb/exec", $tok{agent}, { argv => [] });
call("$sb_tpl/exec", POST => "$sb/exec", $tok{agent},
     { argv => ['true'], timeout_s => 3600 });
call("$sb_tpl/exec", POST => "/v1/sandboxes/$unknown_sb/exec", $tok{agent},
     { argv => ['true'] });

# workspaces as archives, streamed and background execs
{
    my $ad = $n->dir . '/archive';
    mkdir $ad;
    mkdir "$ad/proj";
    VetoNginx::spew("$ad/proj/a.txt", "a\n");
    system('tar', '-C', $ad, '-czf', "$ad/proj.tar.gz", 'proj') == 0
        or die "tar: $?";
    my $tgz = VetoNginx::slurp("$ad/proj.tar.gz");
    my %oct = ('Content-Type' => 'application/octet-stream');
    call("$sb_tpl/archive", PUT => "$sb/archive?path=src", $tok{agent}, $tgz,
         \%oct);
    call("$sb_tpl/archive", PUT => "$sb/archive", $tok{agent},
         'not a tar at all ' x 64, \%oct);
    call("$sb_tpl/archive", PUT => "$sb/archive?bogus=1", $tok{agent}, $tgz,
         \%oct);
    call("$sb_tpl/archive", PUT => "$sb/archive", $tok{rev}, $tgz, \%oct);
    call("$sb_tpl/archive", GET => "$sb/archive?path=src", $tok{agent});
    call("$sb_tpl/archive", GET => "$sb/archive?path=src&format=tar.gz",
         $tok{agent});
    call("$sb_tpl/archive", GET => "$sb/archive?path=missing", $tok{agent});
    call("$sb_tpl/archive", GET => "$sb/archive?path=src/proj/a.txt",
         $tok{agent});
}

call("$sb_tpl/exec", POST => "$sb/exec", $tok{agent},
     { argv => ['sh', '-c', 'echo one; echo two >&2'] },
     { Accept => 'application/x-ndjson' });

{
    my ($bst, undef, undef, $bj) = call("$sb_tpl/exec", POST => "$sb/exec",
        $tok{agent}, { argv => ['sh', '-c', 'echo bg; sleep 30'],
                       background => JSON::PP::true() });
    is($bst, 202, 'a background exec: 202') or diag explain $bj;
    my $ex_tpl = "$sb_tpl/execs/{exec}";
    my $ex = "$sb/execs/" . ($bj->{id} // 'ex-0000000000000000');
    call($ex_tpl, GET => $ex, $tok{agent});
    call("$ex_tpl/output", GET => "$ex/output?stream=stdout&offset=0",
         $tok{agent});
    call("$ex_tpl/output", GET => "$ex/output?offset=99999999", $tok{agent});
    call("$ex_tpl/output", GET => "$ex/output?colour=blue", $tok{agent});
    call($ex_tpl, DELETE => $ex, $tok{agent});
    call($ex_tpl, DELETE => $ex, $tok{agent});
    call($ex_tpl, GET => $ex, $tok{agent});
    call("$ex_tpl/output", GET => "$ex/output?stream=stdout&offset=0",
         $tok{agent}, undef, { Accept => 'application/x-ndjson' });
    call($ex_tpl, GET => "$sb/execs/ex-0000000000000000", $tok{agent});
    call($ex_tpl, DELETE => "$sb/execs/ex-0000000000000000", $tok{agent});
}

# an exec a human must approve: 202, the approvals, approve, the repeat
my $ask = { argv => ['sh', '-c', 'echo needs-a-human 1'] };
($st, $h, undef, $j) = call("$sb_tpl/exec", POST => "$sb/exec", $tok{agent},
                            $ask);
is($st, 202, 'an exec that needs a human: 202') or diag explain $j;
my $apr = $j->{approval_id} // $j->{id} // $unknown_apr;
my $apr_tpl = '/v1/approvals/{approval}';

call('/v1/approvals', GET => '/v1/approvals?state=pending', $tok{rev});
call('/v1/approvals', GET => '/v1/approvals?state=nonsense', $tok{rev});
call('/v1/approvals', GET => '/v1/approvals', $tok{agent});
call($apr_tpl, GET => "/v1/approvals/$apr", $tok{rev});
call($apr_tpl, GET => "/v1/approvals/$apr", $tok{agent});
call($apr_tpl, GET => "/v1/approvals/$unknown_apr", $tok{rev});
call("$apr_tpl/approve", POST => "/v1/approvals/$unknown_apr/approve",
     $tok{rev}, { reason => 'x' });
call("$apr_tpl/approve", POST => "/v1/approvals/$apr/approve", $tok{agent},
     { reason => 'mine' });
call("$apr_tpl/approve", POST => "/v1/approvals/$apr/approve", $tok{rev},
     { reason => 'looks fine' });
call("$apr_tpl/deny", POST => "/v1/approvals/$apr/deny", $tok{rev},
     { reason => 'too late' });
($st) = call("$sb_tpl/exec", POST => "$sb/exec", $tok{agent}, $ask,
             { 'Veto-Approval' => $apr });
is($st, 200, 'the approved exec runs');
call("$sb_tpl/exec", POST => "$sb/exec", $tok{agent}, $ask,
     { 'Veto-Approval' => $apr });

# a denied one
($st, undef, undef, $j) = call("$sb_tpl/exec", POST => "$sb/exec",
                               $tok{agent},
                               { argv => ['sh', '-c', 'echo needs-a-human 2'] });
my $apr2 = $j->{approval_id} // $unknown_apr;
call("$apr_tpl/deny", POST => "/v1/approvals/$apr2/deny", $tok{rev},
     { reason => 'no' });
call("$apr_tpl/deny", POST => "/v1/approvals/$unknown_apr/deny", $tok{rev},
     {});
call('/v1/approvals', GET => '/v1/approvals?state=denied', $tok{rev});

# audit
call('/v1/audit', GET => '/v1/audit', $tok{audit});
call('/v1/audit', GET => '/v1/audit?count=2', $tok{audit});
call('/v1/audit', GET => '/v1/audit?count=nope', $tok{audit});
call('/v1/audit', GET => '/v1/audit', $tok{agent});

# the admin API: revocations, and any sandbox of the tenant
my $rv = '/v1/admin/revocations';
call($rv, POST => $rv, $tok{admin},
     { kind => 'jti', value => "leaked-$$", expires_at => time + 300,
       reason => 'in a CI log' });
call($rv, POST => $rv, $tok{admin}, { kind => 'agent', value => 'agent-7',
                                      which => 'all' });
call($rv, POST => $rv, $tok{admin}, { kind => 'nonsense', value => 'x' });
call($rv, POST => $rv, $tok{agent}, { kind => 'agent', value => 'agent-7' });
call("$rv/jti/{key}", GET => "$rv/jti/leaked-$$", $tok{admin});
call("$rv/jti/{key}", GET => "$rv/jti/never-revoked", $tok{admin});
call("$rv/agent/{key}", GET => "$rv/agent/agent-7", $tok{admin});
call("$rv/agent/{key}", GET => "$rv/agent/agent-8", $tok{admin});
call("$rv/jti/{key}", DELETE => "$rv/jti/leaked-$$", $tok{admin});
call("$rv/jti/{key}", DELETE => "$rv/jti/leaked-$$", $tok{admin});
call("$rv/agent/{key}", DELETE => "$rv/agent/agent-7", $tok{admin});
call("$rv/agent/{key}", DELETE => "$rv/agent/agent-7", $tok{agent});
call('/v1/admin/sandboxes', GET => '/v1/admin/sandboxes', $tok{admin});
call('/v1/admin/sandboxes', GET => '/v1/admin/sandboxes?agent=agent-1',
     $tok{admin});
call('/v1/admin/sandboxes', GET => '/v1/admin/sandboxes', $tok{agent});
(undef, undef, undef, $j) = call('/v1/sandboxes', POST => '/v1/sandboxes',
                                 $tok{agent}, {});
call('/v1/admin/sandboxes/{id}', DELETE => '/v1/admin/sandboxes/'
     . ($j->{id} // $unknown_sb), $tok{admin});
call('/v1/admin/sandboxes/{id}', DELETE => "/v1/admin/sandboxes/$unknown_sb",
     $tok{admin});

# ---- snapshots, forks, pause and resume, changes (_snapshots.c)
my $snap_tpl = '/v1/snapshots/{snap}';
my $unknown_snap = 'snap-' . ('0' x 24);
($st, undef, undef, $j) = call("$sb_tpl/snapshots", POST => "$sb/snapshots",
                               $tok{agent}, { metadata => { k => 'v' } });
is($st, 201, 'a snapshot is made') or diag explain $j;
my $snap = $j->{id} // $unknown_snap;
call("$sb_tpl/snapshots", POST => "$sb/snapshots", $tok{agent},
     { ttl_s => 'soon' });
call("$sb_tpl/snapshots", POST => "/v1/sandboxes/$unknown_sb/snapshots",
     $tok{agent}, {});
call("$sb_tpl/snapshots", POST => "$sb/snapshots", $tok{rev}, {});
call('/v1/snapshots', GET => '/v1/snapshots', $tok{agent});
call('/v1/snapshots', GET => '/v1/snapshots', $tok{rev});
call($snap_tpl, GET => "/v1/snapshots/$snap", $tok{agent});
call($snap_tpl, GET => "/v1/snapshots/$unknown_snap", $tok{agent});
($st, undef, undef, $j) = call('/v1/sandboxes', POST => '/v1/sandboxes',
                               $tok{agent}, { from_snapshot => $snap });
is($st, 201, 'a fork is made') or diag explain $j;
my $fork = "/v1/sandboxes/" . ($j->{id} // $unknown_sb);
call('/v1/sandboxes', POST => '/v1/sandboxes', $tok{agent},
     { from_snapshot => $unknown_snap });
call($snap_tpl, DELETE => "/v1/snapshots/$snap", $tok{agent});
call("$sb_tpl/changes", GET => "$fork/changes?since=$snap", $tok{agent});
call("$sb_tpl/changes", GET => "$fork/changes?since=$snap&format=diff",
     $tok{agent});
call("$sb_tpl/changes", GET => "$fork/changes?format=tar", $tok{agent});
call("$sb_tpl/changes", GET => "$fork/changes?format=zip", $tok{agent});
call("$sb_tpl/pause", POST => "$fork/pause", $tok{agent});
call("$sb_tpl/exec", POST => "$fork/exec", $tok{agent}, { argv => ['true'] });
call("$sb_tpl/resume", POST => "$fork/resume", $tok{agent});
call("$sb_tpl/pause", POST => "/v1/sandboxes/$unknown_sb/pause", $tok{agent});
call("$sb_tpl/resume", POST => "/v1/sandboxes/$unknown_sb/resume",
     $tok{agent});
call($sb_tpl, DELETE => $fork, $tok{agent});
call($snap_tpl, DELETE => "/v1/snapshots/$snap", $tok{agent});
call($snap_tpl, DELETE => "/v1/snapshots/$snap", $tok{agent});

# the end of it
call($sb_tpl, DELETE => $sb, $tok{agent});
call($sb_tpl, DELETE => $sb, $tok{agent});
call($sb_tpl, GET => $sb, $tok{agent});
call("$sb_tpl/usage", GET => "$sb/usage", $tok{agent});
call("$sb_tpl/files", GET => "$sb/files?path=hello.txt", $tok{agent});

# ---- what every route can answer before its row runs
call('/v1/sandboxes', GET => '/v1/sandboxes');
call('/v1/sandboxes', GET => '/v1/sandboxes', $tok{forged});
call('/v1/sandboxes', PUT => '/v1/sandboxes', $tok{agent});
call(undef, GET => '/v1/no-such-thing', $tok{agent});

# ---- the MCP endpoint (JSON-RPC over Streamable HTTP)
my %mcp_h = (Accept => 'application/json, text/event-stream');
($st, $h) = call('/v1/mcp', POST => '/v1/mcp', $tok{agent},
                 { jsonrpc => '2.0', id => 1, method => 'initialize',
                   params => { protocolVersion => '2025-06-18',
                               capabilities => {},
                               clientInfo => { name => 't59',
                                               version => '1' } } },
                 \%mcp_h);
is($st, 200, 'MCP initialize: 200');
my $session = $h->{'mcp-session-id'} // '';
my %mcp_s = (%mcp_h, 'Mcp-Session-Id' => $session,
             'MCP-Protocol-Version' => '2025-06-18');
call('/v1/mcp', POST => '/v1/mcp', $tok{agent},
     { jsonrpc => '2.0', method => 'notifications/initialized' }, \%mcp_s);
call('/v1/mcp', POST => '/v1/mcp', $tok{agent},
     { jsonrpc => '2.0', id => 2, method => 'tools/list' }, \%mcp_s);
call('/v1/mcp', POST => '/v1/mcp', $tok{agent},
     { jsonrpc => '2.0', id => 3, method => 'tools/call',
       params => { name => 'list_sandboxes', arguments => {} } }, \%mcp_s);
# an exec with a progress token: its output as notifications on an SSE
# stream, the result last
(undef, undef, undef, $j) = $n->request(POST => '/v1/sandboxes', $tok{agent},
                                        {});
call('/v1/mcp', POST => '/v1/mcp', $tok{agent},
     { jsonrpc => '2.0', id => 4, method => 'tools/call',
       params => { name => 'exec', _meta => { progressToken => 'p-1' },
                   arguments => { sandbox_id => $j->{id} // $unknown_sb,
                                  argv => ['sh', '-c', 'echo one; echo two'] } } },
     \%mcp_s);
$n->request(DELETE => '/v1/sandboxes/' . ($j->{id} // $unknown_sb),
            $tok{agent});
call('/v1/mcp', POST => '/v1/mcp', $tok{agent}, '{oops',
     { %mcp_s, 'Content-Type' => 'application/json' });
call('/v1/mcp', POST => '/v1/mcp', $tok{agent}, '[]', \%mcp_s);
call('/v1/mcp', POST => '/v1/mcp', undef,
     { jsonrpc => '2.0', id => 1, method => 'tools/list' }, \%mcp_h);
call('/v1/mcp', GET => '/v1/mcp', $tok{agent}, undef, \%mcp_s);
call('/v1/mcp', DELETE => '/v1/mcp', $tok{agent}, undef, \%mcp_s);

close $rec;

# VETO_OPENAPI_KEEP=file keeps the recorded responses (writing the document)
system('cp', $rec_file, $ENV{VETO_OPENAPI_KEEP}) if $ENV{VETO_OPENAPI_KEEP};

# ---- the validator: each line of its TAP-like output is a test here
# the rows: _ops.c's and the op groups' files' (any module file with rows)
my $row_files = join ' ', map { "'$_'" }
    glob("$ROOT/ngx_veto_sandbox_module/ngx_http_veto_sandbox_*.c");
my @out = `node '$DIR/validate.mjs' '$ROOT/docs/openapi.json' '$rec_file' $row_files 2>&1`;
my $rc = $? >> 8;
my $seen = 0;
for (@out) {
    chomp;
    if (/^ok - (.*)/) { pass($1); $seen++; next }
    if (/^not ok - (.*)/) { fail($1); $seen++; next }
    diag($_);
}
ok($seen > 0, 'the validator reported its checks');
is($rc, 0, 'the validator exits 0');

done_testing;
