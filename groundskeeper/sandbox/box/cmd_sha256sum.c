/* sha256sum: SHA-256 digests (our own implementation of FIPS 180-4) printed as GNU does
 * ("HASH  NAME", "-" for stdin, a leading backslash for names holding \ or newline), and -c
 * to verify a list of them (--quiet, --status, --strict, -w).
 */
#include <getopt.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "box.h"

struct sha256 {
    uint32_t h[8];
    uint64_t length; /* bytes so far */
    unsigned char block[64];
    size_t used;
};

/* FIPS 180-4 §4.2.2: the first 32 bits of the fractional parts of the cube roots of the
 * first 64 primes. */
static const uint32_t K[64] = {
    0x428a2f98, 0x71374491, 0xb5c0fbcf, 0xe9b5dba5, 0x3956c25b, 0x59f111f1, 0x923f82a4, 0xab1c5ed5,
    0xd807aa98, 0x12835b01, 0x243185be, 0x550c7dc3, 0x72be5d74, 0x80deb1fe, 0x9bdc06a7, 0xc19bf174,
    0xe49b69c1, 0xefbe4786, 0x0fc19dc6, 0x240ca1cc, 0x2de92c6f, 0x4a7484aa, 0x5cb0a9dc, 0x76f988da,
    0x983e5152, 0xa831c66d, 0xb00327c8, 0xbf597fc7, 0xc6e00bf3, 0xd5a79147, 0x06ca6351, 0x14292967,
    0x27b70a85, 0x2e1b2138, 0x4d2c6dfc, 0x53380d13, 0x650a7354, 0x766a0abb, 0x81c2c92e, 0x92722c85,
    0xa2bfe8a1, 0xa81a664b, 0xc24b8b70, 0xc76c51a3, 0xd192e819, 0xd6990624, 0xf40e3585, 0x106aa070,
    0x19a4c116, 0x1e376c08, 0x2748774c, 0x34b0bcb5, 0x391c0cb3, 0x4ed8aa4a, 0x5b9cca4f, 0x682e6ff3,
    0x748f82ee, 0x78a5636f, 0x84c87814, 0x8cc70208, 0x90befffa, 0xa4506ceb, 0xbef9a3f7, 0xc67178f2};

static uint32_t rotr(uint32_t x, unsigned n) { return (x >> n) | (x << (32 - n)); }

/* §6.2.2: process one 512-bit block */
static void compress(struct sha256 *s, const unsigned char *p) {
    uint32_t w[64];
    for (int t = 0; t < 16; t++)
        w[t] = (uint32_t)p[4 * t] << 24 | (uint32_t)p[4 * t + 1] << 16 | (uint32_t)p[4 * t + 2] << 8 |
               (uint32_t)p[4 * t + 3];
    for (int t = 16; t < 64; t++) {
        uint32_t s0 = rotr(w[t - 15], 7) ^ rotr(w[t - 15], 18) ^ (w[t - 15] >> 3);
        uint32_t s1 = rotr(w[t - 2], 17) ^ rotr(w[t - 2], 19) ^ (w[t - 2] >> 10);
        w[t] = w[t - 16] + s0 + w[t - 7] + s1;
    }
    uint32_t a = s->h[0], b = s->h[1], c = s->h[2], d = s->h[3];
    uint32_t e = s->h[4], f = s->h[5], g = s->h[6], h = s->h[7];
    for (int t = 0; t < 64; t++) {
        uint32_t t1 = h + (rotr(e, 6) ^ rotr(e, 11) ^ rotr(e, 25)) + ((e & f) ^ (~e & g)) + K[t] + w[t];
        uint32_t t2 = (rotr(a, 2) ^ rotr(a, 13) ^ rotr(a, 22)) + ((a & b) ^ (a & c) ^ (b & c));
        h = g;
        g = f;
        f = e;
        e = d + t1;
        d = c;
        c = b;
        b = a;
        a = t1 + t2;
    }
    s->h[0] += a;
    s->h[1] += b;
    s->h[2] += c;
    s->h[3] += d;
    s->h[4] += e;
    s->h[5] += f;
    s->h[6] += g;
    s->h[7] += h;
}

static void sha256_init(struct sha256 *s) {
    /* §5.3.3: fractional parts of the square roots of the first 8 primes */
    static const uint32_t h0[8] = {0x6a09e667, 0xbb67ae85, 0x3c6ef372, 0xa54ff53a,
                                   0x510e527f, 0x9b05688c, 0x1f83d9ab, 0x5be0cd19};
    memcpy(s->h, h0, sizeof h0);
    s->length = 0;
    s->used = 0;
}

static void sha256_update(struct sha256 *s, const unsigned char *p, size_t n) {
    s->length += n;
    if (s->used > 0) {
        size_t take = 64 - s->used < n ? 64 - s->used : n;
        memcpy(s->block + s->used, p, take);
        s->used += take;
        p += take;
        n -= take;
        if (s->used < 64) return;
        compress(s, s->block);
        s->used = 0;
    }
    for (; n >= 64; p += 64, n -= 64) compress(s, p);
    memcpy(s->block, p, n);
    s->used = n;
}

/* §5.1.1 padding: a 1 bit, zeros, then the length in bits as 64-bit big-endian */
static void sha256_final(struct sha256 *s, char hex[65]) {
    uint64_t bits = s->length * 8;
    unsigned char pad[72] = {0x80};
    size_t padlen = s->used < 56 ? 56 - s->used : 120 - s->used;
    for (int i = 0; i < 8; i++) pad[padlen + (size_t)i] = (unsigned char)(bits >> (56 - 8 * i));
    sha256_update(s, pad, padlen + 8);
    for (int i = 0; i < 8; i++) snprintf(hex + 8 * i, 9, "%08x", s->h[i]);
}

