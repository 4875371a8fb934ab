"""The default values of the GPU tunables of the matchings, Louvain and bipartite matching.

A run reads its tunables from its parameter object (``MatchingConfig``, ``LouvainConfig``,
``BipartiteConfig``, whose docstrings say what each does and why its default), passed down to
the GPU code as ``tune``; these constants are those objects' defaults. They live apart from the GPU modules so
that the parameter objects, made at import, do not load the kernels' sources and the CPU twins
that the GPU modules import.
"""

from __future__ import annotations

# ----------------------------------------------------------------------------- matchings
#: GPU-Suitor: vertices a warp takes per chunk. Naim et al. (GPU Suitor, HiPC 2015) found 8 best
#: on Kepler; on a recent GPU the count matters little, with 8 among the fastest
#: (docs/performance.md, section "GPU Suitor: warps and blocks"), since lanes are idle only
#: while a warp's vertices differ in how often they retry.
VERTICES_PER_WARP = 8
#: GPU-Suitor: threads per block (4 warps); the block size matters little (docs/performance.md,
#: section "GPU Suitor: warps and blocks").
THREADS_PER_BLOCK = 128
#: Strongest-neighbour step of handshaking: ``"warp"`` (warp per row) or ``"scan"`` (segmented
#: max-scan, one stride per launch, then collate).
HANDSHAKE_VARIANT = "warp"
#: GPU-Suitor keys: ``None`` chooses 128-bit keys on GPUs of compute capability 9.0 and newer
#: (no weight-rank sort), ``False`` forces the 64-bit rank keys (any GPU).
WIDE_KEYS = None
#: b-Suitor: most proposals chosen per row scan (a vertex with more free slots scans again).
MAX_B_PER_SCAN = 16

# ------------------------------------------------------------------------------- Louvain
# The phase driver's.

#: Bytes of global memory the edge-balanced kernels' hash tables may take at once
#: (``table_budget_bytes``).
GLOBAL_TABLE_BUDGET = 512 * 2**20
#: An edge-balanced warp takes 32 x this many consecutive edges or table slots (``range_steps``).
RANGE_STEPS = 8

# The fused kernel's (``LouvainConfig``'s fields of the same names in lower case).

#: ``fused_max_vertices``: most vertices of a graph that the fused kernel takes.
FUSED_MAX_VERTICES = 1 << 20
#: ``fused_cluster`` and ``fused_threads``: blocks of the cluster and threads per block.
FUSED_CLUSTER = 16
FUSED_THREADS = 1024
#: ``fused_range_steps``: an edge-balanced warp of the aggregation takes at least 32 x this many
#: edges or slots.
FUSED_RANGE_STEPS = 1
#: ``fused_solo_edges``: the levels of at most this many stored edges run on one block.
FUSED_SOLO_EDGES = 4096
#: ``fused_solo_threads``: threads of that block (``None``: ``fused_threads``).
FUSED_SOLO_THREADS = 512
#: ``fused_mid_vertices``: levels after level 0 of at most this many vertices run in the second
#: cluster kernel.
FUSED_MID_VERTICES = 8192
#: ``fused_solo_bytes``: shared memory for the one block's copy of a level (``None``: all there is).
FUSED_SOLO_BYTES = None
#: ``fused_level_bytes`` and ``fused_level_rows``: the levels' rows that the kernel writes.
FUSED_LEVEL_BYTES = 64 << 20
FUSED_LEVEL_ROWS = 32
#: ``fused_view_bytes``: rows of at most this many bytes stay in the pinned buffer.
FUSED_VIEW_BYTES = 4 << 20
#: ``fused_table_slots`` and ``fused_table_min_slots``: the first try's aggregation tables.
FUSED_TABLE_SLOTS = 1.0
FUSED_TABLE_MIN_SLOTS = 1 << 12
#: ``fused_hub_bytes``, ``fused_hub_min_bytes`` and ``fused_hub_max_edges``: the hubs' tables.
FUSED_HUB_BYTES = 8.0
FUSED_HUB_MIN_BYTES = 4 << 20
FUSED_HUB_MAX_EDGES = 1 << 21

# ---------------------------------------------------------------------- bipartite matching
#: The compile-time settings of the persistent kernel that a run may change (the ``#ifndef``
#: settings of kernels/bipartite.cu), each with its least and largest value (None: no bound): the
#: edges a lane takes per step, whether a column's level is read before the compare-and-swap that
#: claims it, and the longest pause of a warp waiting on the work queue, in nanoseconds (an
#: unsigned int; 0: none).
PERSISTENT_SETTINGS = {"MGM_EDGES_PER_LANE": (1, 8), "MGM_CLAIM_TEST": (0, 1),
                       "MGM_QUEUE_BACKOFF_NS": (0, 2**32 - 1)}

#: Persistent launches: threads per block.
PERSISTENT_BLOCK = 512
#: Persistent launches: at most this many resident blocks per multiprocessor.
PERSISTENT_BLOCKS_PER_SM = 2
#: Lanes per frontier column of the persistent kernel (4, 8, 16 or 32); None: from the mean degree.
PERSISTENT_GROUP = None
#: Block 0 runs the levels alone while the frontier fits this many rounds of its groups.
PERSISTENT_LOCAL = 2
#: APFB's search as one work queue: True, False, or None (by the mean degree).
PERSISTENT_QUEUE = None
#: None picks the work queue up to this mean column degree.
QUEUE_MAX_MEAN_DEGREE = 8
#: Lanes per frontier column of the work queue.
QUEUE_GROUP = 4
#: The work queue takes the phases that start with at most this many roots, the others run level
#: by level; None: every phase. A bound gained a little on meshes but lost more on a grid with
#: edges deleted, whose phases keep thousands of roots for long (docs/performance.md, section
#: "Bipartite matching on the GPU: launch modes and thresholds"). So it is off by default.
QUEUE_MAX_ROOTS = None
#: Compile-time settings of the persistent kernel as ``(name, value)`` pairs (names of
#: ``PERSISTENT_SETTINGS``), e.g. ``(("MGM_EDGES_PER_LANE", 1),)``; empty: the kernel's defaults.
PERSISTENT_DEFINES = ()
#: Blocks of the deterministic kernels' launches; None: a constant-thread grid (as "ct"). Their
#: result does not depend on it.
DETERMINISTIC_BLOCKS = None
