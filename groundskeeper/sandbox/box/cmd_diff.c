/* diff: compare two files line by line (GNU diff behaviour in the C locale).
 * A real shortest-edit-script diff: lines occurring in only one file are set aside first
 * (they can never be matched), then Myers' linear-space middle-snake bisection runs on the
 * rest, with a cost cap that trades minimality for time on pathological inputs, as GNU does.
 * Output: GNU's normal format by default, unified with -u / -U N, "Files A and B differ"
 * with -q; -s reports identical files. Exit 0 same, 1 different, 2 trouble.
 */
#include <errno.h>
#include <getopt.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "box.h"

/* Past this many edit steps in one bisection, split at the furthest-reaching point found. */
#define DIFF_COST_CAP 1024

struct line {
    const char *p;
    size_t n;     /* without the newline */
    int no_nl;    /* the file's last line, lacking its newline: differs from "p\n" */
};

struct file {
    const char *name;
    char *data;
    size_t len;
    struct line *lines;
    size_t nlines;
    size_t *ids;     /* equivalence class of each line */
    char *changed;   /* per line: deleted (file 0) / inserted (file 1) */
};

struct myers {
    const size_t *a, *b; /* the reduced sequences (ids) */
    long *vf, *vb;       /* furthest-reaching x per diagonal, forward and backward */
    char *ca, *cb;       /* change marks on the reduced sequences */
};

static int slurp(struct file *f) {
    FILE *in = box_open_readable(f->name);
    if (in == NULL)
        return 0;
    size_t cap = 0;
    int ok = box_read_all(in, &f->data, &f->len, &cap);
    box_close_input(in);
    return ok;
}

static int split_lines(struct file *f) {
    size_t cap = 0;
    for (size_t at = 0; at < f->len;) {
        const char *nl = memchr(f->data + at, '\n', f->len - at);
        size_t n = nl ? (size_t)(nl - (f->data + at)) : f->len - at;
        if (f->nlines == cap) {
            cap = cap ? cap * 2 : 256;
            struct line *grown = realloc(f->lines, cap * sizeof *grown);
            if (grown == NULL)
                return 0;
            f->lines = grown;
        }
        f->lines[f->nlines++] = (struct line){f->data + at, n, nl == NULL};
        at += n + 1;
    }
    f->ids = calloc(f->nlines + 1, sizeof *f->ids);
    f->changed = calloc(f->nlines + 1, 1);
    return f->ids != NULL && f->changed != NULL;
}

static uint64_t line_hash(const struct line *l) {
    uint64_t h = 1469598103934665603ULL ^ (uint64_t)l->no_nl;
    for (size_t i = 0; i < l->n; i++)
        h = (h ^ (unsigned char)l->p[i]) * 1099511628211ULL;
    return h;
}

/* Give equal lines (across both files) the same id; returns the number of ids or 0. */
static size_t intern(struct file *f) {
    size_t total = f[0].nlines + f[1].nlines, size = 16;
    while (size < 2 * total)
        size *= 2;
    const struct line **slot = calloc(size, sizeof *slot);
    size_t *slot_id = calloc(size, sizeof *slot_id);
    if (slot == NULL || slot_id == NULL) {
        free(slot);
        free(slot_id);
        return 0;
    }
    size_t next = 1;
    for (int k = 0; k < 2; k++) {
        for (size_t i = 0; i < f[k].nlines; i++) {
            const struct line *l = &f[k].lines[i];
            size_t s = (size_t)line_hash(l) & (size - 1);
            while (slot[s] != NULL && !(slot[s]->n == l->n && slot[s]->no_nl == l->no_nl &&
                                        memcmp(slot[s]->p, l->p, l->n) == 0))
                s = (s + 1) & (size - 1);
            if (slot[s] == NULL) {
                slot[s] = l;
                slot_id[s] = next++;
            }
            f[k].ids[i] = slot_id[s];
        }
    }
    free(slot);
    free(slot_id);
    return next;
}

