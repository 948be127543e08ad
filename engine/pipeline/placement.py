"""Where each GPU's synthesis workers run: the host's NUMA topology and a CPU set per GPU.

On a host with several sockets a GPU hangs off one of them (its PCI root complex), and a
synthesis worker that writes a partition's a, b, c on the far socket pays the interconnect twice
(its own memory traffic, then the prover's pread into pinned staging). So each GPU's synthesis
workers get the CPUs of its own NUMA node, split between the GPUs that share a node, and its
prover runs on the whole node, so the pinned staging buffers it allocates (first touched there)
are on the GPU's side of the interconnect.

The topology is read from sysfs (a root other than "/" lets the tests build a fake tree):
each GPU's PCI address (from NVML) names /sys/bus/pci/devices/<addr>/numa_node and
local_cpulist; /sys/devices/system/node/node<N>/cpulist gives each node's CPUs. Anything absent
(no NVML, no GPU, a VM that reports numa_node -1, no node directory) reads as "unknown": that GPU
gets every CPU this process may use, which is what a worker had before placement existed.

The engine's synthesis pool is shared by every GPU (a partition is matched to a prover only at
the GPU channel), so "a GPU's workers" means: worker N of the pool is placed on GPU N mod len(GPUs).
The pool therefore spreads over the nodes in proportion to the GPUs on them; a partition is not
routed to the GPU whose node synthesized it.
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path

PLACEMENTS = ("auto", "off")  # the engine.numa_placement setting


def parse_cpulist(text: str) -> tuple[int, ...]:
    """CPUs of a sysfs list such as "0-3,8,10-11" (sorted, no repeats); ValueError if malformed."""
    cpus: set[int] = set()
    for part in text.strip().split(","):
        part = part.strip()
        if not part:
            continue
        lo, sep, hi = part.partition("-")
        if not lo.isdigit() or (sep and not hi.isdigit()):
            raise ValueError(f"not a CPU list: {text.strip()!r}")
        first, last = int(lo), int(hi) if sep else int(lo)
        if last < first:
            raise ValueError(f"not a CPU list: {text.strip()!r}")
        cpus.update(range(first, last + 1))
    return tuple(sorted(cpus))


def cpulist_text(cpus: tuple[int, ...]) -> str:
    """``cpus`` written as sysfs writes a list ("0-3,8"); "none" for the empty set."""
    if not cpus:
        return "none"
    runs: list[list[int]] = [[cpus[0], cpus[0]]]
    for c in cpus[1:]:
        if c == runs[-1][1] + 1:
            runs[-1][1] = c
        else:
            runs.append([c, c])
    return ",".join(f"{a}-{b}" if a != b else str(a) for a, b in runs)


def _read(path: Path) -> str | None:
    try:
        return path.read_text()
    except OSError:
        return None


def node_cpus(root: str | os.PathLike[str] = "/") -> dict[int, tuple[int, ...]]:
    """{node: its CPUs} from <root>/sys/devices/system/node; {} where sysfs has no nodes."""
    base = Path(root, "sys/devices/system/node")
    out: dict[int, tuple[int, ...]] = {}
    try:
        entries = list(base.iterdir())
    except OSError:
        return out
    for d in entries:
        name = d.name
        if not (name.startswith("node") and name[4:].isdigit()):
            continue
        text = _read(d / "cpulist")
        if text is None:
            continue
        try:
            cpus = parse_cpulist(text)
        except ValueError:
            continue
        if cpus:  # a memory-only node has no CPUs to give
            out[int(name[4:])] = cpus
    return dict(sorted(out.items()))


def sysfs_pci(bus_id: str) -> str:
    """NVML's bus id ("00000000:17:00.0", upper case) in sysfs's form ("0000:17:00.0")."""
    domain, _, rest = bus_id.strip().lower().rpartition(":")
    head, _, tail = domain.rpartition(":")
    if head:  # domain:bus, then device.function
        return f"{int(head, 16):04x}:{tail}:{rest}"
    return f"0000:{domain}:{rest}" if domain else rest


def gpu_node(pci: str | None, root: str | os.PathLike[str] = "/"
             ) -> tuple[int | None, tuple[int, ...]]:
    """(NUMA node, local CPUs) of the PCI device ``pci``; (None, ()) for what sysfs does not say."""
    if not pci:
        return None, ()
    dev = Path(root, "sys/bus/pci/devices", sysfs_pci(pci))
    node: int | None = None
    text = _read(dev / "numa_node")
    if text is not None:
        try:
            n = int(text.strip())
            node = n if n >= 0 else None
        except ValueError:
            node = None
    local: tuple[int, ...] = ()
    text = _read(dev / "local_cpulist")
    if text is not None:
        try:
            local = parse_cpulist(text)
        except ValueError:
            local = ()
    return node, local


@dataclass(frozen=True)
class GpuPlace:
    """One GPU's place: its PCI address and node (None = unknown), the CPUs its synthesis
    workers get (its share of the node) and those its prover runs on (the whole node, so the
    pinned staging buffers it allocates and first touches are node-local)."""

    device: int | None
    pci: str | None
    node: int | None
    cpus: tuple[int, ...]
    node_cpus: tuple[int, ...] = ()


@dataclass(frozen=True)
class Placement:
    """The CPU set of each GPU (in device order), and the CPUs this process may use."""

    gpus: tuple[GpuPlace, ...]
    allowed: tuple[int, ...]
    nodes: int  # NUMA nodes with CPUs that sysfs lists (0 = it lists none)

    def worker_cpus(self, index: int) -> tuple[int, ...]:
        """CPUs of synthesis worker ``index``: those of GPU ``index mod len(gpus)``."""
        if not self.gpus:
            return self.allowed
        return self.gpus[index % len(self.gpus)].cpus

    def prover_cpus(self, device: int | None) -> tuple[int, ...] | None:
        """CPUs of ``device``'s prover: its node's; None where that is every allowed CPU (no
        binding to do) or the device is not in the plan."""
        for g in self.gpus:
            if g.device == device:
                cpus = g.node_cpus or g.cpus
                return None if set(cpus) == set(self.allowed) else cpus
        return None

    def describe(self) -> str:
        """One line for the session's progress: each GPU's node and CPU count."""
        parts = []
        for g in self.gpus:
            name = "cpu0" if g.device is None else f"gpu{g.device}"
            node = "N/A" if g.node is None else str(g.node)
            parts.append(f"{name} node {node} {len(g.cpus)} CPUs")
        return f"placement over {self.nodes or 1} NUMA node(s): " + ", ".join(parts)


def _split(cpus: tuple[int, ...], ways: int) -> list[tuple[int, ...]]:
    """``cpus`` in ``ways`` contiguous shares as even as can be (each at least one CPU)."""
    if ways <= 1 or not cpus:
        return [cpus] * max(1, ways)
    if ways > len(cpus):  # more GPUs than cores on the node: they share them all
        return [cpus] * ways
    q, r = divmod(len(cpus), ways)
    out, at = [], 0
    for i in range(ways):
        n = q + (1 if i < r else 0)
        out.append(cpus[at:at + n])
        at += n
    return out


def plan(devices: list[int | None], pci_of: dict[int, str | None],
         root: str | os.PathLike[str] = "/", allowed: tuple[int, ...] | None = None) -> Placement:
    """The placement of ``devices`` (None = the CPU backend's one prover) on the host that
    ``root``'s sysfs describes. ``pci_of`` maps a device to its PCI address (None = unknown);
    ``allowed`` is this process's CPUs (default: its affinity). A GPU's CPUs are its node's (or
    its local_cpulist where the node has no list) within ``allowed``, split among the GPUs on
    that node; a GPU whose node is unknown, or whose share falls outside ``allowed``, gets
    ``allowed``."""
    if allowed is None:
        allowed = tuple(sorted(os.sched_getaffinity(0)))
    allowed_set = set(allowed)
    nodes = node_cpus(root)
    found: list[tuple[int | None, str | None, int | None, tuple[int, ...]]] = []
    for dev in devices:
        pci = pci_of.get(dev) if dev is not None else None
        node, local = gpu_node(pci, root)
        base = nodes.get(node, local) if node is not None else local
        found.append((dev, pci, node, tuple(c for c in base if c in allowed_set)))
    # the GPUs that share a node (or the same local CPU list) split its cores in device order
    groups: dict[tuple[int, ...], list[int]] = {}
    for i, (_, _, node, cpus) in enumerate(found):
        if node is not None or cpus:
            groups.setdefault(cpus, []).append(i)
    shares: dict[int, tuple[int, ...]] = {}
    for cpus, members in groups.items():
        for i, share in zip(members, _split(cpus, len(members))):
            shares[i] = share
    gpus = tuple(GpuPlace(dev, pci, node, shares.get(i) or allowed, cpus or allowed)
                 for i, (dev, pci, node, cpus) in enumerate(found))
    return Placement(gpus, allowed, len(nodes))


def nvml_pci(devices: list[int | None]) -> dict[int, str | None]:
    """Each GPU's PCI bus id from NVML; None for one it cannot name (no driver, no GPU)."""
    from engine.telemetry.nvml import pci_bus_id

    return {d: pci_bus_id(d) for d in devices if d is not None}


