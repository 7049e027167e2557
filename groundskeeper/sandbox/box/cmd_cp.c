/* cp: copy files (SRC DST, or SRC... DIR), and trees with -r. With -r symbolic links are
 * copied as links (GNU's default then); without it they are followed, and WASI refuses any
 * that lead out of the workdir. -p/-a keep timestamps, the only attribute WASI has. */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <limits.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "box.h"

struct cp_opts {
    bool recursive, no_clobber, preserve, verbose;
    bool have_root; /* the directory being created by a tree copy, to refuse copying into it */
    dev_t root_dev;
    ino_t root_ino;
};

static void keep_times(const char *dst, const struct stat *s, bool follow) {
    struct timespec times[2] = {s->st_atim, s->st_mtim};
    utimensat(AT_FDCWD, dst, times, follow ? 0 : AT_SYMLINK_NOFOLLOW);
}

static bool copy_file(const char *src, const char *dst, const struct stat *s, const struct cp_opts *o) {
    int in = open(src, O_RDONLY);
    if (in < 0) {
        box_err("cp", "cannot open '%s' for reading: %s", src, strerror(errno));
        return false;
    }
    int out = open(dst, O_WRONLY | O_CREAT | O_TRUNC, 0666);
    if (out < 0) {
        box_err("cp", "cannot create regular file '%s': %s", dst, strerror(errno));
        close(in);
        return false;
    }
    char buf[65536];
    ssize_t n;
    bool ok = true;
    while (ok && (n = read(in, buf, sizeof buf)) != 0) {
        if (n < 0) {
            box_err("cp", "error reading '%s': %s", src, strerror(errno));
            ok = false;
            break;
        }
        for (ssize_t done = 0; done < n;) {
            ssize_t w = write(out, buf + done, (size_t)(n - done));
            if (w < 0) {
                box_err("cp", "error writing '%s': %s", dst, strerror(errno));
                ok = false;
                break;
            }
            done += w;
        }
    }
    close(in);
    if (close(out) != 0 && ok) {
        box_err("cp", "error writing '%s': %s", dst, strerror(errno));
        ok = false;
    }
    if (ok && o->preserve) keep_times(dst, s, true);
    return ok;
}

static bool copy_any(const char *src, const char *dst, struct cp_opts *o);

static bool copy_tree(const char *src, const char *dst, const struct stat *s, struct cp_opts *o) {
    struct stat d;
    if (stat(dst, &d) != 0) {
        if (mkdir(dst, 0777) != 0 || stat(dst, &d) != 0) {
            box_err("cp", "cannot create directory '%s': %s", dst, strerror(errno));
            return false;
        }
    } else if (!S_ISDIR(d.st_mode)) {
        box_err("cp", "cannot overwrite non-directory '%s' with directory '%s'", dst, src);
        return false;
    }
    if (!o->have_root) {
        o->have_root = true;
        o->root_dev = d.st_dev;
        o->root_ino = d.st_ino;
    }
    DIR *dir = opendir(src);
    if (dir == NULL) {
        box_err("cp", "cannot access '%s': %s", src, strerror(errno));
        return false;
    }
    bool ok = true;
    struct dirent *ent;
    while ((ent = readdir(dir)) != NULL) {
        if (strcmp(ent->d_name, ".") == 0 || strcmp(ent->d_name, "..") == 0) continue;
        char *from = box_path_join(src, ent->d_name), *to = box_path_join(dst, ent->d_name);
        struct stat fs;
        if (from == NULL || to == NULL) {
            box_err("cp", "out of memory");
            ok = false;
        } else if (lstat(from, &fs) == 0 && fs.st_dev == o->root_dev && fs.st_ino == o->root_ino) {
            /* the copy being made, met again inside its own source */
            box_err("cp", "cannot copy a directory, '%s', into itself, '%s'", from, dst);
            ok = false;
        } else if (!copy_any(from, to, o)) {
            ok = false;
        }
        free(from);
        free(to);
    }
    closedir(dir);
    if (o->preserve) keep_times(dst, s, true);
    return ok;
}

