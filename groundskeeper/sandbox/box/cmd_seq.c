/* seq: print a sequence of numbers, as GNU seq does (precision taken from FIRST and INCREMENT,
 * -w equal width, -s separator, -f one floating-point conversion). Output streams: nothing is
 * accumulated, so `seq 1 100000000000` writes until something stops it.
 */
#include <ctype.h>
#include <errno.h>
#include <getopt.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "box.h"

struct operand {
    const char *text;
    double value;
    int precision; /* digits after the point, exponent taken into account */
    int width;     /* printed width for -w, GNU's estimate from the text */
    bool integer;  /* plain [+-]digits */
};

static bool parse_operand(const char *s, struct operand *op) {
    char *end;
    errno = 0;
    op->text = s;
    op->value = strtod(s, &end);
    if (end == s || *end != '\0' || op->value != op->value) {
        box_err("seq", "invalid floating point argument: '%s'", s);
        return false;
    }
    const char *p = s + (*s == '+' || *s == '-');
    op->integer = *p != '\0' && strspn(p, "0123456789") == strlen(p);
    const char *dot = strchr(s, '.');
    const char *e = strpbrk(s, "eE");
    int frac = 0;
    if (dot != NULL) frac = (int)strcspn(dot + 1, "eE");
    op->width = (int)strlen(s);
    op->precision = frac;
    if (e != NULL) {
        long exponent = strtol(e + 1, NULL, 10);
        if (exponent < 0) op->precision = frac + (int)(-exponent);
        else op->precision = frac - (exponent < frac ? (int)exponent : frac);
        op->width = -1; /* estimated from the printed value instead */
    }
    return true;
}

static int printed_width(const char *fmt, double v) { return snprintf(NULL, 0, fmt, v); }

/* A user format must hold exactly one floating-point conversion (and any number of %%). */
static bool valid_format(const char *fmt) {
    int conversions = 0;
    for (const char *p = fmt; *p; p++) {
        if (*p != '%') continue;
        if (p[1] == '%') {
            p++;
            continue;
        }
        p++;
        p += strspn(p, "-+ #0'");
        p += strspn(p, "0123456789");
        if (*p == '.') p += 1 + strspn(p + 1, "0123456789");
        if (*p == '\0' || strchr("eEfFgGaA", *p) == NULL) return false;
        conversions++;
    }
    return conversions == 1;
}

static int seq_integers(long long first, long long step, long long last, const char *sep) {
    if (step > 0 ? first > last : first < last) return 0;
    for (long long x = first;;) {
        printf("%lld", x);
        /* stop before x + step would pass LAST or overflow */
        if (step > 0 ? x > last - step : x < last - step) break;
        x += step;
        fputs(sep, stdout);
        if (ferror(stdout)) return 1;
    }
    putchar('\n');
    return 0;
}

static int seq_floats(const struct operand *first, double step, const struct operand *last,
                      const char *fmt, const char *sep) {
    if (step > 0 ? first->value > last->value : first->value < last->value) return 0;
    char last_text[512], prev_text[512], next_text[512];
    snprintf(last_text, sizeof last_text, fmt, last->value);
    double x = first->value;
    printf(fmt, x);
    for (uint64_t i = 1;; i++) {
        /* first + i*step, not repeated addition, so errors do not accumulate */
        double next = first->value + (double)i * step;
        if (step > 0 ? next > last->value : next < last->value) {
            /* GNU still prints a value that rounding put just past LAST when it prints as
             * LAST and differs from the previous one: `seq 0 0.1 1` ends with 1.0. */
            snprintf(next_text, sizeof next_text, fmt, next);
            snprintf(prev_text, sizeof prev_text, fmt, x);
            if (strcmp(next_text, last_text) == 0 && strcmp(next_text, prev_text) != 0) {
                fputs(sep, stdout);
                fputs(next_text, stdout);
            }
            break;
        }
        fputs(sep, stdout);
        printf(fmt, next);
        if (ferror(stdout)) return 1;
        x = next;
    }
    putchar('\n');
    return 0;
}

