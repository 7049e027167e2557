/* grep: print lines matching patterns (GNU grep behaviour in the C locale).
 * Supported: -q -c -i -v -n -l -L -o -s -h -H -E -F -G -x -w -m NUM -e PAT (repeatable) -r/-R,
 * context -A/-B/-C NUM (GNU's "--" group separators and "-" context prefixes), and
 * --color[=never|auto] (no colour: output never goes to a terminal here).
 * Exit status as GNU: 0 a line was selected, 1 none, 2 trouble (unless -q found a match).
 */
#include <ctype.h>
#include <errno.h>
#include <getopt.h>
#include <regex.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "box.h"

/* GNU decides "binary" from the first buffer it reads; we look at this many bytes first. */
#define GREP_PEEK 32768

struct grep {
    int count, quiet, invert, number, list, list_missing, only, silent, ignore_case;
    int fixed, extended, whole_line, word, recursive, with_name;
    int name_in_dirs; /* GNU: a single operand under -r gets names only inside directories */
    long max_count; /* -1: unlimited */
    unsigned long before, after;
    /* Context output state, across files as in GNU (a "--" may separate two files). */
    int printed_any;
    const char *last_name;
    unsigned long last_lineno;
    char **pats;
    size_t npats;
    regex_t *res;
    int selected_any, trouble;
};

/* A line reader over a FILE that also notices NUL bytes (binary data) as it fills. */
struct reader {
    FILE *f;
    char *buf;
    size_t cap, len, pos;
    int eof, binary, failed;
};

static int reader_fill(struct reader *r) {
    if (r->pos > 0) {
        memmove(r->buf, r->buf + r->pos, r->len - r->pos);
        r->len -= r->pos;
        r->pos = 0;
    }
    if (r->len + 1 >= r->cap) {
        size_t cap = r->cap ? r->cap * 2 : GREP_PEEK + 1;
        char *grown = realloc(r->buf, cap);
        if (grown == NULL) {
            r->failed = ENOMEM;
            return 0;
        }
        r->buf = grown;
        r->cap = cap;
    }
    /* Keep one byte spare so a final line without newline can be NUL-terminated. */
    size_t got = fread(r->buf + r->len, 1, r->cap - 1 - r->len, r->f);
    if (got == 0) {
        if (ferror(r->f))
            r->failed = errno ? errno : EIO;
        r->eof = 1;
        return 0;
    }
    if (memchr(r->buf + r->len, '\0', got) != NULL)
        r->binary = 1;
    r->len += got;
    return 1;
}

/* Next line as a NUL-terminated string in place (newline replaced); NULL at end of input. */
static char *reader_line(struct reader *r, size_t *n) {
    for (;;) {
        char *start = r->buf + r->pos;
        char *nl = r->len > r->pos ? memchr(start, '\n', r->len - r->pos) : NULL;
        if (nl != NULL) {
            *nl = '\0';
            *n = (size_t)(nl - start);
            r->pos += *n + 1;
            return start;
        }
        if (r->eof || !reader_fill(r)) {
            if (r->len == r->pos)
                return NULL;
            start = r->buf + r->pos;
            *n = r->len - r->pos;
            start[*n] = '\0';
            r->pos = r->len;
            return start;
        }
    }
}

static int is_word_char(unsigned char c) { return isalnum(c) || c == '_'; }

static int word_bounded(const char *s, size_t n, size_t b, size_t e) {
    return (b == 0 || !is_word_char((unsigned char)s[b - 1])) &&
           (e == n || !is_word_char((unsigned char)s[e]));
}

/* Find a fixed string at or after `start`; returns its offset or (size_t)-1. */
static size_t fixed_find(const struct grep *g, const char *s, size_t n, size_t start,
                         const char *p, size_t m) {
    if (m > n)
        return (size_t)-1;
    for (size_t i = start; i + m <= n; i++) {
        size_t j = 0;
        if (g->ignore_case) {
            while (j < m && tolower((unsigned char)s[i + j]) == tolower((unsigned char)p[j]))
                j++;
        } else {
            while (j < m && s[i + j] == p[j])
                j++;
        }
        if (j == m)
            return i;
    }
    return (size_t)-1;
}

