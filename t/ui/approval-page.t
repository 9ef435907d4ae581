#!/usr/bin/perl
# The approval page (approval-page/) in a real browser against the real
# stack: nginx serving the page with the location block of
# conf/nginx-veto.conf.example, the module, Redis and the helper, all
# private to this test.  This file checks the page's HTTP headers and
# files, sets the scene (sandboxes, approvals made through the API, and
# records seeded in Redis for summary fields the module does not produce
# yet), then runs t/browser/approval-page.test.mjs (playwright-core
# driving Debian's chromium, headless) and turns each of its results into
# a test here.  Afterwards it checks on the server what the page did.
#
# Screenshots of the list and the detail view (laptop and phone width)
# go to the instance's temp dir (kept with VETO_KEEP=1), and are copied
# to $VETO_SCREENSHOTS when that is set (how docs/img/ is refreshed).

use strict;
use warnings;

use Test::More;
use Digest::SHA ();
use File::Copy ();
use HTTP::Tiny;
use JSON::PP ();
use lib 't/lib';
use VetoNginx;
use VetoNode;
use VetoRedisTest qw(run_script);
use Eventually qw(eventually);
use Time::HiRes qw(sleep time);

VetoNginx::need(qw(helper redis));

my $ROOT = $VetoNginx::ROOT;
my $BROWSER_DIR = "$ROOT/t/browser";
my $CHROMIUM = $ENV{VETO_CHROMIUM} // '/usr/bin/chromium';

# A test that cannot run fails: no browser, no node, no test tooling.
die "chromium is not installed ($CHROMIUM): run scripts/install-deps.sh\n"
    unless -x $CHROMIUM;
VetoNode::need($BROWSER_DIR, 'playwright-core');

my $JSON = JSON::PP->new->utf8(1)->canonical(1);

