/* jq's values: building, sharing and comparing them, reading JSON text into them and printing
 * them exactly as jq 1.7 does (2-space indent or compact, keys in insertion order, numbers in
 * their shortest round-trip form with jq's choice between fixed and exponent notation). The
 * program's own syntax is jq_parse.c's.
 */
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "jq.h"

void jq_oom(void) {
    fputs("jq: error: out of memory\n", stderr);
    exit(5);
}

void *jq_alloc(size_t n) {
    void *p = malloc(n ? n : 1);
    if (p == NULL) jq_oom();
    return p;
}

static void *jq_grow(void *p, size_t n) {
    void *q = realloc(p, n ? n : 1);
    if (q == NULL) jq_oom();
    return q;
}

jv jv_null(void) {
    jv v;
    memset(&v, 0, sizeof v);
    v.kind = JV_NULL;
    return v;
}

jv jv_bool(int b) {
    jv v = jv_null();
    v.kind = b ? JV_TRUE : JV_FALSE;
    return v;
}

jv jv_number(double d) {
    jv v = jv_null();
    v.kind = JV_NUMBER;
    v.u.num = d;
    return v;
}

jv jv_string_n(const char *s, size_t len) {
    if (len > SIZE_MAX / 2) jq_oom();
    struct jv_str *p = jq_alloc(sizeof *p + len + 1);
    p->refs = 1;
    p->len = len;
    p->cap = len + 1;
    if (len) memcpy(p->data, s, len);
    p->data[len] = '\0';
    jv v = jv_null();
    v.kind = JV_STRING;
    v.u.s = p;
    return v;
}

jv jv_string(const char *s) { return jv_string_n(s, strlen(s)); }

jv jv_array(void) {
    struct jv_arr *a = jq_alloc(sizeof *a);
    a->refs = 1;
    a->len = a->cap = 0;
    a->items = NULL;
    jv v = jv_null();
    v.kind = JV_ARRAY;
    v.u.a = a;
    return v;
}

jv jv_object(void) {
    struct jv_obj *o = jq_alloc(sizeof *o);
    memset(o, 0, sizeof *o);
    o->refs = 1;
    jv v = jv_null();
    v.kind = JV_OBJECT;
    v.u.o = o;
    return v;
}

jv jv_copy(jv v) {
    switch (v.kind) {
    case JV_STRING: v.u.s->refs++; break;
    case JV_ARRAY: v.u.a->refs++; break;
    case JV_OBJECT: v.u.o->refs++; break;
    default: break;
    }
    return v;
}

/* Freeing is iterative: a value nested deeper than the C stack allows (built by a program,
 * not read) must not overflow it. Children waiting to be freed are kept in a list. */
void jv_free(jv v) {
    jv *pending = NULL;
    size_t n = 0, cap = 0;
    for (;;) {
        int release = 0;
        switch (v.kind) {
        case JV_STRING:
            if (--v.u.s->refs == 0) free(v.u.s);
            break;
        case JV_ARRAY: release = --v.u.a->refs == 0; break;
        case JV_OBJECT: release = --v.u.o->refs == 0; break;
        default: break;
        }
        if (release) {
            size_t add = v.kind == JV_ARRAY ? v.u.a->len : 2 * v.u.o->len;
            if (n + add > cap) {
                cap = (n + add) * 2 + 16;
                pending = jq_grow(pending, cap * sizeof *pending);
            }
            if (v.kind == JV_ARRAY) {
                if (add) memcpy(pending + n, v.u.a->items, add * sizeof(jv));
                free(v.u.a->items);
                free(v.u.a);
            } else {
                struct jv_obj *o = v.u.o;
                if (add) {
                    memcpy(pending + n, o->keys, o->len * sizeof(jv));
                    memcpy(pending + n + o->len, o->vals, o->len * sizeof(jv));
                }
                free(o->keys);
                free(o->vals);
                free(o->index);
                free(o);
            }
            n += add;
        }
        if (n == 0) break;
        v = pending[--n];
    }
    free(pending);
}

const char *jv_kind_name(int kind) {
    static const char *names[] = {"null", "boolean", "boolean", "number",
                                  "string", "array", "object"};
    return names[kind];
}

int jv_truthy(jv v) { return v.kind != JV_NULL && v.kind != JV_FALSE; }

const char *jv_str(jv v) { return v.u.s->data; }

size_t jv_strlen(jv v) { return v.u.s->len; }

