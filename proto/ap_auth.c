/*
 * ap_auth.c
 *	  The handshake's mutual authentication, compiled into both programs:
 *	  SHA-256 (FIPS 180-4), HMAC (RFC 2104) and the two proofs.
 *
 * Neither side sends the secret.  The host's Hello carries a fresh nonce;
 * the daemon answers with its own nonce and proves it knows the secret
 * (server proof); the host checks that proof before it trusts anything the
 * daemon says, then proves it knows the secret too (client proof) in an
 * Auth frame, which the daemon checks before it serves a request.  The two
 * proofs are HMACs over different labels and nonce orders, so one cannot
 * be replayed as the other, and fresh nonces on both sides keep a recorded
 * conversation from being replayed.
 */
#include <stdint.h>
#include <string.h>

#include "ap_auth.h"

/* ---------------- SHA-256 ---------------- */

typedef struct Sha256
{
	uint32_t	h[8];
	uint64_t	len;			/* bytes hashed */
	unsigned char buf[64];
	size_t		nbuf;
} Sha256;

static const uint32_t sha256_k[64] = {
	0x428a2f98, 0x71374491, 0xb5c0fbcf, 0xe9b5dba5, 0x3956c25b, 0x59f111f1, 0x923f82a4, 0xab1c5ed5,
	0xd807aa98, 0x12835b01, 0x243185be, 0x550c7dc3, 0x72be5d74, 0x80deb1fe, 0x9bdc06a7, 0xc19bf174,
	0xe49b69c1, 0xefbe4786, 0x0fc19dc6, 0x240ca1cc, 0x2de92c6f, 0x4a7484aa, 0x5cb0a9dc, 0x76f988da,
	0x983e5152, 0xa831c66d, 0xb00327c8, 0xbf597fc7, 0xc6e00bf3, 0xd5a79147, 0x06ca6351, 0x14292967,
	0x27b70a85, 0x2e1b2138, 0x4d2c6dfc, 0x53380d13, 0x650a7354, 0x766a0abb, 0x81c2c92e, 0x92722c85,
	0xa2bfe8a1, 0xa81a664b, 0xc24b8b70, 0xc76c51a3, 0xd192e819, 0xd6990624, 0xf40e3585, 0x106aa070,
	0x19a4c116, 0x1e376c08, 0x2748774c, 0x34b0bcb5, 0x391c0cb3, 0x4ed8aa4a, 0x5b9cca4f, 0x682e6ff3,
	0x748f82ee, 0x78a5636f, 0x84c87814, 0x8cc70208, 0x90befffa, 0xa4506ceb, 0xbef9a3f7, 0xc67178f2
};

static inline uint32_t
rotr(uint32_t x, int n)
{
	return (x >> n) | (x << (32 - n));
}

