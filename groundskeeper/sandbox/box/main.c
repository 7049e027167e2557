/* Dispatch for the multi-call binary: argv[0] names the command. `[` is `test`. */
#include <errno.h>
#include <getopt.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "box.h"

struct box_entry {
    const char *name;
    int (*fn)(int, char **);
};

#define BOX_ENTRY(name) {#name, cmd_##name},
/* "[[=~" is the host shell's own: no command line can name it (see host_rematch.c). */
static const struct box_entry entries[] = {
    BOX_COMMANDS(BOX_ENTRY){"[", cmd_test}, {"[[=~", host_rematch}};
#undef BOX_ENTRY

int box_usage(const char *name, const char *option) {
    fprintf(stderr, "%s: unsupported option %s (not in the sandbox)\n", name, option);
    return 2;
}

int box_bad_option(const char *name, char **argv) {
    /* optopt is 0 for an unknown long option: argv[optind - 1] is that option as written */
    char opt[3] = {'-', (char)optopt, '\0'};
    return box_usage(name, optopt ? opt : argv[optind - 1]);
}

int box_missing_argument(const char *name, int status) {
    box_err(name, "option requires an argument -- '%c'", optopt);
    return status;
}

void *box_need(const char *name, void *p, int status) {
    if (p == NULL) {
        box_err(name, "out of memory");
        exit(status);
    }
    return p;
}

void box_err(const char *name, const char *fmt, ...) {
    va_list ap;
    fprintf(stderr, "%s: ", name);
    va_start(ap, fmt);
    vfprintf(stderr, fmt, ap);
    va_end(ap);
    fputc('\n', stderr);
}

void box_perror(const char *name, const char *path) {
    fprintf(stderr, "%s: %s: %s\n", name, path, strerror(errno));
}

/* wasi-libc's current directory (getcwd.c); chdir() sets it after a stat. */
extern char *__wasilibc_cwd;

int main(int argc, char **argv) {
    /* The host tells us the shell's current directory (inside the workdir) this way. The
     * host's `cd` has already checked it, so an absolute one is taken as it is: wasi-libc's
     * chdir would ask the host to stat it again, a round trip on every command. Every path
     * is still resolved (and confined) by the host when it is used. */
    const char *cwd = getenv("GK_CWD");
    if (cwd != NULL && cwd[0] == '/') {
        __wasilibc_cwd = (char *)cwd;
    } else if (cwd != NULL && *cwd != '\0' && chdir(cwd) != 0) {
        box_perror("box", cwd);
        return 125; /* WASI exit codes stop at 125; 126+ would trap */
    }
    const char *name = argc > 0 ? argv[0] : "";
    for (size_t i = 0; i < sizeof entries / sizeof entries[0]; i++) {
        if (strcmp(entries[i].name, name) == 0) {
            if (entries[i].fn == NULL) {
                fprintf(stderr, "%s: command not found (not in the sandbox)\n", name);
                return 127;
            }
            int status = entries[i].fn(argc, argv);
            if (fflush(stdout) != 0 && status == 0) {
                box_perror(name, "write error");
                return 1;
            }
            return status;
        }
    }
    fprintf(stderr, "%s: command not found (not in the sandbox)\n", name);
    return 127;
}
