"""PoRep-shaped circuits: an R1CS builder with gadget templates replicated as arrays, the
gadgets (bits, SHA-256, Poseidon, Merkle inclusion), the ``porep`` circuit family (Filecoin's
StackedCircuit statement) with its presets, parent graph and synthetic-sector jobs, and witness
generation in numba.

Entry points:
- :func:`engine.circuit.porep.build_porep` (preset or params, cache dir) → CircuitShape, whose
  ``r1cs`` has the input constraints applied; :func:`engine.circuit.porep.count_porep` counts
  its constraints without assembling matrices;
- :func:`engine.circuit.porep.generate_partitions` (preset, seed) → sector and partitions;
- :class:`engine.circuit.statement.PorepStatement` → the public inputs a verifier derives from
  the sector's commitments and the seeds (challenges, parent positions);
- :func:`engine.circuit.porep.porep_witness` (shape, partition) → (public ints, z Montgomery);
- engine/synthesis.py: evaluation of a, b, c, ``synthesize_partition`` and ``bench_synth``.
"""
