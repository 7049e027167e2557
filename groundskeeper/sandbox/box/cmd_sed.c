/* sed: a stream editor for the common subset (GNU sed behaviour in the C locale).
 * Commands: s/re/repl/[g p N I], y/abc/xyz/, p P d D n N h H g G x q/Q [code] = and
 * { ... }, each with optional addresses (N, $, /re/[I], first~step) and ranges (a1,a2 /
 * a1,+N / 0,/re/), `!` negation, `;`/newline separated, `#` comments.
 * Options: -n, -E/-r, -e (repeatable). Anything else GNU sed has (-i, -f, -z, -s, the
 * a/i/c/b/t/l/w/r commands, ...) is refused with status 2.
 */
#include <errno.h>
#include <getopt.h>
#include <regex.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "box.h"

enum addr_kind { ADDR_NONE, ADDR_LINE, ADDR_LAST, ADDR_RE, ADDR_STEP, ADDR_PLUS };

struct addr {
    enum addr_kind kind;
    unsigned long line, step; /* ADDR_LINE: line; ADDR_STEP: first~step; ADDR_PLUS: +step */
    regex_t *re;              /* ADDR_RE: NULL means "the last regex used" */
};

struct part {
    int group; /* -1: literal text; 0..9: that group of the match */
    char *text;
    size_t len;
};

struct cmd {
    struct addr a1, a2;
    int negate;
    char name;
    int active;             /* inside a range */
    unsigned long end_line; /* for a1,+N ranges */
    regex_t *re;            /* s: NULL means the last regex used */
    struct part *parts;
    size_t nparts;
    int global, print;
    unsigned long nth;
    int exit_code;     /* q/Q */
    size_t jump;       /* {: index of the matching } */
    unsigned char *map; /* y: the 256-byte translation */
};

struct buf {
    char *data;
    size_t len, cap;
};

struct sed {
    struct cmd *cmds;
    size_t ncmds;
    int quiet, extended;
    const char *script;   /* for error positions */
    const regex_t *last_re;
    int pending_newline;  /* the last output lacked its newline (input ended without one) */
};

/* Raised while parsing: a script error (status 1) or a refused GNU feature (status 2). */
static int parse_error(const struct sed *s, const char *at, const char *msg) {
    fprintf(stderr, "sed: -e expression #1, char %d: %s\n", (int)(at - s->script) + 1, msg);
    return 1;
}

static int refuse(const char *what) {
    fprintf(stderr, "sed: unsupported %s (not in the sandbox)\n", what);
    return 2;
}

static int buf_add(struct buf *b, const char *p, size_t n) {
    if (b->len + n + 1 > b->cap) {
        size_t cap = b->cap ? b->cap : 64;
        while (b->len + n + 1 > cap)
            cap *= 2;
        char *grown = realloc(b->data, cap);
        if (grown == NULL)
            return 0;
        b->data = grown;
        b->cap = cap;
    }
    memcpy(b->data + b->len, p, n);
    b->len += n;
    b->data[b->len] = '\0';
    return 1;
}

/* Read up to the unescaped delimiter. Regex text keeps its escapes except \DELIM (the
 * delimiter itself), \n and \t; replacement text keeps every escape for the part parser. */
static const char *read_delimited(const char *p, char delim, int is_regex, struct buf *out) {
    out->len = 0;
    if (!buf_add(out, "", 0))
        return NULL;
    while (*p != '\0' && *p != delim) {
        if (*p == '\n' && is_regex)
            return NULL;
        if (*p == '[' && is_regex) {
            /* A bracket expression may hold the delimiter unescaped, as in GNU: s/[/]/x/. */
            const char *q = p + 1;
            if (*q == '^')
                q++;
            if (*q == ']')
                q++;
            while (*q != '\0' && *q != ']' && *q != '\n') {
                if (*q == '[' && q[1] != '\0' && strchr(":.=", q[1]) != NULL) {
                    const char close[3] = {q[1], ']', '\0'};
                    const char *found = strstr(q + 2, close);
                    q = found ? found + 2 : q + 1;
                } else {
                    q++;
                }
            }
            if (*q != ']')
                return NULL;
            buf_add(out, p, (size_t)(q + 1 - p));
            p = q + 1;
            continue;
        }
        if (*p == '\\' && p[1] != '\0') {
            char c = p[1];
            if (c == delim)
                buf_add(out, &c, 1);
            else if (is_regex && c == 'n')
                buf_add(out, "\n", 1);
            else if (is_regex && c == 't')
                buf_add(out, "\t", 1);
            else
                buf_add(out, p, 2);
            p += 2;
            continue;
        }
        buf_add(out, p, 1);
        p++;
    }
    return *p == delim ? p + 1 : NULL;
}

