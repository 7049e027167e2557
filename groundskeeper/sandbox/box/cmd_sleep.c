/* sleep: pause for the sum of its operands (seconds, or with an s/m/h/d suffix). The host's
 * wall-clock deadline still applies, so a long sleep ends the run with a named limit. */
#include <errno.h>
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
    /* Sleep in short slices: wasmtime cannot interrupt a guest blocked in one long
     * poll_oneoff, so a single nanosleep would outlive the host's deadline. Between slices
     * the guest runs wasm code again, where epoch interruption can stop it. */
    if (total > 86400.0) total = 86400.0; /* longer than any run's deadline */
    long long remaining_ns = (long long)(total * 1e9);
    const long long slice_ns = 10 * 1000 * 1000;
    while (remaining_ns > 0) {
        long long step = remaining_ns < slice_ns ? remaining_ns : slice_ns;
        struct timespec ts = {.tv_sec = 0, .tv_nsec = (long)step};
        while (nanosleep(&ts, &ts) != 0 && errno == EINTR) {
        }
        remaining_ns -= step;
    }
    return 0;
}
