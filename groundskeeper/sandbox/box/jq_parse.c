/* jq's program syntax: a tokenizer and a recursive-descent parser with jq's precedence
 * (lowest first: `|`, `,`, `//`, assignments, `or`, `and`, comparisons, `+ -`, `* / %`,
 * then postfix terms), producing jq_ast.h's tree. Names of builtins and variables are
 * resolved here, so a misspelt one is a compile error (exit 3) as in jq. What a program
 * means is jq_eval.c's.
 */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "jq_ast.h"

/* Deeper nesting than this (brackets, pipes, unary minus) is refused rather than risk the
 * parser's and the evaluator's C stack. */
#define JQ_MAX_PROGRAM_DEPTH 200

enum tok {
    T_END, T_NUM, T_STR, T_IDENT, T_FIELD, T_VAR, T_FORMAT, T_DOT, T_DOTDOT,
    T_PUNCT, /* one of the operators and brackets, its text in tok_text */
    T_KEYWORD,
};

struct scope {
    const char *name;
    struct scope *up;
};

struct parser {
    const char *src, *p;
    enum tok tok;
    char tok_text[8];
    const char *tok_start;
    char *ident; /* T_IDENT, T_FIELD, T_VAR, T_FORMAT, T_KEYWORD: the name */
    double num;
    int failed; /* after the first error every token reads as the end */
    int depth;  /* nesting of the expression being read, bounded: the parser recurses */
    char *msg;
    size_t msgsz;
    jv globals;
    struct scope *vars, *labels;
};

static const char *keywords[] = {"def", "if", "then", "elif", "else", "end", "as", "reduce",
                                 "foreach", "try", "catch", "label", "import", "include",
                                 "and", "or", "__loc__", NULL};

/* Record the first error; parsing then winds down (WASI has no longjmp), every caller
 * seeing the end of the text. */
static void __attribute__((format(printf, 2, 3)))
syntax_error(struct parser *ps, const char *fmt, ...) {
    if (ps->failed) return;
    char what[200];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(what, sizeof what, fmt, ap);
    va_end(ap);
    int line = 1;
    for (const char *q = ps->src; q < ps->tok_start; q++) line += *q == '\n';
    snprintf(ps->msg, ps->msgsz, "%s at <top-level>, line %d:\n%s", what, line, ps->src);
    ps->failed = 1;
    ps->tok = T_END;
    ps->p = ps->src + strlen(ps->src);
}

static struct jq_node *node(enum jq_op op, struct jq_node *a, struct jq_node *b) {
    struct jq_node *n = jq_alloc(sizeof *n);
    memset(n, 0, sizeof *n);
    n->op = op;
    n->a = a;
    n->b = b;
    n->val = jv_null();
    return n;
}

static int ident_start(char c) {
    return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || c == '_';
}

static int ident_char(char c) { return ident_start(c) || (c >= '0' && c <= '9'); }

static char *read_name(struct parser *ps) {
    const char *start = ps->p;
    while (ident_char(*ps->p) || (ps->p[0] == ':' && ps->p[1] == ':' && ident_start(ps->p[2])))
        ps->p += *ps->p == ':' ? 2 : 1;
    size_t n = (size_t)(ps->p - start);
    char *s = jq_alloc(n + 1);
    memcpy(s, start, n);
    s[n] = '\0';
    return s;
}

