/* awk's interpreter: walks the syntax tree over the input records. It owns the values
 * (numbers, strings, strnums), variables and associative arrays, the record and its fields,
 * and the reading of the input files (getline included). The conversions, regexes, printf
 * and sub/gsub live in awk_builtin.c; parsing in awk_parse.c.
 * Output goes to stdout (or stderr for print > "/dev/stderr"): awk never opens a file for
 * writing. Endless loops are ended by the sandbox's fuel and deadline, not here.
 */
#include <errno.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "awk.h"
#include "box.h"

/* Recursion deeper than this is an error, not a crash: wasmtime traps ("call stack
 * exhausted") at a few thousand nested wasm calls. Every eval and exec counts one. */
#define MAX_CALL_DEPTH 200
#define MAX_EVAL_DEPTH 1200

enum var_kind { K_UNKNOWN, K_SCALAR, K_ARRAY };

struct var {
    enum var_kind kind;
    struct awk_cell cell;
    struct awk_array *arr;
    int borrowed; /* arr belongs to a caller (an array argument) */
};

/* How a statement ended: normally, or jumping somewhere. */
enum flow { F_NORMAL, F_BREAK, F_CONTINUE, F_NEXT, F_NEXTFILE, F_EXIT, F_RETURN };

struct reader {
    FILE *f;
    char *buf;
    size_t start, end, cap;
    int eof;
};

static struct awk_program *prog;
static struct var *globals;
static int globals_room;
static struct var *frame;       /* the running function's parameters and locals */
static int call_depth;
static struct awk_cell retval;  /* what `return` gave */
static enum flow pending;       /* next/exit inside a function, carried out to the action */
static int exit_status;
static double rand_seed;                        /* what srand() returns next */
static unsigned long long rand_state = 0x330E;  /* the seed 0, as srand(0) sets it */

/* The record: $0's text, and its fields once split. */
static struct awk_buf record;
static int record_valid = 1;    /* $0 is up to date (no field assigned since) */
static struct awk_cell *fields; /* fields[1..nf] */
static int nf, fields_cap;
static int fields_valid;
static char *record_fs;         /* FS when the record was read: a new FS applies from the next */

/* The input: ARGV's operands in turn, or stdin. */
static struct reader input;
static int input_open;
static int argv_next = 1;
static int read_any_file;

/* ---- memory and errors ---- */

void awk_fatal(const char *fmt, ...) {
    va_list ap;
    fflush(stdout);
    fprintf(stderr, "awk: ");
    va_start(ap, fmt);
    vfprintf(stderr, fmt, ap);
    va_end(ap);
    fputc('\n', stderr);
    exit(2);
}

void *awk_alloc(size_t n) {
    void *p = malloc(n ? n : 1);
    if (p == NULL) awk_fatal("out of memory");
    return p;
}

char *awk_strndup(const char *s, size_t n) {
    char *d = awk_alloc(n + 1);
    memcpy(d, s, n);
    d[n] = '\0';
    return d;
}

char *awk_strdup(const char *s) { return awk_strndup(s, strlen(s)); }

void awk_buf_add(struct awk_buf *b, const char *p, size_t n) {
    if (b->len + n + 1 > b->cap) {
        size_t cap = b->cap ? b->cap : 64;
        while (b->len + n + 1 > cap) cap *= 2;
        b->data = realloc(b->data, cap);
        if (b->data == NULL) awk_fatal("out of memory");
        b->cap = cap;
    }
    memcpy(b->data + b->len, p, n);
    b->len += n;
    b->data[b->len] = '\0';
}

void awk_buf_addc(struct awk_buf *b, char c) { awk_buf_add(b, &c, 1); }
void awk_buf_adds(struct awk_buf *b, const char *s) { awk_buf_add(b, s, strlen(s)); }

/* ---- cells ---- */

struct awk_cell awk_num_cell(double d) {
    struct awk_cell c = {C_NUM, d, NULL};
    return c;
}

struct awk_cell awk_str_cell(char *owned) {
    struct awk_cell c = {C_STR, 0, owned};
    return c;
}

struct awk_cell awk_strnum_cell(char *owned) {
    struct awk_cell c = {C_STR, 0, owned};
    if (awk_looks_numeric(owned, &c.num)) c.type = C_STRNUM;
    return c;
}

void awk_cell_free(struct awk_cell *c) {
    free(c->str);
    c->str = NULL;
    c->type = C_UNSET;
}

static struct awk_cell copy_cell(const struct awk_cell *c) {
    struct awk_cell d = *c;
    if (c->str != NULL) d.str = awk_strdup(c->str);
    return d;
}

double awk_to_num(const struct awk_cell *c) {
    switch (c->type) {
    case C_NUM:
    case C_STRNUM: return c->num;
    case C_STR: return awk_str_to_num(c->str);
    default: return 0;
    }
}

static const char *format_var(int which) {
    const struct awk_cell *c = &globals[which].cell;
    return c->type == C_STR || c->type == C_STRNUM ? c->str : "%.6g";
}

const char *awk_to_str(const struct awk_cell *c, char *buf) {
    if (c->type == C_UNSET) return "";
    if (c->type != C_NUM) return c->str;
    awk_format_num(c->num, format_var(V_CONVFMT), buf);
    return buf;
}

const char *awk_to_out_str(const struct awk_cell *c, char *buf) {
    if (c->type != C_NUM) return awk_to_str(c, buf);
    awk_format_num(c->num, format_var(V_OFMT), buf);
    return buf;
}

static char *str_of(const struct awk_cell *c) {
    char buf[64];
    return awk_strdup(awk_to_str(c, buf));
}

static int truth(const struct awk_cell *c) {
    switch (c->type) {
    case C_NUM:
    case C_STRNUM: return c->num != 0;
    case C_STR: return c->str[0] != '\0';
    default: return 0;
    }
}

/* POSIX: numbers and strnums compare as numbers, anything else as strings. */
static int compare(const struct awk_cell *a, const struct awk_cell *b) {
    if (a->type != C_STR && b->type != C_STR) {
        double x = awk_to_num(a), y = awk_to_num(b);
        return x < y ? -1 : x > y;
    }
    char ba[64], bb[64];
    return strcmp(awk_to_str(a, ba), awk_to_str(b, bb));
}

/* ---- arrays ---- */

static unsigned hash_key(const char *s) {
    unsigned h = 2166136261u;
    for (; *s; s++) h = (h ^ (unsigned char)*s) * 16777619u;
    return h;
}

static struct awk_array *new_array(void) {
    struct awk_array *a = awk_alloc(sizeof *a);
    memset(a, 0, sizeof *a);
    return a;
}

