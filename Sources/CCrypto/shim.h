#ifndef CCRYPTO_SHIM_H
#define CCRYPTO_SHIM_H

/* OpenSSL 3 libcrypto for the Security Manager: AES-128, AES-CMAC and P-256 through the EVP
   interfaces (the low-level AES_* / CMAC_* / EC_KEY_* calls are deprecated in 3.0).
   Every helper returns 1 on success and 0 on failure, like the calls it wraps. Parameter
   arrays and variadic calls cannot be built from Swift, so they are built here. */

#include <stddef.h>
#include <stdint.h>
#include <string.h>
#include <openssl/bn.h>
#include <openssl/core_names.h>
#include <openssl/ec.h>
#include <openssl/evp.h>
#include <openssl/obj_mac.h>
#include <openssl/params.h>

/* AES-128 in ECB mode over exactly one 16-byte block, no padding. */
static inline int ccrypto_aes128_block(const uint8_t key[16], const uint8_t in[16], uint8_t out[16]) {
    EVP_CIPHER_CTX *ctx = EVP_CIPHER_CTX_new();
    if (ctx == NULL) return 0;
    int len = 0, tail = 0;
    int ok = EVP_EncryptInit_ex(ctx, EVP_aes_128_ecb(), NULL, key, NULL) == 1
        && EVP_CIPHER_CTX_set_padding(ctx, 0) == 1
        && EVP_EncryptUpdate(ctx, out, &len, in, 16) == 1
        && EVP_EncryptFinal_ex(ctx, out + len, &tail) == 1
        && len + tail == 16;
    EVP_CIPHER_CTX_free(ctx);
    return ok;
}

/* AES-CMAC (RFC 4493) with a 16-byte key through EVP_MAC "CMAC", cipher AES-128-CBC. */
static inline int ccrypto_aes_cmac(const uint8_t key[16], const uint8_t *msg, size_t len, uint8_t out[16]) {
    EVP_MAC *mac = EVP_MAC_fetch(NULL, "CMAC", NULL);
    if (mac == NULL) return 0;
    EVP_MAC_CTX *ctx = EVP_MAC_CTX_new(mac);
    if (ctx == NULL) { EVP_MAC_free(mac); return 0; }
    char cipher[] = "AES-128-CBC";
    OSSL_PARAM params[2];
    params[0] = OSSL_PARAM_construct_utf8_string(OSSL_MAC_PARAM_CIPHER, cipher, 0);
    params[1] = OSSL_PARAM_construct_end();
    size_t outlen = 0;
    uint8_t empty = 0;
    int ok = EVP_MAC_init(ctx, key, 16, params) == 1
        && EVP_MAC_update(ctx, len == 0 ? &empty : msg, len) == 1
        && EVP_MAC_final(ctx, out, &outlen, 16) == 1
        && outlen == 16;
    EVP_MAC_CTX_free(ctx);
    EVP_MAC_free(mac);
    return ok;
}

/* Checks that 0x04 || X || Y (65 bytes, big-endian) is a point on P-256 other than infinity. */
static inline int ccrypto_p256_point_valid(const uint8_t point[65]) {
    if (point[0] != 0x04) return 0;
    EC_GROUP *group = EC_GROUP_new_by_curve_name(NID_X9_62_prime256v1);
    if (group == NULL) return 0;
    EC_POINT *p = EC_POINT_new(group);
    int ok = p != NULL
        && EC_POINT_oct2point(group, p, point, 65, NULL) == 1
        && EC_POINT_is_at_infinity(group, p) == 0
        && EC_POINT_is_on_curve(group, p, NULL) == 1;
    EC_POINT_free(p);
    EC_GROUP_free(group);
    return ok;
}

/* Builds an EVP_PKEY on P-256 from a 65-byte uncompressed public point and, when priv is not
   NULL, a 32-byte big-endian private scalar. */
