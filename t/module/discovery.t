#!/usr/bin/perl
# Discovery through the gateway: what a caller actually gets on this
# host, on a real stack (nginx with the module, Redis, the helper with an
# image profile built here with umoci, as t/images/profile.t makes one).
#
# GET /v1/profiles lists the helper's profiles the caller's policy allows
# (another agent's profiles are not even named), marks the caller's
# default and what needs a human; a create names the image's digest in
# its reply and its audit record; an image removed from the store answers
# 409 profile_unavailable, naming the profile and the digest.  MCP's
# list_profiles is the same list, describe_isolation the same layers.
#
# GET /v1/about names the isolation layers in force, each held against
# what this host really has: the namespaces a workload runs in (its
# /proc/self/ns against ours), the cgroup version (/sys/fs/cgroup, and the
# sandbox's memory limit in that hierarchy), seccomp (the workload's
# /proc/self/status), the Landlock ABI (the kernel's own answer), the
# network modes (allowlist only while the egress proxy serves: a second
# stack with egress on), the helper's ceilings and the caller's policy.
# It needs a token (any scope); /v1/health keeps its public answer and
# shows no profiles nor ceilings.

use strict;
use warnings;

use Test::More;
use HTTP::Tiny;
use JSON::PP ();
use Time::HiRes qw(sleep);
use lib 't/lib';
use VetoEgress;
use VetoImage;
use VetoNginx;
use VetoTest;
use Eventually qw(eventually);

VetoNginx::need(qw(helper redis));

my $JSON = JSON::PP->new->utf8(1)->canonical(1);

# ---- two images: "mark" stays, "gone" is removed while the helper runs

my $s = VetoImage->new;
my %root = VetoImage::dash_root();
my $marker = 'veto-discovery-' . VetoTest::random_hex(8);
my $lay = $s->umoci_image({ %root, '/etc/veto-marker' => "$marker\n" });
my ($rc, $meta, $err) = $s->import_json('--description', 'discovery marker',
                                        $lay->{dir}, $lay->{digest});
is($rc, 0, 'the image of profile "mark" imports') or diag $err;
my $mark = $lay->{digest};

my $lay2 = $s->umoci_image({ %root, '/etc/veto-marker' => "gone\n" });
($rc, $meta, $err) = $s->import_json($lay2->{dir}, $lay2->{digest});
is($rc, 0, 'the image of profile "gone" imports') or diag $err;
my $gone = $lay2->{digest};
isnt($gone, $mark, 'two images, two digests');

# ---- the stack

my $policy = {
    version => 1,
    tenants => {
        acme => {
            profiles => ['default', 'mark', 'gone'],
            ceilings => { memory_mb => 256, timeout_s => 30, ttl_s => 3600 },
            defaults => { memory_mb => 128 },
            approvals => {},
            agents => {
                # may use the host's profile only: sees nothing else
                'agent-host' => { profiles => ['default'] },
                # the image by default, and nothing else
                'agent-img' => { profiles => ['mark'],
                                 default_profile => 'mark',
                                 ceilings => { memory_mb => 64 },
                                 defaults => { memory_mb => 32 } },
                # the image only with a human's approval
                'agent-ask' => { approvals => { profiles => ['mark'] } },
            },
        },
        # no "profiles": any
        globex => { ceilings => { memory_mb => 512, timeout_s => 30 } },
    },
};

my $n = VetoNginx->new;
$n->start_redis;
my $h = $n->start_helper(image_store => $s->store,
                         image_profile => [ "mark $mark", "gone $gone" ]);
$n->start(redis => 1, policy => $policy,
          veto => $n->default_veto
                  . "        veto_sandbox_mcp on;\n"
                  . "        veto_sandbox_mcp_sessions zone=veto_mcp:1m;\n");
