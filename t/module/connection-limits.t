#!/usr/bin/perl
# Slowloris against the shipped configuration: conf/nginx-veto.conf.example
# itself, with only its paths, listen address and TLS swapped for this
# test's (every swap must match, so a change to the example that this
# test does not know about fails here).
#
# * 2,100 idle connections from one address (127.0.0.1), each having sent
#   half a request header (classic slowloris; a connection that sent
#   nothing at all nginx closes by itself when it runs short of
#   connections, one that sent a byte it must keep): /v1/health and an
#   authenticated request still answer, and the server closes every one of
#   them after client_header_timeout.
# * 64 authenticated requests whose body never comes: limit_conn answers
#   the 65th from that address with 429 problem+json, and
#   client_body_timeout ends the 64.
# * The same 2,100 idle connections against Debian's defaults
#   (worker_connections 768, 60 s header timeout; one worker, so the
#   arithmetic is exact): health no longer answers.  This is what the
#   limits fix.

use strict;
use warnings;

use Test::More;
use IO::Select;
use IO::Socket::INET;
use lib 't/lib';
use VetoNginx;
use Eventually qw(eventually);
use Time::HiRes qw(sleep time);

VetoNginx::need(qw(helper redis));

my $IDLE = 2100;
my $EXAMPLE = "$VetoNginx::ROOT/conf/nginx-veto.conf.example";

# This process holds every client socket: lift its descriptor limit.
{
    my ($soft, $hard) = `prlimit --pid=$$ --nofile --noheadings --raw --output=SOFT,HARD`
        =~ /(\d+)\s+(\d+)/ or die "prlimit: cannot read the nofile limit\n";
    my $want = $IDLE + 1000;
    if ($soft < $want) {
        my $h = $hard < $want ? $want : $hard;
        system('prlimit', "--pid=$$", "--nofile=$want:$h") == 0
            or die "prlimit --nofile=$want:$h failed\n";
    }
}

