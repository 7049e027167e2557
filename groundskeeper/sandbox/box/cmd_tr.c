/* tr: translate, squeeze and delete bytes from stdin (GNU tr behaviour in the C locale).
 * Sets: literal bytes, escapes (\n \t \\ \NNN ...), ranges a-z, classes [:lower:] etc.,
 * [c*n] / [c*] repeats, [=c=]. Options: -d -s -c/-C -t.
 */
#include <ctype.h>
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "box.h"

/* An expanded set in order; upper/lower note where [:upper:]/[:lower:] appeared. */
struct set {
    unsigned char c[4096];
    size_t n;
    int fill_at;   /* index of a [c*] fill in SET2, or -1 */
    int has_class; /* a class other than upper/lower appeared */
};

static int push(struct set *s, unsigned char c) {
    if (s->n >= sizeof s->c) {
        box_err("tr", "set too large");
        return 0;
    }
    s->c[s->n++] = c;
    return 1;
}

/* One possibly escaped character at *p; advances *p. */
static unsigned char read_char(const char **p) {
    const char *q = *p;
    if (*q != '\\' || q[1] == '\0') {
        *p = q + 1;
        return (unsigned char)*q;
    }
    q++;
    if (*q >= '0' && *q <= '7') {
        unsigned v = 0;
        for (int i = 0; i < 3 && *q >= '0' && *q <= '7' && v * 8 + (unsigned)(*q - '0') < 256; i++)
            v = v * 8 + (unsigned)(*q++ - '0');
        *p = q;
        return (unsigned char)v;
    }
    const char *map = "a\ab\bf\fn\nr\rt\tv\v";
    const char *m = strchr(map, *q);
    *p = q + 1;
    return (m != NULL && (m - map) % 2 == 0) ? (unsigned char)m[1] : (unsigned char)*q;
}

static int class_member(const char *name, size_t len, int c) {
#define TR_CLASS(str, test) \
    if (len == sizeof str - 1 && memcmp(name, str, len) == 0) return (test) != 0;
    TR_CLASS("alpha", isalpha(c)) TR_CLASS("digit", isdigit(c)) TR_CLASS("alnum", isalnum(c))
    TR_CLASS("lower", islower(c)) TR_CLASS("upper", isupper(c)) TR_CLASS("space", isspace(c))
    TR_CLASS("blank", isblank(c)) TR_CLASS("punct", ispunct(c)) TR_CLASS("cntrl", iscntrl(c))
    TR_CLASS("print", isprint(c)) TR_CLASS("graph", isgraph(c)) TR_CLASS("xdigit", isxdigit(c))
#undef TR_CLASS
    return -1;
}

static int parse_set(const char *text, struct set *s, int is_set2) {
    const char *p = text;
    s->n = 0;
    s->fill_at = -1;
    while (*p != '\0') {
        if (p[0] == '[' && p[1] == ':') {
            const char *end = strstr(p + 2, ":]");
            size_t len = end ? (size_t)(end - p - 2) : 0;
            if (end != NULL && class_member(p + 2, len, 'a') >= 0) {
                int updown = (len == 5 && (memcmp(p + 2, "lower", 5) == 0 ||
                                           memcmp(p + 2, "upper", 5) == 0));
                if (!updown)
                    s->has_class = 1;
                for (int c = 0; c < 256; c++)
                    if (class_member(p + 2, len, c) && !push(s, (unsigned char)c))
                        return 0;
                p = end + 2;
                continue;
            }
            if (end != NULL) {
                box_err("tr", "invalid character class '%.*s'", (int)len, p + 2);
                return 0;
            }
        }
        if (p[0] == '[' && p[1] == '=' && p[2] != '\0' && p[3] == '=' && p[4] == ']') {
            if (!push(s, (unsigned char)p[2]))
                return 0;
            p += 5;
            continue;
        }
        if (p[0] == '[' && p[1] != '\0') {
            /* [c*n] repeats c n times; [c*] (SET2 only) fills up to SET1's length. */
            const char *q = p + 1;
            unsigned char c = read_char(&q);
            if (*q == '*') {
                char *end;
                unsigned long count = strtoul(q + 1, &end, q[1] == '0' ? 8 : 10);
                if (*end == ']') {
                    if (end == q + 1) {
                        if (!is_set2) {
                            box_err("tr", "the [c*] repeat construct may not appear in string1");
                            return 0;
                        }
                        s->fill_at = (int)s->n;
                        if (!push(s, c))
                            return 0;
                    }
                    for (unsigned long i = 0; i < count; i++)
                        if (!push(s, c))
                            return 0;
                    p = end + 1;
                    continue;
                }
            }
        }
        unsigned char lo = read_char(&p);
        if (*p == '-' && p[1] != '\0') {
            const char *q = p + 1;
            unsigned char hi = read_char(&q);
            if (hi < lo) {
                box_err("tr", "range-endpoints of '%c-%c' are in reverse collating sequence "
                              "order", lo, hi);
                return 0;
            }
            for (int c = lo; c <= hi; c++)
                if (!push(s, (unsigned char)c))
                    return 0;
            p = q;
            continue;
        }
        if (!push(s, lo))
            return 0;
    }
    return 1;
}

