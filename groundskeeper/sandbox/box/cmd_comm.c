/* comm: two sorted files compared line by line, in three columns (only in FILE1, only in
 * FILE2, in both); -1 -2 -3 leave columns out, --output-delimiter replaces the tab, --total
 * adds a count line. Order is checked as GNU does: by default once a line has no partner,
 * with --check-order always (and fatally), never with --nocheck-order.
 */
#include <getopt.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/types.h>

#include "box.h"

enum { ORDER_DEFAULT, ORDER_ALWAYS, ORDER_NEVER };

struct side {
    FILE *in;
    char *line, *prev;
    size_t cap, prev_cap, len, prev_len;
    bool have, had_prev, warned;
};

static int compare(const char *a, size_t alen, const char *b, size_t blen) {
    int c = memcmp(a, b, alen < blen ? alen : blen);
    return c != 0 ? c : (alen > blen) - (alen < blen);
}

static void advance(struct side *s) {
    if (s->have) { /* keep the line just used, to check the next one's order */
        char *swap = s->prev;
        size_t swap_cap = s->prev_cap;
        s->prev = s->line;
        s->prev_cap = s->cap;
        s->prev_len = s->len;
        s->line = swap;
        s->cap = swap_cap;
        s->had_prev = true;
    }
    ssize_t n = getline(&s->line, &s->cap, s->in);
    s->have = n > 0;
    if (s->have) s->len = (size_t)n - (s->line[n - 1] == '\n');
}

int cmd_comm(int argc, char **argv) {
    enum { OPT_CHECK = 256, OPT_NOCHECK, OPT_DELIM, OPT_TOTAL };
    static const struct option longopts[] = {{"check-order", no_argument, 0, OPT_CHECK},
                                             {"nocheck-order", no_argument, 0, OPT_NOCHECK},
                                             {"output-delimiter", required_argument, 0, OPT_DELIM},
                                             {"total", no_argument, 0, OPT_TOTAL},
                                             {0, 0, 0, 0}};
    bool show[4] = {false, true, true, true}, total = false;
    int order = ORDER_DEFAULT, c;
    const char *delim = "\t";
    opterr = 0;
    while ((c = getopt_long(argc, argv, ":123", longopts, NULL)) != -1) {
        switch (c) {
        case '1': case '2': case '3': show[c - '0'] = false; break;
        case OPT_CHECK: order = ORDER_ALWAYS; break;
        case OPT_NOCHECK: order = ORDER_NEVER; break;
        case OPT_DELIM: delim = *optarg ? optarg : ""; break;
        case OPT_TOTAL: total = true; break;
        case ':': return box_missing_argument("comm", 1);
        default: return box_bad_option("comm", argv);
        }
    }
    if (argc - optind != 2) {
        if (argc - optind < 2) box_err("comm", argc == optind ? "missing operand" : "missing operand after '%s'", argv[argc - 1]);
        else box_err("comm", "extra operand '%s'", argv[optind + 2]);
        return 1;
    }
    struct side sides[2] = {{0}, {0}};
    for (int i = 0; i < 2; i++) {
        sides[i].in = box_open_readable(argv[optind + i]);
        if (sides[i].in == NULL) {
            box_perror("comm", argv[optind + i]);
            if (i == 1) box_close_input(sides[0].in);
            return 1;
        }
        advance(&sides[i]);
    }
    bool unpairable = false, disorder = false;
    unsigned long counts[4] = {0};
    int status = 0;
    while (sides[0].have || sides[1].have) {
        int which; /* 1: only in file 1; 2: only in file 2; 3: both */
        if (!sides[1].have) which = 1;
        else if (!sides[0].have) which = 2;
        else {
            int cmp = compare(sides[0].line, sides[0].len, sides[1].line, sides[1].len);
            which = cmp < 0 ? 1 : cmp > 0 ? 2 : 3;
        }
        if (which != 3) unpairable = true;
        /* the order of the lines about to be used, against the lines before them */
        for (int i = 0; i < 2; i++) {
            struct side *s = &sides[i];
            if (!(which == 3 || which == i + 1) || !s->had_prev || s->warned) continue;
            if (order == ORDER_NEVER || (order == ORDER_DEFAULT && !unpairable)) continue;
            if (compare(s->prev, s->prev_len, s->line, s->len) > 0) {
                box_err("comm", "file %d is not in sorted order", i + 1);
                s->warned = disorder = true;
                if (order == ORDER_ALWAYS) {
                    status = 1;
                    goto done;
                }
            }
        }
        counts[which]++;
        if (show[which]) {
            for (int col = 1; col < which; col++)
                if (show[col]) fputs(delim, stdout);
            struct side *s = which == 2 ? &sides[1] : &sides[0];
            fwrite(s->line, 1, s->len, stdout);
            putchar('\n');
        }
        if (which != 2) advance(&sides[0]);
        if (which != 1) advance(&sides[1]);
    }
    if (total)
        printf("%lu%s%lu%s%lu%stotal\n", counts[1], delim, counts[2], delim, counts[3], delim);
    if (disorder) {
        box_err("comm", "input is not in sorted order");
        status = 1;
    }
done:
    for (int i = 0; i < 2; i++) {
        box_close_input(sides[i].in);
        free(sides[i].line);
        free(sides[i].prev);
    }
    return status;
}