eventually('Redis is up', 10, sub {
    my (undef, undef, undef, $j) = $n->request(GET => '/v1/health');
    ($j->{redis} // '') eq 'up';
});

my $agent = $n->token(sub => 'agent-1');
my $host_only = $n->token(sub => 'agent-host');
my $img = $n->token(sub => 'agent-img');
my $ask = $n->token(sub => 'agent-ask');
my $globex = $n->token(sub => 'agent-g', tenant => 'globex');
my $exec_only = $n->token(sub => 'agent-1', scope => 'sandbox:exec');
my $reviewer = $n->token(sub => 'human-1', scope => 'approvals:review');
my $auditor = $n->token(sub => 'auditor-1', scope => 'audit:read');
my $revoked = $n->token(sub => 'agent-1', jti => "discovery-$$");

my ($st, $hd, $b, $j);

sub names { [ map { $_->{name} } @{ $_[0]{profiles} // [] } ] }
sub by_name { +{ map { $_->{name} => $_ } @{ $_[0]{profiles} // [] } } }

# ---- GET /v1/profiles: filtered by policy --------------------------------

($st, $hd, $b, $j) = $n->request(GET => '/v1/profiles', $agent);
is($st, 200, 'profiles: 200') or diag $b;
is_deeply([ sort @{ names($j) } ], [qw(default gone mark)],
          'agent-1 sees the three its policy allows');
my $p = by_name($j);
is($p->{mark}{kind}, 'image', 'mark is an image');
is($p->{mark}{digest}, $mark, '... with its digest');
is($p->{mark}{description}, 'discovery marker', '... its description');
ok($p->{mark}{available}, '... available');
ok(!$p->{mark}{default} && !$p->{mark}{needs_approval},
   '... not the default, no approval needed');
is($p->{default}{kind}, 'directory', 'default is the host\'s directory');
ok(exists $p->{default}{digest} && !defined $p->{default}{digest},
   '... with no digest');
ok($p->{default}{default}, '... and is agent-1\'s default');
is(ref $p->{default}{tools}, 'HASH', '... with its tool versions');
like($p->{default}{tools}{libc6} // '', qr/^\d/, '... libc6 among them');
is($p->{default}{os_release}{id}, 'debian', '... and its os-release');
is($j->{default_profile}, 'default', 'the response names the default');
is($j->{default}, $j->{default_profile},
   '... and its deprecated old name the same');

($st, $hd, $b, $j) = $n->request(GET => '/v1/profiles', $host_only);
is($st, 200, 'agent-host: 200');
is_deeply(names($j), ['default'], 'agent-host sees only the host profile');
unlike($b, qr/\Q$mark\E|\Q$gone\E|"mark"|"gone"|discovery marker/,
       '... and nothing of the images: not a name, digest or description');

($st, $hd, $b, $j) = $n->request(GET => '/v1/profiles', $img);
is_deeply(names($j), ['mark'], 'agent-img sees only its image');
ok(by_name($j)->{mark}{default}, '... which is its default');
is($j->{default}, 'mark', '... and the response says so');

($st, $hd, $b, $j) = $n->request(GET => '/v1/profiles', $ask);
ok(by_name($j)->{mark}{needs_approval}, 'agent-ask: mark needs a human');
ok(!by_name($j)->{default}{needs_approval}, '... default does not');

($st, $hd, $b, $j) = $n->request(GET => '/v1/profiles', $globex);
is_deeply([ sort @{ names($j) } ], [qw(default gone mark)],
          'a tenant without "profiles" sees every profile');

($st, $hd, $b, $j) = $n->request(GET => '/v1/profiles', $exec_only);
is($st, 200, 'any sandbox scope reads the profiles (sandbox:exec)');
($st, $hd, $b, $j) = $n->request(GET => '/v1/profiles', $reviewer);
is($st, 403, 'a reviewer\'s token does not');
is($j->{type}, 'urn:veto-sandbox:problem:insufficient_scope', '... scope');
($st) = $n->request(GET => '/v1/profiles');
is($st, 401, 'no token: 401');
($st) = $n->request(POST => '/v1/profiles', $agent);
is($st, 405, 'POST /v1/profiles: 405');

# ---- the create names the digest; so does its audit record ---------------

($st, $hd, $b, $j) = $n->request(POST => '/v1/sandboxes', $agent,
                                 { profile => 'mark', ttl_s => 300 });
is($st, 201, 'create with profile mark') or diag $b;
my $sb_img = $j->{id};
is($j->{profile}, 'mark', '... profile mark');
is($j->{profile_digest}, $mark, '... the reply names the image\'s digest');
($st, $hd, $b, $j) = $n->request(POST => "/v1/sandboxes/$sb_img/exec", $agent,
                                 { argv => ['/bin/sh', '-c',
                                            'read l < /etc/veto-marker; '
                                            . 'echo "$l"'] });
is($j->{stdout}, "$marker\n", '... and runs in that image') or diag $b;

($st, $hd, $b, $j) = $n->request(POST => '/v1/sandboxes', $agent,
                                 { ttl_s => 300 });
is($st, 201, 'create with the default profile') or diag $b;
my $sb_def = $j->{id};
ok(exists $j->{profile_digest} && !defined $j->{profile_digest},
   '... profile_digest null: a directory profile');

($st, $hd, $b, $j) = $n->request(POST => '/v1/sandboxes', $img,
                                 { ttl_s => 300 });
is($st, 201, 'agent-img: a create without profile') or diag $b;
my $sb_img2 = $j->{id};
is($j->{profile}, 'mark', '... gets its default, mark');
is($j->{profile_digest}, $mark, '... and names the digest');

($st, $hd, $b, $j) = $n->request(POST => '/v1/sandboxes', $host_only,
                                 { profile => 'mark' });
is($st, 403, 'agent-host may not create the image it cannot see');
is($j->{type}, 'urn:veto-sandbox:problem:profile_not_allowed', '... why');
# a name no host profile has is not the policy's matter: 404, with the
# profiles this caller may use (the helper's, narrowed by the policy)
($st, $hd, $b, $j) = $n->request(POST => '/v1/sandboxes', $host_only,
                                 { profile => 'marc' });
is($st, 404, 'a profile the host does not have: 404') or diag $b;
is($j->{type}, 'urn:veto-sandbox:problem:unknown_profile', '... unknown_profile');
is_deeply($j->{profiles}, ['default'], '... naming the profiles agent-host may use');
($st, $hd, $b, $j) = $n->request(POST => '/v1/sandboxes', $agent,
                                 { profile => 'marc' });
is_deeply([sort @{ $j->{profiles} // [] }], ['default', 'gone', 'mark'],
          '... and those agent-1 may use') or diag $b;

sub audit
{
    my ($st2, undef, $b2, $j2) = $n->request(GET => '/v1/audit?limit=1000',
                                             $auditor);
    is($st2, 200, 'the auditor reads the audit') or diag $b2;
    return @{ $j2->{records} // [] };
}

sub created_detail
{
    my ($id, @recs) = @_;
    my ($r) = grep { $_->{outcome} eq 'sandbox_created'
                     && ($_->{sandbox} // '') eq $id } @recs;
    # the audit API gives a detail as the object it is
    return ref $r->{detail} eq 'HASH' ? $r->{detail} : {};
}

my @recs = audit();
is(created_detail($sb_img, @recs)->{profile_digest}, $mark,
   'the sandbox_created record names the digest');
is(created_detail($sb_img2, @recs)->{profile_digest}, $mark,
   '... for a default image profile too');
my $dd = created_detail($sb_def, @recs);
is($dd->{profile}, 'default', 'the default sandbox\'s record');
ok(exists $dd->{profile_digest} && !defined $dd->{profile_digest},
   '... has profile_digest null');

# ---- GET /v1/about: the layers in force, against the host's own facts -----

my $ping = $h->ping;

($st, $hd, $b, $j) = $n->request(GET => '/v1/about', $agent);
is($st, 200, 'about: 200') or diag $b;
my $about = $j;
my $iso = $about->{isolation} // {};

# namespaces: those whose /proc/self/ns link differs in a workload from
# ours are the workload's own; "time" is the one it shares.
my %kname = (user => 'user', pid => 'pid', mnt => 'mount', net => 'network',
             ipc => 'ipc', uts => 'uts', cgroup => 'cgroup', time => 'time');
my %ours = map { $_ => readlink("/proc/self/ns/$_") } keys %kname;
($st, $hd, $b, $j) = $n->request(POST => "/v1/sandboxes/$sb_def/exec", $agent,
    { argv => ['sh', '-c', 'for n in ' . join(' ', sort keys %kname)
                           . '; do echo "$n $(readlink /proc/self/ns/$n)"; '
                           . 'done; grep -E "^(Seccomp|NoNewPrivs):" '
                           . '/proc/self/status'] });
is($st, 200, 'a workload reads its namespaces and its status') or diag $b;
my %theirs = $j->{stdout} =~ /^(\w+) (\S+:\[\d+\])$/mg;
is(scalar keys %theirs, scalar keys %kname, 'every link read') or diag $b;
my @own = sort map { $kname{$_} } grep { $theirs{$_} ne $ours{$_} } keys %kname;
is_deeply([ sort @{ $iso->{namespaces} // [] } ], \@own,
          'about names exactly the namespaces a workload has of its own: '
          . join(',', @own));
ok(!grep({ $_ eq 'time' } @{ $iso->{namespaces} // [] }),
   '... not time, which it shares');

# seccomp: a filter is installed, with no_new_privs
is($iso->{seccomp}, 'allowlist', 'about: seccomp allowlist');
like($j->{stdout}, qr/^Seccomp:\s+2$/m, '... and the workload is filtered');
like($j->{stdout}, qr/^NoNewPrivs:\s+1$/m, '... with no_new_privs');

# cgroup: the version the host mounts, and the sandbox's memory limit in it
my $v2 = -e '/sys/fs/cgroup/cgroup.controllers';
is($iso->{cgroup}, $v2 ? 'v2' : 'v1',
   'about: cgroup ' . ($v2 ? 'v2 (pure v2 host)' : 'v1 (hybrid host)'));
my $mem_root = $v2 ? '/sys/fs/cgroup' : '/sys/fs/cgroup/memory';
my ($cg) = split /\n/, `find $mem_root -maxdepth 8 -type d -name $sb_def 2>/dev/null`;
ok($cg, "the sandbox's cgroup is in the $iso->{cgroup} hierarchy ($mem_root)")
    or diag "no $sb_def under $mem_root";
my $limit = VetoNginx::slurp("$cg/" . ($v2 ? 'memory.max' : 'memory.limit_in_bytes'));
chomp $limit;
is($limit, 128 * 1024 * 1024, '... holding its memory limit');

# Landlock: the kernel's own answer (landlock_create_ruleset(NULL, 0,
# VERSION)), up to the ABI the helper was reviewed for (7, as
# t/helper/landlock.t)
my $kabi = syscall(444, 0, 0, 1);
$kabi = 0 if $kabi < 0;
is($iso->{landlock_abi}, $kabi > 7 ? 7 : $kabi,
   "about: the Landlock ABI in use (kernel's: $kabi)");

# network: no egress proxy on this helper
is_deeply($about->{network}{modes}, ['none'], 'about: network "none" only');
is_deeply($about->{network}{egress},
          { available => JSON::PP::false, state => 'off' },
          '... egress off');

# the helper, as its ping says
is($about->{helper}{epoch}, $ping->{epoch}, 'about: the helper\'s epoch');
is($about->{helper}{version}, $ping->{version}, '... its protocol version');
is_deeply($about->{limits}{helper}, $ping->{limits_max},
          'about: limits.helper are the helper\'s ceilings');
is($about->{limits}{helper}{memory_mb}, $h->cf('max_memory_mb'),
   '... as configured (max_memory_mb ' . $h->cf('max_memory_mb') . ')');
is_deeply($about->{limits}{policy},
          { memory_mb => 256, timeout_s => 30, ttl_s => 3600 },
          '... limits.policy: the caller\'s ceilings');

# profiles: the caller's, in short
is_deeply([ sort @{ names($about) } ], [qw(default gone mark)],
          'about: agent-1\'s profiles');
is(by_name($about)->{mark}{digest}, $mark, '... with the digest');
ok(!exists by_name($about)->{mark}{tools}, '... in short (no tools)');
is($about->{default_profile}, 'default', '... and its default');

($st, $hd, $b, $j) = $n->request(GET => '/v1/about', $host_only);
is_deeply(names($j), ['default'], 'about for agent-host: only its profile');
unlike($b, qr/\Q$mark\E|"mark"/, '... nothing of the image');
($st, $hd, $b, $j) = $n->request(GET => '/v1/about', $img);
is($j->{default_profile}, 'mark', 'about for agent-img: its default, mark');
is_deeply($j->{limits}{policy}{memory_mb}, 64, '... its own ceiling');

# who may read it
for my $c ([$reviewer, 'a reviewer'], [$auditor, 'an auditor'],
           [$exec_only, 'sandbox:exec alone'])
{
    ($st, $hd, $b, $j) = $n->request(GET => '/v1/about', $c->[0]);
    is($st, 200, "about: $c->[1] reads it") or diag $b;
    is_deeply($j->{isolation}, $iso, '... the same layers');
}
($st, $hd, $b, $j) = $n->request(GET => '/v1/about');
is($st, 401, 'about without a token: 401');
is($j->{type}, 'urn:veto-sandbox:problem:unauthorized', '... problem+json')
    or diag $b;
unlike($b, qr/landlock|cgroup|namespaces/, '... naming no layer');
($st) = $n->request(GET => '/v1/about', $agent . 'x');
is($st, 401, 'a bad token: 401');
($st) = $n->request(HEAD => '/v1/about', $agent);
is($st, 200, 'HEAD /v1/about: 200');
($st) = $n->request(DELETE => '/v1/about', $agent);
is($st, 405, 'DELETE /v1/about: 405');

# the gate applies: a revoked token reads nothing
($st) = $n->request(GET => '/v1/about', $revoked);
is($st, 200, 'a token about to be revoked reads it');
$n->redis->set("veto:{acme}:revoked:jti:discovery-$$", 1, 'EX', 600);
($st, $hd, $b, $j) = $n->request(GET => '/v1/about', $revoked);
is($st, 401, 'once revoked: 401') or diag $b;

# /v1/health stays public, and shows neither profiles nor ceilings
($st, $hd, $b, $j) = $n->request(GET => '/v1/health');
is($st, 200, 'health: public');
ok(!exists $j->{helper}{profiles}, 'health: no profiles');
ok(!exists $j->{helper}{limits_max}, 'health: no ceilings');
unlike($b, qr/\Q$mark\E/, 'health: no digest');

# ---- MCP: list_profiles is the same list ----------------------------------

sub mcp
{
    my ($token, $body, $sid) = @_;
    my %hh = ('Content-Type' => 'application/json',
              Accept => 'application/json, text/event-stream',
              Authorization => "Bearer $token");
    if ($sid) {
        $hh{'Mcp-Session-Id'} = $sid;
        $hh{'MCP-Protocol-Version'} = '2025-11-25';
    }
    my $res = HTTP::Tiny->new(timeout => 60, keep_alive => 0)->request(
        'POST', $n->url('/v1/mcp'),
        { headers => \%hh, content => $JSON->encode($body) });
    return ($res->{status}, $res->{headers},
            eval { $JSON->decode($res->{content}) });
}

sub mcp_session
{
    my ($token) = @_;
    my ($s1, $h1) = mcp($token, { jsonrpc => '2.0', id => 1,
        method => 'initialize',
        params => { protocolVersion => '2025-11-25', capabilities => {},
                    clientInfo => { name => 't58', version => '1' } } });
    is($s1, 200, 'MCP initialize');
    my $sid = $h1->{'mcp-session-id'};
    mcp($token, { jsonrpc => '2.0', method => 'notifications/initialized' },
        $sid);
    return $sid;
}

my $sid = mcp_session($agent);
my (undef, undef, $tl) = mcp($agent, { jsonrpc => '2.0', id => 2,
                                       method => 'tools/list' }, $sid);
my ($tool) = grep { $_->{name} eq 'list_profiles' } @{ $tl->{result}{tools} // [] };
ok($tool, 'tools/list has list_profiles');
ok($tool->{annotations}{readOnlyHint}, '... read-only');
($tool) = grep { $_->{name} eq 'describe_isolation' } @{ $tl->{result}{tools} // [] };
ok($tool, 'tools/list has describe_isolation');
ok($tool->{annotations}{readOnlyHint}, '... read-only');

my (undef, undef, $r) = mcp($agent, { jsonrpc => '2.0', id => 3,
    method => 'tools/call', params => { name => 'list_profiles' } }, $sid);
ok(!$r->{result}{isError}, 'list_profiles: no error') or diag explain $r;
is_deeply([ sort @{ names($r->{result}{structuredContent}) } ],
          [qw(default gone mark)], '... the same profiles as REST');
my $text = $r->{result}{content}[0]{text} // '';
like($text, qr/\Q$mark\E/, '... the text names the digest');
like($text, qr/default \(directory\), the default/, '... and the default');

(undef, undef, $r) = mcp($agent, { jsonrpc => '2.0', id => 4,
    method => 'tools/call',
    params => { name => 'list_profiles', arguments => { x => 1 } } }, $sid);
ok($r->{result}{isError}, 'list_profiles with an argument: a tool error');
like($r->{result}{content}[0]{text} // '', qr/takes no arguments/, '... saying so');

(undef, undef, $r) = mcp($agent, { jsonrpc => '2.0', id => 7,
    method => 'tools/call', params => { name => 'describe_isolation' } }, $sid);
ok(!$r->{result}{isError}, 'describe_isolation: no error') or diag explain $r;
is_deeply($r->{result}{structuredContent}{isolation}, $iso,
          '... the same layers as GET /v1/about');
$text = $r->{result}{content}[0]{text} // '';
like($text, qr/namespaces of its own: user, pid, mount, ipc, uts, network, cgroup/,
     '... the text names the namespaces');
like($text, qr/cgroup $iso->{cgroup} limits/, '... the cgroup version');
like($text, qr/Landlock \(ABI $iso->{landlock_abi}\)/, '... the Landlock ABI');
like($text, qr/Network: none \(/, '... the network modes');
like($text, qr/does not promise: a sandbox shares the host's kernel/,
     '... and what it does not promise');
(undef, undef, $r) = mcp($agent, { jsonrpc => '2.0', id => 8,
    method => 'tools/call', params => { name => 'describe_isolation',
                                        arguments => { verbose => 1 } } }, $sid);
ok($r->{result}{isError}, 'describe_isolation with an argument: a tool error');
like($r->{result}{content}[0]{text} // '', qr/takes no arguments/, '... saying so');
my $rsid = mcp_session($reviewer);
(undef, undef, $r) = mcp($reviewer, { jsonrpc => '2.0', id => 9,
    method => 'tools/call', params => { name => 'describe_isolation' } }, $rsid);
ok(!$r->{result}{isError}, 'describe_isolation for a reviewer (any scope)')
    or diag explain $r;
is_deeply($r->{result}{structuredContent}{isolation}, $iso, '... the same layers');

my $sid2 = mcp_session($host_only);
(undef, undef, $r) = mcp($host_only, { jsonrpc => '2.0', id => 5,
    method => 'tools/call', params => { name => 'list_profiles' } }, $sid2);
is_deeply(names($r->{result}{structuredContent}), ['default'],
          'list_profiles for agent-host: only its profile');
unlike($JSON->encode($r), qr/\Q$mark\E/, '... nothing of the image');

# ---- the image removed: available false, creates answer 409 ---------------

for my $id ($sb_img, $sb_img2, $sb_def) {
    ($st) = $n->request(DELETE => "/v1/sandboxes/$id",
                        $id eq $sb_img2 ? $img : $agent);
    is($st, 200, "delete $id");
}
my ($rrc, $rout, $rerr) = $s->ctl('remove', $gone);
is($rrc, 0, 'the image of "gone" is removed from the store') or diag $rerr;

($st, $hd, $b, $j) = $n->request(GET => '/v1/profiles', $agent);
ok(!by_name($j)->{gone}{available}, 'profiles: gone is not available');
ok(by_name($j)->{mark}{available}, '... mark still is');
($st, $hd, $b, $j) = $n->request(GET => '/v1/about', $agent);
ok(!by_name($j)->{gone}{available}, 'about says so too');

($st, $hd, $b, $j) = $n->request(POST => '/v1/sandboxes', $agent,
                                 { profile => 'gone', ttl_s => 300 });
is($st, 409, 'a create of the removed image: 409') or diag $b;
like($hd->{'content-type'} // '', qr{^application/problem\+json}, '... problem+json');
is($j->{type}, 'urn:veto-sandbox:problem:profile_unavailable', '... its type');
is($j->{field}, 'profile', '... naming the field');
is($j->{profile}, 'gone', '... the profile');
is($j->{digest}, $gone, '... and the digest');
like($j->{detail} // '', qr/choose another profile.*available/,
     '... telling the agent what to do');
unlike($j->{detail} // '', qr{/tmp|store/|sandbox-imagectl},
       '... without the store\'s path or the operator\'s command');
ok(!exists $hd->{'retry-after'}, '... and no Retry-After: waiting does not help');
like($n->error_log, qr/a create of profile "gone" failed: .*not in the store/,
     'the helper\'s detail is in the error log, for the operator');

(undef, undef, $r) = mcp($agent, { jsonrpc => '2.0', id => 6,
    method => 'tools/call',
    params => { name => 'create_sandbox',
                arguments => { profile => 'gone' } } }, $sid);
ok($r->{result}{isError}, 'MCP create_sandbox of it: a tool error');
like($r->{result}{content}[0]{text} // '', qr/list_profiles/,
     '... pointing to list_profiles');

@recs = audit();
ok((grep { $_->{outcome} eq 'error'
           && ($_->{reason} // '') eq 'profile_unavailable' } @recs),
   'the refused create is on record as profile_unavailable');

($st, $hd, $b, $j) = $n->request(POST => '/v1/sandboxes', $agent,
                                 { profile => 'mark', ttl_s => 300 });
is($st, 201, 'another profile still works') or diag $b;
($st) = $n->request(DELETE => "/v1/sandboxes/$j->{id}", $agent);
is($st, 200, '... deleted');

$h->leaks_ok('after discovery');
$n->stop;
is($h->stop, 0, 'the helper stops cleanly');

# ---- egress on: "allowlist" is a mode while the proxy serves --------------

my $e = VetoEgress->start(helper => 1);
my $n2 = VetoNginx->new;
$n2->start_redis;
$n2->start_helper($e->helper_conf);
$n2->start(redis => 1, policy => $policy);
my $up;
eventually('Redis is up and egress available', 10, sub {
    (undef, undef, undef, $j) = $n2->request(GET => '/v1/health');
    ($up = $j->{egress}{available} && ($j->{redis} // '') eq 'up');
});
ok($up, 'a stack with egress on: the proxy serves');
($st, $hd, $b, $j) = $n2->request(GET => '/v1/about', $n2->token);
is($st, 200, 'about') or diag $b;
is_deeply($j->{network}{modes}, ['none', 'allowlist'],
          'about: network "none" and "allowlist"');
is_deeply($j->{network}{egress},
          { available => JSON::PP::true, state => 'up' }, '... egress up');
is_deeply([ sort @{ names($j) } ], ['default'],
          '... and only the host profile on this helper');
$n2->stop;
is($n2->helper->stop, 0, 'that helper stops cleanly');

done_testing;
