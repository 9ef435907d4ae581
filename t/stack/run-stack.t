#!/usr/bin/perl
# The README's first command: scripts/run-stack.sh, on free ports, a temp
# state dir and its own cgroup name (so it runs next to other tests),
# started as a user would.  It must answer with everything on: the API,
# egress (the helper runs the proxy), MCP initialize and tools/list with
# the token it printed, /metrics in the Prometheus text format, the
# approval page; a sandbox with network to the registry the policy it
# wrote allows, and an agent's own secret in it (credentials are on: the
# workload holds a placeholder);
# and, when this machine reaches the npm registry (checked
# with "npm ping" first; otherwise skipped, saying why), "npm install" of
# a tiny project inside that sandbox.  Then SIGTERM: the script exits, and
# no process, cgroup, mount or sandbox of it is left.  A second start with
# --no-egress --no-mcp --no-metrics --no-page answers with those parts
# off, and says so.
use strict;
use warnings;

use Test::More;
use File::Temp qw(tempdir);
use HTTP::Tiny;
use JSON::PP;
use POSIX qw(:sys_wait_h);
use Cwd qw(abs_path);
use File::Basename qw(dirname);
use lib 't/lib';
use Eventually qw(eventually);
use VetoNginx;

plan skip_all => 'run-stack.sh needs root' if $> != 0;

my $ROOT = abs_path(dirname(__FILE__) . '/../..');
my $JSON = JSON::PP->new->canonical;
my $ua = HTTP::Tiny->new(timeout => 30, keep_alive => 0);

# start(@args) -> { pid, dir, out, base, cgroup }: the script in its own
# session, its output in a file
sub start
{
    my (@args) = @_;
    my $dir = tempdir("veto-5a-$$-XXXXXX", TMPDIR => 1, CLEANUP => 1);
    chmod 0755, $dir;
    my $st = { dir => "$dir/state", out => "$dir/out",
               cgroup => "veto-5a-$$-" . int(rand(1e6)),
               port => VetoNginx::free_port() };
    $st->{base} = "http://127.0.0.1:$st->{port}";
    my $redis = VetoNginx::free_port();
    my $pid = fork() // die "fork: $!";
    if ($pid == 0) {
        POSIX::setsid();
        open(STDOUT, '>', $st->{out}) or die "$st->{out}: $!";
        open(STDERR, '>&', \*STDOUT) or die "dup: $!";
        open(STDIN, '<', '/dev/null') or die "/dev/null: $!";
        $ENV{VETO_STACK_DIR} = $st->{dir};
        $ENV{VETO_HTTP_PORT} = $st->{port};
        $ENV{VETO_REDIS_PORT} = $redis;
        $ENV{VETO_STACK_CGROUP} = $st->{cgroup};
        # the proxy's user: the tests' usual one, no user created here
        $ENV{VETO_EGRESS_USER} = 'nobody';
        exec('bash', "$ROOT/scripts/run-stack.sh", @args) or die "exec: $!";
    }
    $st->{pid} = $pid;
    # built already in CI (scripts/test.sh): a few seconds; from nothing
    # the build's minute
    eventually('run-stack.sh answers', 240, sub {
        my $o = slurp($st->{out});
        die "run-stack exited:\n$o" if waitpid($pid, WNOHANG) == $pid;
        $o =~ /^Veto Sandbox is running, started in \d+ s.*^Press Ctrl-C/ms;
    });
    $st->{text} = slurp($st->{out});
    return $st;
}

sub slurp
{
    my ($f) = @_;
    open(my $fh, '<', $f) or return '';
    local $/;
    return scalar <$fh>;
}