/* Digest of a file ("-" is stdin); false with errno set when it cannot be read. */
static bool digest_file(const char *name, char hex[65]) {
    FILE *in = box_open_readable(name);
    if (in == NULL) return false;
    struct sha256 s;
    sha256_init(&s);
    unsigned char buf[65536];
    size_t n;
    while ((n = fread(buf, 1, sizeof buf, in)) > 0) sha256_update(&s, buf, n);
    bool ok = !ferror(in);
    box_close_input(in);
    if (ok) sha256_final(&s, hex);
    return ok;
}

struct check_opts {
    bool quiet, status_only, strict, warn;
};

/* Undo GNU's escaping of names in escaped lines: \\ and \n. */
static void unescape(char *s) {
    char *out = s;
    for (; *s; s++) {
        if (*s == '\\' && s[1] == 'n') {
            *out++ = '\n';
            s++;
        } else if (*s == '\\' && s[1] == '\\') {
            *out++ = '\\';
            s++;
        } else {
            *out++ = *s;
        }
    }
    *out = '\0';
}

static int check_list(const char *list, const struct check_opts *o) {
    FILE *in = box_open_input(list);
    if (in == NULL) {
        box_perror("sha256sum", list);
        return 1;
    }
    char *line = NULL;
    size_t cap = 0;
    ssize_t len;
    unsigned long lineno = 0, bad_lines = 0, mismatched = 0, unreadable = 0, good_lines = 0;
    while ((len = getline(&line, &cap, in)) > 0) {
        lineno++;
        if (line[len - 1] == '\n') line[--len] = '\0';
        char *p = line;
        bool escaped = *p == '\\';
        if (escaped) p++;
        size_t hexlen = strspn(p, "0123456789abcdefABCDEF");
        if (hexlen != 64 || p[64] != ' ' || (p[65] != ' ' && p[65] != '*') || p[66] == '\0') {
            bad_lines++;
            if (o->warn)
                box_err("sha256sum", "%s: %lu: improperly formatted SHA256 checksum line", list, lineno);
            continue;
        }
        good_lines++;
        char *name = p + 66;
        if (escaped) unescape(name);
        char want[65], got[65];
        for (int i = 0; i < 64; i++) want[i] = (char)(p[i] >= 'A' && p[i] <= 'F' ? p[i] + 32 : p[i]);
        want[64] = '\0';
        if (!digest_file(name, got)) {
            box_perror("sha256sum", name);
            if (!o->status_only) printf("%s: FAILED open or read\n", name);
            unreadable++;
            continue;
        }
        bool match = strcmp(want, got) == 0;
        if (!match) mismatched++;
        if (!o->status_only && !(match && o->quiet)) printf("%s: %s\n", name, match ? "OK" : "FAILED");
    }
    free(line);
    box_close_input(in);
    if (good_lines == 0) {
        box_err("sha256sum", "%s: no properly formatted checksum lines found", list);
        return 1;
    }
    if (!o->status_only) {
        if (bad_lines > 0)
            box_err("sha256sum", "WARNING: %lu line%s improperly formatted", bad_lines,
                    bad_lines == 1 ? " is" : "s are");
        if (unreadable > 0)
            box_err("sha256sum", "WARNING: %lu listed file%s could not be read", unreadable,
                    unreadable == 1 ? "" : "s");
        if (mismatched > 0)
            box_err("sha256sum", "WARNING: %lu computed checksum%s did NOT match", mismatched,
                    mismatched == 1 ? "" : "s");
    }
    return mismatched > 0 || unreadable > 0 || (o->strict && bad_lines > 0) ? 1 : 0;
}

int cmd_sha256sum(int argc, char **argv) {
    enum { OPT_QUIET = 256, OPT_STATUS, OPT_STRICT };
    static const struct option longopts[] = {{"check", no_argument, 0, 'c'},
                                             {"binary", no_argument, 0, 'b'},
                                             {"text", no_argument, 0, 't'},
                                             {"warn", no_argument, 0, 'w'},
                                             {"quiet", no_argument, 0, OPT_QUIET},
                                             {"status", no_argument, 0, OPT_STATUS},
                                             {"strict", no_argument, 0, OPT_STRICT},
                                             {0, 0, 0, 0}};
    bool check = false, binary = false;
    struct check_opts co = {false, false, false, false};
    int c;
    opterr = 0;
    while ((c = getopt_long(argc, argv, "cbtw", longopts, NULL)) != -1) {
        switch (c) {
        case 'c': check = true; break;
        case 'b': binary = true; break;
        case 't': binary = false; break;
        case 'w': co.warn = true; break;
        case OPT_QUIET: co.quiet = true; break;
        case OPT_STATUS: co.status_only = true; break;
        case OPT_STRICT: co.strict = true; break;
        default: return box_bad_option("sha256sum", argv);
        }
    }
    int nfiles;
    char **files = box_operands(argc, argv, "-", &nfiles);
    int status = 0;
    for (int i = 0; i < nfiles; i++) {
        if (check) {
            if (check_list(files[i], &co) != 0) status = 1;
            continue;
        }
        char hex[65];
        if (!digest_file(files[i], hex)) {
            box_perror("sha256sum", files[i]);
            status = 1;
            continue;
        }
        const char *name = files[i];
        bool escape = strpbrk(name, "\\\n") != NULL;
        if (escape) putchar('\\');
        printf("%s %c", hex, binary ? '*' : ' ');
        if (!escape) {
            fputs(name, stdout);
        } else {
            for (const char *p = name; *p; p++) {
                if (*p == '\\') fputs("\\\\", stdout);
                else if (*p == '\n') fputs("\\n", stdout);
                else putchar(*p);
            }
        }
        putchar('\n');
    }
    return status;
}