static void next(struct parser *ps) {
    if (ps->failed) {
        ps->tok = T_END;
        return;
    }
    for (;;) {
        while (*ps->p == ' ' || *ps->p == '\t' || *ps->p == '\n' || *ps->p == '\r') ps->p++;
        if (*ps->p != '#') break;
        while (*ps->p && *ps->p != '\n') ps->p++;
    }
    ps->tok_start = ps->p;
    char c = *ps->p;
    if (c == '\0') {
        ps->tok = T_END;
        return;
    }
    if (c == '"') {
        ps->tok = T_STR; /* the parser reads the string itself (it may interpolate) */
        return;
    }
    if ((c >= '0' && c <= '9') || (c == '.' && ps->p[1] >= '0' && ps->p[1] <= '9')) {
        char *end;
        ps->num = strtod(ps->p, &end);
        ps->p = end;
        ps->tok = T_NUM;
        return;
    }
    if (c == '.') {
        if (ps->p[1] == '.') {
            ps->p += 2;
            ps->tok = T_DOTDOT;
        } else if (ident_start(ps->p[1])) {
            ps->p++;
            ps->ident = read_name(ps);
            ps->tok = T_FIELD;
        } else {
            ps->p++;
            ps->tok = T_DOT;
        }
        return;
    }
    if (c == '$' || c == '@') {
        ps->p++;
        if (!ident_start(*ps->p)) {
            syntax_error(ps, "syntax error, unexpected '%c'", c);
            return;
        }
        ps->ident = read_name(ps);
        ps->tok = c == '$' ? T_VAR : T_FORMAT;
        return;
    }
    if (ident_start(c)) {
        ps->ident = read_name(ps);
        ps->tok = T_IDENT;
        for (int i = 0; keywords[i]; i++)
            if (strcmp(keywords[i], ps->ident) == 0) ps->tok = T_KEYWORD;
        return;
    }
    static const char *ops[] = {"?//", "//=", "|=", "+=", "-=", "*=", "/=", "%=", "==", "!=",
                                "<=", ">=", "//", "|", ",", "(", ")", "[", "]", "{",
                                "}", ":", ";", "=", "<", ">", "+", "-", "*", "/",
                                "%", "?", NULL};
    for (int i = 0; ops[i]; i++) {
        size_t n = strlen(ops[i]);
        if (strncmp(ps->p, ops[i], n) == 0) {
            strcpy(ps->tok_text, ops[i]);
            ps->p += n;
            ps->tok = T_PUNCT;
            return;
        }
    }
    syntax_error(ps, "syntax error, unexpected INVALID_CHARACTER '%c'", c);
    ps->tok = T_END;
}

static int is_punct(struct parser *ps, const char *s) {
    return ps->tok == T_PUNCT && strcmp(ps->tok_text, s) == 0;
}

static int is_keyword(struct parser *ps, const char *s) {
    return ps->tok == T_KEYWORD && strcmp(ps->ident, s) == 0;
}

static const char *describe(struct parser *ps) {
    static char buf[64];
    switch (ps->tok) {
    case T_END: return "end of file";
    case T_PUNCT: snprintf(buf, sizeof buf, "'%s'", ps->tok_text); return buf;
    case T_KEYWORD: snprintf(buf, sizeof buf, "%s", ps->ident); return buf;
    case T_IDENT: snprintf(buf, sizeof buf, "IDENT %.40s", ps->ident); return buf;
    case T_NUM: return "LITERAL";
    case T_STR: return "QQSTRING_START";
    case T_FIELD: return "FIELD";
    case T_VAR: return "'$'";
    case T_FORMAT: return "FORMAT";
    case T_DOT: return "'.'";
    case T_DOTDOT: return "'..'";
    default: return "token";
    }
}

/* Reports the error; the identity node returned stands in for what was not there. */
static struct jq_node *unexpected(struct parser *ps) {
    syntax_error(ps, "syntax error, unexpected %s", describe(ps));
    return node(N_IDENTITY, NULL, NULL);
}

static void expect(struct parser *ps, const char *punct) {
    if (!is_punct(ps, punct)) unexpected(ps);
    next(ps);
}

static void expect_keyword(struct parser *ps, const char *kw) {
    if (!is_keyword(ps, kw)) unexpected(ps);
    next(ps);
}

static struct jq_node *parse_pipe(struct parser *ps);
static struct jq_node *parse_postfix(struct parser *ps, int allow_as);
static struct jq_node *parse_primary(struct parser *ps);

