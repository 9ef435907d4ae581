/*
 * libFuzzer target: the snapshot manifest's parser (vsb_mf_load() in
 * sandbox-helper/snap_tree.c), which reads a store's manifest.json back
 * (a fork's base, the reference of a change set).  The input is the
 * file.  Checked: a refusal says why; an accepted manifest is sorted,
 * every entry keeps the schema (a known type, a mode of 07777 bits at
 * most, inside uids, a path, a sha256 of 64 characters when given), its
 * byte count is its files' sizes; dumped and loaded again it is the same
 * manifest with the same digest.
 *
 * FUZZ-COVERS: sandbox-helper/snap_tree.c:vsb_mf_(load|dump|sort|find|lower|hides|free)
 */
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "vsb_config.h"
#include "vsb_snap_tree.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);


static void
check(const vsb_mf_t *m)
{
    size_t    i;
    uint64_t  bytes = 0;

    for (i = 0; i < m->n; i++) {
        const vsb_mf_ent_t  *x = &m->e[i];

        if (x->path == NULL || x->path[0] == '\0'
            || strlen(x->path) > VSB_MAX_PATH || x->mode > 07777
            || x->uid >= VSB_UID_RANGE || x->gid >= VSB_UID_RANGE
            || (x->sha256[0] != '\0' && strlen(x->sha256) != 64)
            || (x->type != VSB_MF_FILE && x->type != VSB_MF_DIR
                && x->type != VSB_MF_LINK && x->type != VSB_MF_FIFO
                && x->type != VSB_MF_WHITEOUT))
        {
            abort();
        }
        if (i > 0 && strcmp(m->e[i - 1].path, x->path) > 0) {
            abort();            /* not sorted */
        }
        if (vsb_mf_find(m, x->path) == NULL) {
            abort();
        }
        (void) vsb_mf_hides(m, x->path);
        if (x->type == VSB_MF_FILE) {
            bytes += x->size;
        }
    }

    if (bytes != m->bytes) {
        abort();
    }
}


int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    vsb_mf_t  m, n;
    char      why[256], d1[72], d2[72], *t1, *t2;
    size_t    l1, l2, i;

    why[0] = '\0';
    if (vsb_mf_load((const char *) data, size, &m, why, sizeof(why)) != 0) {
        if (why[0] == '\0') {
            abort();
        }
        return 0;
    }

    check(&m);

    t1 = vsb_mf_dump(&m, &l1, d1);
    if (t1 != NULL) {
        if (vsb_mf_load(t1, l1, &n, why, sizeof(why)) != 0) {
            abort();            /* what the dumper writes, the loader reads */
        }
        check(&n);
        if (n.n != m.n) {
            abort();
        }
        for (i = 0; i < n.n; i++) {
            if (strcmp(n.e[i].path, m.e[i].path) != 0
                || n.e[i].type != m.e[i].type
                || n.e[i].mode != m.e[i].mode
                || n.e[i].size != m.e[i].size)
            {
                abort();
            }
        }
        t2 = vsb_mf_dump(&n, &l2, d2);
        if (t2 == NULL || strcmp(d1, d2) != 0) {
            abort();
        }
        free(t2);
        free(t1);
        vsb_mf_free(&n);
    }

    vsb_mf_free(&m);
    return 0;
}
