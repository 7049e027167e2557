/* sed: a stream editor for the common subset (GNU sed behaviour in the C locale).
 * Commands: s/re/repl/[g p N I], y/abc/xyz/, p P d D n N h H g G x q/Q [code] = and
 * { ... }, each with optional addresses (N, $, /re/[I], first~step) and ranges (a1,a2 /
 * a1,+N / 0,/re/), `!` negation, `;`/newline separated, `#` comments.
 * Options: -n, -E/-r, -e (repeatable), -s, -i[SUFFIX] (in place: each file's output goes to a
 * new file beside it, renamed over it at the end, through the sandbox's WASI layer like any
 * write, so the fence and the read-only mount refuse it; a backup SUFFIX may hold `*` for
 * the file's name, not `/`). Anything else GNU sed has (-f, -z, the a/i/c/b/t/l/w/r
 * commands, ...) is refused with status 2.
 * This file runs the commands over the input; sed_script.c parses the script into them.
 */
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <stdbool.h>
#include <regex.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "box.h"
#include "sed.h"

/* Regex match on the pattern space, tracking "the last regex used" for `//`. */
static int re_match(struct sed *s, const regex_t *re, const char *text, size_t nmatch,
                    regmatch_t *m, int eflags, int *err) {
    if (re == NULL)
        re = s->last_re;
    if (re == NULL) {
        box_err("sed", "no previous regular expression");
        *err = 1;
        return 0;
    }
    s->last_re = re;
    if (nmatch > re->re_nsub + 1)
        nmatch = re->re_nsub + 1;
    for (size_t i = nmatch; i < 10; i++)
        m[i].rm_so = m[i].rm_eo = -1;
    return regexec(re, text, nmatch, m, eflags) == 0;
}

static int addr_hit(struct sed *s, const struct addr *a, const struct buf *ps,
                    unsigned long lineno, int last, int *err) {
    regmatch_t m[10];
    switch (a->kind) {
    case ADDR_LINE: return lineno == a->line;
    case ADDR_LAST: return last;
    case ADDR_RE: return re_match(s, a->re, ps->data, 0, m, 0, err);
    case ADDR_STEP:
        if (a->step == 0)
            return lineno == a->line;
        return lineno >= a->line && (lineno - a->line) % a->step == 0;
    default: return 0;
    }
}

static int selected(struct sed *s, struct cmd *c, const struct buf *ps, unsigned long lineno,
                    int last, int *err) {
    int hit;
    if (c->a1.kind == ADDR_NONE) {
        hit = 1;
    } else if (c->a2.kind == ADDR_NONE) {
        hit = addr_hit(s, &c->a1, ps, lineno, last, err);
    } else if (c->active) {
        hit = 1;
        if (c->a2.kind == ADDR_LINE)
            c->active = lineno < c->a2.line;
        else if (c->a2.kind == ADDR_PLUS)
            c->active = lineno < c->end_line;
        else if (addr_hit(s, &c->a2, ps, lineno, last, err))
            c->active = 0;
    } else if (addr_hit(s, &c->a1, ps, lineno, last, err)) {
        hit = 1;
        if (c->a2.kind == ADDR_LINE)
            c->active = c->a2.line > lineno;
        else if (c->a2.kind == ADDR_PLUS) {
            c->end_line = lineno + c->a2.step;
            c->active = c->a2.step > 0;
        } else if (c->a2.kind == ADDR_LAST)
            c->active = !last;
        else
            c->active = 1; /* a regex end is looked for from the next line on */
    } else {
        hit = 0;
    }
    return hit != c->negate;
}

static void emit(struct sed *s, const struct buf *ps, int newline) {
    if (s->pending_newline)
        putc('\n', s->out);
    fwrite(ps->data, 1, ps->len, s->out);
    if (newline)
        putc('\n', s->out);
    s->pending_newline = !newline;
}

