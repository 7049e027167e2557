/* find: walk directory trees and print the paths an expression selects, GNU style: paths
 * are the start point joined with names (`find . -name '*.txt'` prints ./a.txt), directories
 * come before their contents in directory order, links are not followed.
 * Tests: -name -iname -path -wholename -type (f d l, comma lists) -empty -newer -true -false;
 * actions: -print -print0 -delete; operators: ! -not -a -and -o -or ( ) and juxtaposition;
 * options: -maxdepth -mindepth -depth. -exec and friends cannot run in the sandbox.
 */
#include <dirent.h>
#include <errno.h>
#include <fnmatch.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "box.h"

enum kind { K_AND, K_OR, K_NOT, K_NAME, K_INAME, K_PATH, K_TYPE, K_EMPTY, K_NEWER, K_TRUE,
            K_FALSE, K_PRINT, K_PRINT0, K_DELETE };

struct node {
    enum kind kind;
    struct node *left, *right;
    const char *arg;
    struct timespec newer_than;
};

struct finder {
    char **av;
    int n;
    int pos;
    bool failed;
    bool has_action;
    bool depth_first;
    long maxdepth, mindepth;
    int status;
};

static struct node *new_node(enum kind kind, struct node *l, struct node *r, const char *arg) {
    struct node *n = box_need("find", calloc(1, sizeof *n), 1);
    n->kind = kind;
    n->left = l;
    n->right = r;
    n->arg = arg;
    return n;
}

static struct node *parse_or(struct finder *f);

static const char *operand(struct finder *f, const char *opt) {
    if (f->pos >= f->n) {
        box_err("find", "missing argument to '%s'", opt);
        f->failed = true;
        return NULL;
    }
    return f->av[f->pos++];
}

static bool parse_depth(struct finder *f, const char *opt, long *out) {
    const char *v = operand(f, opt);
    if (v == NULL) return false;
    char *end;
    long d = strtol(v, &end, 10);
    if (*v == '\0' || *end != '\0' || d < 0) {
        box_err("find", "Expected a positive decimal integer argument to %s, but got '%s'", opt, v);
        f->failed = true;
        return false;
    }
    *out = d;
    return true;
}

static struct node *parse_primary(struct finder *f) {
    if (f->pos >= f->n) {
        box_err("find", "expected an expression");
        f->failed = true;
        return NULL;
    }
    const char *a = f->av[f->pos++];
    if (strcmp(a, "(") == 0) {
        struct node *e = parse_or(f);
        if (f->failed) return NULL;
        if (f->pos >= f->n || strcmp(f->av[f->pos], ")") != 0) {
            box_err("find", "invalid expression; I was expecting to find a ')' somewhere");
            f->failed = true;
            return NULL;
        }
        f->pos++;
        return e;
    }
    if (strcmp(a, "!") == 0 || strcmp(a, "-not") == 0) {
        struct node *e = parse_primary(f);
        return e == NULL ? NULL : new_node(K_NOT, e, NULL, NULL);
    }
    static const struct {
        const char *name;
        enum kind kind;
        bool takes_arg;
    } tests[] = {{"-name", K_NAME, true},   {"-iname", K_INAME, true}, {"-path", K_PATH, true},
                 {"-wholename", K_PATH, true}, {"-type", K_TYPE, true}, {"-empty", K_EMPTY, false},
                 {"-newer", K_NEWER, true},  {"-true", K_TRUE, false},  {"-false", K_FALSE, false},
                 {"-print", K_PRINT, false}, {"-print0", K_PRINT0, false},
                 {"-delete", K_DELETE, false}};
    for (size_t i = 0; i < sizeof tests / sizeof tests[0]; i++) {
        if (strcmp(a, tests[i].name) != 0) continue;
        const char *arg = NULL;
        if (tests[i].takes_arg && (arg = operand(f, a)) == NULL) return NULL;
        struct node *n = new_node(tests[i].kind, NULL, NULL, arg);
        if (n->kind == K_PRINT || n->kind == K_PRINT0 || n->kind == K_DELETE) f->has_action = true;
        if (n->kind == K_DELETE) f->depth_first = true;
        if (n->kind == K_TYPE && strspn(arg, "fdl,") != strlen(arg)) {
            box_err("find", "unsupported -type '%s' (f, d and l are in the sandbox)", arg);
            f->failed = true;
            f->status = 2;
            return NULL;
        }
        if (n->kind == K_NEWER) {
            struct stat sb;
            if (stat(arg, &sb) != 0) {
                box_perror("find", arg);
                f->failed = true;
                return NULL;
            }
            n->newer_than = sb.st_mtim;
        }
        return n;
    }
    /* options: global, wherever they appear; they match everything */
    if (strcmp(a, "-maxdepth") == 0) return parse_depth(f, a, &f->maxdepth) ? new_node(K_TRUE, NULL, NULL, NULL) : NULL;
    if (strcmp(a, "-mindepth") == 0) return parse_depth(f, a, &f->mindepth) ? new_node(K_TRUE, NULL, NULL, NULL) : NULL;
    if (strcmp(a, "-depth") == 0) {
        f->depth_first = true;
        return new_node(K_TRUE, NULL, NULL, NULL);
    }
    if (a[0] == '-' && a[1] != '\0') {
        if (strncmp(a, "-exec", 5) == 0 || strncmp(a, "-ok", 3) == 0)
            box_err("find", "%s: running commands is not possible in the sandbox", a);
        else
            box_usage("find", a);
    } else {
        box_err("find", "paths must precede expression: '%s'", a);
    }
    f->failed = true;
    f->status = 2;
    return NULL;
}

