# Exit codes and signals as the workload ends.
use strict;
use warnings;
use Test::More;
use lib 't/lib';
use VetoTest;

my $h = VetoTest->start;
my $id = $h->create_ok;

for my $code (0, 1, 3, 42, 255) {
    my ($e) = $h->sh($id, "exit $code");
    ok($e->{ok}, "exec exit $code ok") or diag explain $e;
    is($e->{exit_code}, $code, "exit_code $code");
    ok(!defined $e->{signal}, "signal null for exit $code");
    ok(!$e->{timed_out}, 'not timed out');
}

for my $sig ([ SEGV => 11 ], [ KILL => 9 ], [ TERM => 15 ], [ ABRT => 6 ]) {
    my ($e) = $h->sh($id, "kill -$sig->[0] \$\$");
    ok($e->{ok}, "exec kill -$sig->[0] ok") or diag explain $e;
    is($e->{signal}, $sig->[1], "signal $sig->[1]");
    ok(!defined $e->{exit_code}, "exit_code null for signal $sig->[0]");
    ok(!$e->{oom_killed} && !$e->{timed_out}, 'not oom, not timed out');
}

# The workload's direct exit decides, even if it ran children.
my ($e) = $h->sh($id, '(sleep 0.2; exit 7) & wait $!; exit $?');
is($e->{exit_code}, 7, 'exit status of a waited child propagates');

# exec failures are the workload's, not the helper's.
($e, my $out, my $err) = $h->exec($id, ['/no/such/binary']);
ok($e->{ok}, 'exec of a missing binary is a normal reply') or diag explain $e;
is($e->{exit_code}, 127, 'missing binary: exit 127');
like($err // '', qr{/no/such/binary}, 'stderr names the binary');

# a missing cwd is the request's fault, named: nothing ran
($e, $out, $err) = $h->exec($id, ['true'], cwd => '/no/such/dir');
ok(!$e->{ok} && ($e->{error} // '') eq 'bad_cwd', 'missing cwd: bad_cwd')
    or diag explain $e;
is($e->{field}, 'cwd', '... naming the field');
like($e->{detail} // '', qr{/no/such/dir}, '... and the path');

# A second and third exec in the same sandbox keep working.
($e, $out) = $h->sh($id, 'echo again');
is($out, "again\n", 'sandbox still usable');

# Bad argv
my ($r) = $h->call({ op => 'exec', tenant => 't1', agent => 'a1', id => $id,
                     argv => [] });
ok(!$r->{ok} && $r->{error} =~ /^bad_value$/, 'empty argv: bad_value')
    or diag explain $r;
($r) = $h->call({ op => 'exec', tenant => 't1', agent => 'a1', id => $id,
                  argv => [ 'echo', 5 ] });
is($r->{error}, 'bad_type', 'argv with a number: bad_type');
($r) = $h->call({ op => 'exec', tenant => 't1', agent => 'a1', id => $id,
                  argv => ['true'], env => { 'BAD-NAME' => 'x' } });
ok(!$r->{ok}, 'env name with a dash refused') or diag explain $r;
# cwd: relative to the workspace, or absolute
($e, $out) = $h->sh($id, 'mkdir -p /workspace/sub/dir && echo ok');
($e, $out) = $h->exec($id, ['pwd'], cwd => 'sub/dir');
is($out, "/workspace/sub/dir\n", 'a relative cwd is under /workspace');
($e, $out) = $h->exec($id, ['pwd'], cwd => '/workspace/sub');
is($out, "/workspace/sub\n", 'an absolute cwd as it is');
($e) = $h->exec($id, ['true'], cwd => 'no/such/dir');
is($e->{error}, 'bad_cwd', 'a missing relative cwd: bad_cwd, before it runs')
    or diag explain $e;
for my $bad ('../etc', 'sub/../..', 'sub//dir', './sub', "a\nb") {
    ($r) = $h->call({ op => 'exec', tenant => 't1', agent => 'a1', id => $id,
                      argv => ['true'], cwd => $bad });
    is($r->{error}, 'bad_path', "relative cwd \"$bad\" refused")
        or diag explain $r;
    is($r->{field}, 'cwd', '... naming the field');
}
like($r->{detail}, qr/relative cwd is under \/workspace/, '... and the rule');

# Protocol bounds on argv and env.
($r) = $h->call({ op => 'exec', tenant => 't1', agent => 'a1', id => $id,
                  argv => [ ('x') x 1025 ] });
ok(!$r->{ok}, 'argv of 1025 entries refused') or diag explain $r;
($r) = $h->call({ op => 'exec', tenant => 't1', agent => 'a1', id => $id,
                  argv => ['true'], env => { map { ("V$_" => 'x') } 1 .. 257 } });
ok(!$r->{ok}, 'env of 257 variables refused') or diag explain $r;
($r) = $h->call({ op => 'ping', request_id => 'r' x 129 });
ok(!$r->{ok}, 'request_id over 128 bytes refused') or diag explain $r;
ok($h->ping->{ok}, 'still serving');

is($h->destroy($id)->{state}, 'terminated', 'destroy');
$h->leaks_ok('after destroy');
$h->stop;
done_testing;
