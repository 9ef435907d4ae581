package VetoNginx;

# Test harness for ngx_veto_sandbox_module: a private nginx (its own
# prefix, config, port and logs in a temp dir) that loads
# build-module/ngx_veto_sandbox_module.so, test keys made with openssl at
# test time (RSA 2048, EC P-256, an HMAC secret, and a JWKS of the public
# keys), tokens minted with Crypt::JWT, and a private sandbox-helper
# started through VetoTest (own config, cgroup_name "veto-t-<pid>",
# state_dir and socket in its own temp dir).  nginx workers run as root,
# so the helper's allowed_uids is 0.
#
# VETO_MODULE=path/to.so loads another build of the module.  When that
# build is sanitized (scripts/build-module.sh --asan: it needs libasan),
# nginx runs with libasan preloaded (gcc -print-file-name=libasan.so, or
# VETO_ASAN_LIB), ASan reports go to files in the instance's san/
# directory, UBSan's to nginx's stderr (the error log, or nginx -t's
# output; in nginx workers UBSan does not see UBSAN_OPTIONS, so it
# prints no stack and exits the worker with status 1), and any report
# found after nginx stops (or after nginx -t) fails the test, with the
# report as diagnostics.  A sanitizer report in a worker would otherwise
# only look like a respawned worker, or like nothing at all.

use strict;
use warnings;

use Cwd qw(abs_path);
use File::Basename qw(dirname);
use File::Temp qw(tempdir);
use HTTP::Tiny;
use IO::Socket::INET;
use JSON::PP;
use POSIX qw(WNOHANG);
use Scalar::Util ();
use Time::HiRes qw(sleep time);
use Eventually qw(eventually);
# loaded before our END block is compiled, so that block runs before
# Test::Builder's and a late sanitizer report still counts as a failure
use Test::More ();

use Crypt::JWT qw(encode_jwt);
use Crypt::PK::ECC;
use Crypt::PK::RSA;

# Every instance, so END can stop them before File::Temp removes their
# directories (and with them the pid files).
my %INSTANCES;

our $ROOT = abs_path(dirname(__FILE__) . '/../..');
our $JSON = JSON::PP->new->utf8(1)->canonical(1);

sub module_path
{
    return $ENV{VETO_MODULE} // "$ROOT/build-module/ngx_veto_sandbox_module.so";
}

sub have_module { -f module_path() }

# The module needs a sanitizer runtime when its file names libasan (a
# DT_NEEDED entry); checked once per path.
my %SANITIZED;

sub module_sanitized
{
    my $so = module_path();
    return $SANITIZED{$so} if exists $SANITIZED{$so};
    open(my $fh, '<:raw', $so) or return 0;
    local $/;
    my $bin = <$fh> // '';
    close $fh;
    return $SANITIZED{$so} = ($bin =~ /\0(libasan\.so[.0-9]*)\0/ ? $1 : 0);
}

# The libasan to preload: the compiler's, which must be the runtime the
# module was linked against.
my $ASAN_LIB;

sub asan_lib
{
    return $ASAN_LIB if defined $ASAN_LIB;
    my $need = module_sanitized() or return;
    my $lib = $ENV{VETO_ASAN_LIB};
    unless (defined $lib) {
        $lib = `gcc -print-file-name=libasan.so 2>/dev/null` // '';
        chomp $lib;
    }
    die "module " . module_path() . " needs $need, but libasan "
        . "'$lib' is not there (set VETO_ASAN_LIB)\n" unless $lib =~ m{^/} && -e $lib;
    my $real = abs_path($lib) // $lib;
    die "module " . module_path() . " needs $need, but $lib is $real "
        . "(another compiler's runtime? set VETO_ASAN_LIB)\n"
        unless (File::Basename::basename($real)) =~ /^\Q$need\E/;
    return $ASAN_LIB = $lib;
}

sub have_helper
{
    my $b = $ENV{VETO_HELPER} // 'build/sandbox-helper';
    $b = "$ROOT/$b" unless $b =~ m{^/};
    return -x $b;
}

