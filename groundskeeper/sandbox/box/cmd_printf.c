/* echo and printf, as bash's builtins behave (bash is what people compare against).
 * They share the backslash-escape decoder: echo -e and printf's %b use one dialect
 * (\0NNN octal, \c stops all output), the printf format string another (\NNN octal).
 */
#include <ctype.h>
#include <errno.h>
#include <inttypes.h>
#include <limits.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "box.h"

/* Write code point cp as the C locale can: ASCII as itself, anything else back as the
 * escape bash prints for it there (\u00E9 / \U0001F600, upper-case hex). */
static void put_codepoint(FILE *out, unsigned long cp, bool big) {
    if (cp < 0x80) {
        putc((int)cp, out);
    } else if (big) {
        fprintf(out, "\\U%08lX", cp);
    } else {
        fprintf(out, "\\u%04lX", cp);
    }
}

static int hexval(int c) {
    if (c >= '0' && c <= '9') return c - '0';
    if (c >= 'a' && c <= 'f') return c - 'a' + 10;
    if (c >= 'A' && c <= 'F') return c - 'A' + 10;
    return -1;
}

/* Decode the escape starting after the backslash at s; write its bytes and return how many
 * characters of s it used. `echo_style` selects echo -e/%b octal (\0NNN) over the format
 * string's (\NNN). Sets *stop when \c ends all output (echo style only). */
static size_t put_escape(FILE *out, const char *s, bool echo_style, bool *stop) {
    size_t i = 0;
    int c = (unsigned char)s[0];
    switch (c) {
    case 'a': putc('\a', out); return 1;
    case 'b': putc('\b', out); return 1;
    case 'e':
    case 'E': putc(033, out); return 1;
    case 'f': putc('\f', out); return 1;
    case 'n': putc('\n', out); return 1;
    case 'r': putc('\r', out); return 1;
    case 't': putc('\t', out); return 1;
    case 'v': putc('\v', out); return 1;
    case '\\': putc('\\', out); return 1;
    case 'c':
        if (echo_style) {
            *stop = true;
            return 1;
        }
        break;
    case 'x': {
        int v = 0, n = 0;
        while (n < 2 && hexval((unsigned char)s[1 + n]) >= 0) v = v * 16 + hexval((unsigned char)s[1 + n++]);
        if (n == 0) break;
        putc(v, out);
        return 1 + (size_t)n;
    }
    case 'u':
    case 'U': {
        int max = c == 'u' ? 4 : 8, n = 0;
        unsigned long v = 0;
        while (n < max && hexval((unsigned char)s[1 + n]) >= 0) v = v * 16 + (unsigned long)hexval((unsigned char)s[1 + n++]);
        if (n == 0) break;
        put_codepoint(out, v, c == 'U');
        return 1 + (size_t)n;
    }
    default:
        break;
    }
    if (c >= '0' && c <= '7') {
        /* echo style: \0 then up to three octal digits; also \NNN as bash's echo accepts */
        int v = 0, n = 0, max = 3;
        if (echo_style && c == '0') {
            i = 1;
        }
        while (n < max && s[i + (size_t)n] >= '0' && s[i + (size_t)n] <= '7') v = v * 8 + (s[i + (size_t)n++] - '0');
        putc(v & 0xFF, out);
        return i + (size_t)n;
    }
    if (!echo_style && (c == '"' || c == '\'' || c == '?')) {
        putc(c, out);
        return 1;
    }
    /* unknown escape: keep the backslash and the character */
    putc('\\', out);
    if (c == '\0') return 0;
    putc(c, out);
    return 1;
}

/* Print s decoding echo-style escapes; returns false when \c asked to stop everything. */
static bool put_echo_escaped(FILE *out, const char *s) {
    bool stop = false;
    for (size_t i = 0; s[i] != '\0' && !stop; i++) {
        if (s[i] == '\\' && s[i + 1] != '\0') {
            i += put_escape(out, s + i + 1, true, &stop);
        } else {
            putc((unsigned char)s[i], out);
        }
    }
    return !stop;
}

