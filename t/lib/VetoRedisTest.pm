package VetoRedisTest;

# Test support for t/redis/lua/*.t: a private redis-server on a unix socket
# under /tmp, started per test file and stopped at exit, and the Lua scripts
# read from the module's lua/ files as the module compiles them in (the
# prelude, then the script), so the tests run exactly what ships.

use strict;
use warnings;

use Exporter 'import';
use File::Temp qw(tempdir);
use File::Basename qw(dirname);
use Eventually qw(eventually);
use POSIX qw(:sys_wait_h);
use Redis;
use Digest::SHA ();

our @EXPORT_OK = qw(start_redis redis_conn scripts run_script);

my $redis_pid;
my $owner_pid;
my $redis_dir;
my $redis_sock;
my %scripts;

sub start_redis {
    return $redis_sock if $redis_sock;

    $redis_dir = tempdir("veto-redis-t-XXXXXX", TMPDIR => 1, CLEANUP => 1);
    $redis_sock = "$redis_dir/redis.sock";

    $owner_pid = $$;
    $redis_pid = fork();
    die "fork: $!" unless defined $redis_pid;

    if ($redis_pid == 0) {
        open STDOUT, '>', "$redis_dir/redis.log" or die;
        open STDERR, '>&', \*STDOUT or die;
        exec 'redis-server', '--port', '0', '--unixsocket', $redis_sock,
             '--unixsocketperm', '700', '--save', '', '--appendonly', 'no',
             '--dir', $redis_dir;
        die "exec redis-server: $!";
    }

    eventually('redis-server starts', 5, sub { -S $redis_sock })
        or die "redis-server did not start, see $redis_dir/redis.log";

    return $redis_sock;
}

END {
    # only the process that started it stops it, never a forked child
    if ($redis_pid && defined $owner_pid && $$ == $owner_pid) {
        kill 'TERM', $redis_pid;
        waitpid $redis_pid, 0;
    }
}

sub redis_conn {
    start_redis();
    return Redis->new(sock => $redis_sock, reconnect => 0);
}

# ngx_veto_sandbox_module/lua/<name>.lua, each after lua/prelude.lua: the
# one text the module compiles in (NGX_HTTP_VSB_LUA), by the file's name.
sub scripts {
    return \%scripts if %scripts;

    my $dir = dirname(__FILE__) . '/../../ngx_veto_sandbox_module/lua';
    my $prelude = slurp("$dir/prelude.lua");

    for my $file (glob "$dir/*.lua") {
        my ($name) = $file =~ m{([^/]+)\.lua$};
        next if $name eq 'prelude';
        $scripts{$name} = $prelude . slurp($file);
    }

    die "no scripts found under $dir" unless %scripts;
    return \%scripts;
}

sub slurp {
    my ($file) = @_;
    open my $fh, '<', $file or die "$file: $!";
    local $/;
    my $text = <$fh>;
    close $fh;
    return $text;
}

# EVALSHA first, EVAL on NOSCRIPT: the same path the module takes.
sub run_script {
    my ($r, $name, $keys, $args) = @_;
    my $text = scripts()->{$name} or die "no script $name";
    my $res = eval { $r->evalsha(Digest::SHA::sha1_hex($text),
                                 scalar(@$keys), @$keys, @$args) };
    if (!defined $res && $@ =~ /NOSCRIPT/) {
        $res = $r->eval($text, scalar(@$keys), @$keys, @$args);
    } elsif (!defined $res) {
        die $@;
    }
    return $res;
}

1;