static bool at_operator(struct finder *f, const char *a, const char *b) {
    if (f->pos < f->n && (strcmp(f->av[f->pos], a) == 0 || strcmp(f->av[f->pos], b) == 0)) {
        f->pos++;
        return true;
    }
    return false;
}

static struct node *parse_and(struct finder *f) {
    struct node *l = parse_primary(f);
    while (l != NULL && f->pos < f->n) {
        const char *next = f->av[f->pos];
        if (strcmp(next, "-o") == 0 || strcmp(next, "-or") == 0 || strcmp(next, ")") == 0) break;
        at_operator(f, "-a", "-and"); /* juxtaposition means -a too */
        struct node *r = parse_primary(f);
        if (r == NULL) return NULL;
        l = new_node(K_AND, l, r, NULL);
    }
    return l;
}

static struct node *parse_or(struct finder *f) {
    struct node *l = parse_and(f);
    while (l != NULL && at_operator(f, "-o", "-or")) {
        struct node *r = parse_and(f);
        if (r == NULL) return NULL;
        l = new_node(K_OR, l, r, NULL);
    }
    return l;
}

/* The last component as a string of its own (a start point may end in slashes). */
static const char *base_name(const char *path, char *buf, size_t size) {
    size_t len;
    const char *last = box_last_component(path, &len);
    snprintf(buf, size, "%.*s", (int)len, last);
    return buf;
}

static bool is_empty(const char *path, const struct stat *st) {
    if (S_ISREG(st->st_mode)) return st->st_size == 0;
    if (!S_ISDIR(st->st_mode)) return false;
    DIR *d = opendir(path);
    if (d == NULL) return false;
    struct dirent *ent;
    bool empty = true;
    while (empty && (ent = readdir(d)) != NULL)
        if (strcmp(ent->d_name, ".") != 0 && strcmp(ent->d_name, "..") != 0) empty = false;
    closedir(d);
    return empty;
}

static bool type_matches(const char *types, const struct stat *st) {
    char t = S_ISDIR(st->st_mode) ? 'd' : S_ISLNK(st->st_mode) ? 'l' : S_ISREG(st->st_mode) ? 'f' : '?';
    return t != '?' && strchr(types, t) != NULL;
}

