#!/usr/bin/perl
# An exec's reply and its wait, bounded by what the helper may do:
# output that JSON escaping would blow up (control bytes, quotes) goes as
# base64, so a reply is at most 4/3 of the output it carries plus its
# head; and with no timeout from the request or the policy, the module
# waits for an exec as long as the helper may let it run, not only
# veto_sandbox_helper_read_timeout.

use strict;
use warnings;

use Test::More;
use MIME::Base64 qw(decode_base64);
use lib 't/lib';
use VetoNginx;
use Time::HiRes qw(time);
use POSIX ();

VetoNginx::need(qw(helper));

my $MIB = 1024 * 1024;

my $n = VetoNginx->new;
$n->start_helper(max_output_bytes => 16 * $MIB, default_output_bytes => $MIB,
                 max_timeout_s => 60, default_timeout_s => 20);

# a 1 s read timeout: an exec longer than that outlives it
my $veto = $n->default_veto;
$veto =~ s{veto_sandbox_helper_read_timeout \S+;}{veto_sandbox_helper_read_timeout 1s;};

my $policy = VetoNginx::default_policy();
# "free": no timeout default or ceiling, nothing about output
$policy->{tenants}{free} = { ceilings => { memory_mb => 512 } };
$n->start(veto => $veto, policy => $policy);

my $t = $n->token(tenant => 'free');
my ($st, $h, $b, $j);

($st, $h, $b, $j) = $n->request(POST => '/v1/sandboxes', $t,
                                { limits => { output_bytes => 8 * $MIB } });
is($st, 201, 'create with 8 MiB of output per stream') or diag $b;
my $id = $j->{id};

sub exec_sh
{
    my ($script, %o) = @_;
    return $n->request(POST => "/v1/sandboxes/$id/exec", $t,
                       { argv => ['sh', '-c', $script], %o });
}