static struct awk_elem *array_find(struct awk_array *a, const char *key, unsigned h) {
    if (a->nbuckets == 0) return NULL;
    for (struct awk_elem *e = a->buckets[h % a->nbuckets]; e != NULL; e = e->chain)
        if (e->hash == h && strcmp(e->key, key) == 0) return e;
    return NULL;
}

static void array_grow(struct awk_array *a) {
    size_t n = a->nbuckets ? a->nbuckets * 4 : 16;
    struct awk_elem **b = calloc(n, sizeof *b);
    if (b == NULL) awk_fatal("out of memory");
    for (struct awk_elem *e = a->first; e != NULL; e = e->next) {
        e->chain = b[e->hash % n];
        b[e->hash % n] = e;
    }
    free(a->buckets);
    a->buckets = b;
    a->nbuckets = n;
}

/* The element KEY of A, created (unset) when missing. */
static struct awk_cell *array_get(struct awk_array *a, const char *key) {
    unsigned h = hash_key(key);
    struct awk_elem *e = array_find(a, key, h);
    if (e != NULL) return &e->val;
    if (a->count + 1 > a->nbuckets) array_grow(a);
    e = awk_alloc(sizeof *e);
    e->key = awk_strdup(key);
    e->hash = h;
    e->val.type = C_UNSET;
    e->val.str = NULL;
    e->val.num = 0;
    e->chain = a->buckets[h % a->nbuckets];
    a->buckets[h % a->nbuckets] = e;
    e->prev = a->last;
    e->next = NULL;
    if (a->last) a->last->next = e;
    else a->first = e;
    a->last = e;
    a->count++;
    return &e->val;
}

static void array_delete(struct awk_array *a, const char *key) {
    unsigned h = hash_key(key);
    struct awk_elem *e = array_find(a, key, h);
    if (e == NULL) return;
    struct awk_elem **link = &a->buckets[h % a->nbuckets];
    while (*link != e) link = &(*link)->chain;
    *link = e->chain;
    if (e->prev) e->prev->next = e->next;
    else a->first = e->next;
    if (e->next) e->next->prev = e->prev;
    else a->last = e->prev;
    a->count--;
    free(e->key);
    awk_cell_free(&e->val);
    free(e);
}

static void array_clear(struct awk_array *a) {
    struct awk_elem *e = a->first;
    while (e != NULL) {
        struct awk_elem *next = e->next;
        free(e->key);
        awk_cell_free(&e->val);
        free(e);
        e = next;
    }
    free(a->buckets);
    memset(a, 0, sizeof *a);
}

/* ---- variables ---- */

static const char *var_name(const struct awk_node *n) {
    return n->kind == N_LOCAL || n->is_local ? "a function parameter" : prog->globals[n->index];
}

static struct var *var_of(const struct awk_node *n) {
    int local = n->kind == N_LOCAL || (n->kind != N_VAR && n->is_local);
    return local ? &frame[n->index] : &globals[n->index];
}

static struct awk_array *array_of(const struct awk_node *n) {
    struct var *v = var_of(n);
    if (v->kind == K_SCALAR) awk_fatal("can't use scalar %s as an array", var_name(n));
    if (v->kind == K_UNKNOWN) {
        v->kind = K_ARRAY;
        v->arr = new_array();
    }
    return v->arr;
}

static struct awk_cell *scalar_of(const struct awk_node *n) {
    struct var *v = var_of(n);
    if (v->kind == K_ARRAY) awk_fatal("can't use array %s in a scalar context", var_name(n));
    v->kind = K_SCALAR;
    return &v->cell;
}

static void set_var_str(int which, const char *s) {
    struct var *v = &globals[which];
    awk_cell_free(&v->cell);
    v->kind = K_SCALAR;
    v->cell = awk_str_cell(awk_strdup(s));
}

static void set_var_num(int which, double d) {
    struct var *v = &globals[which];
    awk_cell_free(&v->cell);
    v->kind = K_SCALAR;
    v->cell = awk_num_cell(d);
}

/* ---- the record and its fields ---- */

static void add_field(void *ctx, const char *s, size_t len) {
    (void)ctx;
    if (nf + 1 >= fields_cap) {
        fields_cap = fields_cap ? fields_cap * 2 : 32;
        fields = realloc(fields, (size_t)fields_cap * sizeof *fields);
        if (fields == NULL) awk_fatal("out of memory");
    }
    fields[++nf] = awk_strnum_cell(awk_strndup(s, len));
}

static int paragraph_mode(void) {
    char buf[64];
    return awk_to_str(&globals[V_RS].cell, buf)[0] == '\0';
}

/* Split S by the field separator FS (RE when given, already compiled), calling ADD for each
 * piece: " " splits at runs of blanks, one other character at each occurrence of it, ""
 * into characters, anything longer is an ERE. In paragraph mode a newline always separates. */
static void split_text(const char *s, const char *fs, const regex_t *re, int paragraph,
                       void (*add)(void *, const char *, size_t), void *ctx) {
    size_t len = strlen(s);
    if (len == 0) return;
    if (re == NULL && strcmp(fs, " ") == 0) {
        const char *p = s;
        for (;;) {
            while (*p == ' ' || *p == '\t' || *p == '\n') p++;
            if (*p == '\0') return;
            const char *start = p;
            while (*p && *p != ' ' && *p != '\t' && *p != '\n') p++;
            add(ctx, start, (size_t)(p - start));
        }
    }
    if (re == NULL && fs[0] == '\0') {
        for (size_t i = 0; i < len; i++) add(ctx, s + i, 1);
        return;
    }
    if (re == NULL && fs[1] == '\0') {
        const char *p = s, *start = s;
        for (;; p++) {
            if (*p == '\0' || *p == fs[0] || (paragraph && *p == '\n')) {
                add(ctx, start, (size_t)(p - start));
                if (*p == '\0') return;
                start = p + 1;
            }
        }
    }
    if (re == NULL) {
        if (paragraph) {
            char *both = awk_alloc(strlen(fs) + 8);
            sprintf(both, "(%s)|\n", fs);
            re = awk_regex(both);
            free(both);
        } else {
            re = awk_regex(fs);
        }
    }
    size_t pos = 0;
    regmatch_t m;
    while (pos <= len) {
        int found = regexec(re, s + pos, 1, &m, pos > 0 ? REG_NOTBOL : 0) == 0;
        /* an empty match separates nothing: look for a real one further on */
        size_t from = pos;
        while (found && m.rm_so == m.rm_eo && from + (size_t)m.rm_so < len) {
            from += (size_t)m.rm_so + 1;
            found = regexec(re, s + from, 1, &m, REG_NOTBOL) == 0;
            if (found) {
                m.rm_so += (regoff_t)(from - pos);
                m.rm_eo += (regoff_t)(from - pos);
            }
        }
        if (!found || m.rm_so == m.rm_eo) break;
        add(ctx, s + pos, (size_t)m.rm_so);
        pos += (size_t)m.rm_eo;
    }
    add(ctx, s + pos, len - pos);
}

