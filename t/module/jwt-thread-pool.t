#!/usr/bin/perl
# ngx_veto_sandbox_module: token signatures checked in an nginx thread
# pool (veto_sandbox_jwt_thread_pool).  The directive's checks; the
# identity attacks with the pool (forged, expired, alg confusion, wrong
# key, truncated signatures); that the checks did run in the pool's
# threads (their nice value); many verifications at once; clients that
# go away while their token is being verified, and a reload in the middle
# of a burst, leaving the worker up and answering (run under the ASan
# module build, a use after free or a leak of a live request shows there).
# And t/module/identity.t (identity) and t/module/adversarial.t (adversarial)
# run again whole with every instance's signatures checked in nginx's
# "default" pool.

use strict;
use warnings;

use Test::More;
use IO::Socket::INET;
use IO::Select;
use MIME::Base64 qw(encode_base64url decode_base64url);
use Socket qw(SOL_SOCKET SO_LINGER);
use Time::HiRes qw(sleep time);
use lib 't/lib';
use VetoNginx;
use Eventually qw(eventually);

VetoNginx::need(qw(helper));

my $n = VetoNginx->new;
my $d = $n->dir;

$n->write_policy(VetoNginx::default_policy());

# ---- the directive
{
    my @bad = (
        [ 'veto_sandbox_jwt_thread_pool nosuch;', qr/unknown thread pool "nosuch"/,
          'a pool nginx does not know' ],
        [ 'veto_sandbox_jwt_thread_pool vsb_jwt nice=20;', qr/invalid nice value/,
          'nice above 19' ],
        [ 'veto_sandbox_jwt_thread_pool vsb_jwt nice=-1;', qr/invalid nice value/,
          'a negative nice' ],
        [ 'veto_sandbox_jwt_thread_pool vsb_jwt slow;', qr/invalid parameter "slow"/,
          'an unknown parameter' ],
        [ 'veto_sandbox_jwt_thread_pool off nice=3;', qr/takes no parameter after "off"/,
          'off with a parameter' ],
        [ "veto_sandbox_jwt_thread_pool off;\n        veto_sandbox_jwt_thread_pool vsb_jwt;",
          qr/is duplicate/, 'twice in one server' ],
    );
    for my $b (@bad) {
        $n->render(main_extra => 'thread_pool vsb_jwt threads=2;',
                   veto => $n->default_veto . "        $b->[0]\n");
        my ($ok, $out) = $n->test_config;
        ok(!$ok, "nginx -t refuses $b->[2]");
        like($out, $b->[1], "$b->[2]: the message says so");
    }
    {
        my $port = VetoNginx::free_port();
        $n->render(main_extra => 'thread_pool vsb_jwt threads=2;',
                   veto => $n->default_veto
                           . "        veto_sandbox_jwt_thread_pool vsb_jwt nice=7;\n",
                   http_extra => <<"EOF");
    server {
        listen 127.0.0.1:$port;
        veto_sandbox_jwt_thread_pool vsb_jwt nice=3;
    }
EOF
        my ($ok, $out) = $n->test_config;
        ok(!$ok, 'nginx -t refuses two nice values for one pool');
        like($out, qr/thread pool "vsb_jwt" verifies with nice=3 elsewhere/,
             'two nice values: the message names the pool');
    }
    for my $good ('veto_sandbox_jwt_thread_pool off;',
                  'veto_sandbox_jwt_thread_pool default;',
                  'veto_sandbox_jwt_thread_pool vsb_jwt nice=19;')
    {
        $n->render(main_extra => 'thread_pool vsb_jwt threads=2;',
                   veto => $n->default_veto . "        $good\n");
        my ($ok, $out) = $n->test_config;
        ok($ok, "nginx -t takes \"$good\"") or diag $out;
    }
}

# ---- with a pool: no verification cache, so every request is checked
$n->start_helper;

(my $veto = $n->default_veto) =~ s{^\s*veto_sandbox_jwt_cache .*\n}{}m;
$veto .= "        veto_sandbox_jwt_thread_pool vsb_jwt nice=7;\n";

