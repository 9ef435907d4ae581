package VetoHosts;
# Test hosts for several gateways: a bridge with the test's own address
# and, per host, a network namespace joined to it by a veth pair, with
# its own address; names and a 10.x.y.0/24 of this process's own, all
# removed at exit.
#
#   my $net = VetoHosts->new(qw(a b c));
#   $net->gateway          # the bridge's address (Redis, sentinels)
#   $net->ns('a'), $net->addr('a')    # for VetoNginx->set_netns
use strict;
use warnings;

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

1;
