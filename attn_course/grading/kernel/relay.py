"""The relay: the one process that holds a grading kernel's ZeroMQ sockets, one per kernel.

Why a process of its own: ZeroMQ caps each part of a message (``MAX_MESSAGE_BYTES``), not
the number of parts, and hands a multi-part message over only once its last part has come,
so whoever holds the sockets may have to hold a message of millions of parts before any
count sees it. That is the relay, never the grader: it limits its own address space to
``ADDRESS_SPACE`` (RLIMIT_AS) before it connects, and the grader starts it in the kernel's
own cgroups where it can make them (``sandbox.memory_cgroup``, ``share_cgroups``), so that
its memory and CPU are charged to that student. A message past its limit ends it (malloc
fails and libzmq aborts); the grader sees its output end and stops the kernel, as for a
flood (``Flooded``).

What reaches the grader is bounded here, before anything is decoded (``Inbox``), and the
relay passes on only what the grader's protocol uses, over its stdin and stdout, in frames
of a kind byte and a length (``write_frame``, ``read_frame``; at most ``MAX_FRAME_BYTES``
towards the grader):

=====  =====================================  =========================================
kind   from the grader (stdin)                from the relay (stdout)
=====  =====================================  =========================================
``Q``  a message to send: JSON ``channel``,
       ``msg_id`` (the request whose answers
       to read, or null), ``replies``,
       ``parts``; then that many ``P`` frames
``S``                                         the request ``msg_id`` started: what
                                              follows answers it
``R``                                         its execute or kernel_info reply (JSON
                                              ``msg_type`` and ``content``)
``I``                                         the kernel is idle after it
``A``                                         an agent reply's base64 text (empty for
                                              every one after the first)
``F``                                         a flood (a sentence): the relay ends
=====  =====================================  =========================================

The relay reads the kernel's sockets only while a request is open (from ``S`` until its
reply and idle status are passed on), as the grader did before the relay: between requests
ZeroMQ holds ``RECEIVE_QUEUE`` messages per socket and the rest wait in the kernel.
"""

from __future__ import annotations

import collections
import hashlib
import hmac
import json
import os
import resource
import select
import struct
import subprocess
import sys
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

__all__ = ["REPLY_MIME", "Flooded", "Inbox", "Relay", "read_frame", "write_frame"]

REPLY_MIME = "application/x.attn-course-reply"  # the agent's replies (display_data)
MAX_MESSAGE_BYTES = 96 << 20  # ZeroMQ drops (and disconnects) any larger message part
RECEIVE_QUEUE = 4  # messages ZeroMQ holds for the relay per socket; the rest wait in the kernel
MAX_REQUEST_BYTES = 256 << 20  # raw bytes one request (a cell, a check's call) may send in all
MAX_HEADER_BYTES = 4096  # a message's header or parent header, else it is dropped unread
MAX_STATUS_BYTES = 4096  # the content of a status message, else dropped unread
MAX_EXECUTE_REPLY_BYTES = 4 << 20  # the content of an execute reply (a traceback), else dropped
MAX_REQUEST_MESSAGES = 50_000  # messages one request may send in all (each header is read)
MAX_MESSAGE_PARTS = 64  # parts of one message (a Jupyter message has 6, and its buffers)
MAX_DRAIN = 1000  # messages read per look at the output channel
# The relay's address space: about 190 MB for Python, pyzmq and their threads, and room for
# the messages of a request within its caps (RECEIVE_QUEUE parts of MAX_MESSAGE_BYTES, copies)
ADDRESS_SPACE = 2 << 30
MAX_FRAME_BYTES = MAX_MESSAGE_BYTES + (1 << 20)  # a frame to the grader: one part's text, at most
_FRAME = struct.Struct("!cQ")  # a frame's kind and the length of what follows
_DELIMITER = b"<IDS|MSG>"
# The agent's reply as ipykernel serializes it (publish_display_data): recognised by its
# form, never parsed as JSON, since display data can be JSON that is slow to parse.
_REPLY_HEAD = b'{"data": {"' + REPLY_MIME.encode() + b'": "'
_REPLY_TAIL = b'"}, "metadata": {}, "transient": {}}'
_IMPORT_ROOT = Path(__file__).resolve().parents[3]  # the folder that holds attn_course/
ENDED = (
    "sent more than the process that reads its messages may hold (a message of very many "
    "or very large parts), and was stopped"
)


