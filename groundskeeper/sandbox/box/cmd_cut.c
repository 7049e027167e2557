/* cut: print selected parts of lines (GNU cut behaviour in the C locale, where a
 * character is a byte). Supported: -f LIST with -d C and -s, -c LIST, -b LIST (-n ignored);
 * LIST is ranges like 1,3-5,7- and -3, separated by commas; --complement and
 * --output-delimiter=STR as in GNU.
 */
#include <errno.h>
#include <getopt.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "box.h"

/* The selected positions: a bitmap up to the largest closed bound, plus "from N on". */
struct list {
    unsigned char *bits;
    size_t nbits;
    size_t open_from; /* SIZE_MAX: no open-ended range */
    int complement;
};

static int selected(const struct list *l, size_t pos) {
    return (pos >= l->open_from || (pos < l->nbits && l->bits[pos])) != l->complement;
}

static int list_error(const char *msg, const char *text) {
    box_err("cut", "%s", msg);
    (void)text;
    return 0;
}

static int read_pos(const char **p, size_t *out) {
    char *end;
    errno = 0;
    unsigned long v = strtoul(*p, &end, 10);
    if (end == *p || errno != 0 || **p == '-' || **p == '+')
        return 0;
    *p = end;
    *out = (size_t)v;
    return 1;
}

static int parse_list(const char *text, struct list *l) {
    size_t (*ranges)[2] = NULL, n = 0;
    l->open_from = SIZE_MAX;
    const char *p = text;
    int ok = 1;
    while (ok) {
        size_t lo = 1, hi = 0;
        int have_lo = read_pos(&p, &lo), have_hi = 0;
        if (*p == '-') {
            p++;
            have_hi = read_pos(&p, &hi);
            if (!have_lo && !have_hi) {
                ok = list_error("invalid range with no endpoint: -", text);
                break;
            }
            if (!have_hi)
                hi = SIZE_MAX;
            if (!have_lo)
                lo = 1;
        } else if (have_lo) {
            hi = lo;
        } else {
            ok = list_error(*p == '\0' && p == text ? "missing list of fields"
                                                    : "invalid field value",
                            text);
            break;
        }
        if (lo == 0 || hi == 0) {
            ok = list_error("fields and positions are numbered from 1", text);
            break;
        }
        if (hi < lo) {
            ok = list_error("invalid decreasing range", text);
            break;
        }
        size_t (*grown)[2] = realloc(ranges, (n + 1) * sizeof *ranges);
        if (grown == NULL) {
            ok = list_error("out of memory", text);
            break;
        }
        ranges = grown;
        ranges[n][0] = lo - 1;
        ranges[n][1] = hi == SIZE_MAX ? SIZE_MAX : hi - 1;
        n++;
        if (*p == '\0')
            break;
        if (*p != ',') {
            ok = list_error("invalid field value", text);
            break;
        }
        p++;
    }
    if (ok) {
        size_t top = 0;
        for (size_t i = 0; i < n; i++) {
            if (ranges[i][1] == SIZE_MAX) {
                if (ranges[i][0] < l->open_from)
                    l->open_from = ranges[i][0];
            } else if (ranges[i][1] + 1 > top) {
                top = ranges[i][1] + 1;
            }
        }
        l->bits = calloc(top ? top : 1, 1);
        l->nbits = top;
        if (l->bits == NULL)
            ok = list_error("out of memory", text);
        for (size_t i = 0; ok && i < n; i++)
            if (ranges[i][1] != SIZE_MAX)
                memset(l->bits + ranges[i][0], 1, ranges[i][1] - ranges[i][0] + 1);
    }
    free(ranges);
    return ok;
}

static void cut_bytes(const struct list *l, const char *s, size_t n) {
    for (size_t i = 0; i < n; i++)
        if (selected(l, i))
            putchar(s[i]);
    putchar('\n');
}

static void cut_fields(const struct list *l, const char *s, size_t n, char delim,
                       const char *out_delim, int only_delimited) {
    if (memchr(s, delim, n) == NULL) {
        if (!only_delimited) {
            fwrite(s, 1, n, stdout);
            putchar('\n');
        }
        return;
    }
    size_t field = 0, start = 0;
    int printed = 0;
    for (size_t i = 0; i <= n; i++) {
        if (i == n || s[i] == delim) {
            if (selected(l, field)) {
                if (printed)
                    fputs(out_delim, stdout);
                fwrite(s + start, 1, i - start, stdout);
                printed = 1;
            }
            field++;
            start = i + 1;
            if (l->open_from == SIZE_MAX && field >= l->nbits && !l->complement)
                break; /* nothing further can be selected */
        }
    }
    putchar('\n');
}

int cmd_cut(int argc, char **argv) {
    static const struct option longopts[] = {{"complement", no_argument, 0, 1},
                                             {"output-delimiter", required_argument, 0, 2},
                                             {0, 0, 0, 0}};
    struct list l = {0};
    const char *out_delim = NULL;
    int complement = 0;
    int mode = 0, only_delimited = 0, have_delim = 0, opt;
    char delim = '\t';
    const char *list_text = NULL;
    opterr = 0;
    while ((opt = getopt_long(argc, argv, ":b:c:f:d:sn", longopts, NULL)) != -1) {
        switch (opt) {
        case 'b': case 'c': case 'f':
            if (mode != 0) {
                box_err("cut", "only one type of list may be specified");
                return 1;
            }
            mode = opt == 'f' ? 'f' : 'c';
            list_text = optarg;
            break;
        case 'd':
            if (strlen(optarg) > 1) {
                box_err("cut", "the delimiter must be a single character");
                return 1;
            }
            delim = optarg[0];
            have_delim = 1;
            break;
        case 's': only_delimited = 1; break;
        case 1: complement = 1; break;
        case 2: out_delim = optarg; break;
        case 'n': break;
        case ':': return box_missing_argument("cut", 1);
        default: return box_bad_option("cut", argv);
        }
    }
    if (mode == 0) {
        box_err("cut", "you must specify a list of bytes, characters, or fields");
        return 1;
    }
    if (have_delim && mode != 'f') {
        box_err("cut", "an input delimiter may be specified only when operating on fields");
        return 1;
    }
    if (only_delimited && mode != 'f') {
        box_err("cut", "suppressing non-delimited lines makes sense\n"
                       "\tonly when operating on fields");
        return 1;
    }
    if (!parse_list(list_text, &l))
        return 1;
    l.complement = complement;
    char delim_text[2] = {delim, '\0'};
    if (out_delim == NULL)
        out_delim = delim_text;

    int nfiles, status = 0;
    char **files = box_operands(argc, argv, "-", &nfiles);
    char *line = NULL;
    size_t cap = 0;
    for (int i = 0; i < nfiles; i++) {
        FILE *f = box_open_input(files[i]);
        if (f == NULL) {
            box_perror("cut", files[i]);
            status = 1;
            continue;
        }
        ssize_t got;
        while ((got = getline(&line, &cap, f)) >= 0) {
            size_t n = (size_t)got;
            if (n > 0 && line[n - 1] == '\n')
                n--;
            if (mode == 'f')
                cut_fields(&l, line, n, delim, out_delim, only_delimited);
            else
                cut_bytes(&l, line, n);
        }
        if (ferror(f)) {
            box_perror("cut", files[i]);
            status = 1;
        }
        box_close_input(f);
    }
    free(line);
    free(l.bits);
    return status;
}