static void check_var(struct parser *ps, const char *name) {
    for (struct scope *s = ps->vars; s; s = s->up)
        if (strcmp(s->name, name) == 0) return;
    if (strcmp(name, "ENV") == 0 || strcmp(name, "__prog_args") == 0 ||
        strcmp(name, "ARGS") == 0)
        return;
    if (jv_object_get(ps->globals, name, strlen(name)) != NULL) return;
    syntax_error(ps, "$%s is not defined", name);
}

/* A string literal at ps->p (on its opening quote); FORMAT names the @format applied to its
 * interpolations. Reading it here rather than in next() lets `\(…)` hold any program. */
static struct jq_node *parse_string(struct parser *ps, const char *format) {
    struct jq_node *n = node(N_INTERP, NULL, NULL);
    n->name = format ? strcpy(jq_alloc(strlen(format) + 1), format) : NULL;
    int cap = 4;
    n->args = jq_alloc((size_t)cap * sizeof *n->args);
    jv text = jv_string_n(NULL, 0);
    ps->p++; /* the opening quote */
    for (;;) {
        char c = *ps->p;
        if (c == '\0' || ps->failed) {
            syntax_error(ps, "syntax error, unterminated string");
            break;
        }
        if (c == '"') {
            ps->p++;
            break;
        }
        if (c != '\\') {
            text = jv_string_append(text, ps->p, 1);
            ps->p++;
            continue;
        }
        char e = ps->p[1];
        ps->p += 2;
        const char *map = "b\bf\fn\nr\rt\t\"\"\\\\//";
        const char *m = e ? strchr(map, e) : NULL;
        if (m && (m - map) % 2 == 0) {
            text = jv_string_append(text, m + 1, 1);
        } else if (e == 'u') {
            unsigned cp = 0, lo = 0;
            if (sscanf(ps->p, "%4x", &cp) != 1 || strlen(ps->p) < 4) {
                syntax_error(ps, "invalid \\u escape");
                break;
            }
            ps->p += 4;
            if (cp >= 0xD800 && cp < 0xDC00 && ps->p[0] == '\\' && ps->p[1] == 'u' &&
                sscanf(ps->p + 2, "%4x", &lo) == 1 && lo >= 0xDC00 && lo < 0xE000) {
                cp = 0x10000 + ((cp - 0xD800) << 10) + (lo - 0xDC00);
                ps->p += 6;
            }
            jv_put_utf8(&text, cp);
        } else if (e == '(') {
            if (n->nargs + 2 >= cap) {
                cap *= 2;
                n->args = realloc(n->args, (size_t)cap * sizeof *n->args);
                if (n->args == NULL) jq_oom();
            }
            struct jq_node *lit = node(N_LITERAL, NULL, NULL);
            lit->val = text;
            n->args[n->nargs++] = lit;
            text = jv_string_n(NULL, 0);
            next(ps);
            n->args[n->nargs++] = parse_pipe(ps);
            if (!is_punct(ps, ")")) {
                unexpected(ps);
                break;
            }
            /* the tokenizer stopped right after ')': the string goes on from there */
        } else {
            syntax_error(ps, "invalid escape \\%c in a string", e ? e : ' ');
            break;
        }
    }
    if (n->nargs == 0 && format == NULL) {
        free(n->args);
        n->op = N_LITERAL;
        n->args = NULL;
        n->val = text;
    } else {
        struct jq_node *lit = node(N_LITERAL, NULL, NULL);
        lit->val = text;
        if (n->nargs + 1 >= cap) {
            n->args = realloc(n->args, (size_t)(cap + 1) * sizeof *n->args);
            if (n->args == NULL) jq_oom();
        }
        n->args[n->nargs++] = lit;
    }
    next(ps);
    return n;
}

