/* box: the sandbox's commands, one multi-call WASI binary (argv[0] selects the command).
 * Every command is `int cmd_NAME(int argc, char **argv)` in its own cmd_NAME.c and returns
 * its exit status. What several commands need is declared here, once: messages and option
 * errors (main.c), GNU's regex dialect (regex_compat.c), paths and directory listings
 * (paths.c), file operands and inputs (fileio.c). Conventions shared by all commands:
 *   - an unsupported option is an error: box_usage(argv[0], "-Q") prints
 *     "NAME: unsupported option -Q (not in the sandbox)" and the command returns 2
 *     (box_bad_option does so for whatever getopt_long refused);
 *   - diagnostics go to stderr as "NAME: message";
 *   - paths are relative to the working directory; the host preopens only the workdir,
 *     so absolute paths and `..` past the workdir fail inside WASI itself.
 */
#ifndef BOX_H
#define BOX_H

#include <regex.h>
#include <stddef.h>
#include <stdio.h>

#define BOX_COMMANDS(X) \
    X(test) X(true) X(false) X(echo) X(printf) X(cat) X(head) X(tail) X(wc) \
    X(grep) X(sed) X(ls) X(sort) X(uniq) X(cut) X(tr) X(cmp) X(diff) X(sha256sum) \
    X(mkdir) X(cp) X(mv) X(rm) X(touch) X(seq) X(sleep) X(basename) X(dirname) \
    X(pwd) X(env) X(expr) X(find) \
    X(tee) X(stat) X(date) X(paste) X(comm) X(nl) X(rev) X(base64) X(md5sum) X(sha1sum) \
    X(sha512sum) X(realpath) X(readlink) X(du) \
    X(awk) \
    X(jq)

#define BOX_DECLARE(name) int cmd_##name(int argc, char **argv) __attribute__((weak));
BOX_COMMANDS(BOX_DECLARE)
#undef BOX_DECLARE

/* host_rematch.c: `[[ … =~ … ]]` for the host shell, under the name "[[=~". */
int host_rematch(int argc, char **argv);

/* main.c: messages and option errors. */

/* Print "NAME: unsupported option OPT (not in the sandbox)" and return 2. */
int box_usage(const char *name, const char *option);
/* After getopt_long returned '?' (opterr = 0): box_usage for the option it refused, a short
 * one as "-Q", a long one as written. */
int box_bad_option(const char *name, char **argv);
/* After getopt_long returned ':' (optstring starts with ':'): print GNU's "NAME: option
 * requires an argument -- 'Q'" and return STATUS (it differs between commands). */
int box_missing_argument(const char *name, int status);
/* P itself, or (P is NULL) "NAME: out of memory" and exit with STATUS: for allocations a
 * command cannot go on without. */
void *box_need(const char *name, void *p, int status);
/* Print "NAME: message" to stderr (printf-style). */
void box_err(const char *name, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
/* Print "NAME: PATH: strerror(errno)" to stderr. */
void box_perror(const char *name, const char *path);

/* regex_compat.c */

/* regcomp in GNU's dialect: an ERE (extended) or a BRE, case-folded if icase; an ERE with
 * back-references, which musl's ERE lacks, is compiled as the equivalent BRE. Returns
 * regcomp's code (regerror explains a nonzero one). */
int box_regcomp(regex_t *re, const char *pattern, int extended, int icase);

/* paths.c */

/* The last component of PATH, trailing slashes aside ("a/b/" gives "b" with *len 1); *len is
 * 0 for "" and for a path of slashes only. Points into PATH, not NUL-terminated there. */
const char *box_last_component(const char *path, size_t *len);
/* "DIR/NAME" in new memory, with no slash doubled after DIR ("" gives "/NAME", as GNU's
 * tools print it); NULL when out of memory. */
char *box_path_join(const char *dir, const char *name);
/* DIR joined with the last component of PATH: where `cp`/`mv` put PATH inside DIR. */
char *box_path_into(const char *dir, const char *path);
/* The names in directory PATH except . and .., in directory order, all read before the
 * caller acts on them (removing or adding entries while reading would shift WASI's readdir
 * cookies and skip some). NULL with errno set when PATH cannot be opened; out of memory,
 * the names read so far. Free with box_free_names. */
char **box_dir_names(const char *path, size_t *count);
void box_free_names(char **names, size_t count);

/* How cp and mv read their operands OPS[0..*N): SRC DST, or SRC... DIR where DIR comes from
 * -t (*TARGET already set), else is the last operand when that is a directory (-T, i.e.
 * NO_TARGET_DIR, rules that out). BOX_INTO_DIR sets *TARGET and leaves *N the number of
 * sources; BOX_ONE_TO_ONE means OPS[0] -> OPS[1]; BOX_OPERAND_ERROR comes after GNU's
 * message (missing or extra operand, target not a directory): the command returns 1. */
enum { BOX_OPERAND_ERROR, BOX_ONE_TO_ONE, BOX_INTO_DIR };
int box_copy_operands(const char *name, char **ops, int *n, const char **target,
                      int no_target_dir);

/* fileio.c */

/* After getopt: the operands from optind on, or (none given) the one operand ONLY ("-" for
 * stdin, "." for the working directory). *COUNT is how many. Call once per command run: ONLY
 * is kept in a static slot. */
char **box_operands(int argc, char **argv, char *only, int *count);
/* Open an input operand for reading: "-" is stdin. NULL with errno set when it cannot be. */
FILE *box_open_input(const char *path);
/* Whether an opened input is a directory; when it is, errno is EISDIR for the message. */
int box_input_is_dir(FILE *in);
/* box_open_input that refuses a directory as well (NULL, errno EISDIR). */
FILE *box_open_readable(const char *path);
/* Append all of IN to the buffer *DATA (*LEN bytes used of *CAP, grown as needed; one byte
 * always left spare). 0 with errno set on a read error or when out of memory. */
int box_read_all(FILE *in, char **data, size_t *len, size_t *cap);
/* Close an input from box_open_input/box_open_readable, errno kept for a message after it;
 * stdin stays open, its end-of-file cleared. */
void box_close_input(FILE *in);

#endif
