/* head and tail: the first or last part of files, GNU style (-n/-c with K/M/G suffixes,
 * `head -n -N` to drop the tail, `tail -n +N` to start at a line, the obsolete `-N`
 * shorthand, "==> NAME <==" headers for several files). Input of any size: head streams;
 * tail keeps only a window a little larger than what it must print.
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

enum unit { LINES, BYTES };

struct part_opts {
    enum unit unit;
    uint64_t count;
    bool from_start; /* tail +N, or head -n -N (meaning "all but the last N") */
    int headers;     /* -1 quiet, 0 default (only for several files), 1 verbose */
};

/* GNU's count syntax: digits, then an optional multiplier suffix. */
static bool parse_count(const char *s, uint64_t *out) {
    if (!isdigit((unsigned char)*s)) return false;
    errno = 0;
    char *end;
    unsigned long long v = strtoull(s, &end, 10);
    if (errno == ERANGE) v = UINT64_MAX;
    static const struct {
        const char *suffix;
        uint64_t mult;
    } units[] = {{"", 1},           {"b", 512},          {"K", 1024},          {"KiB", 1024},
                 {"kB", 1000},      {"M", 1048576},      {"MiB", 1048576},     {"MB", 1000000},
                 {"G", 1073741824}, {"GiB", 1073741824}, {"GB", 1000000000}};
    for (size_t i = 0; i < sizeof units / sizeof units[0]; i++) {
        if (strcmp(end, units[i].suffix) == 0) {
            *out = v > UINT64_MAX / units[i].mult ? UINT64_MAX : v * units[i].mult;
            return true;
        }
    }
    return false;
}

/* Parse "N", "+N" or "-N" for -n/-c; the `flip` sign sets from_start. */
static bool parse_arg(const char *name, const char *arg, enum unit unit, char flip,
                      struct part_opts *o) {
    const char *s = arg;
    o->unit = unit;
    o->from_start = false;
    if (*s == '+' || *s == '-') {
        o->from_start = *s == flip;
        s++;
    }
    if (!parse_count(s, &o->count)) {
        box_err(name, "invalid number of %s: '%s'", unit == LINES ? "lines" : "bytes", arg);
        return false;
    }
    return true;
}

static void print_header(const char *file, bool *first) {
    printf("%s==> %s <==\n", *first ? "" : "\n", strcmp(file, "-") == 0 ? "standard input" : file);
    *first = false;
}

/* Read all of `in` into a growing buffer. */
static bool slurp(FILE *in, char **buf, size_t *len) {
    size_t cap = 65536;
    *len = 0;
    *buf = malloc(cap);
    if (*buf == NULL) return false;
    size_t n;
    while ((n = fread(*buf + *len, 1, cap - *len, in)) > 0) {
        *len += n;
        if (*len == cap) {
            char *bigger = realloc(*buf, cap * 2);
            if (bigger == NULL) return false;
            *buf = bigger;
            cap *= 2;
        }
    }
    return !ferror(in);
}

/* Offset in buf[0..len) where the last `count` lines start (a final unterminated line counts). */
static size_t last_lines_start(const char *buf, size_t len, uint64_t count) {
    if (count == 0) return len;
    size_t i = len;
    if (i > 0 && buf[i - 1] == '\n') i--;
    while (i > 0) {
        if (buf[i - 1] == '\n' && --count == 0) return i;
        i--;
    }
    return 0;
}

static bool copy_rest(FILE *in) {
    char buf[65536];
    size_t n;
    while ((n = fread(buf, 1, sizeof buf, in)) > 0) fwrite(buf, 1, n, stdout);
    return !ferror(in);
}

static bool head_one(FILE *in, const struct part_opts *o) {
    if (o->from_start) {
        /* all but the last N lines/bytes: that needs the whole input */
        char *buf;
        size_t len;
        bool ok = slurp(in, &buf, &len);
        size_t keep = o->unit == BYTES ? (o->count >= len ? 0 : len - (size_t)o->count)
                                       : (o->count == 0 ? len : last_lines_start(buf, len, o->count));
        if (ok) fwrite(buf, 1, keep, stdout);
        free(buf);
        return ok;
    }
    uint64_t left = o->count;
    if (o->unit == BYTES) {
        char buf[65536];
        while (left > 0) {
            size_t want = left < sizeof buf ? (size_t)left : sizeof buf;
            size_t n = fread(buf, 1, want, in);
            if (n == 0) break;
            fwrite(buf, 1, n, stdout);
            left -= n;
        }
        return !ferror(in);
    }
    int c;
    while (left > 0 && (c = getc(in)) != EOF) {
        putchar(c);
        if (c == '\n') left--;
    }
    return !ferror(in);
}

