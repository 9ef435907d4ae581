/*
 * Fields of /proc/self/mountinfo, shared by what reads it (the cgroup v1
 * hierarchies, the spawn namespace's strip).
 */
#include "vsb_mountinfo.h"


void
vsb_mountinfo_unescape(char *s)
{
    char  *r, *w;

    for (r = w = s; *r != '\0'; ) {
        if (r[0] == '\\' && r[1] >= '0' && r[1] <= '7'
            && r[2] >= '0' && r[2] <= '7' && r[3] >= '0' && r[3] <= '7')
        {
            *w++ = (char) (((r[1] - '0') << 6) | ((r[2] - '0') << 3)
                           | (r[3] - '0'));
            r += 4;
        } else {
            *w++ = *r++;
        }
    }
    *w = '\0';
}
