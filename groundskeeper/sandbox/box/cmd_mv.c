/* mv: rename files and directories (SRC DST, or SRC... DIR). Everything lives under one
 * preopened workdir, so rename() always applies; there is no cross-device copy. */
#include <errno.h>
#include <getopt.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "box.h"

struct mv_opts {
    bool no_clobber, verbose;
};

static bool move_one(const char *src, const char *dst, const struct mv_opts *o) {
    struct stat s, d;
    if (lstat(src, &s) != 0) {
        box_err("mv", "cannot stat '%s': %s", src, strerror(errno));
        return false;
    }
    bool dst_exists = lstat(dst, &d) == 0;
    if (dst_exists) {
        if (s.st_dev == d.st_dev && s.st_ino == d.st_ino) {
            box_err("mv", "'%s' and '%s' are the same file", src, dst);
            return false;
        }
        if (o->no_clobber) return true;
        if (S_ISDIR(d.st_mode) && !S_ISDIR(s.st_mode)) {
            box_err("mv", "cannot overwrite directory '%s' with non-directory", dst);
            return false;
        }
        if (!S_ISDIR(d.st_mode) && S_ISDIR(s.st_mode)) {
            box_err("mv", "cannot overwrite non-directory '%s' with directory '%s'", dst, src);
            return false;
        }
    }
    if (rename(src, dst) != 0) {
        if (errno == EINVAL)
            box_err("mv", "cannot move '%s' to a subdirectory of itself, '%s'", src, dst);
        else
            box_err("mv", "cannot move '%s' to '%s': %s", src, dst, strerror(errno));
        return false;
    }
    if (o->verbose) printf("renamed '%s' -> '%s'\n", src, dst);
    return true;
}

int cmd_mv(int argc, char **argv) {
    static const struct option longopts[] = {{"force", no_argument, 0, 'f'},
                                             {"no-clobber", no_argument, 0, 'n'},
                                             {"verbose", no_argument, 0, 'v'},
                                             {"target-directory", required_argument, 0, 't'},
                                             {"no-target-directory", no_argument, 0, 'T'},
                                             {0, 0, 0, 0}};
    struct mv_opts o = {false, false};
    const char *target = NULL;
    bool no_target_dir = false;
    int c;
    opterr = 0;
    while ((c = getopt_long(argc, argv, ":fnvt:T", longopts, NULL)) != -1) {
        switch (c) {
        case 'f': o.no_clobber = false; break;
        case 'n': o.no_clobber = true; break;
        case 'v': o.verbose = true; break;
        case 't': target = optarg; break;
        case 'T': no_target_dir = true; break;
        case ':': return box_missing_argument("mv", 1);
        default: return box_bad_option("mv", argv);
        }
    }
    int n = argc - optind;
    char **ops = argv + optind;
    int form = box_copy_operands("mv", ops, &n, &target, no_target_dir);
    if (form == BOX_OPERAND_ERROR) return 1;
    if (form == BOX_ONE_TO_ONE) {
        return move_one(ops[0], ops[1], &o) ? 0 : 1;
    }
    int status = 0;
    for (int i = 0; i < n; i++) {
        char *dst = box_path_into(target, ops[i]);
        if (dst == NULL || !move_one(ops[i], dst, &o)) status = 1;
        free(dst);
    }
    return status;
}
