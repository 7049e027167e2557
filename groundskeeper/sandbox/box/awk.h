/* awk's program, parsed: tokens (awk_lex.c), the syntax tree (awk_parse.c), and the values,
 * variables and arrays the interpreter keeps (awk_run.c, with the string functions and printf
 * in awk_builtin.c). cmd_awk.c reads the options and runs the program.
 * Nothing here writes files or runs programs: output redirection, pipes, system() and
 * getline from a named file are refused when the program is parsed.
 */
#ifndef AWK_H
#define AWK_H

#include <regex.h>
#include <stddef.h>

/* ---- tokens (awk_lex.c) ---- */

enum awk_tok {
    T_EOF, T_NEWLINE, T_LBRACE, T_RBRACE, T_LPAREN, T_RPAREN, T_LBRACKET, T_RBRACKET,
    T_SEMI, T_COMMA, T_PLUS, T_MINUS, T_STAR, T_SLASH, T_PERCENT, T_POW, T_NOT, T_GT,
    T_LT, T_PIPE, T_QUESTION, T_COLON, T_TILDE, T_DOLLAR, T_ASSIGN, T_ADD_ASSIGN,
    T_SUB_ASSIGN, T_MUL_ASSIGN, T_DIV_ASSIGN, T_MOD_ASSIGN, T_POW_ASSIGN, T_EQ, T_NE,
    T_LE, T_GE, T_MATCH, T_NOMATCH, T_AND, T_OR, T_INCR, T_DECR, T_APPEND,
    T_NUMBER, T_STRING, T_ERE, T_NAME, T_FUNC_NAME, T_BUILTIN,
    /* keywords */
    T_BEGIN, T_END, T_FUNCTION, T_IF, T_ELSE, T_WHILE, T_FOR, T_DO, T_BREAK, T_CONTINUE,
    T_NEXT, T_NEXTFILE, T_EXIT, T_RETURN, T_DELETE, T_PRINT, T_PRINTF, T_GETLINE, T_IN
};

/* The built-in functions, in the order of the names table in awk_lex.c. */
enum awk_builtin {
    B_LENGTH, B_SUBSTR, B_INDEX, B_SPLIT, B_SUB, B_GSUB, B_MATCH, B_SPRINTF, B_TOLOWER,
    B_TOUPPER, B_INT, B_SQRT, B_EXP, B_LOG, B_SIN, B_COS, B_ATAN2, B_RAND, B_SRAND,
    B_CLOSE, B_FFLUSH, B_SYSTEM
};

struct awk_token {
    enum awk_tok kind;
    int line;
    int builtin;  /* T_BUILTIN: an enum awk_builtin */
    double num;   /* T_NUMBER */
    char *text;   /* T_STRING (escapes done), T_ERE (as written), T_NAME, T_FUNC_NAME */
};

/* Tokenize SRC (the whole program). Returns the token array ending in T_EOF, or NULL after
 * printing "awk: ..." for a lexical error. */
struct awk_token *awk_lex(const char *src, size_t *count);
/* The escapes of an awk string (\n \t \" \\ \/ \ddd ...) turned into their characters, in
 * new memory: used for string literals, -v values and command-line assignments. */
char *awk_unescape(const char *s, size_t len);

/* ---- syntax tree (awk_parse.c) ---- */

enum awk_node_kind {
    /* expressions */
    N_NUM, N_STR, N_ERE, N_VAR, N_LOCAL, N_FIELD, N_INDEX, N_ASSIGN, N_COND, N_AND, N_OR,
    N_NOT, N_NEG, N_PLUS, N_BINARY, N_CMP, N_MATCH, N_CONCAT, N_IN, N_PRE_INCR, N_PRE_DECR,
    N_POST_INCR, N_POST_DECR, N_CALL, N_BUILTIN, N_GETLINE, N_GROUP,
    /* statements */
    S_EXPR, S_PRINT, S_PRINTF, S_IF, S_WHILE, S_DO, S_FOR, S_FOR_IN, S_BLOCK, S_BREAK,
    S_CONTINUE, S_NEXT, S_NEXTFILE, S_EXIT, S_RETURN, S_DELETE, S_DELETE_ALL
};

struct awk_node {
    enum awk_node_kind kind;
    int op;                    /* the operator's token (N_BINARY, N_CMP, N_ASSIGN, N_MATCH) */
    int index;                 /* N_VAR/N_LOCAL: slot; N_INDEX/N_IN: array slot (local if
                                * is_local); N_CALL: function; N_BUILTIN: enum awk_builtin */
    int is_local;
    int nargs;
    int line;
    int height;                /* of the operator chain below (binary operators only) */
    double num;                /* N_NUM */
    char *str;                 /* N_STR: the string; N_ERE: the regex source */
    regex_t *re;               /* N_ERE: compiled */
    struct awk_node *a, *b, *c, *d; /* operands / condition, body, init, step */
    struct awk_node *args;     /* lists: arguments, subscripts, print items (via next) */
    struct awk_node *next;     /* the next in a list */
};

