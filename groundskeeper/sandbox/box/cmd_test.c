/* test and [: evaluate a conditional expression the way bash's builtin does (POSIX rules by
 * argument count up to four, a recursive parser with -a/-o/!/parentheses beyond).
 * Exit 0 true, 1 false, 2 error.
 *
 * WASI exposes no permission bits: -r asks whether the file is there to read, -w whether the
 * sandbox lets it be opened for writing (false in a read-only run), and -x is true only for
 * directories, because nothing inside the sandbox can be executed.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "box.h"

struct parser {
    const char *name;
    char **av;
    int n;
    int pos;
    bool failed;
};

static bool fail(struct parser *p, const char *fmt, const char *arg) {
    if (!p->failed) {
        fprintf(stderr, "%s: ", p->name);
        fprintf(stderr, fmt, arg);
        fputc('\n', stderr);
    }
    p->failed = true;
    return false;
}

static bool is_unary(const char *s) {
    static const char *const ops[] = {"-e", "-f", "-d", "-s", "-r", "-w", "-x", "-L", "-h",
                                      "-z", "-n", "-b", "-c", "-p", "-S", "-t", "-g", "-u",
                                      "-k", "-O", "-G", "-N", "-v", "-R", "-a"};
    for (size_t i = 0; i < sizeof ops / sizeof ops[0]; i++)
        if (strcmp(s, ops[i]) == 0) return true;
    return false;
}

static bool is_binary(const char *s) {
    static const char *const ops[] = {"=",   "==",  "!=",  "<",   ">",   "-eq", "-ne", "-lt",
                                      "-le", "-gt", "-ge", "-nt", "-ot", "-ef", "-a",  "-o"};
    for (size_t i = 0; i < sizeof ops / sizeof ops[0]; i++)
        if (strcmp(s, ops[i]) == 0) return true;
    return false;
}

/* bash's integer syntax for test: optional blanks, sign, decimal digits, optional blanks */
static bool to_int(struct parser *p, const char *s, intmax_t *out) {
    const char *q = s;
    while (*q == ' ' || *q == '\t') q++;
    char *end;
    errno = 0;
    long long v = strtoll(q, &end, 10);
    const char *digits = q + (*q == '-' || *q == '+');
    bool ok = *digits >= '0' && *digits <= '9' && errno != ERANGE;
    while (*end == ' ' || *end == '\t') end++;
    if (!ok || *end != '\0') return fail(p, "%s: integer expression expected", s);
    *out = v;
    return true;
}

/* WASI's fdstat reports full rights whatever the preopen allows, so ask by opening for
 * writing: a read-only workdir refuses (EPERM), a writable one accepts, or says EISDIR for a
 * directory. Without O_CREAT or O_TRUNC the open changes nothing. */
static bool writable(const char *path) {
    struct stat sb;
    if (stat(path, &sb) != 0) return false;
    int fd = open(path, O_WRONLY);
    if (fd >= 0) {
        close(fd);
        return true;
    }
    return errno == EISDIR;
}

static bool unary(struct parser *p, const char *op, const char *arg) {
    struct stat sb;
    switch (op[1]) {
    case 'z': return arg[0] == '\0';
    case 'n': return arg[0] != '\0';
    case 'e':
    case 'a': return stat(arg, &sb) == 0;
    case 'f': return stat(arg, &sb) == 0 && S_ISREG(sb.st_mode);
    case 'd': return stat(arg, &sb) == 0 && S_ISDIR(sb.st_mode);
    case 's': return stat(arg, &sb) == 0 && sb.st_size > 0;
    case 'b': return stat(arg, &sb) == 0 && S_ISBLK(sb.st_mode);
    case 'c': return stat(arg, &sb) == 0 && S_ISCHR(sb.st_mode);
    case 'p': return stat(arg, &sb) == 0 && S_ISFIFO(sb.st_mode);
    case 'S': return stat(arg, &sb) == 0 && S_ISSOCK(sb.st_mode);
    case 'L':
    case 'h': return lstat(arg, &sb) == 0 && S_ISLNK(sb.st_mode);
    case 'r': return access(arg, R_OK) == 0;
    case 'w': return writable(arg);
    case 'x': return stat(arg, &sb) == 0 && S_ISDIR(sb.st_mode);
    case 't': {
        intmax_t fd;
        return to_int(p, arg, &fd) && fd >= 0 && fd <= 1024 && isatty((int)fd);
    }
    default:
        /* -g -u -k -O -G -N -v -R need what WASI does not expose (modes, owners, shell state) */
        return fail(p, "unsupported operator %s (not in the sandbox)", op);
    }
}

static bool newer(const struct stat *a, const struct stat *b) {
    if (a->st_mtim.tv_sec != b->st_mtim.tv_sec) return a->st_mtim.tv_sec > b->st_mtim.tv_sec;
    return a->st_mtim.tv_nsec > b->st_mtim.tv_nsec;
}

