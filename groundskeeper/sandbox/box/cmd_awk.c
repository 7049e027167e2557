/* awk: POSIX awk (patterns and actions, BEGIN/END, ranges, fields, arrays, user functions,
 * printf, the string and arithmetic functions, getline from the input). Options: -F FS,
 * -v NAME=VALUE (repeatable), -f PROGFILE (repeatable), --. Operands are files, "-" for
 * stdin, or NAME=VALUE assignments. Anything else is refused with status 2, as are the parts
 * of awk that write files or run programs (see awk_parse.c). The language itself lives in
 * awk_lex.c, awk_parse.c, awk_run.c and awk_builtin.c.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "awk.h"
#include "box.h"

static int usage_error(const char *message) {
    box_err("awk", "%s", message);
    fprintf(stderr, "usage: awk [-F FS] [-v NAME=VALUE]... ['PROGRAM' | -f FILE]... [FILE]...\n");
    return 2;
}

/* Append the text of program file PATH to PROGRAM. */
static int read_program_file(const char *path, struct awk_buf *program) {
    FILE *in = box_open_readable(path);
    if (in == NULL) {
        box_err("awk", "couldn't open program file %s (%s)", path, strerror(errno));
        return 0;
    }
    char *data = NULL;
    size_t len = 0, cap = 0;
    int ok = box_read_all(in, &data, &len, &cap);
    box_close_input(in);
    if (!ok) {
        box_err("awk", "%s: %s", path, strerror(errno));
        free(data);
        return 0;
    }
    awk_buf_add(program, data, len);
    awk_buf_addc(program, '\n');
    free(data);
    return 1;
}

static int valid_assignment(const char *arg) {
    const char *eq = strchr(arg, '=');
    if (eq == NULL || eq == arg || (arg[0] >= '0' && arg[0] <= '9')) return 0;
    for (const char *p = arg; p < eq; p++)
        if (!(*p == '_' || (*p >= 'a' && *p <= 'z') || (*p >= 'A' && *p <= 'Z') ||
              (*p >= '0' && *p <= '9')))
            return 0;
    return 1;
}

int cmd_awk(int argc, char **argv) {
    struct awk_buf program = {0};
    int have_file_program = 0;
    char **assigns = awk_alloc((size_t)argc * sizeof *assigns);
    int nassigns = 0;
    const char *fs = NULL;
    int i = 1;
    for (; i < argc; i++) {
        const char *arg = argv[i];
        if (strcmp(arg, "--") == 0) {
            i++;
            break;
        }
        if (arg[0] != '-' || arg[1] == '\0') break;
        char opt = arg[1];
        if (opt != 'F' && opt != 'v' && opt != 'f') return box_usage("awk", arg);
        const char *value = arg[2] ? arg + 2 : NULL;
        if (value == NULL) {
            if (i + 1 >= argc) {
                char what[48];
                snprintf(what, sizeof what, "option requires an argument -- '%c'", opt);
                return usage_error(what);
            }
            value = argv[++i];
        }
        if (opt == 'F') {
            fs = value;
        } else if (opt == 'v') {
            if (!valid_assignment(value)) {
                box_err("awk", "improper assignment: -v %s", value);
                return 2;
            }
            assigns[nassigns++] = (char *)value;
        } else {
            if (!read_program_file(value, &program)) return 2;
            have_file_program = 1;
        }
    }
    if (!have_file_program) {
        if (i >= argc) return usage_error("no program given");
        awk_buf_adds(&program, argv[i++]);
    }
    if (fs != NULL) {
        /* -F is FS=VALUE before any -v, escapes (-F '\t') done like theirs */
        size_t len = strlen(fs) + 4;
        char *a = awk_alloc(len);
        snprintf(a, len, "FS=%s", fs);
        memmove(assigns + 1, assigns, (size_t)nassigns * sizeof *assigns);
        assigns[0] = a;
        nassigns++;
    }
    struct awk_program prog;
    int status = awk_parse(program.data ? program.data : "", &prog);
    if (status != 0) return status;
    return awk_run(&prog, assigns, nassigns, argv + i, argc - i);
}