/* Compile regex text; an empty text means "the last regex used" (returned as NULL, ok=1). */
static regex_t *compile(const struct sed *s, const char *text, int icase, const char *at,
                        int *status) {
    *status = 0;
    if (*text == '\0')
        return NULL;
    regex_t *re = malloc(sizeof *re);
    if (re == NULL) {
        *status = parse_error(s, at, "out of memory");
        return NULL;
    }
    int rc = box_regcomp(re, text, s->extended, icase);
    if (rc != 0) {
        char msg[256];
        regerror(rc, re, msg, sizeof msg);
        free(re);
        *status = parse_error(s, at, msg);
        return NULL;
    }
    return re;
}

static const char *skip_blanks(const char *p) {
    while (*p == ' ' || *p == '\t')
        p++;
    return p;
}

static const char *parse_number(const char *p, unsigned long *out) {
    char *end;
    *out = strtoul(p, &end, 10);
    return end;
}

/* One address; returns the position after it, or NULL with *status set. */
static const char *parse_addr(struct sed *s, const char *p, struct addr *a, int *status) {
    *status = 0;
    if (*p >= '0' && *p <= '9') {
        p = parse_number(p, &a->line);
        a->kind = ADDR_LINE;
        if (*p == '~') {
            p = parse_number(p + 1, &a->step);
            a->kind = ADDR_STEP;
        }
        return p;
    }
    if (*p == '$') {
        a->kind = ADDR_LAST;
        return p + 1;
    }
    if (*p == '/' || *p == '\\') {
        char delim = '/';
        if (*p == '\\') {
            delim = *++p;
            if (delim == '\0' || delim == '\n' || delim == '\\') {
                *status = parse_error(s, p, "unexpected `,'");
                return NULL;
            }
        }
        struct buf text = {0};
        const char *start = p;
        p = read_delimited(p + 1, delim, 1, &text);
        if (p == NULL) {
            free(text.data);
            *status = parse_error(s, start, "unterminated address regex");
            return NULL;
        }
        int icase = 0;
        while (*p == 'I' || *p == 'M') {
            if (*p == 'M') {
                free(text.data);
                *status = refuse("address flag M");
                return NULL;
            }
            icase = 1;
            p++;
        }
        a->kind = ADDR_RE;
        a->re = compile(s, text.data, icase, start, status);
        free(text.data);
        return *status ? NULL : p;
    }
    a->kind = ADDR_NONE;
    return p;
}

/* The replacement of an s command, split into literal text and group references. */
static int parse_replacement(struct sed *s, struct cmd *c, const char *raw, const char *at,
                             size_t nsub) {
    struct buf lit = {0};
    buf_add(&lit, "", 0);
    for (const char *p = raw;; p++) {
        int group = -2;
        if (*p == '\0') {
            group = -3;
        } else if (*p == '&') {
            group = 0;
        } else if (*p == '\\' && p[1] != '\0') {
            char e = *++p;
            if (e >= '0' && e <= '9') {
                group = e - '0';
                if ((size_t)group > nsub) {
                    free(lit.data);
                    char msg[64];
                    snprintf(msg, sizeof msg, "invalid reference \\%d on `s' command's RHS",
                             group);
                    return parse_error(s, at, msg);
                }
            } else if (strchr("LUluE", e) != NULL) {
                free(lit.data);
                return refuse("case conversion in the replacement");
            } else {
                const char *map = "n\nt\tr\rf\fv\va\a";
                const char *m = strchr(map, e);
                char ch = (m != NULL && (m - map) % 2 == 0) ? m[1] : e;
                buf_add(&lit, &ch, 1);
            }
        } else {
            buf_add(&lit, p, 1);
        }
        if (group != -2) {
            /* Flush the literal run, then the group (if any). */
            size_t extra = (lit.len > 0) + (group >= 0);
            struct part *grown = realloc(c->parts, (c->nparts + extra + 1) * sizeof *grown);
            if (grown == NULL) {
                free(lit.data);
                return parse_error(s, at, "out of memory");
            }
            c->parts = grown;
            if (lit.len > 0) {
                c->parts[c->nparts++] = (struct part){-1, lit.data, lit.len};
                lit = (struct buf){0};
                buf_add(&lit, "", 0);
            }
            if (group >= 0)
                c->parts[c->nparts++] = (struct part){group, NULL, 0};
            if (group == -3)
                break;
        }
    }
    free(lit.data);
    return 0;
}