static struct jq_pattern *parse_pattern(struct parser *ps, struct scope **bound) {
    struct jq_pattern *pt = jq_alloc(sizeof *pt);
    memset(pt, 0, sizeof *pt);
    if (ps->tok == T_VAR) {
        pt->var = ps->ident;
        struct scope *s = jq_alloc(sizeof *s);
        s->name = pt->var;
        s->up = *bound;
        *bound = s;
        next(ps);
        return pt;
    }
    int cap = 0;
    if (is_punct(ps, "[")) {
        next(ps);
        for (;;) {
            if (pt->n == cap) {
                cap = cap ? cap * 2 : 4;
                pt->items = realloc(pt->items, (size_t)cap * sizeof *pt->items);
                if (pt->items == NULL) jq_oom();
            }
            pt->items[pt->n++] = parse_pattern(ps, bound);
            if (is_punct(ps, "]") || ps->failed) break;
            expect(ps, ",");
        }
        next(ps);
        return pt;
    }
    if (!is_punct(ps, "{")) {
        unexpected(ps);
        pt->var = "_";
        return pt;
    }
    pt->is_object = 1;
    next(ps);
    for (;;) {
        if (pt->n == cap) {
            cap = cap ? cap * 2 : 4;
            pt->items = realloc(pt->items, (size_t)cap * sizeof *pt->items);
            pt->keys = realloc(pt->keys, (size_t)cap * sizeof *pt->keys);
            if (pt->items == NULL || pt->keys == NULL) jq_oom();
        }
        struct jq_node *key;
        struct jq_pattern *value = NULL;
        if (ps->tok == T_VAR) { /* {$name} or {$name: pattern} */
            key = node(N_LITERAL, NULL, NULL);
            key->val = jv_string(ps->ident);
            value = parse_pattern(ps, bound);
            if (is_punct(ps, ":")) {
                /* jq binds $name to the whole value and destructures it as well; the
                 * sandbox keeps to the plain form */
                syntax_error(ps, "{$name: pattern} is not supported in the sandbox");
            }
        } else {
            if (ps->tok == T_IDENT || ps->tok == T_KEYWORD) {
                key = node(N_LITERAL, NULL, NULL);
                key->val = jv_string(ps->ident);
                next(ps);
            } else if (ps->tok == T_STR) {
                key = parse_string(ps, NULL);
            } else if (is_punct(ps, "(")) {
                next(ps);
                key = parse_pipe(ps);
                expect(ps, ")");
            } else {
                key = unexpected(ps);
            }
            expect(ps, ":");
            value = parse_pattern(ps, bound);
        }
        pt->keys[pt->n] = key;
        pt->items[pt->n++] = value;
        if (is_punct(ps, "}") || ps->failed) break;
        expect(ps, ",");
    }
    next(ps);
    return pt;
}

/* Parse `PATTERN` after `as`, pushing its variables on the scope. */
static struct jq_pattern *parse_binding(struct parser *ps) {
    struct scope *bound = ps->vars;
    struct jq_pattern *pt = parse_pattern(ps, &bound);
    ps->vars = bound;
    return pt;
}

static struct jq_node *parse_call(struct parser *ps) {
    char *name = ps->ident;
    const char *at = ps->tok_start;
    next(ps);
    struct jq_node *n = node(N_CALL, NULL, NULL);
    n->name = name;
    if (is_punct(ps, "(")) {
        next(ps);
        int cap = 0;
        for (;;) {
            if (n->nargs == cap) {
                cap = cap ? cap * 2 : 2;
                n->args = realloc(n->args, (size_t)cap * sizeof *n->args);
                if (n->args == NULL) jq_oom();
            }
            n->args[n->nargs++] = parse_pipe(ps);
            if (is_punct(ps, ")") || ps->failed) break;
            expect(ps, ";");
        }
        next(ps);
    }
    n->ival = jq_builtin_lookup(name, n->nargs);
    if (n->ival < 0 && !ps->failed) {
        ps->tok_start = at;
        syntax_error(ps, "%s/%d is not defined", name, n->nargs);
    }
    return n;
}

