"""How the workers of a cluster run exchange a round's messages: directly, not through Dask.

A :class:`Session` is one job's set of workers, ranked ``0 .. k-1``; it lives in each worker
process (:data:`SESSIONS`), is made once and kept for later jobs on the same workers, as
raft-dask keeps its communicators. It holds

* a :class:`Mesh`: one TCP connection between every two ranks, opened once. Each connection
  carries length-prefixed frames: a round's data, or a heartbeat that a thread of its own sends
  every ``heartbeat_s`` while the rank computes. A rank waiting for a peer gives up when the peer
  closed its end (a lost worker) or sent nothing at all for ``peer_timeout_s`` (a stopped one),
  so a run never waits for ever;
* on GPU workers, an NCCL communicator (``cupy.cuda.nccl``), made from a unique id that rank 0
  creates: the round's counts go round in one all-gather and the messages move device to
  device in one group of sends and receives.

:func:`exchange` is the round: every rank contributes, for each partition it owns, the
partition's round vector and how many messages it sends to every partition, and the messages
themselves; every rank gets back every partition's vector (so the all-reduce sums them in
partition order, the same order as in-process) and the messages for its own partitions, ordered
by sending partition.
"""

from __future__ import annotations

import queue
import socket
import struct
import threading
import time

import numpy as np

from ..errors import ClusterError
from .program import Messages

__all__ = ["PeerError", "Mesh", "Session", "SESSIONS", "exchange", "wait_for"]

_HEADER = struct.Struct("<QB")  # payload length, frame type
_DATA, _HEARTBEAT, _HELLO = 0, 1, 2
_RECV_CHUNK = 1 << 22


class PeerError(ClusterError):
    """A peer of the run was lost (closed its connection) or stopped answering.

    ``worker`` is the peer's Dask address and ``stopped`` tells a silent peer from a lost one.
    """

    def __init__(self, message: str, worker: str = "", stopped: bool = False):
        super().__init__(message)
        self.worker = worker
        self.stopped = stopped

    def __reduce__(self):
        return (type(self), (self.args[0], self.worker, self.stopped))


class _Peer:
    """One connection: a reader thread puts data frames in ``inbox`` and notes when anything came."""

    def __init__(self, sock: socket.socket, rank: int, worker: str):
        self.sock = sock
        self.rank = rank
        self.worker = worker
        self.inbox: queue.Queue = queue.Queue()
        self.last_seen = time.monotonic()
        self.closed = False
        self.send_lock = threading.Lock()
        self.reader = threading.Thread(target=self._read, name=f"mgmatch-peer-{rank}", daemon=True)

    def _recv_exact(self, n: int) -> bytearray:
        buf = bytearray(n)
        view = memoryview(buf)
        got = 0
        while got < n:
            k = self.sock.recv_into(view[got:], min(n - got, _RECV_CHUNK))
            if k == 0:
                raise ConnectionError("closed")
            got += k
            self.last_seen = time.monotonic()
        return buf

    def _read(self):
        try:
            while True:
                length, kind = _HEADER.unpack(self._recv_exact(_HEADER.size))
                self.last_seen = time.monotonic()
                if kind == _DATA:
                    self.inbox.put(self._recv_exact(length) if length else bytearray())
        except (OSError, ConnectionError, struct.error):
            self.closed = True
            self.inbox.put(None)  # wakes a waiting receiver

    def send(self, kind: int, *buffers) -> None:
        length = sum(memoryview(b).nbytes for b in buffers)
        with self.send_lock:
            self.sock.sendall(_HEADER.pack(length, kind))
            for b in buffers:
                if memoryview(b).nbytes:
                    self.sock.sendall(b)