static const char *parse_subst(struct sed *s, struct cmd *c, const char *p, int *status) {
    char delim = *p;
    const char *start = p - 1;
    if (delim == '\0' || delim == '\n' || delim == '\\') {
        *status = parse_error(s, p, "unterminated `s' command");
        return NULL;
    }
    struct buf re_text = {0}, repl = {0};
    const char *q = read_delimited(p + 1, delim, 1, &re_text);
    if (q != NULL)
        q = read_delimited(q, delim, 0, &repl);
    if (q == NULL) {
        free(re_text.data);
        free(repl.data);
        *status = parse_error(s, start, "unterminated `s' command");
        return NULL;
    }
    int icase = 0;
    for (;; q++) {
        if (*q == 'g') {
            c->global = 1;
        } else if (*q == 'p') {
            c->print = 1;
        } else if (*q == 'i' || *q == 'I') {
            icase = 1;
        } else if (*q >= '0' && *q <= '9') {
            q = parse_number(q, &c->nth) - 1;
            if (c->nth == 0) {
                *status = parse_error(s, q, "number option to `s' command may not be zero");
                break;
            }
        } else if (*q != '\0' && strchr("mMew", *q) != NULL) {
            char what[32];
            snprintf(what, sizeof what, "s command flag %c", *q);
            *status = refuse(what);
            break;
        } else {
            break;
        }
    }
    if (*status == 0) {
        c->re = compile(s, re_text.data, icase, start, status);
        /* With `//` the group count is only known at run time: allow \1..\9 then. */
        size_t nsub = c->re != NULL ? c->re->re_nsub : 9;
        if (*status == 0)
            *status = parse_replacement(s, c, repl.data, start, nsub);
    }
    free(re_text.data);
    free(repl.data);
    return *status ? NULL : q;
}

/* y/src/dst/: both sides the same length once \\, \n and \DELIM are decoded. */
static const char *parse_y(struct sed *s, struct cmd *c, const char *p, int *status) {
    char delim = *p;
    const char *start = p - 1;
    struct buf side[2] = {{0}, {0}};
    const char *q = delim != '\0' && delim != '\n' && delim != '\\'
                        ? read_delimited(p + 1, delim, 0, &side[0])
                        : NULL;
    if (q != NULL)
        q = read_delimited(q, delim, 0, &side[1]);
    *status = 0;
    if (q == NULL)
        *status = parse_error(s, start, "unterminated `y' command");
    for (int k = 0; k < 2 && *status == 0; k++) {
        /* read_delimited kept escapes other than \DELIM: decode \\ and \n here. */
        size_t o = 0;
        for (size_t i = 0; i < side[k].len; i++) {
            char ch = side[k].data[i];
            if (ch == '\\' && i + 1 < side[k].len) {
                char e = side[k].data[++i];
                if (e == 'n')
                    ch = '\n';
                else if (e == 't')
                    ch = '\t';
                else if (e == '\\')
                    ch = '\\';
                else
                    *status = parse_error(s, start, "unknown option to `y'");
            }
            side[k].data[o++] = ch;
        }
        side[k].len = o;
    }
    if (*status == 0 && side[0].len != side[1].len)
        *status = parse_error(s, start, "strings for `y' command are different lengths");
    if (*status == 0 && (c->map = malloc(256)) == NULL)
        *status = parse_error(s, start, "out of memory");
    if (*status == 0) {
        for (int i = 0; i < 256; i++)
            c->map[i] = (unsigned char)i;
        for (size_t i = 0; i < side[0].len; i++)
            c->map[(unsigned char)side[0].data[i]] = (unsigned char)side[1].data[i];
    }
    free(side[0].data);
    free(side[1].data);
    return *status ? NULL : q;
}

