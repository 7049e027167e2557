/* awk's conversions and text machinery: numbers to strings (CONVFMT/OFMT, integers as %d)
 * and back (decimal only, as POSIX asks: no hex, no inf/nan words), the strnum test, awk's
 * regex dialect on top of POSIX regcomp (escapes such as \/ and \t done first; compiled
 * regexes cached by their text), printf's conversions, and sub/gsub's replacement.
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "awk.h"
#include "box.h"

/* ---- numbers ---- */

/* Whether FMT is a single floating-point conversion, safe to hand to snprintf with a double. */
static int float_format(const char *fmt) {
    const char *p = strchr(fmt, '%');
    if (p == NULL) return 0;
    p++;
    while (*p && strchr("-+ #0", *p)) p++;
    while (*p >= '0' && *p <= '9') p++;
    if (*p == '.') {
        p++;
        while (*p >= '0' && *p <= '9') p++;
    }
    if (*p == '\0' || strchr("eEfFgGaA", *p) == NULL) return 0;
    for (p++; *p; p++)
        if (*p == '%' && p[1] != '%') return 0;
        else if (*p == '%') p++;
    return 1;
}

void awk_format_num(double d, const char *fmt, char *buf) {
    if (d == trunc(d) && fabs(d) < 1e18) {
        snprintf(buf, 64, "%lld", (long long)d);
        return;
    }
    snprintf(buf, 64, float_format(fmt) ? fmt : "%.6g", d);
}

/* The length of the decimal number at the start of S (sign, digits, fraction, exponent). */
static size_t number_prefix(const char *s) {
    size_t i = 0, digits = 0;
    if (s[i] == '+' || s[i] == '-') i++;
    while (s[i] >= '0' && s[i] <= '9') i++, digits++;
    if (s[i] == '.') {
        i++;
        while (s[i] >= '0' && s[i] <= '9') i++, digits++;
    }
    if (digits == 0) return 0;
    if (s[i] == 'e' || s[i] == 'E') {
        size_t j = i + 1;
        if (s[j] == '+' || s[j] == '-') j++;
        if (s[j] >= '0' && s[j] <= '9') {
            while (s[j] >= '0' && s[j] <= '9') j++;
            i = j;
        }
    }
    return i;
}

static int is_blank(char c) { return c == ' ' || c == '\t' || c == '\n'; }

static double parse_prefix(const char *s, size_t n) {
    char small[64];
    char *copy = n < sizeof small ? small : awk_alloc(n + 1);
    memcpy(copy, s, n);
    copy[n] = '\0';
    double d = strtod(copy, NULL);
    if (copy != small) free(copy);
    return d;
}

int awk_looks_numeric(const char *s, double *out) {
    while (is_blank(*s)) s++;
    size_t n = number_prefix(s);
    if (n == 0) return 0;
    const char *rest = s + n;
    while (is_blank(*rest)) rest++;
    if (*rest != '\0') return 0;
    *out = parse_prefix(s, n);
    return 1;
}

double awk_str_to_num(const char *s) {
    while (is_blank(*s)) s++;
    size_t n = number_prefix(s);
    return n ? parse_prefix(s, n) : 0;
}

/* ---- regular expressions ---- */

static int escaped_char(char d, char *out) {
    switch (d) {
    case 'n': *out = '\n'; return 1;
    case 't': *out = '\t'; return 1;
    case 'r': *out = '\r'; return 1;
    case 'f': *out = '\f'; return 1;
    case 'v': *out = '\v'; return 1;
    case 'a': *out = '\a'; return 1;
    case 'b': *out = '\b'; return 1;
    case '/': *out = '/'; return 1;
    case '"': *out = '"'; return 1;
    default: return 0;
    }
}

/* awk's ERE as POSIX regcomp takes it: awk's escapes become the characters they name (inside
 * brackets too, where POSIX would keep the backslash); regex escapes such as \. stay. */
static char *translate_ere(const char *src) {
    size_t n = strlen(src);
    char *out = awk_alloc(2 * n + 3), *o = out;
    int bracket = 0;
    for (size_t i = 0; i < n; i++) {
        char c = src[i], ch;
        if (c == '\\' && i + 1 < n) {
            char d = src[++i];
            if (escaped_char(d, &ch)) {
                *o++ = ch;
            } else if (d >= '0' && d <= '7') {
                int v = 0, k = 0;
                while (k < 3 && i < n && src[i] >= '0' && src[i] <= '7') v = v * 8 + (src[i++] - '0'), k++;
                i--;
                if (!bracket && strchr("\\^$.[]|()*+?{}", v) != NULL && v != 0) *o++ = '\\';
                *o++ = (char)v;
            } else if (bracket) {
                *o++ = d; /* [\.] is a dot: inside brackets the escape only quotes */
            } else if (d == '&') {
                *o++ = '&';
            } else {
                *o++ = '\\';
                *o++ = d;
            }
        } else if (c == '[' && !bracket) {
            bracket = 1;
            *o++ = c;
            if (src[i + 1] == '^') *o++ = src[++i];
            if (src[i + 1] == ']') *o++ = src[++i];
        } else if (c == '[' && bracket && (src[i + 1] == ':' || src[i + 1] == '.' ||
                                           src[i + 1] == '=')) {
            const char close[3] = {src[i + 1], ']', '\0'};
            const char *end = strstr(src + i + 2, close);
            size_t stop = end ? (size_t)(end - src) + 1 : n - 1;
            memcpy(o, src + i, stop - i + 1);
            o += stop - i + 1;
            i = stop;
        } else {
            if (c == ']') bracket = 0;
            *o++ = c;
        }
    }
    *o = '\0';
    return out;
}

