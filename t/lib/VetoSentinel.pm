package VetoSentinel;

# A private Redis kept available by Sentinel, for tests: one master, two
# replicas (so that a failover leaves one for WAIT) and three sentinels
# (Debian's redis-sentinel), each on its own free TCP port of one address
# (loopback, or a test host's bridge), in a temp dir of this test.  Failover is fast (down-after 1 s): the tests
# kill -9 the master and watch the gateways follow.
#
#   my $s = VetoSentinel->new(addr => '127.0.0.1');
#   $s->nginx_conf          # veto_sandbox_redis_sentinel ... for nginx
#   $s->master              # a Redis client to the current master
#   $s->live_master         # the same, asked again only when its
#                           # connection went or it is a replica now
#   VetoSentinel::need()    # dies unless redis-sentinel is installed
#   $s->kill_master         # kill -9; returns the old master's port
#   $s->wait_failover($old) # until the sentinels name another master
#   $s->restart($port)      # the same server again (it rejoins as a replica)

use strict;
use warnings;

use File::Temp qw(tempdir);
use IO::Socket::INET;
use POSIX qw(WNOHANG);
use Eventually qw(eventually);
use Redis;

my %LIVE;

sub free_port
{
    my ($addr) = @_;
    my $s = IO::Socket::INET->new(Listen => 1, LocalAddr => $addr,
                                  LocalPort => 0, Proto => 'tcp',
                                  ReuseAddr => 1)
        or die "no free port on $addr: $!";
    my $p = $s->sockport;
    close $s;
    return $p;
}

