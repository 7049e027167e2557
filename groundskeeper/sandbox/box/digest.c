/* What every digest shares: input cut into blocks, the final padding (a 1 bit, zeros, the
 * length in bits in the last block_size / 8 bytes) and the state words written out in the
 * algorithm's byte order.
 */
#include <stdio.h>
#include <string.h>

#include "digest.h"

uint32_t digest_be32(const unsigned char *p) {
    return (uint32_t)p[0] << 24 | (uint32_t)p[1] << 16 | (uint32_t)p[2] << 8 | (uint32_t)p[3];
}

uint32_t digest_le32(const unsigned char *p) {
    return (uint32_t)p[3] << 24 | (uint32_t)p[2] << 16 | (uint32_t)p[1] << 8 | (uint32_t)p[0];
}

uint64_t digest_be64(const unsigned char *p) {
    return (uint64_t)digest_be32(p) << 32 | digest_be32(p + 4);
}

size_t digest_size(const struct digest_algo *algo) { return algo->words * algo->word_size; }

void digest_init(struct digest_state *s, const struct digest_algo *algo) {
    memset(s, 0, sizeof *s);
    s->algo = algo;
    algo->init(s);
}

void digest_update(struct digest_state *s, const unsigned char *p, size_t n) {
    size_t bs = s->algo->block_size;
    s->length += n;
    if (s->used > 0) {
        size_t take = bs - s->used < n ? bs - s->used : n;
        memcpy(s->block + s->used, p, take);
        s->used += take;
        p += take;
        n -= take;
        if (s->used < bs) return;
        s->algo->compress(s, s->block);
        s->used = 0;
    }
    for (; n >= bs; p += bs, n -= bs) s->algo->compress(s, p);
    memcpy(s->block, p, n);
    s->used = n;
}

void digest_final(struct digest_state *s, char *hex) {
    const struct digest_algo *a = s->algo;
    size_t bs = a->block_size, field = bs / 8;
    uint64_t bits = s->length * 8; /* inputs here stay far below 2^61 bytes */
    unsigned char pad[2 * DIGEST_MAX_BLOCK] = {0x80};
    size_t padlen = s->used < bs - field ? bs - field - s->used : 2 * bs - field - s->used;
    for (size_t i = 0; i < 8; i++) {
        unsigned char byte = (unsigned char)(bits >> (8 * i));
        if (a->big_endian) pad[padlen + field - 1 - i] = byte;
        else pad[padlen + i] = byte;
    }
    digest_update(s, pad, padlen + field);
    char *out = hex;
    for (size_t w = 0; w < a->words; w++) {
        uint64_t word = a->word_size == 8 ? s->h.w64[w] : s->h.w32[w];
        for (size_t b = 0; b < a->word_size; b++) {
            size_t shift = a->big_endian ? 8 * (a->word_size - 1 - b) : 8 * b;
            out += sprintf(out, "%02x", (unsigned)(word >> shift) & 0xff);
        }
    }
}