static void clear_fields(void) {
    for (int i = 1; i <= nf; i++) awk_cell_free(&fields[i]);
    nf = 0;
}

static void split_record(void) {
    if (fields_valid) return;
    clear_fields();
    split_text(record.data ? record.data : "", record_fs ? record_fs : " ", NULL,
               paragraph_mode(), add_field, NULL);
    fields_valid = 1;
}

/* $0 from the fields joined by OFS, after a field or NF was assigned. */
static void rebuild_record(void) {
    if (record_valid) return;
    char buf[64], nbuf[64];
    const char *ofs = awk_to_str(&globals[V_OFS].cell, buf);
    record.len = 0;
    awk_buf_add(&record, "", 0);
    for (int i = 1; i <= nf; i++) {
        if (i > 1) awk_buf_adds(&record, ofs);
        awk_buf_adds(&record, awk_to_out_str(&fields[i], nbuf));
    }
    record_valid = 1;
}

static void snapshot_fs(void) {
    char buf[64];
    free(record_fs);
    record_fs = awk_strdup(awk_to_str(&globals[V_FS].cell, buf));
}

/* A new $0: from input or assigned. Its fields are split when first asked for. */
static void set_record(const char *s, size_t len) {
    record.len = 0;
    awk_buf_add(&record, s, len);
    record_valid = 1;
    fields_valid = 0;
    snapshot_fs();
}

static void set_nf(int n) {
    split_record();
    if (n < 0) awk_fatal("NF set to a negative value");
    while (nf > n) awk_cell_free(&fields[nf--]);
    while (nf < n) add_field(NULL, "", 0);
    record_valid = 0;
}

static void set_field(int i, struct awk_cell v) {
    if (i == 0) {
        char buf[64];
        const char *s = awk_to_str(&v, buf);
        set_record(s, strlen(s));
        awk_cell_free(&v);
        return;
    }
    split_record();
    while (nf < i) add_field(NULL, "", 0);
    awk_cell_free(&fields[i]);
    fields[i] = v;
    record_valid = 0;
}

static struct awk_cell get_field(int i) {
    if (i == 0) {
        rebuild_record();
        return awk_strnum_cell(awk_strdup(record.data ? record.data : ""));
    }
    split_record();
    if (i > nf) {
        struct awk_cell c = {C_UNSET, 0, NULL};
        return c;
    }
    return copy_cell(&fields[i]);
}

static int field_index(double d) {
    if (d < 0) awk_fatal("negative field index $%g", d);
    if (d > 1e6) awk_fatal("field index $%g is too large", d);
    return (int)d;
}

/* ---- input ---- */

static int fill(struct reader *r) {
    if (r->eof) return 0;
    if (r->start > 0) {
        memmove(r->buf, r->buf + r->start, r->end - r->start);
        r->end -= r->start;
        r->start = 0;
    }
    if (r->cap - r->end < 32768) {
        r->cap = r->cap ? r->cap * 2 : 65536;
        r->buf = realloc(r->buf, r->cap);
        if (r->buf == NULL) awk_fatal("out of memory");
    }
    size_t got = fread(r->buf + r->end, 1, r->cap - r->end - 1, r->f);
    r->end += got;
    r->buf[r->end] = '\0';
    if (got == 0) {
        if (ferror(r->f)) awk_fatal("read error: %s", strerror(errno));
        r->eof = 1;
    }
    return 1;
}

/* The next record of R into OUT by RS (one character, or "" for paragraphs); 0 at the end. */
static int read_record(struct reader *r, struct awk_buf *out) {
    char buf[64];
    const char *rs = awk_to_str(&globals[V_RS].cell, buf);
    out->len = 0;
    awk_buf_add(out, "", 0);
    if (rs[0] != '\0' && rs[1] != '\0')
        awk_fatal("RS longer than one character is not supported in the sandbox (use one "
                  "character, or \"\" for paragraphs)");
    size_t scanned = 0; /* bytes after start already searched */
    if (rs[0] == '\0') {
        for (;;) {
            while (r->start < r->end && r->buf[r->start] == '\n') r->start++;
            if (r->start < r->end) break;
            if (!fill(r)) return 0;
        }
        for (;;) {
            const char *p = r->buf + r->start + scanned;
            const char *stop = r->buf + r->end;
            for (; p + 1 < stop; p++) {
                if (p[0] == '\n' && p[1] == '\n') {
                    awk_buf_add(out, r->buf + r->start, (size_t)(p - (r->buf + r->start)));
                    r->start = (size_t)(p - r->buf) + 2;
                    return 1;
                }
            }
            scanned = r->end - r->start > 0 ? r->end - r->start - 1 : 0;
            if (!fill(r)) {
                size_t n = r->end - r->start;
                while (n > 0 && r->buf[r->start + n - 1] == '\n') n--;
                awk_buf_add(out, r->buf + r->start, n);
                r->start = r->end;
                return 1;
            }
        }
    }
    for (;;) {
        char *p = memchr(r->buf + r->start + scanned, rs[0], r->end - r->start - scanned);
        if (p != NULL) {
            awk_buf_add(out, r->buf + r->start, (size_t)(p - (r->buf + r->start)));
            r->start = (size_t)(p - r->buf) + 1;
            return 1;
        }
        scanned = r->end - r->start;
        if (!fill(r)) {
            if (r->start == r->end) return 0;
            awk_buf_add(out, r->buf + r->start, r->end - r->start);
            r->start = r->end;
            return 1;
        }
    }
}

static void close_input(void) {
    if (input.f != NULL && input.f != stdin) fclose(input.f);
    else if (input.f == stdin) clearerr(stdin);
    free(input.buf);
    memset(&input, 0, sizeof input);
    input_open = 0;
}

/* A command-line operand NAME=VALUE is an assignment, done when it is reached. */
static int is_assignment(const char *arg) {
    const char *eq = strchr(arg, '=');
    if (eq == NULL || eq == arg) return 0;
    if (!(arg[0] == '_' || (arg[0] >= 'a' && arg[0] <= 'z') || (arg[0] >= 'A' && arg[0] <= 'Z')))
        return 0;
    for (const char *p = arg; p < eq; p++)
        if (!(*p == '_' || (*p >= 'a' && *p <= 'z') || (*p >= 'A' && *p <= 'Z') ||
              (*p >= '0' && *p <= '9')))
            return 0;
    return 1;
}