size_t jv_utf8_length(jv v) {
    size_t n = 0;
    for (size_t i = 0; i < v.u.s->len; i++)
        if (((unsigned char)v.u.s->data[i] & 0xC0) != 0x80) n++;
    return n;
}

unsigned jv_utf8_next(const char **pp, const char *end) {
    const unsigned char *p = (const unsigned char *)*pp;
    unsigned c = *p++;
    int more = c >= 0xF0 ? 3 : c >= 0xE0 ? 2 : c >= 0xC0 ? 1 : 0;
    if (more) c &= 0x3F >> more;
    while (more-- > 0 && (const char *)p < end) c = (c << 6) | (*p++ & 0x3F);
    *pp = (const char *)p;
    return c;
}

jv jv_string_append(jv s, const char *p, size_t n) {
    struct jv_str *old = s.u.s;
    if (n > SIZE_MAX / 4 - old->len) jq_oom();
    if (old->refs == 1) {
        size_t need = old->len + n + 1;
        if (need > old->cap) {
            size_t want = old->cap * 2 > need ? old->cap * 2 : need + 16;
            old = jq_grow(old, sizeof *old + want);
            old->cap = want;
        }
        memcpy(old->data + old->len, p, n);
        old->len += n;
        old->data[old->len] = '\0';
        s.u.s = old;
        return s;
    }
    jv out = jv_string_n(NULL, 0);
    out = jv_string_append(out, old->data, old->len);
    out = jv_string_append(out, p, n);
    jv_free(s);
    return out;
}

void jv_put_utf8(jv *s, unsigned cp) {
    char b[4];
    size_t n;
    if (cp > 0x10FFFF || (cp >= 0xD800 && cp < 0xE000)) cp = 0xFFFD;
    if (cp < 0x80) {
        b[0] = (char)cp;
        n = 1;
    } else if (cp < 0x800) {
        b[0] = (char)(0xC0 | cp >> 6);
        b[1] = (char)(0x80 | (cp & 0x3F));
        n = 2;
    } else if (cp < 0x10000) {
        b[0] = (char)(0xE0 | cp >> 12);
        b[1] = (char)(0x80 | ((cp >> 6) & 0x3F));
        b[2] = (char)(0x80 | (cp & 0x3F));
        n = 3;
    } else {
        b[0] = (char)(0xF0 | cp >> 18);
        b[1] = (char)(0x80 | ((cp >> 12) & 0x3F));
        b[2] = (char)(0x80 | ((cp >> 6) & 0x3F));
        b[3] = (char)(0x80 | (cp & 0x3F));
        n = 4;
    }
    *s = jv_string_append(*s, b, n);
}

/* Length of a valid UTF-8 sequence at p, or 0. */
static size_t utf8_valid(const unsigned char *p, const unsigned char *end) {
    unsigned c = p[0];
    size_t n;
    unsigned min;
    if (c < 0x80) return 1;
    if (c >= 0xC2 && c < 0xE0) n = 2, min = 0x80;
    else if (c >= 0xE0 && c < 0xF0) n = 3, min = 0x800;
    else if (c >= 0xF0 && c < 0xF5) n = 4, min = 0x10000;
    else return 0;
    if ((size_t)(end - p) < n) return 0;
    unsigned cp = c & (0x3F >> (n - 1));
    for (size_t i = 1; i < n; i++) {
        if ((p[i] & 0xC0) != 0x80) return 0;
        cp = (cp << 6) | (p[i] & 0x3F);
    }
    if (cp < min || cp > 0x10FFFF || (cp >= 0xD800 && cp < 0xE000)) return 0;
    return n;
}

jv jv_string_sanitized(const char *s, size_t len) {
    const unsigned char *p = (const unsigned char *)s, *end = p + len;
    /* valid runs are copied, each invalid byte becomes U+FFFD */
    const unsigned char *scan = p;
    while (scan < end) {
        size_t n = *scan < 0x80 ? 1 : utf8_valid(scan, end);
        if (n == 0) break;
        scan += n;
    }
    if (scan == end) return jv_string_n(s, len); /* all valid: one allocation */
    jv out = jv_string_n(NULL, 0);
    const unsigned char *run = p;
    while (p < end) {
        size_t n = utf8_valid(p, end);
        if (n) {
            p += n;
            continue;
        }
        out = jv_string_append(out, (const char *)run, (size_t)(p - run));
        jv_put_utf8(&out, 0xFFFD);
        p++;
        run = p;
    }
    return jv_string_append(out, (const char *)run, (size_t)(p - run));
}

/* ---- arrays and objects -------------------------------------------------------------------- */

