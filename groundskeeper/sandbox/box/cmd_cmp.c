/* cmp: compare two files byte by byte with GNU diffutils' C-locale messages ("a b differ:
 * char N, line M" on stdout; "cmp: EOF on a after byte N, line M" on stderr), -s silent, -l every
 * difference, -b the differing bytes, -n a byte limit. Exit 0 same, 1 different, 2 trouble.
 */
#include <ctype.h>
#include <errno.h>
#include <getopt.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/stat.h>

#include "box.h"

/* GNU -b renders a byte as its character, with ^ and M- for the unprintable */
static const char *byte_text(int c, char buf[8]) {
    int k = 0;
    if (c >= 128) {
        buf[k++] = 'M';
        buf[k++] = '-';
        c -= 128;
    }
    if (c < 32 || c == 127) {
        buf[k++] = '^';
        buf[k++] = (char)(c == 127 ? '?' : c + 64);
    } else {
        buf[k++] = (char)c;
    }
    buf[k] = '\0';
    return buf;
}

int cmd_cmp(int argc, char **argv) {
    static const struct option longopts[] = {{"silent", no_argument, 0, 's'},
                                             {"quiet", no_argument, 0, 's'},
                                             {"verbose", no_argument, 0, 'l'},
                                             {"print-bytes", no_argument, 0, 'b'},
                                             {"bytes", required_argument, 0, 'n'},
                                             {0, 0, 0, 0}};
    bool silent = false, list = false, bytes = false;
    uint64_t limit = UINT64_MAX;
    int c;
    opterr = 0;
    while ((c = getopt_long(argc, argv, ":slbn:", longopts, NULL)) != -1) {
        switch (c) {
        case 's': silent = true; break;
        case 'l': list = true; break;
        case 'b': bytes = true; break;
        case 'n': {
            char *end;
            errno = 0;
            unsigned long long v = strtoull(optarg, &end, 10);
            if (!isdigit((unsigned char)optarg[0]) || *end != '\0' || errno == ERANGE) {
                box_err("cmp", "invalid --bytes value '%s'", optarg);
                return 2;
            }
            limit = v;
            break;
        }
        case ':': return box_missing_argument("cmp", 2);
        default: return box_bad_option("cmp", argv);
        }
    }
    if (silent && list) {
        box_err("cmp", "options -l and -s are incompatible");
        return 2;
    }
    int n = argc - optind;
    if (n < 1) {
        box_err("cmp", "missing operand after 'cmp'");
        return 2;
    }
    if (n > 2) {
        box_err("cmp", "%s: skip operands are not supported (not in the sandbox)", argv[optind + 2]);
        return 2;
    }
    const char *names[2] = {argv[optind], n == 2 ? argv[optind + 1] : "-"};
    FILE *f[2];
    for (int i = 0; i < 2; i++) {
        f[i] = box_open_readable(names[i]);
        if (f[i] == NULL) {
            box_perror("cmp", names[i]);
            if (i == 1) box_close_input(f[0]);
            return 2;
        }
    }
    /* -l pads byte numbers to the width of the larger file's size, as GNU does */
    int width = 1;
    uint64_t largest = 0;
    for (int i = 0; i < 2; i++) {
        struct stat sb;
        if (fstat(fileno(f[i]), &sb) == 0 && S_ISREG(sb.st_mode) && (uint64_t)sb.st_size > largest)
            largest = (uint64_t)sb.st_size;
    }
    if (largest > limit) largest = limit;
    for (; largest >= 10; largest /= 10) width++;
    uint64_t byte = 0, line = 1;
    int status = 0, last = -1;
    while (byte < limit) {
        int a = getc(f[0]), b = getc(f[1]);
        if (a == EOF || b == EOF) {
            if (a == EOF && b == EOF) break;
            /* one input ended first */
            if (!silent) {
                const char *shorter = a == EOF ? names[0] : names[1];
                if (byte == 0) fprintf(stderr, "cmp: EOF on %s which is empty\n", shorter);
                else if (list) fprintf(stderr, "cmp: EOF on %s after byte %llu\n", shorter, (unsigned long long)byte);
                else if (last == '\n')
                    fprintf(stderr, "cmp: EOF on %s after byte %llu, line %llu\n", shorter,
                            (unsigned long long)byte, (unsigned long long)(line - 1));
                else
                    fprintf(stderr, "cmp: EOF on %s after byte %llu, in line %llu\n", shorter,
                            (unsigned long long)byte, (unsigned long long)line);
            }
            status = 1;
            break;
        }
        byte++;
        if (a != b) {
            status = 1;
            if (silent) break;
            char ta[8], tb[8];
            if (list) {
                if (bytes)
                    printf("%*llu %3o %-4s %3o %s\n", width, (unsigned long long)byte, (unsigned)a,
                           byte_text(a, ta), (unsigned)b, byte_text(b, tb));
                else
                    printf("%*llu %3o %3o\n", width, (unsigned long long)byte, (unsigned)a, (unsigned)b);
            } else {
                /* diffutils says "char" in the C locale (POSIX's wording), "byte" with -b */
                printf("%s %s differ: %s %llu, line %llu", names[0], names[1], bytes ? "byte" : "char",
                       (unsigned long long)byte, (unsigned long long)line);
                if (bytes)
                    printf(" is %3o %s %3o %s", (unsigned)a, byte_text(a, ta), (unsigned)b, byte_text(b, tb));
                putchar('\n');
                break;
            }
        }
        if (a == '\n') line++;
        last = a;
    }
    bool read_error = ferror(f[0]) || ferror(f[1]);
    for (int i = 0; i < 2; i++)
        if (f[i] != stdin) fclose(f[i]);
    if (read_error) {
        box_err("cmp", "read error");
        return 2;
    }
    return status;
}