# need(qw(helper redis)): dies, saying what is missing, unless the module
# is built, we are root and each named extra is there.  A test that cannot
# run fails rather than skips.
sub need
{
    my (@what) = @_;
    die "module not built: run scripts/build-module.sh\n" unless have_module();
    asan_lib() if module_sanitized();
    die "these tests need root\n" if $>;
    for my $w (@what) {
        if ($w eq 'helper') {
            die "helper not built: run make\n" unless have_helper();
        } elsif ($w eq 'redis') {
            die "redis-server is not installed\n"
                unless system('redis-server --version >/dev/null 2>&1') == 0;
        } else {
            die "need: unknown requirement $w\n";
        }
    }
}

sub run
{
    my (@cmd) = @_;
    system(@cmd) == 0 or die "@cmd: failed ($?)\n";
}

sub slurp
{
    my ($f) = @_;
    open(my $fh, '<', $f) or die "open $f: $!";
    local $/;
    my $d = <$fh>;
    close $fh;
    return $d;
}

sub spew
{
    my ($f, $d) = @_;
    open(my $fh, '>', $f) or die "write $f: $!";
    print $fh $d;
    close $fh or die "close $f: $!";
}

sub free_port
{
    my $s = IO::Socket::INET->new(Listen => 1, LocalAddr => '127.0.0.1',
                                  LocalPort => 0, Proto => 'tcp', ReuseAddr => 1)
        or die "no free port: $!";
    my $p = $s->sockport;
    close $s;
    return $p;
}

# new(%opt): makes the temp dir and keys; nothing runs yet.
sub new
{
    my ($class, %opt) = @_;
    my $self = bless { %opt }, $class;
    $self->{owner} = $$;

    $self->{dir} = tempdir("veto-ngx-$$-XXXXXX", TMPDIR => 1,
                           CLEANUP => !$ENV{VETO_KEEP});
    chmod 0755, $self->{dir};
    mkdir "$self->{dir}/logs";
    mkdir "$self->{dir}/tmp";
    mkdir "$self->{dir}/san";
    $self->{port} = free_port();
    $self->{issuer} = 'https://issuer.veto.test';
    $self->{audience} = 'veto-sandbox';
    $self->make_keys;
    return $self;
}

