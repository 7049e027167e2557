/* jq: the command line of jq 1.7 over our own implementation of its core language (syntax in
 * jq_parse.c, evaluation in jq_eval.c, JSON in jq_json.c). Exit statuses as jq's: 2 usage or
 * unreadable input, 3 compile error, 5 runtime error, and with -e 1 when the last output was
 * false or null and 4 when there was none.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "box.h"
#include "jq.h"

static const char help[] =
    "Usage: jq [OPTIONS] FILTER [FILES...]\n"
    "The sandbox's jq: jq 1.7's core language in box.wasm.\n"
    "Options: -n null input, -r raw strings, -j raw without newlines, -c compact, -s slurp,\n"
    "  -e exit status from the last output (1 false/null, 4 none), -R raw input lines,\n"
    "  -S sorted keys, -a ASCII output, --tab, --indent N, -M (no colour anyway),\n"
    "  --arg NAME VALUE, --argjson NAME JSON, --slurpfile NAME FILE, --rawfile NAME FILE,\n"
    "  -f FILE (filter from a file).\n"
    "Language: paths, pipes, `,`, literals, construction, arithmetic, comparisons, and/or/not,\n"
    "  //, if/elif/else, try/catch, ?, reduce, foreach, label/break, `as` bindings with\n"
    "  destructuring, string interpolation and @text @json @csv @tsv @html @uri @sh @base64\n"
    "  @base64d, assignments (= |= += -= *= /= %= //=) and the common builtins.\n"
    "Not supported: def (write the filter inline), modules, ?//, SQL-style, date and stream\n"
    "  builtins, options --stream, --seq, --args and colour (-C). Number literals are read as\n"
    "  doubles (jq 1.7 keeps a literal's digits: `1.000 | tostring` is \"1\" here).\n"
    "Limits: input and values nested deeper than 2000 levels, and recursion deeper than the\n"
    "  sandbox's stack, end in an error (exit 2 for input, 5 for the program).\n"
    "Regular expressions (test match capture scan splits split/2 sub gsub) are POSIX ERE with\n"
    "  \\d \\w \\s \\D \\W \\S, (?:...) and (?<name>...) translated; PCRE lookaround, lazy or\n"
    "  possessive quantifiers, \\b and inline flags are refused with an error, and alternation\n"
    "  picks the longest match where PCRE picks the first.\n";

struct options {
    int null_input, raw, join, slurp, exit_status, raw_input, sort_keys, ascii, tab;
    int indent, compact;
};

struct out_state {
    struct options *o;
    int outputs;
    int last_truthy;
    jv buf;
};

static int write_output(void *ctx, jv v) {
    struct out_state *s = ctx;
    s->outputs++;
    s->last_truthy = v.kind != JV_NULL && v.kind != JV_FALSE;
    struct jq_dump how = {s->o->compact ? 0 : s->o->indent, s->o->tab && !s->o->compact,
                          s->o->sort_keys, s->o->ascii};
    jv text = jv_string_n(NULL, 0);
    if ((s->o->raw || s->o->join) && v.kind == JV_STRING) {
        text = jv_string_append(text, jv_str(v), jv_strlen(v));
    } else {
        text = jv_dump(text, v, &how, 0);
    }
    if (!s->o->join) text = jv_string_append(text, "\n", 1);
    fwrite(jv_str(text), 1, jv_strlen(text), stdout);
    jv_free(text);
    jv_free(v);
    return ferror(stdout) ? 1 : 0;
}

/* The inputs: the operand files (or stdin) one after another, read in chunks and split into
 * JSON texts (or lines, with -R) as they come, so a long stream of small values needs memory
 * for one value at a time. A value cut by the end of a chunk is parsed again once more has been
 * read; each refill at least doubles what is unread, so that costs linear time. */
struct inputs {
    char **files;
    int nfiles, next_file;
    FILE *f; /* the open input, NULL between files */
    char *buf;
    size_t start, len, cap; /* unread bytes are buf[start..len) */
    int eof;
    size_t line;  /* newlines before buf+start */
    int mid_line; /* the last value ended before its line did */
    int raw;
    const char *name;
    char where[300];
    int failed; /* an input could not be read or parsed: exit 2 at the end */
};

