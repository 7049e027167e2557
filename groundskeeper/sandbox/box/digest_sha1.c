/* SHA-1 (FIPS 180-4 §6.1): the block function and starting values; digest.c does the rest. */
#include "digest.h"

static uint32_t rotl(uint32_t x, unsigned n) { return (x << n) | (x >> (32 - n)); }

static void sha1_init(struct digest_state *s) {
    static const uint32_t h0[5] = {0x67452301, 0xefcdab89, 0x98badcfe, 0x10325476, 0xc3d2e1f0};
    for (int i = 0; i < 5; i++) s->h.w32[i] = h0[i];
}

static void sha1_compress(struct digest_state *s, const unsigned char *p) {
    uint32_t w[80];
    for (int t = 0; t < 16; t++) w[t] = digest_be32(p + 4 * t);
    for (int t = 16; t < 80; t++) w[t] = rotl(w[t - 3] ^ w[t - 8] ^ w[t - 14] ^ w[t - 16], 1);
    uint32_t a = s->h.w32[0], b = s->h.w32[1], c = s->h.w32[2], d = s->h.w32[3], e = s->h.w32[4];
    for (int t = 0; t < 80; t++) {
        uint32_t f, k;
        if (t < 20) f = (b & c) | (~b & d), k = 0x5a827999;
        else if (t < 40) f = b ^ c ^ d, k = 0x6ed9eba1;
        else if (t < 60) f = (b & c) | (b & d) | (c & d), k = 0x8f1bbcdc;
        else f = b ^ c ^ d, k = 0xca62c1d6;
        uint32_t temp = rotl(a, 5) + f + e + k + w[t];
        e = d;
        d = c;
        c = rotl(b, 30);
        b = a;
        a = temp;
    }
    s->h.w32[0] += a;
    s->h.w32[1] += b;
    s->h.w32[2] += c;
    s->h.w32[3] += d;
    s->h.w32[4] += e;
}

const struct digest_algo digest_sha1 = {"SHA1", 64, 4, 5, 1, sha1_init, sha1_compress};
