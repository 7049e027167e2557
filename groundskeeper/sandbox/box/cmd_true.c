#include "box.h"

int cmd_true(int argc, char **argv) {
    (void)argc;
    (void)argv;
    return 0;
}

int cmd_false(int argc, char **argv) {
    (void)argc;
    (void)argv;
    return 1;
}
