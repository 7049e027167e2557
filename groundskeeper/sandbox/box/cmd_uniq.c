/* uniq: collapse adjacent equal lines (GNU uniq behaviour in the C locale).
 * Supported: -c (GNU's "%7d " counts) -d -D -u -i -f N -s N -w N, [INPUT [OUTPUT]].
 */
#include <ctype.h>
#include <errno.h>
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "box.h"

struct uniq {
    int count, repeated, all_repeated, unique, icase;
    unsigned long skip_fields, skip_chars, check_chars; /* check_chars 0: no limit */
};

/* The part of a line that is compared: after -f fields and -s chars, at most -w chars. */
static const char *cmp_region(const struct uniq *u, const char *s, size_t n, size_t *len) {
    const char *p = s, *lim = s + n;
    for (unsigned long f = 0; f < u->skip_fields; f++) {
        while (p < lim && (*p == ' ' || *p == '\t'))
            p++;
        while (p < lim && *p != ' ' && *p != '\t')
            p++;
    }
    p = (size_t)(lim - p) < u->skip_chars ? lim : p + u->skip_chars;
    *len = (size_t)(lim - p);
    if (u->check_chars > 0 && *len > u->check_chars)
        *len = u->check_chars;
    return p;
}

static int same(const struct uniq *u, const char *a, size_t an, const char *b, size_t bn) {
    size_t al, bl;
    const char *x = cmp_region(u, a, an, &al), *y = cmp_region(u, b, bn, &bl);
    if (al != bl)
        return 0;
    if (!u->icase)
        return memcmp(x, y, al) == 0;
    for (size_t i = 0; i < al; i++)
        if (tolower((unsigned char)x[i]) != tolower((unsigned char)y[i]))
            return 0;
    return 1;
}

static void put_line(FILE *out, const char *s, size_t n) {
    fwrite(s, 1, n, out);
    fputc('\n', out);
}

static void flush_group(const struct uniq *u, FILE *out, const char *s, size_t n,
                        unsigned long count) {
    if (u->all_repeated || (u->repeated && count < 2) || (u->unique && count > 1))
        return;
    if (u->count)
        fprintf(out, "%7lu ", count);
    put_line(out, s, n);
}

static int parse_count(const char *text, unsigned long *out) {
    char *end;
    errno = 0;
    *out = strtoul(text, &end, 10);
    return *text != '\0' && *text != '-' && *end == '\0' && errno == 0;
}

int cmd_uniq(int argc, char **argv) {
    static const struct option longopts[] = {{0, 0, 0, 0}};
    struct uniq u = {0};
    int opt;
    opterr = 0;
    while ((opt = getopt_long(argc, argv, ":cdDuif:s:w:", longopts, NULL)) != -1) {
        switch (opt) {
        case 'c': u.count = 1; break;
        case 'd': u.repeated = 1; break;
        case 'D': u.all_repeated = 1; break;
        case 'u': u.unique = 1; break;
        case 'i': u.icase = 1; break;
        case 'f': case 's': case 'w': {
            unsigned long *slot = opt == 'f'   ? &u.skip_fields
                                  : opt == 's' ? &u.skip_chars
                                               : &u.check_chars;
            if (!parse_count(optarg, slot)) {
                box_err("uniq", "%s: invalid number", optarg);
                return 1;
            }
            break;
        }
        case ':': return box_missing_argument("uniq", 1);
        default: return box_bad_option("uniq", argv);
        }
    }
    if (u.all_repeated && u.count) {
        box_err("uniq", "printing all duplicated lines and repeat counts is meaningless");
        return 1;
    }
    if (argc - optind > 2) {
        box_err("uniq", "extra operand '%s'", argv[optind + 2]);
        return 1;
    }
    FILE *in, *out = stdout;
    const char *in_name = optind < argc ? argv[optind] : "-";
    if ((in = box_open_input(in_name)) == NULL) {
        box_perror("uniq", in_name);
        return 1;
    }
    if (argc - optind == 2 && strcmp(argv[optind + 1], "-") != 0 &&
        (out = fopen(argv[optind + 1], "w")) == NULL) {
        box_perror("uniq", argv[optind + 1]);
        return 1;
    }

    char *prev = NULL, *cur = NULL;
    size_t prev_cap = 0, cur_cap = 0, prev_len = 0;
    unsigned long count = 0;
    ssize_t got;
    while ((got = getline(&cur, &cur_cap, in)) >= 0) {
        size_t n = (size_t)got;
        if (n > 0 && cur[n - 1] == '\n')
            n--;
        if (count > 0 && same(&u, prev, prev_len, cur, n)) {
            count++;
            if (u.all_repeated) {
                if (count == 2)
                    put_line(out, prev, prev_len);
                put_line(out, cur, n);
            }
            continue;
        }
        if (count > 0)
            flush_group(&u, out, prev, prev_len, count);
        /* The current line becomes the group's first line: swap the buffers. */
        char *swap = prev;
        size_t swap_cap = prev_cap;
        prev = cur;
        prev_cap = cur_cap;
        prev_len = n;
        cur = swap;
        cur_cap = swap_cap;
        count = 1;
    }
    int status = 0;
    if (ferror(in)) {
        box_perror("uniq", in_name);
        status = 1;
    }
    if (count > 0)
        flush_group(&u, out, prev, prev_len, count);
    free(prev);
    free(cur);
    box_close_input(in);
    if (out != stdout && fclose(out) != 0) {
        box_perror("uniq", argv[optind + 1]);
        status = 1;
    }
    return status;
}