/* Leftmost-longest regex match of s[start..] with s NUL-terminated at n. */
static int regex_at(const regex_t *re, char *s, size_t start, int eflags, size_t *b, size_t *e) {
    regmatch_t m[1];
    if (regexec(re, s + start, 1, m, eflags | (start > 0 ? REG_NOTBOL : 0)) != 0)
        return 0;
    *b = start + (size_t)m[0].rm_so;
    *e = start + (size_t)m[0].rm_eo;
    return 1;
}

/* Pattern i's first acceptable match at or after `start` (honouring -x and -w). */
static int pattern_find(const struct grep *g, size_t i, char *s, size_t n, size_t start,
                        size_t *mb, size_t *me) {
    if (g->fixed) {
        const char *p = g->pats[i];
        size_t m = strlen(p);
        if (g->whole_line) {
            if (start != 0 || fixed_find(g, s, n, 0, p, m) != 0 || m != n)
                return 0;
            *mb = 0;
            *me = n;
            return 1;
        }
        for (size_t at = start; at <= n;) {
            size_t b = fixed_find(g, s, n, at, p, m);
            if (b == (size_t)-1)
                return 0;
            if (!g->word || word_bounded(s, n, b, b + m)) {
                *mb = b;
                *me = b + m;
                return 1;
            }
            at = b + 1;
        }
        return 0;
    }
    const regex_t *re = &g->res[i];
    size_t b, e;
    if (g->whole_line) {
        /* Leftmost-longest: a whole-line match exists iff the match at 0 spans the line. */
        if (start != 0 || !regex_at(re, s, 0, 0, &b, &e) || b != 0 || e != n)
            return 0;
        *mb = 0;
        *me = n;
        return 1;
    }
    for (size_t at = start; at <= n;) {
        if (!regex_at(re, s, at, 0, &b, &e))
            return 0;
        if (!g->word || word_bounded(s, n, b, e)) {
            *mb = b;
            *me = e;
            return 1;
        }
        /* As GNU does: try shorter matches from the same start before moving on. */
        for (size_t end = e; end-- > b;) {
            char saved = s[end];
            size_t b2, e2;
            s[end] = '\0';
            int ok = regex_at(re, s, b, REG_NOTEOL, &b2, &e2) && b2 == b && e2 == end;
            s[end] = saved;
            if (ok && word_bounded(s, n, b, end)) {
                *mb = b;
                *me = end;
                return 1;
            }
        }
        at = b + 1;
    }
    return 0;
}

/* Earliest (then longest) match among all patterns at or after `start`. */
static int line_find(const struct grep *g, char *s, size_t n, size_t start, size_t *mb,
                     size_t *me) {
    int found = 0;
    for (size_t i = 0; i < g->npats; i++) {
        size_t b, e;
        if (pattern_find(g, i, s, n, start, &b, &e) &&
            (!found || b < *mb || (b == *mb && e > *me))) {
            *mb = b;
            *me = e;
            found = 1;
        }
    }
    return found;
}

static void print_prefix(const struct grep *g, const char *name, unsigned long lineno) {
    if (g->with_name)
        printf("%s:", name);
    if (g->number)
        printf("%lu:", lineno);
}

/* A whole output line; sep is ':' for selected lines and '-' for context lines. */
static void print_line(struct grep *g, const char *name, unsigned long lineno, const char *s,
                       size_t n, char sep) {
    if ((g->before || g->after) && g->printed_any &&
        (g->last_name != name || lineno != g->last_lineno + 1))
        puts("--");
    if (g->with_name)
        printf("%s%c", name, sep);
    if (g->number)
        printf("%lu%c", lineno, sep);
    fwrite(s, 1, n, stdout);
    putchar('\n');
    g->printed_any = 1;
    g->last_name = name;
    g->last_lineno = lineno;
}

/* The last -B lines seen, copied (the reader's buffer moves under them). */
struct ring {
    char **text;
    size_t *len, *cap;
    unsigned long *lineno;
    size_t size, count, head;
};

