/* basename and dirname: pure string operations on paths, GNU style (-a, -s for basename, -z
 * for dirname). */
#include <getopt.h>
#include <stdbool.h>
#include <stdio.h>
#include <string.h>

#include "box.h"

static void print_basename(const char *path, const char *suffix) {
    size_t len;
    const char *base = box_last_component(path, &len);
    if (len == 0 && path[0] == '/') { /* slashes only */
        puts("/");
        return;
    }
    size_t slen = suffix != NULL ? strlen(suffix) : 0;
    /* the suffix is removed only when something would remain */
    if (slen > 0 && slen < len && memcmp(base + len - slen, suffix, slen) == 0) len -= slen;
    printf("%.*s\n", (int)len, base);
}

int cmd_basename(int argc, char **argv) {
    static const struct option longopts[] = {{"multiple", no_argument, 0, 'a'},
                                             {"suffix", required_argument, 0, 's'},
                                             {0, 0, 0, 0}};
    bool multiple = false;
    const char *suffix = NULL;
    int c;
    opterr = 0;
    while ((c = getopt_long(argc, argv, ":as:", longopts, NULL)) != -1) {
        switch (c) {
        case 'a': multiple = true; break;
        case 's':
            suffix = optarg;
            multiple = true;
            break;
        case ':': return box_missing_argument("basename", 1);
        default: return box_bad_option("basename", argv);
        }
    }
    int n = argc - optind;
    if (n < 1) {
        box_err("basename", "missing operand");
        return 1;
    }
    if (!multiple) {
        if (n > 2) {
            box_err("basename", "extra operand '%s'", argv[optind + 2]);
            return 1;
        }
        print_basename(argv[optind], n == 2 ? argv[optind + 1] : NULL);
        return 0;
    }
    for (int i = optind; i < argc; i++) print_basename(argv[i], suffix);
    return 0;
}

int cmd_dirname(int argc, char **argv) {
    static const struct option longopts[] = {{"zero", no_argument, 0, 'z'}, {0, 0, 0, 0}};
    char end = '\n';
    int c;
    opterr = 0;
    while ((c = getopt_long(argc, argv, "z", longopts, NULL)) != -1) {
        if (c != 'z') return box_bad_option("dirname", argv);
        end = '\0';
    }
    if (optind >= argc) {
        box_err("dirname", "missing operand");
        return 1;
    }
    for (int i = optind; i < argc; i++) {
        const char *path = argv[i];
        size_t stop = strlen(path);
        while (stop > 0 && path[stop - 1] == '/') stop--; /* trailing slashes */
        while (stop > 0 && path[stop - 1] != '/') stop--; /* last component */
        while (stop > 0 && path[stop - 1] == '/') stop--; /* slashes before it */
        if (stop == 0) printf("%s%c", path[0] == '/' ? "/" : ".", end);
        else printf("%.*s%c", (int)stop, path, end);
    }
    return 0;
}
