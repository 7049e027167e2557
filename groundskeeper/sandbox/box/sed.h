/* sed's script, parsed: the commands with their addresses, and the parser that builds them
 * (sed_script.c). cmd_sed.c runs them over the input.
 */
#ifndef SED_H
#define SED_H

#include <regex.h>
#include <stddef.h>
#include <stdio.h>

enum addr_kind { ADDR_NONE, ADDR_LINE, ADDR_LAST, ADDR_RE, ADDR_STEP, ADDR_PLUS };

struct addr {
    enum addr_kind kind;
    unsigned long line, step; /* ADDR_LINE: line; ADDR_STEP: first~step; ADDR_PLUS: +step */
    regex_t *re;              /* ADDR_RE: NULL means "the last regex used" */
};

struct part {
    int group; /* -1: literal text; 0..9: that group of the match */
    char *text;
    size_t len;
};

struct cmd {
    struct addr a1, a2;
    int negate;
    char name;
    int active;             /* inside a range */
    unsigned long end_line; /* for a1,+N ranges */
    regex_t *re;            /* s: NULL means the last regex used */
    struct part *parts;
    size_t nparts;
    int global, print;
    unsigned long nth;
    int exit_code;     /* q/Q */
    size_t jump;       /* {: index of the matching } */
    unsigned char *map; /* y: the 256-byte translation */
};

struct buf {
    char *data;
    size_t len, cap;
};

struct sed {
    struct cmd *cmds;
    size_t ncmds;
    int quiet, extended;
    const char *script;   /* for error positions */
    const regex_t *last_re;
    int pending_newline;  /* the last output lacked its newline (input ended without one) */
    FILE *out;            /* stdout, or with -i the file's replacement */
    int quit;             /* a q or Q ended the run: no further input is read */
};

/* Append n bytes to b, keeping it NUL-terminated; 0 when out of memory. */
int sed_buf_add(struct buf *b, const char *p, size_t n);
/* Parse SCRIPT into s->cmds. Returns 0, or the exit status after the message: 1 for a
 * script error (GNU's "-e expression #1, char N: ..."), 2 for a GNU feature refused. */
int sed_parse_script(struct sed *s, const char *script);

#endif
