/* md5sum, sha1sum, sha256sum, sha512sum: digests (digest.h, our own implementations) printed
 * as GNU does ("HASH  NAME", "-" for stdin, a leading backslash for names holding \ or
 * newline), and -c to verify a list of them (--quiet, --status, --strict, -w).
 */
#include <getopt.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "box.h"
#include "digest.h"

/* Digest of a file ("-" is stdin); false with errno set when it cannot be read. */
static bool digest_file(const struct digest_algo *algo, const char *name, char *hex) {
    FILE *in = box_open_readable(name);
    if (in == NULL) return false;
    struct digest_state s;
    digest_init(&s, algo);
    static unsigned char buf[65536];
    size_t n;
    while ((n = fread(buf, 1, sizeof buf, in)) > 0) digest_update(&s, buf, n);
    bool ok = !ferror(in);
    box_close_input(in);
    if (ok) digest_final(&s, hex);
    return ok;
}

struct check_opts {
    const char *name; /* the command, for messages */
    const struct digest_algo *algo;
    bool quiet, status_only, strict, warn;
};

#define HEX_MAX (2 * DIGEST_MAX_SIZE + 1)

/* Undo GNU's escaping of names in escaped lines: \\ and \n. */
static void unescape(char *s) {
    char *out = s;
    for (; *s; s++) {
        if (*s == '\\' && s[1] == 'n') {
            *out++ = '\n';
            s++;
        } else if (*s == '\\' && s[1] == '\\') {
            *out++ = '\\';
            s++;
        } else {
            *out++ = *s;
        }
    }
    *out = '\0';
}

static int check_list(const char *list, const struct check_opts *o) {
    FILE *in = box_open_input(list);
    if (in == NULL) {
        box_perror(o->name, list);
        return 1;
    }
    char *line = NULL;
    size_t cap = 0;
    ssize_t len;
    unsigned long lineno = 0, bad_lines = 0, mismatched = 0, unreadable = 0, good_lines = 0;
    while ((len = getline(&line, &cap, in)) > 0) {
        lineno++;
        if (line[len - 1] == '\n') line[--len] = '\0';
        char *p = line;
        bool escaped = *p == '\\';
        if (escaped) p++;
        size_t hexlen = strspn(p, "0123456789abcdefABCDEF"), want_len = 2 * digest_size(o->algo);
        if (hexlen != want_len || p[hexlen] != ' ' || (p[hexlen + 1] != ' ' && p[hexlen + 1] != '*') ||
            p[hexlen + 2] == '\0') {
            bad_lines++;
            if (o->warn)
                box_err(o->name, "%s: %lu: improperly formatted %s checksum line", list, lineno,
                        o->algo->tag);
            continue;
        }
        good_lines++;
        char *name = p + hexlen + 2;
        if (escaped) unescape(name);
        char want[HEX_MAX], got[HEX_MAX];
        for (size_t i = 0; i < hexlen; i++)
            want[i] = (char)(p[i] >= 'A' && p[i] <= 'F' ? p[i] + 32 : p[i]);
        want[hexlen] = '\0';
        if (!digest_file(o->algo, name, got)) {
            box_perror(o->name, name);
            if (!o->status_only) printf("%s: FAILED open or read\n", name);
            unreadable++;
            continue;
        }
        bool match = strcmp(want, got) == 0;
        if (!match) mismatched++;
        if (!o->status_only && !(match && o->quiet)) printf("%s: %s\n", name, match ? "OK" : "FAILED");
    }
    free(line);
    box_close_input(in);
    if (good_lines == 0) {
        box_err(o->name, "%s: no properly formatted checksum lines found", list);
        return 1;
    }
    if (!o->status_only) {
        if (bad_lines > 0)
            box_err(o->name, "WARNING: %lu line%s improperly formatted", bad_lines,
                    bad_lines == 1 ? " is" : "s are");
        if (unreadable > 0)
            box_err(o->name, "WARNING: %lu listed file%s could not be read", unreadable,
                    unreadable == 1 ? "" : "s");
        if (mismatched > 0)
            box_err(o->name, "WARNING: %lu computed checksum%s did NOT match", mismatched,
                    mismatched == 1 ? "" : "s");
    }
    return mismatched > 0 || unreadable > 0 || (o->strict && bad_lines > 0) ? 1 : 0;
}

static int run_sum(const char *cmd, const struct digest_algo *algo, int argc, char **argv) {
    enum { OPT_QUIET = 256, OPT_STATUS, OPT_STRICT };
    static const struct option longopts[] = {{"check", no_argument, 0, 'c'},
                                             {"binary", no_argument, 0, 'b'},
                                             {"text", no_argument, 0, 't'},
                                             {"warn", no_argument, 0, 'w'},
                                             {"quiet", no_argument, 0, OPT_QUIET},
                                             {"status", no_argument, 0, OPT_STATUS},
                                             {"strict", no_argument, 0, OPT_STRICT},
                                             {0, 0, 0, 0}};
    bool check = false, binary = false;
    struct check_opts co = {cmd, algo, false, false, false, false};
    int c;
    opterr = 0;
    while ((c = getopt_long(argc, argv, "cbtw", longopts, NULL)) != -1) {
        switch (c) {
        case 'c': check = true; break;
        case 'b': binary = true; break;
        case 't': binary = false; break;
        case 'w': co.warn = true; break;
        case OPT_QUIET: co.quiet = true; break;
        case OPT_STATUS: co.status_only = true; break;
        case OPT_STRICT: co.strict = true; break;
        default: return box_bad_option(cmd, argv);
        }
    }
    int nfiles;
    char **files = box_operands(argc, argv, "-", &nfiles);
    int status = 0;
    for (int i = 0; i < nfiles; i++) {
        if (check) {
            if (check_list(files[i], &co) != 0) status = 1;
            continue;
        }
        char hex[HEX_MAX];
        if (!digest_file(algo, files[i], hex)) {
            box_perror(cmd, files[i]);
            status = 1;
            continue;
        }
        const char *name = files[i];
        bool escape = strpbrk(name, "\\\n") != NULL;
        if (escape) putchar('\\');
        printf("%s %c", hex, binary ? '*' : ' ');
        if (!escape) {
            fputs(name, stdout);
        } else {
            for (const char *p = name; *p; p++) {
                if (*p == '\\') fputs("\\\\", stdout);
                else if (*p == '\n') fputs("\\n", stdout);
                else putchar(*p);
            }
        }
        putchar('\n');
    }
    return status;
}

int cmd_md5sum(int argc, char **argv) { return run_sum("md5sum", &digest_md5, argc, argv); }
int cmd_sha1sum(int argc, char **argv) { return run_sum("sha1sum", &digest_sha1, argc, argv); }
int cmd_sha256sum(int argc, char **argv) { return run_sum("sha256sum", &digest_sha256, argc, argv); }
int cmd_sha512sum(int argc, char **argv) { return run_sum("sha512sum", &digest_sha512, argc, argv); }