static bool tail_one(FILE *in, const struct part_opts *o) {
    if (o->from_start) {
        /* start at line/byte N (1-based): skip N-1 units, then copy */
        uint64_t skip = o->count > 0 ? o->count - 1 : 0;
        int c;
        while (skip > 0 && (c = getc(in)) != EOF) {
            if (o->unit == BYTES || c == '\n') skip--;
        }
        return copy_rest(in);
    }
    /* Keep a window: whenever the buffer doubles, drop what can no longer be printed. */
    size_t cap = 65536, len = 0, trim_at = 1 << 20;
    char *buf = malloc(cap);
    if (buf == NULL) return false;
    size_t n;
    while ((n = fread(buf + len, 1, cap - len, in)) > 0) {
        len += n;
        if (len >= trim_at) {
            size_t start = o->unit == BYTES ? (o->count >= len ? 0 : len - (size_t)o->count)
                                            : last_lines_start(buf, len, o->count);
            memmove(buf, buf + start, len - start);
            len -= start;
            trim_at = len * 2 > (1 << 20) ? len * 2 : (1 << 20);
        }
        if (len == cap) {
            char *bigger = realloc(buf, cap * 2);
            if (bigger == NULL) {
                free(buf);
                errno = ENOMEM;
                return false;
            }
            buf = bigger;
            cap *= 2;
        }
    }
    bool ok = !ferror(in);
    size_t start = o->unit == BYTES ? (o->count >= len ? 0 : len - (size_t)o->count)
                                    : last_lines_start(buf, len, o->count);
    if (ok) fwrite(buf + start, 1, len - start, stdout);
    free(buf);
    return ok;
}

static int run_part(const char *name, int argc, char **argv, bool is_tail) {
    static const struct option longopts[] = {{"lines", required_argument, 0, 'n'},
                                             {"bytes", required_argument, 0, 'c'},
                                             {"quiet", no_argument, 0, 'q'},
                                             {"silent", no_argument, 0, 'q'},
                                             {"verbose", no_argument, 0, 'v'},
                                             {0, 0, 0, 0}};
    struct part_opts o = {LINES, 10, false, 0};
    /* head flips to "all but the last N" on '-'; tail starts at line N on '+' */
    char flip = is_tail ? '+' : '-';
    int first_arg = 1;
    /* obsolete shorthand as the first argument: -N (both), +N (tail) */
    if (argc > 1 && (argv[1][0] == '-' || (is_tail && argv[1][0] == '+')) &&
        isdigit((unsigned char)argv[1][1])) {
        if (!parse_count(argv[1] + 1, &o.count)) {
            box_err(name, "invalid number of lines: '%s'", argv[1] + 1);
            return 1;
        }
        o.from_start = is_tail && argv[1][0] == '+';
        first_arg = 2;
    }
    char **args = argv + first_arg - 1;
    int nargs = argc - first_arg + 1;
    args[0] = argv[0];
    int c;
    opterr = 0;
    while ((c = getopt_long(nargs, args, ":n:c:qv", longopts, NULL)) != -1) {
        switch (c) {
        case 'n':
        case 'c':
            if (!parse_arg(name, optarg, c == 'n' ? LINES : BYTES, flip, &o)) return 1;
            break;
        case 'q': o.headers = -1; break;
        case 'v': o.headers = 1; break;
        case ':': return box_missing_argument(name, 1);
        default: return box_bad_option(name, args);
        }
    }
    int nfiles;
    char **files = box_operands(nargs, args, "-", &nfiles);
    bool headers = o.headers > 0 || (o.headers == 0 && nfiles > 1);
    bool first = true;
    int status = 0;
    for (int i = 0; i < nfiles; i++) {
        FILE *in = box_open_input(files[i]);
        if (in == NULL) {
            box_err(name, "cannot open '%s' for reading: %s", files[i], strerror(errno));
            status = 1;
            continue;
        }
        if (headers) print_header(files[i], &first);
        /* after the header: GNU opens a directory, then fails reading it */
        if (box_input_is_dir(in) || !(is_tail ? tail_one(in, &o) : head_one(in, &o))) {
            box_err(name, "error reading '%s': %s", files[i], strerror(errno));
            status = 1;
        }
        box_close_input(in);
    }
    return status;
}

int cmd_head(int argc, char **argv) { return run_part("head", argc, argv, false); }

int cmd_tail(int argc, char **argv) { return run_part("tail", argc, argv, true); }