# ---- 8 MiB of \x01: 48 MiB as \u0001, 10.7 MiB as base64
{
    my $len = 8 * $MIB;
    ($st, $h, $b, $j) = exec_sh("head -c $len /dev/zero | tr '\\000' '\\001'",
                                timeout_s => 30);
    is($st, 200, '8 MiB of control bytes: 200') or diag substr($b, 0, 300);
    is($j->{stdout_encoding}, 'base64', 'control bytes go as base64');
    my $raw = decode_base64($j->{stdout} // '');
    is(length $raw, $len, 'all of it');
    ok($raw eq ("\x01" x $len), 'the bytes themselves');
    my $bound = int(($len + 2) / 3) * 4 + 4096;
    ok(length $b <= $bound,
       "the reply (" . length($b) . " bytes) is within 4/3 of the output "
       . "+ 4 KiB ($bound)");
    is($h->{'content-length'}, length $b, 'Content-Length is the body');
}

# ---- the smaller encoding wins, stream by stream
{
    $t = $n->token(tenant => 'free');
    # quotes escape to two bytes each: base64 is smaller
    ($st, $h, $b, $j) = exec_sh('head -c 65536 /dev/zero | tr "\\000" "\\042"');
    is($st, 200, 'quotes: 200');
    is($j->{stdout_encoding}, 'base64', 'a stream of quotes goes as base64');
    ok(decode_base64($j->{stdout} // '') eq '"' x 65536, 'and decodes to them');

    # text with a little escaping stays text, byte for byte
    my $text = join('', map { "line $_:\t\"ok\" \\ caf\x{e9}\n" } 1 .. 2000);
    utf8::encode($text);
    VetoNginx::spew($n->dir . '/text.txt', $text);
    ($st) = $n->request(PUT => "/v1/sandboxes/$id/files?path=text.txt", $t,
                        $text);
    is($st, 200, 'text written');
    ($st, $h, $b, $j) = exec_sh('cat text.txt; printf "\\001\\002" >&2');
    is($st, 200, 'text: 200');
    is($j->{stdout_encoding}, 'utf-8', 'escaped text within 4/3: utf-8');
    my $got = $j->{stdout};
    utf8::encode($got);
    ok($got eq $text, 'the text is exact');
    is($j->{stderr_encoding}, 'base64', 'two control bytes: base64 (6x as \\u)');
    is(decode_base64($j->{stderr}), "\001\002", 'stderr decodes');

    # empty streams
    ($st, $h, $b, $j) = exec_sh('true');
    is($j->{stdout}, '', 'empty stdout');
    is($j->{stdout_encoding}, 'utf-8', 'empty: utf-8');
    is($j->{exit_code}, 0, 'exit code kept');

    # plain text goes from the helper's payload as it lies
    ($st, $h, $b, $j) = exec_sh('head -c 3000000 /dev/zero | tr "\\000" x');
    is($j->{stdout_encoding}, 'utf-8', 'plain ASCII: utf-8');
    is(length $j->{stdout}, 3000000, 'all of it');
    ok($j->{stdout} eq ('x' x 3000000), 'exactly');
}

# ---- a worker's memory over concurrent big replies (measured, reported)
{
    $t = $n->token(tenant => 'free');
    my ($worker) = $n->worker_pids;
    my $hwm = sub {
        my $s = VetoNginx::slurp("/proc/$worker/status");
        return $s =~ /^VmHWM:\s+(\d+) kB/m ? $1 : 0;
    };
    my $before = $hwm->();
    my @kids;
    for my $i (1 .. 4) {
        my $pid = fork();
        die "fork: $!" unless defined $pid;
        if ($pid == 0) {
            my ($s) = exec_sh("head -c $MIB /dev/zero | tr '\\000' '\\001' | "
                              . "head -c 8388608; head -c 8388608 /dev/zero "
                              . "| tr '\\000' '\\001'", timeout_s => 30);
            POSIX::_exit($s == 200 ? 0 : 1);
        }
        push @kids, $pid;
    }
    my $fails = 0;
    for (@kids) { waitpid($_, 0); $fails++ if $? }
    is($fails, 0, '4 concurrent 8 MiB control-byte execs answered 200');
    my $after = $hwm->();
    note(sprintf('worker peak RSS: %.1f MiB before, %.1f MiB after 4 '
                 . 'concurrent 8 MiB execs', $before / 1024, $after / 1024));
}

# ---- the wait: no timeout from request or policy, 1 s read timeout
{
    $t = $n->token(tenant => 'free');
    my $t0 = time;
    ($st, $h, $b, $j) = exec_sh('sleep 3; echo done');
    is($st, 200, 'an exec longer than the read timeout answers 200')
        or diag substr($b // '', 0, 500);
    is($j->{stdout}, "done\n", 'and ran to its end');
    ok(time - $t0 >= 3, 'it took its 3 s');

    # the sandbox's own timeout still ends it
    ($st, $h, $b, $j) = $n->request(POST => '/v1/sandboxes', $t,
                                    { limits => { timeout_s => 2 } });
    is($st, 201, 'a sandbox with a 2 s exec timeout');
    my $id2 = $j->{id};
    ($st, $h, $b, $j) = $n->request(POST => "/v1/sandboxes/$id2/exec", $t,
                                    { argv => ['sleep', '10'] });
    is($st, 200, 'its exec past 2 s answers 200') or diag $b;
    is($j->{timed_out}, JSON::PP::true, 'timed out by the helper');
    $n->request(DELETE => "/v1/sandboxes/$id2", $t);

    # the ceilings it learns stay off the public health check
    ($st, $h, $b, $j) = $n->request(GET => '/v1/health');
    is($st, 200, 'health');
    ok(!exists $j->{helper}{limits_max} && !exists $j->{helper}{limits_default},
       "health shows no helper ceilings");

    # a request's own timeout_s sets the wait as before
    ($st, $h, $b, $j) = exec_sh('sleep 2; echo ok', timeout_s => 5);
    is($st, 200, 'timeout_s 5, a 2 s exec: 200');
}

$t = $n->token(tenant => 'free');
($st) = $n->request(DELETE => "/v1/sandboxes/$id", $t);
is($st, 200, 'delete');
unlike($n->error_log, qr/\[(alert|emerg)\]|exited on signal/, 'no alerts');

done_testing;