def write_frame(fd: int, kind: bytes, payload: bytes | memoryview = b"") -> None:
    """One frame to ``fd`` (a blocking pipe)."""
    for data in (_FRAME.pack(kind, len(payload)), payload):
        view = memoryview(data)
        while view:
            view = view[os.write(fd, view) :]


def _read_exactly(fd: int, size: int) -> bytearray:
    data = bytearray(size)
    view, at = memoryview(data), 0
    while at < size:
        got = os.readv(fd, [view[at:]])
        if not got:
            raise EOFError("the pipe ended")
        at += got
    return data


def read_frame(fd: int, limit: int) -> tuple[bytes, bytearray]:
    """The next frame's kind and payload from ``fd``; EOFError at the end of the pipe or for a
    frame over ``limit`` bytes (nothing of it read)."""
    kind, size = _FRAME.unpack(_read_exactly(fd, _FRAME.size))
    if size > limit:
        raise EOFError(f"a frame of {size} bytes, over the limit")
    return kind, _read_exactly(fd, size)


class Relay:
    """The grader's end of one kernel's relay: starts it, sends it messages, reads what
    answers the request open (``start``); ``Flooded`` when it reports a flood or ends."""

    def __init__(self, connection: Path, ip: str, groups: Sequence[Path | None] = ()):
        """``connection``: the kernel's connection file; ``ip``: its sockets' path prefix, as
        the grader sees it; ``groups``: the cgroups the relay joins before it starts."""
        from . import sandbox

        argv = [sys.executable, "-m", __name__, str(connection), ip, str(ADDRESS_SPACE)]
        paths = os.pathsep.join(filter(None, [str(_IMPORT_ROOT), os.getenv("PYTHONPATH")]))
        self.process = subprocess.Popen(
            sandbox.joined(groups, argv),
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.DEVNULL,
            env={**os.environ, "PYTHONPATH": paths},
            bufsize=0,
            start_new_session=True,
        )
        assert self.process.stdin is not None and self.process.stdout is not None
        self._in, self._out = self.process.stdin.fileno(), self.process.stdout.fileno()
        os.set_blocking(self._in, False)  # written between reads: never blocks the grader
        self._msg_id, self._started = b"", True
        self._pending: collections.deque[tuple[bytes, bytearray]] = collections.deque()
        self._ended: str | None = None

    def start(self, channel: str, parts: list[bytes], msg_id: str, replies: bool) -> None:
        """Send ``parts`` (a signed message) on ``channel``, and from now on pass on only
        what answers ``msg_id`` (the agent's replies too where ``replies``)."""
        self._msg_id, self._started = msg_id.encode(), False
        self._pending.clear()
        self._send(channel, parts, msg_id, replies)

    def send(self, channel: str, parts: list[bytes]) -> None:
        """Send ``parts`` on ``channel``; answers to it are not read (an interrupt)."""
        self._send(channel, parts, None, False)

    def _send(self, channel: str, parts: list[bytes], msg_id: str | None, replies: bool) -> None:
        if self._ended is not None:
            raise Flooded(self._ended)
        head = {"channel": channel, "msg_id": msg_id, "replies": replies, "parts": len(parts)}
        frames = [(b"Q", json.dumps(head).encode()), *((b"P", part) for part in parts)]
        data = memoryview(b"".join(_FRAME.pack(k, len(p)) + p for k, p in frames))
        while data:  # reads what the relay writes meanwhile: neither side waits on the other
            readable, writable, _ = select.select([self._out], [self._in], [])
            if readable:
                self._read_one()
            if writable:
                try:
                    data = data[os.write(self._in, data[: 1 << 16]) :]
                except BlockingIOError:
                    pass
                except BrokenPipeError:  # ended: said by the next read
                    return

    def _read_one(self) -> None:
        if self._ended is None:
            try:
                kind, payload = read_frame(self._out, MAX_FRAME_BYTES)
            except EOFError:
                self._ended = ENDED
            else:
                if kind == b"F":
                    self._ended = payload.decode("utf-8", "replace")
                elif self._started:
                    self._pending.append((kind, payload))
                elif kind == b"S" and payload == self._msg_id:
                    self._started = True  # what came before answered an earlier request
        if self._ended is not None:
            raise Flooded(self._ended)

    def event(self, timeout: float) -> tuple[bytes, bytearray] | None:
        """The next frame that answers the open request (kind, payload), or None after
        ``timeout`` seconds; ``Flooded`` when the relay reported a flood or ended."""
        until = time.monotonic() + timeout
        while not self._pending:
            remaining = max(0.0, until - time.monotonic())
            if not select.select([self._out], [], [], remaining)[0]:
                return None
            self._read_one()
        return self._pending.popleft()

    def close(self) -> None:
        """Kill the relay (and wait for it); never raises."""
        try:
            self.process.kill()
            self.process.wait(timeout=10)
        except (OSError, subprocess.TimeoutExpired):
            pass
        for stream in (self.process.stdin, self.process.stdout):
            try:
                stream.close()  # type: ignore[union-attr]
            except OSError:
                pass


