"""SHA-256 as a gadget over boolean wires, and the byte/bit conventions shared with the native
side (hashlib).

Bit orders:
- a *stream* is the message as SHA-256 reads it: bit 0 is the most significant bit of byte 0;
- a *word* is 32 :class:`Bit`, index 0 the least significant bit;
- a field element's *LE bits* are its integer bits, bit 0 least significant; as bytes it is
  32 bytes little-endian (Filecoin's Fr encoding).

Filecoin turns a digest into a field element by clearing the two top bits of the last byte
(``digest[31] &= 0x3f``) and reading the 32 bytes little-endian: :func:`truncate_digest` and, in
the circuit, :func:`digest_to_field`.
"""

from __future__ import annotations

import hashlib

from engine.circuit.bits import Word, add_words, ch, const_word, maj, pack, xor3
from engine.circuit.template import Bit, Tracer

K = (
    0x428A2F98, 0x71374491, 0xB5C0FBCF, 0xE9B5DBA5, 0x3956C25B, 0x59F111F1, 0x923F82A4, 0xAB1C5ED5,
    0xD807AA98, 0x12835B01, 0x243185BE, 0x550C7DC3, 0x72BE5D74, 0x80DEB1FE, 0x9BDC06A7, 0xC19BF174,
    0xE49B69C1, 0xEFBE4786, 0x0FC19DC6, 0x240CA1CC, 0x2DE92C6F, 0x4A7484AA, 0x5CB0A9DC, 0x76F988DA,
    0x983E5152, 0xA831C66D, 0xB00327C8, 0xBF597FC7, 0xC6E00BF3, 0xD5A79147, 0x06CA6351, 0x14292967,
    0x27B70A85, 0x2E1B2138, 0x4D2C6DFC, 0x53380D13, 0x650A7354, 0x766A0ABB, 0x81C2C92E, 0x92722C85,
    0xA2BFE8A1, 0xA81A664B, 0xC24B8B70, 0xC76C51A3, 0xD192E819, 0xD6990624, 0xF40E3585, 0x106AA070,
    0x19A4C116, 0x1E376C08, 0x2748774C, 0x34B0BCB5, 0x391C0CB3, 0x4ED8AA4A, 0x5B9CCA4F, 0x682E6FF3,
    0x748F82EE, 0x78A5636F, 0x84C87814, 0x8CC70208, 0x90BEFFFA, 0xA4506CEB, 0xBEF9A3F7, 0xC67178F2,
)  # fmt: skip
IV = (0x6A09E667, 0xBB67AE85, 0x3C6EF372, 0xA54FF53A, 0x510E527F, 0x9B05688C, 0x1F83D9AB, 0x5BE0CD19)

FIELD_MASK_254 = (1 << 254) - 1


def truncate_digest(digest: bytes) -> int:
    """Filecoin's digest → Fr: clear the two top bits of byte 31, read little-endian."""
    if len(digest) != 32:
        raise ValueError("a SHA-256 digest is 32 bytes")
    return int.from_bytes(digest, "little") & FIELD_MASK_254


def sha256_field(data: bytes) -> int:
    """SHA-256 of ``data`` truncated to a field element (< 2^254)."""
    return truncate_digest(hashlib.sha256(data).digest())


def pad_length(nbytes: int) -> int:
    """Length in bytes of a padded message of nbytes."""
    return (nbytes + 9 + 63) // 64 * 64


def padding_stream(nbytes: int) -> list[Bit]:
    """The constant padding bits appended to an nbytes message (0x80, zeros, 64-bit length)."""
    pad = b"\x80" + b"\0" * (pad_length(nbytes) - nbytes - 9) + (8 * nbytes).to_bytes(8, "big")
    return [Bit.const((byte >> (7 - j)) & 1) for byte in pad for j in range(8)]


