/* touch: create empty files or update their times (-c no create, -a/-m which time,
 * -r REF to copy another file's times). Date strings (-d, -t) are not supported. */
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <stdbool.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "box.h"

int cmd_touch(int argc, char **argv) {
    static const struct option longopts[] = {{"no-create", no_argument, 0, 'c'},
                                             {"reference", required_argument, 0, 'r'},
                                             {0, 0, 0, 0}};
    bool create = true, only_a = false, only_m = false;
    const char *ref = NULL;
    int c;
    opterr = 0;
    while ((c = getopt_long(argc, argv, ":camr:", longopts, NULL)) != -1) {
        switch (c) {
        case 'c': create = false; break;
        case 'a': only_a = true; break;
        case 'm': only_m = true; break;
        case 'r': ref = optarg; break;
        case ':': return box_missing_argument("touch", 1);
        default: return box_bad_option("touch", argv);
        }
    }
    if (optind >= argc) {
        box_err("touch", "missing file operand");
        return 1;
    }
    struct timespec times[2] = {{0, UTIME_NOW}, {0, UTIME_NOW}};
    if (ref != NULL) {
        struct stat sb;
        if (stat(ref, &sb) != 0) {
            box_err("touch", "failed to get attributes of '%s': %s", ref, strerror(errno));
            return 1;
        }
        times[0] = sb.st_atim;
        times[1] = sb.st_mtim;
    }
    /* -a alone leaves the modification time, -m alone the access time */
    if (only_a && !only_m) times[1].tv_nsec = UTIME_OMIT;
    if (only_m && !only_a) times[0].tv_nsec = UTIME_OMIT;
    int status = 0;
    for (int i = optind; i < argc; i++) {
        const char *f = argv[i];
        if (access(f, F_OK) != 0) {
            if (!create) continue;
            int fd = open(f, O_WRONLY | O_CREAT, 0666);
            if (fd < 0) {
                box_err("touch", "cannot touch '%s': %s", f, strerror(errno));
                status = 1;
                continue;
            }
            close(fd);
            if (ref == NULL) continue;
        }
        if (utimensat(AT_FDCWD, f, times, 0) != 0) {
            box_err("touch", "setting times of '%s': %s", f, strerror(errno));
            status = 1;
        }
    }
    return status;
}