struct awk_func {
    char *name;
    int nparams;
    int defined;
    int line;                  /* where first called, for "function never defined" */
    unsigned char *param_is_array; /* nparams flags: the body uses that parameter as array */
    struct awk_node *body;
};

enum awk_item_kind { ITEM_BEGIN, ITEM_END, ITEM_MAIN };

struct awk_item {
    enum awk_item_kind kind;
    struct awk_node *pattern, *pattern_end; /* pattern_end: a range pattern's second half */
    struct awk_node *action;                /* NULL: print $0 */
    int in_range;
    struct awk_item *next;
};

/* The global variables the interpreter knows by slot (awk_parse.c enters them first). */
enum awk_special {
    V_NF, V_NR, V_FNR, V_FS, V_OFS, V_ORS, V_RS, V_FILENAME, V_SUBSEP, V_RSTART, V_RLENGTH,
    V_CONVFMT, V_OFMT, V_ENVIRON, V_ARGC, V_ARGV, V_SPECIAL_COUNT
};

struct awk_program {
    struct awk_item *items;
    char **globals;        /* names by slot */
    int nglobals;
    struct awk_func *funcs;
    int nfuncs;
    int has_main, has_end; /* whether input must be read */
};

/* Parse the program text. Returns 0, or 2 after "awk: ..." naming the line; a syntax error
 * or a feature refused in the sandbox exits with status 2 from inside the parser (nothing
 * has run or been written by then). */
int awk_parse(const char *src, struct awk_program *prog);
/* The slot of global NAME in PROG, entered if new (also used for -v and operands). */
int awk_global(struct awk_program *prog, const char *name);

/* ---- values (awk_run.c) ---- */

/* A value: a number, a string, or a string from input that looks like a number ("strnum",
 * compared as a number). Strings are owned by the cell. */
enum awk_cell_type { C_UNSET, C_NUM, C_STR, C_STRNUM };

struct awk_cell {
    enum awk_cell_type type;
    double num;
    char *str;
};

struct awk_elem {
    char *key;
    unsigned hash;
    struct awk_cell val;
    struct awk_elem *chain;       /* the next in the same bucket */
    struct awk_elem *prev, *next; /* insertion order, for `for (k in a)` */
};

struct awk_array {
    struct awk_elem **buckets;
    size_t nbuckets, count;
    struct awk_elem *first, *last;
};

/* Run PROG over the operands ARGS[0..NARGS) (files, "-", or NAME=VALUE assignments) after
 * the -v assignments ASSIGNS[0..NASSIGNS). Returns awk's exit status. */
int awk_run(struct awk_program *prog, char **assigns, int nassigns, char **args, int nargs);

/* ---- helpers shared by awk_run.c and awk_builtin.c ---- */

struct awk_buf {
    char *data;
    size_t len, cap;
};

void awk_buf_add(struct awk_buf *b, const char *p, size_t n);
void awk_buf_addc(struct awk_buf *b, char c);
void awk_buf_adds(struct awk_buf *b, const char *s);

/* Out of memory or an error awk cannot go on from: "awk: ..." and exit 2. */
void awk_fatal(const char *fmt, ...) __attribute__((format(printf, 1, 2), noreturn));
void *awk_alloc(size_t n);
char *awk_strdup(const char *s);
char *awk_strndup(const char *s, size_t n);

double awk_to_num(const struct awk_cell *c);
/* The string of C, formatted with CONVFMT when it is a number; in BUF (64 bytes) or C's own. */
const char *awk_to_str(const struct awk_cell *c, char *buf);
/* The same for output (print): OFMT instead of CONVFMT. */
const char *awk_to_out_str(const struct awk_cell *c, char *buf);
void awk_format_num(double d, const char *fmt, char *buf);
/* Whether S looks like a number (blanks around allowed): the strnum test; *OUT gets it. */
int awk_looks_numeric(const char *s, double *out);
/* The leading number in S, as awk converts a string to a number (0 when none). */
double awk_str_to_num(const char *s);

struct awk_cell awk_num_cell(double d);
struct awk_cell awk_str_cell(char *owned);
struct awk_cell awk_strnum_cell(char *owned);
void awk_cell_free(struct awk_cell *c);

/* A compiled regex for the string RE (an awk ERE), cached. */
regex_t *awk_regex(const char *re);
/* Compile an awk ERE (escapes \/ \n \t ... done); NULL after a message when it is invalid. */
regex_t *awk_compile_ere(const char *src, int line);

/* awk_builtin.c: sprintf with awk's conversions over already evaluated arguments. */
void awk_sprintf(struct awk_buf *out, const char *fmt, struct awk_cell *args, int nargs);
/* The substitution of sub/gsub in TARGET; returns the count, *OUT the new string (when >0). */
int awk_substitute(const regex_t *re, const char *repl, const char *target, int global,
                   char **out);

#endif