# the error log from here on: nginx -t above wrote its refusals there
my $log_from = length($n->error_log // '');
$n->start(main_extra => 'thread_pool vsb_jwt threads=2;', veto => $veto);

# the worker, once the master has made it (slower under ASan)
sub one_worker
{
    return scalar eventually('nginx has one worker', 20, sub {
        my @w = $n->worker_pids;
        @w == 1 ? $w[0] : undef;
    });
}
my $worker = one_worker();
ok($worker, 'one worker');

sub list
{
    my ($tok) = @_;
    my ($st, $h, $b, $j) = $n->request(GET => '/v1/sandboxes', undef, undef,
                                       { Authorization => "Bearer $tok" });
    return ($st, $j // {});
}

for my $alg (qw(RS256 ES256 HS256)) {
    my ($st) = list($n->token(alg => $alg));
    is($st, 200, "$alg accepted with the pool");
}

# the threads that checked signatures run nice 7 (the worker: 0)
sub thread_nices
{
    my %nice;
    for my $st (glob "/proc/$worker/task/*/stat") {
        open(my $fh, '<', $st) or next;
        my $l = <$fh>;
        close $fh;
        my @f = split / /, ($l =~ /\) (.*)/)[0];
        $nice{$f[16]}++;        # field 19: nice
    }
    return \%nice;
}
# nice=7 is relative to the worker's own priority (the whole run may be
# niced): a pool thread at the worker's plus 7, the event loop at its own
my $base = getpriority(0, $worker);
my $nices = thread_nices();
SKIP: {
    skip "the worker already runs at nice $base: 7 more cannot be told "
         . "from it", 2 if $base + 7 > 19;
    ok($nices->{$base + 7},
       "a pool thread checked a signature (nice $base + 7)")
        or diag explain $nices;
    ok($nices->{$base}, "the event loop kept its priority (nice $base)");
}

sub refused
{
    my ($name, $tok, $reason) = @_;
    my ($st, $h, $b, $j) = $n->request(GET => '/v1/sandboxes', undef, undef,
                                       { Authorization => "Bearer $tok" });
    is($st, 401, "$name: 401");
    like(($j // {})->{detail} // '', $reason, "$name: detail says why");
}

sub flip_sig
{
    my ($tok) = @_;
    my ($h, $p, $s) = split /\./, $tok;
    my $sig = decode_base64url($s);
    substr($sig, 10, 1) = chr(ord(substr($sig, 10, 1)) ^ 1);
    return join '.', $h, $p, encode_base64url($sig);
}

sub b64j { encode_base64url($VetoNginx::JSON->encode($_[0])) }

my $rs = $n->token(alg => 'RS256');
my $es = $n->token(alg => 'ES256');
my ($rh, $rp, $rsig) = split /\./, $rs;
my ($eh, $ep, $esig) = split /\./, $es;

refused('RS256 forged signature', flip_sig($rs), qr/bad signature/);
refused('ES256 forged signature', flip_sig($es), qr/bad signature/);
refused('RS256 claims swapped under a valid signature',
        join('.', $rh, b64j({ iss => $n->{issuer}, aud => $n->{audience},
                              sub => 'root', tenant => 'acme',
                              exp => time + 300 }), $rsig),
        qr/bad signature/);
refused('expired', $n->token(alg => 'ES256', exp => time - 3600),
        qr/expired/);
refused('not yet valid', $n->token(alg => 'RS256', nbf => time + 3600),
        qr/not yet valid/);
refused('wrong issuer', $n->token(alg => 'ES256', iss => 'evil'),
        qr/issuer/);
refused('wrong audience', $n->token(alg => 'RS256', aud => 'other'),
        qr/audience/);
refused('signed by a key nginx does not know',
        $n->token(alg => 'RS256', key => \VetoNginx::slurp("$d/rsa-other.key")),
        qr/bad signature/);
refused('HS256 with the RSA public key as its secret (alg confusion)',
        $n->token(alg => 'HS256', kid => 'rsa-1',
                  key => VetoNginx::slurp("$d/rsa.pub")),
        qr/does not match its key/);
refused('an ES256 token naming the RSA key',
        $n->token(alg => 'ES256', kid => 'rsa-1'),
        qr/does not match its key/);
refused('alg none', join('.', b64j({ alg => 'none', kid => 'rsa-1' }), $rp, ''),
        qr/unsigned|malformed/);
refused('alg none, a signature anyway',
        join('.', b64j({ alg => 'none', kid => 'rsa-1' }), $rp, $rsig),
        qr/alg not accepted/);
refused('RS256 signature cut short', join('.', $rh, $rp, substr($rsig, 0, 100)),
        qr/bad signature/);
refused('ES256 signature cut short', join('.', $eh, $ep, substr($esig, 0, 40)),
        qr/bad signature/);
refused('ES256 signature of R only, padded', join('.', $eh, $ep,
        encode_base64url(substr(decode_base64url($esig), 0, 32) . "\0" x 32)),
        qr/bad signature/);
refused('malformed', "$rh.$rp", qr/malformed/);
refused('unknown kid', $n->token(alg => 'RS256', kid => 'nope'),
        qr/unknown kid/);

# ---- many at once: distinct ES256 tokens, all answered, all 200
sub raw_get
{
    my ($tok) = @_;
    my $s = IO::Socket::INET->new(PeerAddr => $n->addr . ':' . $n->port,
                                  Timeout => 10) or die "connect: $!";
    print $s "GET /v1/sandboxes HTTP/1.1\r\nHost: t\r\n"
           . "Authorization: Bearer $tok\r\nConnection: close\r\n\r\n";
    return $s;
}

my @toks = map { $n->token(alg => $_ % 2 ? 'ES256' : 'RS256', jti => "burst-$_") }
           1 .. 60;
{
    my @s = map { raw_get($_) } @toks;
    my %codes;
    my $sel = IO::Select->new(@s);
    my %buf;
    my $deadline = time + 60;
    while ($sel->count && time < $deadline) {
        for my $fh ($sel->can_read(1)) {
            my $r = sysread($fh, my $chunk, 65536);
            if ($r) { $buf{$fh} .= $chunk; next; }
            $sel->remove($fh);
            my ($code) = ($buf{$fh} // '') =~ m{^HTTP/1\.1 (\d+)};
            $codes{$code // 'none'}++;
            close $fh;
        }
    }
    is_deeply(\%codes, { 200 => 60 }, '60 tokens verified at once: 60 answers 200')
        or diag explain \%codes;
}

# ---- clients gone while their token is checked
my @fresh = map { $n->token(alg => 'ES256', jti => "gone-$_") } 1 .. 150;
for my $i (0 .. $#fresh) {
    my $s = raw_get($fresh[$i]);
    # every other one resets the connection instead of closing it
    setsockopt($s, SOL_SOCKET, SO_LINGER, pack('ii', 1, 0)) if $i % 2;
    close $s;
}
sleep 1;    # on purpose: time for a crash to show
is_deeply([ $n->worker_pids ], [ $worker ],
          '150 clients gone mid-verification: the same worker runs');
is((list($n->token(alg => 'ES256', jti => 'after-gone')))[0], 200,
   'and verifies the next token');

# ---- a reload while verifications are in flight
{
    my @s = map { raw_get($n->token(alg => 'ES256', jti => "reload-$_")) } 1 .. 40;
    $n->reload;
    my %codes;
    for my $s (@s) {
        local $/;
        my $r = <$s> // '';
        my ($code) = $r =~ m{^HTTP/1\.1 (\d+)};
        $codes{$code // 'none'}++;
    }
    is_deeply(\%codes, { 200 => 40 },
              'a reload in a burst: every request in flight answered 200')
        or diag explain \%codes;
    $worker = one_worker();
    is((list($n->token(alg => 'RS256', jti => 'after-reload')))[0], 200,
       'the new worker verifies in its pool');
}

# ---- workers exit as soon as their threads verified: a thread's exit may
# run after the worker unloaded the module, so no module code may run
# then (a thread-specific destructor did: a sanitizer report, or a worker
# killed by SIGSEGV at exit; checked below and when nginx stops)
{
    my %codes;
    for my $round (1 .. 20) {
        my @s = map { raw_get($n->token(alg => $_ % 2 ? 'ES256' : 'RS256',
                                        jti => "exit-$round-$_")) } 1 .. 8;
        $n->reload;
        for my $s (@s) {
            local $/;
            my ($code) = (<$s> // '') =~ m{^HTTP/1\.1 (\d+)};
            $codes{$code // 'none'}++;
        }
    }
    is_deeply(\%codes, { 200 => 160 },
              '20 reloads, each with tokens in flight: all 200')
        or diag explain \%codes;
    $worker = one_worker();
}

my $log = substr($n->error_log, $log_from);
unlike($log, qr/\[(alert|emerg|crit)\]/, 'no alert in the error log')
    or diag join "\n", grep { /\[(alert|emerg|crit)\]/ } split /\n/, $log;
unlike($log, qr/exited on signal/, 'no worker died');

$n->stop;

# ---- t/module/identity.t and t/module/adversarial.t, every signature
# checked in the "default" pool
for my $t ('t/module/identity.t', 't/module/adversarial.t') {
    local $ENV{VETO_JWT_THREAD_POOL} = 'default';
    my $out = `$^X -I t/lib $t 2>&1`;
    my $st = $?;
    ok($st == 0 && $out =~ /^1\.\.\d+/m && $out !~ /^not ok/m,
       "$t passes with veto_sandbox_jwt_thread_pool default")
        or diag(join "\n", grep { /^not ok|^#/ } split /\n/, $out);
}

done_testing;
