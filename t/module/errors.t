#!/usr/bin/perl
# Errors that tell an agent the truth it can act on: a missing file is
# not a missing sandbox; every helper error maps to a status, a code and
# the field or limit at fault (a fake helper answers each one); uploads
# keep the mode asked for (?mode=0755), and a wrong query names the
# argument at fault; a body over the policy's file_bytes names file_bytes
# even when nginx refuses it first; a helper that dies during an exec is
# 503 with whether the request may be sent again.

use strict;
use warnings;

use Test::More;
use lib 't/lib';
use VetoNginx;
use Eventually qw(eventually);
use IO::Socket::UNIX;
use POSIX qw(_exit);
use Time::HiRes qw(sleep time);

VetoNginx::need(qw(helper));

my $KIB = 1024;
my $MIB = 1024 * 1024;

sub problem_is
{
    my ($name, $got, $status, $code, %also) = @_;
    my ($st, $h, $b, $j) = @$got;
    is($st, $status, "$name: $status") or diag $b;
    is($j->{type} // '', "urn:veto-sandbox:problem:$code", "$name: $code")
        or diag $b;
    for my $k (sort keys %also) {
        if (!defined $also{$k}) {
            ok(!exists $j->{$k}, "$name: no $k");
        } else {
            is($j->{$k}, $also{$k}, "$name: $k $also{$k}");
        }
    }
}

# =====================================================================
# The real helper
# =====================================================================

my $n = VetoNginx->new;
my $helper = $n->start_helper(max_file_bytes => $MIB,
                              max_execs_per_sandbox => 1);

my $policy = VetoNginx::default_policy();
$policy->{tenants}{acme}{ceilings}{file_bytes} = 512 * $KIB;
# over client_max_body_size (2m): nginx -t warns about it
$policy->{tenants}{bulk} = { ceilings => { file_bytes => 4 * $MIB } };
$n->start(policy => $policy, max_body => '2m');

like($n->error_log, qr/"client_max_body_size" 2097152 of "location \/v1\/" is below the file_bytes ceiling 4194304/,
     'nginx warns: client_max_body_size below a file_bytes ceiling');

my $t = $n->token;
my $g = $n->token(tenant => 'globex');
my ($st, $h, $b, $j);

($st, $h, $b, $j) = $n->request(POST => '/v1/sandboxes', $t, {});
is($st, 201, 'create') or diag $b;
my $id = $j->{id};
($st, $h, $b, $j) = $n->request(POST => '/v1/sandboxes', $g, {});
is($st, 201, 'create (globex)') or diag $b;
my $gid = $j->{id};
my $unknown = 'sb-' . ('0' x 24);

# ---- a missing file is not a missing sandbox
problem_is('missing file',
           [$n->request(GET => "/v1/sandboxes/$id/files?path=no/such.txt", $t)],
           404, 'file_not_found', field => 'path', path => 'no/such.txt');
($st, $h, $b, $j) = $n->request(GET => "/v1/sandboxes/$id/files?path=nope", $t);
unlike($j->{detail}, qr/no such sandbox/i, 'its detail is not "no such sandbox"');
problem_is('missing sandbox',
           [$n->request(GET => "/v1/sandboxes/$unknown/files?path=nope", $t)],
           404, 'not_found', detail => 'no such sandbox', field => undef,
           path => undef);
problem_is("another tenant's sandbox, same file",
           [$n->request(GET => "/v1/sandboxes/$id/files?path=nope", $g)],
           404, 'not_found', detail => 'no such sandbox', path => undef);

# ---- modes
{
    my $script = "#!/bin/sh\necho run \"\$@\"\n";
    ($st, $h, $b, $j) = $n->request(PUT => "/v1/sandboxes/$id/files?path=bin/s.sh&mode=0755",
                                    $t, $script);
    is($st, 200, 'PUT ?mode=0755') or diag $b;
    ($st, $h, $b, $j) = $n->request(POST => "/v1/sandboxes/$id/exec", $t,
        { argv => ['sh', '-c', 'stat -c %a bin/s.sh; ./bin/s.sh ok'] });
    is($j->{stdout}, "755\nrun ok\n", 'the file is 0755 and runs') or diag $b;

    ($st) = $n->request(PUT => "/v1/sandboxes/$id/files?mode=600&path=p.txt",
                        $t, 'x');
    is($st, 200, 'PUT ?mode=600 (three digits, any order)');
    ($st) = $n->request(PUT => "/v1/sandboxes/$id/files?path=d.txt", $t, 'x');
    is($st, 200, 'PUT without mode');
    ($st, $h, $b, $j) = $n->request(POST => "/v1/sandboxes/$id/exec", $t,
        { argv => ['stat', '-c', '%a', 'p.txt', 'd.txt'] });
    is($j->{stdout}, "600\n644\n", 'mode 600 kept; the default is 0644');

    for my $bad (qw(4755 2755 1777 0800 abc 07777 12345), '') {
        problem_is("mode '$bad'",
                   [$n->request(PUT => "/v1/sandboxes/$id/files?path=m&mode=$bad",
                                $t, 'x')],
                   400, 'bad_value', field => 'mode');
    }
    problem_is('mode twice',
               [$n->request(PUT => "/v1/sandboxes/$id/files?path=m&mode=0755&mode=0644",
                            $t, 'x')],
               400, 'bad_value', field => 'mode');
    problem_is('path twice',
               [$n->request(PUT => "/v1/sandboxes/$id/files?path=a&path=b", $t, 'x')],
               400, 'bad_value', field => 'path');
    problem_is('an unknown argument',
               [$n->request(PUT => "/v1/sandboxes/$id/files?path=a&owner=root",
                            $t, 'x')],
               400, 'unknown_field', field => 'owner');
    problem_is('an argument name that does not decode',
               [$n->request(PUT => "/v1/sandboxes/$id/files?path=a&m%zzode=1",
                            $t, 'x')],
               400, 'bad_value', field => 'query');
    problem_is('mode on a read',
               [$n->request(GET => "/v1/sandboxes/$id/files?path=a&mode=0755", $t)],
               400, 'unknown_field', field => 'mode');
    problem_is('no path',
               [$n->request(PUT => "/v1/sandboxes/$id/files?mode=0755", $t, 'x')],
               400, 'missing_field', field => 'path');
}

# ---- bodies over the policy's file_bytes, and over client_max_body_size
{
    my $url = "/v1/sandboxes/$id/files?path=big.bin";
    problem_is('700 KiB, acme file_bytes 512 KiB',
               [$n->request(PUT => $url, $t, 'x' x (700 * $KIB))],
               413, 'over_ceiling', limit => 'file_bytes', ceiling => 512 * $KIB);
    # nginx refuses it (client_max_body_size 2m) before the module runs
    problem_is('3 MiB, over client_max_body_size too',
               [$n->request(PUT => $url, $t, 'x' x (3 * $MIB))],
               413, 'over_ceiling', limit => 'file_bytes', ceiling => 512 * $KIB);
    my @chunks = (('y' x (256 * $KIB)) x 12);
    problem_is('3 MiB chunked',
               [$n->request(PUT => $url, $t, sub { shift @chunks })],
               413, 'over_ceiling', limit => 'file_bytes', ceiling => 512 * $KIB);
    @chunks = (('y' x (256 * $KIB)) x 3);
    problem_is('768 KiB chunked, within client_max_body_size',
               [$n->request(PUT => $url, $t, sub { shift @chunks })],
               413, 'over_ceiling', limit => 'file_bytes');

    # no file_bytes in the policy: client_max_body_size is the limit
    problem_is('3 MiB, no file_bytes in the policy',
               [$n->request(PUT => "/v1/sandboxes/$gid/files?path=big.bin", $g,
                            'x' x (3 * $MIB))],
               413, 'body_too_large', limit => 'client_max_body_size',
               ceiling => 2 * $MIB);

    # within the policy and client_max_body_size, over the helper's 1 MiB
    problem_is("1.5 MiB: over the helper's max_file_bytes",
               [$n->request(PUT => "/v1/sandboxes/$gid/files?path=big.bin", $g,
                            'x' x (1536 * $KIB))],
               413, 'frame_too_large', limit => 'file_bytes');
}

# ---- other helper errors through the real helper
{
    ($st, $h, $b, $j) = $n->request(POST => "/v1/sandboxes/$id/exec", $t,
        { argv => ['sh', '-c', 'head -c 2097152 /dev/zero > huge.bin'] });
    is($st, 200, 'a 2 MiB file made in the sandbox');
    problem_is('reading a file over max_file_bytes',
               [$n->request(GET => "/v1/sandboxes/$id/files?path=huge.bin", $t)],
               422, 'file_too_large', limit => 'file_bytes');
    problem_is('a directory',
               [$n->request(GET => "/v1/sandboxes/$id/files?path=bin", $t)],
               400, 'not_a_file', field => 'path');

    # argv over the helper's 64 KiB request: refused before anything else
    problem_is('argv of 100 KiB',
               [$n->request(POST => "/v1/sandboxes/$id/exec", $t,
                            { argv => ['true', 'a' x (100 * $KIB)] })],
               413, 'body_too_large', limit => 'request_json');

    # max_execs_per_sandbox 1: a second concurrent exec waits its turn
    my $pid = fork();
    die "fork: $!" unless defined $pid;
    if ($pid == 0) {
        $n->request(POST => "/v1/sandboxes/$id/exec", $t,
                    { argv => ['sleep', '3'] });
        _exit(0);
    }
    eventually('the first exec runs', 5, sub { $helper->count_procs >= 1 });
    my @r = $n->request(POST => "/v1/sandboxes/$id/exec", $t,
                        { argv => ['true'] });
    problem_is('a second exec in a 1-exec sandbox', \@r, 429, 'busy');
    is($r[1]{'retry-after'}, 1, 'busy: Retry-After 1');
    waitpid($pid, 0);
}

# ---- the helper dies during an exec
{
    my $out = $n->dir . '/died.json';
    my $pid = fork();
    die "fork: $!" unless defined $pid;
    if ($pid == 0) {
        my @r = $n->request(POST => "/v1/sandboxes/$id/exec", $t,
                            { argv => ['sleep', '20'] });
        VetoNginx::spew($out, $VetoNginx::JSON->encode(
            [$r[0], $r[1]{'retry-after'}, $r[2]]));
        _exit(0);
    }
    eventually('the exec runs', 5, sub { $helper->count_procs >= 1 });
    $helper->kill9;
    waitpid($pid, 0);
    my ($status, $ra, $body) = @{ $VetoNginx::JSON->decode(VetoNginx::slurp($out)) };
    my $pj = eval { $VetoNginx::JSON->decode($body) } // {};
    problem_is('helper killed mid-exec', [$status, {}, $body, $pj], 503,
               'helper_unavailable');
    is($pj->{retry_safe}, JSON::PP::false, 'not safe to send again as it is');
    like($pj->{detail} // '', qr/carried out in part.*GET \/v1\/sandboxes/,
         'the detail says to check first');
    is($ra, 1, 'Retry-After: the helper may be back soon');

    # helper down: nothing was sent, a retry is safe
    my @r = $n->request(POST => "/v1/sandboxes/$id/exec", $t,
                        { argv => ['true'] });
    problem_is('helper down', \@r, 503, 'helper_unavailable',
               retry_safe => JSON::PP::true);

    $helper->launch;
    ($st) = $n->request(GET => '/v1/sandboxes', $t);
    is($st, 200, 'the helper is back');
}

unlike($n->error_log, qr/\[(alert|emerg)\]|exited on signal/, 'no alerts');

# =====================================================================
# Every helper error, from a fake helper
# =====================================================================

my $f = VetoNginx->new;
my $d = $f->dir;
my $sock = "$d/fake-helper.sock";
my $reply_file = "$d/reply";

my $srv = IO::Socket::UNIX->new(Local => $sock, Listen => 16)
    or die "listen $sock: $!";
chmod 0777, $sock;
my $fake = fork();
die "fork: $!" unless defined $fake;
if ($fake == 0) {
    # not the test's signal handlers: they would clean up its helpers
    $SIG{$_} = 'DEFAULT' for qw(INT TERM HUP);
    # like the real helper, a connection is kept for the next request
    # (nginx keeps it: an exec's ping and the exec follow on one), several
    # are served at once (a worker's quick requests share one, pipelined,
    # the others have their own), and a reply echoes the request's
    # request_id; the same reply to each, "close" closes it unanswered
    $SIG{CHLD} = 'IGNORE';
    while (my $c = $srv->accept) {
        my $kid = fork();
        if (!defined $kid || $kid) {
            close $c;
            next;
        }
        for (;;) {
            my $hdr = '';
            while (length $hdr < 12) {
                sysread($c, $hdr, 12 - length $hdr, length $hdr) or last;
            }
            last if length $hdr < 12;
            my ($jl, $pl) = unpack('NN', substr($hdr, 4, 8));
            my $body = '';
            while (length $body < $jl + $pl) {
                sysread($c, $body, $jl + $pl - length $body, length $body)
                    or last;
            }
            last if length $body < $jl + $pl;
            my $json = VetoNginx::slurp($reply_file);
            last if $json eq 'close';
            my ($rid) = $body =~ /"request_id":"([^"\\]*)"/;
            $json =~ s/^\{/{"request_id":"$rid",/ if defined $rid;
            syswrite($c, 'VSB1' . pack('NN', length $json, 0) . $json);
        }
        _exit(0);
    }
    _exit(0);
}
close $srv;
END { local $?; if ($fake) { kill 'TERM', $fake; waitpid $fake, 0 } }

my $veto = $f->default_veto;
$veto =~ s{veto_sandbox_helper unix:\S+;}{veto_sandbox_helper unix:$sock;};
$f->start(veto => $veto);

my $ft = $f->token;
my $sb = 'sb-0123456789abcdef01234567';
my %req = (
    create => [POST => '/v1/sandboxes', {}],
    get    => [GET => "/v1/sandboxes/$sb"],
    exec   => [POST => "/v1/sandboxes/$sb/exec", { argv => ['true'] }],
    read   => [GET => "/v1/sandboxes/$sb/files?path=a/b"],
    write  => [PUT => "/v1/sandboxes/$sb/files?path=a/b", 'data'],
    delete => [DELETE => "/v1/sandboxes/$sb"],
);

# [request, helper reply, status, code, members (undef: absent)]
my @cases = (
    ['get', { error => 'not_found', field => 'id' }, 404, 'not_found',
     detail => 'no such sandbox', field => undef],
    ['read', { error => 'not_found', field => 'path' }, 404, 'file_not_found',
     field => 'path', path => 'a/b'],
    ['read', { error => 'not_found', field => 'id' }, 404, 'not_found',
     path => undef],
    ['create', { error => 'over_ceiling', field => 'limits', limit => 'pids' },
     422, 'over_ceiling', limit => 'pids'],
    ['exec', { error => 'bad_type', field => 'argv' }, 400, 'bad_type',
     field => 'argv'],
    ['exec', { error => 'bad_value', field => 'env' }, 400, 'bad_value',
     field => 'env'],
    ['read', { error => 'bad_path', field => 'path' }, 400, 'bad_path',
     field => 'path'],
    ['read', { error => 'not_a_file', field => 'path' }, 400, 'not_a_file',
     field => 'path'],
    (map { ['get', { error => $_ }, 502, $_] }
         qw(bad_json unknown_field missing_field unknown_op bad_frame)),
    ['get', { error => 'not_permitted' }, 502, 'not_permitted',
     detail => 'the sandbox helper does not accept this gateway'],
    ['create', { error => 'capacity' }, 503, 'capacity'],
    ['exec', { error => 'busy' }, 429, 'busy'],
    ['exec', { error => 'busy', field => 'id' }, 409, 'busy', field => 'id'],
    ['write', { error => 'file_too_large' }, 413, 'file_too_large',
     limit => 'file_bytes'],
    ['read', { error => 'file_too_large', field => 'path' }, 422,
     'file_too_large', limit => 'file_bytes'],
    ['write', { error => 'frame_too_large' }, 413, 'frame_too_large',
     limit => 'file_bytes'],
    ['exec', { error => 'frame_too_large' }, 413, 'frame_too_large',
     field => 'stdin'],
    ['write', { error => 'no_space' }, 507, 'no_space'],
    (map { ['exec', { error => $_ }, 500, $_] }
         qw(io_error exec_failed internal)),
    ['delete', { error => 'termination_failed', step => 'mounts' }, 500,
     'termination_failed', step => 'mounts'],
    ['get', { error => 'no_such_error' }, 502, 'helper_error'],
);

for my $c (@cases) {
    my ($what, $reply, $status, $code, %also) = @$c;
    VetoNginx::spew($reply_file, $VetoNginx::JSON->encode(
        { ok => JSON::PP::false, detail => 'the helper says', %$reply }));
    my ($m, $path, $body) = @{ $req{$what} };
    my @r = $f->request($m => $path, $ft, $body);
    my $name = "$what: helper $reply->{error}"
               . ($reply->{field} ? "/$reply->{field}" : '');
    problem_is($name, \@r, $status, $code, %also);
    my $ra = $r[1]{'retry-after'};
    if ($status == 503 || ($status == 429)) {
        is($ra, 1, "$name: Retry-After 1");
    } else {
        ok(!defined $ra, "$name: no Retry-After");
    }
}

# a connection closed before the reply: 503, retry safe by method
VetoNginx::spew($reply_file, 'close');
for my $what (qw(get read write delete create exec)) {
    my ($m, $path, $body) = @{ $req{$what} };
    my @r = $f->request($m => $path, $ft, $body);
    my $safe = $m eq 'POST' ? 0 : 1;
    problem_is("$what: connection closed", \@r, 503, 'helper_unavailable',
               retry_safe => $safe ? JSON::PP::true : JSON::PP::false);
}

unlike($f->error_log, qr/\[(alert|emerg)\]|exited on signal/, 'no alerts');

done_testing;