jv jv_unshare_array(jv a) {
    if (a.u.a->refs == 1) return a;
    jv out = jv_array();
    struct jv_arr *src = a.u.a, *dst = out.u.a;
    dst->items = jq_alloc((src->len ? src->len : 1) * sizeof(jv));
    dst->cap = src->len;
    for (size_t i = 0; i < src->len; i++) dst->items[i] = jv_copy(src->items[i]);
    dst->len = src->len;
    jv_free(a);
    return out;
}

jv jv_array_append(jv a, jv item) {
    a = jv_unshare_array(a);
    struct jv_arr *p = a.u.a;
    if (p->len == p->cap) {
        if (p->cap > SIZE_MAX / (4 * sizeof(jv))) jq_oom();
        p->cap = p->cap ? p->cap * 2 : 4;
        p->items = jq_grow(p->items, p->cap * sizeof(jv));
    }
    p->items[p->len++] = item;
    return a;
}

jv jv_array_set(jv a, size_t i, jv item) {
    a = jv_unshare_array(a);
    while (a.u.a->len <= i) a = jv_array_append(a, jv_null());
    jv_free(a.u.a->items[i]);
    a.u.a->items[i] = item;
    return a;
}

jv jv_array_get(jv a, size_t i) { return a.u.a->items[i]; }

size_t jv_array_len(jv a) { return a.u.a->len; }

static size_t hash_key(const char *s, size_t len) {
    uint32_t h = 2166136261u;
    for (size_t i = 0; i < len; i++) h = (h ^ (unsigned char)s[i]) * 16777619u;
    return h;
}

static void index_insert(struct jv_obj *o, size_t slot) {
    jv k = o->keys[slot];
    size_t mask = o->index_cap - 1, i = hash_key(jv_str(k), jv_strlen(k)) & mask;
    while (o->index[i]) i = (i + 1) & mask;
    o->index[i] = slot + 1;
}

static void index_rebuild(struct jv_obj *o) {
    free(o->index);
    o->index = NULL;
    o->index_cap = 0;
    if (o->len < 16) return;
    size_t cap = 64;
    while (cap < o->len * 2) cap *= 2;
    o->index = jq_alloc(cap * sizeof(size_t));
    memset(o->index, 0, cap * sizeof(size_t));
    o->index_cap = cap;
    for (size_t i = 0; i < o->len; i++) index_insert(o, i);
}

static long object_slot(struct jv_obj *o, const char *key, size_t len) {
    if (o->index) {
        size_t mask = o->index_cap - 1, i = hash_key(key, len) & mask;
        for (; o->index[i]; i = (i + 1) & mask) {
            jv k = o->keys[o->index[i] - 1];
            if (jv_strlen(k) == len && memcmp(jv_str(k), key, len) == 0)
                return (long)o->index[i] - 1;
        }
        return -1;
    }
    for (size_t i = 0; i < o->len; i++) {
        jv k = o->keys[i];
        if (jv_strlen(k) == len && memcmp(jv_str(k), key, len) == 0) return (long)i;
    }
    return -1;
}

jv *jv_object_get(jv o, const char *key, size_t len) {
    long i = object_slot(o.u.o, key, len);
    return i < 0 ? NULL : &o.u.o->vals[i];
}

jv jv_unshare_object(jv o) {
    if (o.u.o->refs == 1) return o;
    jv out = jv_object();
    struct jv_obj *src = o.u.o, *dst = out.u.o;
    size_t n = src->len ? src->len : 1;
    dst->keys = jq_alloc(n * sizeof(jv));
    dst->vals = jq_alloc(n * sizeof(jv));
    dst->cap = n;
    for (size_t i = 0; i < src->len; i++) {
        dst->keys[i] = jv_copy(src->keys[i]);
        dst->vals[i] = jv_copy(src->vals[i]);
    }
    dst->len = src->len;
    index_rebuild(dst);
    jv_free(o);
    return out;
}

jv jv_object_set(jv o, jv key, jv val) {
    o = jv_unshare_object(o);
    struct jv_obj *p = o.u.o;
    long i = object_slot(p, jv_str(key), jv_strlen(key));
    if (i >= 0) {
        jv_free(key);
        jv_free(p->vals[i]);
        p->vals[i] = val;
        return o;
    }
    if (p->len == p->cap) {
        if (p->cap > SIZE_MAX / (4 * sizeof(jv))) jq_oom();
        p->cap = p->cap ? p->cap * 2 : 4;
        p->keys = jq_grow(p->keys, p->cap * sizeof(jv));
        p->vals = jq_grow(p->vals, p->cap * sizeof(jv));
    }
    p->keys[p->len] = key;
    p->vals[p->len] = val;
    p->len++;
    if (p->index && p->len * 2 <= p->index_cap) index_insert(p, p->len - 1);
    else if (p->len >= 16) index_rebuild(p);
    return o;
}

