# write_file / read_file round trips: text, binary, empty, nested dirs,
# mode, size and sha256 on both sides; the file is really in the workspace.
use strict;
use warnings;
use utf8;
use Test::More;
use Digest::SHA qw(sha256_hex);
use lib 't/lib';
use VetoTest;

binmode(Test::More->builder->$_, ":utf8") for qw(output failure_output);
my $h = VetoTest->start;
my $id = $h->create_ok;

my %files = (
    'hello.txt'             => "hello\n",
    'empty'                 => '',
    'bin/all-bytes.bin'     => join('', map { chr } 0 .. 255) x 64,
    'a/b/c/d/e/deep.dat'    => pack('N*', map { $_ * 2654435761 % 2**32 } 1 .. 50000),
    'sp ace/ünï.txt'        => "utf8 name\n",
    'big.bin'               => VetoTest::random_hex(2 * 1024 * 1024),   # 4 MiB
);

for my $path (sort keys %files) {
    my $data = $files{$path};
    my $r = $h->write_file($id, $path, $data);
    ok($r->{ok}, "write_file $path") or diag explain $r;
    is($r->{size}, length $data, "write_file $path: size");
    is($r->{sha256}, sha256_hex($data), "write_file $path: sha256");

    my ($rr, $back) = $h->read_file($id, $path);
    ok($rr->{ok}, "read_file $path") or diag explain $rr;
    is($rr->{size}, length $data, "read_file $path: size");
    is($rr->{sha256}, sha256_hex($data), "read_file $path: sha256");
    ok($back eq $data, "read_file $path: content identical");
}

# The workload sees the same bytes, owned by the workload user.
my ($e, $out) = $h->sh($id, 'sha256sum /workspace/bin/all-bytes.bin; '
    . 'stat -c "%u %g %a" /workspace/hello.txt /workspace/a/b/c');
