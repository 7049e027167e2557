/* expr: evaluate an expression given as separate arguments, as GNU expr does: | & comparisons
 * + - * / % and `:` (anchored BRE match), plus length, substr, index, match and `+ TOKEN`.
 * Exit 0 when the result is neither empty nor zero, 1 when it is, 2 on any error. Integers
 * are 64-bit; overflow is an error rather than a wrong answer.
 */
#include <errno.h>
#include <inttypes.h>
#include <regex.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "box.h"

struct value {
    bool is_int;
    intmax_t i;
    char *s; /* owned; NULL when is_int */
};

struct expr {
    char **av;
    int n;
    int pos;
    bool failed;
};

static struct value make_int(intmax_t i) { return (struct value){true, i, NULL}; }

static struct value make_str(const char *s, size_t len) {
    char *copy = box_need("expr", malloc(len + 1), 3);
    memcpy(copy, s, len);
    copy[len] = '\0';
    return (struct value){false, 0, copy};
}

static void drop(struct value *v) {
    free(v->s);
    v->s = NULL;
}

static void error(struct expr *e, const char *fmt, const char *arg) {
    if (!e->failed) {
        fputs("expr: ", stderr);
        fprintf(stderr, fmt, arg);
        fputc('\n', stderr);
    }
    e->failed = true;
}

/* GNU's integer syntax: an optional '-' and at least one decimal digit. */
static bool looks_like_integer(const char *s) {
    s += *s == '-';
    return *s != '\0' && strspn(s, "0123456789") == strlen(s);
}

/* The value as an integer; false (with an error when `evaluate`) if it is not one. */
static bool to_int(struct expr *e, const struct value *v, intmax_t *out, bool evaluate) {
    if (v->is_int) {
        *out = v->i;
        return true;
    }
    if (looks_like_integer(v->s)) {
        errno = 0;
        *out = strtoimax(v->s, NULL, 10);
        if (errno == ERANGE) {
            if (!evaluate) return false;
            error(e, "%s", "integer overflow");
            return false;
        }
        return true;
    }
    if (evaluate) error(e, "%s", "non-integer argument");
    return false;
}

/* Text of a value (integers formatted into buf). */
static const char *text(const struct value *v, char *buf, size_t size) {
    if (!v->is_int) return v->s;
    snprintf(buf, size, "%jd", v->i);
    return buf;
}

/* GNU's null(): the empty string, or an integer zero written as 0, -0, 00 ... */
static bool is_null(const struct value *v) {
    if (v->is_int) return v->i == 0;
    const char *p = v->s;
    if (*p == '\0') return true;
    p += *p == '-';
    do {
        if (*p != '0') return false;
    } while (*++p);
    return true;
}

static bool at(struct expr *e, const char *tok) {
    if (e->pos < e->n && strcmp(e->av[e->pos], tok) == 0) {
        e->pos++;
        return true;
    }
    return false;
}

static struct value parse_or(struct expr *e, bool evaluate);

static struct value parse_primary(struct expr *e, bool evaluate) {
    if (e->pos >= e->n) {
        error(e, "syntax error: missing argument after '%s'", e->pos > 0 ? e->av[e->pos - 1] : "");
        return make_int(0);
    }
    if (at(e, "(")) {
        struct value v = parse_or(e, evaluate);
        if (e->failed) return v;
        if (e->pos >= e->n) {
            error(e, "syntax error: expecting ')' after '%s'", e->av[e->pos - 1]);
        } else if (!at(e, ")")) {
            error(e, "syntax error: expecting ')' instead of '%s'", e->av[e->pos]);
        }
        return v;
    }
    if (strcmp(e->av[e->pos], ")") == 0) {
        error(e, "syntax error: unexpected argument '%s'", ")");
        return make_int(0);
    }
    const char *tok = e->av[e->pos++];
    return make_str(tok, strlen(tok));
}