class Mesh:
    """TCP connections from this rank to every other rank of a session (see the module notes)."""

    def __init__(self, rank: int, workers: list[str], listener: socket.socket, config):
        self.rank = rank
        self.workers = workers
        self.listener = listener
        self.config = config
        self.peers: dict[int, _Peer] = {}
        self.aborted = threading.Event()
        self._stop = threading.Event()
        self._heartbeat = None

    def connect(self, addresses: list[str]) -> None:
        """Connect to the lower ranks' listeners and accept the higher ranks (the kernel queues
        a connection before it is accepted, so every rank may connect first)."""
        deadline = time.monotonic() + self.config.connect_timeout_s
        for j in range(self.rank):
            host, port = addresses[j].rsplit(":", 1)
            while True:
                try:
                    sock = socket.create_connection((host, int(port)), timeout=5.0)
                    break
                except OSError as exc:
                    if time.monotonic() > deadline:
                        raise PeerError(f"cannot connect to worker {self.workers[j]}: {exc}", self.workers[j]) from None
                    time.sleep(0.05)
            sock.sendall(_HEADER.pack(self.rank, _HELLO))
            self._add(j, sock)
        self.listener.settimeout(1.0)
        while len(self.peers) < len(self.workers) - 1:
            if time.monotonic() > deadline:
                missing = [self.workers[j] for j in range(len(self.workers)) if j != self.rank and j not in self.peers]
                raise PeerError(f"worker {', '.join(missing)} did not join the run within "
                                f"{self.config.connect_timeout_s:g} s", missing[0], stopped=True)
            try:
                sock, _ = self.listener.accept()
            except socket.timeout:
                continue
            sock.settimeout(5.0)
            rank, kind = _HEADER.unpack(_recv_all(sock, _HEADER.size))
            if kind != _HELLO or not 0 <= rank < len(self.workers) or rank in self.peers:
                sock.close()
                continue
            self._add(rank, sock)
        self._heartbeat = threading.Thread(target=self._beat, name="mgmatch-heartbeat", daemon=True)
        self._heartbeat.start()

    def _add(self, rank: int, sock: socket.socket) -> None:
        sock.settimeout(None)
        sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        peer = _Peer(sock, rank, self.workers[rank])
        self.peers[rank] = peer
        peer.reader.start()

    def _beat(self) -> None:
        while not self._stop.wait(self.config.heartbeat_s):
            for peer in list(self.peers.values()):
                if not peer.closed:
                    try:
                        peer.send(_HEARTBEAT)
                    except OSError:
                        peer.closed = True

    def check(self, peer: _Peer | None = None) -> None:
        """Raise :class:`PeerError` if the run was aborted, or a peer is gone or silent."""
        if self.aborted.is_set():
            raise ClusterError("the run was aborted")
        now = time.monotonic()
        for p in [peer] if peer is not None else self.peers.values():
            if p.closed and p.inbox.empty():
                raise PeerError(f"lost worker {p.worker}: its connection closed", p.worker)
            if now - p.last_seen > self.config.peer_timeout_s:
                raise PeerError(f"worker {p.worker} sent nothing for {self.config.peer_timeout_s:g} s "
                                "(stopped or hung); giving up on it", p.worker, stopped=True)

    def send(self, rank: int, *buffers) -> None:
        peer = self.peers[rank]
        try:
            peer.send(_DATA, *buffers)
        except OSError as exc:  # the peer's end closed: it ended (failed) or was lost
            peer.closed = True
            self.check(peer)
            # (check is silent while the peer's last frames, or the reader's mark of the close,
            # wait in its inbox; the send's own error is a lost peer all the same, so that the
            # client reports the failure that ended that peer rather than this broken pipe)
            raise PeerError(f"lost worker {peer.worker}: {exc}", peer.worker) from None

    def recv(self, rank: int) -> bytearray:
        peer = self.peers[rank]
        while True:
            try:
                item = peer.inbox.get(timeout=min(0.5, self.config.heartbeat_s))
            except queue.Empty:
                self.check(peer)
                continue
            if item is None:
                peer.inbox.put(None)  # stays closed for later calls
                self.check(peer)
                raise PeerError(f"lost worker {peer.worker}", peer.worker)
            return item

    def close(self) -> None:
        self._stop.set()
        for peer in self.peers.values():
            try:
                peer.sock.shutdown(socket.SHUT_RDWR)
            except OSError:
                pass
            peer.sock.close()
        try:
            self.listener.close()
        except OSError:
            pass


def _recv_all(sock: socket.socket, n: int) -> bytes:
    out = b""
    while len(out) < n:
        chunk = sock.recv(n - len(out))
        if not chunk:
            raise ConnectionError("closed")
        out += chunk
    return out


class Session:
    """One job's workers as seen from one of them: its rank, the mesh and, on GPUs, NCCL."""

    def __init__(self, sid: str, rank: int, workers: list[str], listener: socket.socket):
        self.sid = sid
        self.rank = rank
        self.workers = workers
        self.listener = listener
        self.mesh: Mesh | None = None
        self.nccl = None
        self.lock = threading.Lock()

    @property
    def size(self) -> int:
        return len(self.workers)

    def ready(self, addresses: list[str], config, nccl_id=None) -> None:
        """Open the connections (first job of the session) and, on GPUs, the NCCL communicator."""
        if self.mesh is None:
            mesh = Mesh(self.rank, self.workers, self.listener, config)
            mesh.connect(addresses)
            self.mesh = mesh
        self.mesh.config = config
        if nccl_id is not None and self.nccl is None and self.size > 1:
            from cupy.cuda import nccl  # noqa: PLC0415

            self.nccl = nccl.NcclCommunicator(self.size, nccl_id, self.rank)

    def abort(self) -> None:
        if self.mesh is not None:
            self.mesh.aborted.set()
        if self.nccl is not None:
            try:
                self.nccl.abort()
            except Exception:  # noqa: BLE001 - aborting a broken communicator may fail too
                pass
            self.nccl = None

    def close(self) -> None:
        self.abort()
        if self.mesh is not None:
            self.mesh.close()
        else:
            self.listener.close()


