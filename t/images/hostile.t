# Hostile images: each refused, or neutralised, with a clear error; after
# every one, nothing outside the store changed (a sentinel directory with
# one file, named by absolute and relative paths in the layers), nothing
# is left in staging/, and no refused image is in the store.
use strict;
use warnings;
use Test::More;
use lib 't/lib';
use VetoImage;
use JSON::PP;

my $s = VetoImage->new;
my $sent = $s->sentinel;               # absolute, outside the store
my $up = '../' x 12;

sub base_image
{
    return $s->umoci_image({ '/opt/base' => "base\n" });
}

# layers: list of [ entries... ]; returns (rc, meta, err, digest)
sub try_layers
{
    my ($name, $layers, @opts) = @_;
    my $lay = base_image();
    $lay = $s->add_layer($lay, VetoImage::tar(@$_)) for @$layers;
    my ($rc, $meta, $err) = $s->import_json(@opts, $lay->{dir},
                                            $lay->{digest});
    return ($rc, $meta, $err, $lay->{digest});
}

sub clean_after
{
    my ($name, $digest, $refused) = @_;
    ok($s->sentinel_intact, "$name: nothing outside the store changed");
    is_deeply([ $s->staging_entries ], [], "$name: staging is empty");
    if ($refused) {
        ok(!-e $s->tree($digest), "$name: no image in the store");
    }
}

sub refused
{
    my ($name, $layers, $re, @opts) = @_;
    my ($rc, $meta, $err, $digest) = try_layers($name, $layers, @opts);
    is($rc, 1, "$name: refused");
    like($err, $re, "$name: the error says why") or diag $err;
    clean_after($name, $digest, 1);
}

sub neutralised
{
    my ($name, $layers, $check, @opts) = @_;
    my ($rc, $meta, $err, $digest) = try_layers($name, $layers, @opts);
    is($rc, 0, "$name: imported") or diag $err;
    $check->($s->tree($digest), $meta) if $rc == 0;
    clean_after($name, $digest, 0);
}

# ---- path escapes ----

for my $p ("../pwned", "$up$sent/pwned", "a/../../pwned", "./../pwned",
           "opt/../../../pwned")
{
    refused("entry '$p'", [[ { name => $p, data => "x" } ]],
            qr/"\.\." component/);
}

refused('hard link to ../', [[ { name => 'hl', type => '1',
                                 link => "${up}etc/passwd" } ]],
        qr/hard link .*"\.\." component/);
refused('hard link to an absolute host path',
        [[ { name => 'hl', type => '1', link => "$sent/victim" } ]],
        qr/hard link "hl": target .* is missing/);

neutralised('absolute entry name',
            [[ { name => "$sent/pwned", data => "abs" } ]],
            sub {
                my ($t) = @_;
                is($s->read_file("$t$sent/pwned"), 'abs',
                   'absolute entry name: lands inside the tree');
            });

# a symlink to a host path resolves inside the tree: where the tree has
# that path, the file lands there; where it does not, it is refused
neutralised('write through an absolute symlink',
            [[ { name => "$sent/placeholder", data => 'p' },
               { name => 'escape', type => '2', link => $sent } ],
             [ { name => 'escape/pwned', data => 'through' } ]],
            sub {
                my ($t) = @_;
                is($s->read_file("$t$sent/pwned"), 'through',
                   'symlink to a host path: resolved inside the tree');
            });

neutralised('write through a relative symlink climbing out',
            [[ { name => "$sent/placeholder", data => 'p' },
               { name => 'opt/up', type => '2', link => "$up$sent" } ],
             [ { name => 'opt/up/pwned', data => 'climb' } ]],
            sub {
                my ($t) = @_;
                is($s->read_file("$t$sent/pwned"), 'climb',
                   '../ past the root stops at the root');
            });

refused('write through a symlink to a host path the tree lacks',
        [[ { name => 'escape', type => '2', link => $sent } ],
         [ { name => 'escape/pwned', data => 'through' } ]],
        qr/dangling symlink is in the way/);

# ---- whiteouts aimed outside ----

neutralised('whiteout through a symlink to a host directory',
            [[ { name => 'wo', type => '2', link => $sent } ],
             [ { name => 'wo/.wh.victim', data => '' },
               { name => 'wo/.wh..wh..opq', data => '' } ]],
            sub { pass('whiteouts through a symlink resolve inside') });

