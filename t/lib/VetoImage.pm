package VetoImage;

# Test harness for the image store: a store of this test process's own
# (a root-owned 0700 directory under /tmp), sandbox-imagectl runs, OCI
# layouts built with umoci (no registry), and hand-made layers (tar
# entries crafted byte by byte: what a hostile image would carry) added
# to a layout the way `umoci raw add-layer` does, digests computed here.
#
#   my $s = VetoImage->new;                  # store, sentinel dir
#   my $lay = $s->umoci_image({ '/opt/marker' => "x\n" });
#   my ($rc, $out, $err) = $s->ctl('import', $lay->{dir}, $lay->{digest});
#
# Everything is removed at the end.

use strict;
use warnings;

use Cwd qw(abs_path);
use Digest::SHA qw(sha256_hex);
use File::Basename qw(dirname);
use File::Path qw(remove_tree make_path);
use File::Temp qw(tempdir);
use IO::Compress::Gzip qw(gzip $GzipError);
use JSON::PP;
use Test::More;

my $JSON = JSON::PP->new->utf8(1)->canonical(1);
our $ROOT = abs_path(dirname(__FILE__) . '/../..');

sub ctl_bin
{
    return $ENV{VSB_IMAGECTL} // "$ROOT/build/sandbox-imagectl";
}

sub new
{
    my ($class) = @_;

    die "the image store tests need root\n" if $> != 0;
    for my $tool (ctl_bin(), 'umoci') {
        my $found = $tool =~ m{/} ? -x $tool
                  : !system("command -v $tool >/dev/null 2>&1");
        die "missing $tool (make; scripts/install-deps.sh)\n" unless $found;
    }

    my $tmp = tempdir("vsb-img-$$-XXXX", TMPDIR => 1, CLEANUP => 0);
    chmod 0700, $tmp;
    my $self = bless {
        tmp      => $tmp,
        store    => "$tmp/store",
        sentinel => "$tmp/sentinel",
        work     => "$tmp/work",
        # a uid of its own per test process: never a sandbox's, never
        # another test's
        uid      => 1500000000 + ($$ % 100000),
    }, $class;

    make_path($self->{sentinel}, $self->{work});
    $self->write_file("$self->{sentinel}/victim", "still here\n");
    return $self;
}

sub DESTROY
{
    my ($self) = @_;
    remove_tree($self->{tmp}) if $self->{tmp} && -d $self->{tmp};
}

sub store    { $_[0]{store} }
sub sentinel { $_[0]{sentinel} }
sub work     { $_[0]{work} }
sub uid      { $_[0]{uid} }

sub write_file
{
    my ($self, $path, $data) = @_;
    make_path(dirname($path));
    open(my $fh, '>:raw', $path) or die "open $path: $!";
    print $fh $data;
    close($fh) or die "close $path: $!";
}

sub read_file
{
    my ($self, $path) = @_;
    open(my $fh, '<:raw', $path) or return undef;
    local $/;
    my $d = <$fh>;
    close($fh);
    return $d;
}

# The smallest root a shell runs in, for umoci_image(): the host's dash
# as /bin/sh, with its loader and C library (Debian's x86_64 paths), as a
# list of path => [ bytes, mode ].
sub dash_root
{
    my %root;
    for my $f (['/bin/sh' => '/bin/dash'],
               ['/lib64/ld-linux-x86-64.so.2'],
               ['/lib/x86_64-linux-gnu/libc.so.6']) {
        my $from = $f->[1] // $f->[0];
        open(my $fh, '<:raw', $from) or die "read $from: $!";
        local $/;
        $root{$f->[0]} = [ scalar <$fh>, 0755 ];
        close $fh;
    }
    return %root;
}