jv jv_object_delete(jv o, const char *key, size_t len) {
    long i = object_slot(o.u.o, key, len);
    if (i < 0) return o;
    o = jv_unshare_object(o);
    struct jv_obj *p = o.u.o;
    jv_free(p->keys[i]);
    jv_free(p->vals[i]);
    memmove(p->keys + i, p->keys + i + 1, (p->len - (size_t)i - 1) * sizeof(jv));
    memmove(p->vals + i, p->vals + i + 1, (p->len - (size_t)i - 1) * sizeof(jv));
    p->len--;
    index_rebuild(p);
    return o;
}

/* ---- jq's total order ------------------------------------------------------------------- */

static int cmp_strings(jv a, jv b) {
    size_t la = jv_strlen(a), lb = jv_strlen(b);
    int c = memcmp(jv_str(a), jv_str(b), la < lb ? la : lb);
    if (c) return c < 0 ? -1 : 1;
    return la < lb ? -1 : la > lb;
}

static int cmp_key_ptr(const void *x, const void *y) {
    return cmp_strings(**(jv *const *)x, **(jv *const *)y);
}

/* The keys of o in sorted order, as pointers into o. */
static jv **sorted_keys(struct jv_obj *o) {
    jv **ks = jq_alloc((o->len ? o->len : 1) * sizeof *ks);
    for (size_t i = 0; i < o->len; i++) ks[i] = &o->keys[i];
    qsort(ks, o->len, sizeof *ks, cmp_key_ptr);
    return ks;
}

static int cmp_depth(jv a, jv b, int depth) {
    if (a.kind != b.kind) return a.kind < b.kind ? -1 : 1;
    if (depth > JQ_MAX_DEPTH) {
        /* only a program builds values this deep; an answer here would be a guess */
        fputs("jq: error: value nested too deeply to compare (sandbox limit)\n", stderr);
        exit(5);
    }
    switch (a.kind) {
    case JV_NUMBER:
        /* nan sorts below every number, itself included (so nan < nan and nan != nan), as
         * in jq */
        if (isnan(a.u.num)) return -1;
        if (isnan(b.u.num)) return 1;
        return a.u.num < b.u.num ? -1 : a.u.num > b.u.num;
    case JV_STRING: return cmp_strings(a, b);
    case JV_ARRAY: {
        size_t la = a.u.a->len, lb = b.u.a->len;
        for (size_t i = 0; i < la && i < lb; i++) {
            int c = cmp_depth(a.u.a->items[i], b.u.a->items[i], depth + 1);
            if (c) return c;
        }
        return la < lb ? -1 : la > lb;
    }
    case JV_OBJECT: {
        struct jv_obj *x = a.u.o, *y = b.u.o;
        jv **kx = sorted_keys(x), **ky = sorted_keys(y);
        int c = 0;
        for (size_t i = 0; i < x->len && i < y->len && !c; i++) c = cmp_strings(*kx[i], *ky[i]);
        if (!c && x->len != y->len) c = x->len < y->len ? -1 : 1;
        for (size_t i = 0; i < x->len && !c; i++) {
            jv *vy = jv_object_get(b, jv_str(*kx[i]), jv_strlen(*kx[i]));
            c = cmp_depth(x->vals[kx[i] - x->keys], *vy, depth + 1);
        }
        free(kx);
        free(ky);
        return c;
    }
    default: return 0;
    }
}

int jv_cmp(jv a, jv b) { return cmp_depth(a, b, 0); }

int jv_equal(jv a, jv b) { return jv_cmp(a, b) == 0; }

int jv_cmp_ptr(const void *a, const void *b) { return jv_cmp(*(const jv *)a, *(const jv *)b); }

/* A merge sort: jq's sorts are stable (sort_by and group_by keep input order on ties). */
static void merge_sort(jv *items, jv *tmp, size_t n) {
    if (n < 2) return;
    size_t h = n / 2;
    merge_sort(items, tmp, h);
    merge_sort(items + h, tmp, n - h);
    size_t i = 0, j = h, k = 0;
    while (i < h && j < n) tmp[k++] = jv_cmp(items[j], items[i]) < 0 ? items[j++] : items[i++];
    while (i < h) tmp[k++] = items[i++];
    while (j < n) tmp[k++] = items[j++];
    memcpy(items, tmp, n * sizeof(jv));
}

