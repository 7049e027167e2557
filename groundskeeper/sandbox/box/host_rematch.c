/* `[[ SUBJECT =~ ERE ]]` for the host shell: matched here, in the sandbox, so a pattern that
 * takes long is stopped by the run's fuel and deadline like any command, and the dialect is
 * the POSIX one bash uses (leftmost-longest). Reachable only by the host: its name, "[[=~",
 * is in no command list, so a command line naming it gets 127.
 *
 * argv[1] is the ERE; stdin is the subject. Prints "START END" byte offsets, one line for
 * the whole match and one for each group ("-1 -1" for a group that took no part). Exit 0
 * matched, 1 not, 2 the ERE does not compile (regerror's text on stderr). */
#include <regex.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "box.h"

#define NAME "[[ =~ ]]"

int host_rematch(int argc, char **argv) {
    if (argc != 2) {
        box_err(NAME, "usage: [[=~ ERE < SUBJECT");
        return 2;
    }
    size_t size = 0, room = 4096;
    char *subject = box_need(NAME, malloc(room), 2);
    size_t got;
    while ((got = fread(subject + size, 1, room - size - 1, stdin)) > 0) {
        size += got;
        if (room - size - 1 == 0) {
            room *= 2;
            subject = box_need(NAME, realloc(subject, room), 2);
        }
    }
    subject[size] = '\0';
    regex_t re;
    int rc = box_regcomp(&re, argv[1], 1, 0);
    if (rc != 0) {
        char message[256];
        regerror(rc, &re, message, sizeof message);
        box_err(NAME, "invalid regular expression: %s", message);
        return 2;
    }
    size_t groups = re.re_nsub + 1;
    regmatch_t *match = box_need(NAME, calloc(groups, sizeof *match), 2);
    if (regexec(&re, subject, groups, match, 0) != 0) return 1;
    for (size_t i = 0; i < groups; i++)
        printf("%ld %ld\n", (long)match[i].rm_so, (long)match[i].rm_eo);
    return 0;
}