static int open_next(struct inputs *in) {
    while (in->next_file < in->nfiles) {
        const char *path = in->files[in->next_file++];
        FILE *f = box_open_input(path ? path : "-");
        if (f == NULL || box_input_is_dir(f)) {
            fprintf(stderr, "jq: error: Could not open %s: %s\n", path, strerror(errno));
            if (f) box_close_input(f);
            in->failed = 1;
            continue;
        }
        in->f = f;
        in->start = in->len = 0;
        in->eof = 0;
        in->line = 0;
        in->mid_line = 0;
        in->name = path && strcmp(path, "-") != 0 ? path : "<stdin>";
        return 1;
    }
    return 0;
}

static void close_current(struct inputs *in) {
    box_close_input(in->f);
    in->f = NULL;
}

/* Read more of the current input: 0 at its end (or on a read error, reported). */
static int fill(struct inputs *in) {
    if (in->eof) return 0;
    if (in->start > 0) {
        memmove(in->buf, in->buf + in->start, in->len - in->start);
        in->len -= in->start;
        in->start = 0;
    }
    size_t want = in->len < ((size_t)1 << 20) ? (size_t)1 << 20 : in->len;
    if (in->cap - in->len < want + 1) {
        size_t ncap = in->len + want + 1;
        char *grown = realloc(in->buf, ncap);
        if (grown == NULL) jq_oom();
        in->buf = grown;
        in->cap = ncap;
    }
    size_t got = fread(in->buf + in->len, 1, in->cap - in->len - 1, in->f);
    in->len += got;
    in->buf[in->len] = '\0';
    if (got == 0) {
        if (ferror(in->f)) {
            fprintf(stderr, "jq: error: Could not read %s: %s\n", in->name, strerror(errno));
            in->failed = 1;
        }
        in->eof = 1;
        return 0;
    }
    return 1;
}

/* 1 and *out, 0 at the end, -1 after a parse error (reported). */
static int next_input(void *ctx, jv *out) {
    struct inputs *in = ctx;
    for (;;) {
        if (in->f == NULL && !open_next(in)) return 0;
        char *p = in->buf ? in->buf + in->start : NULL, *end = in->buf ? in->buf + in->len : NULL;
        if (in->raw) {
            char *nl = p ? memchr(p, '\n', (size_t)(end - p)) : NULL;
            if (nl == NULL && !in->eof) {
                fill(in);
                continue;
            }
            if (p == end) {
                close_current(in);
                continue;
            }
            char *stop = nl ? nl : end;
            *out = jv_string_sanitized(p, (size_t)(stop - p));
            in->start = (size_t)((nl ? nl + 1 : end) - in->buf);
            in->line++;
            return 1;
        }
        struct jq_reader r = {p, end, p, in->line, in->name};
        char msg[200];
        int got = p ? jv_read(&r, out, msg, sizeof msg) : 0;
        /* a value that reaches the end of what was read may go on past it */
        if (!in->eof && (got <= 0 || r.p == r.end)) {
            if (got > 0) jv_free(*out);
            fill(in);
            continue;
        }
        if (got > 0) {
            /* the rest of the value's line too, so errors name the line it ended on */
            while (r.p < r.end && (*r.p == ' ' || *r.p == '\t' || *r.p == '\r')) r.p++;
            if (r.p < r.end && *r.p == '\n') {
                r.p++;
                r.line++;
            }
            in->mid_line = r.p[-1] != '\n';
            in->start = (size_t)(r.p - in->buf);
            in->line = r.line;
            return 1;
        }
        close_current(in);
        if (got < 0) {
            fprintf(stderr, "jq: error (at %s:%zu): Cannot parse input: %s\n", in->name, r.line, msg);
            in->failed = 1;
            in->next_file = in->nfiles; /* jq stops at a parse error */
            return -1;
        }
    }
}

static const char *input_where(void *ctx) {
    struct inputs *in = ctx;
    if (in->name == NULL) return "<unknown>";
    snprintf(in->where, sizeof in->where, "%s:%zu", in->name, in->line + (size_t)in->mid_line);
    return in->where;
}

static const char *input_filename(void *ctx) {
    struct inputs *in = ctx;
    return in->name && strcmp(in->name, "<stdin>") != 0 ? in->name : NULL;
}