# sandbox-imagectl with this test's store and uid: (exit code, out, err)
sub ctl
{
    my ($self, @args) = @_;
    my $out = "$self->{tmp}/ctl.out";
    my $err = "$self->{tmp}/ctl.err";
    my $pid = fork() // die "fork: $!";
    if ($pid == 0) {
        open(STDOUT, '>', $out) or die;
        open(STDERR, '>', $err) or die;
        exec(ctl_bin(), '-S', $self->{store}, '-u', $self->{uid}, @args)
            or die "exec: $!";
    }
    waitpid($pid, 0);
    my $rc = $? & 127 ? 128 + ($? & 127) : $? >> 8;
    return ($rc, $self->read_file($out) // '', $self->read_file($err) // '');
}

sub import_json
{
    my ($self, @args) = @_;
    my ($rc, $out, $err) = $self->ctl('import', @args);
    my $j = eval { $JSON->decode($out) };
    return ($rc, $j, $err);
}

sub tree
{
    my ($self, $digest) = @_;
    (my $hex = $digest) =~ s/^sha256://;
    return "$self->{store}/sha256/$hex/rootfs";
}

# What the store holds besides sha256/ images: nothing may be left in
# staging/ after any import, good or bad.
sub staging_entries
{
    my ($self) = @_;
    opendir(my $d, "$self->{store}/staging") or return ();
    my @e = grep { !/^\.\.?$/ } readdir($d);
    closedir($d);
    return @e;
}

sub images
{
    my ($self) = @_;
    opendir(my $d, "$self->{store}/sha256") or return ();
    my @e = grep { !/^\.\.?$/ } readdir($d);
    closedir($d);
    return @e;
}

# The sentinel directory outside the store: exactly its one file.
sub sentinel_intact
{
    my ($self) = @_;
    opendir(my $d, $self->{sentinel}) or return 0;
    my @e = sort grep { !/^\.\.?$/ } readdir($d);
    closedir($d);
    return "@e" eq 'victim'
        && ($self->read_file("$self->{sentinel}/victim") // '') eq
           "still here\n";
}

sub run
{
    my (@cmd) = @_;
    my $out = `@{[ join ' ', map { quotemeta } @cmd ]} 2>&1`;
    die "failed: @cmd\n$out" if $?;
    return $out;
}

# ---- layouts ----

# An image made with umoci init/new/insert: files => { '/path' => content
# or [content, mode] }.
sub umoci_image
{
    my ($self, $files, %opt) = @_;
    state_counter($self);
    my $dir = "$self->{work}/lay" . $self->{n}++;
    my $src = "$dir.src";
    run('umoci', 'init', '--layout', $dir);
    run('umoci', 'new', '--image', "$dir:t");
    my $i = 0;
    for my $path (sort keys %$files) {
        my ($data, $mode) = ref $files->{$path} ? @{ $files->{$path} }
                                                : ($files->{$path}, 0644);
        my $f = "$src/" . $i++;
        $self->write_file($f, $data);
        chmod $mode, $f;
        run('umoci', 'insert', '--image', "$dir:t", $f, $path);
    }
    return $self->layout($dir);
}

sub state_counter { $_[0]{n} //= 0 }

# { dir, digest, manifest, config } of the layout's tag "t"
sub layout
{
    my ($self, $dir) = @_;
    my $index = $JSON->decode($self->read_file("$dir/index.json"));
    my ($m) = grep {
        ($_->{annotations}{'org.opencontainers.image.ref.name'} // '') eq 't'
    } @{ $index->{manifests} };
    return { dir => $dir, digest => $m->{digest} };
}

sub blob_path
{
    my ($self, $dir, $digest) = @_;
    (my $hex = $digest) =~ s/^sha256://;
    return "$dir/blobs/sha256/$hex";
}

sub put_blob
{
    my ($self, $dir, $data) = @_;
    my $digest = 'sha256:' . sha256_hex($data);
    $self->write_file($self->blob_path($dir, $digest), $data);
    return ($digest, length $data);
}

# Appends a layer (an uncompressed tar, bytes) to tag "t" of a layout:
# gzip, blob, diff_id in the config, descriptor in the manifest, index.
sub add_layer
{
    my ($self, $lay, $tar, %opt) = @_;
    my $dir = $lay->{dir};
    my $manifest = $JSON->decode($self->read_file(
        $self->blob_path($dir, $lay->{digest})));
    my $config = $JSON->decode($self->read_file(
        $self->blob_path($dir, $manifest->{config}{digest})));

    my $gz;
    gzip(\$tar => \$gz, Minimal => 1) or die "gzip: $GzipError";
    my ($ld, $ls) = $self->put_blob($dir, $gz);
    push @{ $config->{rootfs}{diff_ids} }, 'sha256:' . sha256_hex($tar);
    my ($cd, $cs) = $self->put_blob($dir, $JSON->encode($config));
    $manifest->{config}{digest} = $cd;
    $manifest->{config}{size} = $cs;
    push @{ $manifest->{layers} }, {
        mediaType => 'application/vnd.oci.image.layer.v1.tar+gzip',
        digest => $ld, size => $ls,
    };
    my ($md, $ms) = $self->put_blob($dir, $JSON->encode($manifest));
    my $index = $JSON->decode($self->read_file("$dir/index.json"));
    for my $m (@{ $index->{manifests} }) {
        next unless ($m->{annotations}{'org.opencontainers.image.ref.name'}
                     // '') eq 't';
        $m->{digest} = $md;
        $m->{size} = $ms;
    }
    $self->write_file("$dir/index.json", $JSON->encode($index));
    return { dir => $dir, digest => $md, layer => $ld };
}

# ---- tar entries, byte by byte ----

sub _octal
{
    my ($v, $len) = @_;
    # GNU base-256 when the octal digits do not fit
    if ($v >= 8**($len - 1)) {
        return "\x80" . substr(("\0" x 16) . pack('Q>', $v), -($len - 1));
    }
    return sprintf("%0*o\0", $len - 1, $v);
}

# One ustar header (+ data, padded).  %e: name, type ('0' file, '1'
# hardlink, '2' symlink, '3' char device, '5' dir, ...), data, link,
# mode, uid, gid, size (a declared size without the data: base-256 when
# it does not fit octal).
sub tar_entry
{
    my (%e) = @_;
    my $data = $e{data} // '';
    my $size = $e{size} // length $data;
    my $type = $e{type} // '0';
    my $h = pack('a100', $e{name});
    $h .= _octal($e{mode} // ($type eq '5' ? 0755 : 0644), 8);
    $h .= _octal($e{uid} // 0, 8);
    $h .= _octal($e{gid} // 0, 8);
    $h .= _octal($size, 12);
    $h .= _octal($e{mtime} // 1700000000, 12);
    $h .= ' ' x 8;                     # checksum, filled below
    $h .= $type;
    $h .= pack('a100', $e{link} // '');
    $h .= "ustar\0" . "00";
    $h .= pack('a32', 'root') . pack('a32', 'root');
    $h .= _octal($e{major} // 0, 8) . _octal($e{minor} // 0, 8);
    $h .= pack('a155', '');
    $h .= "\0" x (512 - length $h);
    my $sum = unpack('%32C*', $h);
    substr($h, 148, 8) = sprintf("%06o\0 ", $sum);
    my $pad = (512 - length($data) % 512) % 512;
    return $h . $data . ("\0" x $pad);
}

sub tar_end { "\0" x 1024 }

sub tar
{
    my (@entries) = @_;
    return join('', map { tar_entry(%$_) } @entries) . tar_end();
}

1;

package VetoImage;

# Appends a layer from a tar file on disk (large layers): gzip -1 and
# sha256sum do the work outside Perl.
sub add_layer_file
{
    my ($self, $lay, $tarfile) = @_;
    my $dir = $lay->{dir};
    my $gz = "$tarfile.gz";
    run('sh', '-c', "gzip -1 -c '$tarfile' > '$gz'");
    my ($diff) = split ' ', run('sha256sum', $tarfile);
    my ($ld) = split ' ', run('sha256sum', $gz);
    my $size = -s $gz;
    rename($gz, $self->blob_path($dir, "sha256:$ld")) or die "rename: $!";

    my $manifest = $JSON->decode($self->read_file(
        $self->blob_path($dir, $lay->{digest})));
    my $config = $JSON->decode($self->read_file(
        $self->blob_path($dir, $manifest->{config}{digest})));
    push @{ $config->{rootfs}{diff_ids} }, "sha256:$diff";
    my ($cd, $cs) = $self->put_blob($dir, $JSON->encode($config));
    $manifest->{config}{digest} = $cd;
    $manifest->{config}{size} = $cs;
    push @{ $manifest->{layers} }, {
        mediaType => 'application/vnd.oci.image.layer.v1.tar+gzip',
        digest => "sha256:$ld", size => $size,
    };
    my ($md, $ms) = $self->put_blob($dir, $JSON->encode($manifest));
    my $index = $JSON->decode($self->read_file("$dir/index.json"));
    for my $m (@{ $index->{manifests} }) {
        $m->{digest} = $md;
        $m->{size} = $ms;
    }
    $self->write_file("$dir/index.json", $JSON->encode($index));
    return { dir => $dir, digest => $md, layer => "sha256:$ld" };
}

1;

package VetoImage;

# The Debian base the profile tests share (scripts/build-debian-base.sh,
# cached under VSB_BASE_CACHE or /var/tmp/veto-sandbox-bases: built once
# per machine, ~3 minutes), imported into this store: its digest.
our @PROFILE_PACKAGES = qw(python3 python3-venv gcc libc6-dev make);

sub debian_profile_base
{
    my ($self) = @_;
    my $script = "$ROOT/scripts/build-debian-base.sh";
    my $log = "$self->{work}/debian-base.err";
    my $out = `'$script' -v essential @PROFILE_PACKAGES 2>'$log'`;
    die "build-debian-base.sh failed:\n" . ($self->read_file($log) // '')
        if $?;
    my ($dir, $digest) = split ' ', $out;
    my ($rc, $o, $e) = $self->ctl('import', '--description',
                                  "Debian 12: @PROFILE_PACKAGES", $dir,
                                  $digest);
    die "import of the Debian base failed: $e" if $rc != 0;
    return $digest;
}

1;