static struct jq_node *parse_object(struct parser *ps) {
    struct jq_node *n = node(N_OBJECT, NULL, NULL);
    int cap = 0;
    next(ps); /* { */
    while (!is_punct(ps, "}") && !ps->failed) {
        if (n->nargs + 2 > cap) {
            cap = cap ? cap * 2 : 8;
            n->args = realloc(n->args, (size_t)cap * sizeof *n->args);
            if (n->args == NULL) jq_oom();
        }
        struct jq_node *key = NULL, *value = NULL;
        if (ps->tok == T_VAR && strcmp(ps->ident, "__loc__") == 0) {
            key = node(N_LITERAL, NULL, NULL);
            key->val = jv_string("__loc__");
            value = parse_primary(ps); /* $__loc__'s own literal */
        } else if (ps->tok == T_VAR) {
            check_var(ps, ps->ident);
            key = node(N_LITERAL, NULL, NULL);
            key->val = jv_string(ps->ident);
            value = node(N_VAR, NULL, NULL);
            value->name = ps->ident;
            next(ps);
        } else if (ps->tok == T_IDENT || ps->tok == T_KEYWORD) {
            key = node(N_LITERAL, NULL, NULL);
            key->val = jv_string(ps->ident);
            next(ps);
        } else if (ps->tok == T_NUM) {
            syntax_error(ps, "syntax error, unexpected LITERAL, expecting '}'");
            break;
        } else if (ps->tok == T_STR) {
            key = parse_string(ps, NULL);
        } else if (ps->tok == T_FORMAT) {
            char *fmt = ps->ident;
            next(ps);
            if (ps->tok != T_STR) {
                unexpected(ps);
                break;
            }
            key = parse_string(ps, fmt);
        } else if (is_punct(ps, "(")) {
            next(ps);
            key = parse_pipe(ps);
            expect(ps, ")");
            if (!is_punct(ps, ":")) unexpected(ps);
        } else {
            unexpected(ps);
            break;
        }
        if (value == NULL && is_punct(ps, ":")) {
            next(ps);
            /* jq's object values are terms joined by `|` (no `,`, no bare operators) */
            value = NULL;
            do {
                if (value != NULL) next(ps);
                struct jq_node *unit;
                if (is_punct(ps, "-")) {
                    next(ps);
                    unit = node(N_NEG, parse_postfix(ps, 0), NULL);
                } else {
                    unit = parse_postfix(ps, 0);
                }
                value = value ? node(N_PIPE, value, unit) : unit;
            } while (is_punct(ps, "|") && !ps->failed);
        } else if (value == NULL) {
            /* {a} and {"a b"}: the input's field of that name */
            value = node(N_INDEX, NULL, key);
        }
        n->args[n->nargs++] = key;
        n->args[n->nargs++] = value;
        if (is_punct(ps, "}") || ps->failed) break;
        expect(ps, ",");
    }
    next(ps);
    return n;
}

