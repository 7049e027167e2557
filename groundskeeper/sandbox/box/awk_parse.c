/* awk's parser: recursive descent over the tokens, building the syntax tree of awk.h.
 * Precedence, lowest first: assignment, ?:, ||, &&, in, ~ !~, relational, concatenation,
 * + -, * / %, unary ! - +, ^, ++ --, $. What would write files or run programs (print >
 * FILE, print | CMD, CMD | getline, getline < FILE, system()) is refused here, before any
 * input is read, so a program either runs whole or not at all.
 */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "awk.h"
#include "box.h"

/* Nesting deeper than this is refused: the interpreter recurses once per level and
 * WebAssembly's stack has no guard page to stop an overflow. */
#define MAX_DEPTH 200
#define MAX_HEIGHT 1000

struct parser {
    struct awk_token *toks;
    size_t pos;
    struct awk_program *prog;
    int func;     /* the function being parsed, or -1 */
    int depth;
    int no_gt;    /* inside print's items: `>` is redirection, not comparison */
    int loops;    /* enclosing loops, for break/continue */
};

static const char *tok_text(const struct awk_token *t) {
    static const char *const names[] = {
        "end of program", "newline", "{", "}", "(", ")", "[", "]", ";", ",", "+", "-", "*",
        "/", "%", "^", "!", ">", "<", "|", "?", ":", "~", "$", "=", "+=", "-=", "*=", "/=",
        "%=", "^=", "==", "!=", "<=", ">=", "~", "!~", "&&", "||", "++", "--", ">>",
        "number", "string", "regular expression", "name", "function name", "built-in function",
        "BEGIN", "END", "function", "if", "else", "while", "for", "do", "break", "continue",
        "next", "nextfile", "exit", "return", "delete", "print", "printf", "getline", "in",
    };
    _Static_assert(sizeof names / sizeof names[0] == T_IN + 1, "a name for every token");
    if (t->kind == T_NAME || t->kind == T_FUNC_NAME) return t->text;
    return names[t->kind];
}

static void __attribute__((noreturn, format(printf, 2, 3)))
fail(struct parser *p, const char *fmt, ...) {
    va_list ap;
    fprintf(stderr, "awk: ");
    va_start(ap, fmt);
    vfprintf(stderr, fmt, ap);
    va_end(ap);
    fprintf(stderr, " at source line %d\n", p->toks[p->pos].line);
    exit(2);
}

static void __attribute__((noreturn)) unexpected(struct parser *p) {
    fail(p, "syntax error: unexpected %s", tok_text(&p->toks[p->pos]));
}

/* A feature the sandbox does not have: the message says what to write instead. */
static void __attribute__((noreturn)) refuse(struct parser *p, const char *what,
                                              const char *instead) {
    fprintf(stderr, "awk: %s is not supported in the sandbox (%s) at source line %d\n", what,
            instead, p->toks[p->pos].line);
    exit(2);
}

static enum awk_tok peek(struct parser *p) { return p->toks[p->pos].kind; }
/* The kind AHEAD tokens on, never past the final T_EOF. */
static enum awk_tok peek_at(struct parser *p, size_t ahead) {
    size_t i = p->pos;
    while (ahead-- > 0 && p->toks[i].kind != T_EOF) i++;
    return p->toks[i].kind;
}
static struct awk_token *advance(struct parser *p) {
    struct awk_token *t = &p->toks[p->pos];
    if (t->kind != T_EOF) p->pos++;
    return t;
}
static int accept(struct parser *p, enum awk_tok kind) {
    if (peek(p) != kind) return 0;
    advance(p);
    return 1;
}
static struct awk_token *expect(struct parser *p, enum awk_tok kind) {
    if (peek(p) != kind) unexpected(p);
    return advance(p);
}
static void skip_newlines(struct parser *p) {
    while (peek(p) == T_NEWLINE) advance(p);
}

static struct awk_node *node(struct parser *p, enum awk_node_kind kind) {
    struct awk_node *n = awk_alloc(sizeof *n);
    memset(n, 0, sizeof *n);
    n->kind = kind;
    n->line = p->toks[p->pos > 0 ? p->pos - 1 : 0].line;
    return n;
}

static void enter(struct parser *p) {
    if (++p->depth > MAX_DEPTH) fail(p, "program nested too deeply");
}
static void leave(struct parser *p) { p->depth--; }