static void assign_operand(const char *arg) {
    const char *eq = strchr(arg, '=');
    char *name = awk_strndup(arg, (size_t)(eq - arg));
    int slot = awk_global(prog, name);
    free(name);
    if (slot >= globals_room) { /* a name only an operand or ARGV mentions */
        globals = realloc(globals, (size_t)(slot + 1) * sizeof *globals);
        if (globals == NULL) awk_fatal("out of memory");
        memset(globals + globals_room, 0, (size_t)(slot + 1 - globals_room) * sizeof *globals);
        globals_room = slot + 1;
    }
    struct var *v = &globals[slot];
    if (v->kind == K_ARRAY) awk_fatal("can't assign to array %s", prog->globals[slot]);
    for (int i = 0; i < prog->nfuncs; i++)
        if (strcmp(prog->funcs[i].name, prog->globals[slot]) == 0)
            awk_fatal("can't assign to function %s", prog->globals[slot]);
    awk_cell_free(&v->cell);
    v->kind = K_SCALAR;
    v->cell = awk_strnum_cell(awk_unescape(eq + 1, strlen(eq + 1)));
    if (slot == V_NF) set_nf((int)awk_to_num(&v->cell));
}

static struct awk_cell argv_elem(int i) {
    char key[32];
    snprintf(key, sizeof key, "%d", i);
    struct awk_array *a = globals[V_ARGV].arr;
    unsigned h = hash_key(key);
    struct awk_elem *e = array_find(a, key, h);
    if (e == NULL) {
        struct awk_cell c = {C_UNSET, 0, NULL};
        return c;
    }
    return copy_cell(&e->val);
}

/* Open the next input operand; 0 when there are no more. */
static int open_next_input(void) {
    int argc = (int)awk_to_num(&globals[V_ARGC].cell);
    while (argv_next < argc) {
        struct awk_cell c = argv_elem(argv_next++);
        char buf[64];
        char *arg = awk_strdup(awk_to_str(&c, buf));
        awk_cell_free(&c);
        if (arg[0] == '\0') {
            free(arg);
            continue;
        }
        if (is_assignment(arg)) {
            assign_operand(arg);
            free(arg);
            continue;
        }
        read_any_file = 1;
        FILE *f = box_open_readable(arg);
        if (f == NULL) {
            fflush(stdout);
            fprintf(stderr, "awk: cannot open %s (%s)\n", arg, strerror(errno));
            exit(2);
        }
        memset(&input, 0, sizeof input);
        input.f = f;
        input_open = 1;
        set_var_str(V_FILENAME, arg);
        set_var_num(V_FNR, 0);
        free(arg);
        return 1;
    }
    if (!read_any_file) {
        read_any_file = 1;
        memset(&input, 0, sizeof input);
        input.f = stdin;
        input_open = 1;
        set_var_num(V_FNR, 0);
        return 1;
    }
    return 0;
}

/* The next record of the input into OUT, counting NR and FNR; 0 at the end of all input. */
static int next_record(struct awk_buf *out) {
    for (;;) {
        if (!input_open && !open_next_input()) return 0;
        if (read_record(&input, out)) {
            set_var_num(V_NR, awk_to_num(&globals[V_NR].cell) + 1);
            set_var_num(V_FNR, awk_to_num(&globals[V_FNR].cell) + 1);
            return 1;
        }
        close_input();
    }
}

/* ---- evaluation ---- */

static struct awk_cell eval(struct awk_node *n);
static enum flow exec(struct awk_node *s);

static const struct awk_cell unset = {C_UNSET, 0, NULL};

/* The array subscript of a list of expressions: joined by SUBSEP. */
static char *subscript_key(struct awk_node *args) {
    if (args->next == NULL) {
        struct awk_cell c = eval(args);
        char *key = str_of(&c);
        awk_cell_free(&c);
        return key;
    }
    struct awk_buf key = {0};
    char buf[64], sbuf[64];
    for (struct awk_node *a = args; a != NULL; a = a->next) {
        struct awk_cell c = eval(a);
        if (a != args) awk_buf_adds(&key, awk_to_str(&globals[V_SUBSEP].cell, sbuf));
        awk_buf_adds(&key, awk_to_str(&c, buf));
        awk_cell_free(&c);
    }
    return key.data;
}

/* Where an lvalue lives: a cell, or a field (written through set_field). */
struct place {
    struct awk_cell *cell;
    int field;      /* >= 0: this field */
    int var;        /* a global's slot (for NF's side effects), or -1 */
};

static struct place locate(struct awk_node *n) {
    struct place pl = {NULL, -1, -1};
    switch (n->kind) {
    case N_VAR:
        pl.cell = scalar_of(n);
        pl.var = n->index;
        if (n->index == V_NF) split_record();
        break;
    case N_LOCAL:
        pl.cell = scalar_of(n);
        break;
    case N_INDEX: {
        char *key = subscript_key(n->args);
        pl.cell = array_get(array_of(n), key);
        free(key);
        break;
    }
    case N_FIELD: {
        struct awk_cell c = eval(n->a);
        pl.field = field_index(awk_to_num(&c));
        awk_cell_free(&c);
        break;
    }
    default:
        awk_fatal("internal: not an lvalue");
    }
    return pl;
}

static struct awk_cell read_place(struct place *pl) {
    if (pl->field >= 0) return get_field(pl->field);
    if (pl->var == V_NF) return awk_num_cell(nf);
    return copy_cell(pl->cell);
}

/* Store V (owned) at PL. */
static void write_place(struct place *pl, struct awk_cell v) {
    if (pl->field >= 0) {
        set_field(pl->field, v);
        return;
    }
    awk_cell_free(pl->cell);
    *pl->cell = v;
    if (pl->var == V_NF) set_nf((int)awk_to_num(pl->cell));
}

static double arith(int op, double x, double y, int line) {
    switch (op) {
    case T_PLUS: case T_ADD_ASSIGN: return x + y;
    case T_MINUS: case T_SUB_ASSIGN: return x - y;
    case T_STAR: case T_MUL_ASSIGN: return x * y;
    case T_SLASH: case T_DIV_ASSIGN:
        if (y == 0) awk_fatal("division by zero at source line %d", line);
        return x / y;
    case T_PERCENT: case T_MOD_ASSIGN:
        if (y == 0) awk_fatal("division by zero in %% at source line %d", line);
        return fmod(x, y);
    default: return pow(x, y);
    }
}