static struct jq_node *parse_primary(struct parser *ps) {
    struct jq_node *n;
    switch (ps->tok) {
    case T_NUM:
        n = node(N_LITERAL, NULL, NULL);
        n->val = jv_number(ps->num);
        next(ps);
        return n;
    case T_STR: return parse_string(ps, NULL);
    case T_FORMAT: {
        char *fmt = ps->ident;
        static const char *formats[] = {"text", "json", "csv", "tsv", "html", "uri",
                                        "sh", "base64", "base64d", NULL};
        int known = 0;
        for (int i = 0; formats[i]; i++) known |= strcmp(formats[i], fmt) == 0;
        if (!known) {
            syntax_error(ps, "%s is not a valid format", fmt);
            return node(N_IDENTITY, NULL, NULL);
        }
        next(ps);
        if (ps->tok == T_STR) return parse_string(ps, fmt);
        n = node(N_FORMAT, NULL, NULL);
        n->name = fmt;
        return n;
    }
    case T_FIELD:
        n = node(N_FIELD, NULL, NULL);
        n->name = ps->ident;
        next(ps);
        return n;
    case T_DOT:
        next(ps);
        if (ps->tok == T_STR) return node(N_INDEX, NULL, parse_string(ps, NULL));
        if (is_punct(ps, "[")) return NULL; /* `.[`: the postfix loop reads the bracket */
        return node(N_IDENTITY, NULL, NULL);
    case T_DOTDOT: next(ps); return node(N_RECURSE, NULL, NULL);
    case T_VAR:
        if (strcmp(ps->ident, "__loc__") == 0) {
            n = node(N_LITERAL, NULL, NULL);
            n->val = jv_object();
            int line = 1;
            for (const char *q = ps->src; q < ps->tok_start; q++) line += *q == '\n';
            n->val = jv_object_set(n->val, jv_string("file"), jv_string("<top-level>"));
            n->val = jv_object_set(n->val, jv_string("line"), jv_number(line));
            next(ps);
            return n;
        }
        check_var(ps, ps->ident);
        n = node(N_VAR, NULL, NULL);
        n->name = ps->ident;
        next(ps);
        return n;
    case T_IDENT: return parse_call(ps);
    case T_KEYWORD:
        if (is_keyword(ps, "if")) {
            next(ps);
            n = node(N_IF, parse_pipe(ps), NULL);
            expect_keyword(ps, "then");
            n->b = parse_pipe(ps);
            struct jq_node *tail = n;
            while (is_keyword(ps, "elif")) {
                next(ps);
                struct jq_node *e = node(N_IF, parse_pipe(ps), NULL);
                expect_keyword(ps, "then");
                e->b = parse_pipe(ps);
                tail->c = e;
                tail = e;
            }
            if (is_keyword(ps, "else")) {
                next(ps);
                tail->c = parse_pipe(ps);
            }
            expect_keyword(ps, "end");
            return n;
        }
        if (is_keyword(ps, "try")) {
            next(ps);
            n = node(N_TRY, parse_postfix(ps, 0), NULL);
            if (is_keyword(ps, "catch")) {
                next(ps);
                n->b = parse_postfix(ps, 0);
            }
            return n;
        }
        if (is_keyword(ps, "reduce") || is_keyword(ps, "foreach")) {
            int reduce = is_keyword(ps, "reduce");
            next(ps);
            n = node(reduce ? N_REDUCE : N_FOREACH, parse_postfix(ps, 0), NULL);
            expect_keyword(ps, "as");
            struct scope *saved = ps->vars;
            n->pat = parse_binding(ps);
            expect(ps, "(");
            struct scope *inner = ps->vars;
            ps->vars = saved; /* the initial value does not see the variable */
            n->b = parse_pipe(ps);
            ps->vars = inner;
            expect(ps, ";");
            n->c = parse_pipe(ps);
            if (!reduce && is_punct(ps, ";")) {
                next(ps);
                n->d = parse_pipe(ps);
            }
            expect(ps, ")");
            ps->vars = saved;
            return n;
        }
        if (is_keyword(ps, "label")) {
            next(ps);
            if (ps->tok != T_VAR) return unexpected(ps);
            n = node(N_LABEL, NULL, NULL);
            n->name = ps->ident;
            struct scope s = {ps->ident, ps->labels};
            ps->labels = &s;
            next(ps);
            expect(ps, "|");
            n->a = parse_pipe(ps);
            ps->labels = s.up;
            return n;
        }
        if (is_keyword(ps, "def")) {
            syntax_error(ps, "def is not supported in the sandbox (write the filter inline)");
            return node(N_IDENTITY, NULL, NULL);
        }
        if (is_keyword(ps, "import") || is_keyword(ps, "include")) {
            syntax_error(ps, "modules are not supported in the sandbox");
            return node(N_IDENTITY, NULL, NULL);
        }
        return unexpected(ps);
    case T_PUNCT:
        if (is_punct(ps, "(")) {
            next(ps);
            n = parse_pipe(ps);
            expect(ps, ")");
            return n;
        }
        if (is_punct(ps, "[")) {
            next(ps);
            if (is_punct(ps, "]")) {
                next(ps);
                return node(N_ARRAY, NULL, NULL);
            }
            n = node(N_ARRAY, parse_pipe(ps), NULL);
            expect(ps, "]");
            return n;
        }
        if (is_punct(ps, "{")) return parse_object(ps);
        return unexpected(ps);
    default: return unexpected(ps);
    }
}

