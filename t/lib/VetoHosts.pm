package VetoHosts;
# Test hosts for several gateways: a bridge with the test's own address
# and, per host, a network namespace joined to it by a veth pair, with
# its own address; names and a 10.x.y.0/24 of this process's own, all
# removed at exit.
#
#   my $net = VetoHosts->new(qw(a b c));
#   $net->gateway          # the bridge's address (Redis, sentinels)
#   $net->ns('a'), $net->addr('a')    # for VetoNginx->set_netns
#
# And the gateways themselves (t/hosts/two-gateways.t, t/hosts/host-loss.t,
# t/hosts/routing.t, t/hosts/ended-routing.t, scripts/bench-hop.pl):
#
#   my %gw = VetoHosts::gateways(names => [qw(a b c)], sentinel => $s,
#                                policy => $policy, net => $net,
#                                address => 1, routing => 1);
#   VetoHosts::acme_policy(quotas => {...})   # tenant acme, the ceilings
#   use VetoHosts qw(up);
#   up($gw{a})                         # the host found its Redis master
#
# (wait for a host with eventually() of t/lib/Eventually.pm.)
use strict;
use warnings;

use Exporter qw(import);
use File::Copy qw(copy);

our @EXPORT_OK = qw(up hosts_ready);

my @CLEANUP;

sub sh { system(@_) == 0 or die "@_: failed\n" }

sub new
{
    my ($class, @names) = @_;
    my $net = sprintf '10.%d.%d', 100 + int($$ / 250) % 100, $$ % 250;
    my $self = bless { net => $net, br => "vtb$$", hosts => {} }, $class;
    push @CLEANUP, $self;
    sh('ip', 'link', 'add', $self->{br}, 'type', 'bridge');
    $self->{made_br} = 1;
    sh('ip', 'addr', 'add', "$net.1/24", 'dev', $self->{br});
    sh('ip', 'link', 'set', $self->{br}, 'up');
    my $k = 10;
    for my $name (@names) {
        my $ns = "vt$$-$name";
        my $v = "vt$$" . $name;     # ${v}0 on the bridge, ${v}1 in $ns
        my $addr = "$net." . ++$k;
        sh('ip', 'netns', 'add', $ns);
        push @{ $self->{made_ns} }, $ns;
        sh('ip', 'link', 'add', "${v}0", 'type', 'veth', 'peer', 'name', "${v}1");
        sh('ip', 'link', 'set', "${v}0", 'master', $self->{br}, 'up');
        sh('ip', 'link', 'set', "${v}1", 'netns', $ns);
        sh('ip', '-n', $ns, 'addr', 'add', "$addr/24", 'dev', "${v}1");
        sh('ip', '-n', $ns, 'link', 'set', "${v}1", 'up');
        sh('ip', '-n', $ns, 'link', 'set', 'lo', 'up');
        $self->{hosts}{$name} = { ns => $ns, addr => $addr };
    }
    return $self;
}

sub gateway { "$_[0]{net}.1" }
sub ns { $_[0]{hosts}{$_[1]}{ns} }
sub addr { $_[0]{hosts}{$_[1]}{addr} }

