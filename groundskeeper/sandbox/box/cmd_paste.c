/* paste: lines of the files side by side (or, -s, each file's lines on one line), joined by
 * the delimiters of -d LIST used in turn (tab by default; \n \t \\ and \0 for none). "-" is
 * stdin, and several "-" take its lines in turn, as GNU does.
 */
#include <getopt.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/types.h>

#include "box.h"

/* The delimiter list with its escapes undone; a "\0" entry is an empty delimiter, kept as
 * the byte 0 and never printed. NULL after GNU's message for a trailing backslash. */
static char *delimiters(const char *list, size_t *count) {
    char *out = box_need("paste", malloc(strlen(list) + 1), 1);
    size_t n = 0;
    for (const char *p = list; *p; p++) {
        if (*p != '\\') {
            out[n++] = *p;
            continue;
        }
        switch (*++p) {
        case '\0':
            box_err("paste", "delimiter list ends with an unescaped backslash: %s", list);
            free(out);
            return NULL;
        case 'n': out[n++] = '\n'; break;
        case 't': out[n++] = '\t'; break;
        case 'b': out[n++] = '\b'; break;
        case 'f': out[n++] = '\f'; break;
        case 'r': out[n++] = '\r'; break;
        case 'v': out[n++] = '\v'; break;
        case '0': out[n++] = '\0'; break;
        default: out[n++] = *p; break;
        }
    }
    *count = n;
    return out;
}

static void put_delimiter(const char *delims, size_t ndelims, size_t i) {
    if (ndelims > 0 && delims[i % ndelims] != '\0') putchar(delims[i % ndelims]);
}

/* One line of IN without its newline into *LINE; false at the end of IN. */
static bool read_line(FILE *in, char **line, size_t *cap, size_t *len) {
    ssize_t n = in != NULL ? getline(line, cap, in) : -1;
    if (n <= 0) return false;
    *len = (size_t)n - ((*line)[n - 1] == '\n');
    return true;
}

static int serial(char **files, int nfiles, const char *delims, size_t ndelims) {
    int status = 0;
    char *line = NULL;
    size_t cap = 0, len;
    for (int f = 0; f < nfiles; f++) {
        FILE *in = box_open_readable(files[f]);
        if (in == NULL) {
            box_perror("paste", files[f]);
            status = 1;
            continue;
        }
        size_t i = 0;
        while (read_line(in, &line, &cap, &len)) {
            if (i > 0) put_delimiter(delims, ndelims, i - 1);
            fwrite(line, 1, len, stdout);
            i++;
        }
        putchar('\n');
        box_close_input(in);
    }
    free(line);
    return status;
}

static int parallel(char **files, int nfiles, const char *delims, size_t ndelims) {
    FILE **ins = box_need("paste", calloc((size_t)nfiles, sizeof *ins), 1);
    for (int f = 0; f < nfiles; f++) {
        ins[f] = box_open_readable(files[f]);
        if (ins[f] == NULL) {
            box_perror("paste", files[f]);
            for (int g = 0; g < f; g++)
                if (ins[g] != NULL) box_close_input(ins[g]);
            free(ins);
            return 1;
        }
    }
    char *line = NULL, *row = NULL;
    size_t cap = 0, len, row_len, row_cap = 0;
    for (;;) {
        bool any = false;
        row_len = 0;
        for (int f = 0; f < nfiles; f++) {
            size_t got = 0;
            if (ins[f] != NULL && read_line(ins[f], &line, &cap, &len)) {
                any = true;
                got = len;
            } else if (ins[f] != NULL && ins[f] != stdin) {
                box_close_input(ins[f]);
                ins[f] = NULL;
            }
            /* the row is kept until some file gave a line: a row of ends prints nothing */
            if (row_cap < row_len + got + 2) {
                row_cap = 2 * (row_len + got + 2);
                row = box_need("paste", realloc(row, row_cap), 1);
            }
            memcpy(row + row_len, line, got);
            row_len += got;
            if (f < nfiles - 1 && ndelims > 0 && delims[(size_t)f % ndelims] != '\0')
                row[row_len++] = delims[(size_t)f % ndelims];
        }
        if (!any) break;
        fwrite(row, 1, row_len, stdout);
        putchar('\n');
    }
    for (int f = 0; f < nfiles; f++)
        if (ins[f] != NULL) box_close_input(ins[f]);
    free(ins);
    free(line);
    free(row);
    return 0;
}

int cmd_paste(int argc, char **argv) {
    static const struct option longopts[] = {{"delimiters", required_argument, 0, 'd'},
                                             {"serial", no_argument, 0, 's'},
                                             {0, 0, 0, 0}};
    const char *list = "\t";
    bool ser = false;
    int c;
    opterr = 0;
    while ((c = getopt_long(argc, argv, ":d:s", longopts, NULL)) != -1) {
        switch (c) {
        case 'd': list = optarg; break;
        case 's': ser = true; break;
        case ':': return box_missing_argument("paste", 1);
        default: return box_bad_option("paste", argv);
        }
    }
    size_t ndelims = 0;
    char *delims = delimiters(list, &ndelims);
    if (delims == NULL) return 1;
    int nfiles;
    char **files = box_operands(argc, argv, "-", &nfiles);
    int status = ser ? serial(files, nfiles, delims, ndelims) : parallel(files, nfiles, delims, ndelims);
    free(delims);
    return status;
}