static int ring_init(struct ring *r, size_t size) {
    r->size = size;
    r->count = r->head = 0;
    r->text = calloc(size ? size : 1, sizeof *r->text);
    r->len = calloc(size ? size : 1, sizeof *r->len);
    r->cap = calloc(size ? size : 1, sizeof *r->cap);
    r->lineno = calloc(size ? size : 1, sizeof *r->lineno);
    return r->text && r->len && r->cap && r->lineno;
}

static void ring_free(struct ring *r) {
    for (size_t i = 0; r->text != NULL && i < r->size; i++)
        free(r->text[i]);
    free(r->text);
    free(r->len);
    free(r->cap);
    free(r->lineno);
}

static void ring_push(struct ring *r, const char *s, size_t n, unsigned long lineno) {
    if (r->size == 0)
        return;
    size_t slot = (r->head + r->count) % r->size;
    if (r->count == r->size) {
        slot = r->head;
        r->head = (r->head + 1) % r->size;
    } else {
        r->count++;
    }
    if (r->cap[slot] < n + 1) {
        char *grown = realloc(r->text[slot], n + 1);
        if (grown == NULL) { /* out of memory: lose this context line, never the output */
            r->count--;
            return;
        }
        r->text[slot] = grown;
        r->cap[slot] = n + 1;
    }
    memcpy(r->text[slot], s, n);
    r->len[slot] = n;
    r->lineno[slot] = lineno;
}

static void ring_flush(struct ring *r, struct grep *g, const char *name) {
    for (size_t i = 0; i < r->count; i++) {
        size_t slot = (r->head + i) % r->size;
        print_line(g, name, r->lineno[slot], r->text[slot], r->len[slot], '-');
    }
    r->count = r->head = 0;
}

/* Search one open stream; returns 1 if the caller should stop everything (-q matched). */
static int grep_stream(struct grep *g, FILE *f, const char *name) {
    struct reader r = {.f = f};
    while (!r.eof && r.len < GREP_PEEK && reader_fill(&r)) {
    }
    unsigned long lineno = 0, selected = 0, after_left = 0;
    int binary_reported = 0, stop = 0;
    int context = (g->before || g->after) && !g->only;
    struct ring ring = {0};
    if (context && !ring_init(&ring, g->before)) {
        box_err("grep", "out of memory");
        g->trouble = 1;
        ring_free(&ring);
        return 0;
    }
    char *s;
    size_t n;
    while ((s = reader_line(&r, &n)) != NULL) {
        lineno++;
        int done = g->max_count >= 0 && (long)selected >= g->max_count;
        if (done && after_left == 0)
            break;
        size_t mb = 0, me = 0;
        int hit = !done && line_find(g, s, n, 0, &mb, &me) != g->invert;
        if (!hit) {
            /* Trailing context after -m's last match is printed as GNU does. */
            if (context && after_left > 0 && !r.binary) {
                print_line(g, name, lineno, s, n, '-');
                after_left--;
            } else if (context) {
                ring_push(&ring, s, n, lineno);
            }
            continue;
        }
        selected++;
        if (g->quiet) {
            stop = 1;
            break;
        }
        if (g->list || g->list_missing)
            break;
        if (g->count)
            continue;
        if (r.binary) {
            if (!binary_reported)
                fprintf(stderr, "grep: %s: binary file matches\n", name);
            binary_reported = 1;
            break;
        }
        if (g->only) {
            if (g->invert)
                continue;
            size_t at = 0;
            while (at <= n && line_find(g, s, n, at, &mb, &me)) {
                if (me > mb) {
                    /* With a context option GNU still separates distant matches by "--". */
                    if ((g->before || g->after) && g->printed_any &&
                        (g->last_name != name || lineno > g->last_lineno + 1))
                        puts("--");
                    g->printed_any = 1;
                    g->last_name = name;
                    g->last_lineno = lineno;
                    print_prefix(g, name, lineno);
                    fwrite(s + mb, 1, me - mb, stdout);
                    putchar('\n');
                    at = me;
                } else {
                    at = mb + 1;
                }
            }
            continue;
        }
        if (context)
            ring_flush(&ring, g, name);
        print_line(g, name, lineno, s, n, ':');
        after_left = g->after;
    }
    ring_free(&ring);
    if (r.failed) {
        errno = r.failed;
        if (!g->silent)
            box_perror("grep", name);
        g->trouble = 1;
    }
    free(r.buf);
    if (selected > 0)
        g->selected_any = 1;
    if (g->quiet)
        return stop;
    if (g->count) {
        if (g->with_name)
            printf("%s:", name);
        printf("%lu\n", selected);
    }
    if ((g->list && selected > 0) || (g->list_missing && selected == 0))
        printf("%s\n", name);
    return 0;
}

