# A Debian base built by scripts/build-debian-base.sh (cached; a small
# package set: python3 python3-venv gcc libc6-dev make) as a profile: a
# Python venv and a pip install of a local wheel (built here, no index,
# no network), and a C build with make, all in the sandbox's overlay
# root; the image's own interpreter and compiler, not the host's.
use strict;
use warnings;
use Test::More;
use lib 't/lib';
use Digest::SHA qw(sha256);
use IO::Compress::Zip qw(zip $ZipError);
use MIME::Base64 qw(encode_base64url);
use VetoImage;
use VetoTest;

my $s = VetoImage->new;
my $digest = $s->debian_profile_base;

my $h = VetoTest->start(image_store => $s->store,
                        image_profile => [ "debian $digest" ],
                        max_timeout_s => 300);

my ($r) = $h->call({ op => 'profiles' });
my ($deb) = grep { $_->{name} eq 'debian' } @{ $r->{profiles} // [] };
like($deb->{tools}{python3} // '', qr/^3\.11/,
     'profiles: the image\'s python3 version recorded at import');
like($deb->{tools}{gcc} // '', qr/^4:12/, 'profiles: its gcc');
is($deb->{os_release}{version_id}, '12', 'profiles: its os-release');

my $id = $h->create_ok(profile => 'debian',
                       limits => { memory_mb => 512, disk_mb => 256,
                                   pids => 128, timeout_s => 300 });

# the image's own interpreter, PATH from the image's config
my ($x, $out, $err) = $h->sh($id, 'command -v python3; python3 -c '
    . '"import sys; print(sys.version_info[:2])"; echo $PATH');
like($out, qr{^/usr/bin/python3\n\(3, 11\)\n}, 'the image\'s python3')
    or diag $err;
like($out, qr{/usr/local/sbin:.*/usr/bin}, 'PATH comes from the image');

# a wheel, made here: one module, its dist-info, a RECORD with hashes
my %files = (
    'vetohello/__init__.py' =>
        "def hello():\n    return 'hello from a local wheel'\n",
    'vetohello-1.0.dist-info/METADATA' =>
        "Metadata-Version: 2.1\nName: vetohello\nVersion: 1.0\n",
    'vetohello-1.0.dist-info/WHEEL' =>
        "Wheel-Version: 1.0\nGenerator: veto-test\nRoot-Is-Purelib: true\n"
        . "Tag: py3-none-any\n",
);
my $record = '';
for my $f (sort keys %files) {
    $record .= sprintf("%s,sha256=%s,%d\n", $f,
                       encode_base64url(sha256($files{$f})),
                       length $files{$f});
}
$record .= "vetohello-1.0.dist-info/RECORD,,\n";
$files{'vetohello-1.0.dist-info/RECORD'} = $record;

my $whl = '';
my $zip = IO::Compress::Zip->new(\$whl, Name => 'vetohello/__init__.py',
                                 Method => 8)
    or die "zip: $ZipError";
my $first = 1;
for my $f ('vetohello/__init__.py', grep { $_ ne 'vetohello/__init__.py' }
           sort keys %files)
{
    $zip->newStream(Name => $f, Method => 8) unless $first;
    $first = 0;
    $zip->print($files{$f});
}
$zip->close;

my $w = $h->write_file($id, 'vetohello-1.0-py3-none-any.whl', $whl);
ok($w->{ok}, 'the wheel is in the workspace') or diag explain $w;

($x, $out, $err) = $h->sh($id, 'set -e; python3 -m venv /workspace/venv; '
    . '/workspace/venv/bin/pip install --no-index --no-cache-dir '
    . '--disable-pip-version-check -q '
    . '/workspace/vetohello-1.0-py3-none-any.whl; '
    . '/workspace/venv/bin/python -c '
    . '"import vetohello; print(vetohello.hello())"',
    timeout_s => 240);
is($x->{exit_code}, 0, 'venv, pip install of the local wheel') or diag $err;
is($out, "hello from a local wheel\n", 'the installed module runs');

# a package installed under $HOME (as pip install --user would, which a
# venv refuses): the home directory is on the overlay, writable
($x, $out, $err) = $h->sh($id, 'set -e; '
    . '/workspace/venv/bin/pip install --no-index --no-cache-dir '
    . '--disable-pip-version-check -q --target ~/.local/lib/vh '
    . '/workspace/vetohello-1.0-py3-none-any.whl; '
    . 'PYTHONPATH=$HOME/.local/lib/vh python3 -c '
    . '"import vetohello; print(vetohello.__file__)"',
    timeout_s => 240);
is($out, "/home/sandbox/.local/lib/vh/vetohello/__init__.py\n",
   'an install under $HOME works in the image root too') or diag $err;

# a C build with the image's gcc and make
$h->write_file($id, 'c/hello.c',
               "#include <stdio.h>\n#include <gnu/libc-version.h>\n"
               . "int main(void) { printf(\"built %s\\n\", "
               . "gnu_get_libc_version()); return 0; }\n");
$h->write_file($id, 'c/Makefile', "hello: hello.c\n\t\$(CC) -O2 -o \$@ \$<\n");
($x, $out, $err) = $h->sh($id, 'cd /workspace/c && make -s CC=gcc && ./hello',
                          timeout_s => 240);
is($x->{exit_code}, 0, 'make and gcc build a C program') or diag $err;
like($out, qr/^built 2\.36\n\z/, 'it runs against the image\'s libc');

my $d = $h->destroy($id);
is($d->{state}, 'terminated', 'destroy: terminated') or diag explain $d;
$h->leaks_ok('after the Debian sandbox');
is($h->stop, 0, 'helper stops cleanly');

done_testing;
