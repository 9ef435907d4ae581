#!/usr/bin/perl
# The MCP endpoint under hostile input, in raw HTTP: tokens, transport
# misuse, JSON-RPC that is malformed or of the wrong shape (batches, huge
# ids, wrong types, unknown methods), sessions that are missing, made up,
# another agent's or another tenant's, calls before initialize, sessions'
# bounds; the gate's refusals as tool results (scope, ceiling, quota,
# Redis down) and a revoked token mid-session as HTTP 401.  Each answer
# is the proper JSON-RPC error or HTTP status, the server never crashes,
# and nothing reaches the helper without the gate: the helper's log and
# the audit trail show only what the gate allowed.

use strict;
use warnings;

use Test::More;
use HTTP::Tiny;
use IO::Socket::INET;
use JSON::PP ();
use MIME::Base64 ();
use lib 't/lib';
use VetoNginx;
use Eventually qw(eventually);
use Time::HiRes qw(sleep);

VetoNginx::need(qw(helper redis));

my $JSON = JSON::PP->new->utf8(1)->canonical(1);
my $MAX_BODY = 64 * 1024;

my $policy = {
    version => 1,
    tenants => {
        acme => {
            ceilings => { memory_mb => 512, timeout_s => 30, ttl_s => 3600,
                          file_bytes => 1024 * 1024, archive_bytes => 16384 },
            approvals => { exec_argv => ['sh -c echo needs-a-human*'] },
            agents => {
                'agent-q' => { quotas => { execs_per_minute => 2 } },
            },
        },
        globex => { ceilings => { memory_mb => 512, timeout_s => 30 } },
    },
};

my $n = VetoNginx->new;
$n->start_redis;
$n->start_helper;

# ---------------------------------------------------------------- nginx -t
$n->write_policy($policy);
for my $case (
    ['veto_sandbox_mcp on;', qr/needs "veto_sandbox_mcp_sessions zone=name:size"/,
     'on without a sessions zone'],
    ["veto_sandbox_mcp on;\nveto_sandbox_mcp_sessions max=5;", qr/needs "zone=name:size"/,
     'a sessions zone without a zone'],
    ["veto_sandbox_mcp_sessions zone=m:1m per_agent=0;", qr/invalid parameter "per_agent=0"/,
     'per_agent=0'],
    ["veto_sandbox_mcp_sessions zone=m:1m bogus=1;", qr/invalid parameter "bogus=1"/,
     'an unknown parameter'],
    ["veto_sandbox_mcp_sessions zone=m:1k;", qr/too small/, 'a zone too small'],
    ["veto_sandbox_mcp_resource ftp://x/v1/mcp;", qr/must be an http/,
     'a resource that is no http URL'],
    ["veto_sandbox_mcp_resource \"https://x/v1/mcp?a=b\";", qr/without query/,
     'a resource with a query'],
    ["veto_sandbox_mcp on;\nveto_sandbox_mcp_sessions zone=m:1m;\n"
     . "veto_sandbox_mcp_reply_bytes 100;", qr/must be 256 \.\. 16m/,
     'reply bytes out of range'],
) {
    my ($extra, $re, $what) = @$case;
    $n->render(redis => 1, veto => $n->default_veto . "        $extra\n");
    my ($ok, $out) = $n->test_config;
    ok(!$ok, "nginx -t refuses $what");
    like($out, $re, '... saying why') or diag $out;
}
$n->render(redis => 1,
           veto => $n->default_veto
                   . "        veto_sandbox_mcp_sessions zone=m:1m;\n",
           http_extra => "server { listen 127.0.0.1:@{[ VetoNginx::free_port() ]}; "
                         . "veto_sandbox_mcp on; }");
my ($ok, $out) = $n->test_config;
ok(!$ok, 'nginx -t refuses "veto_sandbox_mcp on" in a server without the API');
like($out, qr/needs "veto_sandbox_api"/, '... saying it needs the API') or diag $out;

# one zone name for the token cache and the MCP sessions, in either order:
# the second directive would read the first one's table as its own
for my $veto ($n->default_veto
                  . "        veto_sandbox_mcp_sessions zone=veto_jwt:1m;\n",
              "        veto_sandbox_mcp_sessions zone=veto_jwt:1m;\n"
                  . $n->default_veto) {
    $n->render(redis => 1, veto => $veto);
    my ($ok, $out) = $n->test_config;
    ok(!$ok, 'nginx -t refuses one zone for the token cache and the MCP sessions');
    like($out, qr/zone "veto_jwt" is used for something else/, '... saying why')
        or diag $out;
}

# off (the default): /v1/mcp is no endpoint, the metadata none either
$n->start(redis => 1, policy => $policy,
          server_extra => "location /.well-known/oauth-protected-resource "
                          . "{ veto_sandbox_mcp_metadata; }");
{
    my $tok = $n->token;
    my ($st, $h, $b, $j) = $n->request(POST => '/v1/mcp', $tok, {
        jsonrpc => '2.0', id => 1, method => 'initialize',
        params => { protocolVersion => '2025-11-25', capabilities => {} } });
    is($st, 404, 'veto_sandbox_mcp off: POST /v1/mcp is 404');
    is($j->{type}, 'urn:veto-sandbox:problem:not_found', '... as any unknown API path');
    ok(!$h->{'mcp-session-id'}, '... with no session');
    ($st, $h) = $n->request(POST => '/v1/mcp');
    unlike($h->{'www-authenticate'} // '', qr/resource_metadata/,
           '... and its 401 names no metadata');
    ($st) = $n->request(GET => '/.well-known/oauth-protected-resource/v1/mcp');
    is($st, 404, '... nor is there a metadata document');
}
$n->stop;