# ---------------------------------------------------------------- files
# What the page is made of: no inline script, no handler attributes, no
# markup sinks, nothing from another origin.
{
    my @files = glob("$ROOT/approval-page/*.html $ROOT/approval-page/*.css "
                     . "$ROOT/approval-page/js/*.js");
    ok(@files >= 5, 'the page\'s files: ' . scalar @files);
    for my $f (@files) {
        my $src = VetoNginx::slurp($f);
        (my $name = $f) =~ s{^\Q$ROOT\E/}{};
        my $code = $src;
        if ($f =~ /\.js$/) {
            $code =~ s{/\*.*?\*/}{}gs;
            $code =~ s{(^|\s)//[^\n]*}{$1}g;
            unlike($code, qr/\b(?:innerHTML|outerHTML|insertAdjacentHTML|document\.write|srcdoc)\b|\beval\s*\(|\bnew\s+Function\b|\bset(?:Timeout|Interval)\s*\(\s*['"`]/,
                   "$name: no markup sink, eval or string timer");
            unlike($code, qr/\bhref\b|\.src\s*=|\bconsole\.(?:log|info|debug)\b/,
                   "$name: no href/src assignment, no console logging");
        }
        if ($f =~ /\.html$/) {
            unlike($src, qr/<script(?![^>]*\bsrc=)[^>]*>/i, "$name: no inline script");
            unlike($src, qr/\son[a-z]+\s*=/i, "$name: no handler attributes");
            unlike($src, qr/\sstyle\s*=/i, "$name: no inline style");
        }
        if ($f =~ /\.css$/) {
            unlike($src, qr/\burl\s*\(|\@import/i, "$name: loads nothing");
        }
        unlike($src, qr{(?:https?:)?//[a-z0-9.-]+\.[a-z]{2,}/}i,
               "$name: no third-party origin");
    }
}

# ---------------------------------------------------------------- stack
my $policy = {
    version => 1,
    tenants => {
        acme => {
            ceilings => { memory_mb => 512, timeout_s => 30, ttl_s => 3600 },
            approvals => { exec_argv => ['sh -c *', 'git push*'],
                           export => JSON::PP::true, ttl_s => 900 },
            # hosts a human may add to a sandbox: a long list of them
            network => { ask => ['*.askable.test'] },
            agents => {
                # approvals that expire while the reviewer looks at them
                'agent-fast' => { approvals => { exec_argv => ['sh -c *'],
                                                 ttl_s => 8 } },
            },
        },
        globex => {
            ceilings => { memory_mb => 512, timeout_s => 30 },
            approvals => { always => ['sandbox.exec'] },
        },
    },
};

my $n = VetoNginx->new;
$n->start_redis;
$n->start_helper;
$n->start(redis => 1, approval_page => 1, policy => $policy);

my ($st, $h, $b, $j);
eventually('Redis is up', 10, sub {
    ($st, $h, $b, $j) = $n->request(GET => '/v1/health');
    ($j->{redis} // '') eq 'up';
});
is($j->{redis}, 'up', 'redis up');

# ---------------------------------------------------------------- headers
{
    my $csp_need = qr/default-src 'self'.*script-src 'self'.*object-src 'none'.*base-uri 'none'.*form-action 'self'.*frame-ancestors 'none'/;
    for my $p (['/review/', qr{^text/html}], ['/review/index.html', qr{^text/html}],
               ['/review/js/app.js', qr{^application/javascript}],
               ['/review/app.css', qr{^text/css}],
               ['/review/favicon.svg', qr{^image/svg\+xml}]) {
        my ($path, $type) = @$p;
        ($st, $h, $b) = $n->request(GET => $path);
        is($st, 200, "GET $path");
        like($h->{'content-type'} // '', $type, "$path: Content-Type");
        my $csp = $h->{'content-security-policy'} // '';
        like($csp, $csp_need, "$path: CSP");
        unlike($csp, qr/unsafe-inline|unsafe-eval|\*|https?:|data:/,
               "$path: CSP allows nothing inline, eval'd or foreign");
        like($csp, qr/require-trusted-types-for 'script'/,
             "$path: CSP enforces Trusted Types");
        is($h->{'x-content-type-options'}, 'nosniff', "$path: nosniff");
        is($h->{'referrer-policy'}, 'no-referrer', "$path: no referrer");
        is($h->{'x-frame-options'}, 'DENY', "$path: X-Frame-Options");
    }
    ($st, $h) = $n->request(GET => '/review/no-such-file.js');
    is($st, 404, 'a missing file: 404');
    like($h->{'content-security-policy'} // '', $csp_need,
         '... with the headers too');
    ($st) = $n->request(POST => '/review/', undef, 'x');
    is($st, 403, 'POST to the page: 403');
    my $res = HTTP::Tiny->new(max_redirect => 0)->get($n->url('/review'));
    is($res->{status}, 301, '/review redirects');
    like($res->{headers}{location} // '', qr{/review/$}, '... to /review/');
    ($st) = $n->request(GET => '/review/../conf/nginx-veto.conf.example');
    isnt($st, 200, 'nothing outside the page directory');
}

# ---------------------------------------------------------------- scene
my $redis = $n->redis;
my $T = 'acme';
my $xss_agent = '<script>window.__xss_sub=1</script>';

my %tok = (
    agent   => $n->token(sub => 'agent-1', exp => time + 3600),
    agent2  => $n->token(sub => 'agent-2', exp => time + 3600),
    fast    => $n->token(sub => 'agent-fast', exp => time + 3600),
    xss     => $n->token(sub => $xss_agent, exp => time + 3600),
    rev     => $n->token(sub => 'human-1', scope => 'approvals:review audit:read',
                         jti => "rev-$$", exp => time + 3600),
    rev2    => $n->token(sub => 'human-2', scope => 'approvals:review',
                         exp => time + 3600),
    revoked => $n->token(sub => 'human-3', scope => 'approvals:review audit:read',
                         jti => "doomed-$$", exp => time + 3600),
    # a reviewer who is also the requester of agent-1's approvals
    self    => $n->token(sub => 'agent-1', scope => 'approvals:review',
                         exp => time + 3600),
    globex_rev => $n->token(sub => 'human-9', tenant => 'globex',
                            scope => 'approvals:review', exp => time + 3600),
    # well formed, signed, but expired beyond the leeway
    expired => $n->token(sub => 'human-1', scope => 'approvals:review',
                         iat => time - 7200, exp => time - 3600),
);

sub create_sb
{
    my ($tok) = @_;
    my ($st, $h, $b, $j) = $n->request(POST => '/v1/sandboxes', $tok,
                                       { ttl_s => 1800 });
    is($st, 201, 'create a sandbox') or diag $b;
    return $j->{id};
}

my $sb = create_sb($tok{agent});
my $sb_fast = create_sb($tok{fast});
my $sb_xss = create_sb($tok{xss});
my $sb2 = create_sb($tok{agent2});

($st) = $n->request(PUT => "/v1/sandboxes/$sb/files?path=out.txt", $tok{agent},
                    "exported data\n");
is($st, 200, 'a file to export later');

# The agent's history in $sb: one approval approved and used, one denied.
sub ask
{
    my ($tok, $sbx, $body) = @_;
    my ($st, $h, $b, $j) = $n->request(POST => "/v1/sandboxes/$sbx/exec",
                                       $tok, $body);
    is($st, 202, 'needs approval') or diag $b;
    return $j->{approval_id};
}
my $hist_ok = ask($tok{agent}, $sb, { argv => ['sh', '-c', 'make test'] });
($st) = $n->request(POST => "/v1/approvals/$hist_ok/approve", $tok{rev}, '');
is($st, 200, 'history: approved');
($st) = $n->request(POST => "/v1/sandboxes/$sb/exec", $tok{agent},
                    { argv => ['sh', '-c', 'make test'] },
                    { 'Veto-Approval' => $hist_ok });
is($st, 200, 'history: used (the command ran, make or not)');
my $hist_no = ask($tok{agent}, $sb, { argv => ['git', 'push', '--force'] });
($st) = $n->request(POST => "/v1/approvals/$hist_no/deny", $tok{rev2},
                    { reason => 'not on Fridays' });
is($st, 200, 'history: denied');

# A real request granting 200 hosts: a reviewer sees every one of them.
my @many = map { sprintf('h%03d-%s.askable.test', $_, 'q' x 16) } 0 .. 199;
my $sb_net = create_sb($tok{agent});
($st, $h, $b, $j) = $n->request(PATCH => "/v1/sandboxes/$sb_net",
    $n->token(sub => 'agent-1', scope => 'sandbox:network', exp => time + 3600),
    { network => { add => \@many } });
is($st, 202, '200 askable hosts added to a sandbox: 202') or diag $b;
my $cut_hosts = $j->{approval_id};
is(scalar @{ $j->{summary}{network}{hosts} // [] }, 200, '... its summary lists them all');

# Records in the module's own format, written with its own create script
# (the module's lua/ files), for summary fields the module does not
# produce yet: the sandbox id, env values, network hosts, argv
# truncation, irreversibility, and fields the page does not know.
my $seq = 0;
sub seed
{
    my (%o) = @_;
    my $id = 'apr_' . substr(Digest::SHA::sha256_hex("$$-" . ++$seq), 0, 32);
    my $summary = $JSON->encode($o{summary});
    my $res = run_script($redis, 'approval_create',
        ["veto:{$T}:appr:$id", "veto:{$T}:appr:$id:rv", "veto:{$T}:appr:idx"],
        [$id, $T, $o{agent}, $o{summary}{action},
         Digest::SHA::sha256_hex("seed-$id"), $summary,
         $o{ttl_ms} // 900_000, $o{threshold} // 1, 3_600_000]);
    is($res->[0], 'ok', "seeded $id ($o{what})");
    sleep 0.003;            # distinct created_ms: a defined order
    return $id;
}

# every place a payload can hide in a summary
my @payloads = ('<script>window.__xss=11</script>',
                '<img src=x onerror="window.__xss=12">',
                'javascript:window.__xss=13');
my $xss_seed = seed(what => 'payloads in every summary field',
                    agent => 'agent-1', summary => {
    action => 'sandbox.exec',
    sandbox => '<img src=x onerror="window.__xss=14">',
    argv => ['echo', @payloads],
    cwd => '<script>window.__xss=15</script>',
    env => { '<img src=x onerror=window.__xss=16>' => '<script>window.__xss=17</script>',
             'javascript:window.__xss=18' => undef },
    env_names => ['<svg onload=window.__xss=19>'],
    network => { hosts => ['<img src=x onerror=window.__xss=20>',
                           'javascript:window.__xss=21'] },
    path => '<iframe src="javascript:window.__xss=22">',
    irreversible => JSON::PP::true,
    irreversible_reason => '<b onmouseover=window.__xss=23>bold</b>',
    metadata => { task => '<script>window.__xss=24</script>',
                  link => 'javascript:window.__xss=25',
                  '<img src=x onerror=window.__xss=26>' => 'key payload' },
    '<script>window.__xss=27</script>' => 'unknown field name',
});

# enough of one agent's creates to need a second page
my @bulk = map {
    seed(what => "bulk $_", agent => 'agent-bulk',
         summary => { action => 'sandbox.create', profile => 'default',
                      limits => { memory_mb => 64 + $_ }, ttl_s => 600 })
} 1 .. 24;

# the newest seed, so it shows near the top of the list
my $long = 'A' x 4990 . 'THE-END';
my $rich = seed(what => 'planned summary fields', agent => 'agent-1', summary => {
    action => 'sandbox.exec',
    sandbox => $sb,
    argv => ['sh', '-c', 'pip install -r requirements.txt && twine upload dist/*',
             $long, "admin\x{202e}txt.exe"],
    argv_truncated => JSON::PP::true,
    argv_bytes => 1_048_576,
    argv_sha256 => Digest::SHA::sha256_hex('full argv'),
    cwd => '/workspace/project',
    env => { PATH => '/workspace/bin:/usr/bin:/bin',
             LD_PRELOAD => '/workspace/hook.so', TWINE_PASSWORD => undef,
             CI => '1', TERM => "xterm\x{1b}]0;ok\x{07}" },
    env_names => ['CI', 'LD_PRELOAD', 'PATH', 'TERM', 'TWINE_PASSWORD'],
    env_flagged => ['LD_PRELOAD', 'PATH'],
    network => { hosts => ['pypi.org', 'files.pythonhosted.org',
                           'upload.pypi.org'] },
    irreversible => JSON::PP::true,
    irreversible_reason => 'publishes a release to a public registry',
    ticket => 'OPS-1234',
});

# another tenant's request: never shown to acme's reviewer
my $sb_globex = do {
    my $g = $n->token(sub => 'agent-g', tenant => 'globex');
    my ($st, $h, $b, $j) = $n->request(POST => '/v1/sandboxes', $g, {});
    my (undef, undef, undef, $jj) = $n->request(POST => "/v1/sandboxes/$j->{id}/exec",
                                                 $g, { argv => ['echo', 'globex-secret-op'] });
    is($jj->{state}, 'pending', 'a pending approval in tenant globex');
    $jj->{approval_id};
};

# ---------------------------------------------------------------- browser
my $out = "$n->{dir}/browser";
mkdir $out or die "mkdir $out: $!";
my $fixture = {
    base => $n->url(''),
    chromium => $CHROMIUM,
    out => $out,
    tokens => \%tok,
    sandbox => $sb,
    sandbox_fast => $sb_fast,
    sandbox_xss => $sb_xss,
    sandbox2 => $sb2,
    xss_agent => $xss_agent,
    rich => $rich,
    cut_hosts => $cut_hosts,
    cut_hosts_first => $many[0],
    xss_seed => $xss_seed,
    bulk => \@bulk,
    globex_approval => $sb_globex,
    hist_ok => $hist_ok,
    hist_no => $hist_no,
    long_len => length $long,
    redis_pid => $n->{redis_pid},
    redis_sock => $n->{redis_sock},
    revoke_key => "veto:{$T}:revoked:jti:doomed-$$",
};
VetoNginx::spew("$out/fixture.json", $JSON->encode($fixture));

my ($status, $results) = VetoNode::run(
    "$BROWSER_DIR/approval-page.test.mjs", "$out/fixture.json",
    name => 'browser', timeout => 600);
is($status, 0, 'the browser test exited 0');
ok($results >= 60, "the browser test reported $results results");
# redis was stopped (SIGSTOP) and resumed by the browser test
kill 'CONT', $n->{redis_pid};

# ---------------------------------------------------------------- after
my $done = eval { $JSON->decode(VetoNginx::slurp("$out/result.json")) } // {};
ok($done->{approved} && $done->{denied}, 'the browser test named what it decided')
    or diag explain $done;

($st, $h, $b, $j) = $n->request(GET => "/v1/approvals/$done->{approved}", $tok{rev2});
is($j->{state}, 'consumed', 'approved in the page, then used by the agent');
($st, $h, $b, $j) = $n->request(GET => "/v1/approvals/$done->{denied}", $tok{rev2});
is($j->{state}, 'denied', 'denied in the page');
is($j->{deny_reason}, $done->{deny_reason}, '... with the reason typed there');
is($j->{denied_by}, 'human-1', '... by the reviewer whose token the page held');

my $auditor = $n->token(sub => 'auditor', scope => 'audit:read');
eventually('the denial and its reason are on the audit trail', 5, sub {
    ($st, $h, $b, $j) = $n->request(GET => '/v1/audit?agent=human-1&limit=1000',
                                    $auditor);
    grep { $_->{outcome} eq 'approval_denied'
           && ($_->{approval} // '') eq $done->{denied}
           && ($_->{reason} // '') eq $done->{deny_reason} } @{ $j->{records} };
});

# the token travelled in headers only
my $logs = $n->access_log . $n->error_log;
for my $k (qw(rev rev2 revoked globex_rev)) {
    my ($sig) = $tok{$k} =~ /\.([^.]+)$/;
    unlike($logs, qr/\Q$sig\E/, "no $k token in nginx's logs");
}
like($n->access_log, qr{GET /review/}, 'the page was served by this nginx');
unlike($n->access_log, qr{/review/\S*(?:eyJ|token=)}, 'no token in a page URL');

# screenshots
for my $s (qw(list detail phone-list phone-detail)) {
    my $f = "$out/$s.png";
    my $png = -f $f ? VetoNginx::slurp($f) : '';
    ok(length $png > 10_000 && substr($png, 0, 8) eq "\x89PNG\r\n\x1a\n",
       "screenshot $s.png saved");
}
if (my $dst = $ENV{VETO_SCREENSHOTS}) {
    for my $s (qw(list detail)) {
        File::Copy::copy("$out/$s.png", "$dst/approval-page-$s.png")
            or diag "copy $s.png to $dst: $!";
    }
}
note "screenshots in $out" . ($ENV{VETO_KEEP} ? '' : ' (VETO_KEEP=1 keeps them)');

done_testing;