static int read_file_text(const char *path, jv *out) {
    FILE *f = box_open_readable(path);
    char *data = NULL;
    size_t len = 0, cap = 0;
    if (f == NULL || !box_read_all(f, &data, &len, &cap)) {
        fprintf(stderr, "jq: error: Could not open %s: %s\n", path, strerror(errno));
        if (f) box_close_input(f);
        free(data);
        return 0;
    }
    box_close_input(f);
    *out = jv_string_sanitized(data ? data : "", len);
    free(data);
    return 1;
}

static int need_args(int i, int argc, int n, const char *opt) {
    if (i + n < argc) return 1;
    fprintf(stderr, "jq: error: %s takes %s\n", opt, n == 1 ? "one parameter" : "two parameters (e.g. --arg varname value)");
    return 0;
}

int cmd_jq(int argc, char **argv) {
    /* one host write per 64 KiB, not per line: each write is a call out of the sandbox */
    setvbuf(stdout, NULL, _IOFBF, 65536);
    struct options o;
    memset(&o, 0, sizeof o);
    o.indent = 2;
    const char *filter = NULL, *filter_file = NULL;
    jv named = jv_object();
    char **files = box_need("jq", calloc((size_t)argc + 1, sizeof *files), 2);
    int nfiles = 0, options_done = 0;
    for (int i = 1; i < argc; i++) {
        char *a = argv[i];
        if (options_done || a[0] != '-' || a[1] == '\0') {
            if (filter == NULL && filter_file == NULL) filter = a;
            else files[nfiles++] = a;
            continue;
        }
        if (strcmp(a, "--") == 0) {
            options_done = 1;
            continue;
        }
        if (a[1] == '-') {
            const char *l = a + 2;
            if (strcmp(l, "null-input") == 0) o.null_input = 1;
            else if (strcmp(l, "raw-output") == 0) o.raw = 1;
            else if (strcmp(l, "join-output") == 0) o.raw = o.join = 1;
            else if (strcmp(l, "compact-output") == 0) o.compact = 1;
            else if (strcmp(l, "slurp") == 0) o.slurp = 1;
            else if (strcmp(l, "exit-status") == 0) o.exit_status = 1;
            else if (strcmp(l, "raw-input") == 0) o.raw_input = 1;
            else if (strcmp(l, "sort-keys") == 0) o.sort_keys = 1;
            else if (strcmp(l, "ascii-output") == 0) o.ascii = 1;
            else if (strcmp(l, "monochrome-output") == 0) continue;
            else if (strcmp(l, "tab") == 0) o.tab = 1;
            else if (strcmp(l, "help") == 0) {
                fputs(help, stdout);
                return 0;
            } else if (strcmp(l, "indent") == 0) {
                if (!need_args(i, argc, 1, "--indent")) return 2;
                char *end;
                long n = strtol(argv[++i], &end, 10);
                if (*end || n < 0 || n > 7) {
                    fprintf(stderr, "jq: Cannot indent more than 7 characters\n");
                    return 2;
                }
                o.indent = (int)n;
                if (n == 0) o.compact = 1;
            } else if (strcmp(l, "arg") == 0 || strcmp(l, "argjson") == 0 ||
                       strcmp(l, "slurpfile") == 0 || strcmp(l, "rawfile") == 0) {
                if (!need_args(i, argc, 2, a)) return 2;
                const char *name = argv[i + 1], *value = argv[i + 2];
                i += 2;
                jv v;
                if (strcmp(l, "arg") == 0) {
                    v = jv_string_sanitized(value, strlen(value));
                } else if (strcmp(l, "argjson") == 0) {
                    char msg[200];
                    if (!jv_parse_text(value, strlen(value), &v, msg, sizeof msg)) {
                        fprintf(stderr, "jq: Invalid JSON text passed to --argjson\n");
                        return 2;
                    }
                } else if (strcmp(l, "rawfile") == 0) {
                    if (!read_file_text(value, &v)) return 2;
                } else {
                    jv text;
                    if (!read_file_text(value, &text)) return 2;
                    struct jq_reader r = {jv_str(text), jv_str(text) + jv_strlen(text), jv_str(text), 0, value};
                    v = jv_array();
                    jv item;
                    char msg[200];
                    int got;
                    while ((got = jv_read(&r, &item, msg, sizeof msg)) > 0) v = jv_array_append(v, item);
                    jv_free(text);
                    if (got < 0) {
                        fprintf(stderr, "jq: Bad JSON in --slurpfile %s %s: %s\n", name, value, msg);
                        return 2;
                    }
                }
                named = jv_object_set(named, jv_string(name), v);
            } else if (strcmp(l, "from-file") == 0) {
                if (!need_args(i, argc, 1, a)) return 2;
                filter_file = argv[++i];
            } else {
                return box_usage("jq", a);
            }
            continue;
        }
        for (const char *f = a + 1; *f; f++) {
            switch (*f) {
            case 'n': o.null_input = 1; break;
            case 'r': o.raw = 1; break;
            case 'j': o.raw = o.join = 1; break;
            case 'c': o.compact = 1; break;
            case 's': o.slurp = 1; break;
            case 'e': o.exit_status = 1; break;
            case 'R': o.raw_input = 1; break;
            case 'S': o.sort_keys = 1; break;
            case 'a': o.ascii = 1; break;
            case 'M': break;
            case 'h': fputs(help, stdout); return 0;
            case 'f':
                if (!need_args(i, argc, 1, "-f")) return 2;
                filter_file = argv[++i];
                break;
            default: {
                char opt[3] = {'-', *f, '\0'};
                return box_usage("jq", opt);
            }
            }
        }
    }
    jv program_text = jv_null();
    if (filter_file != NULL) {
        if (filter != NULL) files[nfiles++] = (char *)filter; /* with -f every operand is input */
        if (!read_file_text(filter_file, &program_text)) return 2;
        filter = jv_str(program_text);
    }
    if (filter == NULL) {
        fputs("Usage: jq [OPTIONS] FILTER [FILES...]\n(jq --help lists what the sandbox's jq supports)\n", stderr);
        return 2;
    }
    struct jq_program prog;
    char msg[4096];
    if (jq_compile(filter, named, &prog, msg, sizeof msg) != 0) {
        fprintf(stderr, "jq: error: %s\njq: 1 compile error\n", msg);
        return 3;
    }
    /* $ENV and env */
    extern char **environ;
    jv env = jv_object();
    for (char **e = environ; e && *e; e++) {
        const char *eq = strchr(*e, '=');
        if (eq == NULL) continue;
        env = jv_object_set(env, jv_string_n(*e, (size_t)(eq - *e)), jv_string(eq + 1));
    }
    struct inputs in;
    memset(&in, 0, sizeof in);
    in.files = files;
    in.nfiles = nfiles;
    in.raw = o.raw_input;
    if (nfiles == 0) {
        files[0] = NULL; /* stdin */
        in.nfiles = 1;
    }
    struct jq_run_config cfg = {named, env, next_input, &in, input_where, input_filename};
    struct out_state out = {&o, 0, 0, jv_null()};
    int status = 0, halted = -1;

    if (o.null_input) {
        int r = jq_execute(&prog, jv_null(), &cfg, write_output, &out);
        if (r >= 100) halted = r - 100;
        else if (r) status = r;
    } else if (o.slurp) {
        jv all;
        if (o.raw_input) {
            all = jv_string_n(NULL, 0);
            while (open_next(&in)) {
                while (fill(&in)) continue;
                jv part = jv_string_sanitized(in.buf ? in.buf : "", in.len);
                all = jv_string_append(all, jv_str(part), jv_strlen(part));
                jv_free(part);
                close_current(&in);
            }
        } else {
            all = jv_array();
            jv v;
            int got;
            while ((got = next_input(&in, &v)) > 0) all = jv_array_append(all, v);
        }
        if (in.failed) {
            jv_free(all);
            status = 2;
        } else {
            int r = jq_execute(&prog, all, &cfg, write_output, &out);
            if (r >= 100) halted = r - 100;
            else if (r) status = r;
        }
    } else {
        jv v;
        int got;
        while (halted < 0 && (got = next_input(&in, &v)) > 0) {
            int r = jq_execute(&prog, v, &cfg, write_output, &out);
            if (r >= 100) halted = r - 100;
            else if (r) status = r;
        }
    }
    fflush(stdout);
    if (halted >= 0) return halted;
    if (in.failed) return 2;
    if (status) return status;
    if (o.exit_status) {
        if (out.outputs == 0) return 4;
        return out.last_truthy ? 0 : 1;
    }
    return 0;
}
