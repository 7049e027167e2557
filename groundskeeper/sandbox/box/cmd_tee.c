/* tee: stdin to stdout and to every FILE (-a appends). Each file is opened through the
 * sandbox's WASI layer like any write, so the fence and the read-only mount apply. -i and -p
 * change nothing here (no signals, no broken pipes to survive) and are accepted.
 */
#include <getopt.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "box.h"

int cmd_tee(int argc, char **argv) {
    static const struct option longopts[] = {{"append", no_argument, 0, 'a'},
                                             {"ignore-interrupts", no_argument, 0, 'i'},
                                             {0, 0, 0, 0}};
    bool append = false;
    int c;
    opterr = 0;
    while ((c = getopt_long(argc, argv, "aip", longopts, NULL)) != -1) {
        switch (c) {
        case 'a': append = true; break;
        case 'i': case 'p': break;
        default: return box_bad_option("tee", argv);
        }
    }
    int n = argc - optind, status = 0;
    FILE **outs = box_need("tee", calloc((size_t)n + 1, sizeof *outs), 1);
    for (int i = 0; i < n; i++) {
        const char *path = argv[optind + i];
        /* "-" is a file named "-", as in GNU's tee since coreutils 8.x */
        outs[i] = fopen(path, append ? "a" : "w");
        if (outs[i] == NULL) {
            box_perror("tee", path);
            status = 1;
        }
    }
    static char buf[65536];
    size_t got;
    while ((got = fread(buf, 1, sizeof buf, stdin)) > 0) {
        fwrite(buf, 1, got, stdout);
        for (int i = 0; i < n; i++) {
            if (outs[i] != NULL && fwrite(buf, 1, got, outs[i]) != got) {
                box_perror("tee", argv[optind + i]);
                fclose(outs[i]);
                outs[i] = NULL;
                status = 1;
            }
        }
    }
    if (ferror(stdin)) {
        box_perror("tee", "standard input");
        status = 1;
    }
    for (int i = 0; i < n; i++) {
        if (outs[i] != NULL && fclose(outs[i]) != 0) {
            box_perror("tee", argv[optind + i]);
            status = 1;
        }
    }
    free(outs);
    return status;
}
