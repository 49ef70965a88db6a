"""Non-blocking link to a meshcat server, and fast msgpack encoding of meshcat commands.

The meshcat server answers every command on a zmq REP socket. We talk to it through a
DEALER socket so that commands are pipelined: a frame is queued with non-blocking sends
and the replies are collected later. The caller never waits for the server (except
where it asks to, with a timeout), so a browser that never connects, or a stalled
server, cannot block the simulation.
"""
from __future__ import annotations

import time
import warnings

import numpy as np
import umsgpack
import zmq


class ViewerConnectionError(ConnectionError):
    """The meshcat server cannot be reached or does not answer."""


# ------------------------------------------------------------------ encoding
def pack(cmd):
    """msgpack bytes of a lowered meshcat command (dict)."""
    return umsgpack.packb(cmd)


def transform_prefix(path):
    """Constant head of a ``set_transform`` message for `path`: map header, type, path,
    and the ``matrix`` key with the header of an array of 16 floats."""
    return (b"\x83" + umsgpack.packb("type") + umsgpack.packb("set_transform")
            + umsgpack.packb("path") + umsgpack.packb(path)
            + umsgpack.packb("matrix") + b"\xdc\x00\x10")


def pack_transforms(prefixes, T):
    """Encode ``set_transform`` commands for n paths at once.

    prefixes: n byte strings from `transform_prefix`; T: (n, 4, 4) homogeneous matrices.
    Returns n msgpack messages whose ``matrix`` is the column-major list of 16 doubles,
    the same bytes umsgpack would produce for ``SetTransform(T[i], path).lower()``.
    """
    n = len(prefixes)
    cols = np.ascontiguousarray(np.transpose(T, (0, 2, 1)).reshape(n, 16), dtype=">f8")
    body = np.empty((n, 16, 9), dtype=np.uint8)
    body[:, :, 0] = 0xCB
    body[:, :, 1:] = cols.view(np.uint8).reshape(n, 16, 8)
    raw = body.reshape(n, 144)
    return [prefixes[i] + raw[i].tobytes() for i in range(n)]


# ------------------------------------------------------------------ channel
class Channel:
    """A DEALER socket speaking meshcat's REQ/REP protocol without waiting for replies.

    `send` queues a command and returns at once; `poll` collects the replies that have
    arrived; `flush(timeout)` waits for all outstanding replies. If more than
    `max_outstanding` replies are missing (the server is slow or gone), `send` drops
    the command and returns False.
    """

    def __init__(self, zmq_url, timeout=10.0, max_outstanding=4000):
        self.zmq_url = zmq_url
        self.timeout = float(timeout)
        self.context = zmq.Context.instance()
        self.socket = self.context.socket(zmq.DEALER)
        self.socket.setsockopt(zmq.LINGER, 0)
        self.socket.setsockopt(zmq.SNDHWM, max_outstanding + 100)
        self.socket.connect(zmq_url)
        self.outstanding = 0
        self.max_outstanding = int(max_outstanding)
        self.dropped = 0
        self.errors = []
        self._warned = False
        self.closed = False

    def request(self, *frames, timeout=5.0):
        """Send a command and wait (at most `timeout` s) for its reply; returns the reply bytes."""
        if not self.flush(timeout):
            raise ViewerConnectionError(f"meshcat server at {self.zmq_url} did not answer within {timeout} s")
        self.socket.send_multipart([b"", *frames])
        self.outstanding += 1
        reply = self._recv(timeout)
        if reply is None:
            raise ViewerConnectionError(f"meshcat server at {self.zmq_url} did not answer within {timeout} s")
        return reply

    def send(self, kind, path, data, reliable=False):
        """Queue one meshcat command. A frame update (reliable=False) never waits: it is
        dropped (returns False) when the server lags. A reliable command (scene objects,
        properties, animations) waits up to `timeout` for the server to catch up, then
        raises ViewerConnectionError."""
        if not self._make_room(1, reliable):
            return False
        try:
            self.socket.send_multipart([b"", kind.encode(), path.encode(), data],
                                       flags=0 if reliable else zmq.NOBLOCK)
        except zmq.Again:
            self._drop()
            return False
        self.outstanding += 1
        return True

    def send_many(self, kind, paths, datas, reliable=False):
        """Queue several commands of one kind (paths as bytes), all or nothing: without
        `reliable`, returns False at once (nothing sent) when the server lags."""
        if not self._make_room(len(datas), reliable):
            return False
        k = kind.encode()
        sock = self.socket
        flags = 0 if reliable else zmq.NOBLOCK
        for p, d in zip(paths, datas):
            sock.send_multipart([b"", k, p, d], flags=flags)   # room is ensured by SNDHWM > max_outstanding
            self.outstanding += 1
        return True

    def _make_room(self, n, reliable):
        """Room for n more outstanding commands: False if closed, or (not reliable) when the
        server lags (the frame is dropped); a reliable command waits up to `timeout`, then
        raises ViewerConnectionError."""
        if self.closed:
            return False
        self.poll()
        if self.outstanding + n > self.max_outstanding:
            if not reliable:
                self._drop(stacklevel=5)
                return False
            if not self.flush(self.timeout):
                raise ViewerConnectionError(f"meshcat server at {self.zmq_url} did not answer within "
                                            f"{self.timeout} s")
        return True

    def _drop(self, stacklevel=4):
        self.dropped += 1
        if not self._warned:
            self._warned = True
            warnings.warn(f"meshcat server at {self.zmq_url} is not keeping up (or is gone): "
                          f"dropping viewer frames; the simulation is not slowed", RuntimeWarning,
                          stacklevel=stacklevel)

    def _recv(self, timeout):
        if self.socket.poll(int(max(timeout, 0) * 1000), zmq.POLLIN):
            frames = self.socket.recv_multipart()
            self.outstanding -= 1
            reply = frames[-1]
            if reply.startswith(b"error"):
                self.errors.append(reply.decode(errors="replace"))
            return reply
        return None

    def poll(self):
        """Collect the replies that have arrived, without waiting."""
        sock = self.socket
        while self.outstanding > 0:
            try:
                frames = sock.recv_multipart(flags=zmq.NOBLOCK)
            except zmq.Again:
                break
            self.outstanding -= 1
            if frames[-1].startswith(b"error"):
                self.errors.append(frames[-1].decode(errors="replace"))

    def flush(self, timeout=5.0):
        """Wait until every queued command is acknowledged; False on timeout."""
        end = time.monotonic() + timeout
        while self.outstanding > 0:
            if self._recv(end - time.monotonic()) is None:
                return False
        return True

    def close(self):
        if not self.closed:
            self.socket.close(linger=0)
            self.closed = True


def pack_floats32(a):
    """A float32 typed array for the meshcat JS decoder (msgpack ext 0x17)."""
    return umsgpack.Ext(0x17, np.ascontiguousarray(a, dtype="<f4").tobytes())