refused('whiteout of ..', [[ { name => 'opt/.wh..', data => '' } ]],
        qr/names no file/);
refused('whiteout climbing out', [[ { name => "$up$sent/.wh.victim",
                                      data => '' } ]],
        qr/"\.\." component/);

neutralised('whiteout and opaque dir inside the tree',
            [[ { name => 'opt/keep', data => 'k' },
               { name => 'opt/gone', data => 'g' },
               { name => 'srv/', type => '5' },
               { name => 'srv/old', data => 'o' } ],
             [ { name => 'opt/.wh.gone', data => '' },
               { name => 'srv/new', data => 'n' },
               { name => 'srv/.wh..wh..opq', data => '' } ]],
            sub {
                my ($t, $m) = @_;
                ok(-e "$t/opt/keep" && !-e "$t/opt/gone",
                   'whiteout removes the lower file only');
                ok(-e "$t/srv/new" && !-e "$t/srv/old",
                   'opaque: lower entries gone, its own layer kept '
                   . '(whatever the order)');
                ok(!-e "$t/opt/.wh.gone", 'no whiteout file is left');
                is($m->{stats}{whiteouts}, 1, 'one whiteout counted');
            });

# ---- mount points that are symlinks ----

for my $mp ('dev', 'proc', 'sys', 'etc/resolv.conf', 'etc', 'tmp') {
    refused("symlinked /$mp",
            [[ { name => $mp, type => '2', link => '/' } ]],
            qr{/\Q$mp\E is a symlink});
}

refused('/dev a file', [[ { name => 'dev', data => 'x' } ]],
        qr{/dev is not a directory});

# ---- privileges in files ----

neutralised('setuid, setgid, devices, fifos, huge ids',
            [[ { name => 'usr/bin/su2', data => "#!/bin/sh\n",
                 mode => 04755 },
               { name => 'usr/bin/sg2', data => "#!/bin/sh\n",
                 mode => 02755 },
               { name => 'srv/', type => '5', mode => 07777 },
               { name => 'dev/mem2', type => '3', major => 1, minor => 1 },
               { name => 'dev/sda9', type => '4', major => 8, minor => 9 },
               { name => 'srv/fifo', type => '6' },
               { name => 'srv/bigid', data => 'i', uid => 4294967294,
                 gid => 3000000 },
               { name => 'srv/owned', data => 'o', uid => 1000,
                 gid => 1000 } ]],
            sub {
                my ($t, $m) = @_;
                is((lstat "$t/usr/bin/su2")[2] & 07777, 0755,
                   'setuid dropped');
                is((lstat "$t/usr/bin/sg2")[2] & 07777, 0755,
                   'setgid dropped');
                is((lstat "$t/srv")[2] & 07777, 01777,
                   'setuid/setgid dropped from a directory, sticky kept');
                ok(!-e "$t/dev/mem2" && !-e "$t/dev/sda9",
                   'device nodes not created');
                ok(!-e "$t/srv/fifo", 'fifo not created');
                is($m->{stats}{setid_dropped}, 3, 'three modes counted');
                is($m->{stats}{specials_dropped}, 3, 'three specials counted');
                my @b = lstat "$t/srv/bigid";
                is("$b[4]:$b[5]", '65534:65534', 'ids over 65535: nobody');
                my @o = lstat "$t/srv/owned";
                is("$o[4]:$o[5]", '1000:1000', 'image ids kept');
                is($m->{stats}{ids_squashed}, 1, 'one squash counted');
            });

# ---- sizes ----

# a 10 GB file declared in the header (the data never comes)
my $big = VetoImage::tar_entry(name => 'big', size => 10 * 2**30)
          . ("\0" x 4096);
{
    my $lay = $s->add_layer(base_image(), $big);
    my ($rc, undef, $err) = $s->ctl('import', $lay->{dir}, $lay->{digest});
    is($rc, 1, '10 GB file: refused');
    like($err, qr/declares 10737418240 bytes, more than the per-file bound/,
         '10 GB file: the bound is named') or diag $err;
    clean_after('10 GB file', $lay->{digest}, 1);
}