static int name_cmp(const void *a, const void *b) {
    return strcmp(*(char *const *)a, *(char *const *)b);
}

/* DIR/NAME, where "" (the working directory, as WASI takes it) gives the bare NAME. */
static char *child_path(const char *dir, const char *name) {
    return *dir == '\0' ? strdup(name) : box_path_join(dir, name);
}

static int grep_path(struct grep *g, const char *path, const char *shown, int operand);

/* -r over a directory: entries in name order (deterministic), symlinks below it skipped. */
static int grep_dir(struct grep *g, const char *path, const char *shown) {
    if (g->name_in_dirs)
        g->with_name = 1;
    size_t count;
    char **names = box_dir_names(path, &count);
    if (names == NULL) {
        if (!g->silent)
            box_perror("grep", shown);
        g->trouble = 1;
        return 0;
    }
    qsort(names, count, sizeof *names, name_cmp);
    int stop = 0;
    for (size_t i = 0; i < count && !stop; i++) {
        char *child = child_path(path, names[i]), *child_shown = child_path(shown, names[i]);
        if (child != NULL && child_shown != NULL)
            stop = grep_path(g, child, child_shown, 0);
        free(child);
        free(child_shown);
    }
    box_free_names(names, count);
    return stop;
}

static int grep_path(struct grep *g, const char *path, const char *shown, int operand) {
    if (strcmp(path, "-") == 0 && operand)
        return grep_stream(g, stdin, "(standard input)");
    struct stat st;
    if (g->recursive) {
        int rc = operand ? stat(path, &st) : lstat(path, &st);
        if (rc == 0 && S_ISLNK(st.st_mode))
            return 0;
        if (rc == 0 && S_ISDIR(st.st_mode))
            return grep_dir(g, path, shown);
    }
    FILE *f = fopen(path, "r");
    if (f == NULL) {
        if (!g->silent)
            box_perror("grep", shown);
        g->trouble = 1;
        return 0;
    }
    if (fstat(fileno(f), &st) == 0 && S_ISDIR(st.st_mode)) {
        if (!g->silent)
            fprintf(stderr, "grep: %s: Is a directory\n", shown);
        g->trouble = 1;
        fclose(f);
        return 0;
    }
    int stop = grep_stream(g, f, shown);
    fclose(f);
    return stop;
}

static int add_patterns(struct grep *g, const char *text) {
    /* A pattern argument holding newlines is several patterns, as in GNU grep. */
    const char *p = text;
    for (;;) {
        const char *nl = strchr(p, '\n');
        size_t len = nl ? (size_t)(nl - p) : strlen(p);
        char **grown = realloc(g->pats, (g->npats + 1) * sizeof *g->pats);
        if (grown == NULL)
            return 0;
        g->pats = grown;
        g->pats[g->npats] = strndup(p, len);
        if (g->pats[g->npats] == NULL)
            return 0;
        g->npats++;
        if (nl == NULL)
            return 1;
        p = nl + 1;
    }
}

static int compile_patterns(struct grep *g) {
    if (g->fixed)
        return 1;
    g->res = calloc(g->npats ? g->npats : 1, sizeof *g->res);
    if (g->res == NULL)
        return 0;
    for (size_t i = 0; i < g->npats; i++) {
        int rc = box_regcomp(&g->res[i], g->pats[i], g->extended, g->ignore_case);
        if (rc != 0) {
            char msg[256];
            regerror(rc, &g->res[i], msg, sizeof msg);
            box_err("grep", "%s", msg);
            return 0;
        }
    }
    return 1;
}