void jv_sort_array(jv *items, size_t n) {
    jv *tmp = jq_alloc((n ? n : 1) * sizeof(jv));
    merge_sort(items, tmp, n);
    free(tmp);
}

/* ---- printing ------------------------------------------------------------------------------ */

/* jq's number text: the shortest digits that read back as the same double, in fixed notation
 * unless the decimal point would sit 4+ places before the digits or 16+ places after them. */
void jv_number_text(double d, char out[32]) {
    if (isnan(d)) {
        strcpy(out, "null");
        return;
    }
    if (isinf(d)) d = d > 0 ? 1.7976931348623157e308 : -1.7976931348623157e308;
    if (d == 0) {
        strcpy(out, signbit(d) ? "-0" : "0");
        return;
    }
    if (d == floor(d) && fabs(d) < 1e17) { /* integers: their digits, no search */
        unsigned long long u = (unsigned long long)fabs(d);
        char tmp[24];
        int n = 0;
        do {
            tmp[n++] = (char)('0' + u % 10);
            u /= 10;
        } while (u);
        char *o = out;
        if (d < 0) *o++ = '-';
        while (n) *o++ = tmp[--n];
        *o = '\0';
        return;
    }
    char e[40];
    int prec;
    for (prec = 1; prec < 17; prec++) {
        snprintf(e, sizeof e, "%.*e", prec - 1, d);
        if (strtod(e, NULL) == d) break;
    }
    snprintf(e, sizeof e, "%.*e", prec - 1, d);
    /* e is [-]D[.DDD]e[+-]XX: collect the digits and the exponent */
    char digits[24];
    int nd = 0, neg = e[0] == '-';
    const char *p = e + neg;
    for (; *p && *p != 'e'; p++)
        if (*p != '.') digits[nd++] = *p;
    while (nd > 1 && digits[nd - 1] == '0') nd--;
    digits[nd] = '\0';
    int exp10 = atoi(p + 1), decpt = exp10 + 1;
    char *o = out;
    if (neg) *o++ = '-';
    if (decpt <= -4 || decpt > nd + 15) {
        *o++ = digits[0];
        if (nd > 1) {
            *o++ = '.';
            memcpy(o, digits + 1, (size_t)nd - 1);
            o += nd - 1;
        }
        sprintf(o, "e%c%02d", exp10 < 0 ? '-' : '+', exp10 < 0 ? -exp10 : exp10);
        return;
    }
    if (decpt <= 0) {
        *o++ = '0';
        *o++ = '.';
        for (int i = 0; i < -decpt; i++) *o++ = '0';
        memcpy(o, digits, (size_t)nd);
        o += nd;
    } else if (decpt >= nd) {
        memcpy(o, digits, (size_t)nd);
        o += nd;
        for (int i = nd; i < decpt; i++) *o++ = '0';
    } else {
        memcpy(o, digits, (size_t)decpt);
        o += decpt;
        *o++ = '.';
        memcpy(o, digits + decpt, (size_t)(nd - decpt));
        o += nd - decpt;
    }
    *o = '\0';
}

static jv dump_string(jv buf, const char *s, size_t len, int ascii) {
    static const char hex[] = "0123456789abcdef";
    buf = jv_string_append(buf, "\"", 1);
    const char *run = s, *end = s + len;
    for (const char *p = s; p < end;) {
        unsigned char c = (unsigned char)*p;
        const char *esc = NULL;
        char u[16];
        switch (c) {
        case '"': esc = "\\\""; break;
        case '\\': esc = "\\\\"; break;
        case '\n': esc = "\\n"; break;
        case '\t': esc = "\\t"; break;
        case '\r': esc = "\\r"; break;
        case '\b': esc = "\\b"; break;
        case '\f': esc = "\\f"; break;
        default:
            if (c < 0x20 || c == 0x7F) {
                u[0] = '\\', u[1] = 'u', u[2] = '0', u[3] = '0';
                u[4] = hex[c >> 4], u[5] = hex[c & 15], u[6] = '\0';
                esc = u;
            } else if (c >= 0x80 && ascii) {
                buf = jv_string_append(buf, run, (size_t)(p - run));
                unsigned cp = jv_utf8_next(&p, end);
                if (cp >= 0x10000) {
                    cp -= 0x10000;
                    snprintf(u, sizeof u, "\\u%04x\\u%04x", 0xD800 + (cp >> 10),
                             0xDC00 + (cp & 0x3FF));
                } else {
                    snprintf(u, sizeof u, "\\u%04x", cp);
                }
                buf = jv_string_append(buf, u, strlen(u));
                run = p;
                continue;
            }
        }
        if (esc) {
            buf = jv_string_append(buf, run, (size_t)(p - run));
            buf = jv_string_append(buf, esc, strlen(esc));
            run = p + 1;
        }
        p++;
    }
    buf = jv_string_append(buf, run, (size_t)(end - run));
    return jv_string_append(buf, "\"", 1);
}

