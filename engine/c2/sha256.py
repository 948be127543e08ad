"""SHA-256 as bellperson's gadget computes it, and the SHA-256 gadgets of Filecoin's circuit: the
label (create_label.rs) and a tree_d node (filecoin-hashers' Sha256Function circuits).

One compression block (bellperson sha256.rs ``sha256_compression_function``: the message
schedule, 64 rounds with the additions of a and e deferred into one addmany each, the final
additions, all through one MultiEq that is flushed when the block ends) is one template call, so
its variables and rows come out together, as bellperson's do; constant bits of the block and of
the state fold inside it, and the template is traced once per pattern of constant bits.
"""

from __future__ import annotations

from engine.c2 import num
from engine.c2.boolean import (
    FR_CAPACITY,
    MultiEq,
    Word,
    addmany,
    const_word,
    rotr,
    shr,
    wch,
    wmaj,
    word_from_bits_be,
    wxor,
)
from engine.c2.cs import Synth
from engine.circuit.sha256 import IV, K
from engine.circuit.template import Bit, Tracer

TOTAL_PARENTS = 37
"""Parent labels a label hashes (stacked/vanilla's TOTAL_PARENTS)."""


def compress(tr: Tracer, block: list[Bit], state: list[Word]) -> list[Word]:
    """``sha256_compression_function`` over a 512-bit block (message order) from ``state``."""
    meq = MultiEq(tr)
    w = [word_from_bits_be(block[32 * i : 32 * i + 32]) for i in range(16)]
    for i in range(16, 64):
        s0 = wxor(tr, wxor(tr, rotr(w[i - 15], 7), rotr(w[i - 15], 18)), shr(w[i - 15], 3))
        s1 = wxor(tr, wxor(tr, rotr(w[i - 2], 17), rotr(w[i - 2], 19)), shr(w[i - 2], 10))
        w.append(addmany(tr, meq, [w[i - 16], s0, w[i - 7], s1]))
    a_ops: list[Word] | None = None
    e_ops: list[Word] | None = None
    a, b, c, d, e, f, g, h = state
    for i in range(64):
        if e_ops is not None:
            e = addmany(tr, meq, e_ops)
        s1 = wxor(tr, wxor(tr, rotr(e, 6), rotr(e, 11)), rotr(e, 25))
        chw = wch(tr, e, f, g)
        temp1 = [h, s1, chw, const_word(K[i]), w[i]]
        if a_ops is not None:
            a = addmany(tr, meq, a_ops)
        s0 = wxor(tr, wxor(tr, rotr(a, 2), rotr(a, 13)), rotr(a, 22))
        mj = wmaj(tr, a, b, c)
        h, g, f = g, f, e
        e_ops = temp1 + [d]
        d, c, b = c, b, a
        a_ops = temp1 + [s0, mj]
    assert a_ops is not None and e_ops is not None
    out = [
        addmany(tr, meq, a_ops + [state[0]]),
        addmany(tr, meq, [state[1], b]),
        addmany(tr, meq, [state[2], c]),
        addmany(tr, meq, [state[3], d]),
        addmany(tr, meq, e_ops + [state[4]]),
        addmany(tr, meq, [state[5], f]),
        addmany(tr, meq, [state[6], g]),
        addmany(tr, meq, [state[7], h]),
    ]
    meq.close()
    return out


def _compress_body(tr: Tracer, bits: list[Bit]) -> list[Bit]:
    state = [bits[512 + 32 * i : 512 + 32 * i + 32] for i in range(8)]
    return [b for word in compress(tr, bits[:512], state) for b in word]


def sha256(s: Synth, message: list[Bit]) -> list[Bit]:
    """bellperson's ``sha256``: constant padding, then one compression call per block from the
    constant IV. Returns the digest's 256 bits, big-endian within each word (``into_bits_be``)."""
    if len(message) % 8:
        raise ValueError("sha256 input must be whole bytes")
    length = len(message)
    padded = list(message) + [Bit.const(1)]
    while (len(padded) + 64) % 512:
        padded.append(Bit.const(0))
    padded += [Bit.const((length >> i) & 1) for i in range(63, -1, -1)]
    state = [b for v in IV for b in const_word(v)]
    for off in range(0, len(padded), 512):
        state = compression(s, padded[off : off + 512], state)
    return [b for i in range(8) for b in reversed(state[32 * i : 32 * i + 32])]