/* s///: returns 1 if a replacement was made; result replaces *ps. */
static int substitute(struct sed *s, struct cmd *c, struct buf *ps, struct buf *out, int *err) {
    regmatch_t m[10];
    size_t pos = 0, count = 0, prev_end = 0;
    int have_prev = 0, replaced = 0;
    out->len = 0;
    sed_buf_add(out, "", 0);
    while (pos <= ps->len &&
           re_match(s, c->re, ps->data + pos, 10, m, pos > 0 ? REG_NOTBOL : 0, err)) {
        size_t b = pos + (size_t)m[0].rm_so, e = pos + (size_t)m[0].rm_eo;
        if (b == e && have_prev && b == prev_end) {
            /* No empty match right after the previous one: GNU turns abc into -a-c- with
             * the b-star pattern replaced globally by a dash. */
            if (b >= ps->len)
                break;
            sed_buf_add(out, ps->data + pos, b - pos + 1);
            pos = b + 1;
            continue;
        }
        count++;
        sed_buf_add(out, ps->data + pos, b - pos);
        if (count >= c->nth) {
            for (size_t i = 0; i < c->nparts; i++) {
                const struct part *pt = &c->parts[i];
                if (pt->group < 0)
                    sed_buf_add(out, pt->text, pt->len);
                else if (m[pt->group].rm_so >= 0)
                    sed_buf_add(out, ps->data + pos + m[pt->group].rm_so,
                            (size_t)(m[pt->group].rm_eo - m[pt->group].rm_so));
            }
            replaced = 1;
        } else {
            sed_buf_add(out, ps->data + b, e - b);
        }
        prev_end = e;
        have_prev = 1;
        pos = e;
        if (replaced && !c->global)
            break;
        if (b == e) {
            if (b >= ps->len)
                break;
            sed_buf_add(out, ps->data + b, 1);
            pos = b + 1;
        }
    }
    if (*err || !replaced)
        return 0;
    if (pos < ps->len)
        sed_buf_add(out, ps->data + pos, ps->len - pos);
    struct buf tmp = *ps;
    *ps = *out;
    *out = tmp;
    return 1;
}

/* Input: the files in order (or stdin), read one line ahead so `$` is known. */
struct input {
    char **files;
    int nfiles, next;
    FILE *f;
    int status;
};

static int open_next(struct input *in) {
    while (in->f == NULL && in->next < in->nfiles) {
        const char *name = in->files[in->next++];
        in->f = box_open_input(name);
        if (in->f == NULL) {
            fprintf(stderr, "sed: can't read %s: %s\n", name, strerror(errno));
            in->status = 2;
        }
    }
    return in->f != NULL;
}

static ssize_t next_line(struct input *in, char **line, size_t *cap) {
    while (open_next(in)) {
        ssize_t n = getline(line, cap, in->f);
        if (n >= 0)
            return n;
        box_close_input(in->f);
        in->f = NULL;
    }
    return -1;
}

/* The current input line and the one after it (so that `$` is known in advance). */
struct lines {
    char *cur, *ahead;
    size_t cur_cap, ahead_cap;
    ssize_t cur_len, ahead_len;
};

static void advance(struct input *in, struct lines *l) {
    char *swap = l->cur;
    size_t swap_cap = l->cur_cap;
    l->cur = l->ahead;
    l->cur_cap = l->ahead_cap;
    l->cur_len = l->ahead_len;
    l->ahead = swap;
    l->ahead_cap = swap_cap;
    l->ahead_len = next_line(in, &l->ahead, &l->ahead_cap);
}

/* Append the current line (without its newline) to ps; returns whether it had one. */
static int take_line(const struct lines *l, struct buf *ps) {
    int had_newline = l->cur_len > 0 && l->cur[l->cur_len - 1] == '\n';
    sed_buf_add(ps, l->cur, (size_t)l->cur_len - (had_newline ? 1 : 0));
    return had_newline;
}

