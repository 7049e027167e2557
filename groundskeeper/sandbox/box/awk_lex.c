/* awk's tokens: the whole program text turned into an array before parsing, so the parser can
 * look ahead freely. A `/` starts a regex unless the token before it ends an operand (then it
 * divides). Newlines are tokens; a backslash before a newline joins the lines.
 */
#include <ctype.h>
#include <stdlib.h>
#include <string.h>

#include "awk.h"
#include "box.h"

static const struct {
    const char *name;
    enum awk_tok kind;
} keywords[] = {
    {"BEGIN", T_BEGIN},   {"END", T_END},           {"function", T_FUNCTION},
    {"func", T_FUNCTION}, {"if", T_IF},             {"else", T_ELSE},
    {"while", T_WHILE},   {"for", T_FOR},           {"do", T_DO},
    {"break", T_BREAK},   {"continue", T_CONTINUE}, {"next", T_NEXT},
    {"nextfile", T_NEXTFILE}, {"exit", T_EXIT},     {"return", T_RETURN},
    {"delete", T_DELETE}, {"print", T_PRINT},       {"printf", T_PRINTF},
    {"getline", T_GETLINE}, {"in", T_IN},
};

/* In the order of enum awk_builtin. */
static const char *const builtins[] = {
    "length", "substr", "index", "split", "sub", "gsub", "match", "sprintf", "tolower",
    "toupper", "int", "sqrt", "exp", "log", "sin", "cos", "atan2", "rand", "srand",
    "close", "fflush", "system",
};

char *awk_unescape(const char *s, size_t len) {
    char *out = awk_alloc(len + 1), *o = out;
    for (size_t i = 0; i < len; i++) {
        if (s[i] != '\\' || i + 1 >= len) {
            *o++ = s[i];
            continue;
        }
        char c = s[++i];
        switch (c) {
        case 'n': *o++ = '\n'; break;
        case 't': *o++ = '\t'; break;
        case 'r': *o++ = '\r'; break;
        case 'a': *o++ = '\a'; break;
        case 'b': *o++ = '\b'; break;
        case 'f': *o++ = '\f'; break;
        case 'v': *o++ = '\v'; break;
        case '"': *o++ = '"'; break;
        case '/': *o++ = '/'; break;
        case '\\': *o++ = '\\'; break;
        default:
            if (c >= '0' && c <= '7') {
                int v = 0, n = 0;
                while (n < 3 && i < len && s[i] >= '0' && s[i] <= '7') {
                    v = v * 8 + (s[i++] - '0');
                    n++;
                }
                i--;
                *o++ = (char)v;
            } else {
                /* kept as written, so "\." still reaches a dynamic regex escaped */
                *o++ = '\\';
                *o++ = c;
            }
        }
    }
    *o = '\0';
    return out;
}

/* Whether a `/` after a token of this kind divides (the token ends an operand). */
static int ends_operand(enum awk_tok kind) {
    switch (kind) {
    case T_NAME: case T_NUMBER: case T_STRING: case T_ERE: case T_RPAREN: case T_RBRACKET:
    case T_DOLLAR: case T_INCR: case T_DECR: case T_BUILTIN:
        return 1;
    default:
        return 0;
    }
}

struct lexer {
    const char *src;
    size_t pos;
    int line;
    struct awk_token *toks;
    size_t n, cap;
};

static struct awk_token *push(struct lexer *lx, enum awk_tok kind) {
    if (lx->n == lx->cap) {
        lx->cap = lx->cap ? lx->cap * 2 : 64;
        lx->toks = realloc(lx->toks, lx->cap * sizeof *lx->toks);
        if (lx->toks == NULL) awk_fatal("out of memory");
    }
    struct awk_token *t = &lx->toks[lx->n++];
    memset(t, 0, sizeof *t);
    t->kind = kind;
    t->line = lx->line;
    return t;
}

static int lex_error(struct lexer *lx, const char *what) {
    box_err("awk", "syntax error at source line %d: %s", lx->line, what);
    return 0;
}

static int lex_string(struct lexer *lx) {
    const char *s = lx->src;
    size_t start = ++lx->pos;
    while (s[lx->pos] != '"') {
        if (s[lx->pos] == '\0' || s[lx->pos] == '\n') return lex_error(lx, "unterminated string");
        if (s[lx->pos] == '\\' && s[lx->pos + 1] != '\0') {
            if (s[lx->pos + 1] == '\n') lx->line++;
            lx->pos++;
        }
        lx->pos++;
    }
    push(lx, T_STRING)->text = awk_unescape(s + start, lx->pos - start);
    lx->pos++;
    return 1;
}

static int lex_regex(struct lexer *lx) {
    const char *s = lx->src;
    size_t start = ++lx->pos;
    int bracket = 0;
    while (bracket || s[lx->pos] != '/') {
        char c = s[lx->pos];
        if (c == '\0' || c == '\n') return lex_error(lx, "unterminated regular expression");
        if (c == '\\' && s[lx->pos + 1] != '\0' && s[lx->pos + 1] != '\n') {
            lx->pos += 2;
            continue;
        }
        if (c == '[' && !bracket) {
            bracket = 1;
            /* a ] first in the bracket (after an optional ^) is a member, not its end */
            if (s[lx->pos + 1] == '^') lx->pos++;
            if (s[lx->pos + 1] == ']') lx->pos++;
        } else if (c == '[' && s[lx->pos + 1] == ':') {
            const char *close = strstr(s + lx->pos + 2, ":]");
            if (close != NULL) lx->pos = (size_t)(close - s) + 1;
        } else if (c == ']') {
            bracket = 0;
        }
        lx->pos++;
    }
    push(lx, T_ERE)->text = awk_strndup(s + start, lx->pos - start);
    lx->pos++;
    return 1;
}

