#!/usr/bin/perl
# HTTP/2: many requests in flight on one connection, each its own.  nginx
# gives each HTTP/2 stream a copy of the client connection (the same
# connection number), so a request_id (pid, time, connection number,
# request count) leans on nginx counting the streams.  Through a real
# nginx (listen ... http2), Redis and helper, with nghttp sending 12
# creates at once as 12 streams of one connection: 12 sandboxes, each
# with its own quota slot (named after the request_id until the sandbox
# is known), and 12 audit records, each with a request_id of its own;
# then 24 GETs at once of those sandboxes (on the worker's helper pipe,
# where a reply is matched to its request by request_id): each answers.

use strict;
use warnings;

use Test::More;
use JSON::PP ();
use File::Temp qw(tempdir);
use lib 't/lib';
use VetoNginx;
use Eventually qw(eventually);

VetoNginx::need(qw(helper redis));
die "nghttp is not installed (nghttp2-client: scripts/install-deps.sh test)\n"
    unless system('nghttp --version >/dev/null 2>&1') == 0;

my $JSON = JSON::PP->new->utf8(1);
my $n = VetoNginx->new;
my $h2 = VetoNginx::free_port();
$n->start_redis;
$n->start_helper;
$n->start(redis => 1, server_extra => "listen 127.0.0.1:$h2 http2;");

my $tok = $n->token;
my $tmp = tempdir(CLEANUP => 1);

# nghttp: each path $times times, as streams of one connection, all at
# once (nghttp asks a path given twice once: -m asks again); the
# response bodies (each a JSON object, printed as they come) and nghttp's
# table of streams (one line a stream: its status)
sub h2_all
{
    my ($body, $times, @paths) = @_;
    my @cmd = ('nghttp', '-s', '-t', '60', '-m', $times,
               '-H', "authorization: Bearer $tok");
    if (defined $body) {
        open(my $f, '>', "$tmp/body") or die "$tmp/body: $!";
        print $f $body;
        close $f;
        push @cmd, '-H', 'content-type: application/json',
             '-d', "$tmp/body";
    }
    push @cmd, map { "http://127.0.0.1:$h2$_" } @paths;
    open(my $fh, '-|', @cmd) or die "nghttp: $!";
    my $out = do { local $/; <$fh> };
    close $fh;

    my ($bodies, $table) = split /\*\*\*\*\* Statistics \*\*\*\*\*/, $out, 2;
    my $p = JSON::PP->new->utf8(1);
    $p->incr_parse($bodies);
    my @json;
    while (my $j = $p->incr_parse) {
        push @json, $j;
    }
    my @streams = ($table // '') =~ /^\s*(\d+)\s+\+\S+\s+\+\S+\s+\S+\s+(\d{3})/mg;
    return (\@json, { @streams });
}

# ---- 12 creates at once, as 12 streams of one connection
my ($json, $streams) = h2_all('{"ttl_s": 300}', 12, '/v1/sandboxes');
is(scalar(keys %$streams), 12, '12 streams on one connection');
is(scalar(grep { $_ == 201 } values %$streams), 12, '... each 201')
    or diag explain $streams;
my @ids = grep { defined && /^sb-[0-9a-f]{24}$/ } map { $_->{id} } @$json;
is(scalar(@ids), 12, '12 sandboxes made') or diag explain $json;
my %seen = map { $_ => 1 } @ids;
is(scalar(keys %seen), 12, '... each its own');

my $auditor = $n->token(sub => 'auditor-1', scope => 'audit:read');
my $recs = eventually('12 create records', 10, sub {
    my (undef, undef, undef, $aj) = $n->request(GET => '/v1/audit?limit=1000',
                                                $auditor);
    my @r = grep { ($_->{action} // '') eq 'sandbox.create'
                   && ($_->{outcome} // '') eq 'sandbox_created' } @{ $aj->{records} };
    @r == 12 ? \@r : undef;
});
ok($recs, 'the audit has 12 creates');
my %rid = map { ($_->{request_id} // '') => 1 } @{ $recs // [] };
is(scalar(grep { length } keys %rid), 12,
   '... with 12 request_ids, none shared') or diag explain $recs;
is_deeply([sort map { $_->{sandbox} // '' } @{ $recs // [] }], [sort @ids],
          '... one record for each sandbox');

# ---- 24 GETs at once, of those sandboxes, on the worker's helper pipe
($json, $streams) = h2_all(undef, 2, map { "/v1/sandboxes/$_" } @ids);
is(scalar(grep { $_ == 200 } values %$streams), 24,
   '24 GETs, 24 streams of one connection, each 200')
    or diag explain $streams;
my %got;
$got{ $_->{id} // '' }++ for @$json;
is_deeply(\%got, { map { $_ => 2 } @ids },
          '... each sandbox answered twice, as asked') or diag explain \%got;

for my $id (@ids) {
    my ($st) = $n->request(DELETE => "/v1/sandboxes/$id", $tok);
    is($st, 200, "delete $id");
}

done_testing;
