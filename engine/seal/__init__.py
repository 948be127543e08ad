"""Filecoin's sealing rules (registered proofs, SDR graph, labels, trees, vanilla proofs, C1)."""