static bool binary(struct parser *p, const char *l, const char *op, const char *r) {
    if (strcmp(op, "=") == 0 || strcmp(op, "==") == 0) return strcmp(l, r) == 0;
    if (strcmp(op, "!=") == 0) return strcmp(l, r) != 0;
    if (strcmp(op, "<") == 0) return strcmp(l, r) < 0;
    if (strcmp(op, ">") == 0) return strcmp(l, r) > 0;
    if (strcmp(op, "-a") == 0) return l[0] != '\0' && r[0] != '\0';
    if (strcmp(op, "-o") == 0) return l[0] != '\0' || r[0] != '\0';
    if (strcmp(op, "-nt") == 0 || strcmp(op, "-ot") == 0 || strcmp(op, "-ef") == 0) {
        struct stat a, b;
        bool has_a = stat(l, &a) == 0, has_b = stat(r, &b) == 0;
        if (op[1] == 'n') return has_a && (!has_b || newer(&a, &b));
        if (op[1] == 'o') return has_b && (!has_a || newer(&b, &a));
        return has_a && has_b && a.st_dev == b.st_dev && a.st_ino == b.st_ino;
    }
    intmax_t x, y;
    if (!to_int(p, l, &x) || !to_int(p, r, &y)) return false;
    if (strcmp(op, "-eq") == 0) return x == y;
    if (strcmp(op, "-ne") == 0) return x != y;
    if (strcmp(op, "-lt") == 0) return x < y;
    if (strcmp(op, "-le") == 0) return x <= y;
    if (strcmp(op, "-gt") == 0) return x > y;
    return x >= y; /* -ge */
}

static bool parse_or(struct parser *p);

static bool parse_term(struct parser *p) {
    if (p->pos >= p->n) return fail(p, "%s", "argument expected");
    const char *a = p->av[p->pos];
    if (strcmp(a, "!") == 0) {
        p->pos++;
        return !parse_term(p);
    }
    if (strcmp(a, "(") == 0) {
        p->pos++;
        bool v = parse_or(p);
        if (p->pos >= p->n || strcmp(p->av[p->pos], ")") != 0) return fail(p, "%s", "')' expected");
        p->pos++;
        return v;
    }
    /* here -a and -o are the connectives, not binary string tests */
    if (p->pos + 2 < p->n && is_binary(p->av[p->pos + 1]) &&
        strcmp(p->av[p->pos + 1], "-a") != 0 && strcmp(p->av[p->pos + 1], "-o") != 0) {
        bool v = binary(p, a, p->av[p->pos + 1], p->av[p->pos + 2]);
        p->pos += 3;
        return v;
    }
    if (is_unary(a) && strcmp(a, "-a") != 0) {
        if (p->pos + 1 >= p->n) return fail(p, "%s: argument expected", a);
        bool v = unary(p, a, p->av[p->pos + 1]);
        p->pos += 2;
        return v;
    }
    p->pos++;
    return a[0] != '\0';
}

static bool parse_and(struct parser *p) {
    bool v = parse_term(p);
    while (p->pos < p->n && strcmp(p->av[p->pos], "-a") == 0) {
        p->pos++;
        bool r = parse_term(p);
        v = v && r;
    }
    return v;
}

static bool parse_or(struct parser *p) {
    bool v = parse_and(p);
    while (p->pos < p->n && strcmp(p->av[p->pos], "-o") == 0) {
        p->pos++;
        bool r = parse_and(p);
        v = v || r;
    }
    return v;
}

static bool general(struct parser *p, int from) {
    p->pos = from;
    bool v = parse_or(p);
    if (!p->failed && p->pos < p->n) fail(p, "%s: unexpected argument", p->av[p->pos]);
    return v;
}

/* POSIX's rules for 0 to 4 arguments (starting at av[from]); beyond, the parser. */
static bool evaluate(struct parser *p, int from) {
    char **a = p->av + from;
    int n = p->n - from;
    switch (n) {
    case 0: return false;
    case 1: return a[0][0] != '\0';
    case 2:
        if (strcmp(a[0], "!") == 0) return a[1][0] == '\0';
        if (is_unary(a[0])) return unary(p, a[0], a[1]);
        return fail(p, "%s: unary operator expected", a[0]);
    case 3:
        if (is_binary(a[1])) return binary(p, a[0], a[1], a[2]);
        if (strcmp(a[0], "!") == 0) return !evaluate(p, from + 1);
        if (strcmp(a[0], "(") == 0 && strcmp(a[2], ")") == 0) return a[1][0] != '\0';
        return general(p, from);
    case 4:
        if (strcmp(a[0], "!") == 0) return !evaluate(p, from + 1);
        if (strcmp(a[0], "(") == 0 && strcmp(a[3], ")") == 0) {
            p->n--;
            bool v = evaluate(p, from + 1);
            p->n++;
            return v;
        }
        return general(p, from);
    default: return general(p, from);
    }
}

int cmd_test(int argc, char **argv) {
    const char *name = argc > 0 && strcmp(argv[0], "[") == 0 ? "[" : "test";
    int n = argc - 1;
    if (name[0] == '[') {
        if (n < 1 || strcmp(argv[argc - 1], "]") != 0) {
            box_err("[", "missing `]'");
            return 2;
        }
        n--;
    }
    struct parser p = {name, argv + 1, n, 0, false};
    bool v = evaluate(&p, 0);
    if (p.failed) return 2;
    return v ? 0 : 1;
}