static int run(struct sed *s, struct input *in) {
    struct lines l = {0};
    l.cur_len = next_line(in, &l.cur, &l.cur_cap);
    l.ahead_len = l.cur_len >= 0 ? next_line(in, &l.ahead, &l.ahead_cap) : -1;
    struct buf ps = {0}, spare = {0}, hold = {0};
    sed_buf_add(&hold, "", 0);
    unsigned long lineno = 0;
    int err = 0, status = 0, quit = 0, restart = 0, had_newline = 0;
    while ((restart || l.cur_len >= 0) && !quit) {
        if (!restart) {
            lineno++;
            ps.len = 0;
            had_newline = take_line(&l, &ps);
        }
        restart = 0;
        int autoprint = !s->quiet;
        for (size_t i = 0; i < s->ncmds && !err; i++) {
            struct cmd *c = &s->cmds[i];
            int last = l.ahead_len < 0;
            if (!selected(s, c, &ps, lineno, last, &err) || err) {
                if (c->name == '{')
                    i = c->jump; /* skip the block: resume after its } */
                continue;
            }
            if (c->name == 'p') {
                emit(s, &ps, had_newline);
            } else if (c->name == 'P') {
                const char *nl = memchr(ps.data, '\n', ps.len);
                struct buf first = {ps.data, nl ? (size_t)(nl - ps.data) : ps.len, 0};
                emit(s, &first, nl != NULL || had_newline);
            } else if (c->name == 'd') {
                autoprint = 0;
                break;
            } else if (c->name == 'D') {
                /* Drop the first line of the pattern space; with more left, start the next
                 * cycle on what remains instead of reading a new line. */
                const char *nl = memchr(ps.data, '\n', ps.len);
                autoprint = 0;
                if (nl != NULL) {
                    size_t cut = (size_t)(nl - ps.data) + 1;
                    memmove(ps.data, ps.data + cut, ps.len - cut + 1);
                    ps.len -= cut;
                    restart = 1;
                }
                break;
            } else if (c->name == '=') {
                if (s->pending_newline)
                    putc('\n', s->out);
                s->pending_newline = 0;
                fprintf(s->out, "%lu\n", lineno);
            } else if (c->name == 'q' || c->name == 'Q') {
                if (c->name == 'Q')
                    autoprint = 0;
                status = c->exit_code;
                quit = 1;
                break;
            } else if (c->name == 'n' || c->name == 'N') {
                /* Without a next line GNU ends here, printing the pattern space. */
                if (last) {
                    quit = 1;
                    break;
                }
                if (c->name == 'n') {
                    if (!s->quiet)
                        emit(s, &ps, had_newline);
                    ps.len = 0;
                } else {
                    sed_buf_add(&ps, "\n", 1);
                }
                advance(in, &l);
                lineno++;
                had_newline = take_line(&l, &ps);
            } else if (c->name == 's') {
                if (substitute(s, c, &ps, &spare, &err) && c->print)
                    emit(s, &ps, had_newline);
            } else if (c->name == 'y') {
                for (size_t k = 0; k < ps.len; k++)
                    ps.data[k] = (char)c->map[(unsigned char)ps.data[k]];
            } else if (c->name == 'h' || c->name == 'H') {
                if (c->name == 'h')
                    hold.len = 0;
                else
                    sed_buf_add(&hold, "\n", 1);
                sed_buf_add(&hold, ps.data, ps.len);
            } else if (c->name == 'g' || c->name == 'G') {
                if (c->name == 'g')
                    ps.len = 0;
                else
                    sed_buf_add(&ps, "\n", 1);
                sed_buf_add(&ps, hold.data, hold.len);
            } else if (c->name == 'x') {
                struct buf swap = ps;
                ps = hold;
                hold = swap;
            }
        }
        if (err) {
            status = 1;
            break;
        }
        if (autoprint)
            emit(s, &ps, had_newline);
        if (!restart)
            advance(in, &l);
    }
    free(l.cur);
    free(l.ahead);
    free(ps.data);
    free(spare.data);
    free(hold.data);
    s->quit = quit;
    if (quit || err)
        return status;
    return in->status;
}

/* The directory part of PATH with its slash ("./" when it has none), in new memory. */
static char *dir_of(const char *path) {
    size_t len;
    const char *base = box_last_component(path, &len);
    size_t dlen = (size_t)(base - path);
    char *dir = box_need("sed", malloc(dlen + 3), 4);
    if (dlen == 0) strcpy(dir, "./");
    else memcpy(dir, path, dlen), dir[dlen] = '\0';
    return dir;
}

/* A new file beside PATH for its edited text: *NAME is its name (the caller frees it). */
static FILE *open_temp(const char *path, char **name) {
    char *dir = dir_of(path);
    struct timespec now;
    clock_gettime(CLOCK_REALTIME, &now);
    unsigned long seed = (unsigned long)now.tv_nsec ^ (unsigned long)now.tv_sec;
    size_t cap = strlen(dir) + 16;
    *name = box_need("sed", malloc(cap), 4);
    int fd = -1;
    for (unsigned long attempt = 0; attempt < 100 && fd < 0; attempt++) {
        snprintf(*name, cap, "%ssed%06lx", dir, (seed + attempt * 7919) & 0xffffff);
        fd = open(*name, O_WRONLY | O_CREAT | O_EXCL, 0666);
        if (fd < 0 && errno != EEXIST) break;
    }
    free(dir);
    return fd >= 0 ? fdopen(fd, "w") : NULL;
}

/* The backup name for PATH: SUFFIX appended, or each `*` in it replaced by PATH's name. */
static char *backup_name(const char *path, const char *suffix) {
    if (strchr(suffix, '*') == NULL) {
        char *out = box_need("sed", malloc(strlen(path) + strlen(suffix) + 1), 4);
        return strcat(strcpy(out, path), suffix);
    }
    size_t len;
    const char *base = box_last_component(path, &len);
    size_t cap = (size_t)(base - path) + strlen(suffix) * (len + 1) + 1, n = (size_t)(base - path);
    char *out = box_need("sed", malloc(cap), 4);
    memcpy(out, path, n);
    for (const char *p = suffix; *p; p++) {
        if (*p == '*') memcpy(out + n, base, len), n += len;
        else out[n++] = *p;
    }
    out[n] = '\0';
    return out;
}