static jv dump_newline(jv buf, const struct jq_dump *how, int level) {
    buf = jv_string_append(buf, "\n", 1);
    for (int i = 0; i < level; i++) {
        if (how->tab) buf = jv_string_append(buf, "\t", 1);
        else
            for (int j = 0; j < how->indent; j++) buf = jv_string_append(buf, " ", 1);
    }
    return buf;
}

jv jv_dump(jv buf, jv v, const struct jq_dump *how, int level) {
    int pretty = how->indent > 0 || how->tab;
    char num[32];
    if (level > JQ_MAX_DEPTH) {
        /* deeper than this only a program can build; jq would print it, we refuse */
        fputs("jq: error: value nested too deeply to print (sandbox limit)\n", stderr);
        exit(5);
    }
    switch (v.kind) {
    case JV_NULL: return jv_string_append(buf, "null", 4);
    case JV_FALSE: return jv_string_append(buf, "false", 5);
    case JV_TRUE: return jv_string_append(buf, "true", 4);
    case JV_NUMBER:
        jv_number_text(v.u.num, num);
        return jv_string_append(buf, num, strlen(num));
    case JV_STRING: return dump_string(buf, jv_str(v), jv_strlen(v), how->ascii);
    case JV_ARRAY:
        if (v.u.a->len == 0) return jv_string_append(buf, "[]", 2);
        buf = jv_string_append(buf, "[", 1);
        for (size_t i = 0; i < v.u.a->len; i++) {
            if (i) buf = jv_string_append(buf, ",", 1);
            if (pretty) buf = dump_newline(buf, how, level + 1);
            buf = jv_dump(buf, v.u.a->items[i], how, level + 1);
        }
        if (pretty) buf = dump_newline(buf, how, level);
        return jv_string_append(buf, "]", 1);
    case JV_OBJECT: {
        struct jv_obj *o = v.u.o;
        if (o->len == 0) return jv_string_append(buf, "{}", 2);
        jv **ks = NULL;
        if (how->sort_keys) ks = sorted_keys(o);
        buf = jv_string_append(buf, "{", 1);
        for (size_t i = 0; i < o->len; i++) {
            size_t slot = ks ? (size_t)(ks[i] - o->keys) : i;
            if (i) buf = jv_string_append(buf, ",", 1);
            if (pretty) buf = dump_newline(buf, how, level + 1);
            buf = dump_string(buf, jv_str(o->keys[slot]), jv_strlen(o->keys[slot]), how->ascii);
            buf = jv_string_append(buf, pretty ? ": " : ":", pretty ? 2 : 1);
            buf = jv_dump(buf, o->vals[slot], how, level + 1);
        }
        free(ks);
        if (pretty) buf = dump_newline(buf, how, level);
        return jv_string_append(buf, "}", 1);
    }
    }
    return buf;
}

jv jv_tojson(jv v) {
    static const struct jq_dump compact = {0, 0, 0, 0};
    return jv_dump(jv_string_n(NULL, 0), v, &compact, 0);
}

/* ---- reading JSON --------------------------------------------------------------------------- */

static void skip_space(struct jq_reader *r) {
    while (r->p < r->end) {
        char c = *r->p;
        if (c == '\n') r->line++;
        else if (c != ' ' && c != '\t' && c != '\r') break;
        r->p++;
    }
}

static int fail(struct jq_reader *r, char *msg, size_t msgsz, const char *what) {
    size_t col = 0;
    for (const char *q = r->p; q > r->start && q[-1] != '\n'; q--) col++;
    snprintf(msg, msgsz, "%s at line %zu, column %zu", what, r->line + 1, col);
    return -1;
}

static int hex4(const char *p, unsigned *out) {
    unsigned v = 0;
    for (int i = 0; i < 4; i++) {
        char c = p[i];
        v <<= 4;
        if (c >= '0' && c <= '9') v |= (unsigned)(c - '0');
        else if (c >= 'a' && c <= 'f') v |= (unsigned)(c - 'a' + 10);
        else if (c >= 'A' && c <= 'F') v |= (unsigned)(c - 'A' + 10);
        else return 0;
    }
    *out = v;
    return 1;
}

