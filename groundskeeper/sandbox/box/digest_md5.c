/* MD5 (RFC 1321): the block function and starting values; digest.c does the rest. */
#include "digest.h"

/* RFC 1321 §3.4: T[i] = floor(2^32 * |sin(i + 1)|) */
static const uint32_t T[64] = {
    0xd76aa478, 0xe8c7b756, 0x242070db, 0xc1bdceee, 0xf57c0faf, 0x4787c62a, 0xa8304613, 0xfd469501,
    0x698098d8, 0x8b44f7af, 0xffff5bb1, 0x895cd7be, 0x6b901122, 0xfd987193, 0xa679438e, 0x49b40821,
    0xf61e2562, 0xc040b340, 0x265e5a51, 0xe9b6c7aa, 0xd62f105d, 0x02441453, 0xd8a1e681, 0xe7d3fbc8,
    0x21e1cde6, 0xc33707d6, 0xf4d50d87, 0x455a14ed, 0xa9e3e905, 0xfcefa3f8, 0x676f02d9, 0x8d2a4c8a,
    0xfffa3942, 0x8771f681, 0x6d9d6122, 0xfde5380c, 0xa4beea44, 0x4bdecfa9, 0xf6bb4b60, 0xbebfbc70,
    0x289b7ec6, 0xeaa127fa, 0xd4ef3085, 0x04881d05, 0xd9d4d039, 0xe6db99e5, 0x1fa27cf8, 0xc4ac5665,
    0xf4292244, 0x432aff97, 0xab9423a7, 0xfc93a039, 0x655b59c3, 0x8f0ccc92, 0xffeff47d, 0x85845dd1,
    0x6fa87e4f, 0xfe2ce6e0, 0xa3014314, 0x4e0811a1, 0xf7537e82, 0xbd3af235, 0x2ad7d2bb, 0xeb86d391,};

/* how far each round's steps rotate, four per round */
static const unsigned R[4][4] = {{7, 12, 17, 22}, {5, 9, 14, 20}, {4, 11, 16, 23}, {6, 10, 15, 21}};

static uint32_t rotl(uint32_t x, unsigned n) { return (x << n) | (x >> (32 - n)); }

static void md5_init(struct digest_state *s) {
    s->h.w32[0] = 0x67452301;
    s->h.w32[1] = 0xefcdab89;
    s->h.w32[2] = 0x98badcfe;
    s->h.w32[3] = 0x10325476;
}

static void md5_compress(struct digest_state *s, const unsigned char *p) {
    uint32_t x[16];
    for (int i = 0; i < 16; i++) x[i] = digest_le32(p + 4 * i);
    uint32_t a = s->h.w32[0], b = s->h.w32[1], c = s->h.w32[2], d = s->h.w32[3];
    for (unsigned i = 0; i < 64; i++) {
        uint32_t f;
        unsigned k;
        switch (i / 16) {
        case 0: f = (b & c) | (~b & d); k = i; break;
        case 1: f = (b & d) | (c & ~d); k = (5 * i + 1) % 16; break;
        case 2: f = b ^ c ^ d; k = (3 * i + 5) % 16; break;
        default: f = c ^ (b | ~d); k = (7 * i) % 16; break;
        }
        uint32_t next = b + rotl(a + f + T[i] + x[k], R[i / 16][i % 4]);
        a = d;
        d = c;
        c = b;
        b = next;
    }
    s->h.w32[0] += a;
    s->h.w32[1] += b;
    s->h.w32[2] += c;
    s->h.w32[3] += d;
}

const struct digest_algo digest_md5 = {"MD5", 64, 4, 4, 0, md5_init, md5_compress};
