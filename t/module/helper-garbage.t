#!/usr/bin/perl
# The module against a helper that answers garbage (a fake one on a unix
# socket, in this test's temp dir): a header injection through the id it
# names, output lengths that do not add up or wrap, bad frames, non-JSON,
# a reply to another request (its request_id), silence and a dropped
# connection (503: the helper went away, it may be
# back).  Every case is a clean 5xx problem+json, never a crash, a hang
# or an injected header.

use strict;
use warnings;

use Test::More;
use lib 't/lib';
use VetoNginx;
use IO::Socket::UNIX;
use POSIX qw(_exit);
use Time::HiRes qw(time sleep);

VetoNginx::need();

my $n = VetoNginx->new;
my $d = $n->dir;
my $sock = "$d/fake-helper.sock";
my $mode_file = "$d/mode";

sub mode { VetoNginx::spew($mode_file, $_[0]) }

# the request_id of the request being answered: a reply echoes it, as the
# helper's do (pipelined requests are checked against it)
our $RID;

sub frame
{
    my ($json, $payload) = @_;
    $payload //= '';
    $json =~ s/^\{/{"request_id":"$RID",/ if defined $RID;
    return 'VSB1' . pack('NN', length $json, length $payload) . $json . $payload;
}

my $srv = IO::Socket::UNIX->new(Local => $sock, Listen => 16)
    or die "listen $sock: $!";
chmod 0777, $sock;
my $pid = fork();
die "fork: $!" unless defined $pid;
if ($pid == 0) {
    while (my $c = $srv->accept) {
        my $hdr = '';
        while (length $hdr < 12) {
            my $r = sysread($c, $hdr, 12 - length $hdr, length $hdr) or last;
        }
        my ($jl, $pl) = unpack('NN', substr($hdr, 4, 8));
        my $body = '';
        while (length $body < $jl + $pl) {
            sysread($c, $body, $jl + $pl - length $body, length $body) or last;
        }
        my $m = VetoNginx::slurp($mode_file);
        ($RID) = $body =~ /"request_id":"([^"\\]*)"/;
        if ($m eq 'inject') {
            my $id = "sb-0123456789abcdef\r\nX-A: b";
            syswrite($c, frame(qq({"ok":true,"sandbox":{"id":"sb-0123456789abcdef\\r\\nX-A: b","state":"ready"}})));
        } elsif ($m eq 'lengths') {
            syswrite($c, frame('{"ok":true,"exit_code":0,"stdout_len":5,"stderr_len":0}', 'abc'));
        } elsif ($m eq 'wrap') {
            syswrite($c, frame('{"ok":true,"exit_code":0,"stdout_len":9223372036854775807,'
                               . '"stderr_len":9223372036854775807}', 'ab'));
        } elsif ($m eq 'badutf8') {
            syswrite($c, frame('{"ok":true,"exit_code":0,"stdout_len":2,"stderr_len":1}',
                               "\xff\xfe\xc3"));
        } elsif ($m eq 'magic') {
            syswrite($c, 'XXXX' . pack('NN', 2, 0) . '{}');
        } elsif ($m eq 'huge') {
            syswrite($c, 'VSB1' . pack('NN', 0xffffffff, 0xffffffff));
        } elsif ($m eq 'notjson') {
            syswrite($c, frame('not json at all'));
        } elsif ($m eq 'crossed') {
            # a well-formed reply, but to another request
            $RID = "x" . ($RID // '');
            syswrite($c, frame('{"ok":true,"sandboxes":[]}'));
        } elsif ($m eq 'nook') {
            syswrite($c, frame('{"sandbox":{}}'));
        } elsif ($m eq 'error') {
            syswrite($c, frame('{"ok":false,"error":"no_such_thing\r\nX: y","detail":"\u0000"}'));
        } elsif ($m eq 'close') {
            # nothing
        } elsif ($m eq 'silent') {
            sleep 1.5;    # the fake helper says nothing
        }
        close $c;
    }
    _exit(0);
}
close $srv;
END { local $?; kill 'TERM', $pid if $pid; waitpid $pid, 0 if $pid; }

my $veto = $n->default_veto;
$veto =~ s{veto_sandbox_helper unix:\S+;}{veto_sandbox_helper unix:$sock;};
$veto =~ s{veto_sandbox_helper_read_timeout \S+;}{veto_sandbox_helper_read_timeout 1s;};
$n->start(veto => $veto);

my $tok = $n->token;
my $sb = 'sb-0123456789abcdef01234567';

sub problem
{
    my ($name, $st, $h, $b, $want) = @_;
    is($st, $want, "$name: $want");
    like($h->{'content-type'} // '', qr{problem\+json}, "$name: problem+json")
        or diag $b;
}

mode('inject');
my ($st, $h, $b) = $n->request(POST => '/v1/sandboxes', $tok, {});
problem('an id with CR LF', $st, $h, $b, 502);
ok(!exists $h->{'x-a'}, 'no header injected');
ok(!defined $h->{location}, 'no Location');

mode('lengths');
($st, $h, $b) = $n->request(POST => "/v1/sandboxes/$sb/exec", $tok,
                            { argv => ['true'] });
problem('output lengths that do not add up', $st, $h, $b, 502);

mode('wrap');
($st, $h, $b) = $n->request(POST => "/v1/sandboxes/$sb/exec", $tok,
                            { argv => ['true'] });
problem('output lengths that wrap', $st, $h, $b, 502);

mode('badutf8');
my $j;
($st, $h, $b, $j) = $n->request(POST => "/v1/sandboxes/$sb/exec", $tok,
                                { argv => ['true'] });
is($st, 200, 'invalid UTF-8 output: 200');
is($j->{stdout_encoding}, 'base64', 'stdout as base64');
is($j->{stdout}, '//4=', 'the raw bytes');
is($j->{stderr_encoding}, 'base64', 'a cut sequence: base64');

for my $m (qw(magic huge notjson nook crossed)) {
    mode($m);
    ($st, $h, $b) = $n->request(GET => '/v1/sandboxes', $tok);
    problem("helper reply: $m", $st, $h, $b, 502);
}

# no reply at all: the helper went away (503, it may be back)
mode('close');
($st, $h, $b) = $n->request(GET => '/v1/sandboxes', $tok);
problem('helper reply: close', $st, $h, $b, 503);

mode('error');
($st, $h, $b, $j) = $n->request(GET => '/v1/sandboxes', $tok);
problem('an unknown helper error', $st, $h, $b, 502);
ok(!exists $h->{x}, 'its name injects no header');

mode('silent');
my $t0 = time;
($st, $h, $b) = $n->request(GET => '/v1/sandboxes', $tok);
problem('a silent helper', $st, $h, $b, 503);
ok(time - $t0 < 1.4, 'answered at the read timeout');

sleep 1;    # on purpose: the fake helper's silent turn ends
mode('close');
($st) = $n->request(GET => '/v1/sandboxes', $tok);
is($st, 503, 'the worker is still serving');
unlike($n->error_log, qr/\[(alert|emerg)\]|signal \d+/, 'no crash in the error log');

done_testing;