int cmd_tr(int argc, char **argv) {
    static const struct option longopts[] = {{0, 0, 0, 0}};
    int del = 0, squeeze = 0, complement = 0, truncate = 0, opt;
    opterr = 0;
    while ((opt = getopt_long(argc, argv, "+:dscCt", longopts, NULL)) != -1) {
        switch (opt) {
        case 'd': del = 1; break;
        case 's': squeeze = 1; break;
        case 'c': case 'C': complement = 1; break;
        case 't': truncate = 1; break;
        default: return box_bad_option("tr", argv);
        }
    }
    int nsets = argc - optind;
    int translate = !del && nsets >= 2;
    int want = (del && squeeze) || translate ? 2 : 1;
    if (nsets < 1 || (nsets < want) || (!del && !squeeze && nsets < 2)) {
        if (nsets < 1)
            box_err("tr", "missing operand");
        else
            box_err("tr", "missing operand after '%s'", argv[argc - 1]);
        return 1;
    }
    if (nsets > want) {
        box_err("tr", "extra operand '%s'", argv[optind + want]);
        return 1;
    }
    static struct set set1, set2;
    if (!parse_set(argv[optind], &set1, 0))
        return 1;
    if (nsets == 2 && !parse_set(argv[optind + 1], &set2, 1))
        return 1;

    int in1[256] = {0}, in2[256] = {0};
    unsigned char map[256];
    for (int c = 0; c < 256; c++)
        map[c] = (unsigned char)c;
    for (size_t i = 0; i < set1.n; i++)
        in1[set1.c[i]] = 1;
    if (complement) {
        /* The complement of SET1, in ascending byte order, is the set actually used. */
        set1.n = 0;
        for (int c = 0; c < 256; c++) {
            in1[c] = !in1[c];
            if (in1[c])
                set1.c[set1.n++] = (unsigned char)c;
        }
    }
    if (translate) {
        if (set2.has_class) {
            box_err("tr", "when translating, the only character classes that may appear in "
                          "string2 are 'upper' and 'lower'");
            return 1;
        }
        if (set2.fill_at >= 0) {
            size_t fill = set1.n > set2.n - 1 ? set1.n - (set2.n - 1) : 0;
            unsigned char c = set2.c[set2.fill_at];
            size_t tail = set2.n - (size_t)set2.fill_at - 1;
            if (set2.n - 1 + fill > sizeof set2.c)
                fill = sizeof set2.c - (set2.n - 1);
            memmove(set2.c + set2.fill_at + fill, set2.c + set2.fill_at + 1, tail);
            memset(set2.c + set2.fill_at, c, fill);
            set2.n = set2.n - 1 + fill;
        }
        if (set2.n == 0) {
            box_err("tr", "when not truncating set1, string2 must be non-empty");
            return 1;
        }
        if (truncate && set1.n > set2.n)
            set1.n = set2.n;
        for (size_t i = 0; i < set1.n; i++)
            map[set1.c[i]] = set2.c[i < set2.n ? i : set2.n - 1];
    }
    /* Which bytes squeeze: SET2 when there is one, else SET1. */
    if (nsets == 2)
        for (size_t i = 0; i < set2.n; i++)
            in2[set2.c[i]] = 1;
    const int *squeeze_set = nsets == 2 ? in2 : in1;

    unsigned char inbuf[65536], outbuf[65536];
    size_t got;
    int last = -1;
    while ((got = fread(inbuf, 1, sizeof inbuf, stdin)) > 0) {
        size_t o = 0;
        for (size_t i = 0; i < got; i++) {
            int c = inbuf[i];
            if (del && in1[c])
                continue;
            c = map[c];
            if (squeeze && squeeze_set[c] && c == last)
                continue;
            outbuf[o++] = (unsigned char)c;
            last = c;
        }
        if (fwrite(outbuf, 1, o, stdout) != o) {
            box_perror("tr", "write error");
            return 1;
        }
    }
    if (ferror(stdin)) {
        box_perror("tr", "read error");
        return 1;
    }
    return 0;
}
