/* Fields of /proc/self/mountinfo (proc(5)). */
#ifndef VSB_MOUNTINFO_H
#define VSB_MOUNTINFO_H

/* In place: mountinfo writes ' ', '\t', '\n' and '\\' of a path as \ooo. */
void vsb_mountinfo_unescape(char *s);

#endif