def le_bits_to_stream(bits: list[Bit]) -> list[Bit]:
    """A little-endian integer's bits (len a multiple of 8) as the stream of its LE bytes."""
    if len(bits) % 8:
        raise ValueError("le_bits_to_stream needs whole bytes")
    out = [Bit.const(0)] * len(bits)
    for p, b in enumerate(bits):
        out[8 * (p // 8) + 7 - p % 8] = b
    return out


def stream_to_le_bits(stream: list[Bit]) -> list[Bit]:
    """Inverse of :func:`le_bits_to_stream`."""
    out = [Bit.const(0)] * len(stream)
    for p in range(len(stream)):
        out[p] = stream[8 * (p // 8) + 7 - p % 8]
    return out


def field_to_stream(bits254: list[Bit]) -> list[Bit]:
    """254 (or 255) LE bits of a field element as its 32-byte LE encoding (256 stream bits)."""
    if not 1 <= len(bits254) <= 256:
        raise ValueError("a field element has at most 256 bits")
    return le_bits_to_stream(bits254 + [Bit.const(0)] * (256 - len(bits254)))


def stream_to_words(stream: list[Bit]) -> list[Word]:
    if len(stream) % 32:
        raise ValueError("stream_to_words needs whole words")
    return [[stream[32 * j + 31 - i] for i in range(32)] for j in range(len(stream) // 32)]


def words_to_stream(words: list[Word]) -> list[Bit]:
    return [w[31 - i] for w in words for i in range(32)]


def _rotr(w: Word, n: int) -> Word:
    return [w[(i + n) % 32] for i in range(32)]


def _shr(w: Word, n: int) -> Word:
    return [w[i + n] if i + n < 32 else Bit.const(0) for i in range(32)]


def _xor3w(tr: Tracer, a: Word, b: Word, c: Word) -> Word:
    return [xor3(tr, a[i], b[i], c[i]) for i in range(32)]


def compress(tr: Tracer, state: list[Word], block: list[Word]) -> list[Word]:
    """One SHA-256 compression: 8 state words, 16 message words → 8 state words."""
    if len(state) != 8 or len(block) != 16:
        raise ValueError("SHA-256 compression takes 8 state words and 16 message words")
    w = list(block)
    for t in range(16, 64):
        s0 = _xor3w(tr, _rotr(w[t - 15], 7), _rotr(w[t - 15], 18), _shr(w[t - 15], 3))
        s1 = _xor3w(tr, _rotr(w[t - 2], 17), _rotr(w[t - 2], 19), _shr(w[t - 2], 10))
        w.append(add_words(tr, [s1, w[t - 7], s0, w[t - 16]]))
    a, b, c, d, e, f, g, h = state
    for t in range(64):
        big_s1 = _xor3w(tr, _rotr(e, 6), _rotr(e, 11), _rotr(e, 25))
        chw = [ch(tr, e[i], f[i], g[i]) for i in range(32)]
        big_s0 = _xor3w(tr, _rotr(a, 2), _rotr(a, 13), _rotr(a, 22))
        mj = [maj(tr, a[i], b[i], c[i]) for i in range(32)]
        new_e = add_words(tr, [d, h, big_s1, chw, w[t]], K[t])
        new_a = add_words(tr, [h, big_s1, chw, w[t], big_s0, mj], K[t])
        a, b, c, d, e, f, g, h = new_a, a, b, c, new_e, e, f, g
    return [add_words(tr, [s, v]) for s, v in zip(state, (a, b, c, d, e, f, g, h))]


def sha256_stream(tr: Tracer, stream: list[Bit]) -> list[Bit]:
    """SHA-256 of a message given as stream bits (whole bytes); padding is constant. Returns the
    digest as 256 stream bits."""
    if len(stream) % 8:
        raise ValueError("SHA-256 gadget hashes whole bytes")
    padded = stream + padding_stream(len(stream) // 8)
    state = [const_word(x) for x in IV]
    for blk in range(len(padded) // 512):
        state = compress(tr, state, stream_to_words(padded[512 * blk : 512 * (blk + 1)]))
    return words_to_stream(state)


def digest_to_field(tr: Tracer, digest_stream: list[Bit]) -> int:
    """Filecoin's truncation in the circuit: the digest's LE integer without its two top bits,
    packed into one fresh field wire."""
    return pack(tr, stream_to_le_bits(digest_stream)[:254])