static bool copy_any(const char *src, const char *dst, struct cp_opts *o) {
    struct stat s, d;
    /* -r copies links as links; otherwise (and only for operands) they are followed */
    int r = o->recursive ? lstat(src, &s) : stat(src, &s);
    if (r != 0) {
        box_err("cp", "cannot stat '%s': %s", src, strerror(errno));
        return false;
    }
    bool dst_exists = stat(dst, &d) == 0;
    if (dst_exists && s.st_dev == d.st_dev && s.st_ino == d.st_ino) {
        box_err("cp", "'%s' and '%s' are the same file", src, dst);
        return false;
    }
    if (dst_exists && o->no_clobber && !S_ISDIR(s.st_mode)) return true;
    bool ok;
    if (S_ISDIR(s.st_mode)) {
        if (!o->recursive) {
            box_err("cp", "-r not specified; omitting directory '%s'", src);
            return false;
        }
        ok = copy_tree(src, dst, &s, o);
    } else if (S_ISLNK(s.st_mode)) {
        char target[PATH_MAX + 1];
        ssize_t n = readlink(src, target, PATH_MAX);
        if (n < 0) {
            box_err("cp", "cannot read symbolic link '%s': %s", src, strerror(errno));
            return false;
        }
        target[n] = '\0';
        if (dst_exists) unlink(dst);
        ok = symlink(target, dst) == 0;
        if (!ok) box_err("cp", "cannot create symbolic link '%s': %s", dst, strerror(errno));
    } else {
        if (dst_exists && S_ISDIR(d.st_mode)) {
            box_err("cp", "cannot overwrite directory '%s' with non-directory", dst);
            return false;
        }
        ok = copy_file(src, dst, &s, o);
    }
    if (ok && o->verbose) printf("'%s' -> '%s'\n", src, dst);
    return ok;
}

/* Refuse SRC DST where DST lies inside SRC, judged on the text of the paths. */
static bool inside(const char *src, const char *dst) {
    while (strncmp(src, "./", 2) == 0) src += 2;
    while (strncmp(dst, "./", 2) == 0) dst += 2;
    size_t len = strlen(src);
    while (len > 1 && src[len - 1] == '/') len--;
    if (len == 1 && src[0] == '.') return true;
    return strncmp(src, dst, len) == 0 && (dst[len] == '/' || dst[len] == '\0');
}

int cmd_cp(int argc, char **argv) {
    static const struct option longopts[] = {{"recursive", no_argument, 0, 'r'},
                                             {"force", no_argument, 0, 'f'},
                                             {"no-clobber", no_argument, 0, 'n'},
                                             {"preserve", no_argument, 0, 'p'},
                                             {"archive", no_argument, 0, 'a'},
                                             {"verbose", no_argument, 0, 'v'},
                                             {"target-directory", required_argument, 0, 't'},
                                             {"no-target-directory", no_argument, 0, 'T'},
                                             {0, 0, 0, 0}};
    struct cp_opts o = {false, false, false, false, false, 0, 0};
    const char *target = NULL;
    bool no_target_dir = false;
    int c;
    opterr = 0;
    while ((c = getopt_long(argc, argv, ":rRfnpavt:T", longopts, NULL)) != -1) {
        switch (c) {
        case 'r':
        case 'R': o.recursive = true; break;
        case 'f': o.no_clobber = false; break;
        case 'n': o.no_clobber = true; break;
        case 'p': o.preserve = true; break;
        case 'a':
            o.recursive = true;
            o.preserve = true;
            break;
        case 'v': o.verbose = true; break;
        case 't': target = optarg; break;
        case 'T': no_target_dir = true; break;
        case ':': return box_missing_argument("cp", 1);
        default: return box_bad_option("cp", argv);
        }
    }
    int n = argc - optind;
    char **ops = argv + optind;
    int form = box_copy_operands("cp", ops, &n, &target, no_target_dir);
    if (form == BOX_OPERAND_ERROR) return 1;
    if (form == BOX_ONE_TO_ONE) {
        struct stat s;
        if (o.recursive && stat(ops[0], &s) == 0 && S_ISDIR(s.st_mode) && inside(ops[0], ops[1])) {
            box_err("cp", "cannot copy a directory, '%s', into itself, '%s'", ops[0], ops[1]);
            return 1;
        }
        return copy_any(ops[0], ops[1], &o) ? 0 : 1;
    }
    int status = 0;
    for (int i = 0; i < n; i++) {
        char *dst = box_path_into(target, ops[i]);
        struct stat s;
        o.have_root = false;
        if (dst == NULL) {
            status = 1;
        } else if (o.recursive && stat(ops[i], &s) == 0 && S_ISDIR(s.st_mode) && inside(ops[i], dst)) {
            box_err("cp", "cannot copy a directory, '%s', into itself, '%s'", ops[i], dst);
            status = 1;
        } else if (!copy_any(ops[i], dst, &o)) {
            status = 1;
        }
        free(dst);
    }
    return status;
}