static int regex_matches(struct awk_node *re_node, const char *s) {
    const regex_t *re;
    if (re_node->kind == N_ERE) {
        re = re_node->re;
    } else {
        struct awk_cell c = eval(re_node);
        char buf[64];
        re = awk_regex(awk_to_str(&c, buf));
        awk_cell_free(&c);
    }
    return regexec(re, s, 0, NULL, 0) == 0;
}

static int match_record(const regex_t *re) {
    rebuild_record();
    return regexec(re, record.data ? record.data : "", 0, NULL, 0) == 0;
}

static int is_bare_name(const struct awk_node *n) { return n->kind == N_VAR || n->kind == N_LOCAL; }

static struct awk_cell call_function(struct awk_node *n) {
    if (pending) return unset;
    struct awk_func *f = &prog->funcs[n->index];
    if (n->nargs > f->nparams)
        awk_fatal("function %s called with %d arguments, it takes %d", f->name, n->nargs,
                  f->nparams);
    if (call_depth >= MAX_CALL_DEPTH)
        awk_fatal("function calls nested deeper than %d (at %s)", MAX_CALL_DEPTH, f->name);
    struct var *locals = calloc((size_t)f->nparams + 1, sizeof *locals);
    if (locals == NULL) awk_fatal("out of memory");
    int i = 0;
    for (struct awk_node *a = n->args; a != NULL; a = a->next, i++) {
        struct var *src = is_bare_name(a) ? var_of(a) : NULL;
        if (src != NULL && (src->kind == K_ARRAY ||
                            (src->kind == K_UNKNOWN && f->param_is_array[i]))) {
            locals[i].kind = K_ARRAY;
            locals[i].arr = array_of(a);
            locals[i].borrowed = 1;
        } else {
            locals[i].cell = eval(a);
            locals[i].kind = K_SCALAR;
        }
    }
    struct var *saved = frame;
    frame = locals;
    call_depth++;
    enum flow fl = exec(f->body);
    call_depth--;
    frame = saved;
    for (i = 0; i < f->nparams; i++) {
        awk_cell_free(&locals[i].cell);
        if (locals[i].arr != NULL && !locals[i].borrowed) {
            array_clear(locals[i].arr);
            free(locals[i].arr);
        }
    }
    free(locals);
    if (fl == F_NEXT || fl == F_NEXTFILE || fl == F_EXIT) pending = fl;
    if (fl == F_RETURN) {
        struct awk_cell r = retval;
        retval = unset;
        return r;
    }
    return unset;
}

static struct awk_cell incr(struct awk_node *n, double by, int post) {
    struct place pl = locate(n->a);
    struct awk_cell old = read_place(&pl);
    double d = awk_to_num(&old);
    awk_cell_free(&old);
    write_place(&pl, awk_num_cell(d + by));
    return awk_num_cell(post ? d : d + by);
}

static struct awk_cell assign(struct awk_node *n) {
    struct awk_cell v = eval(n->b);
    struct place pl = locate(n->a);
    if (n->op != T_ASSIGN) {
        struct awk_cell old = read_place(&pl);
        double d = arith(n->op, awk_to_num(&old), awk_to_num(&v), n->line);
        awk_cell_free(&old);
        awk_cell_free(&v);
        v = awk_num_cell(d);
    }
    struct awk_cell result = copy_cell(&v);
    write_place(&pl, v);
    return result;
}

static __attribute__((noinline)) struct awk_cell builtin(struct awk_node *n);

/* getline / getline VAR: the next record of the input. 1, 0 at the end, like awk. */
static struct awk_cell getline_input(struct awk_node *n) {
    struct awk_buf line = {0};
    int got = next_record(&line);
    if (got) {
        if (n->a == NULL) {
            set_record(line.data, line.len);
        } else {
            struct place pl = locate(n->a);
            write_place(&pl, awk_strnum_cell(awk_strndup(line.data, line.len)));
        }
    }
    free(line.data);
    return awk_num_cell(got);
}

static struct awk_cell eval_node(struct awk_node *n);
static int eval_depth;

static struct awk_cell eval(struct awk_node *n) {
    if (++eval_depth > MAX_EVAL_DEPTH)
        awk_fatal("program recursion deeper than %d levels at source line %d", MAX_EVAL_DEPTH,
                  n->line);
    struct awk_cell c = eval_node(n);
    eval_depth--;
    return c;
}

static struct awk_cell eval_node(struct awk_node *n) {
    char ba[64], bb[64];
    switch (n->kind) {
    case N_NUM:
        return awk_num_cell(n->num);
    case N_STR:
        return awk_str_cell(awk_strdup(n->str));
    case N_ERE:
        return awk_num_cell(match_record(n->re));
    case N_GROUP:
        if (n->nargs != 1) awk_fatal("(a, b) is only allowed after print or before in");
        return eval(n->args);
    case N_VAR:
        if (n->index == V_NF) {
            split_record();
            return awk_num_cell(nf);
        }
        return copy_cell(scalar_of(n));
    case N_LOCAL:
        return copy_cell(scalar_of(n));
    case N_FIELD: {
        struct awk_cell c = eval(n->a);
        int i = field_index(awk_to_num(&c));
        awk_cell_free(&c);
        return get_field(i);
    }
    case N_INDEX: {
        char *key = subscript_key(n->args);
        struct awk_cell c = copy_cell(array_get(array_of(n), key));
        free(key);
        return c;
    }
    case N_IN: {
        char *key = subscript_key(n->args);
        struct awk_array *a = array_of(n);
        int found = array_find(a, key, hash_key(key)) != NULL;
        free(key);
        return awk_num_cell(found);
    }
    case N_ASSIGN:
        return assign(n);
    case N_COND: {
        struct awk_cell c = eval(n->a);
        int t = truth(&c);
        awk_cell_free(&c);
        return eval(t ? n->b : n->c);
    }
    case N_AND:
    case N_OR: {
        struct awk_cell c = eval(n->a);
        int t = truth(&c);
        awk_cell_free(&c);
        if (n->kind == N_AND ? !t : t) return awk_num_cell(t);
        c = eval(n->b);
        t = truth(&c);
        awk_cell_free(&c);
        return awk_num_cell(t);
    }
    case N_NOT: {
        struct awk_cell c = eval(n->a);
        int t = truth(&c);
        awk_cell_free(&c);
        return awk_num_cell(!t);
    }
    case N_NEG:
    case N_PLUS: {
        struct awk_cell c = eval(n->a);
        double d = awk_to_num(&c);
        awk_cell_free(&c);
        return awk_num_cell(n->kind == N_NEG ? -d : d);
    }
    case N_BINARY: {
        struct awk_cell a = eval(n->a), b = eval(n->b);
        double d = arith(n->op, awk_to_num(&a), awk_to_num(&b), n->line);
        awk_cell_free(&a);
        awk_cell_free(&b);
        return awk_num_cell(d);
    }
    case N_CMP: {
        struct awk_cell a = eval(n->a), b = eval(n->b);
        int c = compare(&a, &b), r;
        awk_cell_free(&a);
        awk_cell_free(&b);
        switch (n->op) {
        case T_LT: r = c < 0; break;
        case T_LE: r = c <= 0; break;
        case T_GT: r = c > 0; break;
        case T_GE: r = c >= 0; break;
        case T_EQ: r = c == 0; break;
        default: r = c != 0; break;
        }
        return awk_num_cell(r);
    }
    case N_MATCH: {
        struct awk_cell a = eval(n->a);
        char *s = str_of(&a);
        awk_cell_free(&a);
        int r = regex_matches(n->b, s);
        free(s);
        return awk_num_cell(n->op == T_TILDE ? r : !r);
    }
    case N_CONCAT: {
        struct awk_cell a = eval(n->a), b = eval(n->b);
        const char *sa = awk_to_str(&a, ba), *sb = awk_to_str(&b, bb);
        size_t la = strlen(sa), lb = strlen(sb);
        char *s = awk_alloc(la + lb + 1);
        memcpy(s, sa, la);
        memcpy(s + la, sb, lb + 1);
        awk_cell_free(&a);
        awk_cell_free(&b);
        return awk_str_cell(s);
    }
    case N_PRE_INCR: return incr(n, 1, 0);
    case N_PRE_DECR: return incr(n, -1, 0);
    case N_POST_INCR: return incr(n, 1, 1);
    case N_POST_DECR: return incr(n, -1, 1);
    case N_CALL: return call_function(n);
    case N_BUILTIN: return builtin(n);
    case N_GETLINE: return getline_input(n);
    default:
        awk_fatal("internal: unknown expression");
    }
}