# The example with this instance's paths.  Each [regex, replacement] must
# match exactly once.
sub example_for
{
    my ($n, %o) = @_;
    my $d = $n->dir;
    my $conf = VetoNginx::slurp($EXAMPLE);
    my $module = VetoNginx::module_path();
    my $sock = $n->{helper_sock};
    my @swap = (
        [qr/^load_module \S+;$/m, "load_module $module;"],
        [qr/^user www-data;$/m, 'user root;'],
        [qr/^pid \S+;$/m, "pid $d/nginx.pid;"],
        [qr/^error_log \S+;$/m, "error_log $d/logs/error.log info;"],
        [qr/^http \{$/m, "http {\n    client_body_temp_path $d/tmp/body;\n"
            . "    proxy_temp_path $d/tmp/proxy;\n"
            . "    fastcgi_temp_path $d/tmp/fastcgi;\n"
            . "    uwsgi_temp_path $d/tmp/uwsgi;\n"
            . "    scgi_temp_path $d/tmp/scgi;"],
        [qr/^(\s*)veto_sandbox_redis unix:\S+;/m, "\$1veto_sandbox_redis unix:$n->{redis_sock};"],
        [qr/^(\s*)listen 443 ssl;$/m, "\$1listen 127.0.0.1:@{[ $n->port ]};"],
        [qr/^\s*ssl_certificate .*\n/m, ''],
        [qr/^\s*ssl_certificate_key .*\n/m, ''],
        [qr/^(\s*)access_log \S+ veto;$/m, "\$1access_log $d/logs/access.log veto;"],
        [qr/^(\s*)veto_sandbox_helper unix:\S+;$/m, "\$1veto_sandbox_helper unix:$sock;"],
        [qr/^(\s*)veto_sandbox_jwt_jwks \S+;$/m, "\$1veto_sandbox_jwt_jwks $d/jwks.json;"],
        [qr/^(\s*)veto_sandbox_jwt_issuer \S+;$/m, "\$1veto_sandbox_jwt_issuer $n->{issuer};"],
        [qr/^(\s*)veto_sandbox_policy \S+;$/m, "\$1veto_sandbox_policy $d/policy.json;"],
        @{ $o{swap} // [] },
    );
    for my $s (@swap) {
        my ($re, $to) = @$s;
        my $count = () = $conf =~ /$re/g;
        die "$EXAMPLE: $re matches $count times, not once\n" unless $count == 1;
        # '$1' in a replacement stands for the regex's first group
        $conf =~ s{$re}{ my $g = $1 // ''; (my $x = $to) =~ s/\$1/$g/g; $x }e;
    }
    return $conf;
}

sub start_from
{
    my ($n, $conf) = @_;
    VetoNginx::spew($n->dir . '/nginx.conf', $conf);
    my ($ok, $out) = $n->test_config;
    ok($ok, 'nginx -t') or diag $out;
    $n->start(keep_conf => 1);
}

sub health
{
    my ($n, $timeout) = @_;
    my $ua = HTTP::Tiny->new(timeout => $timeout, keep_alive => 0);
    my $res = $ua->get($n->url('/v1/health'));
    return $res->{status};
}

# $count connections that send the start of a request header, unsigned,
# and then nothing.
sub open_idle
{
    my ($n, $count) = @_;
    my @s;
    for (1 .. $count) {
        my $c = IO::Socket::INET->new(PeerAddr => '127.0.0.1', PeerPort => $n->port,
                                      Proto => 'tcp', Timeout => 2) or next;
        syswrite($c, "GET /v1/sandboxes HTTP/1.1\r\nHost: veto\r\n");
        push @s, $c;
    }
    return @s;
}

# How many of the sockets the server closed (EOF or reset), waiting up to
# $wait seconds for all of them.
sub closed_by_server
{
    my ($wait, @socks) = @_;
    my %open = map { fileno($_) => $_ } @socks;
    my $closed = 0;
    my $deadline = time + $wait;
    while (%open && time < $deadline) {
        my $sel = IO::Select->new(values %open);
        for my $c ($sel->can_read(0.5)) {
            my $buf;
            my $r = sysread($c, $buf, 4096);
            next if defined $r && $r > 0;    # a 408 or similar, then EOF
            delete $open{ fileno($c) };
            close $c;
            $closed++;
        }
    }
    return $closed;
}

# ------------------------------------------------- the shipped limits
my $n = VetoNginx->new;
$n->start_redis;
$n->start_helper;
$n->write_policy(VetoNginx::default_policy());
my $conf = example_for($n);
like($conf, qr/worker_connections 16384;/, 'the example sets worker_connections');
start_from($n, $conf);

my $agent = $n->token;
is(health($n, 5), 200, 'health before');

my $t0 = time;
my @idle = open_idle($n, $IDLE);
is(scalar @idle, $IDLE, "$IDLE idle connections from 127.0.0.1 are open");

for my $i (1 .. 3) {
    is(health($n, 5), 200, "health answers with $IDLE idle connections open ($i)");
}
my ($st, $h, $b, $j) = $n->request(GET => '/v1/sandboxes', $agent);
is($st, 200, 'an authenticated request answers too') or diag $b;

# ---- limit_conn: requests in progress per address
# Requests that send their header and then wait for a body that never
# comes stay in progress.  They are sent until the server refuses one:
# a request of this address still finishing elsewhere may take a place
# for a moment, so the refused ones are put aside and the rest topped up
# until exactly $LIMIT are in progress.
my $LIMIT = 64;
my (@slow, %early);

sub slow_request
{
    my $c = IO::Socket::INET->new(PeerAddr => '127.0.0.1', PeerPort => $n->port,
                                  Proto => 'tcp', Timeout => 2)
        or die "connect: $!";
    print $c "POST /v1/sandboxes HTTP/1.1\r\nHost: x\r\n"
        . "Authorization: Bearer $agent\r\n"
        . "Content-Type: application/json\r\nContent-Length: 100\r\n\r\n";
    return $c;
}

# the slow requests the server answered already, taken out of @slow
sub sort_out_answered
{
    my @ready = IO::Select->new(@slow)->can_read(0.3);
    for my $c (@ready) {
        my $buf = '';
        sysread($c, $buf, 512);
        $early{ ($buf =~ m{^HTTP/1\.1 (\d+)}) ? $1 : 'eof' }++;
        @slow = grep { $_ != $c } @slow;
        close $c;
    }
}

push @slow, slow_request() for 1 .. $LIMIT;
sort_out_answered();
for (1 .. 20) {
    last if @slow >= $LIMIT;
    push @slow, slow_request();
    sort_out_answered();
}
is(scalar @slow, $LIMIT, "$LIMIT requests waiting for their bodies are in progress");
ok(!grep({ $_ ne '429' } keys %early), 'a slow request refused meanwhile got 429 '
   . '(' . join(', ', map { "$_ x $early{$_}" } sort keys %early) . ')');
# (a worker may still be reading the last headers: a few tries)
eventually('the rate limit answers 429', 2, sub {
    ($st, $h, $b, $j) = $n->request(GET => '/v1/sandboxes', $agent);
    $st == 429;
});
is($st, 429, "request $LIMIT + 1 from one address while $LIMIT wait for "
   . 'their bodies: 429') or diag $b;
is($h->{'content-type'}, 'application/problem+json', '... as problem+json');

# ---- the timeouts end the idle and the slow
my $idle_closed = closed_by_server(20, @idle);
is($idle_closed, $IDLE, 'the server closed every idle connection '
   . '(client_header_timeout 10s)');
note(sprintf('last idle connection closed %.1f s after the first opened',
             time - $t0));
my $slow_closed = closed_by_server(20, @slow);
is($slow_closed, $LIMIT, 'and every request whose body never came '
   . '(client_body_timeout 10s)');
($st) = $n->request(GET => '/v1/sandboxes', $agent);
is($st, 200, 'the address may make requests again');
like($n->error_log, qr/limiting connections by zone "veto_conn_addr"/,
     'the limit is logged');

$n->stop;
$n->helper->stop;
$n->stop_redis;

# --------------------------------- Debian's defaults: the attack works
my $m = VetoNginx->new;
$m->start_redis;
$m->start_helper;
$m->write_policy(VetoNginx::default_policy());
$conf = example_for($m, swap => [
    [qr/^worker_processes auto;$/m, 'worker_processes 1;'],
    [qr/^worker_rlimit_nofile .*\n/m, ''],
    [qr/^(\s*)worker_connections \d+;/m, '$1worker_connections 768;'],
    [qr/^\s*client_header_timeout .*\n/m, ''],
    [qr/^\s*client_body_timeout .*\n/m, ''],
    [qr/^\s*reset_timedout_connection .*\n/m, ''],
]);
start_from($m, $conf);
is(health($m, 5), 200, 'Debian defaults: health before');
@idle = open_idle($m, $IDLE);
note(scalar(@idle) . ' idle connections connected');
my $down = 0;
for my $i (1 .. 3) {
    my $s = health($m, 3);
    $down++ if $s != 200;
}
is($down, 3, "Debian defaults: with $IDLE idle connections health does not "
   . 'answer (3 tries)');
like($m->error_log, qr/worker_connections are not enough/,
     '... nginx says worker_connections are not enough');
close $_ for @idle;
@idle = ();
eventually('health answers again once the idle connections go', 10,
           sub { health($m, 2) == 200 });

$m->stop;
$m->helper->stop;
$m->stop_redis;

done_testing;