static int parse_script(struct sed *s, const char *script) {
    const char *p = script;
    size_t open[64], depth = 0;
    s->script = script;
    for (;;) {
        while (*p == ' ' || *p == '\t' || *p == '\n' || *p == ';')
            p++;
        if (*p == '\0') {
            if (depth > 0)
                return parse_error(s, p, "unmatched `{'");
            return 0;
        }
        if (*p == '#') {
            while (*p != '\0' && *p != '\n')
                p++;
            continue;
        }
        struct cmd c = {.nth = 1};
        int status;
        p = parse_addr(s, p, &c.a1, &status);
        if (p == NULL)
            return status;
        if (c.a1.kind != ADDR_NONE && *p == ',') {
            p = skip_blanks(p + 1);
            if (*p == '+') {
                p = parse_number(p + 1, &c.a2.step);
                c.a2.kind = ADDR_PLUS;
            } else {
                p = parse_addr(s, p, &c.a2, &status);
                if (p == NULL)
                    return status;
                if (c.a2.kind == ADDR_NONE)
                    return parse_error(s, p, "unexpected `,'");
                if (c.a2.kind == ADDR_STEP)
                    return refuse("address form a1,~N");
            }
        }
        if (c.a1.kind == ADDR_LINE && c.a1.line == 0) {
            if (c.a2.kind != ADDR_RE)
                return parse_error(s, p, "invalid usage of line address 0");
            c.active = 1; /* 0,/re/: the range is open before line 1 */
        }
        p = skip_blanks(p);
        if (*p == '!') {
            c.negate = 1;
            p = skip_blanks(p + 1);
        }
        c.name = *p;
        const char *at = p;
        if (*p == '\0')
            return parse_error(s, p, "missing command");
        p++;
        switch (c.name) {
        case 'p': case 'P': case 'd': case 'D': case '=': case 'n': case 'N':
        case 'h': case 'H': case 'g': case 'G': case 'x':
            break;
        case 'q': case 'Q':
            if (c.a2.kind != ADDR_NONE)
                return parse_error(s, at, "command only uses one address");
            p = skip_blanks(p);
            if (*p >= '0' && *p <= '9') {
                unsigned long code;
                p = parse_number(p, &code);
                c.exit_code = (int)(code & 0xff);
            }
            break;
        case 's':
            p = parse_subst(s, &c, p, &status);
            if (p == NULL)
                return status;
            break;
        case 'y':
            p = parse_y(s, &c, p, &status);
            if (p == NULL)
                return status;
            break;
        case '{':
            if (depth == sizeof open / sizeof open[0])
                return refuse("nesting of { deeper than 64");
            open[depth++] = s->ncmds;
            break;
        case '}':
            if (c.a1.kind != ADDR_NONE || c.negate)
                return parse_error(s, at, "} doesn't want any addresses");
            if (depth == 0)
                return parse_error(s, at, "unexpected `}'");
            s->cmds[open[--depth]].jump = s->ncmds;
            break;
        default:
            if (strchr("aicbtTlwrzFeWRv:", c.name) != NULL) {
                char what[32];
                snprintf(what, sizeof what, "command `%c'", c.name);
                return refuse(what);
            }
            {
                char msg[40];
                snprintf(msg, sizeof msg, "unknown command: `%c'", c.name);
                return parse_error(s, at, msg);
            }
        }
        p = skip_blanks(p);
        if (*p != '\0' && *p != ';' && *p != '\n' && *p != '#' && *p != '}' && c.name != '{')
            return parse_error(s, p, "extra characters after command");
        struct cmd *grown = realloc(s->cmds, (s->ncmds + 1) * sizeof *grown);
        if (grown == NULL)
            return parse_error(s, p, "out of memory");
        s->cmds = grown;
        s->cmds[s->ncmds++] = c;
    }
}