static inline EVP_PKEY *ccrypto_p256_pkey(const uint8_t point[65], const uint8_t *priv) {
    EVP_PKEY_CTX *ctx = EVP_PKEY_CTX_new_from_name(NULL, "EC", NULL);
    if (ctx == NULL) return NULL;
    BIGNUM *bn = NULL;
    if (priv != NULL) {
        bn = BN_bin2bn(priv, 32, NULL);
        if (bn == NULL) { EVP_PKEY_CTX_free(ctx); return NULL; }
    }
    uint8_t pointCopy[65];
    memcpy(pointCopy, point, 65);
    uint8_t privLE[32];
    char group[] = "prime256v1";
    OSSL_PARAM params[4];
    int n = 0;
    params[n++] = OSSL_PARAM_construct_utf8_string(OSSL_PKEY_PARAM_GROUP_NAME, group, 0);
    params[n++] = OSSL_PARAM_construct_octet_string(OSSL_PKEY_PARAM_PUB_KEY, pointCopy, 65);
    if (bn != NULL) {
        /* OSSL_PARAM integers are native-endian byte strings. */
        if (BN_bn2nativepad(bn, privLE, 32) != 32) { BN_free(bn); EVP_PKEY_CTX_free(ctx); return NULL; }
        params[n++] = OSSL_PARAM_construct_BN(OSSL_PKEY_PARAM_PRIV_KEY, privLE, 32);
    }
    params[n] = OSSL_PARAM_construct_end();
    EVP_PKEY *pkey = NULL;
    int selection = bn != NULL ? EVP_PKEY_KEYPAIR : EVP_PKEY_PUBLIC_KEY;
    if (EVP_PKEY_fromdata_init(ctx) != 1 || EVP_PKEY_fromdata(ctx, &pkey, selection, params) != 1) pkey = NULL;
    BN_clear_free(bn);
    memset(privLE, 0, sizeof(privLE));
    EVP_PKEY_CTX_free(ctx);
    return pkey;
}

/* Generates a P-256 key pair: the private scalar (32 bytes, big-endian) and the public point
   0x04 || X || Y (65 bytes). */
static inline int ccrypto_p256_generate(uint8_t priv[32], uint8_t point[65]) {
    EVP_PKEY *pkey = EVP_PKEY_Q_keygen(NULL, NULL, "EC", "P-256");
    if (pkey == NULL) return 0;
    BIGNUM *bn = NULL;
    size_t len = 0;
    int ok = EVP_PKEY_get_octet_string_param(pkey, OSSL_PKEY_PARAM_PUB_KEY, point, 65, &len) == 1
        && len == 65
        && EVP_PKEY_get_bn_param(pkey, OSSL_PKEY_PARAM_PRIV_KEY, &bn) == 1
        && BN_bn2binpad(bn, priv, 32) == 32;
    BN_clear_free(bn);
    EVP_PKEY_free(pkey);
    return ok;
}

/* Computes the public point of a private scalar (for keys given as bytes, e.g. the debug key). */
static inline int ccrypto_p256_public(const uint8_t priv[32], uint8_t point[65]) {
    EC_GROUP *group = EC_GROUP_new_by_curve_name(NID_X9_62_prime256v1);
    if (group == NULL) return 0;
    BIGNUM *bn = BN_bin2bn(priv, 32, NULL);
    EC_POINT *p = EC_POINT_new(group);
    int ok = bn != NULL && p != NULL
        && BN_is_zero(bn) == 0
        && EC_POINT_mul(group, p, bn, NULL, NULL, NULL) == 1
        && EC_POINT_point2oct(group, p, POINT_CONVERSION_UNCOMPRESSED, point, 65, NULL) == 65;
    EC_POINT_free(p);
    BN_clear_free(bn);
    EC_GROUP_free(group);
    return ok;
}

/* ECDH on P-256: the X coordinate of priv * peer (32 bytes, big-endian). The peer point must
   have been checked with ccrypto_p256_point_valid. */
static inline int ccrypto_p256_ecdh(const uint8_t priv[32], const uint8_t own[65],
                                    const uint8_t peer[65], uint8_t out[32]) {
    EVP_PKEY *key = ccrypto_p256_pkey(own, priv);
    EVP_PKEY *peerKey = ccrypto_p256_pkey(peer, NULL);
    EVP_PKEY_CTX *ctx = key != NULL ? EVP_PKEY_CTX_new_from_pkey(NULL, key, NULL) : NULL;
    size_t len = 32;
    int ok = key != NULL && peerKey != NULL && ctx != NULL
        && EVP_PKEY_derive_init(ctx) == 1
        && EVP_PKEY_derive_set_peer(ctx, peerKey) == 1
        && EVP_PKEY_derive(ctx, out, &len) == 1
        && len == 32;
    EVP_PKEY_CTX_free(ctx);
    EVP_PKEY_free(peerKey);
    EVP_PKEY_free(key);
    return ok;
}

