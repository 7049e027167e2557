/* du: space used, as apparent sizes only. WASI gives a file's size but not its block count,
 * so disk usage in blocks (du's default) is refused with status 2 and a message naming -b;
 * with -b or --apparent-size: -s, -a, -c, -d N / --max-depth=N, -k and -m (sizes rounded up,
 * as GNU does). A file with several hard links counts once; the control plane the sandbox
 * hides is absent from the walk, like everywhere else.
 */
#include <errno.h>
#include <getopt.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "box.h"

struct du {
    bool all, summarize;
    long max_depth; /* -1: no limit */
    unsigned long long block;
    bool every_file; /* several operands: a file named twice counts once (GNU) */
    struct {
        dev_t dev;
        ino_t ino;
    } *seen;
    size_t nseen, seen_cap;
    int status;
};

static void print_size(const struct du *d, unsigned long long bytes, const char *path) {
    printf("%llu\t%s\n", (bytes + d->block - 1) / d->block, path);
}

/* Whether a file with several links was counted already (and remember it if not). */
static bool counted(struct du *d, const struct stat *sb) {
    if (!d->every_file && (S_ISDIR(sb->st_mode) || sb->st_nlink < 2)) return false;
    for (size_t i = 0; i < d->nseen; i++)
        if (d->seen[i].dev == sb->st_dev && d->seen[i].ino == sb->st_ino) return true;
    if (d->nseen == d->seen_cap) {
        d->seen_cap = d->seen_cap ? 2 * d->seen_cap : 64;
        d->seen = box_need("du", realloc(d->seen, d->seen_cap * sizeof *d->seen), 1);
    }
    d->seen[d->nseen].dev = sb->st_dev;
    d->seen[d->nseen].ino = sb->st_ino;
    d->nseen++;
    return false;
}

static unsigned long long walk(struct du *d, const char *path, long depth) {
    struct stat sb;
    if (lstat(path, &sb) != 0) {
        box_err("du", "cannot access '%s': %s", path, strerror(errno));
        d->status = 1;
        return 0;
    }
    if (counted(d, &sb)) return 0;
    unsigned long long total = (unsigned long long)sb.st_size;
    bool shown = depth == 0 || (!d->summarize && (d->max_depth < 0 || depth <= d->max_depth));
    if (S_ISDIR(sb.st_mode)) {
        size_t n;
        char **names = box_dir_names(path, &n);
        if (names == NULL) {
            box_err("du", "cannot read directory '%s': %s", path, strerror(errno));
            d->status = 1;
        }
        for (size_t i = 0; i < n; i++) {
            char *child = box_need("du", box_path_join(path, names[i]), 1);
            total += walk(d, child, depth + 1);
            free(child);
        }
        box_free_names(names, n);
        if (shown) print_size(d, total, path);
    } else if (depth == 0 || (d->all && shown)) {
        print_size(d, total, path);
    }
    return total;
}

int cmd_du(int argc, char **argv) {
    enum { OPT_APPARENT = 256 };
    static const struct option longopts[] = {{"all", no_argument, 0, 'a'},
                                             {"apparent-size", no_argument, 0, OPT_APPARENT},
                                             {"bytes", no_argument, 0, 'b'},
                                             {"total", no_argument, 0, 'c'},
                                             {"max-depth", required_argument, 0, 'd'},
                                             {"summarize", no_argument, 0, 's'},
                                             {0, 0, 0, 0}};
    struct du d = {false, false, -1, 1024, false, NULL, 0, 0, 0};
    bool apparent = false, total = false;
    int c;
    opterr = 0;
    while ((c = getopt_long(argc, argv, ":abcd:kms", longopts, NULL)) != -1) {
        switch (c) {
        case 'a': d.all = true; break;
        case OPT_APPARENT: apparent = true; break;
        case 'b': apparent = true, d.block = 1; break;
        case 'c': total = true; break;
        case 'd': {
            char *end;
            d.max_depth = strtol(optarg, &end, 10);
            if (*optarg == '\0' || *end != '\0' || d.max_depth < 0) {
                box_err("du", "invalid maximum depth '%s'", optarg);
                return 1;
            }
            break;
        }
        case 'k': d.block = 1024; break;
        case 'm': d.block = 1024 * 1024; break;
        case 's': d.summarize = true; break;
        case ':': return box_missing_argument("du", 1);
        default: return box_bad_option("du", argv);
        }
    }
    if (!apparent) {
        box_err("du", "disk usage in blocks is not available in the sandbox (WASI has no block "
                      "counts); use du -b or du --apparent-size for sizes in bytes");
        return 2;
    }
    if (d.summarize && d.all) {
        box_err("du", "cannot both summarize and show all entries");
        return 1;
    }
    int nops;
    char **ops = box_operands(argc, argv, ".", &nops);
    d.every_file = nops > 1;
    unsigned long long sum = 0;
    for (int i = 0; i < nops; i++) sum += walk(&d, ops[i], 0);
    if (total) print_size(&d, sum, "total");
    free(d.seen);
    return d.status;
}