/* Regex match on the pattern space, tracking "the last regex used" for `//`. */
static int re_match(struct sed *s, const regex_t *re, const char *text, size_t nmatch,
                    regmatch_t *m, int eflags, int *err) {
    if (re == NULL)
        re = s->last_re;
    if (re == NULL) {
        box_err("sed", "no previous regular expression");
        *err = 1;
        return 0;
    }
    s->last_re = re;
    if (nmatch > re->re_nsub + 1)
        nmatch = re->re_nsub + 1;
    for (size_t i = nmatch; i < 10; i++)
        m[i].rm_so = m[i].rm_eo = -1;
    return regexec(re, text, nmatch, m, eflags) == 0;
}

static int addr_hit(struct sed *s, const struct addr *a, const struct buf *ps,
                    unsigned long lineno, int last, int *err) {
    regmatch_t m[10];
    switch (a->kind) {
    case ADDR_LINE: return lineno == a->line;
    case ADDR_LAST: return last;
    case ADDR_RE: return re_match(s, a->re, ps->data, 0, m, 0, err);
    case ADDR_STEP:
        if (a->step == 0)
            return lineno == a->line;
        return lineno >= a->line && (lineno - a->line) % a->step == 0;
    default: return 0;
    }
}

static int selected(struct sed *s, struct cmd *c, const struct buf *ps, unsigned long lineno,
                    int last, int *err) {
    int hit;
    if (c->a1.kind == ADDR_NONE) {
        hit = 1;
    } else if (c->a2.kind == ADDR_NONE) {
        hit = addr_hit(s, &c->a1, ps, lineno, last, err);
    } else if (c->active) {
        hit = 1;
        if (c->a2.kind == ADDR_LINE)
            c->active = lineno < c->a2.line;
        else if (c->a2.kind == ADDR_PLUS)
            c->active = lineno < c->end_line;
        else if (addr_hit(s, &c->a2, ps, lineno, last, err))
            c->active = 0;
    } else if (addr_hit(s, &c->a1, ps, lineno, last, err)) {
        hit = 1;
        if (c->a2.kind == ADDR_LINE)
            c->active = c->a2.line > lineno;
        else if (c->a2.kind == ADDR_PLUS) {
            c->end_line = lineno + c->a2.step;
            c->active = c->a2.step > 0;
        } else if (c->a2.kind == ADDR_LAST)
            c->active = !last;
        else
            c->active = 1; /* a regex end is looked for from the next line on */
    } else {
        hit = 0;
    }
    return hit != c->negate;
}

static void emit(struct sed *s, const struct buf *ps, int newline) {
    if (s->pending_newline)
        putchar('\n');
    fwrite(ps->data, 1, ps->len, stdout);
    if (newline)
        putchar('\n');
    s->pending_newline = !newline;
}

/* s///: returns 1 if a replacement was made; result replaces *ps. */
static int substitute(struct sed *s, struct cmd *c, struct buf *ps, struct buf *out, int *err) {
    regmatch_t m[10];
    size_t pos = 0, count = 0, prev_end = 0;
    int have_prev = 0, replaced = 0;
    out->len = 0;
    buf_add(out, "", 0);
    while (pos <= ps->len &&
           re_match(s, c->re, ps->data + pos, 10, m, pos > 0 ? REG_NOTBOL : 0, err)) {
        size_t b = pos + (size_t)m[0].rm_so, e = pos + (size_t)m[0].rm_eo;
        if (b == e && have_prev && b == prev_end) {
            /* No empty match right after the previous one: GNU turns abc into -a-c- with
             * the b-star pattern replaced globally by a dash. */
            if (b >= ps->len)
                break;
            buf_add(out, ps->data + pos, b - pos + 1);
            pos = b + 1;
            continue;
        }
        count++;
        buf_add(out, ps->data + pos, b - pos);
        if (count >= c->nth) {
            for (size_t i = 0; i < c->nparts; i++) {
                const struct part *pt = &c->parts[i];
                if (pt->group < 0)
                    buf_add(out, pt->text, pt->len);
                else if (m[pt->group].rm_so >= 0)
                    buf_add(out, ps->data + pos + m[pt->group].rm_so,
                            (size_t)(m[pt->group].rm_eo - m[pt->group].rm_so));
            }
            replaced = 1;
        } else {
            buf_add(out, ps->data + b, e - b);
        }
        prev_end = e;
        have_prev = 1;
        pos = e;
        if (replaced && !c->global)
            break;
        if (b == e) {
            if (b >= ps->len)
                break;
            buf_add(out, ps->data + b, 1);
            pos = b + 1;
        }
    }
    if (*err || !replaced)
        return 0;
    if (pos < ps->len)
        buf_add(out, ps->data + pos, ps->len - pos);
    struct buf tmp = *ps;
    *ps = *out;
    *out = tmp;
    return 1;
}

