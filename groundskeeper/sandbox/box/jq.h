/* jq: what cmd_jq.c, jq_json.c, jq_parse.c and jq_eval.c share. Values are reference-counted
 * JSON values passed by value (a kind plus a number or a pointer to shared storage); a value
 * with one reference is changed in place, a shared one is copied first. Objects keep their
 * keys in insertion order, as jq prints them.
 */
#ifndef JQ_H
#define JQ_H

#include <stddef.h>
#include <stdio.h>

/* In jq's total order: null < false < true < numbers < strings < arrays < objects. */
enum jv_kind { JV_NULL, JV_FALSE, JV_TRUE, JV_NUMBER, JV_STRING, JV_ARRAY, JV_OBJECT };

struct jv_str;
struct jv_arr;
struct jv_obj;

typedef struct {
    unsigned char kind;
    union {
        double num;
        struct jv_str *s;
        struct jv_arr *a;
        struct jv_obj *o;
    } u;
} jv;

struct jv_str {
    int refs;
    size_t len, cap; /* cap: bytes of data allocated */
    char data[]; /* NUL-terminated as well */
};

struct jv_arr {
    int refs;
    size_t len, cap;
    jv *items;
};

struct jv_obj {
    int refs;
    size_t len, cap;
    jv *keys; /* strings */
    jv *vals;
    size_t *index; /* open-addressing table of slot+1 (0 empty), once the object is large */
    size_t index_cap;
};

/* The deepest nesting the JSON reader accepts and the printer and comparisons walk. */
#define JQ_MAX_DEPTH 2000

void jq_oom(void) __attribute__((noreturn));
void *jq_alloc(size_t n);

jv jv_null(void);
jv jv_bool(int b);
jv jv_number(double d);
jv jv_string_n(const char *s, size_t len);
jv jv_string(const char *s);
jv jv_array(void);
jv jv_object(void);
jv jv_copy(jv v);
void jv_free(jv v);

const char *jv_kind_name(int kind);
int jv_truthy(jv v);
const char *jv_str(jv v); /* a string's bytes */
size_t jv_strlen(jv v);
size_t jv_utf8_length(jv v); /* code points */

jv jv_array_append(jv a, jv item);             /* consumes both */
jv jv_array_set(jv a, size_t i, jv item);      /* consumes both; fills with nulls */
jv jv_array_get(jv a, size_t i);               /* borrowed: no copy */
size_t jv_array_len(jv a);
jv jv_object_set(jv o, jv key, jv val);        /* consumes all three */
jv *jv_object_get(jv o, const char *key, size_t len); /* borrowed pointer or NULL */
jv jv_object_delete(jv o, const char *key, size_t len); /* consumes o */
jv jv_string_append(jv s, const char *p, size_t n); /* consumes s */
jv jv_unshare_array(jv a);
jv jv_unshare_object(jv o);

int jv_cmp(jv a, jv b);
int jv_equal(jv a, jv b);
int jv_cmp_ptr(const void *a, const void *b); /* for qsort over jv[] */
void jv_sort_array(jv *items, size_t n);      /* stable, jq's order */

/* Printing. */
struct jq_dump {
    int indent;   /* spaces; 0 compact */
    int tab;      /* indent with a tab */
    int sort_keys;
    int ascii;
};
/* Append the JSON text of v to *buf (a jv string), as jq prints it. */
jv jv_dump(jv buf, jv v, const struct jq_dump *how, int level);
jv jv_tojson(jv v); /* compact text, new string */
void jv_number_text(double d, char out[32]);

/* Reading JSON: a reader over one buffer yields one value after another. */
struct jq_reader {
    const char *p, *end, *start;
    size_t line;
    const char *name;
};
/* 1 with *out set, 0 at the end of input, -1 on a parse error (message in msg). */
int jv_read(struct jq_reader *r, jv *out, char *msg, size_t msgsz);
/* The whole text as one JSON value; 0 with msg set when it is not exactly one. */
int jv_parse_text(const char *s, size_t len, jv *out, char *msg, size_t msgsz);
/* UTF-8 with invalid sequences replaced by U+FFFD, as jq reads strings. */
jv jv_string_sanitized(const char *s, size_t len);
void jv_put_utf8(jv *s, unsigned cp);
/* The next code point of a valid UTF-8 string at *p (advanced). */
unsigned jv_utf8_next(const char **p, const char *end);

/* Programs. */
struct jq_node;
struct jq_program {
    struct jq_node *root;
};
/* 0 and a program, or -1 with a compile error message in msg. */
int jq_compile(const char *text, jv globals, struct jq_program *prog, char *msg, size_t msgsz);

/* Evaluation. */
struct jq_run;
typedef int (*jq_output_fn)(void *ctx, jv v); /* consumes v; nonzero stops the run */
struct jq_run_config {
    jv named_args; /* object: $name -> value (borrowed) */
    jv env;        /* object for $ENV and env (borrowed) */
    /* the inputs `input`/`inputs` read: 1 and *out, 0 at the end, -1 on an error already
     * reported by the callback (it ends the run with status 2) */
    int (*next_input)(void *ctx, jv *out);
    void *input_ctx;
    /* "FILE:LINE" of the current input, for error messages */
    const char *(*where)(void *ctx);
    /* the current input's file name, NULL for stdin (input_filename) */
    const char *(*filename)(void *ctx);
};
/* Run PROG on IN (consumed), each output to EMIT. 0 when it ended normally; 5 after an
 * uncaught error (message written to stderr with cfg->where); another exit status from
 * halt/halt_error, as 100+status. */
int jq_execute(struct jq_program *prog, jv in, const struct jq_run_config *cfg,
               jq_output_fn emit, void *ctx);

#endif
