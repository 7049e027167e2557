/* rev: each line's characters in reverse order (UTF-8 sequences kept whole), as util-linux
 * does; a last line without a newline stays without one. No options.
 */
#include <errno.h>
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/types.h>

#include "box.h"

static void reverse_line(char *line, size_t len, char *out) {
    size_t o = len;
    for (size_t i = 0; i < len;) {
        size_t n = 1;
        /* a lead byte and its continuation bytes move as one character */
        while ((unsigned char)line[i] >= 0xc0 && i + n < len && ((unsigned char)line[i + n] & 0xc0) == 0x80)
            n++;
        o -= n;
        memcpy(out + o, line + i, n);
        i += n;
    }
}

int cmd_rev(int argc, char **argv) {
    static const struct option longopts[] = {{0, 0, 0, 0}};
    opterr = 0;
    if (getopt_long(argc, argv, ":", longopts, NULL) != -1) return box_bad_option("rev", argv);
    int nfiles;
    char **files = box_operands(argc, argv, "-", &nfiles);
    int status = 0;
    char *line = NULL, *out = NULL;
    size_t cap = 0, out_cap = 0;
    for (int i = 0; i < nfiles; i++) {
        FILE *in = box_open_readable(files[i]);
        if (in == NULL) {
            box_err("rev", "cannot open %s: %s", files[i], strerror(errno));
            status = 1;
            continue;
        }
        ssize_t len;
        while ((len = getline(&line, &cap, in)) > 0) {
            int newline = line[len - 1] == '\n';
            size_t body = (size_t)len - (size_t)newline;
            if (out_cap < body + 1) {
                out_cap = body + 1;
                out = box_need("rev", realloc(out, out_cap), 1);
            }
            reverse_line(line, body, out);
            fwrite(out, 1, body, stdout);
            if (newline) putchar('\n');
        }
        if (ferror(in)) {
            box_perror("rev", files[i]);
            status = 1;
        }
        box_close_input(in);
    }
    free(line);
    free(out);
    return status;
}