int awk_global(struct awk_program *prog, const char *name) {
    for (int i = 0; i < prog->nglobals; i++)
        if (strcmp(prog->globals[i], name) == 0) return i;
    prog->globals = realloc(prog->globals, (size_t)(prog->nglobals + 1) * sizeof(char *));
    if (prog->globals == NULL) awk_fatal("out of memory");
    prog->globals[prog->nglobals] = awk_strdup(name);
    return prog->nglobals++;
}

static int find_func(struct awk_program *prog, const char *name) {
    for (int i = 0; i < prog->nfuncs; i++)
        if (strcmp(prog->funcs[i].name, name) == 0) return i;
    prog->funcs = realloc(prog->funcs, (size_t)(prog->nfuncs + 1) * sizeof *prog->funcs);
    if (prog->funcs == NULL) awk_fatal("out of memory");
    struct awk_func *f = &prog->funcs[prog->nfuncs];
    memset(f, 0, sizeof *f);
    f->name = awk_strdup(name);
    f->nparams = -1;
    return prog->nfuncs++;
}

/* Parameter names of the function being parsed (only while parsing it). */
static char **param_names;
static int nparam_names;

static void resolve(struct parser *p, const char *name, int *index, int *is_local) {
    if (p->func >= 0) {
        for (int i = 0; i < nparam_names; i++) {
            if (strcmp(param_names[i], name) == 0) {
                *index = i;
                *is_local = 1;
                return;
            }
        }
    }
    for (int i = 0; i < p->prog->nfuncs; i++)
        if (strcmp(p->prog->funcs[i].name, name) == 0 && p->prog->funcs[i].defined)
            fail(p, "function %s used as a variable", name);
    *is_local = 0;
    *index = awk_global(p->prog, name);
}

static void mark_array(struct parser *p, int index, int is_local) {
    if (is_local && p->func >= 0) p->prog->funcs[p->func].param_is_array[index] = 1;
}

static struct awk_node *expr(struct parser *p);
static struct awk_node *ternary(struct parser *p);
static struct awk_node *unary(struct parser *p);
static struct awk_node *statement(struct parser *p);

static int is_lvalue(const struct awk_node *n) {
    return n->kind == N_VAR || n->kind == N_LOCAL || n->kind == N_FIELD || n->kind == N_INDEX;
}

/* Comma-separated expressions up to (not including) CLOSE; newlines allowed after commas. */
static struct awk_node *expr_list(struct parser *p, enum awk_tok close, int *count) {
    struct awk_node *head = NULL, **tail = &head;
    int n = 0;
    if (peek(p) != close) {
        for (;;) {
            *tail = expr(p);
            tail = &(*tail)->next;
            n++;
            if (!accept(p, T_COMMA)) break;
            skip_newlines(p);
        }
    }
    *count = n;
    return head;
}

/* NAME[subscripts] after the name. */
static struct awk_node *subscript(struct parser *p, const char *name) {
    struct awk_node *n = node(p, N_INDEX);
    resolve(p, name, &n->index, &n->is_local);
    mark_array(p, n->index, n->is_local);
    expect(p, T_LBRACKET);
    int saved_gt = p->no_gt;
    p->no_gt = 0;
    n->args = expr_list(p, T_RBRACKET, &n->nargs);
    p->no_gt = saved_gt;
    if (n->nargs == 0) unexpected(p);
    expect(p, T_RBRACKET);
    return n;
}

static struct awk_node *name_ref(struct parser *p, const char *name) {
    if (peek(p) == T_LBRACKET) return subscript(p, name);
    struct awk_node *n = node(p, N_VAR);
    resolve(p, name, &n->index, &n->is_local);
    if (n->is_local) n->kind = N_LOCAL;
    return n;
}