#: Sessions of this worker process, by id.
SESSIONS: dict[str, Session] = {}


def open_session(sid: str, workers: list[str], me: str, host: str) -> str:
    """Listen for the session's connections (on the worker's own host); the ``host:port``."""
    rank = workers.index(me)
    listener = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    listener.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    listener.bind((host, 0))
    listener.listen(len(workers))
    SESSIONS[sid] = Session(sid, rank, list(workers), listener)
    return f"{host}:{listener.getsockname()[1]}"


def close_session(sid: str) -> None:
    session = SESSIONS.pop(sid, None)
    if session is not None:
        session.close()


# ------------------------------------------------------------------------------ the round
def _block(own: list[int], vectors: dict, sizes: dict, n_parts: int, width: int) -> np.ndarray:
    """This rank's part of the round's all-gather: per owned partition ``p`` one row
    ``[p, vector..., messages to partition 0..P-1]``; unused rows hold ``p = -1``."""
    rows = np.full((len(own), 1 + width + n_parts), 0.0)
    for i, p in enumerate(own):
        rows[i, 0] = p
        rows[i, 1 : 1 + width] = vectors[p]
        rows[i, 1 + width :] = sizes[p]
    return rows


def exchange(session: Session, own: list[int], owner_rank: np.ndarray, vectors: dict, outgoing: dict,
             n_parts: int, xp) -> tuple[np.ndarray, dict]:
    """One round's exchange (see the module notes).

    ``vectors[p]`` is partition ``p``'s round vector, ``outgoing[p][q]`` its messages to
    partition ``q`` (on this rank or another). Returns the ``(P, width)`` matrix of every
    partition's vector and ``{q: [Messages, ...]}`` for this rank's partitions, by sending
    partition.
    """
    width = len(next(iter(vectors.values())))
    sizes = {p: np.array([len(outgoing[p].get(q, ())) for q in range(n_parts)], dtype=np.float64) for p in own}
    block = _block(own, vectors, sizes, n_parts, width)
    if session.nccl is not None and xp is not np:
        blocks, payloads = _exchange_nccl(session, own, owner_rank, block, outgoing, n_parts, width, xp)
    else:
        blocks, payloads = _exchange_tcp(session, own, owner_rank, block, outgoing, n_parts, width, xp)
    # every partition's vector in partition order; the messages for my partitions by sender
    table = np.concatenate(blocks)
    table = table[table[:, 0] >= 0]
    order = np.argsort(table[:, 0], kind="stable")
    table = table[order]
    vectors_all = table[:, 1 : 1 + width]
    inbox = {q: [] for q in own}
    for p in own:  # local deliveries
        for q in own:
            m = outgoing[p].get(q)
            if m is not None and len(m):
                inbox[q].append((p, m))
    for src_rank, (src_rows, words) in payloads.items():
        at = 0
        for q in own:  # the sender wrote, for each of my partitions q, each of its partitions' batch
            for row in src_rows:
                k = int(row[1 + width + q])
                if k:
                    inbox[q].append((int(row[0]), Messages.from_words(words[at : at + 5 * k])))
                    at += 5 * k
    return vectors_all, {q: [m for _, m in sorted(batches, key=lambda x: x[0])] for q, batches in inbox.items()}


def _payload(own_src: list[int], dest: list[int], outgoing: dict, xp):
    """The messages from my partitions to ``dest``'s partitions, as one word array: for each
    destination ``q`` in order, each of my partitions' batch in order."""
    pieces = [outgoing[p][q].to_words().reshape(-1) for q in dest for p in own_src
              if outgoing[p].get(q) is not None and len(outgoing[p][q])]
    if not pieces:
        return xp.empty(0, dtype=xp.int64)
    return pieces[0] if len(pieces) == 1 else xp.concatenate(pieces)