/* Find a split point of a[a0..a1) x b[b0..b1) on (or, past the cost cap, near) a shortest
 * edit path. Returns 0 if no useful split exists (the caller then marks the box changed). */
static int bisect(struct myers *m, long a0, long a1, long b0, long b1, long *sx, long *sy) {
    long n = a1 - a0, mm = b1 - b0, delta = n - mm, maxd = (n + mm + 1) / 2;
    long off = maxd + 1, len = 2 * maxd + 3;
    int front = (delta & 1) != 0;
    for (long i = 0; i < len; i++)
        m->vf[i] = m->vb[i] = -1;
    m->vf[off + 1] = m->vb[off + 1] = 0;
    long kfs = 0, kfe = 0, kbs = 0, kbe = 0;
    for (long d = 0; d < maxd && d <= DIFF_COST_CAP; d++) {
        for (long k = -d + kfs; k <= d - kfe; k += 2) {
            long x = (k == -d || (k != d && m->vf[off + k - 1] < m->vf[off + k + 1]))
                         ? m->vf[off + k + 1]
                         : m->vf[off + k - 1] + 1;
            long y = x - k;
            while (x < n && y < mm && m->a[a0 + x] == m->b[b0 + y]) {
                x++;
                y++;
            }
            m->vf[off + k] = x;
            if (x > n) {
                kfe += 2;
            } else if (y > mm) {
                kfs += 2;
            } else if (front) {
                long kb = delta - k;
                if (kb + off >= 0 && kb + off < len && m->vb[off + kb] != -1 &&
                    x >= n - m->vb[off + kb]) {
                    *sx = a0 + x;
                    *sy = b0 + y;
                    return 1;
                }
            }
        }
        for (long k = -d + kbs; k <= d - kbe; k += 2) {
            long x = (k == -d || (k != d && m->vb[off + k - 1] < m->vb[off + k + 1]))
                         ? m->vb[off + k + 1]
                         : m->vb[off + k - 1] + 1;
            long y = x - k;
            while (x < n && y < mm && m->a[a1 - 1 - x] == m->b[b1 - 1 - y]) {
                x++;
                y++;
            }
            m->vb[off + k] = x;
            if (x > n) {
                kbe += 2;
            } else if (y > mm) {
                kbs += 2;
            } else if (!front) {
                long kf = delta - k;
                if (kf + off >= 0 && kf + off < len && m->vf[off + kf] != -1) {
                    long fx = m->vf[off + kf];
                    if (fx >= n - x) {
                        *sx = a0 + fx;
                        *sy = b0 + fx - kf;
                        return 1;
                    }
                }
            }
        }
    }
    /* Too expensive (or no overlap found): take the forward point that got furthest. */
    long best = -1;
    for (long k = -maxd; k <= maxd; k++) {
        long x = m->vf[off + k], y = x - k;
        if (x < 0 || x > n || y < 0 || y > mm || (x == 0 && y == 0) || (x == n && y == mm))
            continue;
        if (best < 0 || x + y > *sx - a0 + *sy - b0) {
            best = k;
            *sx = a0 + x;
            *sy = b0 + y;
        }
    }
    return best >= 0;
}

static void compare_seq(struct myers *m, long a0, long a1, long b0, long b1) {
    for (;;) {
        while (a0 < a1 && b0 < b1 && m->a[a0] == m->b[b0]) {
            a0++;
            b0++;
        }
        while (a0 < a1 && b0 < b1 && m->a[a1 - 1] == m->b[b1 - 1]) {
            a1--;
            b1--;
        }
        if (a0 == a1 || b0 == b1) {
            memset(m->ca + a0, 1, (size_t)(a1 - a0));
            memset(m->cb + b0, 1, (size_t)(b1 - b0));
            return;
        }
        long x, y;
        if (!bisect(m, a0, a1, b0, b1, &x, &y)) {
            memset(m->ca + a0, 1, (size_t)(a1 - a0));
            memset(m->cb + b0, 1, (size_t)(b1 - b0));
            return;
        }
        /* Recurse on the smaller half, loop on the larger: bounded stack depth. */
        if ((x - a0) + (y - b0) < (a1 - x) + (b1 - y)) {
            compare_seq(m, a0, x, b0, y);
            a0 = x;
            b0 = y;
        } else {
            compare_seq(m, x, a1, y, b1);
            a1 = x;
            b1 = y;
        }
    }
}