/* Input: the files in order (or stdin), read one line ahead so `$` is known. */
struct input {
    char **files;
    int nfiles, next;
    FILE *f;
    int status;
};

static int open_next(struct input *in) {
    while (in->f == NULL && in->next < in->nfiles) {
        const char *name = in->files[in->next++];
        if (strcmp(name, "-") == 0) {
            in->f = stdin;
        } else {
            in->f = fopen(name, "r");
            if (in->f == NULL) {
                fprintf(stderr, "sed: can't read %s: %s\n", name, strerror(errno));
                in->status = 2;
            }
        }
    }
    return in->f != NULL;
}

static ssize_t next_line(struct input *in, char **line, size_t *cap) {
    while (open_next(in)) {
        ssize_t n = getline(line, cap, in->f);
        if (n >= 0)
            return n;
        if (in->f != stdin)
            fclose(in->f);
        in->f = NULL;
    }
    return -1;
}

/* The current input line and the one after it (so that `$` is known in advance). */
struct lines {
    char *cur, *ahead;
    size_t cur_cap, ahead_cap;
    ssize_t cur_len, ahead_len;
};

static void advance(struct input *in, struct lines *l) {
    char *swap = l->cur;
    size_t swap_cap = l->cur_cap;
    l->cur = l->ahead;
    l->cur_cap = l->ahead_cap;
    l->cur_len = l->ahead_len;
    l->ahead = swap;
    l->ahead_cap = swap_cap;
    l->ahead_len = next_line(in, &l->ahead, &l->ahead_cap);
}

/* Append the current line (without its newline) to ps; returns whether it had one. */
static int take_line(const struct lines *l, struct buf *ps) {
    int had_newline = l->cur_len > 0 && l->cur[l->cur_len - 1] == '\n';
    buf_add(ps, l->cur, (size_t)l->cur_len - (had_newline ? 1 : 0));
    return had_newline;
}