static struct value regex_match(struct expr *e, const char *s, const char *pattern) {
    /* the match is anchored at the start, as in GNU expr */
    size_t plen = strlen(pattern);
    char *anchored = malloc(plen + 2);
    if (anchored == NULL) {
        error(e, "%s", "out of memory");
        return make_int(0);
    }
    anchored[0] = '^';
    memcpy(anchored + 1, pattern, plen + 1);
    regex_t re;
    int rc = regcomp(&re, anchored, 0);
    free(anchored);
    if (rc != 0) {
        char msg[256];
        regerror(rc, &re, msg, sizeof msg);
        error(e, "%s", msg);
        return make_int(0);
    }
    regmatch_t m[2];
    bool matched = regexec(&re, s, 2, m, 0) == 0;
    struct value v;
    if (re.re_nsub > 0) {
        v = matched && m[1].rm_so >= 0 ? make_str(s + m[1].rm_so, (size_t)(m[1].rm_eo - m[1].rm_so))
                                       : make_str("", 0);
    } else {
        v = make_int(matched ? (intmax_t)(m[0].rm_eo - m[0].rm_so) : 0);
    }
    regfree(&re);
    return v;
}

static struct value parse_keyword(struct expr *e, bool evaluate);

/* `:` binds tighter than arithmetic */
static struct value parse_match(struct expr *e, bool evaluate) {
    struct value l = parse_keyword(e, evaluate);
    while (!e->failed && at(e, ":")) {
        struct value r = parse_keyword(e, evaluate);
        if (e->failed) {
            drop(&r);
            break;
        }
        char lb[32], rb[32];
        struct value v = evaluate ? regex_match(e, text(&l, lb, sizeof lb), text(&r, rb, sizeof rb))
                                  : make_int(0);
        drop(&l);
        drop(&r);
        l = v;
    }
    return l;
}

static struct value parse_keyword(struct expr *e, bool evaluate) {
    if (at(e, "+")) {
        /* `+ TOKEN` takes the next argument literally, even a keyword or operator */
        if (e->pos >= e->n) {
            error(e, "syntax error: missing argument after '%s'", "+");
            return make_int(0);
        }
        const char *tok = e->av[e->pos++];
        return make_str(tok, strlen(tok));
    }
    char buf[32];
    if (at(e, "length")) {
        struct value s = parse_keyword(e, evaluate);
        struct value v = make_int((intmax_t)strlen(text(&s, buf, sizeof buf)));
        drop(&s);
        return v;
    }
    if (at(e, "match")) {
        struct value s = parse_keyword(e, evaluate);
        struct value r = parse_keyword(e, evaluate);
        char rb[32];
        struct value v = evaluate && !e->failed
                             ? regex_match(e, text(&s, buf, sizeof buf), text(&r, rb, sizeof rb))
                             : make_int(0);
        drop(&s);
        drop(&r);
        return v;
    }
    if (at(e, "index")) {
        struct value s = parse_keyword(e, evaluate);
        struct value chars = parse_keyword(e, evaluate);
        char cb[32];
        const char *str = text(&s, buf, sizeof buf), *set = text(&chars, cb, sizeof cb);
        size_t k = strcspn(str, set);
        struct value v = make_int(str[k] != '\0' ? (intmax_t)k + 1 : 0);
        drop(&s);
        drop(&chars);
        return v;
    }
    if (at(e, "substr")) {
        struct value s = parse_keyword(e, evaluate);
        struct value p = parse_keyword(e, evaluate);
        struct value l = parse_keyword(e, evaluate);
        const char *str = text(&s, buf, sizeof buf);
        intmax_t pos, len;
        size_t slen = strlen(str);
        struct value v;
        /* GNU: an out-of-range or non-numeric position or length gives "" */
        if (!e->failed && to_int(e, &p, &pos, false) && to_int(e, &l, &len, false) && pos >= 1 &&
            len >= 1 && (uintmax_t)pos <= slen) {
            size_t start = (size_t)pos - 1, avail = slen - start;
            v = make_str(str + start, (uintmax_t)len < avail ? (size_t)len : avail);
        } else {
            v = make_str("", 0);
        }
        drop(&s);
        drop(&p);
        drop(&l);
        return v;
    }
    return parse_primary(e, evaluate);
}

static bool mul_overflows(intmax_t a, intmax_t b) {
    intmax_t r;
    return __builtin_mul_overflow(a, b, &r);
}

