/* rm: remove files, and directories with -r (or empty ones with -d). -f ignores missing
 * files. Symbolic links are removed, never followed. Interactive modes are not supported. */
#include <errno.h>
#include <getopt.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "box.h"

struct rm_opts {
    bool recursive, force, dirs, verbose;
};

static bool report(const char *path) {
    box_err("rm", "cannot remove '%s': %s", path, strerror(errno));
    return false;
}

static bool remove_path(const char *path, const struct rm_opts *o);

static bool remove_tree(const char *path, const struct rm_opts *o) {
    size_t n = 0;
    char **names = box_dir_names(path, &n);
    if (names == NULL) return report(path);
    bool ok = true;
    for (size_t i = 0; i < n; i++) {
        char *child = box_path_join(path, names[i]);
        if (child != NULL) {
            if (!remove_path(child, o)) ok = false;
        } else {
            ok = report(path);
        }
        free(child);
    }
    box_free_names(names, n);
    if (!ok) return false;
    if (rmdir(path) != 0) return report(path);
    if (o->verbose) printf("removed directory '%s'\n", path);
    return true;
}

static bool remove_path(const char *path, const struct rm_opts *o) {
    struct stat sb;
    if (lstat(path, &sb) != 0) {
        if (o->force && errno == ENOENT) return true;
        return report(path);
    }
    if (S_ISDIR(sb.st_mode)) {
        if (o->recursive) return remove_tree(path, o);
        if (!o->dirs) {
            errno = EISDIR;
            return report(path);
        }
        if (rmdir(path) != 0) return report(path);
        if (o->verbose) printf("removed directory '%s'\n", path);
        return true;
    }
    if (unlink(path) != 0) return report(path);
    if (o->verbose) printf("removed '%s'\n", path);
    return true;
}

/* GNU refuses operands whose last component is . or .. */
static bool is_dot_or_dotdot(const char *path) {
    size_t len;
    const char *last = box_last_component(path, &len);
    return (len == 1 && last[0] == '.') || (len == 2 && last[0] == '.' && last[1] == '.');
}

int cmd_rm(int argc, char **argv) {
    static const struct option longopts[] = {{"recursive", no_argument, 0, 'r'},
                                             {"force", no_argument, 0, 'f'},
                                             {"dir", no_argument, 0, 'd'},
                                             {"verbose", no_argument, 0, 'v'},
                                             {0, 0, 0, 0}};
    struct rm_opts o = {false, false, false, false};
    int c;
    opterr = 0;
    while ((c = getopt_long(argc, argv, "rRfdv", longopts, NULL)) != -1) {
        switch (c) {
        case 'r':
        case 'R': o.recursive = true; break;
        case 'f': o.force = true; break;
        case 'd': o.dirs = true; break;
        case 'v': o.verbose = true; break;
        default: return box_bad_option("rm", argv);
        }
    }
    if (optind >= argc) {
        if (o.force) return 0;
        box_err("rm", "missing operand");
        return 1;
    }
    int status = 0;
    for (int i = optind; i < argc; i++) {
        if (o.recursive && is_dot_or_dotdot(argv[i])) {
            box_err("rm", "refusing to remove '.' or '..' directory: skipping '%s'", argv[i]);
            status = 1;
            continue;
        }
        if (!remove_path(argv[i], &o)) status = 1;
    }
    return status;
}
