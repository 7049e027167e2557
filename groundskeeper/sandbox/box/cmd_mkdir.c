/* mkdir: create directories (-p for parents and no error when they exist, -v to report).
 * Modes (-m) do not exist in WASI, so -m is refused rather than ignored. */
#include <errno.h>
#include <getopt.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "box.h"

static bool verbose;

static bool make_one(const char *path, bool parents) {
    if (mkdir(path, 0777) == 0) {
        if (verbose) printf("mkdir: created directory '%s'\n", path);
        return true;
    }
    struct stat sb;
    if (parents && errno == EEXIST && stat(path, &sb) == 0 && S_ISDIR(sb.st_mode)) return true;
    box_err("mkdir", "cannot create directory '%s': %s", path, strerror(errno));
    return false;
}

static bool make_parents(const char *path) {
    char *copy = strdup(path);
    if (copy == NULL) {
        box_perror("mkdir", path);
        return false;
    }
    bool ok = true;
    /* every prefix ending before a '/' is a parent to create first */
    for (char *p = copy + 1; *p && ok; p++) {
        if (*p != '/' || p[-1] == '/') continue;
        *p = '\0';
        struct stat sb;
        if (stat(copy, &sb) != 0 || !S_ISDIR(sb.st_mode)) ok = make_one(copy, true);
        *p = '/';
    }
    if (ok) ok = make_one(copy, true);
    free(copy);
    return ok;
}

int cmd_mkdir(int argc, char **argv) {
    static const struct option longopts[] = {{"parents", no_argument, 0, 'p'},
                                             {"verbose", no_argument, 0, 'v'},
                                             {0, 0, 0, 0}};
    bool parents = false;
    int c;
    opterr = 0;
    while ((c = getopt_long(argc, argv, "pv", longopts, NULL)) != -1) {
        switch (c) {
        case 'p': parents = true; break;
        case 'v': verbose = true; break;
        default: return box_bad_option("mkdir", argv);
        }
    }
    if (optind >= argc) {
        box_err("mkdir", "missing operand");
        return 1;
    }
    int status = 0;
    for (int i = optind; i < argc; i++) {
        if (!(parents ? make_parents(argv[i]) : make_one(argv[i], false))) status = 1;
    }
    return status;
}
