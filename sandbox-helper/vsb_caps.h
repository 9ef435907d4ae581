/*
 * Capability dropping for the exec's init and the workload.  Two steps,
 * because the bounding set and securebits need CAP_SETPCAP, which a
 * uid change takes away:
 *
 *   vsb_caps_lock()   securebits locked (no root privilege at exec, no
 *                     keep-caps, no ambient raise), bounding set emptied,
 *                     ambient set cleared
 *   vsb_caps_drop()   effective, permitted and inheritable cleared and
 *                     verified, no_new_privs set
 */
#ifndef VSB_CAPS_H
#define VSB_CAPS_H

#include <stddef.h>

int vsb_caps_lock(char *err, size_t errlen);
int vsb_caps_drop(char *err, size_t errlen);

#endif