/* Mark f[0].changed / f[1].changed with a shortest (or near-shortest) edit script. */
static int compute_changes(struct file *f, size_t nids) {
    size_t *count[2];
    count[0] = calloc(nids, sizeof(size_t));
    count[1] = calloc(nids, sizeof(size_t));
    size_t *keep[2] = {malloc((f[0].nlines + 1) * sizeof(size_t)),
                       malloc((f[1].nlines + 1) * sizeof(size_t))};
    size_t *seq[2] = {malloc((f[0].nlines + 1) * sizeof(size_t)),
                      malloc((f[1].nlines + 1) * sizeof(size_t))};
    size_t total = f[0].nlines + f[1].nlines;
    struct myers m = {0};
    m.vf = malloc((total + 4) * sizeof(long));
    m.vb = malloc((total + 4) * sizeof(long));
    m.ca = calloc(f[0].nlines + 1, 1);
    m.cb = calloc(f[1].nlines + 1, 1);
    int ok = count[0] && count[1] && keep[0] && keep[1] && seq[0] && seq[1] && m.vf && m.vb &&
             m.ca && m.cb;
    if (ok) {
        for (int k = 0; k < 2; k++)
            for (size_t i = 0; i < f[k].nlines; i++)
                count[k][f[k].ids[i]]++;
        size_t n[2] = {0, 0};
        for (int k = 0; k < 2; k++) {
            for (size_t i = 0; i < f[k].nlines; i++) {
                if (count[1 - k][f[k].ids[i]] == 0) {
                    f[k].changed[i] = 1; /* nowhere in the other file */
                } else {
                    keep[k][n[k]] = i;
                    seq[k][n[k]++] = f[k].ids[i];
                }
            }
        }
        m.a = seq[0];
        m.b = seq[1];
        compare_seq(&m, 0, (long)n[0], 0, (long)n[1]);
        for (size_t i = 0; i < n[0]; i++)
            f[0].changed[keep[0][i]] |= m.ca[i];
        for (size_t i = 0; i < n[1]; i++)
            f[1].changed[keep[1][i]] |= m.cb[i];
    }
    for (int k = 0; k < 2; k++) {
        free(count[k]);
        free(keep[k]);
        free(seq[k]);
    }
    free(m.vf);
    free(m.vb);
    free(m.ca);
    free(m.cb);
    return ok;
}

/* Among equally short scripts, prefer the one GNU's readers expect: slide each run of
 * changed lines in file k over equal neighbours, as far down as it goes, unless a position
 * on the way lets it face a run of changes in the other file (then a single "c" block).
 * Each step rotates the run over a line equal to the one it uncovers, so the script stays
 * valid and as short. */
