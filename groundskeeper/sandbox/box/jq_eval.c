/* jq's evaluation: a program's outputs for one input. Every expression is a generator; here
 * a generator calls its continuation once per output (`struct emit`), so `empty` is a return
 * without a call and `a | b` runs b inside a's continuation. A nonzero return unwinds: an
 * error (the value in `err`), a `break` to a label, or a halt. `try`, `?` and `//` catch only
 * the errors their own body raised, never those of the continuation they called. Builtins
 * and paths (assignment, del, paths) are here; syntax is jq_parse.c's, values jq_json.c's.
 */
#include <math.h>
#include <regex.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "box.h"
#include "jq_ast.h"

enum { R_OK = 0, R_ERR, R_BREAK, R_HALT };

struct emit {
    int (*fn)(struct emit *self, jv v); /* consumes v */
};

struct env {
    const char *name;
    jv val;
    const void *label; /* a label's identity (val unused) */
    struct env *up;
};

/* Recursion is bounded by the C stack actually used, measured from jq_execute's frame: box.wasm
 * has a 16 MiB stack (zig's default, placed first in memory, so running past it traps). A
 * program that recurses without end (repeat, recurse on values it builds) gets an error at
 * half of it; what runs after the check (printing, sorting) has the rest. */
#define MAX_STACK_BYTES (8u * 1024 * 1024)
#define MAX_EVAL_DEPTH 512

static struct {
    jv err;
    const void *brk;
    int halt_status;
    int depth;
    const char *stack_base;
    const struct jq_run_config *cfg;
} R;

static int stack_exhausted(void) {
    char here;
    return R.stack_base != NULL && (size_t)(R.stack_base - &here) > MAX_STACK_BYTES;
}


enum {
    B_EMPTY, B_NOT, B_LENGTH, B_UTF8LEN, B_KEYS, B_KEYS_UNSORTED, B_VALUES, B_HAS, B_IN,
    B_CONTAINS, B_INSIDE, B_ADD, B_ADD_F, B_ANY, B_ALL, B_ANY_F, B_ALL_F, B_ANY_GC, B_ALL_GC,
    B_RANGE1, B_RANGE2, B_RANGE3, B_FLOOR, B_CEIL, B_ROUND, B_SQRT, B_FABS, B_ABS, B_POW, B_LOG,
    B_LOG2, B_LOG10, B_EXP, B_EXP2, B_EXP10, B_TOSTRING, B_TONUMBER, B_TYPE, B_INFINITE, B_NAN,
    B_ISINFINITE, B_ISNAN, B_ISNORMAL, B_SORT, B_SORT_BY, B_GROUP_BY, B_UNIQUE, B_UNIQUE_BY,
    B_MIN, B_MAX, B_MIN_BY, B_MAX_BY, B_REVERSE, B_INDICES, B_INDEX, B_RINDEX, B_STARTSWITH,
    B_ENDSWITH, B_LTRIMSTR, B_RTRIMSTR, B_TRIM, B_LTRIM, B_RTRIM, B_EXPLODE, B_IMPLODE, B_SPLIT1,
    B_SPLIT2, B_JOIN, B_ASCII_DOWNCASE, B_ASCII_UPCASE, B_RECURSE, B_RECURSE_F, B_RECURSE_FC,
    B_ENV, B_TRANSPOSE, B_FIRST, B_LAST, B_NTH1, B_FIRST_F, B_LAST_F, B_NTH2, B_LIMIT, B_UNTIL,
    B_WHILE, B_REPEAT, B_INPUT, B_INPUTS, B_TOJSON, B_FROMJSON, B_TEST, B_MATCH, B_CAPTURE,
    B_SCAN, B_SPLITS, B_SUB, B_GSUB, B_SELECT, B_MAP, B_MAP_VALUES, B_PATH, B_PATHS, B_PATHS_F,
    B_LEAF_PATHS, B_GETPATH, B_SETPATH, B_DELPATHS, B_DEL, B_TO_ENTRIES, B_FROM_ENTRIES,
    B_WITH_ENTRIES, B_WALK, B_ISEMPTY, B_ERROR0, B_ERROR1, B_NULL, B_TRUE, B_FALSE, B_ARRAYS,
    B_OBJECTS, B_ITERABLES, B_BOOLEANS, B_NUMBERS, B_STRINGS, B_NULLS, B_SCALARS, B_FLATTEN0,
    B_FLATTEN1, B_HALT, B_HALT_ERROR0, B_HALT_ERROR1, B_DEBUG, B_DEBUG1, B_STDERR,
    B_INPUT_FILENAME, B_IN1, B_IN2, B_PICK, B_TOARRAY, B_COMBINATIONS, B_COMBINATIONS_N,
};

static int eval(struct jq_node *n, jv in, struct env *env, struct emit *k);
static int jq_slice(jv in, jv from, jv to, jv *out);

static int raise_value(jv msg) {
    jv_free(R.err);
    R.err = msg;
    return R_ERR;
}

