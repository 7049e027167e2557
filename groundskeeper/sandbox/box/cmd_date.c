/* date: print a time, never set one. The time is now, -r FILE's modification time, or -d
 * @SECONDS[.FRACTION]; the sandbox's clock is UTC, so -u changes nothing and %Z is "UTC".
 * +FORMAT takes strftime's directives plus GNU's %N %:z %::z %P %k %l %q %s, its flags - _ 0 ^
 * and a field width; an unknown directive prints as written, as GNU does. -I[TIMESPEC] and
 * -R give GNU's ISO 8601 and RFC 5322 forms. Any other -d string is refused (status 2).
 */
#include <ctype.h>
#include <errno.h>
#include <getopt.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>

#include "box.h"

struct when {
    long long secs;
    long nsec;
};

/* Directives whose value is a number, with the pad GNU gives them by default. */
static char default_pad(char conv) {
    if (strchr("ekl", conv) != NULL) return ' ';
    if (strchr("CdgGHIjmMNqsSuUVwWyY", conv) != NULL) return '0';
    return 0;
}

/* The text of one directive without flags or width; false when it is not one we know. */
static bool directive(char conv, int colons, const struct when *w, const struct tm *tm,
                      char *out, size_t size, int width) {
    switch (conv) {
    case 's': snprintf(out, size, "%lld", w->secs); return true;
    case 'N': {
        /* a width is a precision here: %3N is milliseconds */
        char nine[16];
        snprintf(nine, sizeof nine, "%09ld", w->nsec);
        int digits = width > 0 && width < 9 ? width : 9;
        snprintf(out, size, "%.*s", digits, nine);
        return true;
    }
    case 'z':
        /* %:::z is the shortest form, which for UTC is the hours alone */
        snprintf(out, size, "%s", (const char *[]){"+0000", "+00:00", "+00:00:00", "+00"}[colons < 4 ? colons : 0]);
        return colons <= 3;
    case 'Z': snprintf(out, size, "UTC"); return true;
    case 'q': snprintf(out, size, "%d", tm->tm_mon / 3 + 1); return true;
    case 'P': snprintf(out, size, "%s", tm->tm_hour < 12 ? "am" : "pm"); return true;
    case 'k': snprintf(out, size, "%2d", tm->tm_hour); return true;
    case 'l': snprintf(out, size, "%2d", tm->tm_hour % 12 == 0 ? 12 : tm->tm_hour % 12); return true;
    case 'n': snprintf(out, size, "\n"); return true;
    case 't': snprintf(out, size, "\t"); return true;
    case '%': snprintf(out, size, "%%"); return true;
    default: break;
    }
    if (strchr("aAbBcCdDeFgGhHIjmMprRSTuUVwWxXyY", conv) == NULL) return false;
    char fmt[3] = {'%', conv, '\0'};
    strftime(out, size, fmt, tm);
    return true;
}

/* Print FORMAT for W; 0, or 2 after a message for a flag we do not have. */
static int format_time(const char *format, const struct when *w) {
    struct tm tm;
    time_t secs = (time_t)w->secs;
    gmtime_r(&secs, &tm);
    for (const char *p = format; *p; p++) {
        if (*p != '%') {
            putchar(*p);
            continue;
        }
        const char *start = p++;
        char flag = 0;
        while (*p != '\0' && strchr("-_0^#+", *p) != NULL) {
            if (*p == '#') {
                box_err("date", "the %%# flag is not supported in the sandbox");
                return 2;
            }
            if (*p != '^') flag = *p == '+' ? '0' : *p; /* '+': zeros (a sign only past 4 digits) */
            p++;
        }
        bool upper = memchr(start, '^', (size_t)(p - start)) != NULL;
        int width = 0;
        while (isdigit((unsigned char)*p)) width = width * 10 + (*p++ - '0');
        if (width > 1024) width = 1024;
        if (*p == 'E' || *p == 'O') p++;
        int colons = 0;
        while (*p == ':') colons++, p++;
        char text[2048];
        if (*p == '\0' || (colons > 0 && *p != 'z') || !directive(*p, colons, w, &tm, text, sizeof text, width)) {
            /* not a directive: printed as written */
            fwrite(start, 1, (size_t)(p - start) + (*p != '\0'), stdout);
            if (*p == '\0') break;
            continue;
        }
        char pad = default_pad(*p);
        if (*p == 'N') width = 0; /* taken as a precision above */
        if (upper)
            for (char *t = text; *t; t++) *t = (char)toupper((unsigned char)*t);
        const char *body = text;
        int natural = (int)strlen(text);
        char fill = flag == '0' ? '0' : ' ';
        if (pad != 0) {
            /* a number: its own padding goes, and comes back as the flag says */
            while (body[0] != '\0' && body[1] != '\0' && (body[0] == '0' || body[0] == ' ')) body++;
            fill = flag == '_' ? ' ' : flag == '0' ? '0' : pad;
            if (width == 0) width = natural;
        }
        if (flag == '-') width = 0;
        int len = (int)strlen(body);
        if (body[0] == '-' && fill == '0') { /* the sign before the zeros */
            putchar('-');
            body++;
            len--;
            width--;
        }
        for (int i = len; i < width; i++) putchar(fill);
        fputs(body, stdout);
    }
    return 0;
}