static int shift_runs(struct file *f, int k) {
    char *ch = f[k].changed;
    const char *oc = f[1 - k].changed;
    const size_t *ids = f[k].ids;
    size_t n = f[k].nlines, on = f[1 - k].nlines, nun = 0;
    /* pos[u + 1]: index in the other file of its u-th unchanged line; pos[0] = "-1". */
    size_t *pos = malloc((on + 2) * sizeof *pos);
    if (pos == NULL)
        return 0;
    pos[0] = 0;
    for (size_t j = 0; j < on; j++)
        if (!oc[j])
            pos[++nun] = j + 1;
    pos[nun + 1] = on + 1;
    /* u unchanged lines precede a run: does the other file have changes facing it? */
#define FACING(u) ((u) <= nun && pos[(u) + 1] - pos[(u)] > 1)
    size_t u = 0;
    for (size_t i = 0; i < n;) {
        if (!ch[i]) {
            i++;
            u++;
            continue;
        }
        size_t s = i, e = i;
        while (e < n && ch[e])
            e++;
        while (s > 0 && ids[s - 1] == ids[e - 1]) { /* up, merging earlier runs */
            ch[--s] = 1;
            ch[--e] = 0;
            u--;
            while (s > 0 && ch[s - 1])
                s--;
        }
        size_t facing_end = FACING(u) ? e : (size_t)-1;
        while (e < n && ids[s] == ids[e]) { /* down, merging later runs */
            ch[s++] = 0;
            ch[e++] = 1;
            u++;
            while (e < n && ch[e])
                e++;
            if (FACING(u))
                facing_end = e;
        }
        while (facing_end != (size_t)-1 && e > facing_end && s > 0 &&
               ids[s - 1] == ids[e - 1]) { /* back up to face the other file's changes */
            ch[--s] = 1;
            ch[--e] = 0;
            u--;
            while (s > 0 && ch[s - 1])
                s--;
        }
        i = e;
    }
#undef FACING
    free(pos);
    return 1;
}

/* A run of deleted lines a[i0..i1) and inserted lines b[j0..j1). */
struct block {
    size_t i0, i1, j0, j1;
};

static struct block *collect_blocks(const struct file *f, size_t *nblocks) {
    struct block *v = NULL;
    size_t n = 0, cap = 0, i = 0, j = 0;
    while (i < f[0].nlines || j < f[1].nlines) {
        if (i < f[0].nlines && j < f[1].nlines && !f[0].changed[i] && !f[1].changed[j]) {
            i++;
            j++;
            continue;
        }
        struct block b = {i, i, j, j};
        while (b.i1 < f[0].nlines && f[0].changed[b.i1])
            b.i1++;
        while (b.j1 < f[1].nlines && f[1].changed[b.j1])
            b.j1++;
        if (n == cap) {
            cap = cap ? cap * 2 : 16;
            struct block *grown = realloc(v, cap * sizeof *v);
            if (grown == NULL) {
                free(v);
                return NULL;
            }
            v = grown;
        }
        v[n++] = b;
        i = b.i1;
        j = b.j1;
    }
    *nblocks = n;
    return v != NULL ? v : malloc(sizeof *v);
}

static void put_line(const char *prefix, const struct line *l) {
    fputs(prefix, stdout);
    fwrite(l->p, 1, l->n, stdout);
    putchar('\n');
    if (l->no_nl)
        puts("\\ No newline at end of file");
}

static void normal_range(size_t from, size_t to) { /* 1-based lines from..to */
    if (to > from)
        printf("%zu,%zu", from, to);
    else
        printf("%zu", to);
}

static void print_normal(const struct file *f, const struct block *v, size_t nb) {
    for (size_t k = 0; k < nb; k++) {
        const struct block *b = &v[k];
        char op = b->i1 == b->i0 ? 'a' : b->j1 == b->j0 ? 'd' : 'c';
        normal_range(b->i0 + 1, op == 'a' ? b->i0 : b->i1);
        putchar(op);
        normal_range(b->j0 + 1, op == 'd' ? b->j0 : b->j1);
        putchar('\n');
        for (size_t i = b->i0; i < b->i1; i++)
            put_line("< ", &f[0].lines[i]);
        if (op == 'c')
            puts("---");
        for (size_t j = b->j0; j < b->j1; j++)
            put_line("> ", &f[1].lines[j]);
    }
}

static void unified_range(size_t start, size_t count) { /* start: 0-based first line */
    if (count == 0)
        printf("%zu,0", start);
    else if (count == 1)
        printf("%zu", start + 1);
    else
        printf("%zu,%zu", start + 1, count);
}