sub req
{
    my ($st, $method, $path, $token, $body, $hdr) = @_;
    my %h = %{ $hdr // {} };
    $h{Authorization} = "Bearer $token" if defined $token;
    if (ref $body) {
        $body = $JSON->encode($body);
        $h{'Content-Type'} //= 'application/json';
    }
    my $r = $ua->request($method, "$st->{base}$path",
                         { headers => \%h, defined $body ? (content => $body) : () });
    my $j = eval { JSON::PP->new->decode($r->{content}) };
    return ($r->{status}, $r->{headers}, $r->{content}, $j);
}

# stop(st): SIGTERM to the script; it exits, and nothing of it is left
sub stop_clean
{
    my ($st) = @_;
    my $nginx_pid = slurp("$st->{dir}/nginx/nginx.pid") =~ /(\d+)/ ? $1 : undef;
    kill 'TERM', $st->{pid};
    my $status;
    eventually('run-stack.sh exits on SIGTERM', 30, sub {
        waitpid($st->{pid}, WNOHANG) == $st->{pid} ? ($status = $?, 1)[1] : undef;
    });
    is($status >> 8, 143, 'it exits with 128 + SIGTERM') or diag slurp($st->{out});
    like(slurp($st->{out}), qr/run-stack: stopped/, 'it says it stopped');
    # no process of its session (nginx, helper, proxy, redis, sandboxes);
    # a child that exited just now and that init has not reaped yet (a
    # zombie: nothing runs) is given a moment
    my @left;
    my $session = sub {
        @left = grep {
            my @f = split ' ', slurp("/proc/$_/stat") =~ s/^.*\) //sr;
            defined $f[3] && $f[3] == $st->{pid}
        } grep { /^\d+$/ } map { s{^/proc/}{}r } glob('/proc/[0-9]*');
        return !@left;
    };
    eventually('no process of its session is left', 5, $session)
        or diag join("\n", map { "$_: " . (slurp("/proc/$_/stat") =~ s/\0/ /gr) } @left);
    my @in_cg = grep {
        index(slurp("/proc/$_/cgroup"), "/$st->{cgroup}") >= 0
    } grep { /^\d+$/ } map { s{^/proc/}{}r } glob('/proc/[0-9]*');
    is_deeply(\@in_cg, [], 'no process in its cgroups is left');
    ok(!$nginx_pid || !kill(0, $nginx_pid), 'nginx is gone');
    my @cg = grep { -e $_ } (glob("/sys/fs/cgroup/*/$st->{cgroup}"),
                             glob("/sys/fs/cgroup/$st->{cgroup}"));
    is_deeply(\@cg, [], 'no cgroup of its helper is left');
    my @mnt = grep { index($_, $st->{dir}) >= 0 } split /\n/, slurp('/proc/mounts');
    is_deeply(\@mnt, [], 'no mount under its state dir is left');
    my @sb = glob("$st->{dir}/helper/state/sb/*");
    is_deeply(\@sb, [], 'no sandbox is left in the helper\'s state');
}

# ---- everything on ---------------------------------------------------------
my $st = start();
my ($started) = $st->{text} =~ /started in (\d+) s/;
note("run-stack answered after $started s");
my %tok = slurp("$st->{dir}/env") =~ /^export (\w+)=(\S+)$/mg;
ok($tok{TOKEN} && $tok{REVIEWER} && $tok{AUDITOR}, 'it wrote the three tokens')
    or diag $st->{text};
like($st->{text}, qr/^export TOKEN='\Q$tok{TOKEN}\E'$/m, 'and printed them');
# the walkthrough: the seed's workflow, the approval story, MCP, metrics
for my $step (['/archive', 'an archive upload'], ['"npm","install"', 'npm install'],
              ['"git","diff"', 'the patch read back'], ['Veto-Approval: ', 'the approved repeat'],
              ['/review/#/approval/', 'the approval page'], ['tools/list', 'MCP'],
              ['/metrics', 'the metrics'], ['-X DELETE', 'the end of the sandbox']) {
    ok(index($st->{text}, $step->[0]) >= 0, "the walkthrough has $step->[1]");
}