/* The regex of a built-in's argument: a /literal/ as it is, any other value as a string. */
static const regex_t *regex_arg(struct awk_node *a) {
    if (a->kind == N_ERE) return a->re;
    struct awk_cell c = eval(a);
    char buf[64];
    const regex_t *re = awk_regex(awk_to_str(&c, buf));
    awk_cell_free(&c);
    return re;
}

/* printf's and sprintf's work: the format and its arguments evaluated, then formatted. The
 * cells live on the heap: this runs inside eval's recursion, where stack is precious. */
static void format_args(struct awk_buf *out, struct awk_node *args, int nargs) {
    struct awk_cell *cells = awk_alloc((size_t)nargs * sizeof *cells);
    int count = 0;
    for (struct awk_node *a = args; a != NULL; a = a->next) cells[count++] = eval(a);
    char *fmt = str_of(&cells[0]);
    awk_sprintf(out, fmt, cells + 1, count - 1);
    free(fmt);
    for (int i = 0; i < count; i++) awk_cell_free(&cells[i]);
    free(cells);
}

static void add_element(void *ctx, const char *s, size_t len) {
    struct awk_array *a = ctx;
    char key[32];
    snprintf(key, sizeof key, "%zu", a->count + 1);
    *array_get(a, key) = awk_strnum_cell(awk_strndup(s, len));
}