class Flooded(Exception):
    """A request brought in more than its caps allow, or the relay ended: the kernel is
    stopped."""


class Inbox:
    """What one request reads from the kernel's sockets, counted in raw bytes before decoding.

    Every message part is counted as ZeroMQ hands it over, one part at a time
    (``copy=False``: not even copied); past MAX_REQUEST_BYTES or MAX_REQUEST_MESSAGES for the
    request, or MAX_MESSAGE_PARTS in one message, ``Flooded`` is raised.
    Only the message types the protocol uses are decoded (``status`` on the output channel,
    ``execute_reply`` and ``kernel_info_reply`` on the shell channel), only when their small
    header and parent header (read first, each capped) say they answer this request, and only
    within their size caps; everything else (streams, errors, comm messages, other requests'
    messages, oversized headers) is dropped unread. Display data is never parsed: when
    ``replies`` is set (a check's request to the agent; never for a learner's cell) the
    agent's reply is recognised by its exact form (``_REPLY_HEAD``...``_REPLY_TAIL``, a
    base64 text between), the first is kept and every later one is counted as another
    answer (``""``, which makes the request's reply malformed) without being read, so the
    grader keeps at most one reply per request. Any other display data (a learner's plot) is
    dropped unread.
    """

    def __init__(self, session: Any, msg_id: str, replies: bool):
        self.session, self.msg_id, self.want_replies = session, msg_id, replies
        self.received = 0  # raw bytes of every message part, decoded or not
        self.messages = 0
        self.replies: list[str] = []
        self.idle = False  # the kernel said it is idle after this request: outputs all in

    def _receive(self, socket: Any) -> tuple[str, list] | None:
        """The next message's type and parts after the delimiter, if it answers this
        request and its header and parent header are within their caps; else None."""
        import zmq

        self.messages += 1
        parts: list[Any] = []
        more = True
        while more:  # part by part: a message of too many parts is stopped at the cap
            part = socket.recv(0 if parts else zmq.NOBLOCK, copy=False)
            more = bool(socket.getsockopt(zmq.RCVMORE))
            parts.append(part)
            self.received += len(part)
            if self.received > MAX_REQUEST_BYTES or self.messages > MAX_REQUEST_MESSAGES:
                raise Flooded(
                    f"sent more than {MAX_REQUEST_BYTES >> 20} MiB or "
                    f"{MAX_REQUEST_MESSAGES:,} messages for one request, and was stopped"
                )
            if len(parts) > MAX_MESSAGE_PARTS:
                raise Flooded(
                    f"sent a message of more than {MAX_MESSAGE_PARTS:,} parts, and was stopped"
                )
        at = next(
            (i for i, part in enumerate(parts[:8]) if len(part) == len(_DELIMITER)
             and part.bytes == _DELIMITER),
            None,
        )  # fmt: skip
        parts = parts[at + 1 :] if at is not None else []
        if len(parts) < 5 or max(len(parts[1]), len(parts[2])) > MAX_HEADER_BYTES:
            return None
        try:
            header, parent = json.loads(parts[1].bytes), json.loads(parts[2].bytes)
            kind, answers = header.get("msg_type"), parent.get("msg_id")
        except (ValueError, AttributeError):
            return None
        return (kind, parts) if answers == self.msg_id and isinstance(kind, str) else None

    def _decode(self, parts: list) -> dict | None:
        try:
            return self.session.deserialize(parts, content=True, copy=False)
        except Exception:  # unsigned, a replayed signature, not JSON: dropped
            return None

    def drain(self, socket: Any) -> None:
        """Read what waits on the output channel (MAX_DRAIN messages at most)."""
        for _ in range(MAX_DRAIN):
            if not socket.poll(0):
                return
            found = self._receive(socket)
            if found is None:
                continue
            kind, parts = found
            size = len(parts[4])
            if kind == "status" and size <= MAX_STATUS_BYTES:
                msg = self._decode(parts)
                if msg is not None and msg["content"].get("execution_state") == "idle":
                    self.idle = True
            elif kind == "display_data" and self.want_replies:
                text = self._reply_text(parts, whole=not self.replies)
                if text is not None:
                    self.replies.append("" if self.replies else text)

    def _reply_text(self, parts: list, whole: bool) -> str | None:
        """The base64 text of an agent reply (``whole``: checked and copied; else only its
        form's ends are looked at), or None for other display data; nothing is parsed."""
        content = parts[4]
        size, head, tail = len(content), len(_REPLY_HEAD), len(_REPLY_TAIL)
        view = memoryview(content)
        if size < head + tail or view[:head] != _REPLY_HEAD or view[size - tail :] != _REPLY_TAIL:
            return None
        if not whole:
            return ""
        text = content.bytes[head : size - tail]
        if b'"' in text or b"\\" in text or not self._signed(parts):
            return None
        try:
            return text.decode("ascii")
        except UnicodeDecodeError:
            return None

    def _signed(self, parts: list) -> bool:
        if self.session.auth is None:
            return True
        check = self.session.sign([part.buffer for part in parts[1:5]])
        return hmac.compare_digest(parts[0].bytes, check)

    def read_reply(self, socket: Any) -> dict | None:
        """The next shell message, decoded if it is this request's reply, else None."""
        found = self._receive(socket)
        if found is None or found[0] not in ("execute_reply", "kernel_info_reply"):
            return None
        if len(found[1][4]) > MAX_EXECUTE_REPLY_BYTES:
            return None
        return self._decode(found[1])


