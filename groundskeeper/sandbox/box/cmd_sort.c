/* sort: sort lines (GNU sort behaviour in the C locale: byte order, stable merge sort,
 * and without -s/-u a last-resort whole-line comparison when all keys tie).
 * Supported: -n -r -u -f -b -s -c -k POS1[,POS2][bfnr] (repeatable) -t C -o FILE.
 */
#include <errno.h>
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "box.h"

struct key {
    size_t sword, schar; /* start: field index (0-based), char offset (0-based) */
    size_t eword, echar; /* end: field index (0-based; SIZE_MAX = end of line), char count
                            (0 = the whole end field) */
    int numeric, reverse, fold, skip_sblanks, skip_eblanks;
};

struct line {
    const char *p;
    size_t n;
};

static struct key *keys;
static size_t nkeys;
static int tab = -1; /* -1: fields are separated by runs of blanks */
static int unique, stable, global_reverse;

static int is_blank(unsigned char c) { return c == ' ' || c == '\t' || c == '\n'; }

/* Past one field's text: up to the next -t character, or (without -t) past its leading
 * blanks and then its non-blanks. */
static const char *field_end(const char *ptr, const char *lim) {
    if (tab >= 0) {
        while (ptr < lim && *ptr != tab)
            ptr++;
    } else {
        while (ptr < lim && is_blank((unsigned char)*ptr))
            ptr++;
        while (ptr < lim && !is_blank((unsigned char)*ptr))
            ptr++;
    }
    return ptr;
}

static const char *key_begin(const struct key *k, const char *ptr, const char *lim) {
    for (size_t w = k->sword; w > 0 && ptr < lim; w--) {
        ptr = field_end(ptr, lim);
        if (tab >= 0 && ptr < lim)
            ptr++;
    }
    if (k->skip_sblanks)
        while (ptr < lim && is_blank((unsigned char)*ptr))
            ptr++;
    return (size_t)(lim - ptr) < k->schar ? lim : ptr + k->schar;
}

static const char *key_limit(const struct key *k, const char *ptr, const char *lim) {
    if (k->eword == (size_t)-1)
        return lim;
    /* Without a char offset the whole end field counts: walk past one more field. */
    size_t words = k->eword + (k->echar == 0);
    while (ptr < lim && words-- > 0) {
        ptr = field_end(ptr, lim);
        if (tab >= 0 && ptr < lim && (words > 0 || k->echar != 0))
            ptr++;
    }
    if (k->echar != 0) {
        if (k->skip_eblanks)
            while (ptr < lim && is_blank((unsigned char)*ptr))
                ptr++;
        ptr = (size_t)(lim - ptr) < k->echar ? lim : ptr + k->echar;
    }
    return ptr;
}

/* A decimal number as GNU -n reads it: blanks, optional '-', digits, optional fraction. */
struct num {
    int sign; /* -1, 0 (zero or no number), 1 */
    const char *ip, *fp;
    size_t ilen, flen;
};

static struct num parse_num(const char *p, const char *lim) {
    struct num v = {0, p, p, 0, 0};
    while (p < lim && is_blank((unsigned char)*p))
        p++;
    int neg = p < lim && *p == '-';
    if (neg)
        p++;
    while (p < lim && *p == '0')
        p++;
    v.ip = p;
    while (p < lim && *p >= '0' && *p <= '9')
        p++;
    v.ilen = (size_t)(p - v.ip);
    if (p < lim && *p == '.') {
        v.fp = ++p;
        while (p < lim && *p >= '0' && *p <= '9')
            p++;
        v.flen = (size_t)(p - v.fp);
        while (v.flen > 0 && v.fp[v.flen - 1] == '0')
            v.flen--;
    }
    v.sign = (v.ilen == 0 && v.flen == 0) ? 0 : neg ? -1 : 1;
    return v;
}

static int num_cmp(const char *a, const char *alim, const char *b, const char *blim) {
    struct num x = parse_num(a, alim), y = parse_num(b, blim);
    if (x.sign != y.sign)
        return x.sign < y.sign ? -1 : 1;
    if (x.sign == 0)
        return 0;
    int mag;
    if (x.ilen != y.ilen) {
        mag = x.ilen < y.ilen ? -1 : 1;
    } else {
        mag = memcmp(x.ip, y.ip, x.ilen);
        for (size_t i = 0; mag == 0 && (i < x.flen || i < y.flen); i++) {
            char cx = i < x.flen ? x.fp[i] : '0', cy = i < y.flen ? y.fp[i] : '0';
            mag = (cx > cy) - (cx < cy);
        }
    }
    return x.sign * (mag > 0 ? 1 : mag < 0 ? -1 : 0);
}

