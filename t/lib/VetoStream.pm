package VetoStream;

# A raw HTTP/1.1 client for streamed responses of the module (ndjson
# lines of a streamed or followed exec, a tar streamed out): it sends one
# request, reads the status and headers, then decodes the chunked body
# as it arrives, so a test can read the first line while the command is
# still running, stop reading (a slow client), or close the connection
# (a client gone).  It tells a response that ended with its last chunk
# ("0\r\n\r\n") from one that was cut off.

use strict;
use warnings;

use IO::Select;
use IO::Socket::INET;
use JSON::PP ();
use Time::HiRes qw(time);

# lines of a stream are decoded with the XS parser when it is there
# (scripts/install-deps.sh installs it): JSON::PP takes about a second per
# MB, and the streams of these tests are tens of MB
my $JSON = eval { require Cpanel::JSON::XS; 1 }
           ? Cpanel::JSON::XS->new->utf8(1)->canonical(1)
           : JSON::PP->new->utf8(1)->canonical(1);

# open($n, METHOD, PATH, TOKEN, BODY (ref: JSON; string: raw; undef),
# {headers}) -> the stream, status, headers read.
sub open
{
    my ($class, $n, $method, $path, $token, $body, $hdr) = @_;
    my %h = %{ $hdr // {} };
    $h{Authorization} = "Bearer $token" if defined $token;
    if (ref $body) {
        $body = $JSON->encode($body);
        $h{'Content-Type'} //= 'application/json';
    }
    $h{'Content-Length'} = length $body if defined $body;
    $h{Host} = '127.0.0.1';
    $h{Connection} = 'close';

    my $s = IO::Socket::INET->new(PeerAddr => '127.0.0.1:' . $n->port,
                                  Timeout => 10)
        or die "connect: $!";
    binmode $s;
    my $req = "$method $path HTTP/1.1\r\n"
            . join('', map { "$_: $h{$_}\r\n" } sort keys %h) . "\r\n"
            . ($body // '');
    syswrite($s, $req) == length $req or die "send: $!";

    my $self = bless { s => $s, buf => '', body => '', done => 0,
                       eof => 0, sel => IO::Select->new($s) }, $class;
    $self->_headers(30);
    return $self;
}

sub status  { $_[0]{status} }
sub headers { $_[0]{headers} }
sub done    { $_[0]{done} }     # the last chunk came
sub eof     { $_[0]{eof} }      # the connection closed

# more bytes within $timeout seconds: 1, or 0 (timeout / EOF)
sub _fill
{
    my ($self, $timeout) = @_;
    return 0 if $self->{eof};
    return 0 unless $self->{sel}->can_read($timeout);
    my $n = sysread($self->{s}, my $chunk, 262144);
    if (!$n) {
        $self->{eof} = 1;
        return 0;
    }
    $self->{buf} .= $chunk;
    return 1;
}

sub _headers
{
    my ($self, $timeout) = @_;
    my $end = time + $timeout;
    while ($self->{buf} !~ /\r\n\r\n/) {
        die "no response headers\n" unless $self->_fill($end - time);
    }
    $self->{buf} =~ s/^(.*?)\r\n\r\n//s;
    my ($line, @rest) = split /\r\n/, $1;
    ($self->{status}) = $line =~ m{^HTTP/1\.\d (\d{3})} or die "bad: $line";
    my %h;
    for (@rest) {
        my ($k, $v) = /^([^:]+):\s*(.*)$/ or next;
        $h{lc $k} = $v;
    }
    $self->{headers} = \%h;
    $self->{chunked} = ($h{'transfer-encoding'} // '') =~ /chunked/i;
    $self->{left} = $h{'content-length'};
}

# Decodes what is buffered into $self->{body}.
sub _decode
{
    my ($self) = @_;
    if (!$self->{chunked}) {
        $self->{body} .= $self->{buf};
        $self->{buf} = '';
        $self->{done} = 1 if defined $self->{left}
                             && length $self->{body} >= $self->{left};
        return;
    }
    while (!$self->{done}) {
        last unless $self->{buf} =~ /^([0-9a-fA-F]+)[^\r\n]*\r\n/;
        my ($hex, $hl) = ($1, length $&);
        my $size = hex $hex;
        last if length($self->{buf}) < $hl + $size + 2;
        $self->{body} .= substr($self->{buf}, $hl, $size);
        substr($self->{buf}, 0, $hl + $size + 2, '');
        $self->{done} = 1 if $size == 0;
    }
}

# The next ndjson line (decoded) within $timeout seconds, or undef.
sub line
{
    my ($self, $timeout) = @_;
    my $end = time + ($timeout // 30);
    for (;;) {
        $self->_decode;
        if ($self->{body} =~ s/^([^\n]*)\n//) {
            my $l = $1;
            return eval { $JSON->decode($l) } // { unparsed => $l };
        }
        return undef if $self->{done};
        my $wait = $end - time;
        return undef if $wait <= 0 || !$self->_fill($wait);
    }
}

# Every line until the end (or $timeout seconds).
sub lines
{
    my ($self, $timeout) = @_;
    my $end = time + ($timeout // 60);
    my @l;
    while (defined(my $l = $self->line($end - time))) {
        push @l, $l;
    }
    return @l;
}

# The whole body until the end, the connection closing or $timeout.
sub body
{
    my ($self, $timeout) = @_;
    my $end = time + ($timeout // 60);
    for (;;) {
        $self->_decode;
        last if $self->{done};
        my $wait = $end - time;
        last if $wait <= 0 || !$self->_fill($wait);
    }
    $self->_decode;
    my $b = $self->{body};
    $self->{body} = '';
    return $b;
}

sub close
{
    my ($self) = @_;
    close $self->{s} if $self->{s};
    delete $self->{s};
}

1;