int cmd_seq(int argc, char **argv) {
    static const struct option longopts[] = {{"separator", required_argument, 0, 's'},
                                             {"equal-width", no_argument, 0, 'w'},
                                             {"format", required_argument, 0, 'f'},
                                             {0, 0, 0, 0}};
    const char *sep = "\n", *user_fmt = NULL;
    bool equal_width = false;
    opterr = 0;
    /* A negative number ends the options (GNU: `seq -5 5`), so scan by hand up to it. */
    int end = 1;
    while (end < argc && argv[end][0] == '-' && argv[end][1] != '\0' &&
           !isdigit((unsigned char)argv[end][1]) && argv[end][1] != '.') {
        if (strcmp(argv[end], "--") == 0) break;
        const char *a = argv[end];
        bool takes_arg = strcmp(a, "-s") == 0 || strcmp(a, "-f") == 0 ||
                         strcmp(a, "--separator") == 0 || strcmp(a, "--format") == 0;
        end += takes_arg ? 2 : 1;
    }
    if (end > argc) end = argc;
    int c;
    while ((c = getopt_long(end, argv, ":s:f:w", longopts, NULL)) != -1) {
        switch (c) {
        case 's': sep = optarg; break;
        case 'f': user_fmt = optarg; break;
        case 'w': equal_width = true; break;
        case ':': return box_missing_argument("seq", 1);
        default: return box_bad_option("seq", argv);
        }
    }
    int first_operand = optind < end ? end : optind;
    if (first_operand < argc && strcmp(argv[first_operand], "--") == 0) first_operand++;
    int n = argc - first_operand;
    if (n < 1) {
        box_err("seq", "missing operand");
        return 1;
    }
    if (n > 3) {
        box_err("seq", "extra operand '%s'", argv[first_operand + 3]);
        return 1;
    }
    struct operand ops[3];
    for (int i = 0; i < n; i++) {
        if (!parse_operand(argv[first_operand + i], &ops[i])) return 1;
    }
    struct operand first = {"1", 1, 0, 1, true}, step = {"1", 1, 0, 1, true}, last = ops[n - 1];
    if (n >= 2) first = ops[0];
    if (n == 3) step = ops[1];
    if (step.value == 0) {
        box_err("seq", "invalid Zero increment value: '%s'", step.text);
        return 1;
    }
    if (user_fmt != NULL && equal_width) {
        box_err("seq", "format string may not be specified when printing equal width strings");
        return 1;
    }
    if (user_fmt != NULL) {
        if (!valid_format(user_fmt)) {
            box_err("seq", "invalid format string: '%s'", user_fmt);
            return 1;
        }
        return seq_floats(&first, step.value, &last, user_fmt, sep);
    }
    int prec = first.precision > step.precision ? first.precision : step.precision;
    if (first.integer && step.integer && last.integer && !equal_width) {
        errno = 0;
        long long a = strtoll(first.text, NULL, 10), b = strtoll(step.text, NULL, 10),
                  z = strtoll(last.text, NULL, 10);
        if (errno == 0) return seq_integers(a, b, z, sep);
    }
    char fmt[64];
    snprintf(fmt, sizeof fmt, "%%.%df", prec);
    if (equal_width) {
        /* GNU's width: the operands' text widths adjusted to the output precision */
        int widths[2] = {0, 0};
        const struct operand *ends[2] = {&first, &last};
        for (int i = 0; i < 2; i++) {
            const struct operand *op = ends[i];
            int w = printed_width(fmt, op->value);
            if (op->width >= 0) {
                int est = op->width + (prec - op->precision);
                if (op->precision > 0 && prec == 0) est--;
                if (op->precision == 0 && prec > 0) est++;
                if (est > w) w = est;
            }
            widths[i] = w;
        }
        int width = widths[0] > widths[1] ? widths[0] : widths[1];
        snprintf(fmt, sizeof fmt, "%%0%d.%df", width, prec);
    }
    return seq_floats(&first, step.value, &last, fmt, sep);
}