int cmd_echo(int argc, char **argv) {
    bool newline = true, escapes = false;
    int i = 1;
    /* bash: an argument made only of n/e/E after '-' is options; anything else is text. */
    for (; i < argc; i++) {
        const char *a = argv[i];
        if (a[0] != '-' || a[1] == '\0' || strspn(a + 1, "neE") != strlen(a + 1)) break;
        for (const char *p = a + 1; *p; p++) {
            if (*p == 'n') newline = false;
            else if (*p == 'e') escapes = true;
            else escapes = false;
        }
    }
    for (int first = i; i < argc; i++) {
        if (i > first) putchar(' ');
        if (escapes) {
            if (!put_echo_escaped(stdout, argv[i])) return 0;
        } else {
            fputs(argv[i], stdout);
        }
    }
    if (newline) putchar('\n');
    return 0;
}

/* ---- printf ---- */

struct pf_state {
    char **args;
    int nargs;
    int next;
    int status;
    bool stop;
};

static const char *next_arg(struct pf_state *st) {
    if (st->next < st->nargs) return st->args[st->next++];
    return NULL;
}

/* bash's number parsing: C integer syntax (0x.., 0..), or 'c / "c for a character's code. */
static intmax_t arg_int(struct pf_state *st, const char *a) {
    if (a == NULL) return 0;
    if (a[0] == '\'' || a[0] == '"') return (unsigned char)a[1];
    errno = 0;
    char *end;
    intmax_t v;
    const char *p = a;
    while (isspace((unsigned char)*p)) p++;
    if (*p == '-') {
        v = strtoimax(a, &end, 0);
    } else {
        uintmax_t u = strtoumax(a, &end, 0);
        v = (intmax_t)u;
    }
    if (end == a || *end != '\0' || *p == '\0') {
        box_err("printf", "%s: invalid number", a);
        st->status = 1;
    } else if (errno == ERANGE) {
        box_err("printf", "%s: Result too large", a);
        st->status = 1;
    }
    return v;
}

static double arg_double(struct pf_state *st, const char *a) {
    if (a == NULL) return 0;
    if (a[0] == '\'' || a[0] == '"') return (unsigned char)a[1];
    char *end;
    errno = 0;
    double v = strtod(a, &end);
    if (end == a || *end != '\0') {
        box_err("printf", "%s: invalid number", a);
        st->status = 1;
    }
    return v;
}

/* Print s with the field's width/precision applied (strings are bytes in the C locale). */
static void put_padded(const char *s, size_t len, bool left, int width, int prec) {
    if (prec >= 0 && (size_t)prec < len) len = (size_t)prec;
    size_t pad = width > 0 && (size_t)width > len ? (size_t)width - len : 0;
    if (!left)
        for (size_t k = 0; k < pad; k++) putchar(' ');
    fwrite(s, 1, len, stdout);
    if (left)
        for (size_t k = 0; k < pad; k++) putchar(' ');
}

/* %b: decode the argument's escapes into a buffer so width/precision can apply. */
static void put_b(struct pf_state *st, const char *a, bool left, int width, int prec) {
    char *buf = NULL;
    size_t size = 0;
    FILE *mem = open_memstream(&buf, &size);
    if (mem == NULL) {
        box_perror("printf", "memory");
        st->status = 1;
        return;
    }
    bool ok = put_echo_escaped(mem, a ? a : "");
    fclose(mem);
    put_padded(buf, size, left, width, prec);
    free(buf);
    if (!ok) st->stop = true;
}