static struct awk_node *builtin_call(struct parser *p, int which) {
    struct awk_node *n = node(p, N_BUILTIN);
    n->index = which;
    if (which == B_SYSTEM)
        refuse(p, "system()", "awk cannot run commands; run them in the check's command line");
    if (which == B_LENGTH && peek(p) != T_LPAREN) return n; /* length alone: length($0) */
    expect(p, T_LPAREN);
    int saved_gt = p->no_gt;
    p->no_gt = 0;
    skip_newlines(p);
    n->args = expr_list(p, T_RPAREN, &n->nargs);
    p->no_gt = saved_gt;
    expect(p, T_RPAREN);
    static const struct {
        int min, max;
    } arity[] = {
        [B_LENGTH] = {0, 1}, [B_SUBSTR] = {2, 3}, [B_INDEX] = {2, 2},  [B_SPLIT] = {2, 3},
        [B_SUB] = {2, 3},    [B_GSUB] = {2, 3},   [B_MATCH] = {2, 2},  [B_SPRINTF] = {1, 255},
        [B_TOLOWER] = {1, 1}, [B_TOUPPER] = {1, 1}, [B_INT] = {1, 1},  [B_SQRT] = {1, 1},
        [B_EXP] = {1, 1},    [B_LOG] = {1, 1},    [B_SIN] = {1, 1},    [B_COS] = {1, 1},
        [B_ATAN2] = {2, 2},  [B_RAND] = {0, 0},   [B_SRAND] = {0, 1},  [B_CLOSE] = {1, 1},
        [B_FFLUSH] = {0, 1}, [B_SYSTEM] = {1, 1},
    };
    if (n->nargs < arity[which].min || n->nargs > arity[which].max)
        fail(p, "wrong number of arguments to a built-in function");
    struct awk_node *second = n->args ? n->args->next : NULL;
    if (which == B_SPLIT) {
        if (second->kind != N_VAR && second->kind != N_LOCAL)
            fail(p, "split's second argument must be an array name");
        mark_array(p, second->index, second->kind == N_LOCAL);
    }
    if ((which == B_SUB || which == B_GSUB) && n->nargs == 3 && !is_lvalue(second->next))
        fail(p, "%s's third argument must be a variable, field or array element",
             which == B_SUB ? "sub" : "gsub");
    return n;
}

/* getline [lvalue]; the forms reading a file or a command are refused. */
static struct awk_node *getline_expr(struct parser *p) {
    struct awk_node *n = node(p, N_GETLINE);
    enum awk_tok t = peek(p);
    if (t == T_DOLLAR || t == T_NAME) {
        enter(p);
        if (t == T_DOLLAR) {
            advance(p);
            n->a = node(p, N_FIELD);
            n->a->a = unary(p);
        } else {
            n->a = name_ref(p, advance(p)->text);
        }
        leave(p);
    }
    if (peek(p) == T_LT)
        refuse(p, "getline < FILE",
               "name the file as an operand and read it with getline or NR==FNR");
    return n;
}

static struct awk_node *primary(struct parser *p) {
    struct awk_token *t = advance(p);
    struct awk_node *n;
    switch (t->kind) {
    case T_NUMBER:
        n = node(p, N_NUM);
        n->num = t->num;
        return n;
    case T_STRING:
        n = node(p, N_STR);
        n->str = t->text;
        return n;
    case T_ERE:
        n = node(p, N_ERE);
        n->str = t->text;
        n->re = awk_compile_ere(t->text, t->line);
        if (n->re == NULL) exit(2);
        return n;
    case T_LPAREN: {
        int saved_gt = p->no_gt;
        p->no_gt = 0;
        int count;
        struct awk_node *list = expr_list(p, T_RPAREN, &count);
        p->no_gt = saved_gt;
            if (count == 0) unexpected(p);
        expect(p, T_RPAREN);
        if (count > 1) {
            if (peek(p) == T_IN) {
                advance(p);
                n = node(p, N_IN);
                resolve(p, expect(p, T_NAME)->text, &n->index, &n->is_local);
                mark_array(p, n->index, n->is_local);
                n->args = list;
                n->nargs = count;
                return n;
            }
            n = node(p, N_GROUP); /* print (a, b): only print accepts it */
            n->args = list;
            n->nargs = count;
            return n;
        }
        n = node(p, N_GROUP);
        n->args = list;
        n->nargs = 1;
        return n;
    }
    case T_DOLLAR:
        n = node(p, N_FIELD);
        enter(p);
        if (peek(p) == T_INCR || peek(p) == T_DECR || peek(p) == T_MINUS) {
            n->a = unary(p);
        } else {
            n->a = primary(p);
        }
        leave(p);
        return n;
    case T_INCR:
    case T_DECR: {
        enter(p);
        struct awk_node *target = primary(p);
        leave(p);
        if (!is_lvalue(target)) unexpected(p);
        n = node(p, t->kind == T_INCR ? N_PRE_INCR : N_PRE_DECR);
        n->a = target;
        return n;
    }
    case T_NAME:
        return name_ref(p, t->text);
    case T_FUNC_NAME: {
        n = node(p, N_CALL);
        for (int i = 0; i < nparam_names && p->func >= 0; i++)
            if (strcmp(param_names[i], t->text) == 0) fail(p, "%s is not a function", t->text);
        n->index = find_func(p->prog, t->text);
        if (p->prog->funcs[n->index].line == 0) p->prog->funcs[n->index].line = t->line;
        expect(p, T_LPAREN);
        int saved_gt = p->no_gt;
        p->no_gt = 0;
        skip_newlines(p);
        n->args = expr_list(p, T_RPAREN, &n->nargs);
        p->no_gt = saved_gt;
            expect(p, T_RPAREN);
        return n;
    }
    case T_BUILTIN:
        return builtin_call(p, t->builtin);
    case T_GETLINE:
        return getline_expr(p);
    case T_MINUS:
    case T_PLUS:
    case T_NOT:
        p->pos--;
        return unary(p);
    default:
        p->pos--;
        unexpected(p);
    }
}