my ($sum) = split ' ', ($out // '');
is($sum, sha256_hex($files{'bin/all-bytes.bin'}), 'workload sees the same bytes');
like($out, qr/^1000 1000 644\n1000 1000 755\n\z/m,
     'file 0644 and created dirs 0755, owned by the workload user')
    or diag $out;

# A file the workload writes can be read back.
($e) = $h->sh($id, 'mkdir -p /workspace/out && printf "from inside\001\n" > /workspace/out/r.txt');
is($e->{exit_code}, 0, 'workload wrote a file');
my ($rr, $back) = $h->read_file($id, 'out/r.txt');
is($back, "from inside\x01\n", 'read_file of a workload-written file');

# Overwrite replaces, mode is honoured.
my $r = $h->write_file($id, 'hello.txt', "new\n", mode => 0755);
ok($r->{ok}, 'overwrite with mode 0755');
($e, $out) = $h->sh($id, 'cat /workspace/hello.txt; stat -c %a /workspace/hello.txt; /workspace/hello.txt; echo rc=$?');
like($out, qr/^new\n755\n/, 'content replaced, mode 0755');
$r = $h->write_file($id, 's.sh', "#!/bin/sh\necho ran \$0\n", mode => 0755);
ok($r->{ok}, 'script uploaded with mode 0755');
($e, $out) = $h->sh($id, 'cd /workspace && ./s.sh');
is($out, "ran ./s.sh\n", 'an uploaded 0755 script runs as ./s.sh');

# mode: permission bits only; setuid, setgid and sticky are refused by
# name, never masked away, and the file is not written.
for my $m ([0700, '700'], [0600, '600'], [0, '0']) {
    $r = $h->write_file($id, "m$m->[1]", "x\n", mode => $m->[0]);
    ok($r->{ok}, sprintf('mode %04o accepted', $m->[0])) or diag explain $r;
    ($e, $out) = $h->sh($id, "stat -c %a /workspace/m$m->[1]");
    is($out, "$m->[1]\n", sprintf('mode %04o applied', $m->[0]));
}
for my $m (04755, 02755, 01777, 06777, 07777, 01000, -1, 0x10000) {
    $r = $h->write_file($id, 'special', "x\n", mode => $m);
    is($r->{error}, 'bad_value', sprintf('mode %o: bad_value', $m))
        or diag explain $r;
    is($r->{field}, 'mode', sprintf('mode %o: field "mode"', $m));
}
like($r->{detail}, qr/setuid, setgid and sticky bits are refused/,
     'the detail names the rule');
for my $m ('0755', 7.5, JSON::PP::true, [493]) {
    $r = $h->write_file($id, 'special', "x\n", mode => $m);
    is($r->{error}, 'bad_type', "mode of the wrong type: bad_type");
    is($r->{field}, 'mode', 'field "mode"');
}
($e, $out) = $h->sh($id, 'test -e /workspace/special && echo exists || echo absent');
is($out, "absent\n", 'no refused write left a file');

# Errors
($rr) = $h->read_file($id, 'nope.txt');
ok(!$rr->{ok}, 'read of a missing file fails') or diag explain $rr;
is($rr->{error}, 'not_found', 'not_found');
is($rr->{field}, 'path', 'naming the path, not the sandbox (field "path")');
($rr) = $h->read_file($id, 'a/b');
is($rr->{error}, 'not_a_file', 'read of a directory: not_a_file');
for my $bad ('../etc/passwd', '/etc/passwd', 'a/../../x', 'a//b', './x',
             'a/./b', 'a/', '', ('x' x 256) . '/y', "a\nb", '/workspace',
             '/workspace/', '/workspace/../etc/passwd', '/workspace//a',
             '/workspacex/a', '/tmp/x') {
    my $r2 = $h->write_file($id, $bad, 'x');
    is($r2->{error}, 'bad_path', "write_file path '" . ($bad =~ s/\n/\\n/r) . "': bad_path")
        or diag explain $r2;
    my ($r3) = $h->read_file($id, $bad);
    is($r3->{error}, 'bad_path', "read_file path '" . ($bad =~ s/\n/\\n/r) . "': bad_path");
}
like($h->write_file($id, '/etc/passwd', 'x')->{detail},
     qr/absolute path must be \/workspace or under \/workspace\//,
     'an absolute path outside: the detail says the rule');

# both forms of a path name the same file, answered in the relative form
$r = $h->write_file($id, '/workspace/abs/form.txt', "both\n");
ok($r->{ok}, 'write_file with /workspace/abs/form.txt') or diag explain $r;
is($r->{path}, 'abs/form.txt', 'the reply names it workspace-relative');
my $data;
($rr, $data) = $h->read_file($id, 'abs/form.txt');
is($data, "both\n", 'read back by its relative path');
($rr, $data) = $h->read_file($id, '/workspace/abs/form.txt');
is($data, "both\n", 'and by its absolute path');

# jansson refuses \u0000 at parse time unless asked not to: either way
# the request must fail before touching a file.
my $r2 = $h->write_file($id, "a\x00b", 'x');
like($r2->{error} // '', qr/^(bad_path|bad_json|bad_value)$/,
     "path with NUL refused ($r2->{error})");
$r = $h->write_file($id, 'too-big', 'x' x ($h->cf('max_file_bytes') + 1));
ok(($r->{error} // '') =~ /^(file_too_large|frame_too_large|<eof>)$/,
   "write over max_file_bytes refused ($r->{error})");
ok($h->ping->{ok}, 'helper still serving');

# Reading back a file larger than max_file_bytes made inside.
($e) = $h->sh($id, 'head -c ' . ($h->cf('max_file_bytes') + 1) . ' /dev/zero > /workspace/huge');
($rr) = $h->read_file($id, 'huge');
is($rr->{error}, 'file_too_large', 'read of a file over max_file_bytes: file_too_large');

is($h->destroy($id)->{state}, 'terminated', 'destroy');
$h->leaks_ok('after destroy');
$h->stop;
done_testing;
