/*
 * ap_auth.h
 *	  Mutual authentication of the handshake (ap_auth.c), shared by diskd
 *	  and the extension.
 */
#ifndef AP_AUTH_H
#define AP_AUTH_H

#include <stdbool.h>
#include <stddef.h>

#define AP_SHA256_BYTES				32
#define AP_AUTH_NONCE_BYTES			32

void		ap_sha256(const void *data, size_t n, unsigned char out[AP_SHA256_BYTES]);
void		ap_hmac_sha256(const void *key, size_t keylen, const void *data, size_t n,
						   unsigned char out[AP_SHA256_BYTES]);

/*
 * The daemon's proof (from_server) or the host's: HMAC-SHA-256 keyed with
 * the secret over a label and both nonces, in an order that differs
 * between the two.
 */
void		ap_auth_proof(const char *secret, bool from_server,
						  const unsigned char client_nonce[AP_AUTH_NONCE_BYTES],
						  const unsigned char server_nonce[AP_AUTH_NONCE_BYTES],
						  unsigned char out[AP_SHA256_BYTES]);

/* Compare n bytes in time that does not depend on where they differ. */
bool		ap_auth_equal(const unsigned char *a, const unsigned char *b, size_t n);

#endif							/* AP_AUTH_H */
