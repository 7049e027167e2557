/* Message digests for the *sum commands: MD5 (RFC 1321), SHA-1 and SHA-2 (FIPS 180-4), our
 * own implementations. digest.c owns what they share (buffering into blocks, the padding, the
 * output's byte order); digest_md5.c, digest_sha1.c and digest_sha2.c each hold one block
 * function and its starting values. cmd_sums.c prints and checks the sums.
 */
#ifndef DIGEST_H
#define DIGEST_H

#include <stddef.h>
#include <stdint.h>

#define DIGEST_MAX_BLOCK 128
#define DIGEST_MAX_SIZE 64

struct digest_state;

struct digest_algo {
    const char *tag;      /* as GNU names it in messages: "MD5", "SHA1", "SHA256", "SHA512" */
    size_t block_size;    /* 64 or 128 bytes; the length field is block_size / 8 bytes */
    size_t word_size;     /* 4 or 8 bytes */
    size_t words;         /* how many state words make the digest */
    int big_endian;       /* words and the length field (MD5 is little-endian) */
    void (*init)(struct digest_state *s);
    void (*compress)(struct digest_state *s, const unsigned char *block);
};

struct digest_state {
    const struct digest_algo *algo;
    uint64_t length; /* bytes so far */
    unsigned char block[DIGEST_MAX_BLOCK];
    size_t used;
    union {
        uint32_t w32[8];
        uint64_t w64[8];
    } h;
};

extern const struct digest_algo digest_md5, digest_sha1, digest_sha256, digest_sha512;

void digest_init(struct digest_state *s, const struct digest_algo *algo);
void digest_update(struct digest_state *s, const unsigned char *p, size_t n);
/* The digest as lowercase hex into HEX (2 * digest size + 1 bytes). */
void digest_final(struct digest_state *s, char *hex);
/* Bytes of the digest: words * word_size. */
size_t digest_size(const struct digest_algo *algo);

/* Big- and little-endian loads, for the block functions. */
uint32_t digest_be32(const unsigned char *p);
uint32_t digest_le32(const unsigned char *p);
uint64_t digest_be64(const unsigned char *p);

#endif
