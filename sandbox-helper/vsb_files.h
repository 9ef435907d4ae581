/*
 * Reading and writing one file in a sandbox's workspace on behalf of a
 * client.  The workload may race us with symlinks at any time, so every
 * lookup is openat2(RESOLVE_BENEATH|RESOLVE_NO_SYMLINKS|...) from the
 * workspace, and the I/O runs with the workload user's fs credentials.
 */
#ifndef VSB_FILES_H
#define VSB_FILES_H

#include <stddef.h>
#include <stdint.h>

#include "vsb_hex.h"
#include "vsb_request.h"
#include "vsb_sandbox.h"

/* path must have passed vsb_path_check().  Creates missing parent
 * directories (0755), writes via a temporary name and renames. */
int vsb_files_write(const vsb_sandbox_t *sb, const char *path, unsigned mode,
    const unsigned char *data, size_t len,
    char sha256[VSB_SHA256_HEX_LEN + 1], vsb_error_t *e);

/* On success *data (malloc'd, caller frees) holds *len <= max bytes. */
int vsb_files_read(const vsb_sandbox_t *sb, const char *path, uint64_t max,
    unsigned char **data, size_t *len, char sha256[VSB_SHA256_HEX_LEN + 1],
    vsb_error_t *e);

/* 0 if path ("" is the workspace) is a directory, made with its
 * parents (0755) when missing and create is set; a symlink on the way is
 * bad_path, a file not_a_directory. */
int vsb_files_dir(const vsb_sandbox_t *sb, const char *path, int create,
    vsb_error_t *e);

/* Hex SHA-256 of data (libcrypto); -1 on failure. */
int vsb_sha256_hex(const unsigned char *data, size_t len,
    char out[VSB_SHA256_HEX_LEN + 1]);

#endif