class Verifier:
    """What ``Inbox`` needs of jupyter_client's ``Session``, without importing it (half of a
    relay's start): a message's HMAC-SHA256 signature checked, and used once, and its four
    JSON parts decoded (the Jupyter wire protocol)."""

    def __init__(self, key: bytes):
        self.auth = hmac.new(key, digestmod=hashlib.sha256) if key else None
        self.seen: set[bytes] = set()  # the signatures of the messages decoded

    def sign(self, parts: Sequence) -> bytes:
        assert self.auth is not None
        digest = self.auth.copy()
        for part in parts:
            digest.update(part)
        return digest.hexdigest().encode()

    def deserialize(self, parts: list, content: bool = True, copy: bool = False) -> dict:
        """``parts``: ZeroMQ frames from the signature on; ValueError if it is not signed
        with the key or was seen before."""
        signature = parts[0].bytes
        if self.auth is not None:
            if signature in self.seen:
                raise ValueError("a replayed signature")
            if not hmac.compare_digest(signature, self.sign([p.buffer for p in parts[1:5]])):
                raise ValueError("not signed with the kernel's key")
            self.seen.add(signature)
        header, parent, metadata, body = (json.loads(p.bytes) for p in parts[1:5])
        return {
            "header": header,
            "msg_id": header["msg_id"],
            "msg_type": header["msg_type"],
            "parent_header": parent,
            "metadata": metadata,
            "content": body,
        }