static void lex_number(struct lexer *lx) {
    const char *s = lx->src + lx->pos;
    size_t n = 0;
    while (isdigit((unsigned char)s[n])) n++;
    if (s[n] == '.') {
        n++;
        while (isdigit((unsigned char)s[n])) n++;
    }
    if (s[n] == 'e' || s[n] == 'E') {
        size_t m = n + 1;
        if (s[m] == '+' || s[m] == '-') m++;
        if (isdigit((unsigned char)s[m])) {
            while (isdigit((unsigned char)s[m])) m++;
            n = m;
        }
    }
    char *text = awk_strndup(s, n);
    push(lx, T_NUMBER)->num = strtod(text, NULL);
    free(text);
    lx->pos += n;
}

static void lex_word(struct lexer *lx) {
    const char *s = lx->src + lx->pos;
    size_t n = 0;
    while (isalnum((unsigned char)s[n]) || s[n] == '_') n++;
    lx->pos += n;
    for (size_t i = 0; i < sizeof keywords / sizeof keywords[0]; i++) {
        if (strlen(keywords[i].name) == n && strncmp(keywords[i].name, s, n) == 0) {
            push(lx, keywords[i].kind);
            return;
        }
    }
    for (size_t i = 0; i < sizeof builtins / sizeof builtins[0]; i++) {
        if (strlen(builtins[i]) == n && strncmp(builtins[i], s, n) == 0) {
            push(lx, T_BUILTIN)->builtin = (int)i;
            return;
        }
    }
    /* a user function call has its `(` right after the name */
    push(lx, s[n] == '(' ? T_FUNC_NAME : T_NAME)->text = awk_strndup(s, n);
}

/* Two-character operators first, then one-character ones. */
static const struct {
    const char *text;
    enum awk_tok kind;
} operators[] = {
    {"+=", T_ADD_ASSIGN}, {"-=", T_SUB_ASSIGN}, {"*=", T_MUL_ASSIGN}, {"/=", T_DIV_ASSIGN},
    {"%=", T_MOD_ASSIGN}, {"^=", T_POW_ASSIGN}, {"**", T_POW},        {"==", T_EQ},
    {"!=", T_NE},         {"<=", T_LE},         {">=", T_GE},         {"!~", T_NOMATCH},
    {"&&", T_AND},        {"||", T_OR},         {"++", T_INCR},       {"--", T_DECR},
    {">>", T_APPEND},     {"{", T_LBRACE},      {"}", T_RBRACE},      {"(", T_LPAREN},
    {")", T_RPAREN},      {"[", T_LBRACKET},    {"]", T_RBRACKET},    {";", T_SEMI},
    {",", T_COMMA},       {"+", T_PLUS},        {"-", T_MINUS},       {"*", T_STAR},
    {"/", T_SLASH},       {"%", T_PERCENT},     {"^", T_POW},         {"!", T_NOT},
    {">", T_GT},          {"<", T_LT},          {"|", T_PIPE},        {"?", T_QUESTION},
    {":", T_COLON},       {"~", T_TILDE},       {"$", T_DOLLAR},      {"=", T_ASSIGN},
};

struct awk_token *awk_lex(const char *src, size_t *count) {
    struct lexer lx = {src, 0, 1, NULL, 0, 0};
    for (;;) {
        char c = src[lx.pos];
        if (c == '\0') break;
        if (c == ' ' || c == '\t' || c == '\r') {
            lx.pos++;
        } else if (c == '\\' && src[lx.pos + 1] == '\n') {
            lx.pos += 2;
            lx.line++;
        } else if (c == '\\' && src[lx.pos + 1] == '\r' && src[lx.pos + 2] == '\n') {
            lx.pos += 3;
            lx.line++;
        } else if (c == '#') {
            while (src[lx.pos] != '\0' && src[lx.pos] != '\n') lx.pos++;
        } else if (c == '\n') {
            push(&lx, T_NEWLINE);
            lx.pos++;
            lx.line++;
        } else if (c == '"') {
            if (!lex_string(&lx)) goto fail;
        } else if (c == '/' && !(lx.n > 0 && ends_operand(lx.toks[lx.n - 1].kind))) {
            /* after an operator even `/=` starts a regex */
            if (!lex_regex(&lx)) goto fail;
        } else if (isdigit((unsigned char)c) ||
                   (c == '.' && isdigit((unsigned char)src[lx.pos + 1]))) {
            lex_number(&lx);
        } else if (isalpha((unsigned char)c) || c == '_') {
            lex_word(&lx);
        } else {
            size_t i = 0, nops = sizeof operators / sizeof operators[0];
            for (; i < nops; i++) {
                size_t len = strlen(operators[i].text);
                if (strncmp(src + lx.pos, operators[i].text, len) == 0) {
                    push(&lx, operators[i].kind);
                    lx.pos += len;
                    break;
                }
            }
            if (i == nops) {
                char what[40];
                snprintf(what, sizeof what, "unexpected character '%c'", c);
                lex_error(&lx, what);
                goto fail;
            }
        }
    }
    push(&lx, T_EOF);
    *count = lx.n;
    return lx.toks;
fail:
    free(lx.toks);
    return NULL;
}
