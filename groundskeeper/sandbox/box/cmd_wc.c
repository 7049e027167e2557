/* wc: newline, word, byte and line-length counts with GNU coreutils' column widths and C
 * locale word rules (a word is a run of printable non-space bytes; other bytes neither start
 * nor end one).
 */
#include <ctype.h>
#include <getopt.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>

#include "box.h"

struct counts {
    uint64_t lines, words, bytes, maxlen;
};

struct wc_opts {
    bool lines, words, chars, bytes, maxlen;
};

static bool count_stream(FILE *in, struct counts *c) {
    unsigned char buf[65536];
    size_t n;
    bool in_word = false;
    uint64_t linepos = 0;
    while ((n = fread(buf, 1, sizeof buf, in)) > 0) {
        c->bytes += n;
        for (size_t i = 0; i < n; i++) {
            unsigned char ch = buf[i];
            switch (ch) {
            case '\n':
                c->lines++;
                /* fall through */
            case '\r':
            case '\f':
                if (linepos > c->maxlen) c->maxlen = linepos;
                linepos = 0;
                in_word = false;
                break;
            case '\t':
                linepos += 8 - linepos % 8;
                in_word = false;
                break;
            case ' ':
                linepos++;
                in_word = false;
                break;
            case '\v':
                in_word = false;
                break;
            default:
                if (isprint(ch)) {
                    linepos++;
                    if (!in_word) c->words++;
                    in_word = true;
                }
                break;
            }
        }
    }
    if (linepos > c->maxlen) c->maxlen = linepos;
    return !ferror(in);
}

static void print_counts(const struct counts *c, const struct wc_opts *o, int width,
                         const char *name) {
    const uint64_t values[] = {c->lines, c->words, c->bytes, c->bytes, c->maxlen};
    const bool shown[] = {o->lines, o->words, o->chars, o->bytes, o->maxlen};
    const char *sep = "";
    for (size_t i = 0; i < 5; i++) {
        if (!shown[i]) continue;
        printf("%s%*llu", sep, width, (unsigned long long)values[i]);
        sep = " ";
    }
    if (name != NULL) printf(" %s", name);
    putchar('\n');
}

/* GNU's rule: the width of the total size of the regular files among the inputs, at least 7
 * when some input is not a regular file (a pipe), and 1 when only one count of one input is
 * printed. Inputs that cannot be examined do not count. */
static int number_width(char **files, int nfiles, int kinds) {
    if (nfiles == 1 && kinds == 1) return 1;
    int width = 1, minimum = 1;
    uint64_t total = 0;
    for (int i = 0; i < nfiles; i++) {
        struct stat sb;
        bool is_stdin = files[i] == NULL || strcmp(files[i], "-") == 0;
        int r = is_stdin ? fstat(0, &sb) : stat(files[i], &sb);
        if (r != 0) continue;
        if (S_ISREG(sb.st_mode)) total += (uint64_t)sb.st_size;
        else minimum = 7;
    }
    for (; total >= 10; total /= 10) width++;
    return width < minimum ? minimum : width;
}

int cmd_wc(int argc, char **argv) {
    static const struct option longopts[] = {{"lines", no_argument, 0, 'l'},
                                             {"words", no_argument, 0, 'w'},
                                             {"chars", no_argument, 0, 'm'},
                                             {"bytes", no_argument, 0, 'c'},
                                             {"max-line-length", no_argument, 0, 'L'},
                                             {0, 0, 0, 0}};
    struct wc_opts o = {false, false, false, false, false};
    int c;
    opterr = 0;
    while ((c = getopt_long(argc, argv, "lwmcL", longopts, NULL)) != -1) {
        switch (c) {
        case 'l': o.lines = true; break;
        case 'w': o.words = true; break;
        case 'm': o.chars = true; break; /* characters are bytes in the C locale */
        case 'c': o.bytes = true; break;
        case 'L': o.maxlen = true; break;
        default: return box_bad_option("wc", argv);
        }
    }
    if (!o.lines && !o.words && !o.chars && !o.bytes && !o.maxlen) {
        o.lines = o.words = o.bytes = true;
    }
    int kinds = o.lines + o.words + o.chars + o.bytes + o.maxlen;
    int nfiles;
    char **files = box_operands(argc, argv, NULL, &nfiles); /* NULL: stdin, no name printed */
    int width = number_width(files, nfiles, kinds);
    struct counts total = {0, 0, 0, 0};
    int status = 0;
    for (int i = 0; i < nfiles; i++) {
        FILE *in = box_open_input(files[i] != NULL ? files[i] : "-");
        if (in == NULL) {
            box_perror("wc", files[i]);
            status = 1;
            continue;
        }
        struct counts one = {0, 0, 0, 0};
        /* a directory still gets its line of zeros, as in GNU */
        if (box_input_is_dir(in) || !count_stream(in, &one)) {
            box_perror("wc", files[i] != NULL ? files[i] : "-");
            status = 1;
        }
        print_counts(&one, &o, width, files[i]);
        total.lines += one.lines;
        total.words += one.words;
        total.bytes += one.bytes;
        if (one.maxlen > total.maxlen) total.maxlen = one.maxlen;
        box_close_input(in);
    }
    if (nfiles > 1) print_counts(&total, &o, width, "total");
    return status;
}