static struct awk_node *postfix(struct parser *p) {
    struct awk_node *n = primary(p);
    if (is_lvalue(n) && (peek(p) == T_INCR || peek(p) == T_DECR)) {
        struct awk_node *post = node(p, advance(p)->kind == T_INCR ? N_POST_INCR : N_POST_DECR);
        post->a = n;
        return post;
    }
    return n;
}

static struct awk_node *binary(struct parser *p, enum awk_node_kind kind, int op,
                               struct awk_node *a, struct awk_node *b) {
    struct awk_node *n = node(p, kind);
    n->op = op;
    n->a = a;
    n->b = b;
    /* a chain such as "a" "b" "c" ... grows without nesting: bound it the same way */
    n->height = 1 + (a->height > b->height ? a->height : b->height);
    if (n->height > MAX_HEIGHT) fail(p, "program nested too deeply");
    return n;
}

/* ^ is right-associative and binds tighter than unary minus on its left: -2^2 is -4; its
 * right operand may itself be negated: 2^-1. */
static struct awk_node *power(struct parser *p) {
    struct awk_node *n = postfix(p);
    if (peek(p) == T_POW) {
        advance(p);
        enter(p);
        struct awk_node *rhs;
        if (peek(p) == T_MINUS || peek(p) == T_PLUS || peek(p) == T_NOT) rhs = unary(p);
        else rhs = power(p);
        leave(p);
        n = binary(p, N_BINARY, T_POW, n, rhs);
    }
    return n;
}

static struct awk_node *unary(struct parser *p) {
    enum awk_tok t = peek(p);
    if (t != T_NOT && t != T_MINUS && t != T_PLUS) return power(p);
    advance(p);
    enter(p);
    struct awk_node *n = node(p, t == T_NOT ? N_NOT : t == T_MINUS ? N_NEG : N_PLUS);
    n->a = unary(p);
    leave(p);
    return n;
}

static struct awk_node *multiplicative(struct parser *p) {
    struct awk_node *n = unary(p);
    for (;;) {
        enum awk_tok t = peek(p);
        if (t != T_STAR && t != T_SLASH && t != T_PERCENT) return n;
        advance(p);
        n = binary(p, N_BINARY, t, n, unary(p));
    }
}

static struct awk_node *additive(struct parser *p) {
    struct awk_node *n = multiplicative(p);
    for (;;) {
        enum awk_tok t = peek(p);
        if (t != T_PLUS && t != T_MINUS) return n;
        advance(p);
        n = binary(p, N_BINARY, t, n, multiplicative(p));
    }
}

/* Whether the next token can start the right operand of a concatenation. */
static int starts_operand(struct parser *p) {
    switch (peek(p)) {
    case T_NUMBER: case T_STRING: case T_ERE: case T_NAME: case T_FUNC_NAME: case T_BUILTIN:
    case T_DOLLAR: case T_LPAREN: case T_INCR: case T_DECR:
        return 1;
    default:
        return 0; /* `!`, `-`, `+` here are binary or start no operand: a -b is a minus b */
    }
}

static struct awk_node *concatenation(struct parser *p) {
    struct awk_node *n = additive(p);
    while (starts_operand(p)) n = binary(p, N_CONCAT, 0, n, additive(p));
    if (peek(p) == T_PIPE && peek_at(p, 1) == T_GETLINE)
        refuse(p, "CMD | getline", "awk cannot run commands; pipe the command's output into awk");
    return n;
}