/* "-d @SECONDS[.FRACTION]"; false for anything else */
static bool parse_epoch(const char *arg, struct when *w) {
    if (arg[0] != '@') return false;
    const char *p = arg + 1;
    while (*p == ' ') p++;
    bool negative = *p == '-';
    if (*p == '-' || *p == '+') p++;
    if (!isdigit((unsigned char)*p)) return false;
    long long secs = 0;
    while (isdigit((unsigned char)*p)) {
        if (secs > 100000000000000LL) return false;
        secs = secs * 10 + (*p++ - '0');
    }
    long nsec = 0;
    if (*p == '.' || *p == ',') {
        p++;
        for (int i = 0; i < 9; i++) nsec = nsec * 10 + (isdigit((unsigned char)*p) ? *p++ - '0' : 0);
        while (isdigit((unsigned char)*p)) p++;
    }
    if (*p != '\0') return false;
    if (negative) {
        secs = -secs;
        if (nsec > 0) secs -= 1, nsec = 1000000000L - nsec;
    }
    w->secs = secs;
    w->nsec = nsec;
    return true;
}

int cmd_date(int argc, char **argv) {
    static const struct option longopts[] = {{"utc", no_argument, 0, 'u'},
                                             {"universal", no_argument, 0, 'u'},
                                             {"reference", required_argument, 0, 'r'},
                                             {"date", required_argument, 0, 'd'},
                                             {"iso-8601", optional_argument, 0, 'I'},
                                             {"rfc-email", no_argument, 0, 'R'},
                                             {0, 0, 0, 0}};
    const char *reference = NULL, *given = NULL, *format = "%a %b %e %H:%M:%S %Z %Y";
    int c;
    opterr = 0;
    while ((c = getopt_long(argc, argv, ":ur:d:I::R", longopts, NULL)) != -1) {
        switch (c) {
        case 'u': break;
        case 'r': reference = optarg; break;
        case 'd': given = optarg; break;
        case 'R': format = "%a, %d %b %Y %H:%M:%S %z"; break;
        case 'I': {
            const char *spec = optarg != NULL ? optarg : "date";
            if (strcmp(spec, "date") == 0) format = "%Y-%m-%d";
            else if (strcmp(spec, "hours") == 0) format = "%Y-%m-%dT%H%:z";
            else if (strcmp(spec, "minutes") == 0) format = "%Y-%m-%dT%H:%M%:z";
            else if (strcmp(spec, "seconds") == 0) format = "%Y-%m-%dT%H:%M:%S%:z";
            else if (strcmp(spec, "ns") == 0) format = "%Y-%m-%dT%H:%M:%S,%N%:z";
            else {
                box_err("date", "invalid argument '%s' for '--iso-8601'", spec);
                return 1;
            }
            break;
        }
        case ':': return box_missing_argument("date", 1);
        default: return box_bad_option("date", argv);
        }
    }
    if (optind < argc) {
        if (argv[optind][0] != '+') {
            box_err("date", "setting the date is not supported in the sandbox; to print one, "
                            "write +FORMAT");
            return 2;
        }
        if (argc - optind > 1) {
            box_err("date", "extra operand '%s'", argv[optind + 1]);
            return 1;
        }
        format = argv[optind] + 1;
    }
    if (reference != NULL && given != NULL) {
        box_err("date", "the options to specify dates for printing are mutually exclusive");
        return 1;
    }
    struct when w;
    if (given != NULL) {
        if (!parse_epoch(given, &w)) {
            box_err("date", "-d takes only @SECONDS in the sandbox (not '%s'); for a file's "
                            "time use -r FILE", given);
            return 2;
        }
    } else if (reference != NULL) {
        struct stat sb;
        if (stat(reference, &sb) != 0) {
            box_perror("date", reference);
            return 1;
        }
        w.secs = (long long)sb.st_mtim.tv_sec;
        w.nsec = sb.st_mtim.tv_nsec;
    } else {
        struct timespec now;
        clock_gettime(CLOCK_REALTIME, &now);
        w.secs = (long long)now.tv_sec;
        w.nsec = now.tv_nsec;
    }
    int status = format_time(format, &w);
    if (status == 0) putchar('\n');
    return status;
}