static int read_string(struct jq_reader *r, jv *out, char *msg, size_t msgsz) {
    const char *p = ++r->p; /* after the quote */
    const char *q = p;
    while (q < r->end && *q != '"' && *q != '\\' && (unsigned char)*q >= 0x20) q++;
    if (q < r->end && *q == '"') { /* the common case: nothing to decode */
        *out = jv_string_sanitized(p, (size_t)(q - p));
        r->p = q + 1;
        return 1;
    }
    jv s = jv_string_n(NULL, 0);
    const char *run = p;
    for (;;) {
        if (p >= r->end) {
            jv_free(s);
            r->p = p;
            return fail(r, msg, msgsz, "Unfinished string at EOF");
        }
        char c = *p;
        if (c == '"') break;
        if (c == '\n') r->line++;
        if (c != '\\') {
            p++;
            continue;
        }
        jv part = jv_string_sanitized(run, (size_t)(p - run));
        s = jv_string_append(s, jv_str(part), jv_strlen(part));
        jv_free(part);
        if (p + 1 >= r->end) {
            jv_free(s);
            r->p = p;
            return fail(r, msg, msgsz, "Unfinished string at EOF");
        }
        char e = p[1];
        const char *map = "b\bf\fn\nr\rt\t\"\"\\\\//";
        const char *m = strchr(map, e);
        if (e && m && (m - map) % 2 == 0) {
            s = jv_string_append(s, m + 1, 1);
            p += 2;
        } else if (e == 'u') {
            unsigned cp, lo;
            if (r->end - p < 6 || !hex4(p + 2, &cp)) {
                jv_free(s);
                r->p = p;
                return fail(r, msg, msgsz, "Invalid escape");
            }
            p += 6;
            if (cp >= 0xD800 && cp < 0xDC00 && r->end - p >= 6 && p[0] == '\\' &&
                p[1] == 'u' && hex4(p + 2, &lo) && lo >= 0xDC00 && lo < 0xE000) {
                cp = 0x10000 + ((cp - 0xD800) << 10) + (lo - 0xDC00);
                p += 6;
            }
            jv_put_utf8(&s, cp);
        } else {
            jv_free(s);
            r->p = p;
            return fail(r, msg, msgsz, "Invalid escape");
        }
        run = p;
    }
    jv part = jv_string_sanitized(run, (size_t)(p - run));
    s = jv_string_append(s, jv_str(part), jv_strlen(part));
    jv_free(part);
    r->p = p + 1;
    *out = s;
    return 1;
}

static int read_scalar(struct jq_reader *r, jv *out, char *msg, size_t msgsz) {
    const char *p = r->p;
    static const struct {
        const char *word;
        int kind;
    } words[] = {{"null", JV_NULL}, {"true", JV_TRUE}, {"false", JV_FALSE}};
    for (size_t i = 0; i < 3; i++) {
        size_t n = strlen(words[i].word);
        if ((size_t)(r->end - p) >= n && memcmp(p, words[i].word, n) == 0) {
            const char *after = p + n;
            if (after < r->end && strchr(" \t\r\n,]}:[{\"", *after) == NULL) break;
            *out = jv_null();
            out->kind = (unsigned char)words[i].kind;
            r->p = after;
            return 1;
        }
    }
    if (*p == 'n' && r->end - p >= 3 && memcmp(p, "nan", 3) == 0) {
        *out = jv_number(NAN);
        r->p = p + 3;
        return 1;
    }
    const char *q = p;
    if (q < r->end && *q == '-') q++;
    const char *digits = q;
    while (q < r->end && *q >= '0' && *q <= '9') q++;
    const char *int_end = q;
    int ok = q > digits;
    if (q < r->end && *q == '.') {
        q++;
        const char *frac = q;
        while (q < r->end && *q >= '0' && *q <= '9') q++;
        ok = ok || q > frac;
    }
    if (ok && q < r->end && (*q == 'e' || *q == 'E')) {
        q++;
        if (q < r->end && (*q == '+' || *q == '-')) q++;
        const char *ex = q;
        while (q < r->end && *q >= '0' && *q <= '9') q++;
        ok = q > ex;
    }
    if (!ok || (q < r->end && strchr(" \t\r\n,]}:[{\"", *q) == NULL)) {
        while (q < r->end && strchr(" \t\r\n,]}:[{\"", *q) == NULL) q++;
        r->p = q;
        return fail(r, msg, msgsz, "Invalid numeric literal");
    }
    size_t n = (size_t)(q - p);
    if (q == int_end && q - digits <= 15) {
        /* an integer of at most 15 digits is exact in a double: no strtod needed */
        double v = 0;
        for (const char *d = digits; d < q; d++) v = v * 10 + (*d - '0');
        *out = jv_number(p[0] == '-' ? -v : v);
        r->p = q;
        return 1;
    }
    char small[64];
    char *text = n < sizeof small ? small : jq_alloc(n + 1);
    memcpy(text, p, n);
    text[n] = '\0';
    *out = jv_number(strtod(text, NULL));
    if (text != small) free(text);
    r->p = q;
    return 1;
}

