/* The inputs a command reads: its file operands ("-" is stdin, none means one default), opened
 * and closed the same way everywhere. WASI lets a program open a directory, and reading it then
 * fails with a less helpful errno, so directories are recognised up front as EISDIR.
 */
#include <errno.h>
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "box.h"

char **box_operands(int argc, char **argv, char *only, int *count) {
    static char *defaults[1];
    if (optind < argc) {
        *count = argc - optind;
        return argv + optind;
    }
    defaults[0] = only;
    *count = 1;
    return defaults;
}

FILE *box_open_input(const char *path) {
    return strcmp(path, "-") == 0 ? stdin : fopen(path, "r");
}

int box_input_is_dir(FILE *in) {
    struct stat sb;
    if (fstat(fileno(in), &sb) == 0 && S_ISDIR(sb.st_mode)) {
        errno = EISDIR;
        return 1;
    }
    return 0;
}

FILE *box_open_readable(const char *path) {
    FILE *in = box_open_input(path);
    if (in != NULL && box_input_is_dir(in)) {
        box_close_input(in);
        return NULL;
    }
    return in;
}

int box_read_all(FILE *in, char **data, size_t *len, size_t *cap) {
    for (;;) {
        if (*cap - *len < 65536) {
            size_t ncap = *cap ? *cap * 2 : 131072;
            char *grown = realloc(*data, ncap);
            if (grown == NULL) {
                errno = ENOMEM;
                return 0;
            }
            *data = grown;
            *cap = ncap;
        }
        size_t got = fread(*data + *len, 1, *cap - *len - 1, in);
        *len += got;
        if (got == 0)
            break;
    }
    return !ferror(in);
}

void box_close_input(FILE *in) {
    int saved = errno;
    if (in == stdin) clearerr(stdin); /* a later "-" reads on from where this one ended */
    else fclose(in);
    errno = saved;
}
