/*
 * Removing a directory's contents beneath a descriptor: no link is
 * followed, and the depth is bounded by the caller (a snapshot's tree
 * and a stale sandbox's files have different bounds).
 */
#ifndef VSB_RMTREE_H
#define VSB_RMTREE_H

/* Removes everything inside dirfd (not dirfd itself), at most max_depth
 * directories down; 0, or -1 with errno (ELOOP past max_depth) when
 * something could not be removed (the rest is still tried). */
int vsb_rm_tree(int dirfd, int max_depth);

#endif