static int raise(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
static int raise(const char *fmt, ...) {
    char buf[512];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(buf, sizeof buf, fmt, ap);
    va_end(ap);
    return raise_value(jv_string(buf));
}

/* "kind (text)" with the text cut as jq 1.8 cuts it, for error messages. */
static const char *describe(jv v, char *buf, size_t sz) {
    jv text = jv_tojson(v);
    const char *t = jv_str(text);
    size_t n = jv_strlen(text);
    if (n > 28) snprintf(buf, sz, "%s (%.25s...)", jv_kind_name(v.kind), t);
    else snprintf(buf, sz, "%s (%s)", jv_kind_name(v.kind), t);
    jv_free(text);
    return buf;
}

static int type_error(jv v, const char *what) {
    char d[80];
    return raise("%s %s", describe(v, d, sizeof d), what);
}

static int type_error2(jv a, jv b, const char *what) {
    char d1[80], d2[80];
    return raise("%s and %s %s", describe(a, d1, sizeof d1), describe(b, d2, sizeof d2), what);
}

static int emit(struct emit *k, jv v) { return k->fn(k, v); }

/* ---- indexing ------------------------------------------------------------------------------- */

static long clamp_index(double d, size_t len) {
    long i = (long)floor(d);
    if (i < 0) i += (long)len;
    return i;
}

/* in[key] into *out; R_ERR for a type mismatch. */
static int index_value(jv in, jv key, jv *out) {
    char d[80];
    if (in.kind == JV_OBJECT && key.kind == JV_STRING) {
        jv *v = jv_object_get(in, jv_str(key), jv_strlen(key));
        *out = v ? jv_copy(*v) : jv_null();
        return R_OK;
    }
    if (in.kind == JV_ARRAY && key.kind == JV_NUMBER) {
        if (isnan(key.u.num)) {
            *out = jv_null();
            return R_OK;
        }
        long i = clamp_index(key.u.num, jv_array_len(in));
        *out = i >= 0 && (size_t)i < jv_array_len(in) ? jv_copy(jv_array_get(in, (size_t)i))
                                                      : jv_null();
        return R_OK;
    }
    if (in.kind == JV_NULL && (key.kind == JV_STRING || key.kind == JV_NUMBER ||
                               key.kind == JV_OBJECT)) {
        *out = jv_null();
        return R_OK;
    }
    if (in.kind == JV_ARRAY && key.kind == JV_ARRAY) { /* indices of a sub-array */
        jv res = jv_array();
        size_t n = jv_array_len(in), m = jv_array_len(key);
        for (size_t i = 0; m && i + m <= n; i++) {
            size_t j = 0;
            while (j < m && jv_equal(jv_array_get(in, i + j), jv_array_get(key, j))) j++;
            if (j == m) res = jv_array_append(res, jv_number((double)i));
        }
        *out = res;
        return R_OK;
    }
    if (key.kind == JV_OBJECT && (in.kind == JV_ARRAY || in.kind == JV_STRING)) {
        /* a slice given as {"start":…, "end":…} (paths hold slices this way) */
        jv *s = jv_object_get(key, "start", 5), *e = jv_object_get(key, "end", 3);
        return jq_slice(in, s ? *s : jv_null(), e ? *e : jv_null(), out);
    }
    return raise("Cannot index %s with %s", jv_kind_name(in.kind), describe(key, d, sizeof d));
}

/* Code-point offsets of a string to byte offsets. */
static size_t cp_to_byte(jv s, long cp) {
    const char *p = jv_str(s), *end = p + jv_strlen(s);
    while (cp > 0 && p < end) {
        jv_utf8_next(&p, end);
        cp--;
    }
    return (size_t)(p - jv_str(s));
}

static int jq_slice(jv in, jv from, jv to, jv *out) {
    if (in.kind == JV_NULL) {
        *out = jv_null();
        return R_OK;
    }
    if ((from.kind != JV_NULL && from.kind != JV_NUMBER) ||
        (to.kind != JV_NULL && to.kind != JV_NUMBER))
        return raise("Start and end indices of an array slice must be numbers");
    if (in.kind != JV_ARRAY && in.kind != JV_STRING)
        return raise("Cannot index %s with object", jv_kind_name(in.kind));
    size_t len = in.kind == JV_ARRAY ? jv_array_len(in) : jv_utf8_length(in);
    double f = from.kind == JV_NUMBER ? from.u.num : 0;
    double t = to.kind == JV_NUMBER ? to.u.num : (double)len;
    if (f < 0) f += (double)len;
    if (t < 0) t += (double)len;
    f = floor(f);
    t = ceil(t);
    if (f < 0) f = 0;
    if (f > (double)len) f = (double)len;
    if (t > (double)len) t = (double)len;
    if (t < f) t = f;
    size_t a = (size_t)f, b = (size_t)t;
    if (in.kind == JV_ARRAY) {
        jv res = jv_array();
        for (size_t i = a; i < b; i++) res = jv_array_append(res, jv_copy(jv_array_get(in, i)));
        *out = res;
    } else {
        size_t ba = cp_to_byte(in, (long)a), bb = cp_to_byte(in, (long)b);
        *out = jv_string_n(jv_str(in) + ba, bb - ba);
    }
    return R_OK;
}

static int iterate(jv in, struct emit *k) {
    if (in.kind == JV_ARRAY) {
        jv hold = jv_copy(in); /* the continuation may drop its own reference */
        for (size_t i = 0; i < jv_array_len(hold); i++) {
            int r = emit(k, jv_copy(jv_array_get(hold, i)));
            if (r) {
                jv_free(hold);
                return r;
            }
        }
        jv_free(hold);
        return R_OK;
    }
    if (in.kind == JV_OBJECT) {
        jv hold = jv_copy(in);
        for (size_t i = 0; i < hold.u.o->len; i++) {
            int r = emit(k, jv_copy(hold.u.o->vals[i]));
            if (r) {
                jv_free(hold);
                return r;
            }
        }
        jv_free(hold);
        return R_OK;
    }
    char d[80];
    return raise("Cannot iterate over %s", describe(in, d, sizeof d));
}

/* ---- arithmetic ------------------------------------------------------------------------------ */

static jv deep_merge(jv a, jv b) {
    jv hold = jv_copy(b);
    for (size_t i = 0; i < hold.u.o->len; i++) {
        jv key = hold.u.o->keys[i], val = hold.u.o->vals[i];
        jv *old = jv_object_get(a, jv_str(key), jv_strlen(key));
        if (old && old->kind == JV_OBJECT && val.kind == JV_OBJECT) {
            jv merged = deep_merge(jv_copy(*old), jv_copy(val));
            a = jv_object_set(a, jv_copy(key), merged);
        } else {
            a = jv_object_set(a, jv_copy(key), jv_copy(val));
        }
    }
    jv_free(hold);
    jv_free(b);
    return a;
}

static jv split_string(jv s, jv sep) {
    jv res = jv_array();
    const char *p = jv_str(s), *end = p + jv_strlen(s);
    size_t n = jv_strlen(sep);
    if (jv_strlen(s) == 0) return res;
    if (n == 0) { /* into code points */
        while (p < end) {
            const char *q = p;
            jv_utf8_next(&q, end);
            res = jv_array_append(res, jv_string_n(p, (size_t)(q - p)));
            p = q;
        }
        return res;
    }
    for (;;) {
        const char *hit = NULL;
        for (const char *q = p; q + n <= end; q++)
            if (memcmp(q, jv_str(sep), n) == 0) {
                hit = q;
                break;
            }
        if (hit == NULL) break;
        res = jv_array_append(res, jv_string_n(p, (size_t)(hit - p)));
        p = hit + n;
    }
    return jv_array_append(res, jv_string_n(p, (size_t)(end - p)));
}

/* a OP b into *out (a and b borrowed). */
static int arith(int op, jv a, jv b, jv *out) {
    int ka = a.kind, kb = b.kind;
    switch (op) {
    case '+':
        if (ka == JV_NULL) {
            *out = jv_copy(b);
            return R_OK;
        }
        if (kb == JV_NULL) {
            *out = jv_copy(a);
            return R_OK;
        }
        if (ka == JV_NUMBER && kb == JV_NUMBER) {
            *out = jv_number(a.u.num + b.u.num);
            return R_OK;
        }
        if (ka == JV_STRING && kb == JV_STRING) {
            *out = jv_string_append(jv_copy(a), jv_str(b), jv_strlen(b));
            return R_OK;
        }
        if (ka == JV_ARRAY && kb == JV_ARRAY) {
            jv res = jv_copy(a);
            for (size_t i = 0; i < jv_array_len(b); i++)
                res = jv_array_append(res, jv_copy(jv_array_get(b, i)));
            *out = res;
            return R_OK;
        }
        if (ka == JV_OBJECT && kb == JV_OBJECT) {
            jv res = jv_copy(a);
            for (size_t i = 0; i < b.u.o->len; i++)
                res = jv_object_set(res, jv_copy(b.u.o->keys[i]), jv_copy(b.u.o->vals[i]));
            *out = res;
            return R_OK;
        }
        return type_error2(a, b, "cannot be added");
    case '-':
        if (ka == JV_NUMBER && kb == JV_NUMBER) {
            *out = jv_number(a.u.num - b.u.num);
            return R_OK;
        }
        if (ka == JV_ARRAY && kb == JV_ARRAY) {
            jv res = jv_array();
            for (size_t i = 0; i < jv_array_len(a); i++) {
                jv x = jv_array_get(a, i);
                int found = 0;
                for (size_t j = 0; j < jv_array_len(b) && !found; j++)
                    found = jv_equal(x, jv_array_get(b, j));
                if (!found) res = jv_array_append(res, jv_copy(x));
            }
            *out = res;
            return R_OK;
        }
        return type_error2(a, b, "cannot be subtracted");
    case '*':
        if (ka == JV_NUMBER && kb == JV_NUMBER) {
            *out = jv_number(a.u.num * b.u.num);
            return R_OK;
        }
        if ((ka == JV_STRING && kb == JV_NUMBER) || (ka == JV_NUMBER && kb == JV_STRING)) {
            jv s = ka == JV_STRING ? a : b;
            double d = ka == JV_NUMBER ? a.u.num : b.u.num;
            if (d < 0 || isnan(d)) {
                *out = jv_null();
                return R_OK;
            }
            double times = d < 1 ? 0 : floor(d);
            if (times * (double)jv_strlen(s) > 64.0 * 1024 * 1024)
                return raise("Repeat string result too long");
            jv res = jv_string_n(NULL, 0);
            for (double i = 0; i < times; i++) res = jv_string_append(res, jv_str(s), jv_strlen(s));
            *out = res;
            return R_OK;
        }
        if (ka == JV_OBJECT && kb == JV_OBJECT) {
            *out = deep_merge(jv_copy(a), jv_copy(b));
            return R_OK;
        }
        return type_error2(a, b, "cannot be multiplied");
    case '/':
        if (ka == JV_NUMBER && kb == JV_NUMBER) {
            if (b.u.num == 0) return type_error2(a, b, "cannot be divided because the divisor is zero");
            *out = jv_number(a.u.num / b.u.num);
            return R_OK;
        }
        if (ka == JV_STRING && kb == JV_STRING) {
            *out = split_string(a, b);
            return R_OK;
        }
        return type_error2(a, b, "cannot be divided");
    case '%':
        if (ka == JV_NUMBER && kb == JV_NUMBER) {
            double x = a.u.num, y = b.u.num;
            if (isnan(x) || isnan(y)) {
                *out = jv_number(NAN);
                return R_OK;
            }
            intmax_t xi = x >= 9.2e18 ? INTMAX_MAX : x <= -9.2e18 ? INTMAX_MIN : (intmax_t)x;
            intmax_t yi = y >= 9.2e18 ? INTMAX_MAX : y <= -9.2e18 ? INTMAX_MIN : (intmax_t)y;
            if (yi == 0)
                return type_error2(a, b, "cannot be divided (remainder) because the divisor is zero");
            if (yi < 0) yi = -yi;
            *out = jv_number(yi == 1 || (yi == INTMAX_MIN) ? 0 : (double)(xi % yi));
            return R_OK;
        }
        return type_error2(a, b, "cannot be divided (remainder)");
    }
    return raise("unknown operator");
}

static int compare_op(int op, jv a, jv b) {
    int c = jv_cmp(a, b);
    switch (op) {
    case 0: return c == 0;
    case 1: return c != 0;
    case 2: return c < 0;
    case 3: return c <= 0;
    case 4: return c > 0;
    default: return c >= 0;
    }
}

/* ---- continuations ----------------------------------------------------------------------- */

/* Calls the node with each value and the same continuation (a | b, .[] of a, …). */
struct then_k {
    struct emit base;
    struct jq_node *n;
    struct env *env;
    struct emit *k;
};

static int then_fn(struct emit *self, jv v) {
    struct then_k *t = (struct then_k *)self;
    int r = eval(t->n, v, t->env, t->k);
    jv_free(v);
    return r;
}

/* Collects every output into an array. */
struct collect_k {
    struct emit base;
    jv items;
};

static int collect_fn(struct emit *self, jv v) {
    struct collect_k *c = (struct collect_k *)self;
    c->items = jv_array_append(c->items, v);
    return R_OK;
}

static int collect(struct jq_node *n, jv in, struct env *env, jv *out) {
    struct collect_k c = {{collect_fn}, jv_array()};
    int r = eval(n, in, env, &c.base);
    if (r) {
        jv_free(c.items);
        return r;
    }
    *out = c.items;
    return R_OK;
}

/* Passes outputs on, remembering when the continuation (not the body) failed: `try`, `?`
 * and `//` must let such errors through. */
struct guard_k {
    struct emit base;
    struct emit *k;
    int downstream;
    int emitted;
};

static int guard_fn(struct emit *self, jv v) {
    struct guard_k *g = (struct guard_k *)self;
    g->emitted = 1;
    int r = emit(g->k, v);
    if (r) g->downstream = 1;
    return r;
}

/* The value-by-value continuation of a function: calls fn(ctx, v). */
struct fn_k {
    struct emit base;
    int (*call)(void *ctx, jv v);
    void *ctx;
};

static int fn_fn(struct emit *self, jv v) {
    struct fn_k *f = (struct fn_k *)self;
    return f->call(f->ctx, v);
}

static int eval_each(struct jq_node *n, jv in, struct env *env, int (*call)(void *, jv),
                     void *ctx) {
    struct fn_k f = {{fn_fn}, call, ctx};
    return eval(n, in, env, &f.base);
}

/* ---- patterns ------------------------------------------------------------------------------ */

static int bind_pattern(struct jq_pattern *pt, jv v, struct env *env,
                        int (*done)(void *, struct env *), void *ctx);

struct bind_obj {
    struct jq_pattern *pt;
    int i;
    jv v;
    int (*done)(void *, struct env *);
    void *ctx;
    struct env *env;
};

static int bind_object_from(struct bind_obj *b, int i, struct env *env);

struct bind_key_ctx {
    struct bind_obj *b;
    int i;
    struct env *env;
};

static int bind_obj_rest(void *ctx, struct env *env) {
    struct bind_key_ctx *c = ctx;
    return bind_object_from(c->b, c->i + 1, env);
}

static int bind_key(void *ctx, jv key) {
    struct bind_key_ctx *c = ctx;
    if (key.kind != JV_STRING) {
        char d[80];
        int r = raise("Cannot index %s with %s", jv_kind_name(c->b->v.kind),
                      describe(key, d, sizeof d));
        jv_free(key);
        return r;
    }
    jv sub;
    int r = index_value(c->b->v, key, &sub);
    jv_free(key);
    if (r) return r;
    r = bind_pattern(c->b->pt->items[c->i], sub, c->env, bind_obj_rest, c);
    jv_free(sub);
    return r;
}

static int bind_object_from(struct bind_obj *b, int i, struct env *env) {
    if (i == b->pt->n) return b->done(b->ctx, env);
    struct bind_key_ctx c = {b, i, env};
    return eval_each(b->pt->keys[i], b->v, env, bind_key, &c);
}

struct bind_arr {
    struct jq_pattern *pt;
    jv v;
    int (*done)(void *, struct env *);
    void *ctx;
};

struct bind_arr_ctx {
    struct bind_arr *b;
    int i;
};

static int bind_array_from(struct bind_arr *b, int i, struct env *env);

static int bind_arr_rest(void *ctx, struct env *env) {
    struct bind_arr_ctx *c = ctx;
    return bind_array_from(c->b, c->i + 1, env);
}

static int bind_array_from(struct bind_arr *b, int i, struct env *env) {
    if (i == b->pt->n) return b->done(b->ctx, env);
    jv sub;
    jv key = jv_number(i);
    if (b->v.kind != JV_ARRAY && b->v.kind != JV_NULL)
        return raise("Cannot index %s with number (%d)", jv_kind_name(b->v.kind), i);
    int r = index_value(b->v, key, &sub);
    if (r) return r;
    struct bind_arr_ctx c = {b, i};
    r = bind_pattern(b->pt->items[i], sub, env, bind_arr_rest, &c);
    jv_free(sub);
    return r;
}

/* Bind V (borrowed) to the pattern's variables on top of ENV, then call done. */
static int bind_pattern(struct jq_pattern *pt, jv v, struct env *env,
                        int (*done)(void *, struct env *), void *ctx) {
    if (pt->var) {
        struct env e = {pt->var, v, NULL, env};
        return done(ctx, &e);
    }
    if (pt->is_object) {
        if (v.kind != JV_OBJECT && v.kind != JV_NULL) {
            char d[80];
            return raise("Cannot index %s with string", describe(v, d, sizeof d));
        }
        struct bind_obj b = {pt, 0, v, done, ctx, env};
        return bind_object_from(&b, 0, env);
    }
    struct bind_arr b = {pt, v, done, ctx};
    return bind_array_from(&b, 0, env);
}

/* ---- the node kinds -------------------------------------------------------------------------- */

static int lookup_var(const char *name, struct env *env, jv *out) {
    for (struct env *e = env; e; e = e->up)
        if (e->name && e->label == NULL && strcmp(e->name, name) == 0) {
            *out = jv_copy(e->val);
            return 1;
        }
    if (strcmp(name, "ENV") == 0) {
        *out = jv_copy(R.cfg->env);
        return 1;
    }
    if (strcmp(name, "ARGS") == 0 || strcmp(name, "__prog_args") == 0) {
        jv a = jv_object();
        a = jv_object_set(a, jv_string("positional"), jv_array());
        a = jv_object_set(a, jv_string("named"), jv_copy(R.cfg->named_args));
        *out = a;
        return 1;
    }
    jv *g = jv_object_get(R.cfg->named_args, name, strlen(name));
    if (g) {
        *out = jv_copy(*g);
        return 1;
    }
    return 0;
}

/* Binary operators: for each output r of the right side (outer), each l of the left. */
struct binop_outer {
    struct emit base;
    struct jq_node *n;
    jv in;
    struct env *env;
    struct emit *k;
};

struct binop_inner {
    struct emit base;
    struct binop_outer *o;
    jv rhs;
};

static int binop_inner_fn(struct emit *self, jv l) {
    struct binop_inner *b = (struct binop_inner *)self;
    struct jq_node *n = b->o->n;
    jv out;
    int r;
    if (n->op == N_ARITH) {
        r = arith(n->ival, l, b->rhs, &out);
    } else {
        out = jv_bool(compare_op(n->ival, l, b->rhs));
        r = R_OK;
    }
    jv_free(l);
    if (r) return r;
    return emit(b->o->k, out);
}

static int binop_outer_fn(struct emit *self, jv rhs) {
    struct binop_outer *o = (struct binop_outer *)self;
    struct binop_inner b = {{binop_inner_fn}, o, rhs};
    int r = eval(o->n->a, o->in, o->env, &b.base);
    jv_free(rhs);
    return r;
}

struct logic_k {
    struct emit base;
    struct jq_node *n;
    jv in;
    struct env *env;
    struct emit *k;
    int right;
};

static int logic_fn(struct emit *self, jv v) {
    struct logic_k *l = (struct logic_k *)self;
    int t = jv_truthy(v);
    jv_free(v);
    if (l->right) return emit(l->k, jv_bool(t));
    int is_and = l->n->op == N_AND;
    if (is_and && !t) return emit(l->k, jv_bool(0));
    if (!is_and && t) return emit(l->k, jv_bool(1));
    struct logic_k r = *l;
    r.right = 1;
    return eval(l->n->b, l->in, l->env, &r.base);
}

struct alt_k {
    struct emit base;
    struct guard_k *g;
};

static int alt_fn(struct emit *self, jv v) {
    struct alt_k *a = (struct alt_k *)self;
    if (!jv_truthy(v)) {
        jv_free(v);
        return R_OK;
    }
    return guard_fn(&a->g->base, v);
}

struct if_k {
    struct emit base;
    struct jq_node *n;
    jv in;
    struct env *env;
    struct emit *k;
};

static int if_fn(struct emit *self, jv cond) {
    struct if_k *i = (struct if_k *)self;
    int t = jv_truthy(cond);
    jv_free(cond);
    if (t) return eval(i->n->b, i->in, i->env, i->k);
    if (i->n->c) return eval(i->n->c, i->in, i->env, i->k);
    return emit(i->k, jv_copy(i->in));
}

/* reduce and foreach */
struct fold {
    struct jq_node *n;
    jv acc;
    int have;
    struct env *env;
    struct emit *k;
};

struct last_k {
    struct emit base;
    jv last;
    int have;
};

static int last_fn(struct emit *self, jv v) {
    struct last_k *l = (struct last_k *)self;
    if (l->have) jv_free(l->last);
    l->last = v;
    l->have = 1;
    return R_OK;
}

static int reduce_bound(void *ctx, struct env *env) {
    struct fold *f = ctx;
    struct last_k l = {{last_fn}, jv_null(), 0};
    int r = eval(f->n->c, f->acc, env, &l.base);
    if (r) {
        if (l.have) jv_free(l.last);
        return r;
    }
    jv_free(f->acc);
    f->acc = l.have ? l.last : jv_null();
    return R_OK;
}

struct foreach_k {
    struct emit base;
    struct fold *f;
    struct env *env;
};

static int foreach_state_fn(struct emit *self, jv state) {
    struct foreach_k *fk = (struct foreach_k *)self;
    struct fold *f = fk->f;
    jv_free(f->acc);
    f->acc = jv_copy(state);
    int r;
    if (f->n->d) r = eval(f->n->d, state, fk->env, f->k);
    else r = emit(f->k, jv_copy(state));
    jv_free(state);
    return r;
}

static int foreach_bound(void *ctx, struct env *env) {
    struct fold *f = ctx;
    struct foreach_k fk = {{foreach_state_fn}, f, env};
    jv acc = jv_copy(f->acc);
    int r = eval(f->n->c, acc, env, &fk.base);
    jv_free(acc);
    return r;
}

static int fold_item(void *ctx, jv item) {
    struct fold *f = ctx;
    int r = bind_pattern(f->n->pat, item, f->env, f->n->op == N_REDUCE ? reduce_bound : foreach_bound, f);
    jv_free(item);
    return r;
}

struct fold_init_ctx {
    struct jq_node *n;
    jv in;
    struct env *env;
    struct emit *k;
};

static int fold_init(void *ctx, jv init) {
    struct fold_init_ctx *c = ctx;
    struct fold f = {c->n, init, 1, c->env, c->k};
    int r = eval_each(c->n->a, c->in, c->env, fold_item, &f);
    if (r) {
        jv_free(f.acc);
        return r;
    }
    if (c->n->op == N_REDUCE) return emit(c->k, f.acc);
    jv_free(f.acc);
    return R_OK;
}

struct as_ctx {
    struct jq_node *n;
    jv in;
    struct env *env;
    struct emit *k;
};

static int as_bound(void *ctx, struct env *env) {
    struct as_ctx *c = ctx;
    return eval(c->n->b, c->in, env, c->k);
}

static int as_item(void *ctx, jv v) {
    struct as_ctx *c = ctx;
    int r = bind_pattern(c->n->pat, v, c->env, as_bound, c);
    jv_free(v);
    return r;
}

/* Object construction: pairs from i on, cartesian, the first pair outermost. */
struct obj_build {
    struct jq_node *n;
    jv in;
    struct env *env;
    struct emit *k;
};

static int build_object(struct obj_build *b, int i, jv partial);

struct obj_key_ctx {
    struct obj_build *b;
    int i;
    jv partial;
    jv key;
};

static int obj_value(void *ctx, jv v) {
    struct obj_key_ctx *c = ctx;
    jv next = jv_object_set(jv_copy(c->partial), jv_copy(c->key), v);
    return build_object(c->b, c->i + 2, next);
}

static int obj_key(void *ctx, jv key) {
    struct obj_key_ctx *c = ctx;
    if (key.kind != JV_STRING) {
        char d[80];
        int r = raise("Cannot use %s as object key", describe(key, d, sizeof d));
        jv_free(key);
        return r;
    }
    struct obj_key_ctx inner = {c->b, c->i, c->partial, key};
    int r = eval_each(c->b->n->args[c->i + 1], c->b->in, c->b->env, obj_value, &inner);
    jv_free(key);
    return r;
}

static int build_object(struct obj_build *b, int i, jv partial) {
    if (i >= b->n->nargs) return emit(b->k, partial);
    struct obj_key_ctx c = {b, i, partial, jv_null()};
    int r = eval_each(b->n->args[i], b->in, b->env, obj_key, &c);
    jv_free(partial);
    return r;
}

/* ---- formats --------------------------------------------------------------------------------- */

static jv tostring(jv v) { /* consumes v */
    if (v.kind == JV_STRING) return v;
    jv s = jv_tojson(v);
    jv_free(v);
    return s;
}

static int csv_tsv(jv in, int tsv, jv *out) {
    if (in.kind != JV_ARRAY) {
        char d[80];
        return raise("%s cannot be %s-formatted, only an array can be", describe(in, d, sizeof d),
                     tsv ? "tsv" : "csv");
    }
    jv res = jv_string_n(NULL, 0);
    for (size_t i = 0; i < jv_array_len(in); i++) {
        jv x = jv_array_get(in, i);
        if (i) res = jv_string_append(res, tsv ? "\t" : ",", 1);
        char num[32];
        switch (x.kind) {
        case JV_NULL: break;
        case JV_TRUE: res = jv_string_append(res, "true", 4); break;
        case JV_FALSE: res = jv_string_append(res, "false", 5); break;
        case JV_NUMBER:
            jv_number_text(x.u.num, num);
            res = jv_string_append(res, num, strlen(num));
            break;
        case JV_STRING: {
            const char *p = jv_str(x);
            if (!tsv) res = jv_string_append(res, "\"", 1);
            for (size_t j = 0; j < jv_strlen(x); j++) {
                const char *rep = NULL;
                if (!tsv && p[j] == '"') rep = "\"\"";
                if (tsv && p[j] == '\\') rep = "\\\\";
                if (tsv && p[j] == '\t') rep = "\\t";
                if (tsv && p[j] == '\n') rep = "\\n";
                if (tsv && p[j] == '\r') rep = "\\r";
                res = rep ? jv_string_append(res, rep, strlen(rep)) : jv_string_append(res, p + j, 1);
            }
            if (!tsv) res = jv_string_append(res, "\"", 1);
            break;
        }
        default: {
            char d[80];
            jv_free(res);
            return raise("%s is not valid in a %s row", describe(x, d, sizeof d), tsv ? "tsv" : "csv");
        }
        }
    }
    *out = res;
    return R_OK;
}

static int apply_format(const char *fmt, jv in, jv *out) {
    if (strcmp(fmt, "text") == 0) {
        *out = tostring(jv_copy(in));
        return R_OK;
    }
    if (strcmp(fmt, "json") == 0) {
        *out = jv_tojson(in);
        return R_OK;
    }
    if (strcmp(fmt, "csv") == 0 || strcmp(fmt, "tsv") == 0) return csv_tsv(in, fmt[0] == 't', out);
    if (strcmp(fmt, "sh") == 0) {
        jv items = in.kind == JV_ARRAY ? jv_copy(in) : jv_array_append(jv_array(), jv_copy(in));
        jv res = jv_string_n(NULL, 0);
        for (size_t i = 0; i < jv_array_len(items); i++) {
            jv x = jv_array_get(items, i);
            if (i) res = jv_string_append(res, " ", 1);
            if (x.kind == JV_ARRAY || x.kind == JV_OBJECT) {
                char d[80];
                jv_free(res);
                jv_free(items);
                return raise("%s can not be escaped for shell", describe(x, d, sizeof d));
            }
            if (x.kind != JV_STRING) {
                jv t = jv_tojson(x);
                res = jv_string_append(res, jv_str(t), jv_strlen(t));
                jv_free(t);
                continue;
            }
            res = jv_string_append(res, "'", 1);
            for (size_t j = 0; j < jv_strlen(x); j++) {
                if (jv_str(x)[j] == '\'') res = jv_string_append(res, "'\\''", 4);
                else res = jv_string_append(res, jv_str(x) + j, 1);
            }
            res = jv_string_append(res, "'", 1);
        }
        jv_free(items);
        *out = res;
        return R_OK;
    }
    jv s = tostring(jv_copy(in));
    jv res = jv_string_n(NULL, 0);
    const unsigned char *p = (const unsigned char *)jv_str(s);
    size_t n = jv_strlen(s);
    if (strcmp(fmt, "html") == 0) {
        for (size_t i = 0; i < n; i++) {
            const char *rep = p[i] == '<' ? "&lt;" : p[i] == '>' ? "&gt;" : p[i] == '&' ? "&amp;"
                            : p[i] == '\'' ? "&#39;" : p[i] == '"' ? "&quot;" : NULL;
            res = rep ? jv_string_append(res, rep, strlen(rep)) : jv_string_append(res, (const char *)p + i, 1);
        }
    } else if (strcmp(fmt, "uri") == 0) {
        for (size_t i = 0; i < n; i++) {
            char c = (char)p[i];
            if ((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
                strchr("-_.~", c) != NULL) {
                res = jv_string_append(res, &c, 1);
            } else {
                char h[4];
                snprintf(h, sizeof h, "%%%02X", p[i]);
                res = jv_string_append(res, h, 3);
            }
        }
    } else if (strcmp(fmt, "base64") == 0) {
        static const char b64[] = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
        for (size_t i = 0; i < n; i += 3) {
            unsigned v = (unsigned)p[i] << 16 | (i + 1 < n ? (unsigned)p[i + 1] << 8 : 0) |
                         (i + 2 < n ? p[i + 2] : 0);
            char q[4] = {b64[v >> 18], b64[(v >> 12) & 63], i + 1 < n ? b64[(v >> 6) & 63] : '=',
                         i + 2 < n ? b64[v & 63] : '='};
            res = jv_string_append(res, q, 4);
        }
    } else if (strcmp(fmt, "base64d") == 0) {
        unsigned acc = 0;
        int bits = 0;
        size_t used = 0;
        for (size_t i = 0; i < n && p[i] != '='; i++) {
            const char *b64 = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
            const char *hit = memchr(b64, p[i], 64);
            if (hit == NULL) {
                char d[80];
                jv_free(res);
                int r = raise("%s is not valid base64 data", describe(s, d, sizeof d));
                jv_free(s);
                return r;
            }
            acc = (acc << 6) | (unsigned)(hit - b64);
            bits += 6;
            used++;
            if (bits >= 8) {
                bits -= 8;
                char c = (char)((acc >> bits) & 0xFF);
                res = jv_string_append(res, &c, 1);
            }
        }
        if (used % 4 == 1) {
            char d[80];
            jv_free(res);
            int r = raise("%s trailing base64 byte found", describe(s, d, sizeof d));
            jv_free(s);
            return r;
        }
        jv clean = jv_string_sanitized(jv_str(res), jv_strlen(res));
        jv_free(res);
        res = clean;
    }
    jv_free(s);
    *out = res;
    return R_OK;
}

/* String interpolation: parts from the last to the first (jq's order: the last
 * interpolation varies slowest). */
struct interp {
    struct jq_node *n;
    jv in;
    struct env *env;
    struct emit *k;
    jv *chosen;
};

static int interp_from(struct interp *s, int i);

struct interp_ctx {
    struct interp *s;
    int i;
};

static int interp_value(void *ctx, jv v) {
    struct interp_ctx *c = ctx;
    jv text;
    int r = R_OK;
    if (c->s->n->name) r = apply_format(c->s->n->name, v, &text);
    else text = tostring(jv_copy(v));
    jv_free(v);
    if (r) return r;
    c->s->chosen[c->i] = text;
    r = interp_from(c->s, c->i - 2);
    jv_free(text);
    return r;
}

static int interp_from(struct interp *s, int i) {
    if (i < 0) {
        jv res = jv_string_n(NULL, 0);
        for (int j = 0; j < s->n->nargs; j++) {
            jv part = j % 2 == 0 ? s->n->args[j]->val : s->chosen[j];
            res = jv_string_append(res, jv_str(part), jv_strlen(part));
        }
        return emit(s->k, res);
    }
    struct interp_ctx c = {s, i};
    return eval_each(s->n->args[i], s->in, s->env, interp_value, &c);
}

/* ---- paths ----------------------------------------------------------------------------------- */

/* A path expression's outputs are (path, value) pairs: pk gets both (consumes both). */
struct path_emit {
    int (*fn)(struct path_emit *self, jv path, jv value);
};

static int eval_path(struct jq_node *n, jv path, jv value, jv root, struct env *env,
                     struct path_emit *pk);

static jv path_append(jv path, jv key) { return jv_array_append(jv_copy(path), key); }

struct path_then {
    struct path_emit base;
    struct jq_node *n;
    jv root;
    struct env *env;
    struct path_emit *pk;
};

static int path_then_fn(struct path_emit *self, jv path, jv value) {
    struct path_then *t = (struct path_then *)self;
    int r = eval_path(t->n, path, value, t->root, t->env, t->pk);
    jv_free(path);
    jv_free(value);
    return r;
}

static int path_index(jv path, jv value, jv key, struct path_emit *pk) {
    jv sub;
    int r = index_value(value, key, &sub);
    if (r) {
        jv_free(key);
        return r;
    }
    return pk->fn(pk, path_append(path, key), sub);
}

static int path_iterate(jv path, jv value, struct path_emit *pk) {
    if (value.kind == JV_NULL) return R_OK;
    if (value.kind == JV_ARRAY) {
        for (size_t i = 0; i < jv_array_len(value); i++) {
            int r = pk->fn(pk, path_append(path, jv_number((double)i)),
                           jv_copy(jv_array_get(value, i)));
            if (r) return r;
        }
        return R_OK;
    }
    if (value.kind == JV_OBJECT) {
        for (size_t i = 0; i < value.u.o->len; i++) {
            int r = pk->fn(pk, path_append(path, jv_copy(value.u.o->keys[i])),
                           jv_copy(value.u.o->vals[i]));
            if (r) return r;
        }
        return R_OK;
    }
    char d[80];
    return raise("Cannot iterate over %s", describe(value, d, sizeof d));
}

static int path_recurse(jv path, jv value, struct path_emit *pk, int depth) {
    if (depth > JQ_MAX_DEPTH) return raise("recursion too deep (the sandbox's stack limit)");
    int r = pk->fn(pk, jv_copy(path), jv_copy(value));
    if (r) return r;
    if (value.kind == JV_ARRAY) {
        for (size_t i = 0; i < jv_array_len(value) && !r; i++) {
            jv p = path_append(path, jv_number((double)i));
            r = path_recurse(p, jv_array_get(value, i), pk, depth + 1);
            jv_free(p);
        }
    } else if (value.kind == JV_OBJECT) {
        for (size_t i = 0; i < value.u.o->len && !r; i++) {
            jv p = path_append(path, jv_copy(value.u.o->keys[i]));
            r = path_recurse(p, value.u.o->vals[i], pk, depth + 1);
            jv_free(p);
        }
    }
    return r;
}

/* Keys from an expression evaluated on the original input, then the path step. */
struct path_key_ctx {
    jv path, value;
    struct path_emit *pk;
    struct jq_node *slice_to;
    jv root;
    struct env *env;
    jv from;
};

static int path_key(void *ctx, jv key) {
    struct path_key_ctx *c = ctx;
    return path_index(c->path, c->value, key, c->pk);
}

static int path_slice_to(void *ctx, jv to) {
    struct path_key_ctx *c = ctx;
    jv key = jv_object();
    key = jv_object_set(key, jv_string("start"), jv_copy(c->from));
    key = jv_object_set(key, jv_string("end"), to);
    if (c->value.kind != JV_NULL && c->value.kind != JV_ARRAY && c->value.kind != JV_STRING) {
        jv_free(key);
        return raise("Cannot update field at object index of %s", jv_kind_name(c->value.kind));
    }
    return path_index(c->path, c->value, key, c->pk);
}

static int path_slice_from(void *ctx, jv from) {
    struct path_key_ctx *c = ctx;
    struct path_key_ctx inner = *c;
    inner.from = from;
    int r;
    if (c->slice_to) r = eval_each(c->slice_to, c->root, c->env, path_slice_to, &inner);
    else r = path_slice_to(&inner, jv_null());
    jv_free(from);
    return r;
}

struct path_if {
    struct path_emit base;
    struct jq_node *n;
    jv path, value, root;
    struct env *env;
    struct path_emit *pk;
};

static int path_cond(void *ctx, jv cond) {
    struct path_if *p = ctx;
    int t = jv_truthy(cond);
    jv_free(cond);
    struct jq_node *branch = t ? p->n->b : p->n->c;
    if (branch == NULL) return p->pk->fn(p->pk, jv_copy(p->path), jv_copy(p->value));
    return eval_path(branch, p->path, p->value, p->root, p->env, p->pk);
}

struct path_guard {
    struct path_emit base;
    struct path_emit *pk;
    int downstream, emitted, alt;
};

static int path_guard_fn(struct path_emit *self, jv path, jv value) {
    struct path_guard *g = (struct path_guard *)self;
    if (g->alt && !jv_truthy(value)) {
        jv_free(path);
        jv_free(value);
        return R_OK;
    }
    g->emitted = 1;
    int r = g->pk->fn(g->pk, path, value);
    if (r) g->downstream = 1;
    return r;
}

struct path_as {
    struct jq_node *n;
    jv path, value, root;
    struct env *env;
    struct path_emit *pk;
};

static int path_as_bound(void *ctx, struct env *env) {
    struct path_as *p = ctx;
    return eval_path(p->n->b, p->path, p->value, p->root, env, p->pk);
}

static int path_as_item(void *ctx, jv v) {
    struct path_as *p = ctx;
    int r = bind_pattern(p->n->pat, v, p->env, path_as_bound, p);
    jv_free(v);
    return r;
}

struct path_first {
    struct path_emit base;
    struct path_emit *pk;
    int count, limit;
    const void *token;
};

static int path_first_fn(struct path_emit *self, jv path, jv value) {
    struct path_first *f = (struct path_first *)self;
    int r = f->pk->fn(f->pk, path, value);
    if (r) return r;
    if (++f->count >= f->limit) {
        R.brk = f->token;
        return R_BREAK;
    }
    return R_OK;
}

static int getpath(jv v, jv path, jv *out);

struct path_getpath {
    jv path, value;
    struct path_emit *pk;
};

static int path_getpath_fn(void *ctx, jv p) {
    struct path_getpath *g = ctx;
    if (p.kind != JV_ARRAY) {
        jv_free(p);
        return raise("Path must be specified as an array");
    }
    jv sub;
    int r = getpath(g->value, p, &sub);
    if (r) {
        jv_free(p);
        return r;
    }
    jv full = jv_copy(g->path);
    for (size_t i = 0; i < jv_array_len(p); i++) full = jv_array_append(full, jv_copy(jv_array_get(p, i)));
    jv_free(p);
    return g->pk->fn(g->pk, full, sub);
}

/* Builtins that are path expressions. */
struct path_select {
    jv path, value;
    struct path_emit *pk;
};

static int path_select_fn(void *ctx, jv t) {
    struct path_select *p = ctx;
    int yes = jv_truthy(t);
    jv_free(t);
    return yes ? p->pk->fn(p->pk, jv_copy(p->path), jv_copy(p->value)) : R_OK;
}

struct path_rec {
    struct path_emit base;
    struct jq_node *f;
    jv root;
    struct env *env;
    struct path_emit *pk;
    int depth;
};

static int path_rec_fn(struct path_emit *self, jv path, jv value) {
    struct path_rec *p = (struct path_rec *)self;
    int r = p->pk->fn(p->pk, jv_copy(path), jv_copy(value));
    if (!r) {
        if (++p->depth > MAX_EVAL_DEPTH) r = raise("recursion too deep (the sandbox's stack limit)");
        else r = eval_path(p->f, path, value, p->root, p->env, self);
        p->depth--;
    }
    jv_free(path);
    jv_free(value);
    return r;
}

static int path_call(struct jq_node *n, jv path, jv value, jv root, struct env *env,
                     struct path_emit *pk, int *handled) {
    *handled = 1;
    int kind = value.kind;
    switch (n->ival) {
    case B_EMPTY: return R_OK;
    case B_ERROR0: return raise_value(jv_copy(value));
    case B_SELECT: {
        struct path_select p = {path, value, pk};
        return eval_each(n->args[0], value, env, path_select_fn, &p);
    }
    case B_VALUES: case B_NULLS: case B_ARRAYS: case B_OBJECTS: case B_ITERABLES:
    case B_BOOLEANS: case B_NUMBERS: case B_STRINGS: case B_SCALARS: {
        int id = n->ival;
        int yes = id == B_VALUES ? kind != JV_NULL : id == B_NULLS ? kind == JV_NULL
                : id == B_ARRAYS ? kind == JV_ARRAY : id == B_OBJECTS ? kind == JV_OBJECT
                : id == B_ITERABLES ? kind >= JV_ARRAY
                : id == B_BOOLEANS ? (kind == JV_TRUE || kind == JV_FALSE)
                : id == B_NUMBERS ? kind == JV_NUMBER : id == B_STRINGS ? kind == JV_STRING
                : kind < JV_ARRAY;
        return yes ? pk->fn(pk, jv_copy(path), jv_copy(value)) : R_OK;
    }
    case B_RECURSE: return path_recurse(path, value, pk, 0);
    case B_RECURSE_F: {
        struct path_rec p = {{path_rec_fn}, n->args[0], root, env, pk, 0};
        return path_rec_fn(&p.base, jv_copy(path), jv_copy(value));
    }
    case B_FIRST_F: {
        struct path_first f = {{path_first_fn}, pk, 0, 1, NULL};
        f.token = &f;
        int r = eval_path(n->args[0], path, value, root, env, &f.base);
        if (r == R_BREAK && R.brk == &f) r = R_OK;
        return r;
    }
    case B_FIRST:
    case B_LAST: {
        jv key = jv_number(n->ival == B_FIRST ? 0 : -1);
        if (kind == JV_ARRAY && n->ival == B_LAST) key = jv_number((double)jv_array_len(value) - 1);
        return path_index(path, value, key, pk);
    }
    case B_GETPATH: {
        struct path_getpath g = {path, value, pk};
        return eval_each(n->args[0], value, env, path_getpath_fn, &g);
    }
    default: *handled = 0; return R_OK;
    }
}

static int eval_path(struct jq_node *n, jv path, jv value, jv root, struct env *env,
                     struct path_emit *pk) {
    int r;
    if (++R.depth > MAX_EVAL_DEPTH || stack_exhausted()) {
        R.depth--;
        return raise("recursion too deep (the sandbox's stack limit)");
    }
    switch (n->op) {
    case N_IDENTITY: r = pk->fn(pk, jv_copy(path), jv_copy(value)); break;
    case N_RECURSE: r = path_recurse(path, value, pk, 0); break;
    case N_FIELD:
    case N_INDEX:
    case N_SLICE:
    case N_ITER: {
        if (n->a) {
            /* the target's paths first, then this step on each */
            struct jq_node step = *n;
            step.a = NULL;
            struct path_then t = {{path_then_fn}, &step, root, env, pk};
            r = eval_path(n->a, path, value, root, env, &t.base);
            break;
        }
        if (n->op == N_FIELD) {
            r = path_index(path, value, jv_string(n->name), pk);
        } else if (n->op == N_ITER) {
            r = path_iterate(path, value, pk);
        } else if (n->op == N_INDEX) {
            struct path_key_ctx c = {path, value, pk, NULL, root, env, jv_null()};
            r = eval_each(n->b, root, env, path_key, &c);
        } else {
            struct path_key_ctx c = {path, value, pk, n->c, root, env, jv_null()};
            if (n->b) r = eval_each(n->b, root, env, path_slice_from, &c);
            else r = path_slice_from(&c, jv_null());
        }
        break;
    }
    case N_PIPE: {
        struct path_then t = {{path_then_fn}, n->b, root, env, pk};
        r = eval_path(n->a, path, value, root, env, &t.base);
        break;
    }
    case N_COMMA:
        r = eval_path(n->a, path, value, root, env, pk);
        if (!r) r = eval_path(n->b, path, value, root, env, pk);
        break;
    case N_IF: {
        struct path_if p = {{NULL}, n, path, value, root, env, pk};
        r = eval_each(n->a, value, env, path_cond, &p);
        break;
    }
    case N_TRY:
    case N_ALT: {
        struct path_guard g = {{path_guard_fn}, pk, 0, 0, n->op == N_ALT};
        r = eval_path(n->a, path, value, root, env, &g.base);
        if (r == R_ERR && !g.downstream && n->op == N_TRY) r = R_OK; /* ends them quietly */
        if (!r && n->op == N_ALT && !g.emitted) r = eval_path(n->b, path, value, root, env, pk);
        break;
    }
    case N_AS: {
        struct path_as p = {n, path, value, root, env, pk};
        r = eval_each(n->a, value, env, path_as_item, &p);
        break;
    }
    case N_LITERAL:
        if (n->val.kind == JV_NULL) { /* path(null) is [] in jq */
            r = pk->fn(pk, jv_copy(path), jv_null());
            break;
        }
        /* fall through */
    default: {
        int handled = 0;
        r = n->op == N_CALL ? path_call(n, path, value, root, env, pk, &handled) : R_OK;
        if (!handled) {
            char d[80];
            jv out;
            struct last_k l = {{last_fn}, jv_null(), 0};
            int rr = eval(n, value, env, &l.base);
            out = l.have ? l.last : jv_null();
            if (rr) {
                jv_free(out);
                r = rr;
            } else {
                r = raise("Invalid path expression with result %s", describe(out, d, sizeof d) + 0);
                jv_free(out);
            }
        }
    }
    }
    R.depth--;
    return r;
}

static int getpath(jv v, jv path, jv *out) {
    jv cur = jv_copy(v);
    for (size_t i = 0; i < jv_array_len(path); i++) {
        if (cur.kind == JV_NULL) break;
        jv next;
        int r = index_value(cur, jv_array_get(path, i), &next);
        jv_free(cur);
        if (r) return r;
        cur = next;
    }
    *out = cur;
    return R_OK;
}

/* v (consumed) with the value at path[i..] replaced by what update gives for the old one. */
static int setpath_from(jv v, jv path, size_t i, jv nv, jv *out) {
    if (i == jv_array_len(path)) {
        jv_free(v);
        *out = nv;
        return R_OK;
    }
    jv key = jv_array_get(path, i);
    char d[80];
    if (key.kind == JV_STRING) {
        if (v.kind != JV_OBJECT && v.kind != JV_NULL) {
            int r = raise("Cannot index %s with \"%s\"", jv_kind_name(v.kind), jv_str(key));
            jv_free(v);
            jv_free(nv);
            return r;
        }
        /* unshared first: the slot is emptied below and another holder must not see it */
        v = v.kind == JV_NULL ? jv_object() : jv_unshare_object(v);
        jv *old = jv_object_get(v, jv_str(key), jv_strlen(key));
        jv sub = old ? jv_copy(*old) : jv_null();
        /* drop our reference in v first so sub is not shared needlessly */
        if (old) {
            jv_free(*old);
            *old = jv_null();
        }
        jv res;
        int r = setpath_from(sub, path, i + 1, nv, &res);
        if (r) {
            jv_free(v);
            return r;
        }
        *out = jv_object_set(v, jv_copy(key), res);
        return R_OK;
    }
    if (key.kind == JV_NUMBER) {
        if (v.kind != JV_ARRAY && v.kind != JV_NULL) {
            int r = raise("Cannot index %s with number", jv_kind_name(v.kind));
            jv_free(v);
            jv_free(nv);
            return r;
        }
        if (v.kind == JV_NULL) v = jv_array();
        long idx = clamp_index(key.u.num, jv_array_len(v));
        if (idx < 0) {
            jv_free(v);
            jv_free(nv);
            return raise("Out of bounds negative array index");
        }
        if (idx > 100000000) {
            jv_free(v);
            jv_free(nv);
            return raise("Array index too large");
        }
        v = jv_unshare_array(v);
        jv sub = jv_null();
        if ((size_t)idx < jv_array_len(v)) {
            sub = v.u.a->items[idx];
            v.u.a->items[idx] = jv_null();
        }
        jv res;
        int r = setpath_from(sub, path, i + 1, nv, &res);
        if (r) {
            jv_free(v);
            return r;
        }
        *out = jv_array_set(v, (size_t)idx, res);
        return R_OK;
    }
    if (key.kind == JV_OBJECT) {
        if (v.kind != JV_ARRAY && v.kind != JV_NULL) {
            int r = raise("Cannot update field at object index of %s", jv_kind_name(v.kind));
            jv_free(v);
            jv_free(nv);
            return r;
        }
        if (v.kind == JV_NULL) v = jv_array();
        jv *s = jv_object_get(key, "start", 5), *e = jv_object_get(key, "end", 3);
        jv sub;
        int r = jq_slice(v, s ? *s : jv_null(), e ? *e : jv_null(), &sub);
        if (r) {
            jv_free(v);
            jv_free(nv);
            return r;
        }
        jv res;
        r = setpath_from(sub, path, i + 1, nv, &res);
        if (r) {
            jv_free(v);
            return r;
        }
        if (res.kind != JV_ARRAY) {
            jv_free(v);
            jv_free(res);
            return raise("A slice of an array can only be assigned another array");
        }
        size_t len = jv_array_len(v);
        double f = s && s->kind == JV_NUMBER ? s->u.num : 0;
        double t = e && e->kind == JV_NUMBER ? e->u.num : (double)len;
        if (f < 0) f += (double)len;
        if (t < 0) t += (double)len;
        f = f < 0 ? 0 : f > (double)len ? (double)len : floor(f);
        t = t > (double)len ? (double)len : ceil(t);
        if (t < f) t = f;
        jv out_arr = jv_array();
        for (size_t j = 0; j < (size_t)f; j++) out_arr = jv_array_append(out_arr, jv_copy(jv_array_get(v, j)));
        for (size_t j = 0; j < jv_array_len(res); j++) out_arr = jv_array_append(out_arr, jv_copy(jv_array_get(res, j)));
        for (size_t j = (size_t)t; j < len; j++) out_arr = jv_array_append(out_arr, jv_copy(jv_array_get(v, j)));
        jv_free(v);
        jv_free(res);
        *out = out_arr;
        return R_OK;
    }
    jv_free(v);
    jv_free(nv);
    return raise("Invalid path component %s", describe(key, d, sizeof d));
}

static int delpath(jv v, jv path, size_t i, jv *out) {
    if (v.kind == JV_NULL || i == jv_array_len(path)) {
        *out = i == jv_array_len(path) ? jv_null() : v;
        if (i == jv_array_len(path)) jv_free(v);
        return R_OK;
    }
    jv key = jv_array_get(path, i);
    int last = i + 1 == jv_array_len(path);
    if (last) {
        if (v.kind == JV_OBJECT && key.kind == JV_STRING) {
            *out = jv_object_delete(v, jv_str(key), jv_strlen(key));
            return R_OK;
        }
        if (v.kind == JV_ARRAY && key.kind == JV_NUMBER) {
            long idx = clamp_index(key.u.num, jv_array_len(v));
            if (idx < 0) {
                jv_free(v);
                return raise("Out of bounds negative array index");
            }
            if ((size_t)idx < jv_array_len(v)) {
                v = jv_unshare_array(v);
                jv_free(v.u.a->items[idx]);
                memmove(v.u.a->items + idx, v.u.a->items + idx + 1,
                        (v.u.a->len - (size_t)idx - 1) * sizeof(jv));
                v.u.a->len--;
            }
            *out = v;
            return R_OK;
        }
        if (v.kind == JV_ARRAY && key.kind == JV_OBJECT) {
            jv empty = jv_array();
            jv p = jv_array_append(jv_array(), jv_copy(key));
            int r = setpath_from(v, p, 0, empty, out);
            jv_free(p);
            return r;
        }
        char d[80];
        int r = raise("Cannot delete field at index %s of %s", describe(key, d, sizeof d),
                      jv_kind_name(v.kind));
        jv_free(v);
        return r;
    }
    jv sub;
    int r = index_value(v, key, &sub);
    if (r) {
        jv_free(v);
        return r;
    }
    jv nsub;
    r = delpath(sub, path, i + 1, &nsub);
    if (r) {
        jv_free(v);
        return r;
    }
    jv one = jv_array_append(jv_array(), jv_copy(key));
    r = setpath_from(v, one, 0, nsub, out);
    jv_free(one);
    return r;
}

static int delpaths(jv v, jv paths, jv *out) {
    jv sorted = jv_unshare_array(jv_copy(paths));
    jv_sort_array(sorted.u.a->items, sorted.u.a->len);
    /* longest/last first, so earlier deletions do not shift later paths */
    for (size_t i = jv_array_len(sorted); i-- > 0;) {
        jv p = jv_array_get(sorted, i);
        if (p.kind != JV_ARRAY) {
            jv_free(sorted);
            jv_free(v);
            return raise("Path must be specified as an array");
        }
        int r = delpath(v, p, 0, &v);
        if (r) {
            jv_free(sorted);
            return r;
        }
    }
    jv_free(sorted);
    *out = v;
    return R_OK;
}

struct collect_paths {
    struct path_emit base;
    jv paths;
};

static int collect_paths_fn(struct path_emit *self, jv path, jv value) {
    struct collect_paths *c = (struct collect_paths *)self;
    c->paths = jv_array_append(c->paths, path);
    jv_free(value);
    return R_OK;
}

static int all_paths(struct jq_node *f, jv in, struct env *env, jv *out) {
    struct collect_paths c = {{collect_paths_fn}, jv_array()};
    jv root = jv_array();
    int r = eval_path(f, root, in, in, env, &c.base);
    jv_free(root);
    if (r) {
        jv_free(c.paths);
        return r;
    }
    *out = c.paths;
    return R_OK;
}

struct emit_once {
    struct emit base;
    struct last_k *l;
};

static const char once_token = 0;
static int once_fn(struct emit *self, jv v);

/* `lhs |= f`: for each path, the first output of f on the old value; none deletes it. */
static int modify(struct jq_node *lhs, jv in, struct env *env, struct jq_node *f, jv rhs_value,
                  int op, jv *out) {
    jv paths;
    int r = all_paths(lhs, in, env, &paths);
    if (r) return r;
    jv acc = jv_copy(in), deleted = jv_array();
    for (size_t i = 0; i < jv_array_len(paths) && !r; i++) {
        jv p = jv_array_get(paths, i), old, nv;
        r = getpath(acc, p, &old);
        if (r) break;
        int have = 1;
        if (op == '=') {
            nv = jv_copy(rhs_value);
            jv_free(old);
        } else if (op == '|') {
            /* only the first output of f counts: once_fn stops f after it */
            struct last_k first = {{last_fn}, jv_null(), 0};
            struct emit_once once = {{once_fn}, &first};
            r = eval(f, old, env, &once.base);
            if (r == R_BREAK && R.brk == &once_token) r = R_OK;
            jv_free(old);
            if (r) {
                jv_free(first.last);
                break;
            }
            have = first.have;
            nv = first.last;
        } else if (op == '/' + 256) { /* //= */
            if (jv_truthy(old)) nv = old;
            else {
                jv_free(old);
                nv = jv_copy(rhs_value);
            }
        } else {
            r = arith(op, old, rhs_value, &nv);
            jv_free(old);
            if (r) break;
        }
        if (have) r = setpath_from(acc, p, 0, nv, &acc);
        else deleted = jv_array_append(deleted, jv_copy(p));
    }
    jv_free(paths);
    if (!r && jv_array_len(deleted)) r = delpaths(acc, deleted, &acc);
    jv_free(deleted);
    if (r) {
        jv_free(acc);
        return r;
    }
    *out = acc;
    return R_OK;
}

static int once_fn(struct emit *self, jv v) {
    struct emit_once *o = (struct emit_once *)self;
    o->l->last = v;
    o->l->have = 1;
    R.brk = &once_token;
    return R_BREAK;
}

struct assign_ctx {
    struct jq_node *n;
    jv in;
    struct env *env;
    struct emit *k;
    int op;
};

static int assign_rhs(void *ctx, jv rhs) {
    struct assign_ctx *c = ctx;
    jv out;
    int r = modify(c->n->a, c->in, c->env, NULL, rhs, c->op, &out);
    jv_free(rhs);
    if (r) return r;
    return emit(c->k, out);
}

static int eval_assign(struct jq_node *n, jv in, struct env *env, struct emit *k) {
    const char *op = n->name;
    if (strcmp(op, "|=") == 0) {
        jv out;
        int r = modify(n->a, in, env, n->b, jv_null(), '|', &out);
        if (r == R_BREAK && R.brk == &once_token) r = R_OK;
        if (r) return r;
        return emit(k, out);
    }
    struct assign_ctx c = {n, in, env, k, op[0] == '=' ? '=' : strcmp(op, "//=") == 0 ? '/' + 256 : op[0]};
    return eval_each(n->b, in, env, assign_rhs, &c);
}

/* ---- builtins -------------------------------------------------------------------------------- */


static const struct builtin {
    const char *name;
    int nargs, id;
} builtins[] = {
    {"empty", 0, B_EMPTY}, {"not", 0, B_NOT}, {"length", 0, B_LENGTH},
    {"utf8bytelength", 0, B_UTF8LEN}, {"keys", 0, B_KEYS}, {"keys_unsorted", 0, B_KEYS_UNSORTED},
    {"values", 0, B_VALUES}, {"has", 1, B_HAS}, {"in", 1, B_IN}, {"contains", 1, B_CONTAINS},
    {"inside", 1, B_INSIDE}, {"add", 0, B_ADD}, {"add", 1, B_ADD_F}, {"any", 0, B_ANY},
    {"all", 0, B_ALL}, {"any", 1, B_ANY_F}, {"all", 1, B_ALL_F}, {"any", 2, B_ANY_GC},
    {"all", 2, B_ALL_GC}, {"range", 1, B_RANGE1}, {"range", 2, B_RANGE2}, {"range", 3, B_RANGE3},
    {"floor", 0, B_FLOOR}, {"ceil", 0, B_CEIL}, {"round", 0, B_ROUND}, {"sqrt", 0, B_SQRT},
    {"fabs", 0, B_FABS}, {"abs", 0, B_ABS}, {"pow", 2, B_POW}, {"log", 0, B_LOG},
    {"log2", 0, B_LOG2}, {"log10", 0, B_LOG10}, {"exp", 0, B_EXP}, {"exp2", 0, B_EXP2},
    {"exp10", 0, B_EXP10}, {"tostring", 0, B_TOSTRING}, {"tonumber", 0, B_TONUMBER},
    {"type", 0, B_TYPE}, {"infinite", 0, B_INFINITE}, {"nan", 0, B_NAN},
    {"isinfinite", 0, B_ISINFINITE}, {"isnan", 0, B_ISNAN}, {"isnormal", 0, B_ISNORMAL},
    {"sort", 0, B_SORT}, {"sort_by", 1, B_SORT_BY}, {"group_by", 1, B_GROUP_BY},
    {"unique", 0, B_UNIQUE}, {"unique_by", 1, B_UNIQUE_BY}, {"min", 0, B_MIN}, {"max", 0, B_MAX},
    {"min_by", 1, B_MIN_BY}, {"max_by", 1, B_MAX_BY}, {"reverse", 0, B_REVERSE},
    {"indices", 1, B_INDICES}, {"index", 1, B_INDEX}, {"rindex", 1, B_RINDEX},
    {"startswith", 1, B_STARTSWITH}, {"endswith", 1, B_ENDSWITH}, {"ltrimstr", 1, B_LTRIMSTR},
    {"rtrimstr", 1, B_RTRIMSTR}, {"trim", 0, B_TRIM}, {"ltrim", 0, B_LTRIM}, {"rtrim", 0, B_RTRIM},
    {"explode", 0, B_EXPLODE}, {"implode", 0, B_IMPLODE}, {"split", 1, B_SPLIT1},
    {"split", 2, B_SPLIT2}, {"join", 1, B_JOIN}, {"ascii_downcase", 0, B_ASCII_DOWNCASE},
    {"ascii_upcase", 0, B_ASCII_UPCASE}, {"recurse", 0, B_RECURSE}, {"recurse", 1, B_RECURSE_F},
    {"recurse", 2, B_RECURSE_FC}, {"env", 0, B_ENV}, {"transpose", 0, B_TRANSPOSE},
    {"first", 0, B_FIRST}, {"last", 0, B_LAST}, {"nth", 1, B_NTH1}, {"first", 1, B_FIRST_F},
    {"last", 1, B_LAST_F}, {"nth", 2, B_NTH2}, {"limit", 2, B_LIMIT}, {"until", 2, B_UNTIL},
    {"while", 2, B_WHILE}, {"repeat", 1, B_REPEAT}, {"input", 0, B_INPUT},
    {"inputs", 0, B_INPUTS}, {"tojson", 0, B_TOJSON}, {"fromjson", 0, B_FROMJSON},
    {"test", 1, B_TEST}, {"test", 2, B_TEST}, {"match", 1, B_MATCH}, {"match", 2, B_MATCH},
    {"capture", 1, B_CAPTURE}, {"capture", 2, B_CAPTURE}, {"scan", 1, B_SCAN},
    {"scan", 2, B_SCAN}, {"splits", 1, B_SPLITS}, {"splits", 2, B_SPLITS}, {"sub", 2, B_SUB},
    {"sub", 3, B_SUB}, {"gsub", 2, B_GSUB}, {"gsub", 3, B_GSUB}, {"select", 1, B_SELECT},
    {"map", 1, B_MAP}, {"map_values", 1, B_MAP_VALUES}, {"path", 1, B_PATH},
    {"paths", 0, B_PATHS}, {"paths", 1, B_PATHS_F}, {"leaf_paths", 0, B_LEAF_PATHS},
    {"getpath", 1, B_GETPATH}, {"setpath", 2, B_SETPATH}, {"delpaths", 1, B_DELPATHS},
    {"del", 1, B_DEL}, {"to_entries", 0, B_TO_ENTRIES}, {"from_entries", 0, B_FROM_ENTRIES},
    {"with_entries", 1, B_WITH_ENTRIES}, {"walk", 1, B_WALK}, {"isempty", 1, B_ISEMPTY},
    {"error", 0, B_ERROR0}, {"error", 1, B_ERROR1}, {"null", 0, B_NULL}, {"true", 0, B_TRUE},
    {"false", 0, B_FALSE}, {"arrays", 0, B_ARRAYS}, {"objects", 0, B_OBJECTS},
    {"iterables", 0, B_ITERABLES}, {"booleans", 0, B_BOOLEANS}, {"numbers", 0, B_NUMBERS},
    {"strings", 0, B_STRINGS}, {"nulls", 0, B_NULLS}, {"scalars", 0, B_SCALARS},
    {"flatten", 0, B_FLATTEN0}, {"flatten", 1, B_FLATTEN1}, {"halt", 0, B_HALT},
    {"halt_error", 0, B_HALT_ERROR0}, {"halt_error", 1, B_HALT_ERROR1}, {"debug", 0, B_DEBUG},
    {"debug", 1, B_DEBUG1}, {"stderr", 0, B_STDERR}, {"input_filename", 0, B_INPUT_FILENAME},
    {"IN", 1, B_IN1}, {"IN", 2, B_IN2}, {"pick", 1, B_PICK}, {"toarray", 0, B_TOARRAY},
    {"combinations", 0, B_COMBINATIONS}, {"combinations", 1, B_COMBINATIONS_N},
    {NULL, 0, 0},
};

int jq_builtin_lookup(const char *name, int nargs) {
    for (int i = 0; builtins[i].name; i++)
        if (builtins[i].nargs == nargs && strcmp(builtins[i].name, name) == 0)
            return builtins[i].id;
    return -1;
}

/* The arguments of a builtin whose parameters are values ($x): every combination of their
 * outputs (the first argument outermost), each given to fn with the values in vals. */
struct args_ctx {
    struct jq_node *n;
    jv in;
    struct env *env;
    jv vals[3];
    int (*fn)(struct args_ctx *c);
    struct emit *k;
    int i;
    void *extra;
};

static int args_from(struct args_ctx *c, int i);

struct arg_item {
    struct args_ctx *c;
    int i;
};

static int arg_value(void *ctx, jv v) {
    struct arg_item *a = ctx;
    a->c->vals[a->i] = v;
    int r = args_from(a->c, a->i + 1);
    jv_free(v);
    a->c->vals[a->i] = jv_null();
    return r;
}

static int args_from(struct args_ctx *c, int i) {
    if (i == c->n->nargs) return c->fn(c);
    struct arg_item a = {c, i};
    return eval_each(c->n->args[i], c->in, c->env, arg_value, &a);
}

static int with_args(struct jq_node *n, jv in, struct env *env, struct emit *k,
                     int (*fn)(struct args_ctx *), void *extra) {
    struct args_ctx c = {n, in, env, {jv_null(), jv_null(), jv_null()}, fn, k, 0, extra};
    return args_from(&c, 0);
}


/* -- regular expressions: POSIX ERE, with jq's PCRE-style escapes translated where POSIX has
 * an equivalent and everything else refused by name. */
struct regex {
    regex_t re;
    int ngroups;      /* capture groups reported (non-capturing ones left out) */
    int *group_index; /* reported group -> regmatch slot */
    char **names;
    int global, empty_skip;
};

static int regex_compile(jv pattern, jv flags, struct regex *rx) {
    memset(rx, 0, sizeof *rx);
    int cflags = REG_EXTENDED, dotall = 0, extended_syntax = 0;
    if (flags.kind != JV_NULL) {
        if (flags.kind != JV_STRING) {
            char d[80];
            return raise("%s is not a string", describe(flags, d, sizeof d));
        }
        for (const char *f = jv_str(flags); *f; f++) {
            switch (*f) {
            case 'g': rx->global = 1; break;
            case 'i': cflags |= REG_ICASE; break;
            case 'x': extended_syntax = 1; break;
            case 'n': rx->empty_skip = 1; break;
            case 's': dotall = 1; break;
            case 'p': dotall = 1; rx->empty_skip = 1; break;
            case 'l': break; /* POSIX matching is leftmost-longest already */
            default: return raise("%s is not a valid modifier string", jv_str(flags));
            }
        }
    }
    const char *p = jv_str(pattern), *end = p + jv_strlen(pattern);
    jv out = jv_string_n(NULL, 0);
    int slot = 0, cap = 0;
    const char *bad = NULL;
    while (p < end && !bad) {
        char c = *p;
        if (extended_syntax && (c == ' ' || c == '\t' || c == '\n')) {
            p++;
            continue;
        }
        if (extended_syntax && c == '#') {
            while (p < end && *p != '\n') p++;
            continue;
        }
        if (c == '\\' && p + 1 < end) {
            char e = p[1];
            const char *rep = NULL;
            switch (e) {
            case 'd': rep = "[0-9]"; break;
            case 'D': rep = "[^0-9]"; break;
            case 'w': rep = "[A-Za-z0-9_]"; break;
            case 'W': rep = "[^A-Za-z0-9_]"; break;
            case 's': rep = "[[:space:]]"; break;
            case 'S': rep = "[^[:space:]]"; break;
            case 't': rep = "\t"; break;
            case 'n': rep = "\n"; break;
            case 'r': rep = "\r"; break;
            case 'b': case 'B': case 'A': case 'z': case 'Z': case 'G': case 'h': case 'p':
            case 'K': case 'R': case 'X': case 'k': case 'g':
                bad = "\\b, \\A, \\z and other PCRE escapes";
                break;
            default: break;
            }
            if (rep) out = jv_string_append(out, rep, strlen(rep));
            else out = jv_string_append(out, p, 2);
            p += 2;
            continue;
        }
        if (c == '[') {
            /* copied as it is, \d \w \s inside translated */
            const char *q = p + 1;
            out = jv_string_append(out, "[", 1);
            if (q < end && *q == '^') out = jv_string_append(out, q++, 1);
            if (q < end && *q == ']') out = jv_string_append(out, q++, 1);
            while (q < end && *q != ']') {
                if (*q == '[' && q + 1 < end && strchr(":.=", q[1])) {
                    const char close[3] = {q[1], ']', '\0'};
                    const char *found = strstr(q + 2, close);
                    const char *stop = found ? found + 2 : end;
                    out = jv_string_append(out, q, (size_t)(stop - q));
                    q = stop;
                } else if (*q == '\\' && q + 1 < end) {
                    const char *rep = q[1] == 'd' ? "0-9" : q[1] == 'w' ? "A-Za-z0-9_"
                                    : q[1] == 's' ? "[:space:]" : q[1] == 't' ? "\t"
                                    : q[1] == 'n' ? "\n" : NULL;
                    if (rep == NULL && strchr("DWSbB", q[1])) {
                        bad = "\\D, \\W or \\S inside [...]";
                        break;
                    }
                    if (rep) out = jv_string_append(out, rep, strlen(rep));
                    else out = jv_string_append(out, q + 1, 1); /* \] \\ \- taken literally */
                    q += 2;
                } else {
                    out = jv_string_append(out, q++, 1);
                }
            }
            if (q < end) out = jv_string_append(out, q++, 1);
            p = q;
            continue;
        }
        if (c == '(') {
            int capturing = 1;
            char *name = NULL;
            if (p + 1 < end && p[1] == '?') {
                if (p + 2 < end && p[2] == ':') {
                    capturing = 0;
                    p += 3;
                } else if (p + 2 < end && p[2] == '<' && p + 3 < end && p[3] != '=' && p[3] != '!') {
                    const char *q = p + 3;
                    while (q < end && *q != '>') q++;
                    name = strndup(p + 3, (size_t)(q - p - 3));
                    p = q + 1;
                } else {
                    bad = "(?...) groups other than (?:...) and (?<name>...) (lookaround, inline flags)";
                    break;
                }
            } else {
                p++;
            }
            slot++;
            if (capturing) {
                if (rx->ngroups == cap) {
                    cap = cap ? cap * 2 : 8;
                    rx->group_index = realloc(rx->group_index, (size_t)cap * sizeof(int));
                    rx->names = realloc(rx->names, (size_t)cap * sizeof(char *));
                    if (!rx->group_index || !rx->names) jq_oom();
                }
                rx->group_index[rx->ngroups] = slot;
                rx->names[rx->ngroups++] = name;
            }
            out = jv_string_append(out, "(", 1);
            continue;
        }
        if ((c == '*' || c == '+' || c == '?' || c == '}') && p + 1 < end &&
            (p[1] == '?' || p[1] == '+') && c != '?') {
            bad = "lazy and possessive quantifiers (*? +? *+)";
            break;
        }
        if (c == '.' && !dotall) {
            out = jv_string_append(out, "[^\n]", 4); /* as in jq, . stops at a newline */
            p++;
            continue;
        }
        out = jv_string_append(out, p, 1);
        p++;
    }
    if (bad) {
        jv_free(out);
        return raise("%s (in \"%s\") is not supported: the sandbox's jq regular expressions "
                     "are POSIX ERE plus \\d \\w \\s and named groups", bad, jv_str(pattern));
    }
    int rc = box_regcomp(&rx->re, jv_str(out), 1, (cflags & REG_ICASE) != 0);
    jv_free(out);
    if (rc) {
        char buf[128];
        regerror(rc, &rx->re, buf, sizeof buf);
        return raise("%s (at offset 0) is not a valid regex: %s", jv_str(pattern), buf);
    }
    return R_OK;
}

static void regex_free(struct regex *rx) {
    regfree(&rx->re);
    for (int i = 0; i < rx->ngroups; i++) free(rx->names[i]);
    free(rx->names);
    free(rx->group_index);
}

static long byte_to_cp(const char *s, size_t b) {
    long n = 0;
    for (size_t i = 0; i < b; i++)
        if (((unsigned char)s[i] & 0xC0) != 0x80) n++;
    return n;
}

/* All matches of rx in s as jq's match objects (an array). */
static jv regex_matches(struct regex *rx, jv s, int global) {
    jv res = jv_array();
    const char *str = jv_str(s);
    size_t len = jv_strlen(s), start = 0;
    size_t nslots = rx->re.re_nsub + 1;
    regmatch_t *m = jq_alloc(nslots * sizeof *m);
    while (start <= len) {
        int eflags = start > 0 ? REG_NOTBOL : 0;
        if (regexec(&rx->re, str + start, nslots, m, eflags) != 0) break;
        size_t ms = start + (size_t)m[0].rm_so, me = start + (size_t)m[0].rm_eo;
        if (!(rx->empty_skip && ms == me)) {
            jv o = jv_object();
            o = jv_object_set(o, jv_string("offset"), jv_number((double)byte_to_cp(str, ms)));
            o = jv_object_set(o, jv_string("length"),
                              jv_number((double)byte_to_cp(str + ms, me - ms)));
            o = jv_object_set(o, jv_string("string"), jv_string_n(str + ms, me - ms));
            jv caps = jv_array();
            for (int g = 0; g < rx->ngroups; g++) {
                regmatch_t gm = m[rx->group_index[g]];
                jv c = jv_object();
                if (gm.rm_so < 0) {
                    c = jv_object_set(c, jv_string("offset"), jv_number(-1));
                    c = jv_object_set(c, jv_string("length"), jv_number(0));
                    c = jv_object_set(c, jv_string("string"), jv_null());
                } else {
                    size_t gs = start + (size_t)gm.rm_so, ge = start + (size_t)gm.rm_eo;
                    c = jv_object_set(c, jv_string("offset"), jv_number((double)byte_to_cp(str, gs)));
                    c = jv_object_set(c, jv_string("length"),
                                      jv_number((double)byte_to_cp(str + gs, ge - gs)));
                    c = jv_object_set(c, jv_string("string"), jv_string_n(str + gs, ge - gs));
                }
                c = jv_object_set(c, jv_string("name"),
                                  rx->names[g] ? jv_string(rx->names[g]) : jv_null());
                caps = jv_array_append(caps, c);
            }
            o = jv_object_set(o, jv_string("captures"), caps);
            res = jv_array_append(res, o);
        }
        if (!global) break;
        if (me == ms) {
            if (ms >= len) break;
            const char *q = str + ms;
            jv_utf8_next(&q, str + len);
            start = (size_t)(q - str);
        } else {
            start = me;
        }
    }
    free(m);
    return res;
}

static jv capture_object(jv match) {
    jv o = jv_object();
    jv caps = *jv_object_get(match, "captures", 8);
    for (size_t i = 0; i < jv_array_len(caps); i++) {
        jv c = jv_array_get(caps, i);
        jv *name = jv_object_get(c, "name", 4);
        if (name && name->kind == JV_STRING)
            o = jv_object_set(o, jv_copy(*name), jv_copy(*jv_object_get(c, "string", 6)));
    }
    return o;
}

/* test/match/capture/scan/splits: vals[0] regex, vals[1] flags. */
static int regex_call(struct args_ctx *c) {
    int id = *(int *)c->extra;
    jv in = c->in;
    if (in.kind != JV_STRING) {
        char d[80];
        return raise("%s cannot be matched, as it is not a string", describe(in, d, sizeof d));
    }
    if (c->vals[0].kind != JV_STRING) {
        char d[80];
        return raise("%s cannot be matched, as it is not a string", describe(c->vals[0], d, sizeof d));
    }
    struct regex rx;
    int r = regex_compile(c->vals[0], c->n->nargs > 1 ? c->vals[1] : jv_null(), &rx);
    if (r) return r;
    int global = rx.global || id == B_SCAN || id == B_SPLITS;
    jv ms = regex_matches(&rx, in, id == B_TEST ? 0 : global);
    regex_free(&rx);
    r = R_OK;
    if (id == B_TEST) {
        r = emit(c->k, jv_bool(jv_array_len(ms) > 0));
    } else if (id == B_SPLITS) {
        size_t prev = 0;
        const char *str = jv_str(in);
        for (size_t i = 0; i < jv_array_len(ms) && !r; i++) {
            jv m = jv_array_get(ms, i);
            size_t off = cp_to_byte(in, (long)jv_object_get(m, "offset", 6)->u.num);
            size_t mlen = jv_strlen(*jv_object_get(m, "string", 6));
            r = emit(c->k, jv_string_n(str + prev, off - prev));
            prev = off + mlen;
        }
        if (!r) r = emit(c->k, jv_string_n(str + prev, jv_strlen(in) - prev));
    } else {
        for (size_t i = 0; i < jv_array_len(ms) && !r; i++) {
            jv m = jv_array_get(ms, i);
            if (id == B_MATCH) {
                r = emit(c->k, jv_copy(m));
            } else if (id == B_CAPTURE) {
                r = emit(c->k, capture_object(m));
            } else { /* scan: the match, or its captures when it has groups */
                jv caps = *jv_object_get(m, "captures", 8);
                if (jv_array_len(caps) == 0) {
                    r = emit(c->k, jv_copy(*jv_object_get(m, "string", 6)));
                } else {
                    jv strs = jv_array();
                    for (size_t g = 0; g < jv_array_len(caps); g++)
                        strs = jv_array_append(strs, jv_copy(*jv_object_get(jv_array_get(caps, g), "string", 6)));
                    r = emit(c->k, strs);
                }
            }
        }
    }
    jv_free(ms);
    return r;
}

/* sub/gsub: the replacement is a filter on the capture object; several outputs give several
 * results, the earlier matches varying slowest. */
struct sub_state {
    jv in, ms;
    struct jq_node *repl;
    struct env *env;
    struct emit *k;
};

static int sub_from(struct sub_state *s, size_t i, size_t prev, jv acc);

struct sub_ctx {
    struct sub_state *s;
    size_t i, next_prev;
    jv acc;
    size_t before_start, before_len;
};

static int sub_repl(void *ctx, jv v) {
    struct sub_ctx *c = ctx;
    if (v.kind != JV_STRING) {
        char d[80];
        int r = raise("%s cannot be added to a string", describe(v, d, sizeof d));
        jv_free(v);
        return r;
    }
    jv acc = jv_string_append(jv_copy(c->acc), jv_str(c->s->in) + c->before_start, c->before_len);
    acc = jv_string_append(acc, jv_str(v), jv_strlen(v));
    jv_free(v);
    return sub_from(c->s, c->i + 1, c->next_prev, acc);
}

static int sub_from(struct sub_state *s, size_t i, size_t prev, jv acc) {
    if (i == jv_array_len(s->ms)) {
        acc = jv_string_append(acc, jv_str(s->in) + prev, jv_strlen(s->in) - prev);
        return emit(s->k, acc);
    }
    jv m = jv_array_get(s->ms, i);
    size_t off = cp_to_byte(s->in, (long)jv_object_get(m, "offset", 6)->u.num);
    size_t mlen = jv_strlen(*jv_object_get(m, "string", 6));
    struct sub_ctx c = {s, i, off + mlen, acc, prev, off - prev};
    jv cap = capture_object(m);
    int r = eval_each(s->repl, cap, s->env, sub_repl, &c);
    jv_free(cap);
    jv_free(acc);
    return r;
}

static int sub_call(struct args_ctx *c) {
    int global = *(int *)c->extra;
    if (c->in.kind != JV_STRING) {
        char d[80];
        return raise("%s cannot be matched, as it is not a string", describe(c->in, d, sizeof d));
    }
    if (c->vals[0].kind != JV_STRING) {
        char d[80];
        return raise("%s cannot be matched, as it is not a string", describe(c->vals[0], d, sizeof d));
    }
    struct regex rx;
    int r = regex_compile(c->vals[0], c->n->nargs > 2 ? c->vals[2] : jv_null(), &rx);
    if (r) return r;
    jv ms = regex_matches(&rx, c->in, global || rx.global);
    regex_free(&rx);
    struct sub_state s = {c->in, ms, c->n->args[1], c->env, c->k};
    r = sub_from(&s, 0, 0, jv_string_n(NULL, 0));
    jv_free(ms);
    return r;
}

/* contains: jq's recursive containment. */
static int contains(jv a, jv b, int *out) {
    if (a.kind == JV_OBJECT && b.kind == JV_OBJECT) {
        for (size_t i = 0; i < b.u.o->len; i++) {
            jv *av = jv_object_get(a, jv_str(b.u.o->keys[i]), jv_strlen(b.u.o->keys[i]));
            if (av == NULL) {
                *out = 0;
                return R_OK;
            }
            int r = contains(*av, b.u.o->vals[i], out);
            if (r || !*out) return r;
        }
        *out = 1;
        return R_OK;
    }
    if (a.kind == JV_ARRAY && b.kind == JV_ARRAY) {
        for (size_t i = 0; i < jv_array_len(b); i++) {
            int found = 0;
            for (size_t j = 0; j < jv_array_len(a) && !found; j++) {
                int r = contains(jv_array_get(a, j), jv_array_get(b, i), &found);
                if (r) return r;
            }
            if (!found) {
                *out = 0;
                return R_OK;
            }
        }
        *out = 1;
        return R_OK;
    }
    if (a.kind == JV_STRING && b.kind == JV_STRING) {
        size_t la = jv_strlen(a), lb = jv_strlen(b);
        int found = lb == 0;
        for (size_t i = 0; !found && i + lb <= la; i++) found = memcmp(jv_str(a) + i, jv_str(b), lb) == 0;
        *out = found;
        return R_OK;
    }
    if (a.kind == b.kind || (a.kind <= JV_TRUE && b.kind <= JV_TRUE && a.kind != JV_NULL && b.kind != JV_NULL)) {
        *out = jv_equal(a, b);
        return R_OK;
    }
    return type_error2(a, b, "cannot have their containment checked");
}

static int keys_of(jv in, int sorted, jv *out) {
    if (in.kind == JV_OBJECT) {
        jv ks = jv_array();
        for (size_t i = 0; i < in.u.o->len; i++) ks = jv_array_append(ks, jv_copy(in.u.o->keys[i]));
        if (sorted) jv_sort_array(ks.u.a->items, ks.u.a->len);
        *out = ks;
        return R_OK;
    }
    if (in.kind == JV_ARRAY) {
        jv ks = jv_array();
        for (size_t i = 0; i < jv_array_len(in); i++) ks = jv_array_append(ks, jv_number((double)i));
        *out = ks;
        return R_OK;
    }
    return type_error(in, "has no keys");
}

/* [f] for each element, paired with the element: the keys sort_by and friends order by. */
static int keyed(jv in, struct jq_node *f, struct env *env, jv *keys, jv *items) {
    if (in.kind != JV_ARRAY) return raise("Cannot index %s with number", jv_kind_name(in.kind));
    jv ks = jv_array();
    for (size_t i = 0; i < jv_array_len(in); i++) {
        jv k;
        int r = collect(f, jv_array_get(in, i), env, &k);
        if (r) {
            jv_free(ks);
            return r;
        }
        ks = jv_array_append(ks, k);
    }
    *keys = ks;
    *items = jv_copy(in);
    return R_OK;
}

/* Indices of in sorted stably by keys. */
static size_t *sorted_order(jv keys) {
    size_t n = jv_array_len(keys);
    size_t *idx = jq_alloc((n ? n : 1) * sizeof *idx), *tmp = jq_alloc((n ? n : 1) * sizeof *idx);
    for (size_t i = 0; i < n; i++) idx[i] = i;
    /* bottom-up merge sort: stable */
    for (size_t w = 1; w < n; w *= 2) {
        for (size_t lo = 0; lo < n; lo += 2 * w) {
            size_t mid = lo + w < n ? lo + w : n, hi = lo + 2 * w < n ? lo + 2 * w : n;
            size_t i = lo, j = mid, o = lo;
            while (i < mid && j < hi)
                tmp[o++] = jv_cmp(jv_array_get(keys, idx[j]), jv_array_get(keys, idx[i])) < 0 ? idx[j++] : idx[i++];
            while (i < mid) tmp[o++] = idx[i++];
            while (j < hi) tmp[o++] = idx[j++];
        }
        memcpy(idx, tmp, n * sizeof *idx);
    }
    free(tmp);
    return idx;
}

static int by_call(int id, jv in, struct jq_node *f, struct env *env, jv *out) {
    jv keys, items;
    if (in.kind != JV_ARRAY) {
        char d[80];
        if (id == B_SORT_BY) return raise("%s cannot be sorted, as it is not an array", describe(in, d, sizeof d));
        return raise("Cannot index %s with number", jv_kind_name(in.kind));
    }
    int r = keyed(in, f, env, &keys, &items);
    if (r) return r;
    size_t n = jv_array_len(items);
    if (id == B_MIN_BY || id == B_MAX_BY) {
        if (n == 0) {
            *out = jv_null();
        } else {
            size_t best = 0;
            for (size_t i = 1; i < n; i++) {
                int c = jv_cmp(jv_array_get(keys, i), jv_array_get(keys, best));
                if (id == B_MIN_BY ? c < 0 : c >= 0) best = i;
            }
            *out = jv_copy(jv_array_get(items, best));
        }
        jv_free(keys);
        jv_free(items);
        return R_OK;
    }
    size_t *idx = sorted_order(keys);
    jv res = jv_array(), group = jv_null();
    for (size_t i = 0; i < n; i++) {
        jv item = jv_copy(jv_array_get(items, idx[i]));
        int same = i > 0 && jv_equal(jv_array_get(keys, idx[i]), jv_array_get(keys, idx[i - 1]));
        if (id == B_SORT_BY) {
            res = jv_array_append(res, item);
        } else if (id == B_UNIQUE_BY) {
            if (!same) res = jv_array_append(res, item);
            else jv_free(item);
        } else { /* group_by */
            if (!same && i > 0) {
                res = jv_array_append(res, group);
                group = jv_null();
            }
            if (group.kind == JV_NULL) group = jv_array();
            group = jv_array_append(group, item);
        }
    }
    if (group.kind != JV_NULL) res = jv_array_append(res, group);
    free(idx);
    jv_free(keys);
    jv_free(items);
    *out = res;
    return R_OK;
}

static int flatten(jv in, double depth, jv *out, int level) {
    if (level > JQ_MAX_DEPTH) return raise("recursion too deep (the sandbox's stack limit)");
    jv res = jv_array();
    for (size_t i = 0; i < jv_array_len(in); i++) {
        jv x = jv_array_get(in, i);
        if (x.kind == JV_ARRAY && depth > 0) {
            jv sub;
            int r = flatten(x, depth - 1, &sub, level + 1);
            if (r) {
                jv_free(res);
                return r;
            }
            for (size_t j = 0; j < jv_array_len(sub); j++) res = jv_array_append(res, jv_copy(jv_array_get(sub, j)));
            jv_free(sub);
        } else {
            res = jv_array_append(res, jv_copy(x));
        }
    }
    *out = res;
    return R_OK;
}

static int value_call(struct args_ctx *c);

/* combinations: one element from each of lists[i..], after those chosen (consumed). */
static int combinations(jv lists, size_t i, jv chosen, struct emit *k) {
    if (i == jv_array_len(lists)) return emit(k, chosen);
    jv list = jv_array_get(lists, i);
    if (list.kind != JV_ARRAY && list.kind != JV_OBJECT) {
        char d[80];
        jv_free(chosen);
        return raise("Cannot iterate over %s", describe(list, d, sizeof d));
    }
    size_t n = list.kind == JV_ARRAY ? jv_array_len(list) : list.u.o->len;
    for (size_t j = 0; j < n; j++) {
        jv x = list.kind == JV_ARRAY ? jv_array_get(list, j) : list.u.o->vals[j];
        int r = combinations(lists, i + 1, jv_array_append(jv_copy(chosen), jv_copy(x)), k);
        if (r) {
            jv_free(chosen);
            return r;
        }
    }
    jv_free(chosen);
    return R_OK;
}

/* Math of one number. */
static int math1(int id, jv in, jv *out) {
    if (in.kind != JV_NUMBER) return type_error(in, "number required");
    double x = in.u.num, y = 0;
    switch (id) {
    case B_FLOOR: y = floor(x); break;
    case B_CEIL: y = ceil(x); break;
    case B_ROUND: y = round(x); break;
    case B_SQRT: y = sqrt(x); break;
    case B_FABS: y = fabs(x); break;
    case B_LOG: y = log(x); break;
    case B_LOG2: y = log2(x); break;
    case B_LOG10: y = log10(x); break;
    case B_EXP: y = exp(x); break;
    case B_EXP2: y = exp2(x); break;
    case B_EXP10: y = pow(10, x); break;
    }
    *out = jv_number(y);
    return R_OK;
}

static int tonumber(jv in, jv *out) {
    if (in.kind == JV_NUMBER) {
        *out = jv_copy(in);
        return R_OK;
    }
    if (in.kind == JV_STRING) {
        const char *s = jv_str(in);
        char *end;
        /* a JSON number and nothing else: no blanks, no hex, no nan */
        int ok = jv_strlen(in) > 0 && strchr("-0123456789", s[0]) != NULL &&
                 strpbrk(s, "xXnNiI \t\n") == NULL;
        double d = ok ? strtod(s, &end) : 0;
        if (ok && *end == '\0') {
            *out = jv_number(d);
            return R_OK;
        }
    }
    return type_error(in, "cannot be parsed as a number");
}

static int string_of(jv v) { return v.kind == JV_STRING; }

/* Builtins whose arguments are all values (or that take none). */
static int value_call(struct args_ctx *c) {
    int id = c->n->ival;
    jv in = c->in, a = c->vals[0], b = c->vals[1];
    struct emit *k = c->k;
    jv out;
    int r;
    char d[80];
    switch (id) {
    case B_NOT: return emit(k, jv_bool(!jv_truthy(in)));
    case B_LENGTH:
        switch (in.kind) {
        case JV_NULL: return emit(k, jv_number(0));
        case JV_NUMBER: return emit(k, jv_number(fabs(in.u.num)));
        case JV_STRING: return emit(k, jv_number((double)jv_utf8_length(in)));
        case JV_ARRAY: return emit(k, jv_number((double)jv_array_len(in)));
        case JV_OBJECT: return emit(k, jv_number((double)in.u.o->len));
        default: return type_error(in, "has no length");
        }
    case B_UTF8LEN:
        if (!string_of(in)) return type_error(in, "only strings have UTF-8 byte length");
        return emit(k, jv_number((double)jv_strlen(in)));
    case B_KEYS:
    case B_KEYS_UNSORTED:
        r = keys_of(in, id == B_KEYS, &out);
        return r ? r : emit(k, out);
    case B_HAS:
        if (in.kind == JV_OBJECT && a.kind == JV_STRING)
            return emit(k, jv_bool(jv_object_get(in, jv_str(a), jv_strlen(a)) != NULL));
        if (in.kind == JV_ARRAY && a.kind == JV_NUMBER)
            return emit(k, jv_bool(a.u.num >= 0 && a.u.num < (double)jv_array_len(in)));
        if (in.kind == JV_NULL && (a.kind == JV_STRING || a.kind == JV_NUMBER))
            return emit(k, jv_bool(0)); /* as libjq 1.8: null has no keys */
        return raise("Cannot check whether %s has a %s key", jv_kind_name(in.kind), jv_kind_name(a.kind));
    case B_IN: {
        struct args_ctx swapped = *c;
        swapped.in = a;
        swapped.vals[0] = in;
        struct jq_node has = *c->n;
        has.ival = B_HAS;
        swapped.n = &has;
        return value_call(&swapped);
    }
    case B_CONTAINS:
    case B_INSIDE: {
        int yes;
        r = id == B_CONTAINS ? contains(in, a, &yes) : contains(a, in, &yes);
        return r ? r : emit(k, jv_bool(yes));
    }
    case B_RANGE1:
    case B_RANGE2:
    case B_RANGE3: {
        double from = id == B_RANGE1 ? 0 : a.u.num, upto = id == B_RANGE1 ? a.u.num : b.u.num;
        double by = id == B_RANGE3 ? c->vals[2].u.num : 1;
        jv bad = id == B_RANGE1 ? a : a.kind != JV_NUMBER ? a : b;
        if (a.kind != JV_NUMBER || (id != B_RANGE1 && b.kind != JV_NUMBER) ||
            (id == B_RANGE3 && c->vals[2].kind != JV_NUMBER))
            return raise("Range bounds must be numeric (%s)", describe(bad, d, sizeof d));
        if (by > 0) {
            for (double x = from; x < upto; x += by)
                if ((r = emit(k, jv_number(x)))) return r;
        } else if (by < 0) {
            for (double x = from; x > upto; x += by)
                if ((r = emit(k, jv_number(x)))) return r;
        }
        return R_OK;
    }
    case B_FLOOR: case B_CEIL: case B_ROUND: case B_SQRT: case B_FABS: case B_LOG: case B_LOG2:
    case B_LOG10: case B_EXP: case B_EXP2: case B_EXP10:
        r = math1(id, in, &out);
        return r ? r : emit(k, out);
    case B_ABS:
        if (in.kind != JV_NUMBER) return type_error(in, "has no absolute value");
        return emit(k, in.u.num < 0 ? jv_number(-in.u.num) : jv_copy(in));
    case B_POW:
        if (a.kind != JV_NUMBER || b.kind != JV_NUMBER) return type_error(a.kind != JV_NUMBER ? a : b, "number required");
        return emit(k, jv_number(pow(a.u.num, b.u.num)));
    case B_TOSTRING: return emit(k, tostring(jv_copy(in)));
    case B_TONUMBER:
        r = tonumber(in, &out);
        return r ? r : emit(k, out);
    case B_TYPE: return emit(k, jv_string(jv_kind_name(in.kind)));
    case B_INFINITE: return emit(k, jv_number(INFINITY));
    case B_NAN: return emit(k, jv_number(NAN));
    case B_ISINFINITE:
    case B_ISNAN:
    case B_ISNORMAL:
        if (in.kind != JV_NUMBER) return type_error(in, "number required");
        return emit(k, jv_bool(id == B_ISINFINITE ? isinf(in.u.num) : id == B_ISNAN ? isnan(in.u.num) : isnormal(in.u.num)));
    case B_SORT:
    case B_UNIQUE:
        if (in.kind != JV_ARRAY) return type_error(in, "cannot be sorted, as it is not an array");
        out = jv_unshare_array(jv_copy(in));
        jv_sort_array(out.u.a->items, out.u.a->len);
        if (id == B_UNIQUE) {
            size_t w = 0;
            for (size_t i = 0; i < out.u.a->len; i++) {
                if (w > 0 && jv_equal(out.u.a->items[w - 1], out.u.a->items[i])) jv_free(out.u.a->items[i]);
                else out.u.a->items[w++] = out.u.a->items[i];
            }
            out.u.a->len = w;
        }
        return emit(k, out);
    case B_MIN:
    case B_MAX: {
        if (in.kind != JV_ARRAY) return raise("Cannot index %s with number", jv_kind_name(in.kind));
        if (jv_array_len(in) == 0) return emit(k, jv_null());
        size_t best = 0;
        for (size_t i = 1; i < jv_array_len(in); i++) {
            int cmp = jv_cmp(jv_array_get(in, i), jv_array_get(in, best));
            if (id == B_MIN ? cmp < 0 : cmp >= 0) best = i;
        }
        return emit(k, jv_copy(jv_array_get(in, best)));
    }
    case B_REVERSE:
        if (in.kind == JV_NULL) return emit(k, jv_array());
        if (in.kind == JV_STRING) {
            jv res = jv_string_n(NULL, 0);
            const char *p = jv_str(in), *end = p + jv_strlen(in), *q = end;
            while (q > p) {
                const char *s = q - 1;
                while (s > p && ((unsigned char)*s & 0xC0) == 0x80) s--;
                res = jv_string_append(res, s, (size_t)(q - s));
                q = s;
            }
            return emit(k, res);
        }
        if (in.kind != JV_ARRAY) return raise("Cannot index %s with number", jv_kind_name(in.kind));
        out = jv_array();
        for (size_t i = jv_array_len(in); i-- > 0;) out = jv_array_append(out, jv_copy(jv_array_get(in, i)));
        return emit(k, out);
    case B_INDICES:
    case B_INDEX:
    case B_RINDEX: {
        jv found;
        if (in.kind == JV_NULL) return emit(k, jv_null());
        if (in.kind == JV_STRING && a.kind == JV_STRING) {
            found = jv_array();
            size_t la = jv_strlen(in), lb = jv_strlen(a);
            for (size_t i = 0; lb && i + lb <= la; i++)
                if (memcmp(jv_str(in) + i, jv_str(a), lb) == 0)
                    found = jv_array_append(found, jv_number((double)byte_to_cp(jv_str(in), i)));
        } else if (in.kind == JV_ARRAY && a.kind == JV_ARRAY) {
            r = index_value(in, a, &found);
            if (r) return r;
        } else if (in.kind == JV_ARRAY) {
            jv one = jv_array_append(jv_array(), jv_copy(a));
            r = index_value(in, one, &found);
            jv_free(one);
            if (r) return r;
        } else {
            return raise("Cannot determine indices of %s in %s", jv_kind_name(a.kind), jv_kind_name(in.kind));
        }
        if (id == B_INDICES) return emit(k, found);
        size_t n = jv_array_len(found);
        out = n == 0 ? jv_null() : jv_copy(jv_array_get(found, id == B_INDEX ? 0 : n - 1));
        jv_free(found);
        return emit(k, out);
    }
    case B_STARTSWITH:
    case B_ENDSWITH: {
        if (!string_of(in) || !string_of(a))
            return raise("%s() requires string inputs", id == B_STARTSWITH ? "startswith" : "endswith");
        size_t la = jv_strlen(in), lb = jv_strlen(a);
        int yes = lb <= la && memcmp(jv_str(in) + (id == B_STARTSWITH ? 0 : la - lb), jv_str(a), lb) == 0;
        return emit(k, jv_bool(yes));
    }
    case B_LTRIMSTR:
    case B_RTRIMSTR: {
        if (!string_of(in) || !string_of(a)) return emit(k, jv_copy(in));
        size_t la = jv_strlen(in), lb = jv_strlen(a);
        if (lb > la) return emit(k, jv_copy(in));
        if (id == B_LTRIMSTR && memcmp(jv_str(in), jv_str(a), lb) == 0)
            return emit(k, jv_string_n(jv_str(in) + lb, la - lb));
        if (id == B_RTRIMSTR && memcmp(jv_str(in) + la - lb, jv_str(a), lb) == 0)
            return emit(k, jv_string_n(jv_str(in), la - lb));
        return emit(k, jv_copy(in));
    }
    case B_TRIM:
    case B_LTRIM:
    case B_RTRIM: {
        if (!string_of(in)) return raise("trim input must be a string");
        const char *s = jv_str(in), *e = s + jv_strlen(in);
        if (id != B_RTRIM)
            while (s < e && strchr(" \t\n\r\f\v", *s)) s++;
        if (id != B_LTRIM)
            while (e > s && strchr(" \t\n\r\f\v", e[-1])) e--;
        return emit(k, jv_string_n(s, (size_t)(e - s)));
    }
    case B_EXPLODE: {
        if (!string_of(in)) return raise("explode input must be a string");
        out = jv_array();
        const char *p = jv_str(in), *end = p + jv_strlen(in);
        while (p < end) out = jv_array_append(out, jv_number(jv_utf8_next(&p, end)));
        return emit(k, out);
    }
    case B_IMPLODE: {
        if (in.kind != JV_ARRAY) return raise("implode input must be an array");
        out = jv_string_n(NULL, 0);
        for (size_t i = 0; i < jv_array_len(in); i++) {
            jv x = jv_array_get(in, i);
            if (x.kind != JV_NUMBER) {
                jv_free(out);
                return raise("Unicode codepoint must be numeric");
            }
            jv_put_utf8(&out, (unsigned)x.u.num);
        }
        return emit(k, out);
    }
    case B_SPLIT1:
        if (!string_of(in) || !string_of(a)) return raise("split input and separator must be strings");
        return emit(k, split_string(in, a));
    case B_JOIN: {
        if (in.kind != JV_ARRAY) return raise("Cannot iterate over %s", describe(in, d, sizeof d));
        out = jv_string_n(NULL, 0);
        for (size_t i = 0; i < jv_array_len(in); i++) {
            jv x = jv_array_get(in, i);
            if (i) {
                if (!string_of(a)) {
                    jv_free(out);
                    return type_error2(out, a, "cannot be added");
                }
                out = jv_string_append(out, jv_str(a), jv_strlen(a));
            }
            if (x.kind == JV_NULL) continue;
            if (x.kind == JV_ARRAY || x.kind == JV_OBJECT) {
                jv_free(out);
                return raise("Cannot join with %s", jv_kind_name(x.kind));
            }
            jv t = tostring(jv_copy(x));
            out = jv_string_append(out, jv_str(t), jv_strlen(t));
            jv_free(t);
        }
        return emit(k, out);
    }
    case B_ASCII_DOWNCASE:
    case B_ASCII_UPCASE: {
        if (!string_of(in))
            return raise("%s input must be a string", id == B_ASCII_DOWNCASE ? "ascii_downcase" : "ascii_upcase");
        out = jv_string_n(jv_str(in), jv_strlen(in));
        for (size_t i = 0; i < jv_strlen(out); i++) {
            char ch = out.u.s->data[i];
            if (id == B_ASCII_DOWNCASE && ch >= 'A' && ch <= 'Z') out.u.s->data[i] = (char)(ch + 32);
            if (id == B_ASCII_UPCASE && ch >= 'a' && ch <= 'z') out.u.s->data[i] = (char)(ch - 32);
        }
        return emit(k, out);
    }
    case B_ENV: return emit(k, jv_copy(R.cfg->env));
    case B_TRANSPOSE: {
        if (in.kind != JV_ARRAY) return raise("Cannot iterate over %s", describe(in, d, sizeof d));
        size_t width = 0;
        for (size_t i = 0; i < jv_array_len(in); i++) {
            jv row = jv_array_get(in, i);
            if (row.kind != JV_ARRAY) return raise("Cannot index %s with number", jv_kind_name(row.kind));
            if (jv_array_len(row) > width) width = jv_array_len(row);
        }
        out = jv_array();
        for (size_t j = 0; j < width; j++) {
            jv col = jv_array();
            for (size_t i = 0; i < jv_array_len(in); i++) {
                jv row = jv_array_get(in, i);
                col = jv_array_append(col, j < jv_array_len(row) ? jv_copy(jv_array_get(row, j)) : jv_null());
            }
            out = jv_array_append(out, col);
        }
        return emit(k, out);
    }
    case B_FIRST:
    case B_LAST: {
        jv key = jv_number(id == B_FIRST ? 0 : -1);
        r = index_value(in, key, &out);
        return r ? r : emit(k, out);
    }
    case B_NTH1: /* nth(n) is .[n] */
        r = index_value(in, a, &out);
        return r ? r : emit(k, out);
    case B_TOJSON: return emit(k, jv_tojson(in));
    case B_FROMJSON: {
        if (!string_of(in)) return type_error(in, "only strings can be parsed");
        char msg[200];
        if (!jv_parse_text(jv_str(in), jv_strlen(in), &out, msg, sizeof msg))
            return raise("%s (while parsing '%s')", msg, jv_str(in));
        return emit(k, out);
    }
    case B_GETPATH:
        if (a.kind != JV_ARRAY) return raise("Path must be specified as an array");
        r = getpath(in, a, &out);
        return r ? r : emit(k, out);
    case B_SETPATH:
        if (a.kind != JV_ARRAY) return raise("Path must be specified as an array");
        r = setpath_from(jv_copy(in), a, 0, jv_copy(b), &out);
        return r ? r : emit(k, out);
    case B_DELPATHS:
        if (a.kind != JV_ARRAY) return raise("Paths must be specified as an array");
        r = delpaths(jv_copy(in), a, &out);
        return r ? r : emit(k, out);
    case B_TO_ENTRIES: {
        jv ks;
        r = keys_of(in, 0, &ks);
        if (r) return r;
        out = jv_array();
        for (size_t i = 0; i < jv_array_len(ks); i++) {
            jv key = jv_array_get(ks, i), val;
            index_value(in, key, &val);
            jv e = jv_object();
            e = jv_object_set(e, jv_string("key"), jv_copy(key));
            e = jv_object_set(e, jv_string("value"), val);
            out = jv_array_append(out, e);
        }
        jv_free(ks);
        return emit(k, out);
    }
    case B_FROM_ENTRIES: {
        if (in.kind != JV_ARRAY && in.kind != JV_OBJECT) return raise("Cannot iterate over %s", describe(in, d, sizeof d));
        out = jv_object();
        size_t n = in.kind == JV_ARRAY ? jv_array_len(in) : in.u.o->len;
        for (size_t i = 0; i < n; i++) {
            jv e = in.kind == JV_ARRAY ? jv_array_get(in, i) : in.u.o->vals[i];
            jv key = jv_null(), val = jv_null();
            r = index_value(e, jv_string("key"), &key);
            if (!r && !jv_truthy(key)) {
                jv_free(key);
                key = jv_null();
                jv name = jv_string("name");
                r = index_value(e, name, &key);
                jv_free(name);
            }
            if (!r) {
                jv vk = jv_string("value");
                r = index_value(e, vk, &val);
                jv_free(vk);
            }
            if (!r && key.kind != JV_STRING) r = raise("Cannot use %s as object key", describe(key, d, sizeof d));
            if (r) {
                jv_free(key);
                jv_free(val);
                jv_free(out);
                return r;
            }
            out = jv_object_set(out, key, val);
        }
        return emit(k, out);
    }
    case B_ERROR0: return raise_value(jv_copy(in));
    case B_ERROR1: return raise_value(jv_copy(a));
    case B_NULL: return emit(k, jv_null());
    case B_TRUE: return emit(k, jv_bool(1));
    case B_FALSE: return emit(k, jv_bool(0));
    case B_VALUES: return in.kind != JV_NULL ? emit(k, jv_copy(in)) : R_OK;
    case B_ARRAYS: return in.kind == JV_ARRAY ? emit(k, jv_copy(in)) : R_OK;
    case B_OBJECTS: return in.kind == JV_OBJECT ? emit(k, jv_copy(in)) : R_OK;
    case B_ITERABLES: return in.kind >= JV_ARRAY ? emit(k, jv_copy(in)) : R_OK;
    case B_BOOLEANS: return in.kind == JV_TRUE || in.kind == JV_FALSE ? emit(k, jv_copy(in)) : R_OK;
    case B_NUMBERS: return in.kind == JV_NUMBER ? emit(k, jv_copy(in)) : R_OK;
    case B_STRINGS: return in.kind == JV_STRING ? emit(k, jv_copy(in)) : R_OK;
    case B_NULLS: return in.kind == JV_NULL ? emit(k, jv_copy(in)) : R_OK;
    case B_SCALARS: return in.kind < JV_ARRAY ? emit(k, jv_copy(in)) : R_OK;
    case B_FLATTEN0:
    case B_FLATTEN1: {
        double depth = id == B_FLATTEN0 ? 1e9 : a.kind == JV_NUMBER ? a.u.num : -1;
        if (id == B_FLATTEN1 && a.kind != JV_NUMBER) return raise("flatten depth must not be negative");
        if (depth < 0) return raise("flatten depth must not be negative");
        if (in.kind == JV_OBJECT) { /* jq's flatten reduces over .[]: an object's values */
            jv vals = jv_array();
            for (size_t i = 0; i < in.u.o->len; i++) vals = jv_array_append(vals, jv_copy(in.u.o->vals[i]));
            r = flatten(vals, depth, &out, 0);
            jv_free(vals);
            return r ? r : emit(k, out);
        }
        if (in.kind != JV_ARRAY) return raise("Cannot iterate over %s", describe(in, d, sizeof d));
        r = flatten(in, depth, &out, 0);
        return r ? r : emit(k, out);
    }
    case B_HALT:
        R.halt_status = 0;
        return R_HALT;
    case B_HALT_ERROR0:
    case B_HALT_ERROR1: {
        if (id == B_HALT_ERROR1 && a.kind != JV_NUMBER) return raise("halt_error/1: number required");
        if (in.kind == JV_STRING) fwrite(jv_str(in), 1, jv_strlen(in), stderr);
        else {
            jv t = jv_tojson(in);
            fprintf(stderr, "%s\n", jv_str(t));
            jv_free(t);
        }
        R.halt_status = id == B_HALT_ERROR1 ? (int)a.u.num : 5;
        return R_HALT;
    }
    case B_DEBUG:
    case B_DEBUG1: {
        jv t = jv_tojson(id == B_DEBUG ? in : a);
        fprintf(stderr, "[\"DEBUG:\",%s]\n", jv_str(t));
        jv_free(t);
        return emit(k, jv_copy(in));
    }
    case B_STDERR: {
        jv t = jv_tojson(in);
        fputs(jv_str(t), stderr);
        jv_free(t);
        return emit(k, jv_copy(in));
    }
    case B_INPUT_FILENAME: {
        const char *name = R.cfg->filename ? R.cfg->filename(R.cfg->input_ctx) : NULL;
        return emit(k, name ? jv_string(name) : jv_null());
    }
    case B_COMBINATIONS:
    case B_COMBINATIONS_N: {
        jv lists = jv_copy(in);
        if (id == B_COMBINATIONS_N) { /* combinations(n): n copies of the input */
            if (a.kind != JV_NUMBER) {
                jv_free(lists);
                return raise("Range bounds must be numeric");
            }
            jv_free(lists);
            lists = jv_array();
            for (double i = 0; i < a.u.num; i++) lists = jv_array_append(lists, jv_copy(in));
        }
        if (lists.kind != JV_ARRAY) {
            r = raise("Cannot index %s with number", jv_kind_name(lists.kind));
            jv_free(lists);
            return r;
        }
        r = combinations(lists, 0, jv_array(), k);
        jv_free(lists);
        return r;
    }
    case B_TOARRAY: return emit(k, in.kind == JV_ARRAY ? jv_copy(in) : jv_array_append(jv_array(), jv_copy(in)));
    case B_SPLIT2: {
        int sid = B_SPLITS;
        struct args_ctx rc = *c;
        jv parts = jv_array();
        struct collect_k col = {{collect_fn}, parts};
        rc.k = &col.base;
        rc.extra = &sid;
        r = regex_call(&rc);
        if (r) {
            jv_free(col.items);
            return r;
        }
        return emit(k, col.items);
    }
    }
    return raise("builtin not implemented");
}

/* Builtins taking filters: evaluated here with access to the nodes. */
struct select_ctx {
    jv in;
    struct emit *k;
};

static int select_fn(void *ctx, jv v) {
    struct select_ctx *s = ctx;
    int t = jv_truthy(v);
    jv_free(v);
    return t ? emit(s->k, jv_copy(s->in)) : R_OK;
}

struct limit_k {
    struct emit base;
    struct emit *k;
    double left;
    const void *token;
    int mode; /* 0 limit, 1 last, 2 nth, 3 any/all probe */
    jv last;
    int have;
};

static int limit_fn(struct emit *self, jv v) {
    struct limit_k *l = (struct limit_k *)self;
    if (l->mode == 1) {
        if (l->have) jv_free(l->last);
        l->last = v;
        l->have = 1;
        return R_OK;
    }
    if (l->mode == 2) {
        if (l->left-- > 0) {
            jv_free(v);
            return R_OK;
        }
        l->last = v;
        l->have = 1;
        R.brk = l->token;
        return R_BREAK;
    }
    int r = emit(l->k, v);
    if (r) return r;
    if (--l->left <= 0) {
        R.brk = l->token;
        return R_BREAK;
    }
    return R_OK;
}

struct anyall_k {
    struct emit base;
    int want;
    int hit;
    const void *token;
};

static int anyall_fn(struct emit *self, jv v) {
    struct anyall_k *a = (struct anyall_k *)self;
    int t = jv_truthy(v);
    jv_free(v);
    if (t == a->want) {
        a->hit = 1;
        R.brk = a->token;
        return R_BREAK;
    }
    return R_OK;
}

struct anyall_gen {
    struct jq_node *cond;
    struct env *env;
    struct anyall_k *probe;
};

static int anyall_item(void *ctx, jv v) {
    struct anyall_gen *g = ctx;
    int r = eval(g->cond, v, g->env, &g->probe->base);
    jv_free(v);
    return r;
}

struct recurse_ctx {
    struct jq_node *f, *cond;
    struct env *env;
    struct emit *k;
    int depth;
};

static int recurse_value(void *ctx, jv v);

static int recurse_emit(struct recurse_ctx *c, jv v) {
    int r = emit(c->k, jv_copy(v));
    if (r) {
        jv_free(v);
        return r;
    }
    if (++c->depth > MAX_EVAL_DEPTH) {
        jv_free(v);
        return raise("recursion too deep (the sandbox's stack limit)");
    }
    if (c->f == NULL) {
        struct fn_k fk = {{fn_fn}, recurse_value, c};
        if (v.kind == JV_ARRAY || v.kind == JV_OBJECT) r = iterate(v, &fk.base);
    } else {
        r = eval_each(c->f, v, c->env, recurse_value, c);
    }
    c->depth--;
    jv_free(v);
    return r;
}

struct cond_ctx {
    struct recurse_ctx *c;
    jv v;
    int yes;
};

static int cond_fn(void *ctx, jv t) {
    struct cond_ctx *cc = ctx;
    if (jv_truthy(t)) cc->yes = 1;
    jv_free(t);
    return R_OK;
}

static int recurse_value(void *ctx, jv v) {
    struct recurse_ctx *c = ctx;
    if (c->cond) {
        /* recurse(f; cond) is recurse(f | select(cond)) */
        struct cond_ctx cc = {c, v, 0};
        int r = eval_each(c->cond, v, c->env, cond_fn, &cc);
        if (r || !cc.yes) {
            jv_free(v);
            return r;
        }
    }
    return recurse_emit(c, v);
}

struct loop_ctx {
    struct jq_node *cond, *update;
    struct env *env;
    struct emit *k;
    int id, depth;
};

static int loop_value(void *ctx, jv v);

static int loop_step(struct loop_ctx *c, jv v) {
    if (++c->depth > MAX_EVAL_DEPTH) {
        c->depth--;
        jv_free(v);
        return raise("recursion too deep (the sandbox's stack limit)");
    }
    int r = eval_each(c->update, v, c->env, loop_value, c);
    c->depth--;
    jv_free(v);
    return r;
}

struct truth_ctx {
    struct loop_ctx *c;
    jv v;
};

static int loop_truth(void *ctx, jv t) {
    struct truth_ctx *tc = ctx;
    struct loop_ctx *c = tc->c;
    int yes = jv_truthy(t);
    jv_free(t);
    if (c->id == B_UNTIL) {
        if (yes) return emit(c->k, jv_copy(tc->v));
        return loop_step(c, jv_copy(tc->v));
    }
    /* while */
    if (!yes) return R_OK;
    int r = emit(c->k, jv_copy(tc->v));
    if (r) return r;
    return loop_step(c, jv_copy(tc->v));
}

static int loop_value(void *ctx, jv v) {
    struct loop_ctx *c = ctx;
    if (c->id == B_REPEAT) { /* jq 1.7's repeat(f): ., (f | repeat(f)) */
        int r = emit(c->k, jv_copy(v));
        if (r) {
            jv_free(v);
            return r;
        }
        return loop_step(c, v);
    }
    struct truth_ctx tc = {c, v};
    int r = eval_each(c->cond, v, c->env, loop_truth, &tc);
    jv_free(v);
    return r;
}

static int walk(jv v, struct jq_node *f, struct env *env, struct emit *k, int depth);

struct walk_collect {
    struct emit base;
    jv out;
    int have;
};

static int walk_collect_fn(struct emit *self, jv v) {
    struct walk_collect *w = (struct walk_collect *)self;
    if (!w->have) {
        w->out = v;
        w->have = 1;
    } else {
        jv_free(v);
    }
    return R_OK;
}

static int walk(jv v, struct jq_node *f, struct env *env, struct emit *k, int depth) {
    if (depth > JQ_MAX_DEPTH) return raise("recursion too deep (the sandbox's stack limit)");
    jv rebuilt;
    if (v.kind == JV_ARRAY) {
        rebuilt = jv_array();
        for (size_t i = 0; i < jv_array_len(v); i++) {
            struct walk_collect w = {{walk_collect_fn}, jv_null(), 0};
            int r = walk(jv_array_get(v, i), f, env, &w.base, depth + 1);
            if (r) {
                jv_free(rebuilt);
                return r;
            }
            if (w.have) rebuilt = jv_array_append(rebuilt, w.out);
        }
    } else if (v.kind == JV_OBJECT) {
        rebuilt = jv_object();
        for (size_t i = 0; i < v.u.o->len; i++) {
            struct walk_collect w = {{walk_collect_fn}, jv_null(), 0};
            int r = walk(v.u.o->vals[i], f, env, &w.base, depth + 1);
            if (r) {
                jv_free(rebuilt);
                return r;
            }
            if (w.have) rebuilt = jv_object_set(rebuilt, jv_copy(v.u.o->keys[i]), w.out);
        }
    } else {
        rebuilt = jv_copy(v);
    }
    int r = eval(f, rebuilt, env, k);
    jv_free(rebuilt);
    return r;
}

struct paths_ctx {
    struct path_emit base;
    struct jq_node *f;
    struct env *env;
    struct emit *k;
    int mode; /* 0 path(f), 1 paths, 2 paths(f), 3 leaf_paths */
};

static int paths_fn(struct path_emit *self, jv path, jv value) {
    struct paths_ctx *p = (struct paths_ctx *)self;
    if (p->mode == 1 || p->mode == 2 || p->mode == 3) {
        if (jv_array_len(path) == 0) {
            jv_free(path);
            jv_free(value);
            return R_OK;
        }
        if (p->mode >= 2) {
            int yes = 0;
            if (p->mode == 3) {
                yes = value.kind < JV_ARRAY;
            } else {
                struct cond_ctx cc = {NULL, value, 0};
                int r = eval_each(p->f, value, p->env, cond_fn, &cc);
                if (r) {
                    jv_free(path);
                    jv_free(value);
                    return r;
                }
                yes = cc.yes;
            }
            if (!yes) {
                jv_free(path);
                jv_free(value);
                return R_OK;
            }
        }
    }
    jv_free(value);
    return emit(p->k, path);
}

struct in_ctx {
    jv needle;
    int found;
    const void *token;
};

static int in_fn(void *ctx, jv v) {
    struct in_ctx *c = ctx;
    int eq = jv_equal(v, c->needle);
    jv_free(v);
    if (eq) {
        c->found = 1;
        R.brk = c->token;
        return R_BREAK;
    }
    return R_OK;
}

struct in2_ctx {
    struct jq_node *set;
    jv in;
    struct env *env;
    int found;
};

static int in2_fn(void *ctx, jv v) {
    struct in2_ctx *c = ctx;
    struct in_ctx ic = {v, 0, c};
    int r = eval_each(c->set, c->in, c->env, in_fn, &ic);
    jv_free(v);
    if (r == R_BREAK && R.brk == c) r = R_OK;
    if (r) return r;
    if (ic.found) {
        c->found = 1;
        R.brk = &c->found;
        return R_BREAK;
    }
    return R_OK;
}

struct pick_ctx {
    jv in, out;
};

static int pick_fn(struct path_emit *self, jv path, jv value);

struct pick_emit {
    struct path_emit base;
    struct pick_ctx *c;
};

static int pick_fn(struct path_emit *self, jv path, jv value) {
    struct pick_emit *p = (struct pick_emit *)self;
    jv_free(value);
    jv old;
    int r = getpath(p->c->in, path, &old);
    if (!r) r = setpath_from(p->c->out, path, 0, old, &p->c->out);
    jv_free(path);
    return r;
}

struct nth_ctx {
    struct jq_node *n;
    jv in;
    struct env *env;
    struct emit *k;
    int id;
};

static int nth_count(void *ctx, jv count);
static int sub_regex(void *ctx, jv re);
static int sub_flags(void *ctx, jv flags);

static int eval_call(struct jq_node *n, jv in, struct env *env, struct emit *k) {
    int id = n->ival;
    struct jq_node **a = n->args;
    int r;
    jv out;
    switch (id) {
    case B_EMPTY: return R_OK;
    case B_SELECT: {
        struct select_ctx s = {in, k};
        return eval_each(a[0], in, env, select_fn, &s);
    }
    case B_MAP: {
        if (in.kind != JV_ARRAY && in.kind != JV_OBJECT) {
            char d[80];
            return raise("Cannot iterate over %s", describe(in, d, sizeof d));
        }
        struct collect_k col = {{collect_fn}, jv_array()};
        struct then_k t = {{then_fn}, a[0], env, &col.base};
        r = iterate(in, &t.base);
        if (r) {
            jv_free(col.items);
            return r;
        }
        return emit(k, col.items);
    }
    case B_MAP_VALUES:
    case B_WITH_ENTRIES:
    case B_ADD:
    case B_ADD_F: {
        if (id == B_MAP_VALUES) {
            struct jq_node iter = {0};
            iter.op = N_ITER;
            iter.val = jv_null();
            r = modify(&iter, in, env, a[0], jv_null(), '|', &out);
            if (r == R_BREAK && R.brk == &once_token) r = R_OK;
            return r ? r : emit(k, out);
        }
        if (id == B_WITH_ENTRIES) {
            struct jq_node te = {0};
            te.op = N_CALL;
            te.ival = B_TO_ENTRIES;
            te.val = jv_null();
            struct args_ctx c = {&te, in, env, {jv_null(), jv_null(), jv_null()}, value_call, NULL, 0, NULL};
            struct collect_k col = {{collect_fn}, jv_array()};
            c.k = &col.base;
            r = value_call(&c);
            if (r) {
                jv_free(col.items);
                return r;
            }
            jv entries = jv_copy(jv_array_get(col.items, 0));
            jv_free(col.items);
            struct collect_k mapped = {{collect_fn}, jv_array()};
            struct then_k t = {{then_fn}, a[0], env, &mapped.base};
            r = iterate(entries, &t.base);
            jv_free(entries);
            if (r) {
                jv_free(mapped.items);
                return r;
            }
            te.ival = B_FROM_ENTRIES;
            c.in = mapped.items;
            c.k = k;
            r = value_call(&c);
            jv_free(mapped.items);
            return r;
        }
        /* add and add(f): reduce (.[] or f) as $x (null; . + $x) */
        jv items;
        if (id == B_ADD) {
            if (in.kind != JV_ARRAY && in.kind != JV_OBJECT) {
                char d[80];
                return raise("Cannot iterate over %s", describe(in, d, sizeof d));
            }
            struct collect_k col = {{collect_fn}, jv_array()};
            iterate(in, &col.base);
            items = col.items;
        } else {
            r = collect(a[0], in, env, &items);
            if (r) return r;
        }
        jv acc = jv_null();
        for (size_t i = 0; i < jv_array_len(items); i++) {
            jv next;
            r = arith('+', acc, jv_array_get(items, i), &next);
            jv_free(acc);
            if (r) {
                jv_free(items);
                return r;
            }
            acc = next;
        }
        jv_free(items);
        return emit(k, acc);
    }
    case B_ANY:
    case B_ALL:
    case B_ANY_F:
    case B_ALL_F:
    case B_ANY_GC:
    case B_ALL_GC: {
        int want = id == B_ANY || id == B_ANY_F || id == B_ANY_GC;
        struct anyall_k probe = {{anyall_fn}, want, 0, NULL};
        probe.token = &probe;
        struct jq_node *cond = id == B_ANY_GC || id == B_ALL_GC ? a[1] : id == B_ANY_F || id == B_ALL_F ? a[0] : NULL;
        if (id == B_ANY_GC || id == B_ALL_GC) {
            struct anyall_gen g = {cond, env, &probe};
            r = eval_each(a[0], in, env, anyall_item, &g);
        } else {
            if (in.kind != JV_ARRAY && in.kind != JV_OBJECT) {
                char d[80];
                return raise("Cannot iterate over %s", describe(in, d, sizeof d));
            }
            if (cond) {
                struct then_k t = {{then_fn}, cond, env, &probe.base};
                r = iterate(in, &t.base);
            } else {
                r = iterate(in, &probe.base);
            }
        }
        if (r == R_BREAK && R.brk == probe.token) r = R_OK;
        if (r) return r;
        return emit(k, jv_bool(probe.hit ? want : !want));
    }
    case B_SORT_BY:
    case B_GROUP_BY:
    case B_UNIQUE_BY:
    case B_MIN_BY:
    case B_MAX_BY:
        r = by_call(id, in, a[0], env, &out);
        return r ? r : emit(k, out);
    case B_RECURSE:
    case B_RECURSE_F:
    case B_RECURSE_FC: {
        struct recurse_ctx c = {id == B_RECURSE ? NULL : a[0], id == B_RECURSE_FC ? a[1] : NULL, env, k, 0};
        return recurse_emit(&c, jv_copy(in));
    }
    case B_FIRST_F:
    case B_LAST_F: {
        struct limit_k l = {{limit_fn}, k, 1, NULL, id == B_LAST_F ? 1 : 0, jv_null(), 0};
        l.token = &l;
        r = eval(a[0], in, env, &l.base);
        if (r == R_BREAK && R.brk == &l) r = R_OK;
        if (id == B_LAST_F) {
            if (r) {
                if (l.have) jv_free(l.last);
                return r;
            }
            return l.have ? emit(k, l.last) : R_OK;
        }
        return r;
    }
    case B_NTH2:
    case B_LIMIT: {
        struct nth_ctx c = {n, in, env, k, id};
        return eval_each(a[0], in, env, nth_count, &c);
    }
    case B_UNTIL:
    case B_WHILE:
    case B_REPEAT: {
        struct loop_ctx c = {id == B_REPEAT ? NULL : a[0], id == B_REPEAT ? a[0] : a[1], env, k, id, 0};
        return loop_value(&c, jv_copy(in));
    }
    case B_INPUT:
    case B_INPUTS: {
        for (;;) {
            jv v;
            int got = R.cfg->next_input ? R.cfg->next_input(R.cfg->input_ctx, &v) : 0;
            if (got < 0) {
                R.halt_status = 2;
                return R_HALT;
            }
            if (got == 0) return id == B_INPUT ? raise("No more inputs") : R_OK;
            r = emit(k, v);
            if (r || id == B_INPUT) return r;
        }
    }
    case B_TEST:
    case B_MATCH:
    case B_CAPTURE:
    case B_SCAN:
    case B_SPLITS:
        return with_args(n, in, env, k, regex_call, &id);
    case B_SUB:
    case B_GSUB: {
        int global = id == B_GSUB;
        struct jq_node fake = *n;
        struct jq_node *args[3] = {n->args[0], n->args[1], n->nargs > 2 ? n->args[2] : NULL};
        fake.args = args;
        /* only the regex and the flags are values: evaluate those, keep args[1] a filter */
        struct args_ctx c = {&fake, in, env, {jv_null(), jv_null(), jv_null()}, sub_call, k, 0, &global};
        return eval_each(n->args[0], in, env, sub_regex, &c);
    }
    case B_PATH:
    case B_PATHS:
    case B_PATHS_F:
    case B_LEAF_PATHS: {
        struct paths_ctx p = {{paths_fn}, id == B_PATHS_F ? a[0] : NULL, env, k,
                              id == B_PATH ? 0 : id == B_PATHS ? 1 : id == B_PATHS_F ? 2 : 3};
        struct jq_node rec = {0};
        rec.op = N_RECURSE;
        rec.val = jv_null();
        jv root = jv_array();
        r = eval_path(id == B_PATH ? a[0] : &rec, root, in, in, env, &p.base);
        jv_free(root);
        return r;
    }
    case B_DEL: {
        jv paths;
        r = all_paths(a[0], in, env, &paths);
        if (r) return r;
        r = delpaths(jv_copy(in), paths, &out);
        jv_free(paths);
        return r ? r : emit(k, out);
    }
    case B_PICK: {
        struct pick_ctx c = {in, jv_null()};
        struct pick_emit pe = {{pick_fn}, &c};
        jv root = jv_array();
        r = eval_path(a[0], root, in, in, env, &pe.base);
        jv_free(root);
        if (r) {
            jv_free(c.out);
            return r;
        }
        return emit(k, c.out);
    }
    case B_WALK: return walk(in, a[0], env, k, 0);
    case B_ISEMPTY: {
        struct anyall_k probe = {{anyall_fn}, 0, 0, NULL};
        probe.token = &probe;
        struct limit_k l = {{limit_fn}, NULL, 0, &probe, 2, jv_null(), 0};
        l.token = &probe;
        r = eval(a[0], in, env, &l.base);
        if (l.have) jv_free(l.last);
        if (r == R_BREAK && R.brk == &probe) return emit(k, jv_bool(0));
        if (r) return r;
        return emit(k, jv_bool(1));
    }
    case B_IN1:
    case B_IN2: {
        struct in2_ctx c = {id == B_IN1 ? a[0] : a[1], in, env, 0};
        if (id == B_IN1) r = in2_fn(&c, jv_copy(in));
        else r = eval_each(a[0], in, env, in2_fn, &c);
        if (r == R_BREAK && R.brk == &c.found) r = R_OK;
        if (r) return r;
        return emit(k, jv_bool(c.found));
    }
    default: return with_args(n, in, env, k, value_call, NULL);
    }
}

static int sub_regex(void *ctx, jv re) {
    struct args_ctx *c = ctx;
    c->vals[0] = re;
    int r;
    if (c->n->nargs > 2) {
        r = eval_each(c->n->args[2], c->in, c->env, sub_flags, c);
    } else {
        r = sub_call(c);
    }
    jv_free(re);
    c->vals[0] = jv_null();
    return r;
}

static int sub_flags(void *ctx, jv flags) {
    struct args_ctx *c = ctx;
    c->vals[2] = flags;
    int r = sub_call(c);
    jv_free(flags);
    c->vals[2] = jv_null();
    return r;
}

static int nth_count(void *ctx, jv count) {
    struct nth_ctx *c = ctx;
    if (count.kind != JV_NUMBER) {
        char d[80];
        int r = raise("Invalid limit: %s", describe(count, d, sizeof d));
        jv_free(count);
        return r;
    }
    double n = count.u.num;
    jv_free(count);
    if (c->id == B_LIMIT) {
        if (n < 0) return raise("limit doesn't support negative count");
        if (n == 0) return R_OK;
        struct limit_k l = {{limit_fn}, c->k, n, NULL, 0, jv_null(), 0};
        l.token = &l;
        int r = eval(c->n->args[1], c->in, c->env, &l.base);
        if (r == R_BREAK && R.brk == &l) r = R_OK;
        return r;
    }
    if (n < 0) return raise("Out of bounds negative array index");
    struct limit_k l = {{limit_fn}, c->k, n, NULL, 2, jv_null(), 0};
    l.token = &l;
    int r = eval(c->n->args[1], c->in, c->env, &l.base);
    if (r == R_BREAK && R.brk == &l) r = R_OK;
    if (r) {
        if (l.have) jv_free(l.last);
        return r;
    }
    return l.have ? emit(c->k, l.last) : R_OK;
}

/* ---- eval ---------------------------------------------------------------------------------- */

struct field_k {
    struct emit base;
    jv key;
    struct emit *k;
};

static int field_fn(struct emit *self, jv v) {
    struct field_k *f = (struct field_k *)self;
    jv out;
    int r = index_value(v, f->key, &out);
    jv_free(v);
    return r ? r : emit(f->k, out);
}

struct index_ctx {
    struct jq_node *n;
    jv in;
    struct env *env;
    struct emit *k;
    jv from;
};

struct index_target {
    struct emit base;
    jv key, from, to;
    int slice;
    struct emit *k;
};

static int index_target_fn(struct emit *self, jv v) {
    struct index_target *t = (struct index_target *)self;
    jv out;
    int r = t->slice ? jq_slice(v, t->from, t->to, &out) : index_value(v, t->key, &out);
    jv_free(v);
    return r ? r : emit(t->k, out);
}

static int index_apply(struct index_ctx *c, jv key, jv to, int slice) {
    struct index_target t = {{index_target_fn}, key, c->from, to, slice, c->k};
    if (c->n->a == NULL) return index_target_fn(&t.base, jv_copy(c->in));
    return eval(c->n->a, c->in, c->env, &t.base);
}

static int index_key(void *ctx, jv key) {
    int r = index_apply(ctx, key, jv_null(), 0);
    jv_free(key);
    return r;
}

static int slice_to(void *ctx, jv to) {
    int r = index_apply(ctx, jv_null(), to, 1);
    jv_free(to);
    return r;
}

static int slice_from(void *ctx, jv from) {
    struct index_ctx *c = ctx;
    struct index_ctx inner = *c;
    inner.from = from;
    int r = c->n->c ? eval_each(c->n->c, c->in, c->env, slice_to, &inner) : slice_to(&inner, jv_null());
    jv_free(from);
    return r;
}

struct iter_k {
    struct emit base;
    struct emit *k;
};

static int iter_fn(struct emit *self, jv v) {
    struct iter_k *i = (struct iter_k *)self;
    int r = iterate(v, i->k);
    jv_free(v);
    return r;
}

struct neg_k {
    struct emit base;
    struct emit *k;
};

static int neg_fn(struct emit *self, jv v) {
    struct neg_k *n = (struct neg_k *)self;
    if (v.kind != JV_NUMBER) {
        int r = type_error(v, "cannot be negated");
        jv_free(v);
        return r;
    }
    double d = -v.u.num;
    return emit(n->k, jv_number(d));
}

static int recurse_all(jv v, struct emit *k, int depth) {
    if (depth > JQ_MAX_DEPTH) return raise("recursion too deep (the sandbox's stack limit)");
    int r = emit(k, jv_copy(v));
    if (r) return r;
    if (v.kind == JV_ARRAY) {
        jv hold = jv_copy(v);
        for (size_t i = 0; i < jv_array_len(hold) && !r; i++) r = recurse_all(jv_array_get(hold, i), k, depth + 1);
        jv_free(hold);
    } else if (v.kind == JV_OBJECT) {
        jv hold = jv_copy(v);
        for (size_t i = 0; i < hold.u.o->len && !r; i++) r = recurse_all(hold.u.o->vals[i], k, depth + 1);
        jv_free(hold);
    }
    return r;
}

static int eval(struct jq_node *n, jv in, struct env *env, struct emit *k) {
    int r = R_OK;
    if (++R.depth > MAX_EVAL_DEPTH || stack_exhausted()) {
        R.depth--;
        return raise("recursion too deep (the sandbox's stack limit)");
    }
    switch (n->op) {
    case N_IDENTITY: r = emit(k, jv_copy(in)); break;
    case N_RECURSE: r = recurse_all(in, k, 0); break;
    case N_LITERAL: r = emit(k, jv_copy(n->val)); break;
    case N_FIELD: {
        struct field_k f = {{field_fn}, jv_string(n->name), k};
        r = n->a ? eval(n->a, in, env, &f.base) : field_fn(&f.base, jv_copy(in));
        jv_free(f.key);
        break;
    }
    case N_INDEX: {
        struct index_ctx c = {n, in, env, k, jv_null()};
        r = eval_each(n->b, in, env, index_key, &c);
        break;
    }
    case N_SLICE: {
        struct index_ctx c = {n, in, env, k, jv_null()};
        r = n->b ? eval_each(n->b, in, env, slice_from, &c) : slice_from(&c, jv_null());
        break;
    }
    case N_ITER: {
        struct iter_k i = {{iter_fn}, k};
        r = n->a ? eval(n->a, in, env, &i.base) : iterate(in, k);
        break;
    }
    case N_INTERP: {
        jv chosen[n->nargs > 0 ? n->nargs : 1];
        struct interp s = {n, in, env, k, chosen};
        int last = n->nargs - 2; /* the last expression part */
        r = last >= 1 ? interp_from(&s, last) : interp_from(&s, -1);
        break;
    }
    case N_FORMAT: {
        jv out;
        r = apply_format(n->name, in, &out);
        if (!r) r = emit(k, out);
        break;
    }
    case N_PIPE: {
        struct then_k t = {{then_fn}, n->b, env, k};
        r = eval(n->a, in, env, &t.base);
        break;
    }
    case N_COMMA:
        r = eval(n->a, in, env, k);
        if (!r) r = eval(n->b, in, env, k);
        break;
    case N_NEG: {
        struct neg_k ng = {{neg_fn}, k};
        r = eval(n->a, in, env, &ng.base);
        break;
    }
    case N_ARITH:
    case N_CMP: {
        struct binop_outer o = {{binop_outer_fn}, n, in, env, k};
        r = eval(n->b, in, env, &o.base);
        break;
    }
    case N_AND:
    case N_OR: {
        struct logic_k l = {{logic_fn}, n, in, env, k, 0};
        r = eval(n->a, in, env, &l.base);
        break;
    }
    case N_ALT: {
        struct guard_k g = {{guard_fn}, k, 0, 0};
        struct alt_k a = {{alt_fn}, &g};
        /* an error on the left propagates, as in jq (it is not a false value) */
        r = eval(n->a, in, env, &a.base);
        if (!r && !g.emitted) r = eval(n->b, in, env, k);
        break;
    }
    case N_TRY: {
        struct guard_k g = {{guard_fn}, k, 0, 0};
        r = eval(n->a, in, env, &g.base);
        if (r == R_ERR && !g.downstream) {
            jv err = R.err;
            R.err = jv_null();
            if (n->b) {
                r = eval(n->b, err, env, k);
            } else {
                r = R_OK;
            }
            jv_free(err);
        }
        break;
    }
    case N_IF: {
        struct if_k i = {{if_fn}, n, in, env, k};
        r = eval(n->a, in, env, &i.base);
        break;
    }
    case N_REDUCE:
    case N_FOREACH: {
        struct fold_init_ctx c = {n, in, env, k};
        r = eval_each(n->b, in, env, fold_init, &c);
        break;
    }
    case N_AS: {
        struct as_ctx c = {n, in, env, k};
        r = eval_each(n->a, in, env, as_item, &c);
        break;
    }
    case N_VAR: {
        jv v;
        if (!lookup_var(n->name, env, &v)) r = raise("$%s is not defined", n->name);
        else r = emit(k, v);
        break;
    }
    case N_CALL: r = eval_call(n, in, env, k); break;
    case N_ARRAY: {
        jv items;
        if (n->a == NULL) {
            r = emit(k, jv_array());
            break;
        }
        r = collect(n->a, in, env, &items);
        if (!r) r = emit(k, items);
        break;
    }
    case N_OBJECT: {
        struct obj_build b = {n, in, env, k};
        r = build_object(&b, 0, jv_object());
        break;
    }
    case N_LABEL: {
        char token;
        struct env e = {n->name, jv_null(), &token, env};
        r = eval(n->a, in, &e, k);
        if (r == R_BREAK && R.brk == &token) r = R_OK;
        break;
    }
    case N_BREAK: {
        struct env *e = env;
        while (e && !(e->label && strcmp(e->name, n->name) == 0)) e = e->up;
        if (e == NULL) {
            r = raise("$*label-%s is not defined", n->name);
            break;
        }
        R.brk = e->label;
        r = R_BREAK;
        break;
    }
    case N_ASSIGN: r = eval_assign(n, in, env, k); break;
    }
    R.depth--;
    return r;
}

struct top_k {
    struct emit base;
    jq_output_fn out;
    void *ctx;
};

static int top_fn(struct emit *self, jv v) {
    struct top_k *t = (struct top_k *)self;
    return t->out(t->ctx, v) ? R_HALT : R_OK;
}

int jq_execute(struct jq_program *prog, jv in, const struct jq_run_config *cfg,
               jq_output_fn out, void *ctx) {
    R.cfg = cfg;
    R.err = jv_null();
    R.depth = 0;
    char base;
    R.stack_base = &base;
    R.halt_status = -1;
    struct top_k t = {{top_fn}, out, ctx};
    int r = eval(prog->root, in, NULL, &t.base);
    jv_free(in);
    if (r == R_OK) return 0;
    if (r == R_HALT) return R.halt_status < 0 ? 0 : 100 + R.halt_status;
    const char *where = cfg->where ? cfg->where(cfg->input_ctx) : "<unknown>";
    if (r == R_BREAK) {
        fprintf(stderr, "jq: error (at %s): break\n", where);
        return 5;
    }
    jv e = R.err;
    R.err = jv_null();
    if (e.kind == JV_STRING) {
        fprintf(stderr, "jq: error (at %s): %s\n", where, jv_str(e));
    } else {
        jv t2 = jv_tojson(e);
        fprintf(stderr, "jq: error (at %s) (not a string): %s\n", where, jv_str(t2));
        jv_free(t2);
    }
    jv_free(e);
    return 5;
}