static int text_cmp(const char *a, size_t an, const char *b, size_t bn, int fold) {
    size_t n = an < bn ? an : bn;
    if (fold) {
        for (size_t i = 0; i < n; i++) {
            unsigned char x = (unsigned char)a[i], y = (unsigned char)b[i];
            if (x >= 'a' && x <= 'z')
                x = (unsigned char)(x - 32);
            if (y >= 'a' && y <= 'z')
                y = (unsigned char)(y - 32);
            if (x != y)
                return x < y ? -1 : 1;
        }
    } else {
        int c = memcmp(a, b, n);
        if (c != 0)
            return c < 0 ? -1 : 1;
    }
    return (an > bn) - (an < bn);
}

static int key_cmp(const struct line *a, const struct line *b) {
    for (size_t i = 0; i < nkeys; i++) {
        const struct key *k = &keys[i];
        const char *alim = a->p + a->n, *blim = b->p + b->n;
        const char *ab = key_begin(k, a->p, alim), *bb = key_begin(k, b->p, blim);
        const char *ae = key_limit(k, a->p, alim), *be = key_limit(k, b->p, blim);
        if (ae < ab)
            ae = ab;
        if (be < bb)
            be = bb;
        int c = k->numeric ? num_cmp(ab, ae, bb, be)
                           : text_cmp(ab, (size_t)(ae - ab), bb, (size_t)(be - bb), k->fold);
        if (c != 0)
            return k->reverse ? -c : c;
    }
    return 0;
}

static int line_cmp(const struct line *a, const struct line *b) {
    int c = key_cmp(a, b);
    if (c != 0 || unique || stable)
        return c;
    c = text_cmp(a->p, a->n, b->p, b->n, 0);
    return global_reverse ? -c : c;
}

static void merge_sort(struct line *v, struct line *tmp, size_t n) {
    if (n < 2)
        return;
    size_t half = n / 2;
    merge_sort(v, tmp, half);
    merge_sort(v + half, tmp, n - half);
    if (line_cmp(&v[half - 1], &v[half]) <= 0)
        return;
    size_t i = 0, j = half, o = 0;
    while (i < half && j < n)
        tmp[o++] = line_cmp(&v[j], &v[i]) < 0 ? v[j++] : v[i++];
    while (i < half)
        tmp[o++] = v[i++];
    memcpy(v, tmp, o * sizeof *v);
}

/* POS = F[.C][OPTS]; returns the rest of the text or NULL on a bad spec. */
static const char *parse_pos(const char *s, size_t *field, size_t *chr, struct key *k, int end,
                             int *refused) {
    char *rest;
    unsigned long f = strtoul(s, &rest, 10);
    if (rest == s || f == 0)
        return NULL;
    *field = f - 1;
    *chr = 0;
    if (*rest == '.') {
        const char *c = rest + 1;
        *chr = strtoul(c, &rest, 10);
        if (rest == c || (!end && *chr == 0))
            return NULL;
        if (!end)
            (*chr)--;
    }
    for (; *rest != '\0' && *rest != ','; rest++) {
        switch (*rest) {
        case 'n': k->numeric = 1; break;
        case 'r': k->reverse = 1; break;
        case 'f': k->fold = 1; break;
        case 'b':
            if (end)
                k->skip_eblanks = 1;
            else
                k->skip_sblanks = 1;
            break;
        default:
            if (strchr("dgiMhRV", *rest) != NULL) {
                char opt[32];
                snprintf(opt, sizeof opt, "-k ...%c", *rest);
                *refused = box_usage("sort", opt);
            }
            return NULL;
        }
    }
    return rest;
}

static int add_key(const char *spec, int *status) {
    struct key k = {.eword = (size_t)-1};
    int refused = 0;
    const char *rest = parse_pos(spec, &k.sword, &k.schar, &k, 0, &refused);
    if (rest != NULL && *rest == ',')
        rest = parse_pos(rest + 1, &k.eword, &k.echar, &k, 1, &refused);
    if (rest == NULL || *rest != '\0') {
        if (refused)
            *status = refused;
        else
            *status = (box_err("sort", "invalid field specification '%s'", spec), 2);
        return 0;
    }
    struct key *grown = realloc(keys, (nkeys + 1) * sizeof *keys);
    if (grown == NULL) {
        *status = (box_err("sort", "out of memory"), 2);
        return 0;
    }
    keys = grown;
    keys[nkeys++] = k;
    return 1;
}