my ($s, $h, $b, $j) = req($st, GET => '/v1/health');
is($s, 200, 'health answers');
is($j->{redis}, 'up', '... Redis up');
ok($j->{helper}{egress}{available}, '... egress available (the proxy runs)')
    or diag $b;
like($st->{text}, qr/^  secrets +agents' own, for api\.example\.com/m,
     'it says agents may bind their own secrets');

# the page
($s, $h, $b) = req($st, GET => '/review/');
is($s, 200, 'the approval page is served');
like($h->{'content-type'}, qr{^text/html}, '... as HTML');

# MCP with the printed token
my %mcp = ('Content-Type' => 'application/json',
           Accept => 'application/json, text/event-stream');
($s, $h, $b, $j) = req($st, POST => '/v1/mcp', $tok{TOKEN},
    $JSON->encode({ jsonrpc => '2.0', id => 1, method => 'initialize',
                    params => { protocolVersion => '2025-11-25', capabilities => {},
                                clientInfo => { name => 't5a', version => '1' } } }),
    \%mcp);
is($s, 200, 'MCP initialize') or diag $b;
my $session = $h->{'mcp-session-id'};
ok($session, '... opens a session');
is($j->{result}{serverInfo}{name} ? 1 : 0, 1, '... names the server');
($s, $h, $b, $j) = req($st, POST => '/v1/mcp', $tok{TOKEN},
    $JSON->encode({ jsonrpc => '2.0', id => 2, method => 'tools/list' }),
    { %mcp, 'Mcp-Session-Id' => $session, 'MCP-Protocol-Version' => '2025-11-25' });
