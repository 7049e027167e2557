/* base64: RFC 4648 encoding, wrapped at -w COLS (76 by default, 0 for one line), and -d to
 * decode (newlines skipped; -i skips any other byte outside the alphabet too). Invalid input
 * is "base64: invalid input" and status 1, after what decoded before it, as GNU does.
 */
#include <getopt.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "box.h"

static const char ALPHABET[] = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";

static int encode(FILE *in, unsigned long wrap) {
    char *data = NULL;
    size_t len = 0, cap = 0;
    if (!box_read_all(in, &data, &len, &cap)) {
        free(data);
        return -1;
    }
    const unsigned char *p = (const unsigned char *)data;
    unsigned long column = 0;
    for (size_t i = 0; i < len; i += 3) {
        size_t n = len - i < 3 ? len - i : 3;
        unsigned v = (unsigned)p[i] << 16 | (n > 1 ? (unsigned)p[i + 1] << 8 : 0) |
                     (n > 2 ? p[i + 2] : 0);
        char quad[4] = {ALPHABET[v >> 18 & 63], ALPHABET[v >> 12 & 63],
                        n > 1 ? ALPHABET[v >> 6 & 63] : '=', n > 2 ? ALPHABET[v & 63] : '='};
        for (int k = 0; k < 4; k++) {
            putchar(quad[k]);
            if (wrap > 0 && ++column == wrap) {
                putchar('\n');
                column = 0;
            }
        }
    }
    if (wrap > 0 && column > 0) putchar('\n');
    free(data);
    return 0;
}

static int value_of(int c) {
    const char *p = c != 0 ? strchr(ALPHABET, c) : NULL;
    return p != NULL ? (int)(p - ALPHABET) : -1;
}

/* 0, or 1 after "invalid input" */
static int decode(FILE *in, bool ignore_garbage) {
    int quad[4], n = 0, c;
    while ((c = getc(in)) != EOF) {
        if (c == '\n') continue;
        int v = c == '=' ? 64 : value_of(c);
        if (v < 0) {
            if (ignore_garbage) continue;
            break;
        }
        /* padding only in the last two places, and a third-place '=' needs a fourth */
        if (v == 64 && n < 2) break;
        if (v != 64 && n == 3 && quad[2] == 64) break;
        quad[n++] = v;
        if (n < 4) continue;
        putchar(quad[0] << 2 | quad[1] >> 4);
        if (quad[2] != 64) putchar((quad[1] & 15) << 4 | quad[2] >> 2);
        if (quad[3] != 64) putchar((quad[2] & 3) << 6 | quad[3]);
        n = 0;
    }
    if (c == EOF && n == 0) return 0;
    /* what the partial group holds before the error */
    if (n >= 2) putchar(quad[0] << 2 | quad[1] >> 4);
    if (n >= 3 && quad[2] != 64) putchar((quad[1] & 15) << 4 | quad[2] >> 2);
    box_err("base64", "invalid input");
    return 1;
}

int cmd_base64(int argc, char **argv) {
    static const struct option longopts[] = {{"decode", no_argument, 0, 'd'},
                                             {"ignore-garbage", no_argument, 0, 'i'},
                                             {"wrap", required_argument, 0, 'w'},
                                             {0, 0, 0, 0}};
    bool dec = false, ignore = false;
    unsigned long wrap = 76;
    int c;
    opterr = 0;
    while ((c = getopt_long(argc, argv, ":diw:", longopts, NULL)) != -1) {
        switch (c) {
        case 'd': dec = true; break;
        case 'i': ignore = true; break;
        case 'w': {
            char *end;
            wrap = strtoul(optarg, &end, 10);
            if (*optarg == '\0' || *end != '\0' || *optarg == '-') {
                box_err("base64", "invalid wrap size: '%s'", optarg);
                return 1;
            }
            break;
        }
        case ':': return box_missing_argument("base64", 1);
        default: return box_bad_option("base64", argv);
        }
    }
    if (argc - optind > 1) {
        box_err("base64", "extra operand '%s'", argv[optind + 1]);
        return 1;
    }
    const char *path = optind < argc ? argv[optind] : "-";
    FILE *in = box_open_readable(path);
    if (in == NULL) {
        box_perror("base64", path);
        return 1;
    }
    int status = dec ? decode(in, ignore) : encode(in, wrap);
    if (status < 0 || ferror(in)) {
        box_perror("base64", path);
        status = 1;
    }
    box_close_input(in);
    return status;
}
