/* pwd: the current directory as the sandbox sees it. The host's real path is not visible
 * inside, so this is the path from the workdir root ("/" is the workdir itself). */
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "box.h"

int cmd_pwd(int argc, char **argv) {
    for (int i = 1; i < argc; i++) {
        /* -L and -P agree here: symlinks leaving the workdir cannot be followed anyway */
        if (strcmp(argv[i], "-L") == 0 || strcmp(argv[i], "-P") == 0) continue;
        if (argv[i][0] == '-') return box_usage("pwd", argv[i]);
        box_err("pwd", "ignoring non-option arguments");
        break;
    }
    char *cwd = getcwd(NULL, 0);
    if (cwd == NULL) {
        box_perror("pwd", ".");
        return 1;
    }
    puts(cwd);
    free(cwd);
    return 0;
}