static void
sha256_block(Sha256 *s, const unsigned char *p)
{
	uint32_t	w[64];
	uint32_t	a, b, c, d, e, f, g, h;

	for (int i = 0; i < 16; i++)
		w[i] = (uint32_t) p[4 * i] << 24 | (uint32_t) p[4 * i + 1] << 16 |
			(uint32_t) p[4 * i + 2] << 8 | (uint32_t) p[4 * i + 3];
	for (int i = 16; i < 64; i++)
	{
		uint32_t	s0 = rotr(w[i - 15], 7) ^ rotr(w[i - 15], 18) ^ (w[i - 15] >> 3);
		uint32_t	s1 = rotr(w[i - 2], 17) ^ rotr(w[i - 2], 19) ^ (w[i - 2] >> 10);

		w[i] = w[i - 16] + s0 + w[i - 7] + s1;
	}
	a = s->h[0];
	b = s->h[1];
	c = s->h[2];
	d = s->h[3];
	e = s->h[4];
	f = s->h[5];
	g = s->h[6];
	h = s->h[7];
	for (int i = 0; i < 64; i++)
	{
		uint32_t	t1 = h + (rotr(e, 6) ^ rotr(e, 11) ^ rotr(e, 25)) + ((e & f) ^ (~e & g)) +
			sha256_k[i] + w[i];
		uint32_t	t2 = (rotr(a, 2) ^ rotr(a, 13) ^ rotr(a, 22)) + ((a & b) ^ (a & c) ^ (b & c));

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

static void
sha256_init(Sha256 *s)
{
	static const uint32_t iv[8] = {
		0x6a09e667, 0xbb67ae85, 0x3c6ef372, 0xa54ff53a,
		0x510e527f, 0x9b05688c, 0x1f83d9ab, 0x5be0cd19
	};

	memcpy(s->h, iv, sizeof(iv));
	s->len = 0;
	s->nbuf = 0;
}

static void
sha256_update(Sha256 *s, const void *data, size_t n)
{
	const unsigned char *p = data;

	s->len += n;
	while (n > 0)
	{
		size_t		take = 64 - s->nbuf < n ? 64 - s->nbuf : n;

		memcpy(s->buf + s->nbuf, p, take);
		s->nbuf += take;
		p += take;
		n -= take;
		if (s->nbuf == 64)
		{
			sha256_block(s, s->buf);
			s->nbuf = 0;
		}
	}
}

static void
sha256_final(Sha256 *s, unsigned char out[AP_SHA256_BYTES])
{
	uint64_t	bits = s->len * 8;
	unsigned char pad = 0x80;
	unsigned char zero = 0;
	unsigned char lenbe[8];

	sha256_update(s, &pad, 1);
	while (s->nbuf != 56)
		sha256_update(s, &zero, 1);
	for (int i = 0; i < 8; i++)
		lenbe[i] = (unsigned char) (bits >> (56 - 8 * i));
	sha256_update(s, lenbe, 8);
	for (int i = 0; i < 8; i++)
	{
		out[4 * i] = (unsigned char) (s->h[i] >> 24);
		out[4 * i + 1] = (unsigned char) (s->h[i] >> 16);
		out[4 * i + 2] = (unsigned char) (s->h[i] >> 8);
		out[4 * i + 3] = (unsigned char) s->h[i];
	}
}

void
ap_sha256(const void *data, size_t n, unsigned char out[AP_SHA256_BYTES])
{
	Sha256		s;

	sha256_init(&s);
	sha256_update(&s, data, n);
	sha256_final(&s, out);
}

/* ---------------- HMAC-SHA-256 ---------------- */

/* HMAC over the concatenation of up to three parts (NULL parts are skipped). */
static void
hmac3(const void *key, size_t keylen, const void *p1, size_t n1, const void *p2, size_t n2,
	  const void *p3, size_t n3, unsigned char out[AP_SHA256_BYTES])
{
	unsigned char k[64];
	unsigned char pad[64];
	unsigned char inner[AP_SHA256_BYTES];
	Sha256		s;

	memset(k, 0, sizeof(k));
	if (keylen > 64)
		ap_sha256(key, keylen, k);
	else if (keylen > 0)
		memcpy(k, key, keylen);

	for (int i = 0; i < 64; i++)
		pad[i] = k[i] ^ 0x36;
	sha256_init(&s);
	sha256_update(&s, pad, 64);
	if (p1 != NULL)
		sha256_update(&s, p1, n1);
	if (p2 != NULL)
		sha256_update(&s, p2, n2);
	if (p3 != NULL)
		sha256_update(&s, p3, n3);
	sha256_final(&s, inner);

	for (int i = 0; i < 64; i++)
		pad[i] = k[i] ^ 0x5c;
	sha256_init(&s);
	sha256_update(&s, pad, 64);
	sha256_update(&s, inner, sizeof(inner));
	sha256_final(&s, out);
	memset(k, 0, sizeof(k));
	memset(pad, 0, sizeof(pad));
}

void
ap_hmac_sha256(const void *key, size_t keylen, const void *data, size_t n,
			   unsigned char out[AP_SHA256_BYTES])
{
	hmac3(key, keylen, data, n, NULL, 0, NULL, 0, out);
}

/* ---------------- the handshake's proofs ---------------- */

void
ap_auth_proof(const char *secret, bool from_server,
			  const unsigned char client_nonce[AP_AUTH_NONCE_BYTES],
			  const unsigned char server_nonce[AP_AUTH_NONCE_BYTES],
			  unsigned char out[AP_SHA256_BYTES])
{
	static const char server_label[] = "active_pg diskd proof";
	static const char client_label[] = "active_pg host proof";

	if (from_server)
		hmac3(secret, strlen(secret), server_label, sizeof(server_label) - 1,
			  client_nonce, AP_AUTH_NONCE_BYTES, server_nonce, AP_AUTH_NONCE_BYTES, out);
	else
		hmac3(secret, strlen(secret), client_label, sizeof(client_label) - 1,
			  server_nonce, AP_AUTH_NONCE_BYTES, client_nonce, AP_AUTH_NONCE_BYTES, out);
}

bool
ap_auth_equal(const unsigned char *a, const unsigned char *b, size_t n)
{
	unsigned char diff = 0;

	for (size_t i = 0; i < n; i++)
		diff |= (unsigned char) (a[i] ^ b[i]);
	return diff == 0;
}