/* One value, iteratively: containers under construction wait on an explicit stack, so
 * nesting depth costs heap, bounded by JQ_MAX_DEPTH, never C stack. */
int jv_read(struct jq_reader *r, jv *out, char *msg, size_t msgsz) {
    struct frame {
        jv container;
        jv key; /* objects: the key awaiting its value (null when none) */
    };
    static struct frame *stack; /* one reader at a time; kept for the next value */
    int depth = 0;
    skip_space(r);
    if (r->p >= r->end) return 0;
    if (stack == NULL) stack = jq_alloc((JQ_MAX_DEPTH + 1) * sizeof *stack);
    jv value;
    for (;;) {
        skip_space(r);
        if (r->p >= r->end) goto unfinished;
        char c = *r->p;
        if (c == '[' || c == '{') {
            if (depth >= JQ_MAX_DEPTH) {
                fail(r, msg, msgsz, "Exceeds depth limit for parsing");
                goto error;
            }
            stack[depth].container = c == '[' ? jv_array() : jv_object();
            stack[depth].key = jv_null();
            depth++;
            r->p++;
            skip_space(r);
            if (r->p < r->end && *r->p == (c == '[' ? ']' : '}')) {
                r->p++;
                value = stack[--depth].container;
                goto have_value;
            }
            if (c == '{') goto want_key;
            continue;
        }
        if (c == '"') {
            if (read_string(r, &value, msg, msgsz) < 0) goto error;
        } else if (read_scalar(r, &value, msg, msgsz) < 0) {
            goto error;
        }
    have_value:
        if (depth == 0) {
            *out = value;
            return 1;
        }
        {
            struct frame *f = &stack[depth - 1];
            if (f->container.kind == JV_ARRAY) {
                f->container = jv_array_append(f->container, value);
            } else {
                f->container = jv_object_set(f->container, f->key, value);
                f->key = jv_null();
            }
            skip_space(r);
            if (r->p >= r->end) goto unfinished;
            char close = f->container.kind == JV_ARRAY ? ']' : '}';
            if (*r->p == close) {
                r->p++;
                value = f->container;
                depth--;
                goto have_value;
            }
            if (*r->p != ',') {
                fail(r, msg, msgsz,
                     close == ']' ? "Expected separator between values"
                                  : "Objects must consist of key:value pairs");
                goto error;
            }
            r->p++;
            if (close == ']') continue;
        }
    want_key:
        skip_space(r);
        if (r->p >= r->end) goto unfinished;
        if (*r->p != '"') {
            fail(r, msg, msgsz, "Object keys must be strings");
            goto error;
        }
        if (read_string(r, &stack[depth - 1].key, msg, msgsz) < 0) goto error;
        skip_space(r);
        if (r->p >= r->end) goto unfinished;
        if (*r->p != ':') {
            fail(r, msg, msgsz, "Objects must consist of key:value pairs");
            goto error;
        }
        r->p++;
    }
unfinished:
    fail(r, msg, msgsz, "Unfinished JSON term at EOF");
error:
    while (depth > 0) {
        depth--;
        jv_free(stack[depth].container);
        jv_free(stack[depth].key);
    }
    return -1;
}

int jv_parse_text(const char *s, size_t len, jv *out, char *msg, size_t msgsz) {
    struct jq_reader r = {s, s + len, s, 0, "<text>"};
    jv v;
    int got = jv_read(&r, &v, msg, msgsz);
    if (got == 0) {
        snprintf(msg, msgsz, "Expected JSON value");
        return 0;
    }
    if (got < 0) return 0;
    skip_space(&r);
    if (r.p < r.end) {
        jv_free(v);
        fail(&r, msg, msgsz, "Unexpected extra JSON values");
        return 0;
    }
    *out = v;
    return 1;
}
