/* ls: list directory contents, one name per line (output is never a terminal here), sorted
 * bytewise as in the C locale; -a -A -d -l -h -r -R -t -S.
 *
 * WASI exposes no permission bits, owners or block counts: -l prints `?` where GNU would print
 * what it could not learn, "total" estimates 4 KiB blocks, and times are UTC (no time zone).
 */
#include <dirent.h>
#include <errno.h>
#include <getopt.h>
#include <limits.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "box.h"

enum sort_key { BY_NAME, BY_TIME, BY_SIZE };

struct ls_opts {
    bool all, almost_all, dirs_as_files, long_format, human, reverse, recursive;
    enum sort_key sort;
};

struct entry {
    char *name; /* as printed */
    char *path; /* to stat or open */
    struct stat st;
    bool have_st;
};

static struct ls_opts opts;
static int status;

static int compare(const void *pa, const void *pb) {
    const struct entry *a = pa, *b = pb;
    int c = 0;
    if (opts.sort == BY_TIME && a->have_st && b->have_st) {
        if (a->st.st_mtim.tv_sec != b->st.st_mtim.tv_sec)
            c = a->st.st_mtim.tv_sec > b->st.st_mtim.tv_sec ? -1 : 1;
        else if (a->st.st_mtim.tv_nsec != b->st.st_mtim.tv_nsec)
            c = a->st.st_mtim.tv_nsec > b->st.st_mtim.tv_nsec ? -1 : 1;
    } else if (opts.sort == BY_SIZE && a->have_st && b->have_st && a->st.st_size != b->st.st_size) {
        c = a->st.st_size > b->st.st_size ? -1 : 1;
    }
    if (c == 0) c = strcmp(a->name, b->name);
    return opts.reverse ? -c : c;
}

static char type_char(mode_t m) {
    if (S_ISDIR(m)) return 'd';
    if (S_ISLNK(m)) return 'l';
    if (S_ISCHR(m)) return 'c';
    if (S_ISBLK(m)) return 'b';
    if (S_ISFIFO(m)) return 'p';
    if (S_ISSOCK(m)) return 's';
    return '-';
}

/* GNU -h: powers of 1024, rounded up, one decimal below 10 */
static void human_size(uint64_t size, char *buf, size_t len) {
    static const char units[] = "KMGTPE";
    if (size < 1024) {
        snprintf(buf, len, "%llu", (unsigned long long)size);
        return;
    }
    double v = (double)size;
    int u = -1;
    while (v >= 1024 && u < 5) {
        v /= 1024;
        u++;
    }
    if (v < 10) {
        double tenths = (double)(uint64_t)(v * 10);
        if (tenths < v * 10) tenths += 1;
        if (tenths >= 100) snprintf(buf, len, "%d%c", 10, units[u]);
        else snprintf(buf, len, "%.1f%c", tenths / 10, units[u]);
    } else {
        uint64_t whole = (uint64_t)v;
        if ((double)whole < v) whole++;
        snprintf(buf, len, "%llu%c", (unsigned long long)whole, units[u]);
    }
}

static void format_time(const struct timespec *t, char *buf, size_t len) {
    time_t now = time(NULL);
    time_t when = t->tv_sec;
    struct tm tm;
    gmtime_r(&when, &tm);
    /* GNU: the year instead of the time for files older than six months or in the future */
    bool recent = when > now - 15778476 && when <= now + 60;
    strftime(buf, len, recent ? "%b %e %H:%M" : "%b %e  %Y", &tm);
}

static void print_long(struct entry *list, size_t n) {
    int wlink = 1, wsize = 1;
    char size_text[32];
    for (size_t i = 0; i < n; i++) {
        if (!list[i].have_st) continue;
        int w = snprintf(NULL, 0, "%llu", (unsigned long long)list[i].st.st_nlink);
        if (w > wlink) wlink = w;
        if (opts.human) human_size((uint64_t)list[i].st.st_size, size_text, sizeof size_text);
        else snprintf(size_text, sizeof size_text, "%lld", (long long)list[i].st.st_size);
        w = (int)strlen(size_text);
        if (w > wsize) wsize = w;
    }
    for (size_t i = 0; i < n; i++) {
        struct entry *e = &list[i];
        if (!e->have_st) continue;
        char when[64];
        format_time(&e->st.st_mtim, when, sizeof when);
        if (opts.human) human_size((uint64_t)e->st.st_size, size_text, sizeof size_text);
        else snprintf(size_text, sizeof size_text, "%lld", (long long)e->st.st_size);
        /* WASI tells a file's type, links, size and times, never its mode or owner: those
           columns are left out rather than filled with guesses */
        printf("%c %*llu %*s %s %s", type_char(e->st.st_mode), wlink,
               (unsigned long long)e->st.st_nlink, wsize, size_text, when, e->name);
        if (S_ISLNK(e->st.st_mode)) {
            char target[PATH_MAX + 1];
            ssize_t len = readlink(e->path, target, PATH_MAX);
            if (len >= 0) printf(" -> %.*s", (int)len, target);
        }
        putchar('\n');
    }
}