/* Run the script over each file on its own (-s, -i): line numbers and `$` are per file. With
 * IN_PLACE the output replaces the file (keeping the old one as its backup with SUFFIX). */
static int run_each(struct sed *s, char **files, int nfiles, bool in_place, const char *suffix) {
    int status = 0;
    for (int i = 0; i < nfiles && !s->quit; i++) {
        struct input in = {files + i, 1, 0, NULL, 0};
        for (size_t k = 0; k < s->ncmds; k++) /* a range open at one file's end ends there */
            s->cmds[k].active = 0;
        if (!in_place) {
            int st = run(s, &in);
            if (st != 0) status = st;
            continue;
        }
        struct stat sb;
        if (stat(files[i], &sb) != 0) {
            fprintf(stderr, "sed: can't read %s: %s\n", files[i], strerror(errno));
            status = 2;
            continue;
        }
        if (!S_ISREG(sb.st_mode)) {
            box_err("sed", "couldn't edit %s: not a regular file", files[i]);
            status = 4;
            continue;
        }
        char *temp;
        s->out = open_temp(files[i], &temp);
        if (s->out == NULL) {
            box_err("sed", "couldn't open temporary file %s: %s", temp, strerror(errno));
            free(temp);
            status = 4;
            break;
        }
        s->pending_newline = 0;
        int st = run(s, &in);
        int closed = fclose(s->out);
        s->out = stdout;
        if (st != 0 && !s->quit) { /* the script failed part way: the file stays as it was */
            unlink(temp);
            free(temp);
            status = st;
            continue;
        }
        const char *failed = NULL;
        if (closed != 0) failed = temp;
        char *backup = suffix != NULL && *suffix ? backup_name(files[i], suffix) : NULL;
        if (failed == NULL && backup != NULL && rename(files[i], backup) != 0) failed = files[i];
        if (failed == NULL && rename(temp, files[i]) != 0) failed = temp;
        if (failed != NULL) {
            box_err("sed", "cannot rename %s: %s", failed, strerror(errno));
            unlink(temp); /* the edit did not happen: leave nothing behind */
            st = 4;
        }
        free(backup);
        free(temp);
        if (st != 0) status = st;
    }
    return status;
}

int cmd_sed(int argc, char **argv) {
    static const struct option longopts[] = {{"in-place", optional_argument, 0, 'i'},
                                             {"separate", no_argument, 0, 's'},
                                             {0, 0, 0, 0}};
    struct sed s = {0};
    s.out = stdout;
    struct buf script = {0};
    int have_e = 0, opt;
    bool in_place = false, separate = false;
    const char *suffix = NULL;
    opterr = 0;
    while ((opt = getopt_long(argc, argv, ":nEre:i::s", longopts, NULL)) != -1) {
        switch (opt) {
        case 'i':
            in_place = separate = true;
            suffix = optarg;
            if (suffix != NULL && strchr(suffix, '/') != NULL) {
                box_err("sed", "a backup suffix with '/' (another directory) is not supported "
                               "in the sandbox: -i%s", suffix);
                return 2;
            }
            break;
        case 's': separate = true; break;
        case 'n': s.quiet = 1; break;
        case 'E': case 'r': s.extended = 1; break;
        case 'e':
            if (have_e)
                sed_buf_add(&script, "\n", 1);
            sed_buf_add(&script, optarg, strlen(optarg));
            have_e = 1;
            break;
        case ':': return box_missing_argument("sed", 1);
        default: return box_bad_option("sed", argv);
        }
    }
    if (!have_e) {
        if (optind >= argc) {
            fprintf(stderr, "Usage: sed [OPTION]... {script-only-if-no-other-script} "
                            "[input-file]...\n");
            return 1;
        }
        sed_buf_add(&script, argv[optind], strlen(argv[optind]));
        optind++;
    }
    int status = sed_parse_script(&s, script.data);
    if (status != 0)
        return status;
    struct input in = {NULL, 0, 0, NULL, 0};
    if (in_place && optind >= argc) {
        box_err("sed", "no input files");
        return 4; /* GNU's status for it */
    }
    in.files = box_operands(argc, argv, "-", &in.nfiles);
    if (separate)
        return run_each(&s, in.files, in.nfiles, in_place, suffix);
    return run(&s, &in);
}
