/* nl: number lines. -b a|t|n|pBRE (which body lines: all, non-empty (default), none, those
 * matching), -n ln|rn|rz, -w WIDTH, -s SEP, -v START, -i STEP. The section delimiter lines
 * \:\:\: \:\: \: start a header, body or footer (printed as empty lines, numbering back to
 * START); header and footer lines are not numbered, as GNU's defaults have it.
 */
#include <getopt.h>
#include <regex.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/types.h>

#include "box.h"

struct style {
    char kind; /* 'a', 't', 'n' or 'p' */
    regex_t re;
};

static int parse_style(const char *arg, struct style *st) {
    if ((arg[0] == 'a' || arg[0] == 't' || arg[0] == 'n') && arg[1] == '\0') {
        st->kind = arg[0];
        return 0;
    }
    if (arg[0] == 'p') {
        st->kind = 'p';
        if (box_regcomp(&st->re, arg + 1, 0, 0) == 0) return 0;
    }
    box_err("nl", "invalid body numbering style: '%s'", arg);
    return 1;
}

static bool parse_long(const char *arg, long *out, long min) {
    char *end;
    long v = strtol(arg, &end, 10);
    if (*arg == '\0' || *end != '\0' || v < min) return false;
    *out = v;
    return true;
}

int cmd_nl(int argc, char **argv) {
    static const struct option longopts[] = {{"body-numbering", required_argument, 0, 'b'},
                                             {"number-format", required_argument, 0, 'n'},
                                             {"number-width", required_argument, 0, 'w'},
                                             {"number-separator", required_argument, 0, 's'},
                                             {"starting-line-number", required_argument, 0, 'v'},
                                             {"line-increment", required_argument, 0, 'i'},
                                             {0, 0, 0, 0}};
    struct style body = {'t'};
    const char *format = "rn", *sep = "\t";
    long width = 6, start = 1, step = 1;
    int c;
    opterr = 0;
    while ((c = getopt_long(argc, argv, ":b:n:w:s:v:i:", longopts, NULL)) != -1) {
        switch (c) {
        case 'b':
            if (parse_style(optarg, &body) != 0) return 1;
            break;
        case 'n':
            if (strcmp(optarg, "ln") != 0 && strcmp(optarg, "rn") != 0 && strcmp(optarg, "rz") != 0) {
                box_err("nl", "invalid line numbering format: '%s'", optarg);
                return 1;
            }
            format = optarg;
            break;
        case 'w':
            if (!parse_long(optarg, &width, 1)) {
                box_err("nl", "invalid line number field width: '%s'", optarg);
                return 1;
            }
            break;
        case 's': sep = optarg; break;
        case 'v':
            if (!parse_long(optarg, &start, -0x7fffffffL)) {
                box_err("nl", "invalid starting line number: '%s'", optarg);
                return 1;
            }
            break;
        case 'i':
            if (!parse_long(optarg, &step, 0)) {
                box_err("nl", "invalid line number increment: '%s'", optarg);
                return 1;
            }
            break;
        case ':': return box_missing_argument("nl", 1);
        default: return box_bad_option("nl", argv);
        }
    }
    int nfiles;
    char **files = box_operands(argc, argv, "-", &nfiles);
    int status = 0;
    long number = start;
    bool in_body = true;
    char *line = NULL;
    size_t cap = 0;
    for (int f = 0; f < nfiles; f++) {
        FILE *in = box_open_readable(files[f]);
        if (in == NULL) {
            box_perror("nl", files[f]);
            status = 1;
            continue;
        }
        ssize_t n;
        while ((n = getline(&line, &cap, in)) > 0) {
            bool newline = line[n - 1] == '\n';
            size_t len = (size_t)n - newline;
            if (newline) line[len] = '\0';
            if (strcmp(line, "\\:\\:\\:") == 0 || strcmp(line, "\\:\\:") == 0 ||
                strcmp(line, "\\:") == 0) {
                in_body = len == 4; /* \:\: starts the body */
                number = start;
                putchar('\n');
                continue;
            }
            bool numbered = false;
            if (in_body) {
                switch (body.kind) {
                case 'a': numbered = true; break;
                case 't': numbered = len > 0; break;
                case 'p': numbered = regexec(&body.re, line, 0, NULL, 0) == 0; break;
                default: break;
                }
            }
            if (numbered) {
                if (strcmp(format, "ln") == 0) printf("%-*ld", (int)width, number);
                else if (strcmp(format, "rz") == 0 && number < 0) printf("-%0*ld", (int)width - 1, -number);
                else printf(strcmp(format, "rz") == 0 ? "%0*ld" : "%*ld", (int)width, number);
                fputs(sep, stdout);
                number += step;
            } else {
                /* GNU pads an unnumbered line as wide as the number and separator */
                printf("%*s", (int)(width + (long)strlen(sep)), "");
            }
            fwrite(line, 1, len, stdout);
            putchar('\n');
        }
        box_close_input(in);
    }
    free(line);
    if (body.kind == 'p') regfree(&body.re);
    return status;
}