static int run(struct sed *s, struct input *in) {
    struct lines l = {0};
    l.cur_len = next_line(in, &l.cur, &l.cur_cap);
    l.ahead_len = l.cur_len >= 0 ? next_line(in, &l.ahead, &l.ahead_cap) : -1;
    struct buf ps = {0}, spare = {0}, hold = {0};
    buf_add(&hold, "", 0);
    unsigned long lineno = 0;
    int err = 0, status = 0, quit = 0, restart = 0, had_newline = 0;
    while ((restart || l.cur_len >= 0) && !quit) {
        if (!restart) {
            lineno++;
            ps.len = 0;
            had_newline = take_line(&l, &ps);
        }
        restart = 0;
        int autoprint = !s->quiet;
        for (size_t i = 0; i < s->ncmds && !err; i++) {
            struct cmd *c = &s->cmds[i];
            int last = l.ahead_len < 0;
            if (!selected(s, c, &ps, lineno, last, &err) || err) {
                if (c->name == '{')
                    i = c->jump; /* skip the block: resume after its } */
                continue;
            }
            if (c->name == 'p') {
                emit(s, &ps, had_newline);
            } else if (c->name == 'P') {
                const char *nl = memchr(ps.data, '\n', ps.len);
                struct buf first = {ps.data, nl ? (size_t)(nl - ps.data) : ps.len, 0};
                emit(s, &first, nl != NULL || had_newline);
            } else if (c->name == 'd') {
                autoprint = 0;
                break;
            } else if (c->name == 'D') {
                /* Drop the first line of the pattern space; with more left, start the next
                 * cycle on what remains instead of reading a new line. */
                const char *nl = memchr(ps.data, '\n', ps.len);
                autoprint = 0;
                if (nl != NULL) {
                    size_t cut = (size_t)(nl - ps.data) + 1;
                    memmove(ps.data, ps.data + cut, ps.len - cut + 1);
                    ps.len -= cut;
                    restart = 1;
                }
                break;
            } else if (c->name == '=') {
                if (s->pending_newline)
                    putchar('\n');
                s->pending_newline = 0;
                printf("%lu\n", lineno);
            } else if (c->name == 'q' || c->name == 'Q') {
                if (c->name == 'Q')
                    autoprint = 0;
                status = c->exit_code;
                quit = 1;
                break;
            } else if (c->name == 'n' || c->name == 'N') {
                /* Without a next line GNU ends here, printing the pattern space. */
                if (last) {
                    quit = 1;
                    break;
                }
                if (c->name == 'n') {
                    if (!s->quiet)
                        emit(s, &ps, had_newline);
                    ps.len = 0;
                } else {
                    buf_add(&ps, "\n", 1);
                }
                advance(in, &l);
                lineno++;
                had_newline = take_line(&l, &ps);
            } else if (c->name == 's') {
                if (substitute(s, c, &ps, &spare, &err) && c->print)
                    emit(s, &ps, had_newline);
            } else if (c->name == 'y') {
                for (size_t k = 0; k < ps.len; k++)
                    ps.data[k] = (char)c->map[(unsigned char)ps.data[k]];
            } else if (c->name == 'h' || c->name == 'H') {
                if (c->name == 'h')
                    hold.len = 0;
                else
                    buf_add(&hold, "\n", 1);
                buf_add(&hold, ps.data, ps.len);
            } else if (c->name == 'g' || c->name == 'G') {
                if (c->name == 'g')
                    ps.len = 0;
                else
                    buf_add(&ps, "\n", 1);
                buf_add(&ps, hold.data, hold.len);
            } else if (c->name == 'x') {
                struct buf swap = ps;
                ps = hold;
                hold = swap;
            }
        }
        if (err) {
            status = 1;
            break;
        }
        if (autoprint)
            emit(s, &ps, had_newline);
        if (!restart)
            advance(in, &l);
    }
    free(l.cur);
    free(l.ahead);
    free(ps.data);
    free(spare.data);
    free(hold.data);
    if (quit || err)
        return status;
    return in->status;
}

int cmd_sed(int argc, char **argv) {
    static const struct option longopts[] = {{0, 0, 0, 0}};
    struct sed s = {0};
    struct buf script = {0};
    int have_e = 0, opt;
    opterr = 0;
    while ((opt = getopt_long(argc, argv, ":nEre:", longopts, NULL)) != -1) {
        switch (opt) {
        case 'n': s.quiet = 1; break;
        case 'E': case 'r': s.extended = 1; break;
        case 'e':
            if (have_e)
                buf_add(&script, "\n", 1);
            buf_add(&script, optarg, strlen(optarg));
            have_e = 1;
            break;
        case ':': return box_missing_argument("sed", 1);
        default: return box_bad_option("sed", argv);
        }
    }
    if (!have_e) {
        if (optind >= argc) {
            fprintf(stderr, "Usage: sed [OPTION]... {script-only-if-no-other-script} "
                            "[input-file]...\n");
            return 1;
        }
        buf_add(&script, argv[optind], strlen(argv[optind]));
        optind++;
    }
    int status = parse_script(&s, script.data);
    if (status != 0)
        return status;
    struct input in = {NULL, 0, 0, NULL, 0};
    in.files = box_operands(argc, argv, "-", &in.nfiles);
    return run(&s, &in);
}
