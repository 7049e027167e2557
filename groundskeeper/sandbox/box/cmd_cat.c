/* cat: concatenate files ("-" is stdin) with GNU's -n -b -s -E numbering and marking. */
#include <getopt.h>
#include <stdbool.h>
#include <stdio.h>

#include "box.h"

struct cat_opts {
    bool number, number_nonblank, squeeze, show_ends;
};

/* Line numbers and blank-line squeezing carry across files, as in GNU cat. */
struct cat_state {
    unsigned long long line;
    bool at_line_start;
    int blank_run;
};

static bool cat_plain(FILE *in) {
    char buf[65536];
    size_t n;
    while ((n = fread(buf, 1, sizeof buf, in)) > 0) {
        if (fwrite(buf, 1, n, stdout) != n) return false;
    }
    return !ferror(in);
}

static bool cat_lines(FILE *in, const struct cat_opts *o, struct cat_state *st) {
    int c;
    while ((c = getc(in)) != EOF) {
        if (st->at_line_start) {
            if (c == '\n') {
                st->blank_run++;
                if (o->squeeze && st->blank_run > 1) continue;
            } else {
                st->blank_run = 0;
            }
            if (o->number_nonblank ? c != '\n' : o->number) printf("%6llu\t", ++st->line);
            st->at_line_start = false;
        }
        if (c == '\n') {
            if (o->show_ends) putchar('$');
            st->at_line_start = true;
        }
        putchar(c);
    }
    return !ferror(in);
}

int cmd_cat(int argc, char **argv) {
    static const struct option longopts[] = {{0, 0, 0, 0}};
    struct cat_opts o = {false, false, false, false};
    int c;
    opterr = 0;
    while ((c = getopt_long(argc, argv, "nbsEu", longopts, NULL)) != -1) {
        switch (c) {
        case 'n': o.number = true; break;
        case 'b': o.number_nonblank = true; break;
        case 's': o.squeeze = true; break;
        case 'E': o.show_ends = true; break;
        case 'u': break; /* POSIX: unbuffered; our output is flushed at exit either way */
        default: return box_bad_option("cat", argv);
        }
    }
    bool plain = !o.number && !o.number_nonblank && !o.squeeze && !o.show_ends;
    struct cat_state st = {0, true, 0};
    int nfiles;
    char **files = box_operands(argc, argv, "-", &nfiles);
    int status = 0;
    for (int i = 0; i < nfiles; i++) {
        FILE *in = box_open_readable(files[i]);
        if (in == NULL || !(plain ? cat_plain(in) : cat_lines(in, &o, &st))) {
            box_perror("cat", files[i]);
            status = 1;
        }
        if (in != NULL) box_close_input(in);
    }
    return status;
}
