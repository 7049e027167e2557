/* rm: remove files, and directories with -r (or empty ones with -d). -f ignores missing
 * files. Symbolic links are removed, never followed. Interactive modes are not supported. */
#include <dirent.h>
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

/* The names in a directory, read to the end before anything is removed: removing entries
 * while reading would shift WASI's readdir cookies and skip some. */
static char **list_names(const char *path, size_t *count) {
    DIR *d = opendir(path);
    if (d == NULL) return NULL;
    size_t n = 0, cap = 16;
    char **names = malloc(cap * sizeof *names);
    struct dirent *ent;
    while (names != NULL && (ent = readdir(d)) != NULL) {
        if (strcmp(ent->d_name, ".") == 0 || strcmp(ent->d_name, "..") == 0) continue;
        if (n == cap) {
            char **bigger = realloc(names, (cap *= 2) * sizeof *names);
            if (bigger == NULL) break;
            names = bigger;
        }
        if ((names[n] = strdup(ent->d_name)) == NULL) break;
        n++;
    }
    closedir(d);
    *count = n;
    return names;
}

static bool remove_tree(const char *path, const struct rm_opts *o) {
    size_t n = 0;
    char **names = list_names(path, &n);
    if (names == NULL) return report(path);
    bool ok = true;
    size_t plen = strlen(path);
    for (size_t i = 0; i < n; i++) {
        size_t len = plen + strlen(names[i]) + 2;
        char *child = malloc(len);
        if (child != NULL) {
            snprintf(child, len, "%s%s%s", path, plen > 0 && path[plen - 1] == '/' ? "" : "/",
                     names[i]);
            if (!remove_path(child, o)) ok = false;
        } else {
            ok = report(path);
        }
        free(child);
        free(names[i]);
    }
    free(names);
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
    size_t end = strlen(path);
    while (end > 1 && path[end - 1] == '/') end--;
    size_t start = end;
    while (start > 0 && path[start - 1] != '/') start--;
    size_t len = end - start;
    return (len == 1 && path[start] == '.') || (len == 2 && path[start] == '.' && path[start + 1] == '.');
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