def compression(s: Synth, block: list[Bit], state: list[Bit]) -> list[Bit]:
    """One ``sha256_compression_function`` as one template call: ``block`` is 512 bits in
    message order, ``state`` the 8 words' 256 bits, each word least significant bit first (as
    ``UInt32.bits``); returns the new state the same way. Constant, negated and repeated bits
    fold inside the template as bellperson folds them."""
    if len(block) != 512 or len(state) != 256:
        raise ValueError(
            f"a compression takes 512 block bits and 256 state bits, not {len(block)} and {len(state)}"
        )
    return s.call("sha256-block", list(block) + list(state), _compress_body)


def reverse_bit_numbering(bits: list[Bit]) -> list[Bit]:
    """storage-proofs-core util.rs: pad to whole bytes with constant zeros, then reverse the bit
    order inside each byte."""
    padded = list(bits) + [Bit.const(0)] * (-len(bits) % 8)
    return [b for i in range(0, len(padded), 8) for b in reversed(padded[i : i + 8])]


def create_label(s: Synth, replica_id: list[Bit], parents: list[list[Bit]], layer: int,
                 node: list[Bit]) -> int:
    """``create_label_circuit``: SHA-256 of replica_id (padded to 256 bits), the layer as a u32
    (constant, big-endian), the node (a UInt64's 64 bits, big-endian) and zeros to 64 bytes, then
    the 37 parent entries (each padded to 256 bits); the digest's bits byte-reversed and the first
    CAPACITY packed into one number (``multipack::pack_bits``). ``node`` is the UInt64's bits,
    least significant first."""
    if len(parents) != TOTAL_PARENTS:
        raise ValueError(f"a label hashes {TOTAL_PARENTS} parent entries, not {len(parents)}")
    if not 32 <= len(replica_id) <= 256 or len(node) != 64 or not 0 <= layer < 1 << 32:
        raise ValueError("a label takes 32 to 256 replica_id bits, a u32 layer and a 64-bit node")
    msg = list(replica_id) + [Bit.const(0)] * (-len(replica_id) % 256)
    msg += [Bit.const((layer >> i) & 1) for i in range(31, -1, -1)]
    msg += list(reversed(node))
    msg += [Bit.const(0)] * (512 - len(msg))
    for p in parents:
        msg += list(p) + [Bit.const(0)] * (-len(p) % 256)
    if len(msg) != (2 + TOTAL_PARENTS) * 256:
        raise ValueError("a label message is 1,248 bytes")
    bits = reverse_bit_numbering(sha256(s, msg))
    return num.pack_bits(s, bits[:FR_CAPACITY])


def tree_d_node(s: Synth, children: list[int], height: int = 0) -> int:
    """``Sha256Function::hash_multi_leaf_circuit``: each child unpacked (``to_bits_le``),
    padded to whole bytes and byte-reversed, SHA-256 of the concatenation, the digest's bits
    byte-reversed and the first CAPACITY packed (``hash_circuit``). ``height`` is unused, as in
    Filecoin."""
    del height
    bits: list[Bit] = []
    for child in children:
        bits += reverse_bit_numbering(num.to_bits_le(s, child))
    return hash_circuit(s, bits)


def hash_leaf_bits(s: Synth, left: list[Bit], right: list[Bit]) -> int:
    """``Sha256Function::hash_leaf_bits_circuit``: two bit strings, each padded to whole bytes
    and byte-reversed, hashed as one message (``hash_circuit``). Not in the StackedCircuit; it is
    the gadget behind util.rs' 45,387-constraint test."""
    return hash_circuit(s, reverse_bit_numbering(left) + reverse_bit_numbering(right))


def hash_circuit(s: Synth, bits: list[Bit]) -> int:
    """``Sha256Function::hash_circuit``: SHA-256 of ``bits``, the digest byte-reversed to its
    little-endian bit order and its first CAPACITY bits packed into one number: the digest
    truncated to a field element as Filecoin's ``trim_to_fr32`` does natively."""
    digest = reverse_bit_numbering(sha256(s, bits))
    return num.pack_bits(s, digest[:FR_CAPACITY])