sub new
{
    my ($class, %o) = @_;
    my $self = bless { addr => $o{addr} // '127.0.0.1', name => 'veto',
                       pids => {}, owner => $$,
                       # how a host in a network namespace reaches us
                       wrap => $o{wrap} // [] }, $class;
    $self->{dir} = tempdir("veto-sentinel-$$-XXXXXX", TMPDIR => 1,
                           CLEANUP => !$ENV{VETO_KEEP});
    $self->{ports} = [ map { free_port($self->{addr}) }
                       1 .. 1 + ($o{replicas} // 2) ];
    $self->{sports} = [ map { free_port($self->{addr}) } 1 .. 3 ];

    my ($m, @r) = @{ $self->{ports} };
    $self->start_redis($m);
    $self->start_redis($_, replicaof => $m) for @r;
    $self->wait_replica($m, scalar @r);
    $self->start_sentinel($_) for @{ $self->{sports} };
    $self->wait_sentinels_agree($m);
    $LIVE{"$self"} = $self;
    return $self;
}

sub dir { $_[0]{dir} }
sub addr { $_[0]{addr} }
sub name { $_[0]{name} }
sub sentinel_ports { @{ $_[0]{sports} } }
sub redis_ports { @{ $_[0]{ports} } }

sub spawn
{
    my ($self, $key, $log, @cmd) = @_;
    my $pid = fork() // die "fork: $!";
    if ($pid == 0) {
        open STDOUT, '>>', "$self->{dir}/$log" or POSIX::_exit(126);
        open STDERR, '>&', \*STDOUT or POSIX::_exit(126);
        { exec @cmd }
        POSIX::_exit(127);
    }
    $self->{pids}{$key} = $pid;
    return $pid;
}

sub wait_port
{
    my ($self, $port) = @_;
    eventually("something listens on $self->{addr}:$port", 5, sub {
        my $s = IO::Socket::INET->new(PeerAddr => "$self->{addr}:$port",
                                      Timeout => 1) or return 0;
        close $s;
        1;
    }) or die "nothing listens on $self->{addr}:$port (see $self->{dir})";
    return 1;
}

sub start_redis
{
    my ($self, $port, %o) = @_;
    mkdir "$self->{dir}/r$port";
    $self->spawn("redis$port", "redis-$port.log", 'redis-server',
                 '--port', $port, '--bind', $self->{addr},
                 '--protected-mode', 'no', '--save', '',
                 '--appendonly', 'no', '--dir', "$self->{dir}/r$port",
                 # a demoted master must not keep serving stale reads
                 '--repl-diskless-sync-delay', '0',
                 $o{replicaof} ? ('--replicaof', $self->{addr},
                                  $o{replicaof}) : ());
    $self->wait_port($port);
}

sub start_sentinel
{
    my ($self, $port) = @_;
    my $m = $self->{ports}[0];
    my $conf = "$self->{dir}/sentinel-$port.conf";
    unless (-f $conf) {
        open(my $fh, '>', $conf) or die "$conf: $!";
        print $fh <<"EOF";
port $port
bind $self->{addr}
protected-mode no
dir $self->{dir}
sentinel resolve-hostnames no
sentinel monitor $self->{name} $self->{addr} $m 2
sentinel down-after-milliseconds $self->{name} 1000
sentinel failover-timeout $self->{name} 4000
sentinel parallel-syncs $self->{name} 1
EOF
        close $fh;
    }
    $self->spawn("sentinel$port", "sentinel-$port.log", 'redis-sentinel',
                 $conf);
    $self->wait_port($port);
}

sub need
{
    die "redis-sentinel is not installed (scripts/install-deps.sh test)\n"
        unless system('redis-sentinel --version >/dev/null 2>&1') == 0;
}

# The master's client, kept while it answers as the master; after a
# failover, or Sentinel's CLIENT KILL when it turns a server into a
# replica, the current master's.
sub live_master
{
    my ($self) = @_;
    my $mc = $self->{live};
    my $ok = $mc && eval { $mc->ping; ($mc->role->[0] // '') eq 'master' };
    $self->{live} = $self->current_master unless $ok;
    return $self->{live};
}

sub client
{
    my ($self, $port) = @_;
    return Redis->new(server => "$self->{addr}:$port", reconnect => 0,
                      cnx_timeout => 1, read_timeout => 2,
                      write_timeout => 2);
}

# the master as the first sentinel that answers names it: [ip, port]
sub master_addr
{
    my ($self) = @_;
    for my $p (@{ $self->{sports} }) {
        my $a = eval {
            $self->client($p)->sentinel('get-master-addr-by-name',
                                        $self->{name});
        };
        return @$a if $a && @$a == 2;
    }
    return;
}

sub master_port { ($_[0]->master_addr)[1] }

sub master
{
    my ($self) = @_;
    return $self->client($self->master_port);
}

sub wait_replica
{
    my ($self, $port, $n) = @_;
    eventually("$n replicas of $self->{addr}:$port online", 15, sub {
        my $info = $self->client($port)->info('replication');
        my $online = grep { /state=online/ } map { $info->{$_} }
                     grep { /^slave\d+$/ } keys %$info;
        $online >= $n;
    }) or die "no replica of $self->{addr}:$port came online";
    return 1;
}

sub wait_sentinels_agree
{
    my ($self, $port) = @_;
    # hello messages every 2 s; slow under a loaded machine
    eventually("the sentinels agree on $self->{addr}:$port", 45, sub {
        my $ok = 0;
        for my $p (@{ $self->{sports} }) {
            my $a = eval {
                $self->client($p)->sentinel('get-master-addr-by-name',
                                            $self->{name});
            };
            my $m = eval {
                +{ @{ $self->client($p)->sentinel('master', $self->{name}) } }
            };
            $ok++ if $a && $a->[1] == $port && $m
                     && $m->{'num-other-sentinels'} >= 2
                     && $m->{'num-slaves'} >= @{ $self->{ports} } - 1;
        }
        $ok == @{ $self->{sports} };
    }) or die "the sentinels do not agree on $self->{addr}:$port "
            . "(see $self->{dir})";
    return 1;
}

# until every sentinel sees a healthy replica (after a replica was
# stopped, or a failover): what a failover needs to pick one
sub wait_healthy
{
    my ($self, $timeout) = @_;
    eventually('every sentinel sees a healthy replica', $timeout // 20, sub {
        my $ok = 0;
        for my $p (@{ $self->{sports} }) {
            my $r = eval {
                $self->client($p)->sentinel('replicas', $self->{name})
            } // [];
            my @good = grep {
                my %h = @$_;
                ($h{flags} // '') eq 'slave'
                    && ($h{'master-link-status'} // '') eq 'ok'
            } @$r;
            $ok++ if @good;
        }
        $ok == @{ $self->{sports} };
    }) or die "the sentinels see no healthy replica (see $self->{dir})";
    return 1;
}

# SENTINEL FAILOVER, once a replica can be promoted
sub failover
{
    my ($self) = @_;
    $self->wait_healthy;
    my $old = $self->master_port;
    my $refused;
    # NOGOODSLAVE or INPROG: not yet; any other refusal ends the wait
    eventually('Sentinel takes SENTINEL FAILOVER', 20, sub {
        my $ok = eval {
            $self->client($self->{sports}[0])->sentinel('failover',
                                                        $self->{name});
            1;
        };
        return 1 if $ok;
        return 0 if $@ =~ /NOGOODSLAVE|INPROG/;
        $refused = $@;
        1;
    });
    die $refused if defined $refused;
    return $self->wait_failover($old);
}

# nginx: the sentinels, in this order
sub nginx_conf
{
    my ($self, %o) = @_;
    my $wait = $o{wait} // '1 500ms';
    return "veto_sandbox_redis_sentinel $self->{name} "
         . join(' ', map { "$self->{addr}:$_" } @{ $self->{sports} })
         . ";\n    veto_sandbox_redis_timeout " . ($o{timeout} // '1s')
         . ";\n" . ($wait ne '' ? "    veto_sandbox_redis_wait $wait;\n" : '');
}

sub kill_port
{
    my ($self, $port, $sig) = @_;
    my $pid = delete $self->{pids}{"redis$port"} or return;
    kill $sig // 'KILL', $pid;
    waitpid $pid, 0;
}

sub kill_master
{
    my ($self) = @_;
    my $port = $self->master_port or die "no master named";
    $self->kill_port($port, 'KILL');
    return $port;
}

# until the sentinels name a master other than $old that says it is one
sub wait_failover
{
    my ($self, $old, $timeout) = @_;
    return scalar eventually("a failover away from port $old", $timeout // 30, sub {
        my $p = $self->master_port;
        return undef unless $p && $p != $old;
        my $role = $self->client($p)->role;
        $role && $role->[0] eq 'master' ? $p : undef;
    }) // die "no failover away from port $old (see $self->{dir})";
}

# a client to whichever live server says it is the master now (asked
# directly, not the sentinels: after a failover some may still name the
# old one, and a second failover may follow the first)
sub current_master
{
    my ($self, $timeout) = @_;
    return scalar eventually('a server says it is the master', $timeout // 30, sub {
        for my $p (sort keys %{ $self->{pids} }) {
            next unless $p =~ /^redis(\d+)$/;
            my $c = eval { $self->client($1) } or next;
            my $role = eval { $c->role->[0] } // '';
            return $c if $role eq 'master';
        }
        undef;
    }) // die "no server says it is the master (see $self->{dir})";
}

# what the sentinels and servers logged, for a failing test's diagnostics:
# the event lines (+sdown, +odown, +vote, +switch-master, ...) and errors
sub events
{
    my ($self) = @_;
    my @out;
    for my $f (sort glob "$self->{dir}/*.log") {
        open(my $fh, '<', $f) or next;
        my $name = $f =~ s{.*/}{}r;
        while (my $l = <$fh>) {
            push @out, "$name: $l"
                if $l =~ /[+-][a-z-]+ |# |MASTER|REPLICA|Error|error/;
        }
    }
    return join('', @out);
}

sub restart
{
    my ($self, $port) = @_;
    # comes back as the master it was; the sentinels turn it into a replica
    $self->start_redis($port);
}

sub stop
{
    my ($self) = @_;
    return unless ($self->{owner} // 0) == $$;
    for my $k (keys %{ $self->{pids} }) {
        my $pid = delete $self->{pids}{$k};
        kill 'KILL', $pid;
        waitpid $pid, 0;
    }
}

END
{
    for my $s (grep { defined } values %LIVE) {
        local $?;
        $s->stop;
    }
}

sub DESTROY { local $?; $_[0]->stop }

1;