def host_plan(devices: list[int | None], mode: str) -> Placement | None:
    """This host's placement of ``devices`` under setting ``mode`` ("off": None)."""
    if mode == "off":
        return None
    return plan(devices, nvml_pci(devices))


def bind_process(pid: int, cpus: tuple[int, ...]) -> None:
    """Bind every thread of process ``pid`` (just started by this one) to ``cpus``; threads it
    starts later inherit the binding from their creator. Passes until no new thread appears, as
    one may start while the others are being bound. Refusals (the process gone) are ignored."""
    done: set[int] = set()
    for _ in range(4):
        try:
            tids = {int(t) for t in os.listdir(f"/proc/{pid}/task")}
        except OSError:
            return
        if tids <= done:
            return
        for tid in sorted(tids - done):
            try:
                os.sched_setaffinity(tid, cpus)
            except OSError:
                pass
        done |= tids


def pin(cpus: tuple[int, ...] | list[int] | None) -> tuple[int, ...]:
    """Bind this process to ``cpus`` (within what it may use); the CPUs it now runs on. A set
    that shares nothing with the current affinity, or a kernel refusal, leaves it unchanged."""
    now = set(os.sched_getaffinity(0))
    want = set(cpus or ()) & now
    if want and want != now:
        try:
            os.sched_setaffinity(0, want)
        except OSError:
            pass
    return tuple(sorted(os.sched_getaffinity(0)))