static void print_entries(struct entry *list, size_t n, bool with_total) {
    qsort(list, n, sizeof *list, compare);
    if (!opts.long_format) {
        for (size_t i = 0; i < n; i++) puts(list[i].name);
        return;
    }
    if (with_total) {
        /* an estimate: WASI reports sizes, not allocated blocks */
        unsigned long long blocks = 0;
        for (size_t i = 0; i < n; i++)
            if (list[i].have_st) blocks += ((unsigned long long)list[i].st.st_size + 4095) / 4096 * 4;
        char text[32];
        if (opts.human) human_size(blocks * 1024, text, sizeof text);
        else snprintf(text, sizeof text, "%llu", blocks);
        printf("total %s\n", text);
    }
    print_long(list, n);
}

static void free_entries(struct entry *list, size_t n) {
    for (size_t i = 0; i < n; i++) {
        free(list[i].name);
        free(list[i].path);
    }
    free(list);
}

static bool push(struct entry **list, size_t *n, size_t *cap, struct entry e) {
    if (*n == *cap) {
        *cap = *cap ? *cap * 2 : 16;
        struct entry *bigger = realloc(*list, *cap * sizeof **list);
        if (bigger == NULL) return false;
        *list = bigger;
    }
    (*list)[(*n)++] = e;
    return true;
}

static void list_dir(const char *path, bool header, bool *first_section) {
    DIR *d = opendir(path);
    if (d == NULL) {
        box_err("ls", "cannot open directory '%s': %s", path, strerror(errno));
        status = status > 1 ? status : 1;
        return;
    }
    if (!*first_section) putchar('\n');
    *first_section = false;
    if (header) printf("%s:\n", path);
    struct entry *list = NULL;
    size_t n = 0, cap = 0;
    struct dirent *ent;
    while ((ent = readdir(d)) != NULL) {
        const char *name = ent->d_name;
        if (name[0] == '.') {
            bool dots = strcmp(name, ".") == 0 || strcmp(name, "..") == 0;
            if (!opts.all && !(opts.almost_all && !dots)) continue;
        }
        struct entry e = {strdup(name), box_need("ls", box_path_join(path, name), 2), {0}, false};
        if (e.name == NULL) break;
        bool need_stat = opts.long_format || opts.recursive || opts.sort != BY_NAME;
        e.have_st = need_stat && lstat(e.path, &e.st) == 0;
        if (!push(&list, &n, &cap, e)) break;
    }
    closedir(d);
    print_entries(list, n, true);
    if (opts.recursive) {
        for (size_t i = 0; i < n; i++) {
            const char *name = list[i].name;
            if (strcmp(name, ".") == 0 || strcmp(name, "..") == 0) continue;
            if (list[i].have_st && S_ISDIR(list[i].st.st_mode)) list_dir(list[i].path, true, first_section);
        }
    }
    free_entries(list, n);
}

int cmd_ls(int argc, char **argv) {
    static const struct option longopts[] = {{"all", no_argument, 0, 'a'},
                                             {"almost-all", no_argument, 0, 'A'},
                                             {"directory", no_argument, 0, 'd'},
                                             {"human-readable", no_argument, 0, 'h'},
                                             {"reverse", no_argument, 0, 'r'},
                                             {"recursive", no_argument, 0, 'R'},
                                             {0, 0, 0, 0}};
    int c;
    opterr = 0;
    while ((c = getopt_long(argc, argv, "1aAdlhrRtS", longopts, NULL)) != -1) {
        switch (c) {
        case '1': break; /* one per line is the only layout: output is never a terminal */
        case 'a': opts.all = true; break;
        case 'A': opts.almost_all = true; break;
        case 'd': opts.dirs_as_files = true; break;
        case 'l': opts.long_format = true; break;
        case 'h': opts.human = true; break;
        case 'r': opts.reverse = true; break;
        case 'R': opts.recursive = true; break;
        case 't': opts.sort = BY_TIME; break;
        case 'S': opts.sort = BY_SIZE; break;
        default: return box_bad_option("ls", argv);
        }
    }
    int n;
    char **operands = box_operands(argc, argv, ".", &n);
    struct entry *files = NULL, *dirs = NULL;
    size_t nfiles = 0, cfiles = 0, ndirs = 0, cdirs = 0;
    for (int i = 0; i < n; i++) {
        struct entry e = {strdup(operands[i]), strdup(operands[i]), {0}, true};
        if (e.name == NULL || e.path == NULL) return 2;
        /* operands are followed when they name a directory through a link, as GNU does; only
         * a dangling link (ENOENT) falls back to the link itself — a link the sandbox refuses
         * to follow (it leads outside the workdir) is an error, not a listing of its name */
        int followed = stat(e.path, &e.st);
        int follow_errno = errno;
        if (followed != 0 && (follow_errno != ENOENT || lstat(e.path, &e.st) != 0)) {
            box_err("ls", "cannot access '%s': %s", operands[i], strerror(follow_errno));
            status = 2;
            free(e.name);
            free(e.path);
            continue;
        }
        bool as_dir = S_ISDIR(e.st.st_mode) && !opts.dirs_as_files;
        if (!push(as_dir ? &dirs : &files, as_dir ? &ndirs : &nfiles, as_dir ? &cdirs : &cfiles, e))
            return 2;
    }
    bool first_section = true;
    if (nfiles > 0) {
        print_entries(files, nfiles, false);
        first_section = false;
    }
    qsort(dirs, ndirs, sizeof *dirs, compare);
    bool headers = n > 1 || opts.recursive;
    for (size_t i = 0; i < ndirs; i++) list_dir(dirs[i].path, headers, &first_section);
    free_entries(files, nfiles);
    free_entries(dirs, ndirs);
    return status;
}