static bool eval(struct finder *f, const struct node *n, const char *path, const struct stat *st) {
    char base[1024];
    switch (n->kind) {
    case K_AND: return eval(f, n->left, path, st) && eval(f, n->right, path, st);
    case K_OR: return eval(f, n->left, path, st) || eval(f, n->right, path, st);
    case K_NOT: return !eval(f, n->left, path, st);
    case K_NAME: return fnmatch(n->arg, base_name(path, base, sizeof base), 0) == 0;
    case K_INAME: return fnmatch(n->arg, base_name(path, base, sizeof base), FNM_CASEFOLD) == 0;
    case K_PATH: return fnmatch(n->arg, path, 0) == 0;
    case K_TYPE: return type_matches(n->arg, st);
    case K_EMPTY: return is_empty(path, st);
    case K_NEWER:
        return st->st_mtim.tv_sec > n->newer_than.tv_sec ||
               (st->st_mtim.tv_sec == n->newer_than.tv_sec && st->st_mtim.tv_nsec > n->newer_than.tv_nsec);
    case K_TRUE: return true;
    case K_FALSE: return false;
    case K_PRINT: puts(path); return true;
    case K_PRINT0:
        fputs(path, stdout);
        putchar('\0');
        return true;
    case K_DELETE: {
        int r = S_ISDIR(st->st_mode) ? rmdir(path) : unlink(path);
        if (r != 0) {
            box_err("find", "cannot delete '%s': %s", path, strerror(errno));
            f->status = 1;
            return false;
        }
        return true;
    }
    }
    return false;
}

static void walk(struct finder *f, const struct node *expr, const char *path, long depth) {
    struct stat st;
    if (lstat(path, &st) != 0) {
        box_err("find", "'%s': %s", path, strerror(errno));
        f->status = 1;
        return;
    }
    bool selected = depth >= f->mindepth;
    if (selected && !f->depth_first) eval(f, expr, path, &st);
    if (S_ISDIR(st.st_mode) && (f->maxdepth < 0 || depth < f->maxdepth)) {
        /* all names are read first: -delete below must not disturb the listing */
        size_t n;
        char **names = box_dir_names(path, &n);
        if (names == NULL) {
            box_err("find", "'%s': %s", path, strerror(errno));
            f->status = 1;
        } else {
            for (size_t i = 0; i < n; i++) {
                char *child = box_need("find", box_path_join(path, names[i]), 1);
                walk(f, expr, child, depth + 1);
                free(child);
            }
            box_free_names(names, n);
        }
    }
    if (selected && f->depth_first) eval(f, expr, path, &st);
}

int cmd_find(int argc, char **argv) {
    int first_expr = 1;
    while (first_expr < argc) {
        const char *a = argv[first_expr];
        if ((a[0] == '-' && a[1] != '\0') || strcmp(a, "!") == 0 || strcmp(a, "(") == 0) break;
        first_expr++;
    }
    struct finder f = {argv + first_expr, argc - first_expr, 0, false, false, false, -1, 0, 0};
    struct node *expr = NULL;
    if (f.n > 0) {
        expr = parse_or(&f);
        if (!f.failed && f.pos < f.n) {
            box_err("find", "unexpected '%s'", f.av[f.pos]);
            f.failed = true;
        }
        if (f.failed) return f.status ? f.status : 1;
    }
    if (expr == NULL) expr = new_node(K_TRUE, NULL, NULL, NULL);
    /* without an action, print what the whole expression selects */
    if (!f.has_action) expr = new_node(K_AND, expr, new_node(K_PRINT, NULL, NULL, NULL), NULL);
    static char *dot[] = {"."};
    char **starts = first_expr > 1 ? argv + 1 : dot;
    int nstarts = first_expr > 1 ? first_expr - 1 : 1;
    for (int i = 0; i < nstarts; i++) walk(&f, expr, starts[i], 0);
    return f.status;
}
