/* jq: the syntax tree jq_parse.c builds and jq_eval.c walks. */
#ifndef JQ_AST_H
#define JQ_AST_H

#include "jq.h"

enum jq_op {
    N_IDENTITY,
    N_RECURSE,   /* .. */
    N_FIELD,     /* a.name (a NULL: the input) */
    N_INDEX,     /* a[b] */
    N_SLICE,     /* a[b:c], b or c NULL */
    N_ITER,      /* a[] */
    N_LITERAL,   /* val */
    N_INTERP,    /* "…\(…)…": args alternate literal text and expressions; name: @format */
    N_FORMAT,    /* @name as a filter */
    N_PIPE,      /* a | b */
    N_COMMA,     /* a , b */
    N_NEG,       /* -a */
    N_ARITH,     /* a OP b, OP (a character) in ival: + - * / % */
    N_CMP,       /* a OP b, OP in ival: 0 == 1 != 2 < 3 <= 4 > 5 >= */
    N_AND,
    N_OR,
    N_ALT,       /* a // b */
    N_TRY,       /* try a catch b (b NULL: drop the error) */
    N_IF,        /* if a then b else c end (c NULL: identity) */
    N_REDUCE,    /* reduce a as $name (b; c) */
    N_FOREACH,   /* foreach a as $name (b; c; d) (d NULL: identity) */
    N_AS,        /* a as $name | b */
    N_VAR,       /* $name */
    N_CALL,      /* builtin ival with args */
    N_ARRAY,     /* [a] (a NULL: empty) */
    N_OBJECT,    /* {k: v, …}: args alternate key and value expressions */
    N_LABEL,     /* label $name | a */
    N_BREAK,     /* break $name */
    N_ASSIGN,    /* a OP b, OP in name: "=", "|=", "+=", "-=", "*=", "/=", "%=", "//=" */
};

struct jq_node {
    enum jq_op op;
    struct jq_node *a, *b, *c, *d;
    struct jq_node **args;
    int nargs;
    int ival;
    char *name;
    jv val;
    struct jq_pattern *pat; /* as/reduce/foreach: what the value binds */
};

/* A destructuring pattern: $name, [p, …] or {key: p, $name, …}. */
struct jq_pattern {
    char *var;                   /* $var (NULL for array and object patterns) */
    int is_object;               /* else: an array pattern when var is NULL */
    int n;
    struct jq_pattern **items;   /* array items / object values */
    struct jq_node **keys;       /* object keys: expressions giving strings */
};

/* The builtins jq_eval.c knows, by name and arity. */
int jq_builtin_lookup(const char *name, int nargs);

#endif