regex_t *awk_compile_ere(const char *src, int line) {
    char *ere = translate_ere(src);
    regex_t *re = awk_alloc(sizeof *re);
    /* the empty regex matches everywhere, which POSIX leaves undefined: say so with () */
    int rc = regcomp(re, ere[0] ? ere : "()", REG_EXTENDED);
    free(ere);
    if (rc != 0) {
        char why[128];
        regerror(rc, re, why, sizeof why);
        if (line > 0)
            box_err("awk", "regular expression /%s/: %s at source line %d", src, why, line);
        else
            box_err("awk", "regular expression /%s/: %s", src, why);
        free(re);
        return NULL;
    }
    return re;
}

/* Dynamic regexes (strings used as regexes) by their text. Cleared when full; a regex is
 * only used before the next one is asked for, so none is freed while in use. */
#define REGEX_CACHE 256
static struct {
    char *text;
    regex_t *re;
} cache[REGEX_CACHE];
static int cached;

regex_t *awk_regex(const char *text) {
    for (int i = 0; i < cached; i++)
        if (strcmp(cache[i].text, text) == 0) return cache[i].re;
    if (cached == REGEX_CACHE) {
        for (int i = 0; i < cached; i++) {
            free(cache[i].text);
            regfree(cache[i].re);
            free(cache[i].re);
        }
        cached = 0;
    }
    regex_t *re = awk_compile_ere(text, 0);
    if (re == NULL) {
        fflush(stdout);
        exit(2);
    }
    cache[cached].text = awk_strdup(text);
    cache[cached].re = re;
    cached++;
    return re;
}

/* ---- printf ---- */

static void add_formatted(struct awk_buf *out, const char *spec, int kind, long long i,
                          unsigned long long u, double d, const char *s) {
    char small[256];
    int n;
    switch (kind) {
    case 'd': n = snprintf(small, sizeof small, spec, i); break;
    case 'u': n = snprintf(small, sizeof small, spec, u); break;
    case 'f': n = snprintf(small, sizeof small, spec, d); break;
    default: n = snprintf(small, sizeof small, spec, s); break;
    }
    if (n < 0) awk_fatal("printf: bad format %s", spec);
    if ((size_t)n < sizeof small) {
        awk_buf_add(out, small, (size_t)n);
        return;
    }
    char *big = awk_alloc((size_t)n + 1);
    switch (kind) {
    case 'd': snprintf(big, (size_t)n + 1, spec, i); break;
    case 'u': snprintf(big, (size_t)n + 1, spec, u); break;
    case 'f': snprintf(big, (size_t)n + 1, spec, d); break;
    default: snprintf(big, (size_t)n + 1, spec, s); break;
    }
    awk_buf_add(out, big, (size_t)n);
    free(big);
}

static long long to_integer(double d) {
    if (isnan(d)) return 0;
    if (d >= 9.2e18) return 9223372036854775807LL;
    if (d <= -9.2e18) return -9223372036854775807LL - 1;
    return (long long)d;
}

