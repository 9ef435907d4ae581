#!/usr/bin/perl
# A webhook receiver for t/approval/webhooks.t, on loopback: each request is
# handled in a child of its own and leaves files in DIR:
#
#   DIR/<n>.req       JSON: method, path, headers, body, and whether the
#                     signature verified (with SECRET_FILE)
#   DIR/<n>.holding   the request was read and its answer is held back
#   DIR/<n>.released  the held answer is being sent
#
# What it answers is read from DIR/mode at each connection:
#   ok (200), fail (503), refuse (401), slow-once (holds the first request
#   10 s, then 200, and sets the mode back to ok).
#
#   webhook-receiver.pl PORT DIR [SECRET_FILE]

use strict;
use warnings;

use Digest::SHA qw(hmac_sha256_hex);
use IO::Socket::INET;
use JSON::PP ();
use POSIX ();

my ($port, $dir, $secret_file) = @ARGV;
die "usage: $0 PORT DIR [SECRET_FILE]\n" unless $port && $dir;

my $secret;
if ($secret_file) {
    open(my $fh, '<', $secret_file) or die "$secret_file: $!";
    local $/;
    $secret = <$fh>;
    $secret =~ s/[\r\n \t]+\z//;
}

my $json = JSON::PP->new->utf8(1)->canonical(1);

$SIG{PIPE} = 'IGNORE';
$SIG{CHLD} = 'IGNORE';

my $srv = IO::Socket::INET->new(LocalAddr => '127.0.0.1', LocalPort => $port,
                                Listen => 64, ReuseAddr => 1, Proto => 'tcp')
    or die "listen 127.0.0.1:$port: $!";

sub spew
{
    my ($f, $d) = @_;
    open(my $fh, '>', "$f.tmp") or die "$f: $!";
    print $fh $d;
    close $fh;
    rename "$f.tmp", $f or die "rename $f: $!";
}

sub mode
{
    open(my $fh, '<', "$dir/mode") or return 'ok';
    my $m = <$fh> // 'ok';
    close $fh;
    $m =~ s/\s+//g;
    return $m;
}

# what a receiver does with Veto-Signature: "t=<unix>,v1=<hex>", the MAC
# of "<t>.<body>", and t no older (or newer) than 5 minutes
sub verify
{
    my ($header, $body) = @_;
    return 0 unless defined $secret && defined $header;
    my ($t, $mac) = $header =~ /^t=(\d+),v1=([0-9a-f]{64})$/ or return 0;
    return 0 if abs(time() - $t) > 300;
    my $want = hmac_sha256_hex("$t.$body", $secret);
    # the same time whatever the first difference
    my $diff = 0;
    $diff |= ord(substr($want, $_, 1)) ^ ord(substr($mac, $_, 1)) for 0 .. 63;
    return $diff == 0 ? 1 : 0;
}

my $seq = 0;

while (1) {
    my $c = $srv->accept or next;
    $seq++;

    my $mode = mode();
    if ($mode eq 'slow-once') {
        spew("$dir/mode", "ok\n");
    }

    my $pid = fork();
    die "fork: $!" unless defined $pid;
    if ($pid) {
        close $c;
        next;
    }

    close $srv;
    local $/ = "\r\n\r\n";
    my $head = <$c>;
    POSIX::_exit(0) unless defined $head;
    my ($method, $path) = $head =~ /^(\S+) (\S+) HTTP/;
    my %h;
    for my $l (split /\r\n/, $head) {
        $h{lc $1} = $2 if $l =~ /^([^:\s]+):\s*(.*)$/;
    }
    my $body = '';
    my $len = $h{'content-length'} // 0;
    while (length($body) < $len) {
        my $n = read($c, $body, $len - length($body), length($body));
        last unless $n;
    }

    spew("$dir/$seq.req", $json->encode({
        method => $method, path => $path, headers => \%h, body => $body,
        verified => verify($h{'veto-signature'}, $body), mode => $mode,
    }));

    if ($mode eq 'slow-once') {
        spew("$dir/$seq.holding", '');
        sleep 10;
        spew("$dir/$seq.released", '');
    }

    my %status = (ok => '200 OK', 'slow-once' => '200 OK',
                  fail => '503 Service Unavailable',
                  refuse => '401 Unauthorized');
    my $st = $status{$mode} // '500 Unknown Mode';
    print $c "HTTP/1.1 $st\r\nContent-Type: text/plain\r\n"
           . "Content-Length: 3\r\nConnection: close\r\n\r\nok\n";
    close $c;
    POSIX::_exit(0);
}
