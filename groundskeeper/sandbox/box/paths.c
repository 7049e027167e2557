/* Path text and directory listings shared by the file commands: a path's last component,
 * DIR/NAME joining, the names in a directory read in full before the caller acts, and how
 * cp and mv tell SRC DST from SRC... DIR.
 */
#include <dirent.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "box.h"

const char *box_last_component(const char *path, size_t *len) {
    size_t end = strlen(path);
    while (end > 1 && path[end - 1] == '/') end--;
    size_t start = end;
    while (start > 0 && path[start - 1] != '/') start--;
    *len = end - start;
    return path + start;
}

static char *join_n(const char *dir, const char *name, size_t name_len) {
    size_t dlen = strlen(dir);
    bool slash = dlen > 0 && dir[dlen - 1] == '/';
    size_t len = dlen + name_len + 2;
    char *out = malloc(len);
    if (out != NULL) snprintf(out, len, "%s%s%.*s", dir, slash ? "" : "/", (int)name_len, name);
    return out;
}

char *box_path_join(const char *dir, const char *name) { return join_n(dir, name, strlen(name)); }

char *box_path_into(const char *dir, const char *path) {
    size_t len;
    const char *base = box_last_component(path, &len);
    return join_n(dir, base, len);
}

char **box_dir_names(const char *path, size_t *count) {
    *count = 0;
    DIR *d = opendir(path);
    if (d == NULL) return NULL;
    size_t n = 0, cap = 16;
    char **names = malloc(cap * sizeof *names);
    struct dirent *ent;
    while (names != NULL && (ent = readdir(d)) != NULL) {
        if (strcmp(ent->d_name, ".") == 0 || strcmp(ent->d_name, "..") == 0) continue;
        if (n == cap) {
            char **bigger = realloc(names, (cap *= 2) * sizeof *names);
            if (bigger == NULL) break;
            names = bigger;
        }
        if ((names[n] = strdup(ent->d_name)) == NULL) break;
        n++;
    }
    closedir(d);
    *count = n;
    return names;
}

void box_free_names(char **names, size_t count) {
    for (size_t i = 0; i < count; i++) free(names[i]);
    free(names);
}

int box_copy_operands(const char *name, char **ops, int *n, const char **target,
                      int no_target_dir) {
    if (*target != NULL) return BOX_INTO_DIR;
    if (*n < 1) {
        box_err(name, "missing file operand");
        return BOX_OPERAND_ERROR;
    }
    if (*n < 2) {
        box_err(name, "missing destination file operand after '%s'", ops[0]);
        return BOX_OPERAND_ERROR;
    }
    struct stat sb;
    bool is_dir = stat(ops[*n - 1], &sb) == 0 && S_ISDIR(sb.st_mode);
    if (no_target_dir || (*n == 2 && !is_dir)) {
        if (*n > 2) {
            box_err(name, "extra operand '%s'", ops[2]);
            return BOX_OPERAND_ERROR;
        }
        return BOX_ONE_TO_ONE;
    }
    if (!is_dir) {
        box_err(name, "target '%s' is not a directory", ops[*n - 1]);
        return BOX_OPERAND_ERROR;
    }
    *target = ops[--*n];
    return BOX_INTO_DIR;
}