static struct awk_node *relational(struct parser *p) {
    struct awk_node *n = concatenation(p);
    enum awk_tok t = peek(p);
    if (t == T_LT || t == T_LE || t == T_NE || t == T_EQ || t == T_GE ||
        (t == T_GT && !p->no_gt)) {
        advance(p);
        n = binary(p, N_CMP, t, n, concatenation(p));
    }
    return n;
}

static struct awk_node *matching(struct parser *p) {
    struct awk_node *n = relational(p);
    while (peek(p) == T_TILDE || peek(p) == T_NOMATCH) {
        enum awk_tok t = advance(p)->kind;
        n = binary(p, N_MATCH, t, n, relational(p));
    }
    return n;
}

static struct awk_node *membership(struct parser *p) {
    struct awk_node *n = matching(p);
    while (peek(p) == T_IN) {
        advance(p);
        struct awk_node *in = node(p, N_IN);
        resolve(p, expect(p, T_NAME)->text, &in->index, &in->is_local);
        mark_array(p, in->index, in->is_local);
        in->args = n;
        in->nargs = 1;
        n = in;
    }
    return n;
}

static struct awk_node *logical_and(struct parser *p) {
    struct awk_node *n = membership(p);
    while (peek(p) == T_AND) {
        advance(p);
        skip_newlines(p);
        n = binary(p, N_AND, T_AND, n, membership(p));
    }
    return n;
}

static struct awk_node *logical_or(struct parser *p) {
    struct awk_node *n = logical_and(p);
    while (peek(p) == T_OR) {
        advance(p);
        skip_newlines(p);
        n = binary(p, N_OR, T_OR, n, logical_and(p));
    }
    return n;
}

static struct awk_node *ternary(struct parser *p) {
    struct awk_node *n = logical_or(p);
    if (peek(p) != T_QUESTION) return n;
    advance(p);
    skip_newlines(p);
    enter(p);
    struct awk_node *c = node(p, N_COND);
    c->a = n;
    c->b = ternary(p);
    if (peek(p) >= T_ASSIGN && peek(p) <= T_POW_ASSIGN && is_lvalue(c->b)) {
        enum awk_tok op = advance(p)->kind;
        c->b = binary(p, N_ASSIGN, op, c->b, expr(p));
    }
    skip_newlines(p);
    expect(p, T_COLON);
    skip_newlines(p);
    c->c = ternary(p);
    leave(p);
    return c;
}

static struct awk_node *expr(struct parser *p) {
    enter(p);
    struct awk_node *n = ternary(p);
    enum awk_tok t = peek(p);
    if (t == T_ASSIGN || (t >= T_ADD_ASSIGN && t <= T_POW_ASSIGN)) {
        if (!is_lvalue(n)) unexpected(p);
        advance(p);
        skip_newlines(p);
        n = binary(p, N_ASSIGN, t, n, expr(p));
    }
    leave(p);
    if (n->kind == N_GROUP && n->nargs > 1 && !p->no_gt) unexpected(p);
    return n;
}

/* A simple statement ends at `;`, a newline, or before `}`. */
static void end_simple(struct parser *p) {
    enum awk_tok t = peek(p);
    if (t == T_SEMI || t == T_NEWLINE) {
        advance(p);
        skip_newlines(p);
    } else if (t != T_RBRACE && t != T_EOF) {
        unexpected(p);
    }
}

static struct awk_node *simple_or_empty(struct parser *p) {
    if (peek(p) == T_SEMI || peek(p) == T_NEWLINE || peek(p) == T_RPAREN) return NULL;
    return expr(p);
}

