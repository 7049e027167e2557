/* env: print the environment, optionally changed by -i, -u NAME and NAME=VALUE operands.
 * Running a command (`env VAR=x cmd`) is impossible from inside one WASI program, so that
 * is an explicit error (status 125, GNU's "env itself failed"), never a silent no-op. */
#include <getopt.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "box.h"

extern char **environ;

int cmd_env(int argc, char **argv) {
    static const struct option longopts[] = {{"ignore-environment", no_argument, 0, 'i'},
                                             {"unset", required_argument, 0, 'u'},
                                             {"null", no_argument, 0, '0'},
                                             {0, 0, 0, 0}};
    char end = '\n';
    int c;
    opterr = 0;
    /* '+': options stop at the first operand, as GNU env does */
    while ((c = getopt_long(argc, argv, "+:iu:0", longopts, NULL)) != -1) {
        switch (c) {
        case 'i':
            if (clearenv() != 0) {
                box_perror("env", "clearenv");
                return 125;
            }
            break;
        case 'u':
            if (unsetenv(optarg) != 0) {
                box_err("env", "cannot unset '%s'", optarg);
                return 125;
            }
            break;
        case '0': end = '\0'; break;
        case ':': return box_missing_argument("env", 125);
        default: return box_bad_option("env", argv);
        }
    }
    int i = optind;
    if (i < argc && strcmp(argv[i], "-") == 0) {
        clearenv();
        i++;
    }
    for (; i < argc && strchr(argv[i], '=') != NULL && argv[i][0] != '='; i++) {
        char *eq = strchr(argv[i], '=');
        *eq = '\0';
        int r = setenv(argv[i], eq + 1, 1);
        *eq = '=';
        if (r != 0) {
            box_err("env", "cannot set '%s'", argv[i]);
            return 125;
        }
    }
    if (i < argc) {
        box_err("env", "cannot run '%s': running a command from env is not possible in the "
                       "sandbox (use VAR=value %s ... in the shell instead)",
                argv[i], argv[i]);
        return 125;
    }
    for (char **e = environ; e != NULL && *e != NULL; e++) {
        /* the host's plumbing variable is not part of the user's environment */
        if (strncmp(*e, "GK_CWD=", 7) == 0) continue;
        fputs(*e, stdout);
        putchar(end);
    }
    return 0;
}