static struct jq_node *parse_postfix(struct parser *ps, int allow_as) {
    struct jq_node *t;
    if (ps->tok == T_IDENT && strcmp(ps->ident, "break") == 0) {
        next(ps);
        if (ps->tok != T_VAR) return unexpected(ps);
        struct scope *s = ps->labels;
        while (s && strcmp(s->name, ps->ident) != 0) s = s->up;
        if (s == NULL) syntax_error(ps, "$*label-%s is not defined", ps->ident);
        t = node(N_BREAK, NULL, NULL);
        t->name = ps->ident;
        next(ps);
    } else {
        t = parse_primary(ps);
        if (t == NULL) t = node(N_IDENTITY, NULL, NULL); /* `.[` */
    }
    while (!ps->failed) {
        if (ps->tok == T_FIELD) {
            struct jq_node *f = node(N_FIELD, t, NULL);
            f->name = ps->ident;
            next(ps);
            t = f;
        } else if (ps->tok == T_DOT) {
            /* ."name" or .[ after a term */
            next(ps);
            if (ps->tok == T_STR) t = node(N_INDEX, t, parse_string(ps, NULL));
            else if (!is_punct(ps, "[")) unexpected(ps);
        } else if (is_punct(ps, "[")) {
            next(ps);
            if (is_punct(ps, "]")) {
                next(ps);
                t = node(N_ITER, t, NULL);
            } else if (is_punct(ps, ":")) {
                next(ps);
                struct jq_node *s = node(N_SLICE, t, NULL);
                s->c = parse_pipe(ps);
                expect(ps, "]");
                t = s;
            } else {
                struct jq_node *i = parse_pipe(ps);
                if (is_punct(ps, ":")) {
                    next(ps);
                    struct jq_node *s = node(N_SLICE, t, i);
                    if (!is_punct(ps, "]")) s->c = parse_pipe(ps);
                    expect(ps, "]");
                    t = s;
                } else {
                    expect(ps, "]");
                    t = node(N_INDEX, t, i);
                }
            }
        } else if (is_punct(ps, "?")) {
            next(ps);
            t = node(N_TRY, t, NULL);
        } else {
            break;
        }
    }
    if (allow_as && is_keyword(ps, "as")) {
        next(ps);
        struct scope *saved = ps->vars;
        struct jq_node *n = node(N_AS, t, NULL);
        n->pat = parse_binding(ps);
        if (is_punct(ps, "?//")) syntax_error(ps, "?// is not supported in the sandbox");
        expect(ps, "|");
        n->b = parse_pipe(ps);
        ps->vars = saved;
        return n;
    }
    return t;
}

static struct jq_node *parse_unary(struct parser *ps) {
    if (is_punct(ps, "-")) {
        next(ps);
        if (++ps->depth > JQ_MAX_PROGRAM_DEPTH) {
            syntax_error(ps, "program nested too deeply (the sandbox's limit is %d levels)",
                         JQ_MAX_PROGRAM_DEPTH);
            return node(N_IDENTITY, NULL, NULL);
        }
        struct jq_node *n = node(N_NEG, parse_unary(ps), NULL);
        ps->depth--;
        return n;
    }
    return parse_postfix(ps, 1);
}

static struct jq_node *parse_mul(struct parser *ps) {
    struct jq_node *l = parse_unary(ps);
    while (is_punct(ps, "*") || is_punct(ps, "/") || is_punct(ps, "%")) {
        struct jq_node *n = node(N_ARITH, l, NULL);
        n->ival = ps->tok_text[0];
        next(ps);
        n->b = parse_unary(ps);
        l = n;
    }
    return l;
}

static struct jq_node *parse_add(struct parser *ps) {
    struct jq_node *l = parse_mul(ps);
    while (is_punct(ps, "+") || is_punct(ps, "-")) {
        struct jq_node *n = node(N_ARITH, l, NULL);
        n->ival = ps->tok_text[0];
        next(ps);
        n->b = parse_mul(ps);
        l = n;
    }
    return l;
}