is($s, 200, 'MCP tools/list') or diag $b;
my %tools = map { $_->{name} => 1 } @{ $j->{result}{tools} // [] };
ok($tools{create_sandbox} && $tools{exec} && $tools{allow_hosts},
   '... lists the tools, allow_hosts among them') or diag $b;

# metrics
($s, $h, $b) = req($st, GET => '/metrics');
is($s, 200, '/metrics answers');
like($h->{'content-type'}, qr{^text/plain; version=0\.0\.4}, '... Prometheus text');
like($b, qr/^# TYPE veto_sandbox_requests_total counter$/m, '... with the request counter');
like($b, qr/^veto_sandbox_requests_total\{route="mcp",/m, '... which counted MCP');

# the policy's allowlist: this machine's registries
my $policy = JSON::PP->new->decode(slurp("$st->{dir}/nginx/policy.json"));
my @allow = @{ $policy->{tenants}{demo}{network}{allow} // [] };
my $registry = `timeout 10 npm config get registry 2>/dev/null` // '';
chomp $registry;
my ($reg_host) = $registry =~ m{^https?://(?:[^@/]*@)?([^/]+)};
SKIP: {
    skip 'no registry configured on this machine (npm, apt): no allowlist', 1
        unless @allow;
    ok(!$reg_host || grep({ $_ eq $reg_host } @allow),
       "the allowlist holds npm's registry (@allow)");
}

my $sb;
SKIP: {
    skip 'no registry configured on this machine: no allowlist sandbox', 11
        unless @allow;
    my $host = $reg_host // $allow[0];
    ($s, $h, $b, $j) = req($st, POST => '/v1/sandboxes', $tok{TOKEN},
        { network => { allow => [$host] },
          limits => { memory_mb => 1024, disk_mb => 512 } });
    is($s, 201, "a sandbox with network to $host") or diag $b;
    is_deeply($j->{network}, { allow => [$host] }, '... an allowlist of it')
        or diag $b;
    $sb = $j->{id};

    # credentials are on: an agent's own secret for the demo's agent host
    ($s, $h, $b, $j) = req($st, PATCH => "/v1/sandboxes/$sb", $tok{TOKEN},
        { secret => { name => 'my-api', value => 'tok-run-stack-demo',
                      host => 'api.example.com', env => 'MY_API_TOKEN' } });
    is($s, 200, "an agent's own secret for api.example.com: 200") or diag $b;
    ($s, $h, $b, $j) = req($st, POST => "/v1/sandboxes/$sb/exec", $tok{TOKEN},
        { argv => ['sh', '-c', 'echo "$MY_API_TOKEN"'] });
    like($j->{stdout} // '', qr/^veto-cred-[0-9a-f]{32}$/,
         '... the workload holds a placeholder') or diag $b;
    unlike($b, qr/tok-run-stack-demo/, '... never the value');

    my $ping = $reg_host
        ? system("timeout 15 npm ping --registry '$registry' >/dev/null 2>&1") == 0
        : 0;
    skip($reg_host ? "the npm registry $registry does not answer npm ping here"
                   : 'npm is not installed', 6) unless $ping;

    ($s) = req($st, PUT => "/v1/sandboxes/$sb/files?path=package.json", $tok{TOKEN},
               '{"name":"t5a","version":"1.0.0","dependencies":{"is-number":"^7.0.0"}}');
    is($s, 200, 'a package.json in it');
    ($s, $h, $b, $j) = req($st, POST => "/v1/sandboxes/$sb/exec", $tok{TOKEN},
        { argv => ['npm', 'install', '--no-audit', '--no-fund', '--registry', $registry],
          timeout_s => 300 });
    is($s, 200, 'npm install runs') or diag $b;
    is($j->{exit_code}, 0, '... and succeeds') or diag $b;
    my @att = @{ $j->{network}{attempts} // [] };
    ok((grep { ($_->{host} // '') eq $reg_host && $_->{decision} eq 'allowed' } @att),
       '... through the proxy, to the registry') or diag explain \@att;
    ($s, $h, $b, $j) = req($st, POST => "/v1/sandboxes/$sb/exec", $tok{TOKEN},
        { argv => ['node', '-e', 'console.log(require("is-number")(5))'] });
    is($j->{exit_code}, 0, 'the installed package loads') or diag $b;
    is($j->{stdout}, "true\n", '... and works');
}

# a plain sandbox too, left running: SIGTERM must end it
($s, $h, $b, $j) = req($st, POST => '/v1/sandboxes', $tok{TOKEN}, {});
is($s, 201, 'a sandbox without network') or diag $b;
my $plain = $j->{id};
($s, $h, $b, $j) = req($st, POST => "/v1/sandboxes/$plain/exec", $tok{TOKEN},
    { argv => ['sleep', '60'], background => JSON::PP::true });
ok($s == 200 || $s == 202 && !$j->{approval_id}, 'a background exec runs in it')
    or diag $b;

stop_clean($st);

# ---- everything that can be off, off ---------------------------------------
$st = start('--no-egress', '--no-mcp', '--no-metrics', '--no-page');
like($st->{text}, qr/^  mcp +off \(--no-mcp\)$/m, 'it says MCP is off');
like($st->{text}, qr/^  egress +off \(--no-egress\)$/m, '... and egress');
unlike($st->{text}, qr/tools\/list|\/metrics \|/, 'the walkthrough leaves them out');
($s, $h, $b, $j) = req($st, GET => '/v1/health');
is($s, 200, 'it answers');
is($j->{helper}{egress}{state}, 'off', '... egress off in the helper');
($s) = req($st, GET => '/metrics');
is($s, 404, 'no /metrics');
($s) = req($st, GET => '/review/');
is($s, 404, 'no approval page');
my %tok2 = slurp("$st->{dir}/env") =~ /^export (\w+)=(\S+)$/mg;
($s, $h, $b, $j) = req($st, POST => '/v1/mcp', $tok2{TOKEN}, '{}', \%mcp);
is($s, 404, 'no /v1/mcp');
like($j->{detail} // '', qr/MCP endpoint is not enabled/, '... saying it is off')
    or diag $b;
stop_clean($st);

done_testing();