static void print_unified(const struct file *f, const struct block *v, size_t nb,
                          size_t context) {
    /* GNU prints a timestamp after each name; the sandbox omits it (files compared in a
     * sandbox have no meaningful times, and outputs should not vary with them). */
    printf("--- %s\n+++ %s\n", f[0].name, f[1].name);
    for (size_t k = 0; k < nb;) {
        size_t last = k;
        while (last + 1 < nb && v[last + 1].i0 - v[last].i1 <= 2 * context)
            last++;
        size_t a0 = v[k].i0 > context ? v[k].i0 - context : 0;
        size_t b0 = v[k].j0 - (v[k].i0 - a0);
        size_t tail = f[0].nlines - v[last].i1 < context ? f[0].nlines - v[last].i1 : context;
        size_t a1 = v[last].i1 + tail, b1 = v[last].j1 + tail;
        printf("@@ -");
        unified_range(a0, a1 - a0);
        printf(" +");
        unified_range(b0, b1 - b0);
        printf(" @@\n");
        size_t i = a0;
        for (size_t h = k; h <= last; h++) {
            for (; i < v[h].i0; i++)
                put_line(" ", &f[0].lines[i]);
            for (; i < v[h].i1; i++)
                put_line("-", &f[0].lines[i]);
            for (size_t j = v[h].j0; j < v[h].j1; j++)
                put_line("+", &f[1].lines[j]);
        }
        for (; i < a1; i++)
            put_line(" ", &f[0].lines[i]);
        k = last + 1;
    }
}

int cmd_diff(int argc, char **argv) {
    static const struct option longopts[] = {{0, 0, 0, 0}};
    int brief = 0, unified = 0, report_same = 0, opt;
    size_t context = 3;
    opterr = 0;
    while ((opt = getopt_long(argc, argv, ":qusU:", longopts, NULL)) != -1) {
        switch (opt) {
        case 'q': brief = 1; break;
        case 'u': unified = 1; break;
        case 's': report_same = 1; break;
        case 'U': {
            char *end;
            long v = strtol(optarg, &end, 10);
            if (*end != '\0' || end == optarg || v < 0) {
                box_err("diff", "invalid context length '%s'", optarg);
                return 2;
            }
            context = (size_t)v;
            unified = 1;
            break;
        }
        case ':': return box_missing_argument("diff", 2);
        default: return box_bad_option("diff", argv);
        }
    }
    if (argc - optind != 2) {
        if (argc - optind < 2)
            box_err("diff", "missing operand after '%s'", argv[argc - 1]);
        else
            box_err("diff", "extra operand '%s'", argv[optind + 2]);
        return 2;
    }
    struct file f[2] = {{.name = argv[optind]}, {.name = argv[optind + 1]}};
    for (int k = 0; k < 2; k++) {
        if (!slurp(&f[k])) {
            if (errno == EISDIR)
                box_err("diff", "%s: Is a directory (directory comparison is not in the "
                                "sandbox)", f[k].name);
            else
                box_perror("diff", f[k].name);
            return 2;
        }
    }
    if (f[0].len == f[1].len && (f[0].len == 0 || memcmp(f[0].data, f[1].data, f[0].len) == 0)) {
        if (report_same)
            printf("Files %s and %s are identical\n", f[0].name, f[1].name);
        return 0;
    }
    if (brief) {
        printf("Files %s and %s differ\n", f[0].name, f[1].name);
        return 1;
    }
    if (memchr(f[0].data, '\0', f[0].len) != NULL || memchr(f[1].data, '\0', f[1].len) != NULL) {
        printf("Binary files %s and %s differ\n", f[0].name, f[1].name);
        return 1;
    }
    size_t nids, nblocks = 0;
    struct block *blocks = NULL;
    if (!split_lines(&f[0]) || !split_lines(&f[1]) || (nids = intern(f)) == 0 ||
        !compute_changes(f, nids) || !shift_runs(f, 0) || !shift_runs(f, 1) || (blocks = collect_blocks(f, &nblocks)) == NULL) {
        box_err("diff", "out of memory");
        return 2;
    }
    if (unified)
        print_unified(f, blocks, nblocks, context);
    else
        print_normal(f, blocks, nblocks);
    return 1;
}