static struct awk_node *print_statement(struct parser *p, enum awk_tok kind) {
    struct awk_node *n = node(p, kind == T_PRINT ? S_PRINT : S_PRINTF);
    p->no_gt = 1;
    enum awk_tok t = peek(p);
    if (t != T_SEMI && t != T_NEWLINE && t != T_RBRACE && t != T_GT && t != T_APPEND &&
        t != T_PIPE && t != T_EOF) {
        n->args = expr_list(p, T_EOF, &n->nargs);
    }
    p->no_gt = 0;
    /* print (a, b): the group is the list */
    if (n->nargs == 1 && n->args->kind == N_GROUP && n->args->nargs > 1) {
        n->nargs = n->args->nargs;
        n->args = n->args->args;
    }
    t = peek(p);
    if ((t == T_GT || t == T_APPEND) && peek_at(p, 1) == T_STRING) {
        /* the standard streams are no files: `print "x" > "/dev/stderr"` stays allowed */
        const char *target = p->toks[p->pos + 1].text;
        enum awk_tok after = peek_at(p, 2);
        int ends = after == T_SEMI || after == T_NEWLINE || after == T_RBRACE || after == T_EOF;
        if (ends && (strcmp(target, "/dev/stderr") == 0 || strcmp(target, "/dev/stdout") == 0)) {
            n->index = strcmp(target, "/dev/stderr") == 0 ? 2 : 1;
            advance(p);
            advance(p);
            t = peek(p);
        }
    }
    if (t == T_GT || t == T_APPEND)
        refuse(p, "output redirection (> FILE, >> FILE)",
               "awk writes to standard output only; redirect the whole command instead");
    if (t == T_PIPE)
        refuse(p, "print | CMD", "awk cannot run commands; pipe awk's output instead");
    if (kind == T_PRINTF && n->nargs == 0) fail(p, "printf needs a format");
    end_simple(p);
    return n;
}

static struct awk_node *block(struct parser *p) {
    expect(p, T_LBRACE);
    skip_newlines(p);
    struct awk_node *n = node(p, S_BLOCK), **tail = &n->args;
    while (peek(p) != T_RBRACE) {
        if (peek(p) == T_EOF) fail(p, "syntax error: missing }");
        struct awk_node *s = statement(p);
        if (s != NULL) {
            *tail = s;
            tail = &s->next;
        }
    }
    advance(p);
    return n;
}

/* A loop's or if's body: after optional newlines, one statement (NULL for `;`). */
static struct awk_node *body(struct parser *p) {
    skip_newlines(p);
    enter(p);
    struct awk_node *s = statement(p);
    leave(p);
    return s;
}

static struct awk_node *for_statement(struct parser *p) {
    expect(p, T_LPAREN);
    if (peek(p) == T_NAME && peek_at(p, 1) == T_IN && peek_at(p, 2) == T_NAME &&
        peek_at(p, 3) == T_RPAREN) {
        struct awk_node *n = node(p, S_FOR_IN);
        n->a = name_ref(p, advance(p)->text);
        advance(p);
        resolve(p, advance(p)->text, &n->index, &n->is_local);
        mark_array(p, n->index, n->is_local);
        advance(p);
        p->loops++;
        n->b = body(p);
        p->loops--;
        return n;
    }
    struct awk_node *n = node(p, S_FOR);
    n->c = simple_or_empty(p);
    expect(p, T_SEMI);
    skip_newlines(p);
    n->a = simple_or_empty(p);
    expect(p, T_SEMI);
    skip_newlines(p);
    n->d = simple_or_empty(p);
    expect(p, T_RPAREN);
    p->loops++;
    n->b = body(p);
    p->loops--;
    return n;
}

static struct awk_node *statement(struct parser *p) {
    struct awk_node *n;
    enum awk_tok t = peek(p);
    switch (t) {
    case T_LBRACE:
        enter(p);
        n = block(p);
        leave(p);
        skip_newlines(p);
        if (peek(p) == T_SEMI) {
            advance(p);
            skip_newlines(p);
        }
        return n;
    case T_SEMI:
        advance(p);
        skip_newlines(p);
        return NULL;
    case T_IF: {
        advance(p);
        n = node(p, S_IF);
        expect(p, T_LPAREN);
        n->a = expr(p);
        expect(p, T_RPAREN);
        n->b = body(p);
        size_t saved = p->pos;
        skip_newlines(p);
        if (accept(p, T_ELSE)) n->c = body(p);
        else p->pos = saved;
        return n;
    }
    case T_WHILE:
        advance(p);
        n = node(p, S_WHILE);
        expect(p, T_LPAREN);
        n->a = expr(p);
        expect(p, T_RPAREN);
        if (peek(p) == T_SEMI) { /* while (x); */
            advance(p);
            skip_newlines(p);
            return n;
        }
        p->loops++;
        n->b = body(p);
        p->loops--;
        return n;
    case T_DO:
        advance(p);
        n = node(p, S_DO);
        p->loops++;
        n->b = body(p);
        p->loops--;
        skip_newlines(p);
        expect(p, T_WHILE);
        expect(p, T_LPAREN);
        n->a = expr(p);
        expect(p, T_RPAREN);
        end_simple(p);
        return n;
    case T_FOR:
        advance(p);
        return for_statement(p);
    default:
        break;
    }
    /* simple statements */
    advance(p);
    switch (t) {
    case T_PRINT:
    case T_PRINTF:
        return print_statement(p, t);
    case T_BREAK:
    case T_CONTINUE:
        if (p->loops == 0) fail(p, "%s outside a loop", t == T_BREAK ? "break" : "continue");
        n = node(p, t == T_BREAK ? S_BREAK : S_CONTINUE);
        break;
    case T_NEXT:
    case T_NEXTFILE:
        n = node(p, t == T_NEXT ? S_NEXT : S_NEXTFILE);
        break;
    case T_EXIT:
    case T_RETURN:
        if (t == T_RETURN && p->func < 0) fail(p, "return outside a function");
        n = node(p, t == T_EXIT ? S_EXIT : S_RETURN);
        if (peek(p) != T_SEMI && peek(p) != T_NEWLINE && peek(p) != T_RBRACE) n->a = expr(p);
        break;
    case T_DELETE: {
        const char *name = expect(p, T_NAME)->text;
        if (peek(p) == T_LBRACKET) {
            n = subscript(p, name);
            n->kind = S_DELETE;
        } else {
            n = node(p, S_DELETE_ALL);
            resolve(p, name, &n->index, &n->is_local);
            mark_array(p, n->index, n->is_local);
        }
        break;
    }
    default:
        p->pos--;
        n = node(p, S_EXPR);
        n->a = expr(p);
        break;
    }
    end_simple(p);
    return n;
}