/* AES-128-CCM decryption and authentication (RFC 3610, NIST SP 800-38C) with a 4..16-byte
   tag and a 7..13-byte nonce, as BTHome and MiBeacon use it. out receives len bytes; returns 0
   when the tag does not match (out is then cleared). */
static inline int ccrypto_aes128_ccm_decrypt(const uint8_t key[16], const uint8_t *nonce, size_t nonce_len,
                                             const uint8_t *aad, size_t aad_len,
                                             const uint8_t *in, size_t len,
                                             const uint8_t *tag, size_t tag_len, uint8_t *out) {
    if (nonce_len < 7 || nonce_len > 13 || tag_len < 4 || tag_len > 16 || (tag_len & 1) != 0) return 0;
    EVP_CIPHER_CTX *ctx = EVP_CIPHER_CTX_new();
    if (ctx == NULL) return 0;
    uint8_t tagCopy[16];
    memcpy(tagCopy, tag, tag_len);
    uint8_t empty = 0;
    int outl = 0;
    int ok = EVP_DecryptInit_ex(ctx, EVP_aes_128_ccm(), NULL, NULL, NULL) == 1
        && EVP_CIPHER_CTX_ctrl(ctx, EVP_CTRL_AEAD_SET_IVLEN, (int)nonce_len, NULL) == 1
        && EVP_CIPHER_CTX_ctrl(ctx, EVP_CTRL_AEAD_SET_TAG, (int)tag_len, tagCopy) == 1
        && EVP_DecryptInit_ex(ctx, NULL, NULL, key, nonce) == 1
        && EVP_DecryptUpdate(ctx, NULL, &outl, NULL, (int)len) == 1
        && (aad_len == 0 || EVP_DecryptUpdate(ctx, NULL, &outl, aad, (int)aad_len) == 1)
        && EVP_DecryptUpdate(ctx, len == 0 ? &empty : out, &outl, len == 0 ? &empty : in, (int)len) == 1
        && (size_t)outl == len;
    if (!ok && len > 0) memset(out, 0, len);
    EVP_CIPHER_CTX_free(ctx);
    return ok;
}

/* AES-128-CCM encryption with a tag_len-byte tag (the counterpart of the decryption above; the
   benchmarks make encrypted BTHome advertisements with it). out receives len bytes, tag
   tag_len bytes; returns 1 on success. */
static inline int ccrypto_aes128_ccm_encrypt(const uint8_t key[16], const uint8_t *nonce, size_t nonce_len,
                                             const uint8_t *aad, size_t aad_len,
                                             const uint8_t *in, size_t len,
                                             uint8_t *out, uint8_t *tag, size_t tag_len) {
    if (nonce_len < 7 || nonce_len > 13 || tag_len < 4 || tag_len > 16 || (tag_len & 1) != 0) return 0;
    EVP_CIPHER_CTX *ctx = EVP_CIPHER_CTX_new();
    if (ctx == NULL) return 0;
    uint8_t empty = 0;
    int outl = 0;
    int ok = EVP_EncryptInit_ex(ctx, EVP_aes_128_ccm(), NULL, NULL, NULL) == 1
        && EVP_CIPHER_CTX_ctrl(ctx, EVP_CTRL_AEAD_SET_IVLEN, (int)nonce_len, NULL) == 1
        && EVP_CIPHER_CTX_ctrl(ctx, EVP_CTRL_AEAD_SET_TAG, (int)tag_len, NULL) == 1
        && EVP_EncryptInit_ex(ctx, NULL, NULL, key, nonce) == 1
        && EVP_EncryptUpdate(ctx, NULL, &outl, NULL, (int)len) == 1
        && (aad_len == 0 || EVP_EncryptUpdate(ctx, NULL, &outl, aad, (int)aad_len) == 1)
        && EVP_EncryptUpdate(ctx, len == 0 ? &empty : out, &outl, len == 0 ? &empty : in, (int)len) == 1
        && EVP_EncryptFinal_ex(ctx, &empty, &outl) == 1
        && EVP_CIPHER_CTX_ctrl(ctx, EVP_CTRL_AEAD_GET_TAG, (int)tag_len, tag) == 1;
    EVP_CIPHER_CTX_free(ctx);
    return ok;
}

#endif
