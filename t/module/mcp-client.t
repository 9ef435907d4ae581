#!/usr/bin/perl
# The MCP endpoint (/v1/mcp) through a real MCP client: the official
# TypeScript SDK (@modelcontextprotocol/sdk, pinned in t/mcp/'s lock
# file) with its Streamable HTTP client transport and a bearer token,
# against the real stack: nginx with the module, Redis and the helper,
# all private to this test.  t/mcp/mcp-client.test.mjs initializes, lists
# the tools, creates a sandbox, writes files, execs, reads the result
# back, hits an approval and completes it after a reviewer approves
# through the REST API (and uses MCP and REST approvals across), destroys
# the sandbox, ends its session, and fails with a forged, an expired and
# no token (401, with the resource metadata in WWW-Authenticate); each of
# its results is a test here.  Afterwards this file checks the server's
# side: every tool call is on the audit trail as its REST twin would be.

use strict;
use warnings;

use Test::More;
use JSON::PP ();
use MIME::Base64 ();
use lib 't/lib';
use VetoNginx;
use VetoNode;
use Eventually qw(eventually);

VetoNginx::need(qw(helper redis));

my $ROOT = $VetoNginx::ROOT;
my $MCP_DIR = "$ROOT/t/mcp";
my $REPLY_BYTES = 4096;

# A test that cannot run fails: no node, no SDK.
VetoNode::need($MCP_DIR, '@modelcontextprotocol/sdk');

my $JSON = JSON::PP->new->utf8(1)->canonical(1);

my $policy = {
    version => 1,
    tenants => {
        acme => {
            ceilings => { memory_mb => 512, pids => 256, timeout_s => 30,
                          ttl_s => 3600, file_bytes => 1024 * 1024 },
            defaults => { memory_mb => 128, ttl_s => 600 },
            approvals => { exec_argv => ['sh -c echo approved-run*',
                                         'sh -c echo via-*'] },
            network => { allow => ['registry.example.test'],
                         ask => ['git.example.test'] },
        },
    },
};

my $n = VetoNginx->new;
$n->start_redis;
$n->start_helper;
my $veto = $n->default_veto . <<"EOF";
        veto_sandbox_mcp on;
        veto_sandbox_mcp_sessions zone=veto_mcp:1m max=64 per_agent=8;
        veto_sandbox_mcp_reply_bytes $REPLY_BYTES;
EOF
$n->start(redis => 1, veto => $veto, policy => $policy,
          server_extra => "location /.well-known/oauth-protected-resource "
                          . "{ veto_sandbox_mcp_metadata; }");