int cmd_grep(int argc, char **argv) {
    static const struct option longopts[] = {{"color", optional_argument, 0, 1},
                                             {"colour", optional_argument, 0, 1},
                                             {"perl-regexp", no_argument, 0, 'P'},
                                             {0, 0, 0, 0}};
    struct grep g = {.max_count = -1};
    int with_name = -1, have_e = 0, opt;
    opterr = 0;
    while ((opt = getopt_long(argc, argv, ":qcivnlLoshHEFGPxwrRm:e:A:B:C:", longopts, NULL)) !=
           -1) {
        switch (opt) {
        case 1:
            if (optarg != NULL && strcmp(optarg, "never") != 0 && strcmp(optarg, "auto") != 0)
                return box_usage("grep", argv[optind - 1]);
            break;
        case 'A': case 'B': case 'C': {
            char *end;
            long v = strtol(optarg, &end, 10);
            if (*end != '\0' || end == optarg || v < 0) {
                box_err("grep", "%s: invalid context length argument", optarg);
                return 2;
            }
            if (opt != 'B')
                g.after = (unsigned long)v;
            if (opt != 'A')
                g.before = (unsigned long)v;
            break;
        }
        case 'q': g.quiet = 1; break;
        case 'c': g.count = 1; break;
        case 'i': g.ignore_case = 1; break;
        case 'v': g.invert = 1; break;
        case 'n': g.number = 1; break;
        case 'l': g.list = 1; g.list_missing = 0; break;
        case 'L': g.list_missing = 1; g.list = 0; break;
        case 'o': g.only = 1; break;
        case 's': g.silent = 1; break;
        case 'h': with_name = 0; break;
        case 'H': with_name = 1; break;
        case 'E': g.extended = 1; g.fixed = 0; break;
        case 'F': g.fixed = 1; g.extended = 0; break;
        case 'G': g.fixed = 0; g.extended = 0; break;
        case 'P':
            /* the usual reach for -P is \d, lookarounds or lazy quantifiers: say what works */
            box_err("grep", "-P (Perl regex) is not supported in the sandbox; use -E (POSIX "
                            "extended regex)");
            return 2;
        case 'x': g.whole_line = 1; break;
        case 'w': g.word = 1; break;
        case 'r': case 'R': g.recursive = 1; break;
        case 'm': {
            char *end;
            g.max_count = strtol(optarg, &end, 10);
            if (*end != '\0' || end == optarg) {
                box_err("grep", "invalid max count");
                return 2;
            }
            break;
        }
        case 'e':
            have_e = 1;
            if (!add_patterns(&g, optarg)) {
                box_err("grep", "out of memory");
                return 2;
            }
            break;
        case ':': return box_missing_argument("grep", 2);
        default: return box_bad_option("grep", argv);
        }
    }
    if (!have_e) {
        if (optind >= argc) {
            fprintf(stderr, "Usage: grep [OPTION]... PATTERNS [FILE]...\n");
            return 2;
        }
        if (!add_patterns(&g, argv[optind++])) {
            box_err("grep", "out of memory");
            return 2;
        }
    }
    if (!compile_patterns(&g))
        return 2;
    int nfiles = argc - optind;
    g.with_name = with_name >= 0 ? with_name : nfiles > 1;
    g.name_in_dirs = with_name < 0 && nfiles <= 1 && g.recursive;
    if (g.max_count == 0)
        return 1;
    if (nfiles == 0) {
        /* GNU: -r without a file operand searches the working directory, names unprefixed. */
        if (g.recursive)
            grep_dir(&g, ".", "");
        else
            grep_stream(&g, stdin, "(standard input)");
    } else {
        for (int i = optind; i < argc; i++)
            if (grep_path(&g, argv[i], argv[i], 1))
                break;
    }
    if (g.quiet && g.selected_any)
        return 0;
    if (g.trouble)
        return 2;
    return g.selected_any ? 0 : 1;
}