/* One pass over the format; returns false on a fatal format error. */
static bool run_format(struct pf_state *st, const char *fmt) {
    for (size_t i = 0; fmt[i] != '\0' && !st->stop; i++) {
        if (fmt[i] == '\\') {
            bool dummy = false;
            if (fmt[i + 1] == '\0') {
                putchar('\\');
                continue;
            }
            i += put_escape(stdout, fmt + i + 1, false, &dummy);
            continue;
        }
        if (fmt[i] != '%') {
            putchar((unsigned char)fmt[i]);
            continue;
        }
        size_t start = i++;
        if (fmt[i] == '%') {
            putchar('%');
            continue;
        }
        char flags[8];
        size_t nflags = 0;
        while (fmt[i] != '\0' && strchr("-+ #0", fmt[i]) != NULL) {
            if (nflags < sizeof flags - 1) flags[nflags++] = fmt[i];
            i++;
        }
        flags[nflags] = '\0';
        bool left = strchr(flags, '-') != NULL;
        int width = -1, prec = -1;
        if (fmt[i] == '*') {
            intmax_t w = arg_int(st, next_arg(st));
            if (w < 0) {
                left = true;
                w = -w;
            }
            width = w > INT_MAX ? INT_MAX : (int)w;
            i++;
        } else {
            while (isdigit((unsigned char)fmt[i])) {
                width = (width < 0 ? 0 : width) * 10 + (fmt[i++] - '0');
                if (width > 1000000) width = 1000000;
            }
        }
        if (fmt[i] == '.') {
            i++;
            prec = 0;
            if (fmt[i] == '*') {
                intmax_t p = arg_int(st, next_arg(st));
                prec = p < 0 ? -1 : p > INT_MAX ? INT_MAX : (int)p;
                i++;
            } else {
                while (isdigit((unsigned char)fmt[i])) {
                    prec = prec * 10 + (fmt[i++] - '0');
                    if (prec > 1000000) prec = 1000000;
                }
            }
        }
        /* length modifiers are accepted and ignored, as bash does */
        while (fmt[i] != '\0' && strchr("hlLjzt", fmt[i]) != NULL) i++;
        char conv = fmt[i];
        char spec[32];
        int n;
        if (width >= 0 && prec >= 0) n = snprintf(spec, sizeof spec, "%%%s%d.%d", flags, width, prec);
        else if (width >= 0) n = snprintf(spec, sizeof spec, "%%%s%d", flags, width);
        else if (prec >= 0) n = snprintf(spec, sizeof spec, "%%%s.%d", flags, prec);
        else n = snprintf(spec, sizeof spec, "%%%s", flags);
        if (n < 0 || (size_t)n > sizeof spec - 4) return false;
        size_t sl = (size_t)n;
        switch (conv) {
        case 's': {
            const char *a = next_arg(st);
            if (a == NULL) a = "";
            put_padded(a, strlen(a), left, width, prec);
            break;
        }
        case 'b':
            put_b(st, next_arg(st), left, width, prec);
            break;
        case 'c': {
            const char *a = next_arg(st);
            char ch = a != NULL ? a[0] : '\0';
            put_padded(&ch, 1, left, width, -1);
            break;
        }
        case 'd':
        case 'i': {
            intmax_t v = arg_int(st, next_arg(st));
            memcpy(spec + sl, "jd", 3);
            printf(spec, v);
            break;
        }
        case 'u':
        case 'x':
        case 'X':
        case 'o': {
            uintmax_t v = (uintmax_t)arg_int(st, next_arg(st));
            spec[sl] = 'j';
            spec[sl + 1] = conv;
            spec[sl + 2] = '\0';
            printf(spec, v);
            break;
        }
        case 'f':
        case 'F':
        case 'e':
        case 'E':
        case 'g':
        case 'G': {
            double v = arg_double(st, next_arg(st));
            spec[sl] = conv;
            spec[sl + 1] = '\0';
            printf(spec, v);
            break;
        }
        case '\0':
            box_err("printf", "%s: missing format character", fmt + start);
            st->status = 1;
            return false;
        default:
            if (strchr("aAqQ(n", conv) != NULL) {
                box_err("printf", "%%%c: unsupported conversion (not in the sandbox)", conv);
                st->status = 2;
            } else {
                box_err("printf", "`%c': invalid format character", conv);
                st->status = 1;
            }
            return false;
        }
    }
    return true;
}

int cmd_printf(int argc, char **argv) {
    int i = 1;
    if (i < argc && argv[i][0] == '-' && argv[i][1] != '\0') {
        if (strcmp(argv[i], "--") == 0) {
            i++;
        } else {
            return box_usage("printf", argv[i]);
        }
    }
    if (i >= argc) {
        box_err("printf", "usage: printf format [arguments]");
        return 2;
    }
    struct pf_state st = {argv + i + 1, argc - i - 1, 0, 0, false};
    const char *fmt = argv[i];
    /* The format is reused while arguments remain, as long as a pass consumes some. */
    do {
        int before = st.next;
        if (!run_format(&st, fmt)) break;
        if (st.next == before) break;
    } while (st.next < st.nargs && !st.stop);
    return st.status;
}