# the worker connects to Redis in the background
eventually('Redis is up', 10, sub {
    my (undef, undef, undef, $j) = $n->request(GET => '/v1/health');
    ($j->{redis} // '') eq 'up';
});

my $d = $n->dir;
my %tok = (
    agent    => $n->token(sub => 'agent-1', jti => "mcp-agent-$$",
                          scope => 'sandbox:create sandbox:exec sandbox:files '
                                   . 'sandbox:network'),
    both     => $n->token(sub => 'agent-1', scope =>
                          'sandbox:create sandbox:exec sandbox:files '
                          . 'approvals:review'),
    reviewer => $n->token(sub => 'human-1', scope => 'approvals:review'),
    forged   => $n->token(sub => 'agent-1',
                          key => \VetoNginx::slurp("$d/rsa-other.key")),
    expired  => $n->token(sub => 'agent-1', iat => time - 3600,
                          exp => time - 600),
);

my $out = "$d/mcp";
mkdir $out or die "mkdir $out: $!";
# a small project as tar.gz, for upload_archive
my $proj = "$d/proj";
mkdir $proj and mkdir "$proj/lib" or die "mkdir $proj: $!";
VetoNginx::spew("$proj/hello.txt", "hello\n");
VetoNginx::spew("$proj/lib/util.txt", "util\n");
VetoNginx::spew("$proj/run.sh", "echo \"from the archive: \$(cat hello.txt)\"\n"
                . "test -f lib/util.txt && echo lib/util.txt ok\n");
system('tar', '-czf', "$d/proj.tar.gz", '-C', $proj, '.') == 0
    or die "tar -czf: failed\n";
my $fixture = {
    archive_b64 => MIME::Base64::encode_base64(VetoNginx::slurp("$d/proj.tar.gz"), ''),
    base => $n->url(''),
    mcp => $n->url('/v1/mcp'),
    metadata => $n->url('/.well-known/oauth-protected-resource/v1/mcp'),
    issuer => $n->{issuer},
    reply_bytes => $REPLY_BYTES,
    tokens => \%tok,
    out => $out,
};
VetoNginx::spew("$out/fixture.json", $JSON->encode($fixture));

my $helper_log_before = $n->helper->log_text;

my ($status, $results) = VetoNode::run(
    "$MCP_DIR/mcp-client.test.mjs", "$out/fixture.json",
    name => 'mcp client', timeout => 300);
is($status, 0, 'the MCP client test exited 0');
ok($results >= 100, "the MCP client test reported $results results");

# ---------------------------------------------------------------- after
my $done = eval { $JSON->decode(VetoNginx::slurp("$out/result.json")) } // {};
my ($sb) = @{ $done->{sandboxes} // [] };
my ($apr) = @{ $done->{approvals} // [] };
ok($sb && $apr, 'the client test named its sandbox and approval')
    or diag explain $done;

# Every tool call is on record as its REST twin's request would be.
select(undef, undef, undef, 0.2);    # records are sent without waiting
my $auditor = $n->token(sub => 'auditor', scope => 'audit:read');
my ($st, $h, $b, $j) = $n->request(GET => '/v1/audit?agent=agent-1&limit=1000',
                                   $auditor);
is($st, 200, 'the audit trail') or diag $b;
my @recs = @{ $j->{records} // [] };
my %outcomes;
$outcomes{"$_->{action} $_->{outcome}"}++ for @recs;
ok($outcomes{'sandbox.create sandbox_created'}, 'sandbox.create: sandbox_created')
    or diag explain \%outcomes;
ok($outcomes{'sandbox.files.write allowed'} >= 3, 'sandbox.files.write: allowed');
ok($outcomes{'sandbox.exec exec_finished'} >= 8, 'sandbox.exec: exec_finished');
ok($outcomes{'sandbox.archive.write allowed'}, 'sandbox.archive.write: allowed')
    or diag explain \%outcomes;
my ($streamed) = grep { $_->{outcome} eq 'exec_finished'
                        && ($_->{detail}{streamed} // 0) } @recs;
ok($streamed && $streamed->{detail}{stdout_bytes} > 0
   && $streamed->{detail}{stdout_sha256},
   'an exec with progress is on record as streamed, with what it sent')
    or diag explain [ map { $_->{detail} } grep { $_->{action} eq 'sandbox.exec' } @recs ];
ok($outcomes{'sandbox.files.read allowed'}, 'sandbox.files.read: allowed');
ok($outcomes{'sandbox.exec approval_requested'} >= 3,
   'sandbox.exec: approval_requested');
ok($outcomes{'sandbox.exec approval_consumed'} >= 3,
   'sandbox.exec: approval_consumed');
ok($outcomes{'sandbox.delete sandbox_destroyed'}, 'sandbox.delete: sandbox_destroyed');
ok((grep { $_->{outcome} eq 'denied' && ($_->{reason} // '') eq 'approval_mismatch'
           && ($_->{approval} // '') eq $apr } @recs),
   'the mismatched retry is on record as denied');
ok((grep { $_->{outcome} eq 'denied' && ($_->{reason} // '') eq 'over_ceiling' } @recs),
   'the create over the ceiling is on record as denied');
my ($exec) = grep { $_->{outcome} eq 'exec_finished' && ($_->{approval} // '') eq $apr } @recs;
ok($exec, 'the approved exec is on record with its approval');
like(JSON::PP->new->canonical->encode($exec->{detail} // {}), qr/approved-run/,
     '... and what it ran');

($st, $h, $b, $j) = $n->request(GET => "/v1/audit?agent=human-1&limit=100",
                                $auditor);
ok((grep { $_->{outcome} eq 'denied' && ($_->{reason} // '') eq 'insufficient_scope' }
    @{ $j->{records} // [] }),
   'the reviewer token\'s exec is on record as insufficient_scope');

($st, $h, $b, $j) = $n->request(GET => "/v1/approvals/$apr", $tok{reviewer});
is($j->{state}, 'consumed', 'the approval was used');
is($j->{approved_by}, 'human-1', '... approved by the reviewer') if exists $j->{approved_by};

# the helper ran what the records say, and ended the sandbox
my $helper_log = substr($n->helper->log_text, length $helper_log_before);
like($helper_log, qr/created sandbox \Q$sb\E/, 'the helper created the sandbox');
($st, $h, $b, $j) = $n->request(GET => "/v1/sandboxes/$sb", $tok{agent});
is($st, 200, 'the sandbox is gone: its end is on record') or diag $b;
is($j->{state}, 'ended', '... state ended');
is($j->{end_reason}, 'deleted', '... end_reason deleted');

# the access log has the endpoint, the tokens travelled in headers only
my $logs = $n->access_log . $n->error_log;
like($n->access_log, qr{POST /v1/mcp agent=agent-1}, 'the access log names the agent');
for my $k (sort keys %tok) {
    my ($sig) = $tok{$k} =~ /\.([^.]+)$/;
    unlike($logs, qr/\Q$sig\E/, "no $k token in nginx's logs");
}
unlike($n->error_log, qr/\[(?:alert|crit|emerg)\]/, 'no alert in the error log');

done_testing;