# what nginx -t said above is not the running server's
my $log_start = -s "$n->{dir}/logs/error.log" // 0;

my $veto = $n->default_veto . <<"EOF";
        veto_sandbox_mcp on;
        veto_sandbox_mcp_sessions zone=veto_mcp:1m max=24 per_agent=3;
        veto_sandbox_mcp_max_body @{[ $MAX_BODY / 1024 ]}k;
        veto_sandbox_mcp_allow_origin https://agent-host.example;
EOF
$n->start(redis => 1, veto => $veto, policy => $policy,
          server_extra => "location /.well-known/oauth-protected-resource "
                          . "{ veto_sandbox_mcp_metadata; }");
eventually('Redis is up', 10, sub {
    my (undef, undef, undef, $j) = $n->request(GET => '/v1/health');
    ($j->{redis} // '') eq 'up';
});

my $d = $n->dir;
my $agent = $n->token(sub => 'agent-1', jti => "h-agent-$$");
my $agent2 = $n->token(sub => 'agent-2');
my $other_tenant = $n->token(sub => 'agent-1', tenant => 'globex');
my $reviewer = $n->token(sub => 'human-1', scope => 'approvals:review');
my $forged = $n->token(sub => 'agent-1',
                       key => \VetoNginx::slurp("$d/rsa-other.key"));
my $expired = $n->token(iat => time - 3600, exp => time - 600);
my $quota = $n->token(sub => 'agent-q');
# initializations made only to see the answer: another agent's, so that
# agent-1's sessions stay within per_agent
my $tmp = $n->token(sub => 'agent-t');

my $URL = $n->url('/v1/mcp');
my $METADATA = $n->url('/.well-known/oauth-protected-resource/v1/mcp');

# mcp(token, body, headers): a raw POST (body: a string as it is, or data
# as JSON) -> (status, headers, body, decoded JSON or undef)
sub mcp
{
    my ($token, $body, $hdr, $method) = @_;
    my %h = ('Content-Type' => 'application/json',
             Accept => 'application/json, text/event-stream', %{ $hdr // {} });
    delete $h{$_} for grep { !defined $h{$_} } keys %h;
    $h{Authorization} = "Bearer $token" if defined $token;
    $body = $JSON->encode($body) if ref $body && ref $body ne 'CODE';
    my $res = HTTP::Tiny->new(timeout => 60, keep_alive => 0)->request(
        $method // 'POST', $URL,
        { headers => \%h, defined $body ? (content => $body) : () });
    my $j = eval { $JSON->decode($res->{content}) };
    return ($res->{status}, $res->{headers}, $res->{content}, $j);
}

sub rpc_error_is
{
    my ($got, $status, $code, $name, $id) = @_;
    my ($st, $h, $b, $j) = @$got;
    is($st, $status, "$name: HTTP $status") or diag $b;
    is($j->{jsonrpc}, '2.0', "$name: a JSON-RPC response");
    is($j->{error}{code}, $code, "$name: error $code") or diag $b;
    ok(length($j->{error}{message} // '') > 8, "$name: with a message");
    if (defined $id) {
        is_deeply($j->{id}, $id, "$name: answers to its id");
    } else {
        ok(!exists $j->{id}, "$name: no id (none could be read)") or diag $b;
    }
    ok(!exists $j->{result}, "$name: no result");
}

my $n_init = 0;
sub init_body
{
    my (%p) = @_;
    return { jsonrpc => '2.0', id => 'init-' . ++$n_init,
             method => 'initialize',
             params => { protocolVersion => '2025-11-25', capabilities => {},
                         clientInfo => { name => 'hostile', version => '1' },
                         %p } };
}

# a session of token's caller, initialized
sub session
{
    my ($token) = @_;
    my ($st, $h, $b, $j) = mcp($token, init_body());
    is($st, 200, 'initialize') or diag $b;
    my $sid = $h->{'mcp-session-id'} // '';
    ($st) = mcp($token, { jsonrpc => '2.0', method => 'notifications/initialized' },
                { 'Mcp-Session-Id' => $sid });
    is($st, 202, 'notifications/initialized: 202');
    return $sid;
}

sub in_session
{
    my ($sid, %more) = @_;
    return { 'Mcp-Session-Id' => $sid, 'MCP-Protocol-Version' => '2025-11-25',
             %more };
}

sub call
{
    my ($token, $sid, $id, $tool, $args) = @_;
    return mcp($token, { jsonrpc => '2.0', id => $id, method => 'tools/call',
                         params => { name => $tool,
                                     defined $args ? (arguments => $args) : () } },
               in_session($sid));
}

# what the helper did: sandboxes created, execs run or started
sub helper_work
{
    my $log = $n->helper->log_text;
    my @w = $log =~ /(created sandbox sb-\w+|exec done|exec could not start)/g;
    return scalar @w;
}

# a sandbox of agent-1's for the calls that need a real one, made over REST
my ($st, $h, $b, $j) = $n->request(POST => '/v1/sandboxes', $agent, { ttl_s => 600 });
is($st, 201, 'a sandbox to aim at') or diag $b;
my $sb = $j->{id};

my $work0 = helper_work();

# ---------------------------------------------------------------- tokens
for my $case (['no token', undef, qr/^Bearer realm="veto-sandbox", resource_metadata=/],
              ['forged token', $forged, qr/error="invalid_token"/],
              ['expired token', $expired, qr/error="invalid_token"/]) {
    my ($what, $tok, $re) = @$case;
    ($st, $h, $b, $j) = mcp($tok, init_body());
    is($st, 401, "$what: 401");
    my $wa = $h->{'www-authenticate'} // '';
    like($wa, $re, "$what: the challenge");
    like($wa, qr/resource_metadata="\Q$METADATA\E"/,
         "$what: names the protected resource metadata");
    ok(!$h->{'mcp-session-id'}, "$what: no session");
}
for my $m (qw(GET DELETE)) {
    ($st, $h) = mcp(undef, undef, {}, $m);
    is($st, 401, "$m without a token: 401");
    like($h->{'www-authenticate'} // '', qr/resource_metadata=/, "... with the metadata");
}
($st, $h) = $n->request(GET => '/v1/sandboxes');
is($st, 401, 'a REST 401');
unlike($h->{'www-authenticate'} // '', qr/resource_metadata/,
       '... names no MCP metadata (it is the MCP endpoint\'s)');

($st, $h, $b, $j) = $n->request(GET => '/.well-known/oauth-protected-resource/v1/mcp');
is($st, 200, 'the metadata document: public');
is($j->{resource}, $URL, '... its resource');
is_deeply($j->{authorization_servers}, [$n->{issuer}], '... its issuer');
is_deeply($j->{bearer_methods_supported}, ['header'], '... bearer in the header');
($st) = $n->request(GET => '/.well-known/oauth-protected-resource/v1/other');
is($st, 404, 'another resource\'s metadata: 404');
($st) = $n->request(POST => '/.well-known/oauth-protected-resource', undef, {});
is($st, 405, 'the metadata document takes no POST');
{
    # a Host no URL can be made of (HTTP::Tiny will not send it)
    my $s = IO::Socket::INET->new(PeerAddr => '127.0.0.1:' . $n->port)
        or die "connect: $!";
    print $s "GET /.well-known/oauth-protected-resource HTTP/1.0\r\n"
           . "Host: x\"y\r\n\r\n";
    my $res = do { local $/; <$s> } // '';
    like($res, qr{^HTTP/1\.1 400 }, 'a Host that cannot name a resource: 400');
    unlike($res, qr/x"y/, '... nothing made of it');
    $s = IO::Socket::INET->new(PeerAddr => '127.0.0.1:' . $n->port)
        or die "connect: $!";
    print $s "POST /v1/mcp HTTP/1.0\r\nHost: x\"y\r\nContent-Length: 0\r\n\r\n";
    $res = do { local $/; <$s> } // '';
    like($res, qr{^HTTP/1\.1 401 }, '... and the 401 of the endpoint there');
    like($res, qr{WWW-Authenticate: Bearer realm="veto-sandbox"\r\n},
         '... names no metadata rather than a broken one');
}

# ---------------------------------------------------------------- transport
($st, $h) = mcp($agent, undef, {}, 'GET');
is($st, 405, 'GET: 405 (no server-initiated stream)');
is($h->{allow}, 'POST, DELETE', '... Allow: POST, DELETE');
($st) = mcp($agent, '{}', {}, 'PUT');
is($st, 405, 'PUT: 405');
rpc_error_is([mcp($agent, init_body(), { 'Content-Type' => 'text/plain' })],
             415, -32000, 'text/plain');
rpc_error_is([mcp($agent, init_body(), { 'Content-Type' => undef })],
             415, -32000, 'no Content-Type');
rpc_error_is([mcp($agent, init_body(), { 'Content-Type' => 'application/jsonx' })],
             415, -32000, 'application/jsonx');
rpc_error_is([mcp($agent, init_body(), { Accept => 'text/html' })],
             406, -32000, 'Accept: text/html');
($st) = mcp($tmp, init_body(), { Accept => 'application/json' });
is($st, 200, 'Accept: application/json alone is enough');
rpc_error_is([mcp($agent, 'x' x ($MAX_BODY + 1))], 413, -32000,
             'a body over veto_sandbox_mcp_max_body');
{
    my $left = $MAX_BODY + 10;
    rpc_error_is([mcp($agent, sub { return undef if $left <= 0;
                                    my $c = 'x' x ($left > 4096 ? 4096 : $left);
                                    $left -= length $c; $c })],
                 413, -32000, 'a chunked body over veto_sandbox_mcp_max_body');
}
rpc_error_is([mcp($agent, init_body(), { Origin => 'https://evil.example' })],
             403, -32000, 'a foreign Origin (DNS rebinding)');
rpc_error_is([mcp($agent, init_body(), { Origin => 'null' })],
             403, -32000, 'Origin: null');
($st) = mcp($tmp, init_body(), { Origin => 'http://127.0.0.1:' . $n->port });
is($st, 200, 'the endpoint\'s own Origin');
($st) = mcp($tmp, init_body(), { Origin => 'https://agent-host.example' });
is($st, 200, 'an Origin of veto_sandbox_mcp_allow_origin');

# ---------------------------------------------------------------- JSON-RPC
rpc_error_is([mcp($agent, '{')], 400, -32700, 'truncated JSON');
rpc_error_is([mcp($agent, '')], 400, -32700, 'an empty body');
rpc_error_is([mcp($agent, "{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"p\xffng\"}")],
             400, -32700, 'bytes that are not UTF-8');
rpc_error_is([mcp($agent, '{"jsonrpc":"2.0","id":1,"id":2,"method":"ping"}')],
             400, -32700, 'a duplicate key');
rpc_error_is([mcp($agent, '[' x 60000)], 400, -32700, '60,000 nested arrays');
rpc_error_is([mcp($agent, '[]')], 400, -32600, 'an empty batch');
rpc_error_is([mcp($agent, [init_body(), init_body()])], 400, -32600,
             'a batch of two initialize');
rpc_error_is([mcp($agent, $_)], 400, -32600, "the message $_")
    for ('42', 'null', '"ping"', 'true');
rpc_error_is([mcp($agent, '{"jsonrpc":"2.0","id":123456789012345678901234567890,"method":"ping"}')],
             400, -32600, 'an id too large for any integer');
rpc_error_is([mcp($agent, '{"jsonrpc":"2.0","id":1e400,"method":"ping"}')],
             400, -32600, 'an id of 1e400');
for my $case (['a fraction', '1.5'], ['null', 'null'], ['an object', '{}'],
              ['an array', '[1]'], ['true', 'true'],
              ['a string of 300 bytes', '"' . ('i' x 300) . '"']) {
    rpc_error_is([mcp($agent, qq({"jsonrpc":"2.0","id":$case->[1],"method":"ping"}))],
                 400, -32600, "an id that is $case->[0]");
}
rpc_error_is([mcp($agent, { id => 7, method => 'ping' })], 400, -32600,
             'no "jsonrpc"', 7);
rpc_error_is([mcp($agent, { jsonrpc => '1.0', id => 7, method => 'ping' })],
             400, -32600, '"jsonrpc": "1.0"', 7);
rpc_error_is([mcp($agent, { jsonrpc => 2, id => 7, method => 'ping' })],
             400, -32600, '"jsonrpc": 2', 7);
rpc_error_is([mcp($agent, { jsonrpc => '2.0', id => 7 })], 400, -32600,
             'no method', 7);
rpc_error_is([mcp($agent, { jsonrpc => '2.0', id => 7, method => 42 })],
             400, -32600, 'a method that is a number', 7);
rpc_error_is([mcp($agent, { jsonrpc => '2.0', id => 7, method => '' })],
             400, -32600, 'an empty method', 7);
rpc_error_is([mcp($agent, { jsonrpc => '2.0', id => 7, method => 'ping',
                            params => 'x' })],
             400, -32600, 'params that are a string', 7);
rpc_error_is([mcp($agent, { jsonrpc => '2.0', id => 7, method => 'initialize',
                            params => [1] })],
             200, -32602, 'params that are an array', 7);

# ---------------------------------------------------------------- sessions
my $ping = { jsonrpc => '2.0', id => 'p', method => 'ping' };
rpc_error_is([mcp($agent, $ping)], 400, -32000, 'ping before initialize', 'p');
rpc_error_is([call($agent, undef, 5, 'exec', { sandbox_id => $sb, argv => ['true'] })],
             400, -32000, 'tools/call before initialize', 5);
rpc_error_is([mcp($agent, { jsonrpc => '2.0', method => 'notifications/initialized' })],
             400, -32000, 'notifications/initialized before initialize');
rpc_error_is([mcp($agent, { jsonrpc => '2.0', id => 1, method => 'server/discover',
                            params => { _meta => {
                                'io.modelcontextprotocol/protocolVersion' => '2026-07-28' } } },
                  { 'MCP-Protocol-Version' => '2026-07-28' })],
             400, -32000, 'a 2026-07-28 request without a session (a dual-era '
                          . 'client falls back to initialize)', 1);
rpc_error_is([mcp($agent, $ping, in_session('0' x 32))], 404, -32001,
             'a made-up session', 'p');
rpc_error_is([mcp($agent, $ping, in_session('../' x 400))], 404, -32001,
             'a session id of 1,200 bytes', 'p');

my $sid = session($agent);
like($sid, qr/^[0-9a-f]{32}$/, 'a session id: 32 hex digits');

($st, $h, $b, $j) = mcp($agent, $ping, in_session($sid));
is($st, 200, 'ping in the session');
is_deeply($j, { jsonrpc => '2.0', id => 'p', result => {} }, '... answers {}');
for my $id ('i' x 256, -9223372036854775808, 9223372036854775807, 0, '') {
    ($st, $h, $b, $j) = mcp($agent, { %$ping, id => $id }, in_session($sid));
    is($st, 200, 'an id of ' . length($id) . ' bytes: 200');
    is_deeply($j->{id}, $id, '... echoed exactly');
}
($st, $h, $b, $j) = mcp($agent, $ping, { 'Mcp-Session-Id' => $sid });
is($st, 200, 'without MCP-Protocol-Version: the session\'s version');
rpc_error_is([mcp($agent, $ping, in_session($sid, 'MCP-Protocol-Version' => '1999-01-01'))],
             400, -32000, 'an unsupported MCP-Protocol-Version', 'p');
rpc_error_is([mcp($agent, $ping, in_session($sid, 'MCP-Protocol-Version' => '2025-06-18'))],
             400, -32000, 'a version other than the negotiated one', 'p');
rpc_error_is([mcp($agent, init_body(), in_session($sid))], 400, -32600,
             'initialize inside a session', 'init-' . $n_init);
{
    my $nb = init_body();
    delete $nb->{id};
    rpc_error_is([mcp($agent, $nb)], 400, -32600, 'initialize as a notification');
}
for my $case (['no params', undef], ['no protocolVersion', { capabilities => {} }],
              ['a protocolVersion of 5', { protocolVersion => 5, capabilities => {} }],
              ['no capabilities', { protocolVersion => '2025-11-25' }],
              ['clientInfo a string', { protocolVersion => '2025-11-25',
                                        capabilities => {}, clientInfo => 'x' }]) {
    my $body = { jsonrpc => '2.0', id => 'bad-init', method => 'initialize',
                 defined $case->[1] ? (params => $case->[1]) : () };
    my @r = mcp($agent, $body);
    rpc_error_is(\@r, 200, -32602, "initialize with $case->[0]", 'bad-init');
    ok(!$r[1]{'mcp-session-id'}, '... opens no session');
}
($st, $h, $b, $j) = mcp($tmp, init_body(protocolVersion => '1999-01-01'));
is($j->{result}{protocolVersion}, '2025-11-25',
   'an unknown protocol version: the server\'s newest');
($st, $h, $b, $j) = mcp($tmp, init_body(protocolVersion => '2025-06-18'));
is($j->{result}{protocolVersion}, '2025-06-18', '2025-06-18: kept');
my $sid0618 = $h->{'mcp-session-id'};
($st) = mcp($tmp, $ping, in_session($sid0618, 'MCP-Protocol-Version' => '2025-06-18'));
is($st, 200, '... and that session speaks it');

# another agent's, another tenant's session is none
rpc_error_is([mcp($agent2, $ping, in_session($sid))], 404, -32001,
             'another agent\'s session', 'p');
rpc_error_is([call($agent2, $sid, 9, 'exec', { sandbox_id => $sb, argv => ['touch', 'x'] })],
             404, -32001, 'a tools/call in another agent\'s session', 9);
rpc_error_is([mcp($other_tenant, $ping, in_session($sid))], 404, -32001,
             'the same agent name in another tenant', 'p');
($st) = mcp($agent2, undef, { 'Mcp-Session-Id' => $sid }, 'DELETE');
is($st, 404, 'DELETE of another agent\'s session: 404');
($st) = mcp($agent, $ping, in_session($sid));
is($st, 200, '... which still works for its own agent');

# ---------------------------------------------------------------- methods
for my $m (qw(resources/list prompts/list logging/setLevel completion/complete
              sampling/createMessage rpc.discover initialized)) {
    rpc_error_is([mcp($agent, { jsonrpc => '2.0', id => 1, method => $m },
                      in_session($sid))],
                 200, -32601, "method $m", 1);
}
($st, $h, $b) = mcp($agent, { jsonrpc => '2.0', method => 'notifications/cancelled',
                              params => { requestId => 1 } }, in_session($sid));
is($st, 202, 'a notification: 202');
is($b, '', '... with no body');
($st, $h, $b) = mcp($agent, { jsonrpc => '2.0', method => 'notifications/made-up' },
                    in_session($sid));
is($st, 202, 'an unknown notification: 202, nothing to answer');
($st, $h, $b) = mcp($agent, { jsonrpc => '2.0', id => 3, result => {} }, in_session($sid));
is($st, 202, 'a response from the client: 202');
rpc_error_is([mcp($agent, { jsonrpc => '2.0', id => 3, method => 'tools/list',
                            params => { cursor => 'abc' } }, in_session($sid))],
             200, -32602, 'tools/list with a cursor never given', 3);
rpc_error_is([mcp($agent, { jsonrpc => '2.0', id => 4, method => 'tools/call' },
                  in_session($sid))], 200, -32602, 'tools/call without params', 4);
rpc_error_is([call($agent, $sid, 4, undef, {})], 200, -32602,
             'tools/call without a name', 4);
rpc_error_is([mcp($agent, { jsonrpc => '2.0', id => 4, method => 'tools/call',
                            params => { name => 5 } }, in_session($sid))],
             200, -32602, 'a tool name that is a number', 4);
rpc_error_is([mcp($agent, { jsonrpc => '2.0', id => 4, method => 'tools/call',
                            params => { name => 'exec', arguments => 'x' } },
                  in_session($sid))], 200, -32602, 'arguments that are a string', 4);
rpc_error_is([mcp($agent, { jsonrpc => '2.0', id => 4, method => 'tools/call',
                            params => { name => 'exec', arguments => [] } },
                  in_session($sid))], 200, -32602, 'arguments that are an array', 4);
rpc_error_is([call($agent, $sid, 4, 'rm_rf', {})], 200, -32602, 'an unknown tool', 4);
my @r = call($agent, $sid, 4, 'x' x 10000, {});
rpc_error_is(\@r, 200, -32602, 'a tool name of 10,000 bytes', 4);
unlike($r[2], qr/x{100}/, '... not echoed');

# arguments the agent can fix: tool errors, not protocol errors
sub tool_error_like
{
    my ($got, $re, $name) = @_;
    my ($st, $h, $b, $j) = @$got;
    is($st, 200, "$name: HTTP 200");
    is($j->{result}{isError}, JSON::PP::true, "$name: isError") or diag $b;
    like($j->{result}{content}[0]{text} // '', $re, "$name: says why");
}
tool_error_like([call($agent, $sid, 6, 'exec', { sandbox_id => 42, argv => ['true'] })],
                qr/sandbox_id must be/, 'a sandbox_id that is a number');
tool_error_like([call($agent, $sid, 6, 'exec', { argv => ['true'] })],
                qr/sandbox_id is required/, 'no sandbox_id');
tool_error_like([call($agent, $sid, 6, 'exec', { sandbox_id => $sb, argv => 'true' })],
                qr/argv/, 'argv that is a string');
tool_error_like([call($agent, $sid, 6, 'write_file', { sandbox_id => $sb, path => 'a',
                                                       content => '@@@', encoding => 'base64' })],
                qr/not valid base64/, 'content that is not base64');
tool_error_like([call($agent, $sid, 6, 'write_file', { sandbox_id => $sb, path => 'a',
                                                       content => 'x', encoding => 'rot13' })],
                qr/encoding must be/, 'an unknown encoding');
tool_error_like([call($agent, $sid, 6, 'read_file', { sandbox_id => $sb,
                                                      path => '../../etc/shadow' })],
                qr/bad_path|path/, 'a path out of the workspace');
rpc_error_is([call($agent, $sid, 6, 'read_file', { sandbox_id => $sb,
                                                   path => "a\0b" })],
             400, -32700, 'a NUL in a string (\\u0000)');
tool_error_like([call($agent, $sid, 6, 'exec', { sandbox_id => $sb, argv => ['true'],
                                                 map { ("k$_" => $_) } 1 .. 2000 })],
                qr/unknown argument/, '2,000 unknown arguments');
tool_error_like([call($agent, $sid, 6, 'exec', { sandbox_id => $sb, cmd => ['true'] })],
                qr/unknown argument "cmd".*did you mean "argv"\?/,
                'cmd for argv: the argument meant');
tool_error_like([call($agent, $sid, 6, 'exec', { sandbox_id => $sb,
                                                 argv => ['sh', '-c', 'echo needs-a-human'],
                                                 approval_id => 42 })],
                qr/approval_id must be a string/, 'an approval_id that is a number');
tool_error_like([call($agent, $sid, 6, 'exec', { sandbox_id => $sb,
                                                 argv => ['sh', '-c', 'echo needs-a-human'],
                                                 approval_id => 'apr_zzz' })],
                qr/approval_invalid/, 'an approval_id that is no id');
tool_error_like([call($agent, $sid, 6, 'approval_status', { approval_id => 'apr_' . 'a' x 32 })],
                qr/not_found/, 'the status of an approval that does not exist');


# upload_archive: hostile content stops before the helper
tool_error_like([call($agent, $sid, 6, 'upload_archive', { sandbox_id => $sb,
                                                           content => '@@@ not base64' })],
                qr/not valid base64/, 'upload_archive: content that is not base64');
tool_error_like([call($agent, $sid, 6, 'upload_archive', { sandbox_id => $sb,
                                                           content => 42 })],
                qr/content is required/, 'upload_archive: content that is a number');
tool_error_like([call($agent, $sid, 6, 'upload_archive', { sandbox_id => $sb,
                                                           content => 'AAAA',
                                                           format => 'zip' })],
                qr/format must be/, 'upload_archive: an unknown format');
tool_error_like([call($agent, $sid, 6, 'upload_archive', { sandbox_id => $sb,
                                                           content => 'AAAA',
                                                           path => '../up' })],
                qr/path/, 'upload_archive: a path out of the workspace');
{
    # over the policy's archive_bytes (16384), within the message bound
    my $big = MIME::Base64::encode_base64(join('', map { chr(rand 256) } 1 .. 20000), '');
    @r = call($agent, $sid, 6, 'upload_archive', { sandbox_id => $sb, content => $big });
    tool_error_like(\@r, qr/archive_bytes \(16384\)/,
                    'upload_archive: an archive over archive_bytes');
    # over the message bound: refused before it is read
    $big = MIME::Base64::encode_base64('x' x ($MAX_BODY), '');
    rpc_error_is([call($agent, $sid, 6, 'upload_archive', { sandbox_id => $sb,
                                                            content => $big })],
                 413, -32000, 'upload_archive: a message over veto_sandbox_mcp_max_body');
}

# a progress token of the wrong type: a protocol error, before anything runs
for my $case ([{ progressToken => { a => 1 } }, 'an object'],
              [{ progressToken => [1] }, 'an array'],
              [{ progressToken => 1.5 }, 'a fraction'],
              [{ progressToken => JSON::PP::true }, 'a boolean'],
              [{ progressToken => 'p' x 300 }, 'a string of 300 bytes'],
              ['progress', '"_meta" a string']) {
    my ($meta, $what) = @$case;
    rpc_error_is([mcp($agent, { jsonrpc => '2.0', id => 11, method => 'tools/call',
                                params => { name => 'exec', _meta => $meta,
                                            arguments => { sandbox_id => $sb,
                                                           argv => ['touch', 'pwned'] } } },
                      in_session($sid))],
                 200, -32602, "a progress token that is $what", 11);
}

is(helper_work(), $work0, 'nothing of all that reached the helper');

# ---------------------------------------------------------------- the gate
my $rsid = session($reviewer);
tool_error_like([call($reviewer, $rsid, 7, 'exec', { sandbox_id => $sb,
                                                     argv => ['touch', 'pwned'] })],
                qr/insufficient_scope.*sandbox:exec/s, 'a token without the scope');
tool_error_like([call($agent, $sid, 7, 'create_sandbox', { limits => { memory_mb => 100000 } })],
                qr/memory_mb.*over_ceiling/s, 'over the policy\'s ceiling');
@r = call($agent, $sid, 7, 'exec', { sandbox_id => $sb,
                                     argv => ['sh', '-c', 'echo needs-a-human; touch pwned'] });
is($r[3]{result}{structuredContent}{status}, 'approval_required',
   'a call the policy gives to a human: approval required') or diag $r[2];
is(helper_work(), $work0, 'none of those reached the helper');

my $qsid = session($quota);
($st, $h, $b, $j) = $n->request(POST => '/v1/sandboxes', $quota, {});
my $qsb = $j->{id};
for my $i (1 .. 2) {
    @r = call($quota, $qsid, "q$i", 'exec', { sandbox_id => $qsb, argv => ['true'] });
    ok(!$r[3]{result}{isError}, "exec $i of 2 a minute runs") or diag $r[2];
}
my $work1 = helper_work();
is($work1, $work0 + 3, 'what the gate allowed reached the helper (a create, two '
                       . 'execs): the count sees it');
@r = call($quota, $qsid, 'q3', 'exec', { sandbox_id => $qsb, argv => ['true'] });
tool_error_like(\@r, qr/quota_exceeded.*Retry in \d+ s/s, 'over the exec quota');
ok(($r[3]{result}{structuredContent}{retry_after_s} // 0) > 0, '... saying when to retry');
ok(!exists $r[1]{'retry-after'}, '... in the result, not as an HTTP header');

$n->stop_redis;
@r = call($agent, $sid, 8, 'exec', { sandbox_id => $sb, argv => ['touch', 'pwned'] });
tool_error_like(\@r, qr/redis_unavailable.*nothing was allowed/s, 'Redis down');
@r = call($agent, $sid, 8, 'list_sandboxes');
tool_error_like(\@r, qr/redis_unavailable/, 'Redis down: even a list is refused (revocation)');
is(helper_work(), $work1, 'Redis down: nothing reached the helper');
$n->start_redis;
eventually('a list in the session succeeds again', 10, sub {
    @r = call($agent, $sid, 8, 'list_sandboxes');
    !$r[3]{result}{isError};
});
ok(!$r[3]{result}{isError}, 'Redis back: the session goes on') or diag $r[2];

# a token revoked while its session lives: HTTP 401, not a tool result
$n->redis->set("veto:{acme}:revoked:jti:h-agent-$$", 1, 'EX', 300);
@r = call($agent, $sid, 9, 'exec', { sandbox_id => $sb, argv => ['touch', 'pwned'] });
is($r[0], 401, 'a revoked token: 401');
like($r[1]{'www-authenticate'} // '', qr/invalid_token.*resource_metadata=/s,
     '... with the challenge and the metadata');
$n->redis->del("veto:{acme}:revoked:jti:h-agent-$$");
is(helper_work(), $work1, 'the revoked token reached nothing');

# ---------------------------------------------------------------- archives
# hostile archives reach tar, in the sandbox, which refuses them: a tool
# error naming the problem, and nothing lands outside the workspace
for my $case (qw(dotdot symlink hardlink)) {
    my $tar = `python3 t/lib/archives.py $case M$$ $d`;
    die "archives.py $case failed" if $?;
    @r = call($agent, $sid, 12, 'upload_archive',
              { sandbox_id => $sb, path => "in-$case",
                content => MIME::Base64::encode_base64($tar, '') });
    tool_error_like(\@r, qr/bad_archive/, "upload_archive: $case");
    like($r[3]{result}{content}[0]{text} // '', qr/tar said: .*tar: /s,
         "upload_archive: $case: says what tar refused, in tar's words");
}
@r = call($agent, $sid, 12, 'exec', { sandbox_id => $sb, argv => ['sh', '-c',
          'find / -xdev \\( -name "escape*M' . $$ . '*" -o -name "through-M' . $$
          . '*" -o -name "shadow-M' . $$ . '" \\) 2>/dev/null | grep -v "^/workspace/" | wc -l'] });
is($r[3]{result}{structuredContent}{stdout}, "0\n",
   'no member landed out of the workspace, in the sandbox') or diag $r[2];
is(`find $d -name '*M$$*' | wc -l` + 0, 0, '... nor on the host');

# ---------------------------------------------------------------- progress
# raw SSE: the notifications, then the result, on one stream
sub sse_events
{
    my ($body) = @_;
    return map { /^data: (.*)$/m ? $JSON->decode($1) : () } split /\n\n/, $body;
}
{
    my $body = { jsonrpc => '2.0', id => 'p1', method => 'tools/call',
                 params => { name => 'exec', _meta => { progressToken => 'tok-1' },
                             arguments => { sandbox_id => $sb,
                                            argv => ['sh', '-c', 'echo one; sleep 0.3; echo two'] } } };
    ($st, $h, $b) = mcp($agent, $body, in_session($sid));
    is($st, 200, 'progress: 200');
    like($h->{'content-type'} // '', qr{^text/event-stream}, 'progress: an SSE stream');
    my @ev = sse_events($b);
    my @notes = grep { ($_->{method} // '') eq 'notifications/progress' } @ev;
    is(scalar @notes, 2, 'progress: a notification per chunk') or diag $b;
    is_deeply([map { $_->{params}{progressToken} } @notes], ['tok-1', 'tok-1'],
              'progress: with the call\'s token');
    is(join('|', map { $_->{params}{message} } @notes), "stdout: one\n|stdout: two\n",
       'progress: carrying the output');
    is($ev[-1]{id}, 'p1', 'progress: the last event answers the call');
    is($ev[-1]{result}{structuredContent}{stdout}, "one\ntwo\n", '... with its result');

    # the same call accepting only JSON: answered as ever
    ($st, $h, $b, $j) = mcp($agent, $body, in_session($sid, Accept => 'application/json'));
    like($h->{'content-type'} // '', qr{^application/json}, 'no SSE accepted: JSON');
    is($j->{result}{structuredContent}{stdout}, "one\ntwo\n", '... the plain result');

    # an integer token; binary output as base64
    $body->{params}{_meta}{progressToken} = 7;
    $body->{params}{arguments}{argv} = ['printf', '\\377\\001'];
    ($st, $h, $b) = mcp($agent, $body, in_session($sid));
    @notes = grep { ($_->{method} // '') eq 'notifications/progress' } sse_events($b);
    is($notes[0]{params}{progressToken}, 7, 'progress: an integer token');
    is($notes[0]{params}{message}, 'stdout (base64): /wE=', 'progress: bytes as base64');
}

# a client gone mid-stream: the exec is killed, on record; the next calls
# are answered (the helper's connection was not kept half-read)
{
    my $sock = IO::Socket::INET->new(PeerAddr => '127.0.0.1', PeerPort => $n->port,
                                     Timeout => 10) or die "connect: $!";
    my $body = $JSON->encode({ jsonrpc => '2.0', id => 'g1', method => 'tools/call',
        params => { name => 'exec', _meta => { progressToken => 'g' },
                    arguments => { sandbox_id => $sb, argv => ['sh', '-c',
                        'echo started; while :; do date +%s%N > alive.new; '
                        . 'mv alive.new alive; sleep 0.05; done'] } } });
    print $sock "POST /v1/mcp HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer $agent\r\n"
        . "Content-Type: application/json\r\nAccept: application/json, text/event-stream\r\n"
        . "Mcp-Session-Id: $sid\r\nMCP-Protocol-Version: 2025-11-25\r\n"
        . "Content-Length: " . length($body) . "\r\n\r\n$body";
    my $got = '';
    my $until = time + 10;
    while ($got !~ /stdout: started/ && time < $until) {
        my $n_read = sysread($sock, $got, 4096, length $got);
        last unless $n_read;
    }
    like($got, qr/stdout: started/, 'client gone: its progress had begun');
    sleep 0.3;    # on purpose: progress over time
    close $sock;
    sleep 1;    # on purpose: progress over time
    @r = call($agent, $sid, 13, 'read_file', { sandbox_id => $sb, path => 'alive' });
    my $a1 = $r[3]{result}{structuredContent}{content};
    sleep 0.6;    # on purpose: progress over time
    @r = call($agent, $sid, 13, 'read_file', { sandbox_id => $sb, path => 'alive' });
    ok(length($a1 // ''), 'client gone: it had been writing');
    is($r[3]{result}{structuredContent}{content}, $a1,
       'client gone: the command is killed: nothing writes any more');
    my $auditor = $n->token(sub => 'auditor', scope => 'audit:read');
    ($st, $h, $b, $j) = $n->request(GET => '/v1/audit?agent=agent-1&limit=1000', $auditor);
    my ($rec) = grep { ($_->{reason} // '') eq 'client_gone' } @{ $j->{records} // [] };
    ok($rec && $rec->{action} eq 'sandbox.exec' && $rec->{detail}{killed}
       && $rec->{detail}{streamed}, 'client gone: on record, killed, streamed')
        or diag explain $rec;
    for my $i (1 .. 5) {
        @r = call($agent, $sid, "after-$i", 'exec', { sandbox_id => $sb,
                                                      argv => ['echo', "after $i"] });
        is($r[3]{result}{structuredContent}{stdout}, "after $i\n",
           "client gone: call $i after it answered");
    }
}
# what those reached of the helper is counted from here
$work1 = helper_work();

# ---------------------------------------------------------------- bounds
# per agent: the fourth session of one agent ends its least recently used
my $e = $n->token(sub => 'agent-e');
my @es = map { session($e) } 1 .. 4;
($st) = mcp($e, $ping, in_session($es[0]));
is($st, 404, 'per_agent=3: a fourth session ends the agent\'s oldest');
for my $i (1 .. 3) {
    ($st) = mcp($e, $ping, in_session($es[$i]));
    is($st, 200, "... session $i lives on");
}

# DELETE
($st) = mcp($agent, undef, {}, 'DELETE');
is($st, 400, 'DELETE without Mcp-Session-Id: 400');
($st) = mcp($tmp, undef, { 'Mcp-Session-Id' => $sid0618 }, 'DELETE');
is($st, 204, 'DELETE ends the session: 204');
($st) = mcp($tmp, undef, { 'Mcp-Session-Id' => $sid0618 }, 'DELETE');
is($st, 404, 'DELETE again: 404');

# max: the zone holds 24 sessions; the 25th is refused, not anyone's ended
my (@held, $refused);
for my $i (1 .. 40) {
    my $t = $n->token(sub => "filler-$i");
    my ($st, $h, $b, $j) = mcp($t, init_body());
    if ($st == 503) {
        $refused = [$st, $h, $b, $j, $t];
        last;
    }
    push @held, [$t, $h->{'mcp-session-id'}];
}
ok($refused, 'max=24: a session beyond it is refused');
is($refused->[3]{error}{code}, -32603, '... with a JSON-RPC error') if $refused;
ok(($refused->[1]{'retry-after'} // 0) > 0, '... and Retry-After') if $refused;
($st) = mcp($agent, $ping, in_session($sid));
is($st, 200, 'a full zone ends no live session');
($st) = mcp($held[0][0], undef, { 'Mcp-Session-Id' => $held[0][1] }, 'DELETE');
is($st, 204, 'one ends');
($st) = mcp($refused->[4], init_body());
is($st, 200, 'and a new one fits');

# ---------------------------------------------------------------- after
is(helper_work(), $work1, 'in the end the helper did only what the gate allowed');
my $auditor = $n->token(sub => 'auditor', scope => 'audit:read');
($st, $h, $b, $j) = $n->request(GET => '/v1/audit?agent=agent-2&limit=100', $auditor);
is(scalar(grep { $_->{outcome} ne 'denied' } @{ $j->{records} // [] }), 0,
   'agent-2, who held another agent\'s session id, has nothing on record but refusals');
my $log = substr($n->error_log, $log_start);
unlike($log, qr/\[(?:alert|crit|emerg)\]/, 'no alert in the error log');
unlike($log, qr/exited on signal/, 'no worker crashed');

done_testing;