void awk_sprintf(struct awk_buf *out, const char *fmt, struct awk_cell *args, int nargs) {
    int next = 0;
    char buf[64];
    for (const char *p = fmt; *p; p++) {
        if (*p != '%') {
            awk_buf_addc(out, *p);
            continue;
        }
        if (p[1] == '%') {
            awk_buf_addc(out, '%');
            p++;
            continue;
        }
        /* %[flags][width][.precision]conversion, * taking an argument */
        char spec[64];
        size_t k = 0;
        spec[k++] = '%';
        const char *q = p + 1;
        while (*q && strchr("-+ #0", *q) && k < 10) spec[k++] = *q++;
        for (int part = 0; part < 2; part++) {
            if (part == 1) {
                if (*q != '.') break;
                spec[k++] = *q++;
            }
            if (*q == '*') {
                if (next >= nargs) awk_fatal("not enough arguments passed to printf(\"%s\")", fmt);
                double w = awk_to_num(&args[next++]);
                if (fabs(w) > 1000000) awk_fatal("printf: width or precision %g too large", w);
                if (part == 1 && w < 0) k--; /* a negative precision is none, as in C */
                else k += (size_t)snprintf(spec + k, sizeof spec - k, "%d", (int)w);
                q++;
            } else {
                size_t digits = 0;
                while (*q >= '0' && *q <= '9') {
                    if (++digits > 7) awk_fatal("printf: width or precision too large");
                    spec[k++] = *q++;
                }
            }
        }
        while (*q == 'l' || *q == 'h' || *q == 'L' || *q == 'q') q++; /* C's size letters */
        char conv = *q;
        if (conv == '\0' || strchr("diouxXeEfFgGcs", conv) == NULL) {
            /* not a conversion: the text stays as written */
            awk_buf_add(out, p, (size_t)(q - p) + (conv != '\0'));
            p = conv ? q : q - 1;
            continue;
        }
        if (next >= nargs) awk_fatal("not enough arguments passed to printf(\"%s\")", fmt);
        struct awk_cell *arg = &args[next++];
        switch (conv) {
        case 'd':
        case 'i':
            spec[k++] = 'l';
            spec[k++] = 'l';
            spec[k++] = 'd';
            spec[k] = '\0';
            add_formatted(out, spec, 'd', to_integer(awk_to_num(arg)), 0, 0, NULL);
            break;
        case 'o':
        case 'u':
        case 'x':
        case 'X': {
            spec[k++] = 'l';
            spec[k++] = 'l';
            spec[k++] = conv;
            spec[k] = '\0';
            double d = awk_to_num(arg);
            unsigned long long u = d < 0 ? (unsigned long long)to_integer(d)
                                         : d >= 1.8e19 ? ~0ULL : (unsigned long long)d;
            add_formatted(out, spec, 'u', 0, u, 0, NULL);
            break;
        }
        case 'c': {
            char one[2] = {0, 0};
            if (arg->type == C_NUM || arg->type == C_STRNUM) { /* 65 read as input is A too */
                one[0] = (char)(to_integer(awk_to_num(arg)) & 0xff);
            } else {
                one[0] = awk_to_str(arg, buf)[0];
            }
            spec[k++] = 's';
            spec[k] = '\0';
            if (one[0] == '\0' && arg->type != C_STR) {
                /* a NUL character: %s would stop before it */
                int width = atoi(spec + 1 + strspn(spec + 1, "-+ #0"));
                int left = strchr(spec, '-') != NULL && strchr(spec, '-') < spec + k;
                for (int w = 1; !left && w < width; w++) awk_buf_addc(out, ' ');
                awk_buf_add(out, "", 1);
                for (int w = 1; left && w < width; w++) awk_buf_addc(out, ' ');
            } else {
                add_formatted(out, spec, 's', 0, 0, 0, one);
            }
            break;
        }
        case 's':
            spec[k++] = 's';
            spec[k] = '\0';
            add_formatted(out, spec, 's', 0, 0, 0, awk_to_str(arg, buf));
            break;
        default:
            spec[k++] = conv;
            spec[k] = '\0';
            add_formatted(out, spec, 'f', 0, 0, awk_to_num(arg), NULL);
            break;
        }
        p = q;
    }
}

/* ---- sub and gsub ---- */

/* The replacement text for one match: & is the match, \& a literal &, \\ one backslash. */
static void add_replacement(struct awk_buf *out, const char *repl, const char *match,
                            size_t mlen) {
    for (const char *r = repl; *r; r++) {
        if (*r == '\\' && (r[1] == '&' || r[1] == '\\')) {
            awk_buf_addc(out, *++r);
        } else if (*r == '&') {
            awk_buf_add(out, match, mlen);
        } else {
            awk_buf_addc(out, *r);
        }
    }
}

int awk_substitute(const regex_t *re, const char *repl, const char *target, int global,
                   char **out) {
    size_t len = strlen(target), pos = 0;
    long prev_end = -1; /* where the last non-empty match ended */
    int count = 0;
    struct awk_buf b = {0};
    awk_buf_add(&b, "", 0);
    regmatch_t m;
    while (pos <= len && regexec(re, target + pos, 1, &m, pos > 0 ? REG_NOTBOL : 0) == 0) {
        size_t so = pos + (size_t)m.rm_so, eo = pos + (size_t)m.rm_eo;
        if (so == eo && (long)so == prev_end) {
            /* no empty match right after a match: gsub(/b*\/, "-") makes abc -a-c- */
            if (so >= len) break;
            awk_buf_add(&b, target + pos, so - pos + 1);
            pos = so + 1;
            continue;
        }
        awk_buf_add(&b, target + pos, so - pos);
        add_replacement(&b, repl, target + so, eo - so);
        count++;
        if (so == eo) {
            if (so < len) awk_buf_addc(&b, target[so]);
            pos = so + 1;
        } else {
            pos = eo;
            prev_end = (long)eo;
        }
        if (!global) break;
    }
    if (count == 0) {
        free(b.data);
        return 0;
    }
    if (pos <= len) awk_buf_add(&b, target + pos, len - pos);
    *out = b.data;
    return count;
}
