/* sleep: pause for the sum of its operands (seconds, or with an s/m/h/d suffix). The host's
 * wall-clock deadline still applies, so a long sleep ends the run with a named limit. */
#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "box.h"

int cmd_sleep(int argc, char **argv) {
    int first = 1;
    if (first < argc && strcmp(argv[first], "--") == 0) first++;
    else if (first < argc && argv[first][0] == '-' && argv[first][1] != '\0' &&
             argv[first][1] != '.' && (argv[first][1] < '0' || argv[first][1] > '9'))
        return box_usage("sleep", argv[first]);
    if (first >= argc) {
        box_err("sleep", "missing operand");
        return 1;
    }
    double total = 0;
    int status = 0;
    for (int i = first; i < argc; i++) {
        char *end;
        errno = 0;
        double v = strtod(argv[i], &end);
        double mult = 1;
        if (end != argv[i] && end[0] != '\0' && end[1] == '\0') {
            switch (*end) {
            case 's': mult = 1; end++; break;
            case 'm': mult = 60; end++; break;
            case 'h': mult = 3600; end++; break;
            case 'd': mult = 86400; end++; break;
            default: break;
            }
        }
        if (end == argv[i] || *end != '\0' || !(v >= 0) || errno == ERANGE) {
            box_err("sleep", "invalid time interval '%s'", argv[i]);
            status = 1;
            continue;
        }
        total += v * mult;
    }
    if (status != 0) return status;
    struct timespec ts;
    /* anything longer than a day is longer than any run's deadline */
    if (total > 86400.0) total = 86400.0;
    ts.tv_sec = (time_t)total;
    ts.tv_nsec = (long)((total - floor(total)) * 1e9);
    while (nanosleep(&ts, &ts) != 0 && errno == EINTR) {
    }
    return 0;
}