static int cmp_op(struct parser *ps) {
    static const char *ops[] = {"==", "!=", "<", "<=", ">", ">=", NULL};
    if (ps->tok != T_PUNCT) return -1;
    for (int i = 0; ops[i]; i++)
        if (strcmp(ps->tok_text, ops[i]) == 0) return i;
    return -1;
}

static struct jq_node *parse_cmp(struct parser *ps) {
    struct jq_node *l = parse_add(ps);
    int op = cmp_op(ps);
    if (op < 0) return l;
    next(ps);
    struct jq_node *n = node(N_CMP, l, parse_add(ps));
    n->ival = op;
    if (cmp_op(ps) >= 0) unexpected(ps); /* comparisons do not chain */
    return n;
}

static struct jq_node *parse_and(struct parser *ps) {
    struct jq_node *l = parse_cmp(ps);
    while (is_keyword(ps, "and")) {
        next(ps);
        l = node(N_AND, l, parse_cmp(ps));
    }
    return l;
}

static struct jq_node *parse_or(struct parser *ps) {
    struct jq_node *l = parse_and(ps);
    while (is_keyword(ps, "or")) {
        next(ps);
        l = node(N_OR, l, parse_and(ps));
    }
    return l;
}

static struct jq_node *parse_assign(struct parser *ps) {
    struct jq_node *l = parse_or(ps);
    static const char *ops[] = {"=", "|=", "+=", "-=", "*=", "/=", "%=", "//=", NULL};
    for (int i = 0; ops[i] && ps->tok == T_PUNCT; i++) {
        if (strcmp(ps->tok_text, ops[i]) == 0) {
            struct jq_node *n = node(N_ASSIGN, l, NULL);
            n->name = (char *)ops[i];
            next(ps);
            /* `//` binds looser than assignment: `.a = 1 // 2` is `(.a = 1) // 2` */
            n->b = parse_or(ps);
            return n;
        }
    }
    return l;
}

static struct jq_node *parse_alt(struct parser *ps) {
    struct jq_node *l = parse_assign(ps);
    if (is_punct(ps, "//")) {
        next(ps);
        return node(N_ALT, l, parse_alt(ps));
    }
    return l;
}

static struct jq_node *parse_comma(struct parser *ps) {
    struct jq_node *l = parse_alt(ps);
    while (is_punct(ps, ",")) {
        next(ps);
        l = node(N_COMMA, l, parse_alt(ps));
    }
    return l;
}

static struct jq_node *parse_pipe(struct parser *ps) {
    if (is_keyword(ps, "def"))
        syntax_error(ps, "def is not supported in the sandbox (write the filter inline)");
    if (++ps->depth > JQ_MAX_PROGRAM_DEPTH) {
        syntax_error(ps, "program nested too deeply (the sandbox's limit is %d levels)",
                     JQ_MAX_PROGRAM_DEPTH);
        return node(N_IDENTITY, NULL, NULL);
    }
    struct jq_node *l = parse_comma(ps);
    if (is_punct(ps, "|")) {
        next(ps);
        l = node(N_PIPE, l, parse_pipe(ps));
    }
    ps->depth--;
    return l;
}

int jq_compile(const char *text, jv globals, struct jq_program *prog, char *msg, size_t msgsz) {
    struct parser ps;
    memset(&ps, 0, sizeof ps);
    ps.src = ps.p = ps.tok_start = text;
    ps.msg = msg;
    ps.msgsz = msgsz;
    ps.globals = globals;
    /* the tree and names of a failed compile are not freed: the command exits next */
    next(&ps);
    if (ps.tok == T_END && !ps.failed) {
        prog->root = node(N_IDENTITY, NULL, NULL);
        return 0;
    }
    prog->root = parse_pipe(&ps);
    if (ps.tok != T_END) unexpected(&ps);
    return ps.failed ? -1 : 0;
}