sub cleanup
{
    my ($self) = @_;
    system("ip netns del $_ 2>/dev/null") for @{ $self->{made_ns} // [] };
    system("ip link del $self->{br} 2>/dev/null") if $self->{made_br};
    $self->{made_ns} = [];
    $self->{made_br} = 0;
}

END { local $?; $_->cleanup for @CLEANUP }

# The policy the multi-host tests share: tenant acme with these ceilings,
# and its other parts (quotas, approvals) as given.
sub acme_policy
{
    my (%acme) = @_;
    return { version => 1, tenants => { acme => {
        ceilings => { memory_mb => 512, timeout_s => 30, ttl_s => 3600 },
        %acme } } };
}

# The host found its Redis master.
sub up
{
    my ($n) = @_;
    my (undef, undef, undef, $hj) = $n->request(GET => '/v1/health');
    return ($hj->{redis} // '') eq 'up';
}

# Waits until every host of gateways() (its name => VetoNginx list) found
# the Redis master and holds its lease there (gw-<name>); asks Sentinel's
# master again on each poll, as a failover or Sentinel's CLIENT KILL may
# have taken the last connection.
sub hosts_ready
{
    my ($sentinel, %gw) = @_;
    require Eventually;
    local $Test::Builder::Level = ($Test::Builder::Level // 1) + 1;
    Eventually::eventually('all hosts found the master', 15,
                           sub { !grep { !up($_) } values %gw });
    Eventually::eventually('all hosts hold a lease', 10, sub {
        my $m = $sentinel->live_master;
        !grep { !$m->exists("veto:{:hosts}:lease:gw-$_") } keys %gw;
    });
}

# One gateway host per name, each a VetoNginx with its own helper (its
# own cgroup and uid range) and `veto_sandbox_host gw-<name>`, on one
# Redis under Sentinel; a name => VetoNginx list, in the names' order.
#   names     the hosts
#   sentinel  the VetoSentinel; sentinel_conf: its nginx_conf() options
#   policy    every host's
#   net       a VetoHosts: each host in its namespace, at its address
#             (else 127.0.0.1)
#   address   the host's name with its address (a lease, routing)
#   routing   one peer key (peer_key, else a random one) and
#             veto_sandbox_peer_pass \@veto_peer (implies same_keys);
#             read_timeout: the hop's proxy_read_timeout
#   same_keys every host verifies the first one's tokens
#   helper    per name, start_helper()'s options beside these: a code
#             ref given the name, or a hash ref
#   extra     more http-level directives
#   cgroup    the helpers' cgroup name prefix (veto-t)
#   check     report nginx -t of each host with ok()
sub gateways
{
    my (%o) = @_;
    require VetoNginx;
    my $key = $o{peer_key}
           // unpack('H*', join '', map { chr int rand 256 } 1 .. 32);
    my $probe = 2_000_000_000 + ($$ % 2000) * 16 * 65536;
    my ($first, @gw);
    my $i = 0;
    for my $name (@{ $o{names} }) {
        my $n = VetoNginx->new;
        my $addr = '127.0.0.1';
        if ($o{net}) {
            $addr = $o{net}->addr($name);
            $n->set_netns($o{net}->ns($name), $addr);
        }
        if ($first && ($o{routing} || $o{same_keys})) {
            # one issuer: every host verifies the same tokens
            for my $f (qw(rsa.key rsa.pub ec.key ec.pub hs.secret jwks.json)) {
                copy($first->dir . "/$f", $n->dir . "/$f")
                    or die "copy $f: $!";
            }
            $n->{secret} = $first->{secret};
        }
        $first //= $n;
        $n->write_policy($o{policy});
        my %h = ref $o{helper} eq 'CODE' ? $o{helper}->($name)
              : %{ $o{helper} // {} };
        $n->start_helper(max_sandboxes => 8,
                         cgroup_name => ($o{cgroup} // 'veto-t') . "-$$-$name",
                         uid_base => $probe + $i++ * 8 * 65536, %h);
        my $http = $o{sentinel}->nginx_conf(%{ $o{sentinel_conf} // {} })
                 . "    veto_sandbox_host gw-$name"
                 . ($o{address} ? " $addr:" . $n->port : '') . ";\n"
                 . ($o{extra} // '');
        my %server;
        if ($o{routing}) {
            VetoNginx::spew($n->dir . '/peer.key', "$key\n");
            $http .= "    veto_sandbox_peer_key peer.key;\n"
                   . "    veto_sandbox_peer_pass \@veto_peer;\n"
                   . "    upstream veto_sandbox_peers { veto_sandbox_peers; keepalive 8; }\n";
            $server{server_extra} = 'location @veto_peer {
            proxy_pass http://veto_sandbox_peers;
            proxy_http_version 1.1;
            proxy_set_header Connection "";
            proxy_set_header Veto-Peer-Credential $veto_peer_credential;
            proxy_buffering off;'
                . ($o{read_timeout}
                   ? "\n            proxy_read_timeout $o{read_timeout};" : '')
                . "\n        }";
        }
        $n->render(http_extra => $http, %server);
        if ($o{check}) {
            my ($ok, $out) = $n->test_config;
            Test::More::ok($ok, "nginx -t: host $name")
                or Test::More::diag($out);
        }
        $n->start(keep_conf => 1);
        push @gw, $name => $n;
    }
    return @gw;
}

1;