static void function_def(struct parser *p) {
    struct awk_token *t = advance(p);
    if (t->kind != T_NAME && t->kind != T_FUNC_NAME) unexpected(p);
    int index = find_func(p->prog, t->text);
    struct awk_func *f = &p->prog->funcs[index];
    if (f->defined) fail(p, "function %s defined twice", t->text);
    for (int i = 0; i < p->prog->nglobals; i++)
        if (strcmp(p->prog->globals[i], t->text) == 0)
            fail(p, "function %s is also a variable", t->text);
    expect(p, T_LPAREN);
    param_names = NULL;
    nparam_names = 0;
    while (peek(p) != T_RPAREN) {
        const char *name = expect(p, T_NAME)->text;
        param_names = realloc(param_names, (size_t)(nparam_names + 1) * sizeof(char *));
        if (param_names == NULL) awk_fatal("out of memory");
        param_names[nparam_names++] = (char *)name;
        skip_newlines(p);
        if (!accept(p, T_COMMA)) break;
        skip_newlines(p);
    }
    expect(p, T_RPAREN);
    skip_newlines(p);
    f = &p->prog->funcs[index];
    f->defined = 1;
    f->nparams = nparam_names;
    f->param_is_array = awk_alloc((size_t)nparam_names + 1);
    memset(f->param_is_array, 0, (size_t)nparam_names + 1);
    p->func = index;
    struct awk_node *b = block(p);
    p->prog->funcs[index].body = b;
    p->func = -1;
    free(param_names);
    param_names = NULL;
    nparam_names = 0;
}

static struct awk_item *new_item(enum awk_item_kind kind) {
    struct awk_item *it = awk_alloc(sizeof *it);
    memset(it, 0, sizeof *it);
    it->kind = kind;
    return it;
}

/* Mark in FN the parameters passed on as another function's array parameter; 1 if any new. */
static int mark_passed_arrays(struct awk_program *prog, struct awk_func *fn, struct awk_node *n) {
    int changed = 0;
    for (; n != NULL; n = n->next) {
        if (n->kind == N_CALL) {
            struct awk_func *callee = &prog->funcs[n->index];
            int i = 0;
            for (struct awk_node *a = n->args; a != NULL && i < callee->nparams; a = a->next, i++) {
                if (a->kind == N_LOCAL && callee->param_is_array[i] &&
                    !fn->param_is_array[a->index]) {
                    fn->param_is_array[a->index] = 1;
                    changed = 1;
                }
            }
        }
        changed |= mark_passed_arrays(prog, fn, n->a) | mark_passed_arrays(prog, fn, n->b) |
                   mark_passed_arrays(prog, fn, n->c) | mark_passed_arrays(prog, fn, n->d) |
                   mark_passed_arrays(prog, fn, n->args);
    }
    return changed;
}