static struct value parse_mul(struct expr *e, bool evaluate) {
    struct value l = parse_match(e, evaluate);
    while (!e->failed && e->pos < e->n) {
        const char *op = e->av[e->pos];
        if (strcmp(op, "*") != 0 && strcmp(op, "/") != 0 && strcmp(op, "%") != 0) break;
        e->pos++;
        struct value r = parse_match(e, evaluate);
        intmax_t a = 0, b = 0, res = 0;
        if (!e->failed && evaluate && to_int(e, &l, &a, true) && to_int(e, &r, &b, true)) {
            if (op[0] != '*' && b == 0) error(e, "%s", "division by zero");
            else if (op[0] == '*' && mul_overflows(a, b)) error(e, "%s", "integer overflow");
            else if (op[0] != '*' && a == INTMAX_MIN && b == -1) error(e, "%s", "integer overflow");
            else res = op[0] == '*' ? a * b : op[0] == '/' ? a / b : a % b;
        }
        drop(&l);
        drop(&r);
        l = make_int(res);
    }
    return l;
}

static struct value parse_add(struct expr *e, bool evaluate) {
    struct value l = parse_mul(e, evaluate);
    while (!e->failed && e->pos < e->n) {
        const char *op = e->av[e->pos];
        if (strcmp(op, "+") != 0 && strcmp(op, "-") != 0) break;
        e->pos++;
        struct value r = parse_mul(e, evaluate);
        intmax_t a = 0, b = 0, res = 0;
        if (!e->failed && evaluate && to_int(e, &l, &a, true) && to_int(e, &r, &b, true)) {
            bool over = op[0] == '+' ? __builtin_add_overflow(a, b, &res)
                                     : __builtin_sub_overflow(a, b, &res);
            if (over) error(e, "%s", "integer overflow");
        }
        drop(&l);
        drop(&r);
        l = make_int(res);
    }
    return l;
}

static struct value parse_compare(struct expr *e, bool evaluate) {
    static const char *const ops[] = {"<", "<=", "=", "==", "!=", ">=", ">"};
    struct value l = parse_add(e, evaluate);
    while (!e->failed && e->pos < e->n) {
        int which = -1;
        for (int k = 0; k < 7; k++)
            if (strcmp(e->av[e->pos], ops[k]) == 0) which = k;
        if (which < 0) break;
        e->pos++;
        struct value r = parse_add(e, evaluate);
        int cmp = 0;
        intmax_t a, b;
        /* numbers compare as numbers only when both sides are integers */
        if (to_int(e, &l, &a, false) && to_int(e, &r, &b, false)) {
            cmp = a < b ? -1 : a > b;
        } else {
            char lb[32], rb[32];
            cmp = strcmp(text(&l, lb, sizeof lb), text(&r, rb, sizeof rb));
        }
        bool res;
        switch (which) {
        case 0: res = cmp < 0; break;
        case 1: res = cmp <= 0; break;
        case 2:
        case 3: res = cmp == 0; break;
        case 4: res = cmp != 0; break;
        case 5: res = cmp >= 0; break;
        default: res = cmp > 0; break;
        }
        drop(&l);
        drop(&r);
        l = make_int(res);
    }
    return l;
}

static struct value parse_and(struct expr *e, bool evaluate) {
    struct value l = parse_compare(e, evaluate);
    while (!e->failed && at(e, "&")) {
        /* the right side is not evaluated (no errors from it) when the left is null */
        struct value r = parse_compare(e, evaluate && !is_null(&l));
        if (is_null(&l) || is_null(&r)) {
            drop(&l);
            l = make_int(0);
        }
        drop(&r);
    }
    return l;
}

static struct value parse_or(struct expr *e, bool evaluate) {
    struct value l = parse_and(e, evaluate);
    while (!e->failed && at(e, "|")) {
        struct value r = parse_and(e, evaluate && is_null(&l));
        if (is_null(&l)) {
            drop(&l);
            if (is_null(&r)) {
                drop(&r);
                l = make_int(0);
            } else {
                l = r;
            }
        } else {
            drop(&r);
        }
    }
    return l;
}

int cmd_expr(int argc, char **argv) {
    int first = 1;
    if (first < argc && strcmp(argv[first], "--") == 0) first++;
    if (first >= argc) {
        box_err("expr", "missing operand");
        return 2;
    }
    if (argc - first == 1 && argv[first][0] == '-' && argv[first][1] == '-')
        return box_usage("expr", argv[first]);
    struct expr e = {argv + first, argc - first, 0, false};
    struct value v = parse_or(&e, true);
    if (!e.failed && e.pos < e.n) error(&e, "syntax error: unexpected argument '%s'", e.av[e.pos]);
    if (e.failed) {
        drop(&v);
        return 2;
    }
    char buf[32];
    puts(text(&v, buf, sizeof buf));
    int status = is_null(&v) ? 1 : 0;
    drop(&v);
    return status;
}
