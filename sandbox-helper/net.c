/*
 * Network setup inside the sandbox's own network namespace.  A new
 * namespace has only "lo", down; bringing it up gives the workload
 * 127.0.0.1 and ::1 of its own.  Nothing else exists, so nothing on the
 * host (its loopback services included) is reachable.
 */
#include <errno.h>
#include <net/if.h>
#include <stdio.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/socket.h>
#include <unistd.h>

#include "vsb_net.h"


int
vsb_net_loopback_up(char *err, size_t errlen)
{
    int           fd;
    struct ifreq  ifr;

    fd = socket(AF_INET, SOCK_DGRAM | SOCK_CLOEXEC, 0);
    if (fd == -1) {
        snprintf(err, errlen, "net: socket: %s", strerror(errno));
        return -1;
    }

    memset(&ifr, 0, sizeof(ifr));
    memcpy(ifr.ifr_name, "lo", sizeof("lo"));

    if (ioctl(fd, SIOCGIFFLAGS, &ifr) != 0) {
        snprintf(err, errlen, "net: get flags of lo: %s", strerror(errno));
        close(fd);
        return -1;
    }

    ifr.ifr_flags |= IFF_UP | IFF_RUNNING;

    if (ioctl(fd, SIOCSIFFLAGS, &ifr) != 0) {
        snprintf(err, errlen, "net: bring lo up: %s", strerror(errno));
        close(fd);
        return -1;
    }

    close(fd);
    return 0;
}