def serve(connection: str, ip: str, address_space: str) -> None:
    """The relay's loop (``python -m attn_course.grading.kernel.relay CONNECTION IP BYTES``):
    its address space limited to ``address_space`` bytes first."""
    limit = int(address_space)
    resource.setrlimit(resource.RLIMIT_AS, (limit, limit))
    import zmq

    info = json.loads(Path(connection).read_text())
    if info["signature_scheme"] != "hmac-sha256":
        raise ValueError(f"the relay checks hmac-sha256 signatures, not {info['signature_scheme']}")
    session = Verifier(info["key"].encode())
    context = zmq.Context()
    context.setsockopt(zmq.MAXMSGSIZE, MAX_MESSAGE_BYTES)
    context.setsockopt(zmq.RCVHWM, RECEIVE_QUEUE)
    context.setsockopt(zmq.LINGER, 0)
    sockets = {}
    for name, kind in (("shell", zmq.DEALER), ("control", zmq.DEALER), ("iopub", zmq.SUB)):
        sockets[name] = context.socket(kind)
        if kind == zmq.SUB:
            sockets[name].setsockopt(zmq.SUBSCRIBE, b"")
        sockets[name].connect(f"ipc://{ip}-{info[f'{name}_port']}")
    shell, iopub = sockets["shell"], sockets["iopub"]
    waiting, reading = zmq.Poller(), zmq.Poller()  # for the grader; and for the kernel too
    for poller in (waiting, reading):
        poller.register(0, zmq.POLLIN)
    reading.register(shell, zmq.POLLIN)
    reading.register(iopub, zmq.POLLIN)
    inbox: Inbox | None = None
    passed, idle, replied = 0, False, False  # of the open request: passed on so far
    try:
        while True:
            ready = dict((reading if inbox is not None else waiting).poll())
            if 0 in ready:
                try:
                    _, head = read_frame(0, 1 << 40)  # the grader: trusted
                    command = json.loads(head)
                    parts = [read_frame(0, 1 << 40)[1] for _ in range(command["parts"])]
                except EOFError:
                    return  # the grader has gone, or stopped the kernel
                sockets[command["channel"]].send_multipart(parts)
                if command["msg_id"] is not None:
                    inbox = Inbox(session, command["msg_id"], command["replies"])
                    passed, idle, replied = 0, False, False
                    write_frame(1, b"S", command["msg_id"].encode())
            if inbox is None:
                continue
            if iopub in ready:
                inbox.drain(iopub)
            if shell in ready:
                reply = inbox.read_reply(shell)
                if reply is not None:
                    found = {"msg_type": reply["msg_type"], "content": reply["content"]}
                    write_frame(1, b"R", json.dumps(found, ensure_ascii=False).encode())
                    replied = True
            for text in inbox.replies[passed:]:
                write_frame(1, b"A", text.encode("ascii"))
            passed = len(inbox.replies)
            if inbox.idle and not idle:
                write_frame(1, b"I")
                idle = True
            if idle and replied:
                inbox = None  # the request's answers are all in: nothing more is read
    except Flooded as flood:
        write_frame(1, b"F", str(flood).encode())
    except BrokenPipeError:
        pass
    finally:
        context.destroy(linger=0)


if __name__ == "__main__":
    serve(*sys.argv[1:4])
