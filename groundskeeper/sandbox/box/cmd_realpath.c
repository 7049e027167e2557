/* realpath and readlink: paths resolved inside the sandbox's view, where the workdir is the
 * preopened root (/workdir) and nothing outside it can be named. Symlinks are read and
 * followed one component at a time with lstat/readlink, so a link out of the workdir or a
 * `..` above its root fails (WASI refuses the path) instead of naming the host's file.
 *   realpath [-e|-m] [-s] [-q] [-z] [--relative-to=DIR] PATH...
 *   readlink [-f|-e|-m] [-n] [-q|-s] [-v] [-z] PATH...
 */
#include <errno.h>
#include <getopt.h>
#include <limits.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#include <wasi/api.h>

#include "box.h"

enum mode { ALL_BUT_LAST, EXISTING, MISSING };

/* The preopened root as the guest names it ("/workdir"), or "" when it cannot be told. */
static const char *guest_root(void) {
    static char root[256];
    __wasi_prestat_t pre;
    if (root[0] == '\0' && __wasi_fd_prestat_get(3, &pre) == 0 &&
        pre.u.dir.pr_name_len < sizeof root &&
        __wasi_fd_prestat_dir_name(3, (uint8_t *)root, pre.u.dir.pr_name_len) == 0)
        root[pre.u.dir.pr_name_len] = '\0';
    return root;
}

static bool inside_root(const char *path) {
    const char *root = guest_root();
    size_t n = strlen(root);
    return n > 0 && strncmp(path, root, n) == 0 && (path[n] == '\0' || path[n] == '/');
}

struct text {
    char *s;
    size_t len, cap;
};

static void text_put(struct text *t, const char *p, size_t n) {
    if (t->len + n + 1 > t->cap) {
        t->cap = 2 * (t->len + n + 1);
        t->s = box_need("realpath", realloc(t->s, t->cap), 1);
    }
    memcpy(t->s + t->len, p, n);
    t->len += n;
    t->s[t->len] = '\0';
}

/* PATH made absolute, `.`/`..` and (unless NO_LINKS) symlinks resolved; NULL with errno set
 * when a component the mode needs is missing, or the path leaves the workdir. */
static char *canonical(const char *path, enum mode mode, bool no_links) {
    struct text out = {0}, rest = {0};
    if (path[0] != '/') {
        char *cwd = getcwd(NULL, 0);
        if (cwd == NULL) return NULL;
        text_put(&out, cwd, strlen(cwd));
        free(cwd);
    } else {
        text_put(&out, "", 0);
    }
    text_put(&rest, path, strlen(path));
    size_t pos = 0;
    int links = 0;
    while (pos < rest.len) {
        while (pos < rest.len && rest.s[pos] == '/') pos++;
        size_t end = pos;
        while (end < rest.len && rest.s[end] != '/') end++;
        size_t n = end - pos;
        const char *comp = rest.s + pos;
        pos = end;
        if (n == 0 || (n == 1 && comp[0] == '.')) continue;
        if (n == 2 && comp[0] == '.' && comp[1] == '.') {
            while (out.len > 0 && out.s[out.len - 1] != '/') out.len--;
            if (out.len > 0) out.len--; /* the slash before it */
            out.s[out.len] = '\0';
            continue;
        }
        size_t before = out.len;
        text_put(&out, "/", 1);
        text_put(&out, comp, n);
        bool last = true;
        for (size_t k = pos; k < rest.len; k++)
            if (rest.s[k] != '/') last = false;
        struct stat sb;
        if (lstat(out.s, &sb) != 0) {
            if (errno == ENOENT && mode == ALL_BUT_LAST && last) continue;
            /* -m: whatever is missing (or is not a directory) is taken as written */
            if ((errno == ENOENT || errno == ENOTDIR) && mode == MISSING) continue;
            goto fail;
        }
        if (S_ISLNK(sb.st_mode) && !no_links) {
            if (++links > 40) {
                errno = ELOOP;
                goto fail;
            }
            char target[PATH_MAX];
            ssize_t got = readlink(out.s, target, sizeof target - 1);
            if (got < 0) goto fail;
            /* the link's target takes its place, followed by what is left of the path */
            struct text next = {0};
            text_put(&next, target, (size_t)got);
            text_put(&next, "/", 1);
            text_put(&next, rest.s + pos, rest.len - pos);
            free(rest.s);
            rest = next;
            pos = 0;
            out.len = target[0] == '/' ? 0 : before;
            if (out.s != NULL) out.s[out.len] = '\0';
            continue;
        }
        if (!S_ISDIR(sb.st_mode) && !last && mode != MISSING) {
            errno = ENOTDIR;
            goto fail;
        }
    }
    free(rest.s);
    if (out.len == 0) text_put(&out, "/", 1);
    if (!inside_root(out.s)) {
        errno = EACCES; /* the root's parent is outside the sandbox */
        free(out.s);
        return NULL;
    }
    return out.s;
fail:
    free(rest.s);
    free(out.s);
    return NULL;
}

