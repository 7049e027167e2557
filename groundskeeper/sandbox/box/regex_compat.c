/* GNU's regular-expression dialect where musl's differs: GNU's ERE has back-references,
 * musl's has none. grep -E and sed -E compile through box_regcomp.
 */
#include <regex.h>
#include <stdlib.h>
#include <string.h>

#include "box.h"

static int has_backref(const char *re) {
    for (const char *p = re; *p; p++) {
        if (*p == '\\' && p[1] != '\0') {
            if (p[1] >= '1' && p[1] <= '9')
                return 1;
            p++;
        }
    }
    return 0;
}

/* The BRE equivalent of an ERE (musl's BRE has \| \+ \? as GNU extensions): ERE operators
 * gain a backslash, escaped ERE literals lose it; bracket expressions are copied verbatim. */
static char *ere_to_bre(const char *ere) {
    size_t n = strlen(ere);
    char *out = malloc(2 * n + 1), *o = out;
    if (out == NULL)
        return NULL;
    for (size_t i = 0; i < n; i++) {
        char c = ere[i];
        if (c == '\\' && i + 1 < n) {
            char d = ere[++i];
            if (strchr("(){}|+?", d) == NULL)
                *o++ = '\\';
            *o++ = d;
        } else if (c == '[') {
            size_t j = i + 1;
            if (j < n && ere[j] == '^')
                j++;
            if (j < n && ere[j] == ']')
                j++;
            while (j < n && ere[j] != ']') {
                if (ere[j] == '[' && j + 1 < n && strchr(":.=", ere[j + 1]) != NULL) {
                    const char close[3] = {ere[j + 1], ']', '\0'};
                    const char *found = strstr(ere + j + 2, close);
                    j = found ? (size_t)(found - ere) + 2 : n;
                } else {
                    j++;
                }
            }
            size_t end = j < n ? j : n - 1;
            memcpy(o, ere + i, end - i + 1);
            o += end - i + 1;
            i = end;
        } else {
            if (strchr("(){}|+?", c) != NULL)
                *o++ = '\\';
            *o++ = c;
        }
    }
    *o = '\0';
    return out;
}

int box_regcomp(regex_t *re, const char *pattern, int extended, int icase) {
    int flags = icase ? REG_ICASE : 0;
    char *bre = NULL;
    if (extended && has_backref(pattern) && (bre = ere_to_bre(pattern)) != NULL)
        pattern = bre;
    else if (extended)
        flags |= REG_EXTENDED;
    int rc = regcomp(re, pattern, flags);
    free(bre);
    return rc;
}
