/* sed's script parser: addresses, the s and y commands, { } blocks, GNU's error messages
 * with their character positions, and refusals of the GNU features the sandbox lacks.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "box.h"
#include "sed.h"

/* Raised while parsing: a script error (status 1) or a refused GNU feature (status 2). */
static int parse_error(const struct sed *s, const char *at, const char *msg) {
    fprintf(stderr, "sed: -e expression #1, char %d: %s\n", (int)(at - s->script) + 1, msg);
    return 1;
}

static int refuse(const char *what) {
    fprintf(stderr, "sed: unsupported %s (not in the sandbox)\n", what);
    return 2;
}

int sed_buf_add(struct buf *b, const char *p, size_t n) {
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
    if (!sed_buf_add(out, "", 0))
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
            sed_buf_add(out, p, (size_t)(q + 1 - p));
            p = q + 1;
            continue;
        }
        if (*p == '\\' && p[1] != '\0') {
            char c = p[1];
            if (c == delim)
                sed_buf_add(out, &c, 1);
            else if (is_regex && c == 'n')
                sed_buf_add(out, "\n", 1);
            else if (is_regex && c == 't')
                sed_buf_add(out, "\t", 1);
            else
                sed_buf_add(out, p, 2);
            p += 2;
            continue;
        }
        sed_buf_add(out, p, 1);
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
    sed_buf_add(&lit, "", 0);
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
                sed_buf_add(&lit, &ch, 1);
            }
        } else {
            sed_buf_add(&lit, p, 1);
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
                sed_buf_add(&lit, "", 0);
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

int sed_parse_script(struct sed *s, const char *script) {
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