/* PATH relative to the directory BASE (both canonical). */
static void print_relative(const char *path, const char *base, char end) {
    size_t common = 0, i = 0;
    for (;; i++) {
        bool pe = path[i] == '\0' || path[i] == '/', be = base[i] == '\0' || base[i] == '/';
        if (pe && be) common = i;
        if (path[i] != base[i] || path[i] == '\0') break;
    }
    if (base[common] == '\0' && path[common] == '\0') {
        printf(".%c", end);
        return;
    }
    bool first = true;
    for (const char *p = base + common; *p; p++)
        if (*p == '/') {
            fputs(first ? ".." : "/..", stdout);
            first = false;
        }
    const char *tail = path + common + (path[common] == '/');
    if (*tail) printf("%s%s", first ? "" : "/", tail);
    putchar(end);
}

int cmd_realpath(int argc, char **argv) {
    enum { OPT_RELATIVE_TO = 256 };
    static const struct option longopts[] = {{"canonicalize-existing", no_argument, 0, 'e'},
                                             {"canonicalize-missing", no_argument, 0, 'm'},
                                             {"no-symlinks", no_argument, 0, 's'},
                                             {"strip", no_argument, 0, 's'},
                                             {"quiet", no_argument, 0, 'q'},
                                             {"zero", no_argument, 0, 'z'},
                                             {"physical", no_argument, 0, 'P'},
                                             {"relative-to", required_argument, 0, OPT_RELATIVE_TO},
                                             {0, 0, 0, 0}};
    enum mode mode = ALL_BUT_LAST;
    bool no_links = false, quiet = false;
    char end = '\n';
    const char *relative_to = NULL;
    int c;
    opterr = 0;
    while ((c = getopt_long(argc, argv, ":emsqzP", longopts, NULL)) != -1) {
        switch (c) {
        case 'e': mode = EXISTING; break;
        case 'm': mode = MISSING; break;
        case 's': no_links = true; break;
        case 'q': quiet = true; break;
        case 'z': end = '\0'; break;
        case 'P': no_links = false; break;
        case OPT_RELATIVE_TO: relative_to = optarg; break;
        case ':': return box_missing_argument("realpath", 1);
        default: return box_bad_option("realpath", argv);
        }
    }
    if (optind >= argc) {
        box_err("realpath", "missing operand");
        return 1;
    }
    char *base = NULL;
    if (relative_to != NULL && (base = canonical(relative_to, mode, no_links)) == NULL) {
        box_perror("realpath", relative_to);
        return 1;
    }
    int status = 0;
    for (int i = optind; i < argc; i++) {
        char *path = canonical(argv[i], mode, no_links);
        if (path == NULL) {
            if (!quiet) box_perror("realpath", argv[i]);
            status = 1;
            continue;
        }
        if (base != NULL) print_relative(path, base, end);
        else printf("%s%c", path, end);
        free(path);
    }
    free(base);
    return status;
}

int cmd_readlink(int argc, char **argv) {
    static const struct option longopts[] = {{"canonicalize", no_argument, 0, 'f'},
                                             {"canonicalize-existing", no_argument, 0, 'e'},
                                             {"canonicalize-missing", no_argument, 0, 'm'},
                                             {"no-newline", no_argument, 0, 'n'},
                                             {"quiet", no_argument, 0, 'q'},
                                             {"silent", no_argument, 0, 's'},
                                             {"verbose", no_argument, 0, 'v'},
                                             {"zero", no_argument, 0, 'z'},
                                             {0, 0, 0, 0}};
    bool canonicalize = false, no_newline = false, verbose = false;
    enum mode mode = ALL_BUT_LAST;
    char end = '\n';
    int c;
    opterr = 0;
    while ((c = getopt_long(argc, argv, ":femnqsvz", longopts, NULL)) != -1) {
        switch (c) {
        case 'f': canonicalize = true, mode = ALL_BUT_LAST; break;
        case 'e': canonicalize = true, mode = EXISTING; break;
        case 'm': canonicalize = true, mode = MISSING; break;
        case 'n': no_newline = true; break;
        case 'q': case 's': verbose = false; break;
        case 'v': verbose = true; break;
        case 'z': end = '\0'; break;
        default: return box_bad_option("readlink", argv);
        }
    }
    if (optind >= argc) {
        box_err("readlink", "missing operand");
        return 1;
    }
    if (no_newline && argc - optind > 1) {
        box_err("readlink", "ignoring --no-newline with multiple arguments");
        no_newline = false;
    }
    int status = 0;
    for (int i = optind; i < argc; i++) {
        char *found = NULL;
        if (canonicalize) {
            found = canonical(argv[i], mode, false);
        } else {
            char target[PATH_MAX];
            ssize_t got = readlink(argv[i], target, sizeof target - 1);
            if (got >= 0) {
                target[got] = '\0';
                found = strdup(target);
            }
        }
        if (found == NULL) {
            if (verbose) box_perror("readlink", argv[i]);
            status = 1;
            continue;
        }
        fputs(found, stdout);
        if (!no_newline) putchar(end);
        free(found);
    }
    return status;
}