static __attribute__((noinline)) struct awk_cell builtin(struct awk_node *n) {
    struct awk_node *a1 = n->args, *a2 = a1 ? a1->next : NULL, *a3 = a2 ? a2->next : NULL;
    char buf[64];
    switch (n->index) {
    case B_LENGTH: {
        if (a1 != NULL && is_bare_name(a1) && var_of(a1)->kind == K_ARRAY)
            return awk_num_cell((double)var_of(a1)->arr->count);
        /* never used yet: 0 either way, and it may still become an array */
        if (a1 != NULL && is_bare_name(a1) && var_of(a1)->kind == K_UNKNOWN)
            return awk_num_cell(0);
        struct awk_cell c = a1 ? eval(a1) : get_field(0);
        double len = (double)strlen(awk_to_str(&c, buf));
        awk_cell_free(&c);
        return awk_num_cell(len);
    }
    case B_SUBSTR: {
        struct awk_cell s = eval(a1), m = eval(a2);
        const char *str = awk_to_str(&s, buf);
        double len = (double)strlen(str);
        /* characters at positions [start, end) counting from 1, rounded as POSIX does */
        double start = round(awk_to_num(&m)), end = len + 1;
        awk_cell_free(&m);
        if (a3 != NULL) {
            struct awk_cell l = eval(a3);
            double count = awk_to_num(&l);
            awk_cell_free(&l);
            end = start + round(count);
            if (isnan(count)) end = start;
        }
        if (isnan(start)) start = end = 1;
        if (start < 1) start = 1;
        if (end > len + 1) end = len + 1;
        char *out = end > start ? awk_strndup(str + (size_t)start - 1, (size_t)(end - start))
                                : awk_strdup("");
        awk_cell_free(&s);
        return awk_str_cell(out);
    }
    case B_INDEX: {
        struct awk_cell s = eval(a1), t = eval(a2);
        char bt[64];
        const char *hay = awk_to_str(&s, buf), *found = strstr(hay, awk_to_str(&t, bt));
        double r = found ? (double)(found - hay) + 1 : 0;
        awk_cell_free(&s);
        awk_cell_free(&t);
        return awk_num_cell(r);
    }
    case B_SPLIT: {
        struct awk_cell s = eval(a1);
        char *text = str_of(&s);
        awk_cell_free(&s);
        const regex_t *re = NULL;
        char *fs = NULL;
        if (a3 != NULL && a3->kind == N_ERE) {
            re = a3->re;
        } else if (a3 != NULL) {
            struct awk_cell c = eval(a3);
            fs = str_of(&c);
            awk_cell_free(&c);
        } else {
            fs = str_of(&globals[V_FS].cell);
        }
        struct awk_array *arr = array_of(a2);
        array_clear(arr);
        split_text(text, fs, re, 0, add_element, arr);
        free(text);
        free(fs);
        return awk_num_cell((double)arr->count);
    }
    case B_SUB:
    case B_GSUB: {
        /* every argument is evaluated before the target is located, and the regex compiled
         * after: nothing between locating and writing can move or free the target */
        char *re_text = NULL;
        if (a1->kind != N_ERE) {
            struct awk_cell c = eval(a1);
            re_text = str_of(&c);
            awk_cell_free(&c);
        }
        struct awk_cell r = eval(a2);
        char *repl = str_of(&r);
        awk_cell_free(&r);
        struct place pl = {NULL, 0, -1};
        if (a3 != NULL) pl = locate(a3);
        struct awk_cell target = read_place(&pl);
        char *text = str_of(&target);
        awk_cell_free(&target);
        const regex_t *re = re_text != NULL ? awk_regex(re_text) : a1->re;
        char *out = NULL;
        int count = awk_substitute(re, repl, text, n->index == B_GSUB, &out);
        if (count > 0) write_place(&pl, awk_str_cell(out));
        free(text);
        free(repl);
        free(re_text);
        return awk_num_cell(count);
    }
    case B_MATCH: {
        struct awk_cell s = eval(a1);
        char *text = str_of(&s);
        awk_cell_free(&s);
        const regex_t *re = regex_arg(a2);
        regmatch_t m;
        double start = 0, length = -1;
        if (regexec(re, text, 1, &m, 0) == 0) {
            start = (double)m.rm_so + 1;
            length = (double)(m.rm_eo - m.rm_so);
        }
        free(text);
        set_var_num(V_RSTART, start);
        set_var_num(V_RLENGTH, length);
        return awk_num_cell(start);
    }
    case B_SPRINTF: {
        struct awk_buf out = {0};
        awk_buf_add(&out, "", 0);
        format_args(&out, n->args, n->nargs);
        return awk_str_cell(out.data);
    }
    case B_TOLOWER:
    case B_TOUPPER: {
        struct awk_cell s = eval(a1);
        char *out = str_of(&s);
        awk_cell_free(&s);
        for (char *p = out; *p; p++) {
            if (n->index == B_TOLOWER && *p >= 'A' && *p <= 'Z') *p = (char)(*p - 'A' + 'a');
            if (n->index == B_TOUPPER && *p >= 'a' && *p <= 'z') *p = (char)(*p - 'a' + 'A');
        }
        return awk_str_cell(out);
    }
    case B_RAND:
        /* a 48-bit linear congruential generator: the same sequence for the same seed */
        rand_state = (rand_state * 0x5DEECE66DULL + 0xB) & ((1ULL << 48) - 1);
        return awk_num_cell((double)rand_state / (double)(1ULL << 48));
    case B_SRAND: {
        double previous = rand_seed;
        if (a1 != NULL) {
            struct awk_cell c = eval(a1);
            rand_seed = awk_to_num(&c);
            awk_cell_free(&c);
        } else {
            rand_seed = (double)time(NULL);
        }
        rand_state = ((unsigned long long)(long long)rand_seed << 16 | 0x330E) & ((1ULL << 48) - 1);
        return awk_num_cell(previous);
    }
    case B_CLOSE: {
        struct awk_cell c = eval(a1);
        awk_cell_free(&c);
        return awk_num_cell(-1); /* nothing is ever opened by name */
    }
    case B_FFLUSH:
        if (a1 != NULL) {
            struct awk_cell c = eval(a1);
            awk_cell_free(&c);
        }
        fflush(stdout);
        return awk_num_cell(0);
    default: {
        struct awk_cell c = eval(a1);
        double x = awk_to_num(&c), r;
        awk_cell_free(&c);
        switch (n->index) {
        case B_INT: r = trunc(x); break;
        case B_SQRT: r = sqrt(x); break;
        case B_EXP: r = exp(x); break;
        case B_LOG: r = log(x); break;
        case B_SIN: r = sin(x); break;
        case B_COS: r = cos(x); break;
        default: {
            struct awk_cell d = eval(a2);
            r = atan2(x, awk_to_num(&d));
            awk_cell_free(&d);
        }
        }
        return awk_num_cell(r);
    }
    }
}

/* ---- statements ---- */

static __attribute__((noinline)) void print_items(struct awk_node *s) {
    FILE *out = s->index == 2 ? stderr : stdout;
    char buf[64];
    if (s->kind == S_PRINTF) {
        struct awk_buf text = {0};
        awk_buf_add(&text, "", 0);
        format_args(&text, s->args, s->nargs);
        fwrite(text.data, 1, text.len, out);
        free(text.data);
        return;
    }
    if (s->args == NULL) {
        rebuild_record();
        fwrite(record.data ? record.data : "", 1, record.len, out);
    }
    for (struct awk_node *a = s->args; a != NULL; a = a->next) {
        struct awk_cell c = eval(a);
        if (a != s->args) fputs(awk_to_str(&globals[V_OFS].cell, buf), out);
        fputs(awk_to_out_str(&c, buf), out);
        awk_cell_free(&c);
    }
    fputs(awk_to_str(&globals[V_ORS].cell, buf), out);
    if (ferror(out)) awk_fatal("write error");
}

static int test(struct awk_node *e) {
    struct awk_cell c = eval(e);
    int t = truth(&c);
    awk_cell_free(&c);
    return t;
}

static enum flow loop_body(struct awk_node *body, int *stop) {
    enum flow f = body ? exec(body) : F_NORMAL;
    if (pending) f = pending;
    *stop = f == F_BREAK || (f != F_NORMAL && f != F_CONTINUE);
    return f == F_BREAK || f == F_CONTINUE ? F_NORMAL : f;
}

static enum flow exec_node(struct awk_node *s);

static enum flow exec(struct awk_node *s) {
    if (s == NULL) return F_NORMAL;
    if (++eval_depth > MAX_EVAL_DEPTH)
        awk_fatal("program recursion deeper than %d levels at source line %d", MAX_EVAL_DEPTH,
                  s->line);
    enum flow f = exec_node(s);
    eval_depth--;
    return f;
}