def _exchange_tcp(session, own, owner_rank, block, outgoing, n_parts, width, xp):
    mesh = session.mesh
    parts_of = {r: [q for q in range(n_parts) if owner_rank[q] == r] for r in range(session.size)}
    for r in mesh.peers:
        words = _payload(own, parts_of[r], outgoing, xp)
        words = words.get() if xp is not np else words
        header = np.array([block.shape[0], block.shape[1]], dtype=np.int64)
        mesh.send(r, header, np.ascontiguousarray(block), np.ascontiguousarray(words))
    blocks = [block]
    payloads = {}
    for r in sorted(mesh.peers):
        frame = mesh.recv(r)
        rows, cols = np.frombuffer(frame, dtype=np.int64, count=2)
        rows_block = np.frombuffer(frame, dtype=np.float64, count=rows * cols, offset=16).reshape(rows, cols)
        words = np.frombuffer(frame, dtype=np.int64, offset=16 + 8 * rows * cols)
        blocks.append(rows_block)
        payloads[r] = (rows_block, xp.asarray(words) if xp is not np else words)
    return blocks, payloads


def _exchange_nccl(session, own, owner_rank, block, outgoing, n_parts, width, xp):
    """Counts by one all-gather (read back: the round's one host synchronisation), then the
    messages by one group of sends and receives, left in flight on the stream."""
    import cupy  # noqa: PLC0415
    from cupy.cuda import nccl  # noqa: PLC0415

    comm, k, rank = session.nccl, session.size, session.rank
    rows_max = int(np.bincount(owner_rank, minlength=k).max())
    cols = block.shape[1]
    padded = np.full((rows_max, cols), 0.0)
    padded[:, 0] = -1
    padded[: block.shape[0]] = block
    stream = cupy.cuda.get_current_stream()
    send = cupy.asarray(padded)
    recv = cupy.empty((k, rows_max, cols), dtype=cupy.float64)
    comm.allGather(send.data.ptr, recv.data.ptr, send.size, nccl.NCCL_FLOAT64, stream.ptr)
    gathered = _wait_and_get(session, recv, stream)
    blocks = [gathered[r] for r in range(k)]
    parts_of = {r: [q for q in range(n_parts) if owner_rank[q] == r] for r in range(k)}
    expected = {}
    for r in range(k):
        if r == rank:
            continue
        rows = gathered[r][gathered[r][:, 0] >= 0]
        count = int(sum(rows[:, 1 + width + q].sum() for q in own))
        expected[r] = (rows, count)
    sends = {r: _payload(own, parts_of[r], outgoing, xp) for r in range(k) if r != rank}
    received = {r: cupy.empty(5 * c, dtype=cupy.int64) for r, (_, c) in expected.items()}
    nccl.groupStart()
    for r in range(k):
        if r == rank:
            continue
        if sends[r].size:
            comm.send(sends[r].data.ptr, sends[r].size, nccl.NCCL_INT64, r, stream.ptr)
        if received[r].size:
            comm.recv(received[r].data.ptr, received[r].size, nccl.NCCL_INT64, r, stream.ptr)
    nccl.groupEnd()
    session.in_flight = sends  # kept alive until the stream has sent them
    payloads = {r: (expected[r][0], received[r]) for r in expected}
    return blocks, payloads


def _wait_and_get(session, recv, stream) -> np.ndarray:
    """Copy ``recv`` to the host once the stream gets there (see :func:`wait_for`)."""
    import cupy  # noqa: PLC0415

    event = cupy.cuda.Event(block=False, disable_timing=True)
    event.record(stream)
    wait_for(session, lambda: event.done)
    return cupy.asnumpy(recv, stream=stream)


#: Interval of the peer checks while a rank waits for its device.
_CHECK_EVERY_S = 0.005


def wait_for(session, done) -> None:
    """Return once ``done()`` is true, watching the peers meanwhile: a collective whose peer
    died or stopped never completes, so the communicator is aborted and the peer's error raised.

    ``done`` is polled without a pause for the first ``spin_wait_s`` of the session's
    configuration, then with short sleeps. A round waits here for its own kernels and for its
    slower peer, a few milliseconds; a sleep between two polls overshoots by about 0.2 ms, which
    a round would pay every time (docs/performance.md, "Waiting for the device")."""
    mesh = session.mesh
    start = time.monotonic()
    check_at = start + _CHECK_EVERY_S
    while not done():
        now = time.monotonic()
        if now >= check_at:
            check_at = now + _CHECK_EVERY_S
            try:
                mesh.check()
            except Exception:
                session.abort()
                raise
        waited = now - start
        if waited > mesh.config.spin_wait_s:
            time.sleep(0.0002 if waited < 1.0 else 0.002)