/* What to write instead of a gawk-only function a check author may reach for. */
static const char *gawk_instead(const char *name) {
    static const struct {
        const char *name, *instead;
    } extensions[] = {
        {"gensub", "use sub() or gsub() on a copy, or match() with substr()"},
        {"strftime", "run date outside awk"},
        {"systime", "run date +%s outside awk"},
        {"mktime", "run date outside awk"},
        {"asort", "pipe awk's output through sort"},
        {"asorti", "pipe awk's output through sort"},
        {"patsplit", "use match() in a loop"},
        {"and", "use arithmetic"},
        {"or", "use arithmetic"},
        {"xor", "use arithmetic"},
        {"lshift", "multiply by a power of 2"},
        {"rshift", "divide by a power of 2 and use int()"},
        {"compl", "use arithmetic"},
        {"isarray", "keep track of which names are arrays"},
        {"typeof", "keep track of which names are arrays"},
    };
    for (size_t i = 0; i < sizeof extensions / sizeof extensions[0]; i++)
        if (strcmp(extensions[i].name, name) == 0) return extensions[i].instead;
    return NULL;
}

int awk_parse(const char *src, struct awk_program *prog) {
    static const char *const special[V_SPECIAL_COUNT] = {
        [V_NF] = "NF",         [V_NR] = "NR",         [V_FNR] = "FNR",
        [V_FS] = "FS",         [V_OFS] = "OFS",       [V_ORS] = "ORS",
        [V_RS] = "RS",         [V_FILENAME] = "FILENAME", [V_SUBSEP] = "SUBSEP",
        [V_RSTART] = "RSTART", [V_RLENGTH] = "RLENGTH", [V_CONVFMT] = "CONVFMT",
        [V_OFMT] = "OFMT",     [V_ENVIRON] = "ENVIRON", [V_ARGC] = "ARGC",
        [V_ARGV] = "ARGV",
    };
    memset(prog, 0, sizeof *prog);
    for (int i = 0; i < V_SPECIAL_COUNT; i++) awk_global(prog, special[i]);
    size_t ntoks;
    struct awk_token *toks = awk_lex(src, &ntoks);
    if (toks == NULL) return 2;
    struct parser p = {toks, 0, prog, -1, 0, 0, 0};
    struct awk_item **tail = &prog->items;
    for (;;) {
        while (peek(&p) == T_NEWLINE || peek(&p) == T_SEMI) advance(&p);
        if (peek(&p) == T_EOF) break;
        struct awk_item *it;
        if (peek(&p) == T_FUNCTION) {
            advance(&p);
            function_def(&p);
            continue;
        }
        if (accept(&p, T_BEGIN)) {
            it = new_item(ITEM_BEGIN);
            skip_newlines(&p);
            it->action = block(&p);
        } else if (accept(&p, T_END)) {
            it = new_item(ITEM_END);
            skip_newlines(&p);
            it->action = block(&p);
            prog->has_end = 1;
        } else {
            it = new_item(ITEM_MAIN);
            prog->has_main = 1;
            if (peek(&p) != T_LBRACE) {
                it->pattern = expr(&p);
                if (accept(&p, T_COMMA)) {
                    skip_newlines(&p);
                    it->pattern_end = expr(&p);
                }
            }
            if (peek(&p) == T_LBRACE) it->action = block(&p);
        }
        *tail = it;
        tail = &it->next;
        /* after an action's } the next item may follow on the same line */
        enum awk_tok t = peek(&p);
        if (t != T_NEWLINE && t != T_SEMI && t != T_EOF && it->action == NULL) unexpected(&p);
    }
    /* f(a) { g(a) } with g using its parameter as an array makes a an array in f too */
    for (int changed = 1; changed;) {
        changed = 0;
        for (int i = 0; i < prog->nfuncs; i++)
            if (prog->funcs[i].defined)
                changed |= mark_passed_arrays(prog, &prog->funcs[i], prog->funcs[i].body);
    }
    for (int i = 0; i < prog->nfuncs; i++) {
        if (prog->funcs[i].defined) continue;
        const char *instead = gawk_instead(prog->funcs[i].name);
        if (instead != NULL)
            box_err("awk", "%s() is a gawk extension, not in POSIX awk (%s) at source line %d",
                    prog->funcs[i].name, instead, prog->funcs[i].line);
        else
            box_err("awk", "calling undefined function %s at source line %d",
                    prog->funcs[i].name, prog->funcs[i].line);
        return 2;
    }
    return 0;
}
