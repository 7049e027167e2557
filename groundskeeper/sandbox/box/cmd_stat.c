/* stat -c FORMAT / --printf FORMAT: the file facts WASI can give exactly. Directives: %s size,
 * %Y mtime in seconds, %y mtime as GNU prints it (the sandbox's clock is UTC), %n name, %F
 * type, %i inode, %h links, %% (with GNU's printf-style flags and width). WASI has no owners,
 * permission bits or block counts, so %a %A %U %u %G %g %b (and every other directive) are
 * refused with status 2, as is the default format, never printed as a guess. -L follows links.
 */
#include <errno.h>
#include <getopt.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>

#include "box.h"

/* as a printf format shows them */
#define DIRECTIVES "%%s %%Y %%y %%n %%F %%i %%h"

static const char *file_type(const struct stat *sb) {
    if (S_ISREG(sb->st_mode)) return sb->st_size == 0 ? "regular empty file" : "regular file";
    if (S_ISDIR(sb->st_mode)) return "directory";
    if (S_ISLNK(sb->st_mode)) return "symbolic link";
    if (S_ISCHR(sb->st_mode)) return "character special file";
    if (S_ISBLK(sb->st_mode)) return "block special file";
    return "weird file";
}

/* The format's directives must all be ones we have; checked before any file is looked at. */
static bool check_format(const char *format) {
    for (const char *p = format; *p; p++) {
        if (*p != '%') continue;
        p++;
        p += strspn(p, "-0+ #'");
        p += strspn(p, "0123456789");
        if (*p == '.') p += 1 + strspn(p + 1, "0123456789");
        if (*p == '\0') return true; /* a lone % at the end prints itself */
        if (*p == '%' || strchr("sYynFih", *p) != NULL) continue;
        box_err("stat", "%%%c is not supported in the sandbox (WASI has no owners, modes or "
                        "blocks); use one of " DIRECTIVES, *p);
        return false;
    }
    return true;
}

static void put_escape(const char **pp) {
    const char *p = *pp;
    switch (*p) {
    case 'n': putchar('\n'); break;
    case 't': putchar('\t'); break;
    case '\\': putchar('\\'); break;
    case '"': putchar('"'); break;
    case 'a': putchar('\a'); break;
    case 'b': putchar('\b'); break;
    case 'f': putchar('\f'); break;
    case 'r': putchar('\r'); break;
    case 'v': putchar('\v'); break;
    case '\0': putchar('\\'); p--; break;
    default: putchar('\\'); putchar(*p); break;
    }
    *pp = p;
}

static void print_stat(const char *format, const char *name, const struct stat *sb, bool escapes) {
    for (const char *p = format; *p; p++) {
        if (escapes && *p == '\\') {
            p++;
            put_escape(&p);
            continue;
        }
        if (*p != '%') {
            putchar(*p);
            continue;
        }
        const char *start = p++;
        p += strspn(p, "-0+ #'");
        p += strspn(p, "0123456789");
        if (*p == '.') p += 1 + strspn(p + 1, "0123456789");
        if (*p == '\0') {
            fputs(start, stdout);
            break;
        }
        /* the directive's flags, width and precision, as printf takes them */
        char spec[40];
        size_t n = (size_t)(p - start) < 32 ? (size_t)(p - start) : 32;
        memcpy(spec, start, n);
        long long number = 0;
        const char *text = NULL;
        char when[64];
        switch (*p) {
        case '%': putchar('%'); continue;
        case 's': number = (long long)sb->st_size; break;
        case 'Y': number = (long long)sb->st_mtim.tv_sec; break;
        case 'i': number = (long long)sb->st_ino; break;
        case 'h': number = (long long)sb->st_nlink; break;
        case 'n': text = name; break;
        case 'F': text = file_type(sb); break;
        case 'y': {
            struct tm tm;
            time_t secs = sb->st_mtim.tv_sec;
            gmtime_r(&secs, &tm);
            size_t len = strftime(when, sizeof when, "%Y-%m-%d %H:%M:%S", &tm);
            snprintf(when + len, sizeof when - len, ".%09ld +0000", (long)sb->st_mtim.tv_nsec);
            text = when;
            break;
        }
        default: continue; /* check_format refused it already */
        }
        if (text == NULL) {
            memcpy(spec + n, "lld", 4);
            printf(spec, number);
            continue;
        }
        /* text takes only '-', a width and a precision (GNU drops the numeric flags) */
        size_t k = 1;
        for (size_t j = 1; j < n; j++) {
            bool digit = spec[j] >= '0' && spec[j] <= '9';
            if (spec[j] == '-' || spec[j] == '.' || (digit && (spec[j] != '0' || k > 1 && spec[k - 1] != '-')))
                spec[k++] = spec[j];
        }
        memcpy(spec + k, "s", 2);
        printf(spec, text);
    }
}

int cmd_stat(int argc, char **argv) {
    enum { OPT_PRINTF = 256 };
    static const struct option longopts[] = {{"format", required_argument, 0, 'c'},
                                             {"printf", required_argument, 0, OPT_PRINTF},
                                             {"dereference", no_argument, 0, 'L'},
                                             {0, 0, 0, 0}};
    const char *format = NULL;
    bool escapes = false, follow = false;
    int c;
    opterr = 0;
    while ((c = getopt_long(argc, argv, ":c:L", longopts, NULL)) != -1) {
        switch (c) {
        case 'c': format = optarg, escapes = false; break;
        case OPT_PRINTF: format = optarg, escapes = true; break;
        case 'L': follow = true; break;
        case ':': return box_missing_argument("stat", 1);
        default: return box_bad_option("stat", argv);
        }
    }
    if (format == NULL) {
        box_err("stat", "the default format is not supported in the sandbox; use stat -c FORMAT "
                        "with " DIRECTIVES);
        return 2;
    }
    if (!check_format(format)) return 2;
    if (optind >= argc) {
        box_err("stat", "missing operand");
        return 1;
    }
    int status = 0;
    for (int i = optind; i < argc; i++) {
        struct stat sb;
        if ((follow ? stat(argv[i], &sb) : lstat(argv[i], &sb)) != 0) {
            box_err("stat", "cannot statx '%s': %s", argv[i], strerror(errno));
            status = 1;
            continue;
        }
        print_stat(format, argv[i], &sb, escapes);
        if (!escapes) putchar('\n');
    }
    return status;
}