sub dir { $_[0]{dir} }
sub port { $_[0]{port} }
# the address nginx listens on: 127.0.0.1, or a test host's own address
# in the network namespace it runs in (set_netns)
sub addr { $_[0]{addr} // '127.0.0.1' }
sub url { "http://" . $_[0]->addr . ":$_[0]{port}$_[1]" }

# set_netns(name, address): nginx runs in that network namespace (made
# by the test) and listens on that address
sub set_netns
{
    my ($self, $ns, $addr) = @_;
    $self->{netns} = $ns;
    $self->{addr} = $addr;
}

# RSA, EC P-256 and an HMAC secret; PEM public keys and a JWKS of both.
sub make_keys
{
    my ($self) = @_;
    my $d = $self->{dir};

    run("openssl genrsa -out $d/rsa.key 2048 2>/dev/null");
    run("openssl rsa -in $d/rsa.key -pubout -out $d/rsa.pub 2>/dev/null");
    run("openssl ecparam -name prime256v1 -genkey -noout -out $d/ec.key "
        . "2>/dev/null");
    run("openssl ec -in $d/ec.key -pubout -out $d/ec.pub 2>/dev/null");
    run("openssl rand -hex 32 > $d/hs.secret");
    # a second RSA key that nginx does not know
    run("openssl genrsa -out $d/rsa-other.key 2048 2>/dev/null");

    my $rsa = $JSON->decode(Crypt::PK::RSA->new("$d/rsa.pub")
                            ->export_key_jwk('public'));
    my $ec = $JSON->decode(Crypt::PK::ECC->new("$d/ec.pub")
                           ->export_key_jwk('public'));
    $rsa->{kid} = 'rsa-1';
    $rsa->{alg} = 'RS256';
    $rsa->{use} = 'sig';
    $ec->{kid} = 'ec-1';
    $ec->{alg} = 'ES256';
    spew("$d/jwks.json", $JSON->encode({ keys => [$rsa, $ec] }));

    $self->{secret} = slurp("$d/hs.secret");
    chomp $self->{secret};
}

# token(claims override, alg => RS256|ES256|HS256, kid => ..., key => ...,
# header => {...}): a signed JWT.  Claims set to undef are left out.
sub token
{
    my ($self, %o) = @_;
    my $alg = delete $o{alg} // 'RS256';
    my $kid = exists $o{kid} ? delete $o{kid}
            : { RS256 => 'rsa-1', ES256 => 'ec-1', HS256 => 'hs-1' }->{$alg};
    my $key = delete $o{key};
    my $hdr = delete $o{header} // {};
    my $d = $self->{dir};

    $key //= $alg eq 'RS256' ? \slurp("$d/rsa.key")
           : $alg eq 'ES256' ? \slurp("$d/ec.key")
           : $self->{secret};

    my %claims = (
        iss    => $self->{issuer},
        aud    => $self->{audience},
        sub    => 'agent-1',
        tenant => 'acme',
        scope  => 'sandbox:create sandbox:exec sandbox:files',
        iat    => int(time()) - 5,
        exp    => int(time()) + 300,
        %o,
    );
    delete $claims{$_} for grep { !defined $claims{$_} } keys %claims;

    my %h = %$hdr;
    $h{kid} = $kid if defined $kid;

    return encode_jwt(payload => \%claims, alg => $alg, key => $key,
                      extra_headers => \%h);
}

sub default_policy
{
    return {
        version => 1,
        tenants => {
            acme => {
                profiles => ['default'],
                ceilings => { memory_mb => 512, pids => 256,
                              timeout_s => 30, ttl_s => 3600,
                              file_bytes => 8 * 1024 * 1024 },
                defaults => { memory_mb => 128, ttl_s => 600 },
                approvals => {},
                agents => {
                    'agent-small' => { ceilings => { memory_mb => 64 },
                                       defaults => { memory_mb => 32 } },
                },
            },
            globex => {
                ceilings => { memory_mb => 512, timeout_s => 30 },
            },
        },
    };
}

sub write_policy
{
    my ($self, $policy) = @_;
    spew("$self->{dir}/policy.json", ref $policy ? $JSON->encode($policy)
                                                 : $policy);
}

# The module's server-level directives the tests start from.
sub default_veto
{
    my ($self) = @_;
    my $d = $self->{dir};
    my $sock = $self->{helper_sock} // "$d/no-helper.sock";
    $self->{leeway_s} //= 30;
    return <<"EOF";
        veto_sandbox_helper unix:$sock;
        veto_sandbox_helper_connect_timeout 2s;
        veto_sandbox_helper_send_timeout 10s;
        veto_sandbox_helper_read_timeout 30s;
        veto_sandbox_jwt_jwks $d/jwks.json;
        veto_sandbox_jwt_key hs-1 HS256 $d/hs.secret;
        veto_sandbox_jwt_issuer $self->{issuer};
        veto_sandbox_jwt_audience $self->{audience};
        veto_sandbox_jwt_leeway $self->{leeway_s}s;
        veto_sandbox_jwt_cache zone=veto_jwt:1m;
        veto_sandbox_policy $d/policy.json;
EOF
}

# VETO_JWT_THREAD_POOL=<pool>: every instance built from default_veto
# verifies token signatures in that nginx thread pool ("default" needs no
# thread_pool directive); unset, inline on the event loop.  The JWT tests
# run both ways (t/module/jwt-thread-pool.t runs t/module/identity.t and
# t/module/adversarial.t with the pool).
sub jwt_pool_veto
{
    my $p = $ENV{VETO_JWT_THREAD_POOL};
    return '' unless defined $p && $p ne '';
    return "        veto_sandbox_jwt_thread_pool $p;\n";
}

# A private redis-server for this instance: unix socket in its temp dir,
# no persistence, or with aof => 1 the append-only file as
# scripts/run-stack.sh runs it (appendfsync everysec, in redis/ of the
# temp dir).  redis => 1 in render()/start() points nginx at it.
sub start_redis
{
    my ($self, %o) = @_;
    my $d = $self->{dir};
    $self->{redis_sock} //= "$d/redis.sock";
    $self->{redis_aof} = $o{aof} ? 1 : 0 if exists $o{aof};
    my @persist = ('--save', '', '--appendonly', 'no', '--dir', $d);
    if ($self->{redis_aof}) {
        mkdir "$d/redis";
        @persist = ('--save', '', '--appendonly', 'yes',
                    '--appendfsync', 'everysec', '--dir', "$d/redis");
    }
    unlink $self->{redis_sock};
    my $pid = fork();
    die "fork: $!" unless defined $pid;
    if ($pid == 0) {
        open STDOUT, '>>', "$d/logs/redis.log" or die;
        open STDERR, '>&', \*STDOUT or die;
        exec 'redis-server', '--port', '0', '--unixsocket', $self->{redis_sock},
             '--unixsocketperm', '700', @persist;
        die "exec redis-server: $!";
    }
    $self->{redis_pid} = $pid;
    $self->{redis_owner} = $$;
    eventually('redis-server starts', 5, sub { -S $self->{redis_sock} })
        or die "redis-server did not start";
    $INSTANCES{"$self"} = $self;
    Scalar::Util::weaken($INSTANCES{"$self"});
    delete $self->{rc};
    return $self->{redis_sock};
}

# stop_redis('KILL') stops it as a crash would (no shutdown save or
# AOF flush); TERM by default.
sub stop_redis
{
    my ($self, $sig) = @_;
    # never from a forked child of the test
    return unless $self->{redis_pid} && ($self->{redis_owner} // 0) == $$;
    my $pid = delete $self->{redis_pid};
    kill 'CONT', $pid;
    kill $sig // 'TERM', $pid;
    waitpid $pid, 0;
    delete $self->{rc};
}

# The same server again (same socket, same persistence): what survives
# is what Redis itself kept.
sub restart_redis
{
    my ($self, $sig) = @_;
    $self->stop_redis($sig);
    return $self->start_redis;
}

sub pause_redis { kill 'STOP', $_[0]{redis_pid} }
sub resume_redis { kill 'CONT', $_[0]{redis_pid} }

# A Redis client to the private server (tests look and poke directly).
sub redis
{
    my ($self) = @_;
    require Redis;
    $self->{rc} //= Redis->new(sock => $self->{redis_sock}, reconnect => 0);
    return $self->{rc};
}

# An exec whose client gives up: a 20 s sleep asked for by a client that
# waits 1 s for the answer; returns that client's status (599: it gave up).
sub abandon_exec
{
    my ($self, $id, $token) = @_;
    my $ua = HTTP::Tiny->new(timeout => 1);
    my $r = $ua->request(POST => $self->url("/v1/sandboxes/$id/exec"),
        { headers => { Authorization => "Bearer $token",
                       'Content-Type' => 'application/json' },
          content => '{"argv": ["sleep", "20"], "timeout_s": 25}' });
    return $r->{status};
}

# Waits up to 5 s for a sandbox to report no exec running (its GET, with
# token); returns the count it last reported (-1: none was read), for the
# test to show it is 0.
sub execs_running_settled
{
    my ($self, $id, $token) = @_;
    my $running = -1;
    local $Test::Builder::Level = $Test::Builder::Level + 1;
    eventually('no exec running', 5, sub {
        my (undef, undef, undef, $j) =
            $self->request(GET => "/v1/sandboxes/$id", $token);
        $running = $j->{execs_running} // -1;
        $running == 0;
    });
    return $running;
}

# Everything the private Redis holds, as text: each key's name, then its
# values (a hash's fields and values, a stream's entry ids, fields and
# values, a list's, set's or sorted set's members), for a test that shows
# a secret is nowhere in it.
sub redis_dump
{
    my ($self) = @_;
    my $r = $self->redis;
    my ($dump, $cursor) = ('', 0);
    do {
        my ($next, $ks) = $r->scan($cursor, 'COUNT', 1000);
        $cursor = $next;
        for my $k (@$ks) {
            my $t = $r->type($k);
            $dump .= "$k\n" . join("\n",
                $t eq 'string' ? ($r->get($k) // '')
                : $t eq 'hash' ? $r->hgetall($k)
                : $t eq 'list' ? $r->lrange($k, 0, -1)
                : $t eq 'set' ? $r->smembers($k)
                : $t eq 'zset' ? $r->zrange($k, 0, -1)
                : $t eq 'stream' ? (map { ($_->[0], @{ $_->[1] }) }
                                    @{ [ $r->xrange($k, '-', '+') ] })
                : ()) . "\n";
        }
    } while ($cursor);
    return $dump;
}

sub redis_conf
{
    my ($self, %o) = @_;
    return '' unless $o{redis};
    my $t = $o{redis_timeout} // '1s';
    return "veto_sandbox_redis unix:$self->{redis_sock};\n"
         . "    veto_sandbox_redis_timeout $t;\n"
         . ($o{redis_extra} // '');
}

# The approval page's locations exactly as conf/nginx-veto.conf.example
# has them (between "# BEGIN approval page" and "# END approval page"),
# serving the page from $dir (default: the repository's approval-page/).
sub approval_page_conf
{
    my ($dir) = @_;
    $dir //= "$ROOT/approval-page";
    $dir =~ s{/*$}{/};
    my ($block) = slurp("$ROOT/conf/nginx-veto.conf.example")
        =~ /^[ \t]*# BEGIN approval page\n(.*?)^[ \t]*# END approval page$/ms
        or die "conf/nginx-veto.conf.example: no approval page block\n";
    $block =~ s{^(\s*alias\s+)\S+;}{$1$dir;}m
        or die "conf/nginx-veto.conf.example: the approval page has no alias\n";
    return $block;
}

# The nginx.conf: the module's directives at server level, the API at
# /v1/, the approval page at /review/ with approval_page => 1 (or a
# directory), and whatever the test adds (main_extra, server_extra,
# http_extra, veto directives replaced wholesale with veto => '...').
sub render
{
    my ($self, %o) = @_;
    my $d = $self->{dir};
    my $workers = $o{workers} // 1;
    my $veto = $o{veto} // ($self->default_veto . jwt_pool_veto());

    my $conf = <<"EOF";
load_module @{[ module_path() ]};
user root;
worker_processes $workers;
pid $d/nginx.pid;
error_log $d/logs/error.log info;
events { worker_connections 1024; }
@{[ $o{main_extra} // '' ]}
http {
    log_format veto '\$status \$request_method \$uri agent=\$veto_agent '
                    'tenant=\$veto_tenant decision=\$veto_decision '
                    'sandbox=\$veto_sandbox';
    access_log $d/logs/access.log veto;
    client_body_temp_path $d/tmp;
    client_max_body_size @{[ $o{max_body} // '16m' ]};
    large_client_header_buffers 4 128k;
    @{[ $self->redis_conf(%o) ]}
    @{[ $o{http_extra} // '' ]}
    server {
        listen @{[ $self->addr ]}:$self->{port};
$veto
        location /v1/ {
            veto_sandbox_api;
            @{[ $o{location_extra} // '' ]}
        }
        location = /plain { return 200 "plain\\n"; }
        @{[ $o{approval_page} ? approval_page_conf($o{approval_page} eq '1'
                                                   ? undef : $o{approval_page})
                              : '' ]}
        @{[ $o{server_extra} // '' ]}
    }
}
EOF
    spew("$d/nginx.conf", $conf);
    return "$d/nginx.conf";
}

sub nginx_cmd
{
    my ($self, @args) = @_;
    my $d = $self->{dir};
    return (($self->{netns} ? ('ip', 'netns', 'exec', $self->{netns}) : ()),
            'nginx', '-p', "$d/", '-c', "$d/nginx.conf", '-e',
            "$d/logs/error.log", @args);
}

# The environment nginx runs in: nothing extra, or for a sanitized
# module libasan preloaded and the sanitizers' options.  detect_leaks=0:
# nginx leaves its pools to exit by design; abort_on_error=1: a report
# kills the worker at once, where it happened (SIGABRT).
sub nginx_env
{
    my ($self) = @_;
    my $lib = asan_lib() or return ();
    my $san = "$self->{dir}/san";
    my $pre = $ENV{LD_PRELOAD};
    return (
        LD_PRELOAD    => $lib . (defined $pre && $pre ne '' ? " $pre" : ''),
        ASAN_OPTIONS  => "detect_leaks=0:abort_on_error=1:log_path=$san/asan",
        UBSAN_OPTIONS => "print_stacktrace=1:halt_on_error=1:abort_on_error=1",
    );
}

my $SAN_REPORT = qr/runtime error: |==\d+==ERROR: |SUMMARY: \w+Sanitizer/;

# Fails the test for every sanitizer report that appeared since the last
# look: report files in san/, report lines in the error log's new part
# and in $out (nginx -t's output).  Each report once, and only in the
# process that made the instance.
sub check_sanitizer
{
    my ($self, $out) = @_;
    return unless module_sanitized() && ($self->{owner} // 0) == $$;
    my @what;
    for my $f (sort glob("$self->{dir}/san/*")) {
        next if $self->{san_seen}{$f}++;
        Test::More::diag("sanitizer report $f:\n" . slurp($f));
        push @what, File::Basename::basename($f);
    }
    my $log = "$self->{dir}/logs/error.log";
    if (open(my $fh, '<', $log)) {
        seek($fh, $self->{san_log_pos} // 0, 0);
        local $/;
        my $new = <$fh> // '';
        $self->{san_log_pos} = tell($fh);
        close $fh;
        if ($new =~ $SAN_REPORT) {
            # the report and its stack, not the whole info-level log
            my @l = grep { /$SAN_REPORT|Sanitizer|^==\d+==|^\s+#\d+ / }
                    split /\n/, $new;
            splice(@l, 200) if @l > 200;
            Test::More::diag("sanitizer report in $log:\n"
                             . join("\n", @l));
            push @what, 'error.log';
        }
    }
    if (defined $out && $out =~ $SAN_REPORT) {
        Test::More::diag("sanitizer report from nginx -t:\n$out");
        push @what, 'nginx -t';
    }
    return unless @what;
    local $Test::Builder::Level = $Test::Builder::Level + 2;
    Test::More::ok(0, "nginx ran without sanitizer reports ("
        . join(', ', @what) . ")");
}

# nginx -t on the current config: (ok, output).
sub test_config
{
    my ($self) = @_;
    my @cmd = $self->nginx_cmd('-t');
    my %env = $self->nginx_env;
    local @ENV{keys %env} = values %env;
    my $out = `@cmd 2>&1`;
    my $ok = $? == 0;
    $self->check_sanitizer($out);
    return ($ok, $out);
}

sub start
{
    my ($self, %o) = @_;
    $self->render(%o) unless $o{keep_conf};
    $self->write_policy($o{policy} // default_policy())
        unless -f "$self->{dir}/policy.json" && !$o{policy};

    my @cmd = $self->nginx_cmd;
    my %env = $self->nginx_env;
    my $out = do {
        local @ENV{keys %env} = values %env;
        `@cmd 2>&1`;
    };
    if ($?) {
        $self->check_sanitizer($out);
        die "nginx did not start: $out";
    }

    eventually("nginx listens on $self->{port}", 10, sub {
        my $s = IO::Socket::INET->new(PeerAddr => $self->addr . ":$self->{port}",
                                      Timeout => 1) or return 0;
        close $s;
        1;
    }) or die "nginx did not listen on $self->{port}:\n"
              . slurp("$self->{dir}/logs/error.log");
    $self->{running} = 1;
    $self->{pid} = $self->master_pid;
    $INSTANCES{"$self"} = $self;
    Scalar::Util::weaken($INSTANCES{"$self"});
    return 1;
}

sub master_pid
{
    my ($self) = @_;
    my $f = "$self->{dir}/nginx.pid";
    return $self->{pid} unless -f $f;
    my $p = slurp($f);
    chomp $p;
    return $p;
}

sub worker_pids
{
    my ($self) = @_;
    my $m = $self->master_pid or return ();
    my @w;
    for my $st (glob '/proc/[0-9]*/stat') {
        open(my $fh, '<', $st) or next;
        my $l = <$fh>;
        close $fh;
        my ($pid, $ppid) = $l =~ /^(\d+) \(.*\) \S (\d+)/ or next;
        push @w, $pid if $ppid == $m;
    }
    return @w;
}

# HUP and wait until the old workers are gone.
sub reload
{
    my ($self) = @_;
    my @old = $self->worker_pids;
    kill 'HUP', $self->master_pid or die "HUP nginx: $!";
    eventually('nginx reload: the old workers are gone', 10, sub {
        my %alive = map { $_ => 1 } $self->worker_pids;
        !grep { $alive{$_} } @old;
    }) or die "nginx reload: old workers still running";
    return 1;
}

sub stop
{
    my ($self) = @_;
    return unless $self->{running};
    my $m = $self->{pid} // $self->master_pid;
    if ($m && kill 'QUIT', $m) {
        my $deadline = time + 10;
        while (time < $deadline && kill 0, $m) {
            # the daemonized master may be re-parented to us (we can be a
            # child subreaper): reap it, or it lingers as a zombie
            last if waitpid($m, WNOHANG) == $m;
            sleep 0.05;
        }
        kill 'KILL', $m if kill 0, $m;
    }
    $self->{running} = 0;
    $self->check_sanitizer;
}

sub error_log { slurp("$_[0]{dir}/logs/error.log") }
sub access_log { slurp("$_[0]{dir}/logs/access.log") }

# A private sandbox-helper through VetoTest; %over goes to its config.
sub start_helper
{
    my ($self, %over) = @_;
    require VetoTest;
    $self->{helper} = VetoTest->start(%over);
    $self->{helper_sock} = $self->{helper}->socket_path;
    return $self->{helper};
}

sub helper { $_[0]{helper} }

# request(method, path, token, body, headers) -> (status, headers, body,
# decoded json or undef).  A hashref/arrayref body is sent as JSON, a
# coderef one chunked (HTTP::Tiny calls it until it returns undef).
sub request
{
    my ($self, $method, $path, $token, $body, $hdr) = @_;
    my %h = %{ $hdr // {} };
    $h{Authorization} = "Bearer $token" if defined $token;
    if (ref $body && ref $body ne 'CODE') {
        $body = $JSON->encode($body);
        $h{'Content-Type'} //= 'application/json';
    }
    my $ua = HTTP::Tiny->new(timeout => 60, keep_alive => 0);
    my $res = $ua->request($method, $self->url($path),
        { headers => \%h, defined $body ? (content => $body) : () });
    my $json;
    if (($res->{headers}{'content-type'} // '') =~ m{json}) {
        $json = eval { $JSON->decode($res->{content}) };
    }
    return ($res->{status}, $res->{headers}, $res->{content}, $json);
}

END
{
    for my $n (grep { defined } values %INSTANCES) {
        local ($?, $@);
        $n->stop;
        eval { $n->{helper}->stop } if $n->{helper};
        $n->stop_redis;
    }
}

sub DESTROY
{
    my ($self) = @_;
    local ($?, $@);
    $self->stop;
    $self->stop_redis;
    if ($self->{helper}) {
        eval { $self->{helper}->stop };
        delete $self->{helper};
    }
}

1;