static enum flow exec_node(struct awk_node *s) {
    enum flow f;
    int stop;
    if (pending) return pending;
    switch (s->kind) {
    case S_BLOCK:
        for (struct awk_node *c = s->args; c != NULL; c = c->next) {
            f = exec(c);
            if (f != F_NORMAL) return f;
            if (pending) return pending;
        }
        return F_NORMAL;
    case S_EXPR: {
        struct awk_cell c = eval(s->a);
        awk_cell_free(&c);
        return pending;
    }
    case S_PRINT:
    case S_PRINTF:
        print_items(s);
        return pending;
    case S_IF: {
        int t = test(s->a);
        if (pending) return pending;
        return exec(t ? s->b : s->c);
    }
    case S_WHILE:
        while (test(s->a) && !pending) {
            f = loop_body(s->b, &stop);
            if (stop) return f;
        }
        return pending;
    case S_DO:
        do {
            f = loop_body(s->b, &stop);
            if (stop) return f;
        } while (test(s->a) && !pending);
        return pending;
    case S_FOR:
        if (s->c != NULL) {
            struct awk_cell c = eval(s->c);
            awk_cell_free(&c);
        }
        while (!pending && (s->a == NULL || test(s->a)) && !pending) {
            f = loop_body(s->b, &stop);
            if (stop) return f;
            if (s->d != NULL) {
                struct awk_cell c = eval(s->d);
                awk_cell_free(&c);
            }
        }
        return pending;
    case S_FOR_IN: {
        /* the keys as they are when the loop starts: the body may delete or add */
        struct awk_array *a = array_of(s);
        size_t count = a->count, i = 0;
        char **keys = awk_alloc((count + 1) * sizeof *keys);
        for (struct awk_elem *e = a->first; e != NULL; e = e->next) keys[i++] = awk_strdup(e->key);
        f = F_NORMAL;
        for (i = 0; i < count; i++) {
            struct place pl = locate(s->a);
            write_place(&pl, awk_strnum_cell(awk_strdup(keys[i])));
            enum flow g = loop_body(s->b, &stop);
            if (stop) {
                f = g;
                break;
            }
        }
        for (i = 0; i < count; i++) free(keys[i]);
        free(keys);
        return f;
    }
    case S_BREAK: return F_BREAK;
    case S_CONTINUE: return F_CONTINUE;
    case S_NEXT: return F_NEXT;
    case S_NEXTFILE: return F_NEXTFILE;
    case S_EXIT:
        if (s->a != NULL) {
            struct awk_cell c = eval(s->a);
            exit_status = (int)awk_to_num(&c) & 0xff;
            awk_cell_free(&c);
        }
        return F_EXIT;
    case S_RETURN:
        awk_cell_free(&retval);
        if (s->a != NULL) retval = eval(s->a);
        return pending ? pending : F_RETURN;
    case S_DELETE: {
        char *key = subscript_key(s->args);
        array_delete(array_of(s), key);
        free(key);
        return pending;
    }
    case S_DELETE_ALL:
        array_clear(array_of(s));
        return F_NORMAL;
    default:
        awk_fatal("internal: unknown statement");
    }
}

/* Run one action (or print $0 when there is none); the flow it ended with. */
static enum flow run_action(struct awk_node *action) {
    enum flow f;
    if (action == NULL) {
        rebuild_record();
        char buf[64];
        fwrite(record.data ? record.data : "", 1, record.len, stdout);
        fputs(awk_to_str(&globals[V_ORS].cell, buf), stdout);
        return F_NORMAL;
    }
    f = exec(action);
    if (pending) {
        f = pending;
        pending = F_NORMAL;
    }
    return f;
}

static int pattern_selects(struct awk_item *it) {
    if (it->pattern == NULL) return 1;
    if (it->pattern_end == NULL) return test(it->pattern);
    if (!it->in_range) {
        if (!test(it->pattern)) return 0;
        it->in_range = !test(it->pattern_end);
        return 1;
    }
    if (test(it->pattern_end)) it->in_range = 0;
    return 1;
}

static void set_environ(void) {
    extern char **environ;
    struct var *v = &globals[V_ENVIRON];
    v->kind = K_ARRAY;
    v->arr = new_array();
    for (char **e = environ; e != NULL && *e != NULL; e++) {
        const char *eq = strchr(*e, '=');
        if (eq == NULL) continue;
        char *name = awk_strndup(*e, (size_t)(eq - *e));
        struct awk_cell *c = array_get(v->arr, name);
        awk_cell_free(c);
        *c = awk_strnum_cell(awk_strdup(eq + 1));
        free(name);
    }
}

int awk_run(struct awk_program *program, char **assigns, int nassigns, char **args, int nargs) {
    prog = program;
    /* -v and operand assignments may name variables the program never mentions: they are
     * entered into prog->globals as they come, and globals grows to match */
    globals_room = prog->nglobals;
    globals = calloc((size_t)globals_room, sizeof *globals);
    if (globals == NULL) awk_fatal("out of memory");
    set_var_str(V_FS, " ");
    set_var_str(V_OFS, " ");
    set_var_str(V_ORS, "\n");
    set_var_str(V_RS, "\n");
    set_var_str(V_SUBSEP, "\034");
    set_var_str(V_CONVFMT, "%.6g");
    set_var_str(V_OFMT, "%.6g");
    set_var_str(V_FILENAME, "");
    set_var_num(V_NR, 0);
    set_var_num(V_FNR, 0);
    set_var_num(V_RSTART, 0);
    set_var_num(V_RLENGTH, -1);
    set_environ();
    globals[V_NF].kind = K_SCALAR;
    globals[V_ARGV].kind = K_ARRAY;
    globals[V_ARGV].arr = new_array();
    *array_get(globals[V_ARGV].arr, "0") = awk_str_cell(awk_strdup("awk"));
    for (int i = 0; i < nargs; i++) {
        char key[32];
        snprintf(key, sizeof key, "%d", i + 1);
        *array_get(globals[V_ARGV].arr, key) = awk_strnum_cell(awk_strdup(args[i]));
    }
    set_var_num(V_ARGC, nargs + 1);
    for (int i = 0; i < nassigns; i++) assign_operand(assigns[i]);
    set_record("", 0);

    enum flow f = F_NORMAL;
    for (struct awk_item *it = prog->items; it != NULL && f != F_EXIT; it = it->next) {
        if (it->kind != ITEM_BEGIN) continue;
        f = run_action(it->action);
        if (f == F_NEXT || f == F_NEXTFILE) awk_fatal("next used in a BEGIN action");
    }
    if (f != F_EXIT && (prog->has_main || prog->has_end)) {
        struct awk_buf line = {0};
        while (f != F_EXIT && next_record(&line)) {
            set_record(line.data, line.len);
            for (struct awk_item *it = prog->items; it != NULL; it = it->next) {
                if (it->kind != ITEM_MAIN) continue;
                int selected = pattern_selects(it);
                if (pending) { /* exit or next in a function the pattern called */
                    f = pending;
                    pending = F_NORMAL;
                    if (f == F_NEXTFILE) close_input();
                    break;
                }
                if (!selected) continue;
                f = run_action(it->action);
                if (f == F_NEXTFILE) close_input();
                if (f != F_NORMAL) break;
            }
            if (f != F_EXIT) f = F_NORMAL;
        }
        free(line.data);
    }
    /* exit in BEGIN or the main actions still runs END; exit in END ends at once */
    f = F_NORMAL;
    for (struct awk_item *it = prog->items; it != NULL && f != F_EXIT; it = it->next) {
        if (it->kind != ITEM_END) continue;
        f = run_action(it->action);
        if (f == F_NEXT || f == F_NEXTFILE) awk_fatal("next used in an END action");
    }
    if (input_open) close_input();
    return exit_status;
}