# a real 10 GB sparse file, archived by GNU tar as sparse (both formats)
for my $fmt ('gnu', 'posix') {
    my $dir = $s->work . "/sparse-$fmt";
    mkdir $dir;
    VetoImage::run('truncate', '-s', '10G', "$dir/sparse");
    VetoImage::run('tar', '-C', $dir, "--format=$fmt", '--sparse', '-cf',
                   "$dir.tar", 'sparse');
    unlink "$dir/sparse";
    my $lay = $s->add_layer_file(base_image(), "$dir.tar");
    my ($rc, undef, $err) = $s->ctl('import', $lay->{dir}, $lay->{digest});
    is($rc, 1, "10 GB sparse file ($fmt tar): refused");
    like($err, qr/sparse/, "10 GB sparse file ($fmt tar): said so")
        or diag $err;
    clean_after("sparse $fmt", $lay->{digest}, 1);
}

refused('a file over --max-file-bytes',
        [[ { name => 'zeros', data => "\0" x (2 * 2**20) } ]],
        qr/per-file bound of 1048576/, '--max-file-bytes', '1M');
refused('layers over --max-bytes',
        [[ { name => 'a', data => 'a' x 600000 } ],
         [ { name => 'b', data => 'b' x 600000 } ]],
        qr/more than 1048576 bytes \(the size bound/, '--max-bytes', '1M');
refused('more entries than --max-entries',
        [[ map { { name => "f$_", data => '' } } 1 .. 50 ]],
        qr/more than 20 entries/, '--max-entries', '20');

# a million entries, against the default bound
{
    my $tarfile = $s->work . '/million.tar';
    open(my $fh, '>:raw', $tarfile) or die;
    for my $i (1 .. 1_000_000) {
        print $fh VetoImage::tar_entry(name => sprintf('m/%07d', $i));
    }
    print $fh VetoImage::tar_end();
    close($fh) or die;
    my $lay = $s->add_layer_file(base_image(), $tarfile);
    unlink $tarfile;
    my ($rc, undef, $err) = $s->ctl('import', $lay->{dir}, $lay->{digest});
    is($rc, 1, 'a million entries: refused');
    like($err, qr/more than 500000 entries/, 'a million entries: bound named')
        or diag $err;
    clean_after('a million entries', $lay->{digest}, 1);
}

# ---- digests ----

{
    my $lay = $s->add_layer(base_image(),
                            VetoImage::tar({ name => 'f', data => 'data' }));
    my $blob = $s->blob_path($lay->{dir}, $lay->{layer});
    my $bytes = $s->read_file($blob);
    substr($bytes, -5, 1) = chr(ord(substr($bytes, -5, 1)) ^ 0xff);
    $s->write_file($blob, $bytes);
    my ($rc, undef, $err) = $s->ctl('import', $lay->{dir}, $lay->{digest});
    is($rc, 1, 'a layer blob that does not match its digest: refused');
    like($err, qr/blob \Q$lay->{layer}\E does not match its digest/,
         '... named') or diag $err;
    clean_after('layer digest', $lay->{digest}, 1);

    # a manifest stored under a digest that is not its own
    my $lay2 = base_image();
    my $fake = 'sha256:' . ('ab' x 32);
    $s->write_file($s->blob_path($lay2->{dir}, $fake),
                   $s->read_file($s->blob_path($lay2->{dir},
                                               $lay2->{digest})));
    ($rc, undef, $err) = $s->ctl('import', $lay2->{dir}, $fake);
    is($rc, 1, 'a manifest under a wrong digest: refused');
    like($err, qr/does not match its digest/, '... named') or diag $err;
    clean_after('manifest digest', $fake, 1);

    ($rc, undef, $err) = $s->ctl('import', $lay2->{dir}, 'sha256:' . ('0' x 64));
    is($rc, 1, 'a digest the layout does not have: refused');
    like($err, qr/missing in the layout/, '... named') or diag $err;

    ($rc, undef, $err) = $s->ctl('import', $lay2->{dir}, 'latest');
    is($rc, 1, 'a tag instead of a digest: refused');
    like($err, qr/never by a tag/, '... named');
}

# the base image of every case above, once, is the only kind imported
ok($s->sentinel_intact, 'in the end: the sentinel is intact');

done_testing;