/* Append a whole stream to *data, ending it with a newline if it lacks one. */
static int slurp(FILE *f, char **data, size_t *len, size_t *cap) {
    size_t start = *len;
    if (!box_read_all(f, data, len, cap))
        return 0;
    if (*len > start && (*data)[*len - 1] != '\n')
        (*data)[(*len)++] = '\n';
    return 1;
}

int cmd_sort(int argc, char **argv) {
    static const struct option longopts[] = {{0, 0, 0, 0}};
    struct key global = {.eword = (size_t)-1};
    const char *output = NULL;
    int check = 0, opt, status = 0;
    opterr = 0;
    while ((opt = getopt_long(argc, argv, ":nrufbscCk:t:o:", longopts, NULL)) != -1) {
        switch (opt) {
        case 'n': global.numeric = 1; break;
        case 'r': global.reverse = 1; break;
        case 'f': global.fold = 1; break;
        case 'b': global.skip_sblanks = global.skip_eblanks = 1; break;
        case 'u': unique = 1; break;
        case 's': stable = 1; break;
        case 'c': check = 1; break;
        case 'C': check = 2; break;
        case 'o': output = optarg; break;
        case 'k':
            if (!add_key(optarg, &status))
                return status;
            break;
        case 't':
            if (strlen(optarg) != 1) {
                box_err("sort", optarg[0] ? "multi-character tab '%s'" : "empty tab%s", optarg);
                return 2;
            }
            tab = (unsigned char)optarg[0];
            break;
        case ':': return box_missing_argument("sort", 2);
        default: return box_bad_option("sort", argv);
        }
    }
    global_reverse = global.reverse;
    /* A key without ordering options of its own inherits the global ones (GNU rule). */
    for (size_t i = 0; i < nkeys; i++) {
        struct key *k = &keys[i];
        if (!k->numeric && !k->reverse && !k->fold && !k->skip_sblanks && !k->skip_eblanks) {
            k->numeric = global.numeric;
            k->reverse = global.reverse;
            k->fold = global.fold;
            k->skip_sblanks = global.skip_sblanks;
            k->skip_eblanks = global.skip_eblanks;
        }
    }
    if (nkeys == 0) {
        keys = &global;
        nkeys = 1;
    }

    char *data = NULL;
    size_t len = 0, cap = 0;
    int nfiles;
    char **files = box_operands(argc, argv, "-", &nfiles);
    if (check && nfiles > 1) {
        box_err("sort", "extra operand '%s' not allowed with -c", files[1]);
        return 2;
    }
    for (int i = 0; i < nfiles; i++) {
        FILE *f = box_open_input(files[i]);
        if (f == NULL || !slurp(f, &data, &len, &cap)) {
            fprintf(stderr, "sort: cannot read: %s: %s\n", files[i], strerror(errno));
            return 2;
        }
        box_close_input(f);
    }

    size_t nlines = 0, lcap = 0;
    struct line *lines = NULL;
    for (size_t at = 0; at < len;) {
        const char *nl = memchr(data + at, '\n', len - at);
        size_t n = (size_t)(nl - (data + at));
        if (nlines == lcap) {
            lcap = lcap ? lcap * 2 : 1024;
            struct line *grown = realloc(lines, lcap * sizeof *lines);
            if (grown == NULL) {
                box_err("sort", "out of memory");
                return 2;
            }
            lines = grown;
        }
        lines[nlines++] = (struct line){data + at, n};
        at += n + 1;
    }

    if (check) {
        for (size_t i = 1; i < nlines; i++) {
            int c = line_cmp(&lines[i - 1], &lines[i]);
            if (c > 0 || (c == 0 && unique)) {
                if (check == 1)
                    fprintf(stderr, "sort: %s:%zu: disorder: %.*s\n", files[0], i + 1,
                            (int)lines[i].n, lines[i].p);
                return 1;
            }
        }
        return 0;
    }

    struct line *tmp = malloc((nlines ? nlines : 1) * sizeof *tmp);
    if (tmp == NULL) {
        box_err("sort", "out of memory");
        return 2;
    }
    merge_sort(lines, tmp, nlines);

    FILE *out = stdout;
    if (output != NULL && (out = fopen(output, "w")) == NULL) {
        fprintf(stderr, "sort: open failed: %s: %s\n", output, strerror(errno));
        return 2;
    }
    for (size_t i = 0; i < nlines; i++) {
        if (unique && i > 0 && key_cmp(&lines[i - 1], &lines[i]) == 0)
            continue;
        fwrite(lines[i].p, 1, lines[i].n, out);
        fputc('\n', out);
    }
    if (out != stdout && fclose(out) != 0) {
        fprintf(stderr, "sort: write failed: %s: %s\n", output, strerror(errno));
        return 2;
    }
    return 0;
}
