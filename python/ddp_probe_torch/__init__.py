"""Record a PyTorch DistributedDataParallel job in the ddp-probe trace format.

One line enables it::

    import ddp_probe_torch
    model = ddp_probe_torch.instrument(DDP(model))

or none, for a model a framework wraps (Hugging Face's Trainer, Accelerate, PyTorch
Lightning): ``ddp-probe run --auto-instrument train.py`` runs each rank as ``python -m
ddp_probe_torch.auto train.py`` (``auto.py``), which calls :func:`instrument_every_ddp` first.

Each rank then writes ``$DDP_PROBE_TRACE_DIR/rank-$RANK.jsonl`` (trace format
1.0, docs/trace-format.md) with the spans the reference DDP writes:

* ``step`` (from the DataLoader ``next`` that fetched its batch, else the
  DDP module's forward pre-hook, to the end of the optimizer step),
  ``data_wait`` (each ``next`` of a PyTorch DataLoader iterator on the
  training thread; a program without one has no ``data_wait`` and the
  summary says "not recorded"), ``forward`` (forward pre-hook to forward hook
  of the DDP module),
  ``backward`` (the gradient of the model's output is computed to the end of
  the autograd pass, before DDP waits for its all-reduces), ``optimizer``
  (global optimizer step pre/post hooks, so every optimizer counts);
* per bucket and step a ``bucket_ready`` span (first to last gradient of the
  bucket accumulated, from ``register_post_accumulate_grad_hook`` on every
  parameter; the bucket's parameters come from the ``GradBucket`` that DDP
  hands to its communication hook) and a ``collective`` span (``op``
  ``all_reduce``; with gloo it starts when DDP calls the communication hook
  and ends when the all-reduce's future completes; with NCCL on GPUs it
  comes from CUDA events and its duration from the process group's events
  on NCCL's stream, see :class:`CudaCollectiveTimer`; ``seq`` is the process group's sequence
  number of that all-reduce, equal on every rank; ``dtype`` and ``bytes`` are
  what the hook sent: half the bucket with fp16/bf16 compression);
* a ``collective`` span with ``op`` ``broadcast`` for DDP's broadcast of the
  module's buffers (BatchNorm statistics) before each forward;
* a ``grad_ready`` record (per-parameter ready offsets, for offline
  re-bucketing) on each of the first 12 steps and then on one step in 10 (a
  Python hook per parameter is the module's largest cost; on the other steps
  a ``bucket_ready`` window runs from the previous bucket's all-reduce call,
  ``args.from`` = ``"previous bucket"``), a ``buckets`` record whenever DDP's bucket layout changes
  (PyTorch rebuilds it after the first iteration), a ``samples`` counter per
  step (the first dimension of the first tensor given to forward, summed over
  the micro-batches of a ``no_sync`` accumulation), and an ``end`` record at
  exit.

``optimizer.step(closure)`` (PyTorch Lightning runs every step so): the forward
and backward run inside the optimizer's step hooks; the step they start is
marked, and its ``optimizer`` span runs from the later of the backward's end
and the last all-reduce's completion to the optimizer's post-hook.

Gradient accumulation: forwards under ``model.no_sync()`` belong to the step
that ends with the synchronised backward and the optimizer step; the
``bucket_ready`` windows and ``grad_ready`` offsets are the synchronised
micro-batch's. With ``static_graph=True`` DDP rebuilds its buckets before the
third iteration; the ``buckets`` record at step 2 tells the analysis that
steps 0-1 ran on the initial layout (both are warm-up). DDP delays the first
iteration's all-reduces to a callback after the backward; that step's
``bucket_ready`` windows and ``grad_ready`` offsets are written after it.

``torch.compile``: the hooks never enter Dynamo's graph, so they add no graph
break and no warning. For ``torch.compile(ddp_model)`` (before or after
``instrument``) the forward is timed by hooks on the compiled wrapper, which
run as plain Python around the compiled call, and the DDP module's own
forward hooks are removed; the other hooks run in eager code (autograd,
optimizer, DataLoader, DDP's reducer) and are marked for Dynamo to skip.

The communication hook: ``instrument`` registers one that divides by the
world size and all-reduces (what DDP does without a hook) at the first
forward. If the program calls ``model.register_comm_hook(state, hook)`` after
``instrument``, its hook is wrapped instead, so its own communication is
timed, with the dtype and bytes of the ``dist.all_reduce`` calls it makes. A
hook registered *before* ``instrument`` cannot be wrapped (DDP accepts one
hook only and does not let it be replaced): then a warning says so and
everything but the buckets' ``collective`` spans is recorded (the
``bucket_ready`` windows and ``grad_ready`` offsets come from the layout DDP's
reducer reports, read during the first steps); the summary says the bucket
all-reduces were not recorded. Built-in C++ hooks
(``register_builtin_comm_hook``) are not wrapped either.

When ``DDP_PROBE_TRACE_DIR`` is not set (the program does not run under
``ddp-probe run``) or ``DDP_PROBE_TRACE=0``, ``instrument`` logs one line and
returns the model unchanged: it records nothing. The header's run id is
``DDP_PROBE_RUN_ID`` (else ``TORCHELASTIC_RUN_ID``, else ``local``); ranks
come from torchrun's variables. Clock offsets between ranks are not measured:
the header says 0 (exact for ranks of one machine, which share a clock).

Cost: records are kept as whole JSON lines in memory and written with one
``os.write`` per batch of whole lines, by the training thread when its
queued records span 10 ms or 512 lines are waiting, by a daemon thread every
100 ms (so a hung rank's file is current), and at exit. A process killed
while it records leaves a file of complete lines, missing at most its last
10 ms batch. The CPU cost per step is measured by
``bench/torch/module_overhead.py``.

Flight-recorder dumps on request: under ``ddp-probe run`` (``DDP_PROBE_RUN_DIR``
set) the module writes ``control/rank-<R>.listening`` in the run directory
when it is imported (before ``instrument``, and also in a script that never
calls it), and a daemon thread of its own looks for ``control/dump-request``
every 100 ms. The
launcher writes that file before it stops the ranks of a hung job (its hang
watchdog), of a job whose other rank failed first, or of an interrupted one;
the thread then writes PyTorch's flight-recorder dump (unless PyTorch already
wrote one)
(``torch._C._distributed_c10d._dump_fr_trace()``, the pickle the NCCL watchdog
writes on a timeout) to ``<prefix><rank>`` (the prefix from
``TORCH_FR_DUMP_TEMP_FILE``, older name ``TORCH_NCCL_DEBUG_INFO_TEMP_FILE``),
writes the training thread's Python stack to ``logs/python-stack-rank-<R>.txt``
(where a rank the others wait for is: a checkpoint, an evaluation, its data
loader), flushes the trace and answers with ``control/rank-<R>.dumped`` (``ok
PATH`` or ``error: WHY``). This works while the training thread waits in a
collective (PyTorch releases the GIL in its waits), for gloo as for NCCL: gloo
itself never dumps on a timeout.

Only the standard library and torch are needed.
"""

import atexit
import collections
import functools
import hashlib
import json
import logging
import os
import re
import socket
import statistics
import sys
import threading
import time
import traceback
import types
import warnings
import weakref

import torch
import torch.distributed as dist

__all__ = ["instrument", "instrument_every_ddp", "TraceWriter", "DumpWatcher", "CudaCollectiveTimer", "FORMAT_VERSION"]

#: Version of the trace format this module writes.
FORMAT_VERSION = "1.0"

_LOG = logging.getLogger("ddp_probe_torch")
# The training thread writes its queued records once they span 10 ms (or 512
# lines wait), so a rank killed while it records loses at most its last 10 ms
# batch. The daemon thread writes what a rank that stopped recording (hung in
# a collective, in a long computation) left queued, and answers dump requests,
# every 100 ms: waking more often costs the training thread (the GIL changes
# hands; at a 10 ms period the tiny-step bench spent 100-250 us more per step).
_FLUSH_INTERVAL_S = 0.01
_FLUSH_LINES = 512
_DAEMON_PERIOD_S = 0.1

# Anchor a monotonic clock to the realtime clock once, so spans do not jump
# when NTP steps the clock (as probe::clock does).
_ANCHOR_NS = time.time_ns() - time.perf_counter_ns()


#: One encoder for every record (``json.dumps`` with options builds a new one per call).
_ENCODE = json.JSONEncoder(separators=(",", ":"), allow_nan=False).encode


# The hot paths read the clock inline (`_ANCHOR_NS + _PERF_NS()`): with the other
# trims of 2026-12-02 (one future value per collective, no thread-local writes
# without a GPU timer, the settled layout compared by identity), recording went
# from 279k to about 240k instructions per step on the tiny-step job
# (bench/torch/module_instructions.py, counted by valgrind; one run's count moves
# by up to +-2%, later runs gave 239k-263k; the README has the floor).
_PERF_NS = time.perf_counter_ns


def now_ns():
    """Nanoseconds since the Unix epoch on this process's anchored monotonic clock."""
    return _ANCHOR_NS + _PERF_NS()


def _say(message):
    """One informative line on stderr (the launcher prefixes it with the rank)."""
    print(f"ddp_probe_torch: {message}", file=sys.stderr, flush=True)


def _env_int(name, default):
    value = os.environ.get(name)
    if value is None or value.strip() == "":
        return default
    try:
        return int(value)
    except ValueError:
        raise ValueError(f"environment variable {name}={value!r} is not an integer") from None


class TraceWriter:
    """Appends whole JSON lines to one rank's trace file, buffered.

    Thread-safe: spans are recorded from the training thread, the autograd
    thread and the process group's completion threads.
    """

    def __init__(self, path, header):
        self.path = path
        self._lock = threading.Lock()
        self._lines = []
        self._last_flush = time.monotonic()
        self._closed = False
        #: Callables the daemon thread runs every flush interval (and ``close``
        #: once more), before writing: they may ``record``.
        self.pollers = []
        os.makedirs(os.path.dirname(path) or ".", exist_ok=True)
        self._fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC | os.O_APPEND, 0o644)
        # A forked child (a DataLoader worker whose dataset calls torch.save to cache samples)
        # inherits the file: it must write nothing into the rank's trace, and must not wait on
        # a lock another thread held at the fork.
        os.register_at_fork(after_in_child=self._forked)
        self.record(header)
        self.flush()
        self._thread = threading.Thread(target=self._flusher, name="ddp-probe-trace", daemon=True)
        self._thread.start()

    def _forked(self):
        self._lock = threading.Lock()
        self._lines = []
        self._closed = True
        self._fd = None

    def record(self, obj):
        """Queues one record (a dict); writes the batch when it is due."""
        self.record_line(_ENCODE(obj) + "\n")

    def span(self, kind, step, start, end):
        """Queues a span with only the common fields, formatted directly (all
        integers; a third of the cost of encoding a dict, measured by
        bench/torch/module_overhead.py)."""
        self.record_line(
            f'{{"type":"span","kind":"{kind}","step":{step},"start":{start},"end":{end}}}\n'
        )

    def record_line(self, line):
        """Queues one whole JSON line; writes the batch when it is due."""
        with self._lock:
            if self._closed:
                return
            self._lines.append(line)
            due = (
                len(self._lines) >= _FLUSH_LINES
                or time.monotonic() - self._last_flush >= _FLUSH_INTERVAL_S
            )
            if due:
                self._flush_locked()

    def flush(self):
        """Writes every queued line."""
        with self._lock:
            self._flush_locked()

    def _flush_locked(self):
        self._last_flush = time.monotonic()
        if not self._lines or self._fd is None:
            return
        data = "".join(self._lines).encode("utf-8")
        self._lines = []
        view = memoryview(data)
        while view:
            written = os.write(self._fd, view)
            view = view[written:]

    def _run_pollers(self, final=False):
        for poll in list(self.pollers):
            try:
                poll(final)
            except Exception as e:  # noqa: BLE001 - recording must not break training
                _LOG.debug("ddp_probe_torch: a poller failed: %s", e)

    def _flusher(self):
        while True:
            time.sleep(_DAEMON_PERIOD_S)
            self._run_pollers()
            with self._lock:
                if self._closed:
                    return
                if self._lines and time.monotonic() - self._last_flush >= _FLUSH_INTERVAL_S:
                    self._flush_locked()

    def close(self, status, message=None):
        """Writes the ``end`` record and closes the file (idempotent)."""
        if not self._closed:
            self._run_pollers(final=True)
        end = {"type": "end", "t": now_ns(), "status": status}
        if message:
            end["message"] = message
        with self._lock:
            if self._closed:
                return
            self._lines.append(_ENCODE(end) + "\n")
            self._flush_locked()
            self._closed = True
            os.close(self._fd)
            self._fd = None


class DumpWatcher:
    """Answers the launcher's flight-recorder dump request (see the module doc).

    ``poll`` runs on a daemon thread of its own (:func:`_watch_from_import`), so a
    request is seen while the training thread is blocked in a collective, and from
    the module's import on, before ``instrument`` or without it.
    """

    def __init__(self, run_dir, rank, train_thread=None):
        self.rank = rank
        self.train_thread = train_thread
        #: The trace that gets the dump's instant (``instrument`` sets it), or None.
        self.writer = None
        self.logs_dir = os.path.join(run_dir, "logs")
        control = os.path.join(run_dir, "control")
        self.request = os.path.join(control, "dump-request")
        self.done = os.path.join(control, f"rank-{rank}.dumped")
        self.listening = os.path.join(control, f"rank-{rank}.listening")
        self.answered = False
        os.makedirs(control, exist_ok=True)
        _write_file(self.listening, f"{os.getpid()}\n")

    def poll(self):
        """Dumps once when the request file exists."""
        if self.answered or not os.path.exists(self.request):
            return
        self.answered = True
        if not self._still_listening():
            # A process this one started took the rank over (torch.multiprocessing.spawn's
            # rank 0 in a launcher's rank 0): it answers, with its own stack.
            return
        writer = self.writer
        try:
            path = self.dump()
            if writer is not None:
                writer.record(
                    {
                        "type": "instant",
                        "name": "flight_recorder_dump",
                        "t": now_ns(),
                        "args": {"path": path, "reason": "requested by ddp-probe run"},
                    }
                )
            answer = f"ok {path}\n"
        except Exception as e:  # noqa: BLE001 - the answer carries the reason
            answer = f"error: {type(e).__name__}: {e}\n"
        try:
            self.write_stack()
        except Exception as e:  # noqa: BLE001 - recording must not break training
            _LOG.debug("ddp_probe_torch: writing the Python stack failed: %s", e)
        if writer is not None:
            writer.flush()
        _write_file(self.done, answer)

    def _still_listening(self):
        """Whether the rank's ``.listening`` file still names this process."""
        try:
            with open(self.listening, encoding="utf-8") as f:
                return f.read().strip() == str(os.getpid())
        except OSError:
            return False

    def write_stack(self):
        """Writes the training thread's Python stack, where it is right now (the launcher asks
        when the run hangs), to ``logs/python-stack-rank-<R>.txt`` in Python's traceback
        format, outermost call first: ``explain`` says where a rank that others wait for was."""
        tid = self.train_thread or threading.main_thread().ident
        frame = sys._current_frames().get(tid)
        if frame is None:
            return None
        path = os.path.join(self.logs_dir, f"python-stack-rank-{self.rank}.txt")
        os.makedirs(self.logs_dir, exist_ok=True)
        _write_file(
            path,
            f"# rank {self.rank}'s training thread (pid {os.getpid()}) when ddp-probe run asked "
            "(most recent call last):\n" + "".join(traceback.format_stack(frame)),
        )
        return path

    def dump(self):
        """Writes PyTorch's flight-recorder dump to ``<prefix><rank>``; returns the path."""
        import torch._C._distributed_c10d as c10d

        dump_fr = getattr(c10d, "_dump_fr_trace", None) or getattr(c10d, "_dump_nccl_trace")
        prefix = (
            os.environ.get("TORCH_FR_DUMP_TEMP_FILE")
            or os.environ.get("TORCH_NCCL_DEBUG_INFO_TEMP_FILE")
            or "/tmp/nccl_trace_rank_"
        )
        path = f"{prefix}{self.rank}"
        if os.path.exists(path):
            # PyTorch's own dump on a timeout (TORCH_NCCL_DUMP_ON_TIMEOUT) came first: it holds
            # the state at the timeout, keep it.
            return path
        data = dump_fr()
        with open(path + ".tmp", "wb") as f:
            f.write(data)
        os.replace(path + ".tmp", path)
        return path


def _write_file(path, text):
    """Writes ``text`` to ``path`` whole (a reader never sees half of it)."""
    with open(path + ".tmp", "w", encoding="utf-8") as f:
        f.write(text)
    os.replace(path + ".tmp", path)


_DTYPE_NAMES = {}


def _dtype_name(dtype):
    name = _DTYPE_NAMES.get(dtype)
    if name is None:
        name = _DTYPE_NAMES[dtype] = str(dtype).replace("torch.", "")
    return name


def _tensors(obj, depth=0):
    """The tensors in a (nested) forward output."""
    if isinstance(obj, torch.Tensor):
        yield obj
    elif depth < 4 and isinstance(obj, (list, tuple)):
        for item in obj:
            yield from _tensors(item, depth + 1)
    elif depth < 4 and isinstance(obj, dict):
        for item in obj.values():
            yield from _tensors(item, depth + 1)


#: How many of the first steps' inputs are fingerprinted (``batch_fingerprint`` instants), and
#: how many bytes of each input at most: enough to tell whether the ranks get the same batches.
_FINGERPRINT_STEPS = 4
_FINGERPRINT_BYTES = 1 << 20


def _fingerprint(batch):
    """A short hash of the CPU tensors of ``batch`` (each one's shape and dtype, and its first
    bytes, :data:`_FINGERPRINT_BYTES` in all), or None when it has none: equal on two ranks when
    they got the same input. Every tensor counts, so constant labels beside different images
    differ. Only CPU tensors are read (a DataLoader's batch, before the program moves it to a
    GPU), so it never waits for a device. The tensors are :func:`_tensors`'; a batch that is
    a mapping but no ``dict`` (Hugging Face's ``BatchEncoding``) is read by its values."""
    import collections.abc

    if isinstance(batch, collections.abc.Mapping) and not isinstance(batch, dict):
        batch = dict(batch)
    h = hashlib.blake2b(digest_size=8)
    budget, read = _FINGERPRINT_BYTES, 0
    for t in _tensors(batch):
        if budget <= 0:
            break
        if t.device.type != "cpu" or t.layout != torch.strided:
            continue
        try:
            flat = t.detach().reshape(-1)
            n = max(1, budget // max(1, flat.element_size()))
            data = flat[:n].contiguous().view(torch.uint8).numpy().tobytes()
        except Exception:  # noqa: BLE001 - a tensor that cannot be read is left out
            continue
        h.update(f"{tuple(t.shape)} {t.dtype};".encode())
        h.update(data)
        budget -= len(data)
        read += 1
    return h.hexdigest() if read else None


class CudaCollectiveTimer:
    """GPU-side start and end of collectives that run on CUDA streams (NCCL).

    With NCCL the future DDP gets from a communication hook completes on the
    host as soon as the all-reduce is *queued*, so host timestamps would say
    every all-reduce takes microseconds. Events recorded on the training
    stream alone are not enough either: when the GPU waits for the host (small
    steps, a host-bound job) an event completes when the host records it, so a
    span from an event before the hook to one after it lasts as long as the
    hook's Python (scripts/gpu-check measured 250-510 us against kernels of
    4-22 us that way). So each collective gets:

    * its duration from the process group's own events around the NCCL call on
      NCCL's stream (``Work._get_duration``; the module turns the process
      group's collective timing on, which the flight recorder uses too), where
      the hook's all-reduce is seen (DDP's reduction, PyTorch's hooks and any
      hook calling ``dist.all_reduce``);
    * an end event recorded inside the future's ``then`` callback, whose
      current stream PyTorch makes wait for the collective (and a compression
      hook's decompression), so it completes when the all-reduce has ended;
    * start events on the training stream before and after the hook issued the
      collective: the all-reduce cannot start before the first, nor (NCCL
      runs one process group's collectives one after another on its stream)
      before the previous collective's end.

    The collective started between the *lower bound* (the first start event, or
    the previous collective's end) and the *upper bound* (the event after the
    issue, or the end event less the duration: a busy GPU's exact start). The
    span starts in the middle of that window, the window capped at twice the
    median of the last 16 windows, and ends at ``start + duration`` (at the end
    event where no duration is known). With a busy GPU the window is a few
    microseconds. With a GPU that waits for the host both bounds are host
    times, about 100 us on either side of the kernel's start, and the host can
    be held after the issue (the GIL): on an H200 (3 host-bound runs, 30
    collectives against ``torch.profiler``'s kernels on the same clock) the
    upper bound alone started spans a median 138 us after their kernels, once
    2.5 ms after; the capped middle a median 4 us, at most 74 us away.

    Events are turned into host-clock times later, without synchronising the
    training thread: the trace writer's daemon thread polls them (``query``)
    every flush interval and records each span once its events completed.
    Their times are measured from an *anchor*, an event recorded on a side
    stream that the daemon thread waits for and stamps with the host clock;
    the anchor is renewed every few seconds so the float milliseconds of
    ``elapsed_time`` stay precise. Spans still open at exit keep host times
    and say so (``args.timing = "host"``).
    """

    #: Renew the anchor after this many seconds.
    ANCHOR_EVERY_S = 5.0
    #: Events recorded for one anchor (the narrowest bracket is kept).
    ANCHOR_TRIES = 5
    #: Start windows whose median caps a new one.
    WINDOWS_KEPT = 16

    def __init__(self, device, writer):
        self.device = device
        self.writer = writer
        self.lock = threading.Lock()
        self.pending = []
        self.last_end_ns = 0
        # The last start windows (ns), whose median caps the next one.
        self.windows = collections.deque(maxlen=self.WINDOWS_KEPT)
        self.said_no_duration = False
        self.side = torch.cuda.Stream(device=device)
        self.anchor = None
        self._anchor()

    def _anchor(self):
        """Records events on the idle side stream and stamps their completion.

        The host's reading after an event completed can come late when the
        training thread holds the GIL (up to the interpreter's switch interval,
        5 ms; on an H200 one late anchor moved a step's spans by 0.7 ms), so
        of a few tries the one with the narrowest bracket is kept. Renewed
        only while no collective is pending, so that new anchors come before
        the events they measure."""
        best = None
        for _ in range(self.ANCHOR_TRIES):
            ev = torch.cuda.Event(enable_timing=True)
            with torch.cuda.device(self.device), torch.cuda.stream(self.side):
                before = now_ns()
                ev.record(self.side)
            ev.synchronize()
            after = now_ns()
            if best is None or after - before < best[2] - best[1]:
                best = (ev, before, after)
        ev, before, after = best
        # The event ran between the two readings; take the middle.
        self.anchor = (ev, (before + after) // 2, time.monotonic())

    @staticmethod
    def record_event():
        """A timing event recorded on the current stream (start and end alike)."""
        ev = torch.cuda.Event(enable_timing=True)
        ev.record()
        return ev

    def add(self, span, start_ev, end_ev, post_ev=None, works=()):
        """A span to complete from its events: ``start_ev`` before the collective
        was issued, ``post_ev`` after, ``end_ev`` after it ended; ``works`` the
        process group's works of the collectives the hook issued."""
        with self.lock:
            self.pending.append((span, start_ev, end_ev, post_ev, tuple(works)))

    def _duration_ns(self, works):
        """The NCCL calls' summed duration on NCCL's stream, or None where a
        work has no timing (another backend, timing off, not complete); the
        first such failure is said once."""
        if not works:
            return None
        total = 0.0
        for w in works:
            try:
                total += float(w._get_duration())
            except Exception as e:  # noqa: BLE001 - timing is optional
                if not self.said_no_duration:
                    self.said_no_duration = True
                    _say(
                        f"no NCCL duration for a collective ({type(e).__name__}: "
                        f"{str(e).splitlines()[0] if str(e) else ''}); its span is bounded by "
                        "events on the training stream only"
                    )
                return None
        return int(round(total * 1e6))

    def _to_ns(self, anchor, ev):
        ev_anchor, anchor_ns, _ = anchor
        return anchor_ns + int(round(ev_anchor.elapsed_time(ev) * 1e6))

    def poll(self, final=False):
        """Records every pending span whose events completed, in order."""
        renew = not final and time.monotonic() - self.anchor[2] >= self.ANCHOR_EVERY_S
        if renew and not self.pending:
            # Outside the lock: the training thread never waits for it.
            self._anchor()
            return
        with self.lock:
            anchor = self.anchor
            done = []
            while self.pending:
                span, start_ev, end_ev, post_ev, works = self.pending[0]
                events = [e for e in (start_ev, post_ev, end_ev) if e is not None]
                if not all(e.query() for e in events):
                    break
                self.pending.pop(0)
                earliest = max(self._to_ns(anchor, start_ev), self.last_end_ns, 0)
                end = self._to_ns(anchor, end_ev)
                after = self._to_ns(anchor, post_ev) if post_ev is not None else earliest
                duration = self._duration_ns(works)
                latest = min(after, end if duration is None else end - duration)
                window = max(latest - earliest, 0)
                typical = statistics.median(self.windows) if self.windows else window
                self.windows.append(window)
                start = earliest + int(min(window, 2 * typical)) // 2
                if duration is not None:
                    end = start + duration
                    span.setdefault("args", {})["timing"] = "nccl"
                end = max(end, start)
                self.last_end_ns = end
                span["start"], span["end"] = start, end
                done.append(span)
            left = list(self.pending) if final else []
            if final:
                self.pending = []
        for span in done:
            self.writer.record(span)
        for span, *_events in left:
            span.setdefault("args", {})["timing"] = "host"
            self.writer.record(span)


class _StepState:
    """What one training step has seen so far."""

    def __init__(self, step, start):
        self.step = step
        self.start = start
        self.samples = None
        self.backward_start = None
        self.backward_end = None
        self.synced = False
        self.optimizer_start = None
        # Whether DDP will all-reduce after the current micro-batch's backward
        # (False inside ``no_sync``).
        self.will_sync = True
        # Whether per-parameter gradient-ready times are taken this step.
        self.sampled = True
        # bucket index -> (hook call time, parameter indices, bytes, dtype)
        self.buckets = {}
        # Whether the backward-end callback waited once for DDP's delayed all-reduce.
        self.waited_for_hooks = False
        # Whether the step runs inside ``optimizer.step(closure)``.
        self.closure = False


class _Instrumentation:
    """The hooks on one DDP model and the trace they write."""

    def __init__(self, ddp, writer, world_size):
        self.ddp = ddp
        self.writer = writer
        self.world_size = world_size
        self.lock = threading.Lock()
        self.state = None
        self.next_step = 0
        self.forward_start = None
        self.ready = {}
        self.layout = None
        self.comm_hook_registered = False
        self.can_wrap = True
        #: Whether a ``torch.compile`` wrapper's hooks time the forward.
        self.forward_via_compiled = False
        #: A :class:`CudaCollectiveTimer` when the process group runs NCCL.
        self.cuda_timer = None
        self.local_seq = 0
        #: Between an optimizer's step pre- and post-hook: a forward then runs inside
        #: ``optimizer.step(closure)`` (the closure pattern PyTorch's optimizers accept and
        #: PyTorch Lightning uses for every step).
        self.in_optimizer = False
        #: Optimizer steps under way: another optimizer's step runs inside one's own in
        #: ZeroRedundancyOptimizer (its shard's local optimizer) and in wrappers such as
        #: Lookahead; the outermost is the step's.
        self.optimizer_depth = 0
        #: Optimizer -> (its number of parameter groups, whether it holds a parameter of this
        #: model), and the ids of the optimizers whose step under way is not this model's (see
        #: :meth:`steps_this_model`).
        self.optimizer_owns = weakref.WeakKeyDictionary()
        self.foreign_steps = []
        #: Whether an optimizer holding one of this model's parameters has stepped.
        self.owner_stepped = False
        #: When the program's last ``async_op=True`` collective completed.
        self.last_async_end = 0
        #: When the last bucket all-reduce completed (host clock).
        self.last_comm_end = 0
        #: (bucket index, elements) -> note_bucket's info, once the layout settled.
        self.bucket_info = {}
        #: The settled layout's buckets as note_layout last saw them.
        self.layout_signature = None
        #: The last DataLoader ``next`` of the training thread not yet given
        #: to a step: (start, end).
        self.data_wait = None
        #: The fingerprint of that ``next``'s batch (:func:`_fingerprint`), while the first
        #: steps' inputs are fingerprinted, and how many steps are left to fingerprint.
        self.data_fingerprint = None
        self.fingerprints_left = _FINGERPRINT_STEPS
        #: The dataset of that ``next`` (its ``id``), and the dataset of the last one a training
        #: forward took: a batch of another (an evaluation every N steps, through a model that is
        #: not the DDP one) starts no step.
        self.data_source = None
        self.train_source = None
        #: Per dataset (``id``): the settings of the DataLoader that last began a pass over it
        #: (``training_loader`` instant).
        self.loader_settings = {}
        #: Whether the program was told that a backward ran outside a recorded step.
        self.said_untracked_backward = False
        #: Whether this rank ran out of inputs under DDP's Join and shadows the other ranks'
        #: all-reduces (:meth:`joined_shadow`).
        self.joined = False
        #: Whether a forward of the DDP model ever ran, and whether the program was told that
        #: the model's parameters were stepped with none (their gradients then came from the
        #: wrapped module called directly, which DDP never all-reduces). Ever, not per step: a
        #: second optimizer of the same model (Muon for the matrices, AdamW for the rest) steps
        #: after the first closed the step, with no forward of its own.
        self.ddp_forward_seen = False
        self.said_bypassed_ddp = False
        #: id of a shuffling DistributedSampler -> (the sampler, the epoch it drew its last full
        #: pass over the training data with), and whether the program was told that a pass
        #: reused the epoch of the one before (``set_epoch`` never called).
        self.sampler_passes = {}
        self.said_same_epoch = False
        #: Whether the program clears the gradients between optimizer steps (set once the
        #: trainable parameters are known, below).
        self.grad_clearing = None
        self.train_thread = threading.get_ident()
        self.pg = getattr(ddp, "process_group", None) or dist.distributed_c10d._get_default_group()
        #: The group's count of collectives issued (not every backend has one).
        self.sequence_number = getattr(self.pg, "_get_sequence_number_for_group", None)
        self.params = [p for p in ddp.parameters() if p.requires_grad]
        names = {id(p): n for n, p in ddp.module.named_parameters()}
        self.index = {id(p): i for i, p in enumerate(self.params)}
        self.names = [names.get(id(p), f"param{i}") for i, p in enumerate(self.params)]
        #: The module that holds the first trainable parameter: whether it trains says whether
        #: a forward is training when the DDP module's own flag is off (PyTorch Lightning's
        #: validation calls ``eval()`` on the DDP module, then ``train()`` on the
        #: LightningModule inside it only).
        first = self.params[0] if self.params else None
        self.grad_clearing = _GradClearingCheck(self, first) if first is not None else None
        self.trainable_leaf = next(
            (
                m
                for m in ddp.module.modules()
                if first is not None and any(q is first for q in m.parameters(recurse=False))
            ),
            None,
        )

    # -- the header -------------------------------------------------------

    def param_table(self):
        """The header's parameter table, in DDP's parameter order."""
        return [
            {
                "index": i,
                "name": self.names[i],
                "shape": list(p.shape),
                "dtype": _dtype_name(p.dtype),
                "numel": p.numel(),
                "bytes": p.numel() * p.element_size(),
            }
            for i, p in enumerate(self.params)
        ]

    def current_layout(self):
        """DDP's current bucket layout, from its reducer, or None if it cannot tell."""
        try:
            buckets = self.ddp.reducer._get_zeros_like_grad_buckets()
        except Exception:  # noqa: BLE001 - private API; the layout is optional
            return None
        layout = []
        for b in buckets:
            buf = b.buffer()
            params = [self.index.get(id(p)) for p in b.parameters()]
            if any(i is None for i in params):
                return None
            layout.append(
                {"id": b.index(), "params": params, "bytes": buf.numel() * buf.element_size()}
            )
        return sorted(layout, key=lambda b: b["id"])

    # -- hooks ------------------------------------------------------------

    def install(self):
        ddp = self.ddp
        if getattr(ddp, "_comm_hooks", None):
            self.can_wrap = False
            _say(
                "a communication hook was registered before instrument(); DDP accepts only one, "
                "so it cannot be wrapped: all-reduce spans are not recorded (call instrument() "
                "before register_comm_hook to have them)"
            )
        self.forward_hooks = [
            ddp.register_forward_pre_hook(self.on_forward_pre, with_kwargs=True),
            ddp.register_forward_hook(self.on_forward),
        ]
        self.grad_hooks = []
        self.sample_grads(True)
        from torch.optim.optimizer import (
            register_optimizer_step_post_hook,
            register_optimizer_step_pre_hook,
        )

        register_optimizer_step_pre_hook(self.on_optimizer_pre)
        register_optimizer_step_post_hook(self.on_optimizer_post)

        original = ddp.register_comm_hook
        self.register_original = original

        def register_comm_hook(state, hook):
            """DDP's register_comm_hook, with the hook timed by ddp_probe_torch."""
            if self.comm_hook_registered:
                return original(state, hook)
            self.comm_hook_registered = True
            return original(state, self.wrap_hook(hook))

        ddp.register_comm_hook = register_comm_hook
        original_builtin = ddp._register_builtin_comm_hook

        def register_builtin_comm_hook(comm_hook_type):
            self.comm_hook_registered = True
            _say("a built-in communication hook cannot be wrapped: all-reduce spans not recorded")
            return original_builtin(comm_hook_type)

        ddp._register_builtin_comm_hook = register_builtin_comm_hook
        self.install_buffer_sync()
        _patch_data_loader(self)
        _patch_torch_save(self)
        _patch_zero_grad()
        _patch_compile()
        _keep_out_of_dynamo()

    def sample_grads(self, on):
        """Turns the per-parameter gradient-ready hooks on or off.

        A Python hook per parameter and step is the module's largest cost
        (on the tiny-step bench, 4 parameters cost 200-300 us of a 1 ms
        step), so the times are taken on the first ``_GRAD_FULL_STEPS``
        steps and then on one step in ``_GRAD_EVERY``: enough for the
        ``grad_ready`` records the bucket advice re-buckets from. A program
        whose own hook cannot be wrapped keeps them on every step (its
        ready windows have no other source)."""
        if on and not self.grad_hooks:
            self.grad_hooks = [
                p.register_post_accumulate_grad_hook(self.on_grad_ready) for p in self.params
            ]
        elif not on and self.grad_hooks:
            for handle in self.grad_hooks:
                handle.remove()
            self.grad_hooks = []

    def install_buffer_sync(self):
        """Times DDP's broadcast of module buffers (BatchNorm statistics) from rank 0.

        DDP calls ``self._sync_buffers()`` before each forward when
        ``broadcast_buffers`` is on and the module has buffers; the instance
        attribute set here takes precedence over the method."""
        ddp = self.ddp
        original = getattr(ddp, "_sync_buffers", None)
        if original is None:
            return

        def sync_buffers():
            buffers = getattr(ddp, "modules_buffers", None) or []
            nbytes = sum(b.numel() * b.element_size() for b in buffers)
            dtype = _dtype_name(buffers[0].dtype) if buffers else None
            result = self.timed_collective("broadcast", nbytes, dtype, "module buffers", original)
            if self.forward_start is not None:
                # DDP broadcasts inside its forward, before the module's: the forward span
                # starts after it, so the wait is exposed communication, not overlapped compute.
                self.forward_start = max(self.forward_start, now_ns())
            return result

        ddp._sync_buffers = sync_buffers

    def timed_collective(self, op, nbytes, dtype, what, call, on_gpu=True, counted=True,
                         caller=None, issued_async=False, via=None):
        """Runs ``call`` (a collective the hooks do not see: DDP's buffer broadcast, the
        program's own ``torch.distributed`` calls) and records it as a ``collective`` span with
        ``"what"``: queued first (a rank that hangs or times out in it is seen waiting in it),
        timed by CUDA events when the group runs NCCL and ``on_gpu``, else on the host. Not
        ``counted``: it runs on another group than DDP's, whose sequence numbers the span's
        ``seq`` would not be. ``caller``: where the program called it (see
        :func:`_caller_chain`). ``issued_async``: ``call`` issues an ``async_op=True``
        collective (not on NCCL) and returns its work, untouched; the span ends when the work's
        future completes (gloo completes it when the collective is done, on its own thread).
        A work without a future leaves no span. ``via``: the function of torch's own that made
        the call for the program (``torch/distributed/algorithms/join.py in
        notify_join_context``), which the caller chain leaves out."""
        st = self.state
        if st is not None:
            step = st.step
        elif (
            self.data_wait is not None
            and threading.get_ident() == self.train_thread
            and (self.train_source is None or self.data_source == self.train_source)
        ):
            # After the batch was loaded and before its forward (Hugging Face's Trainer gathers
            # the batch's token count there): the step that batch starts. (Hugging Face's
            # evaluation loop runs the model unwrapped, so no forward hook sees its batches:
            # their dataset is not the training one.)
            step = self.next_step
        elif self.next_step > 0:
            # After a step's optimizer (a loss all-reduced for logging): the step just ended.
            step = self.next_step - 1
        else:
            step = None
        upcoming = self.next_seq() if counted else None
        t = now_ns()
        if upcoming is not None:
            at_step = "" if step is None else f',"step":{step}'
            at_caller = "" if not caller else f',"caller":{_ENCODE(caller)}'
            self.writer.record_line(
                f'{{"type":"instant","name":"collective_queued","t":{t}{at_step},'
                f'"args":{{"seq":{upcoming},"op":"{op}","bytes":{nbytes}{at_caller}}}}}\n'
            )
            if what == "program":
                # Written now, not within the next 10 ms: a rank that dies in the program's
                # own call (gloo aborts one rank of an all_gather whose sizes differ) leaves
                # the call it died in. One write per such call, a few microseconds; DDP's own
                # collectives, every step's, are not flushed so.
                self.writer.flush()
        timer = self.cuda_timer if on_gpu and not issued_async else None
        start_ev = timer.record_event() if timer is not None else None
        failed = True
        try:
            result = call()
            failed = False
        finally:
            seq = self.seq_after_issue() if counted else None
            if failed or not issued_async:
                self._record_collective(t, op, nbytes, dtype, what, caller, step, seq,
                                        upcoming, failed, start_ev, timer, via=via)
        if issued_async and result is not None:
            try:
                future = result.get_future()
            except Exception:  # noqa: BLE001 - a work without a future: unrecorded
                return result

            def completed(f):
                try:
                    f.value()
                    failed = False
                except Exception:  # noqa: BLE001 - it raised: waited in, not completed
                    failed = True
                self._record_collective(t, op, nbytes, dtype, what, caller, step, seq,
                                        upcoming, failed, None, None, issued_async=True,
                                        via=via)

            future.then(completed)
        return result

    def _record_collective(self, t, op, nbytes, dtype, what, caller, step, seq, upcoming,
                           failed, start_ev, timer, issued_async=False, via=None):
        """Writes :meth:`timed_collective`'s span, from ``t`` to now (or by the CUDA events
        ``start_ev`` and one recorded now, resolved by ``timer``). ``issued_async``: an
        ``async_op=True`` call that just completed; its span starts at the call or when the
        asynchronous one before it completed, whichever is later (ZeroRedundancyOptimizer
        issues its broadcasts together and the group runs them one after another: their spans
        add up to the time they took, not a multiple of it), with ``"async": true``."""
        end = now_ns()
        start = t
        if issued_async:
            start = min(max(t, self.last_async_end), end)
            self.last_async_end = end
        span = {
            "type": "span",
            "kind": "collective",
            "start": start,
            "end": max(end, start),
            "queued": t,
            "op": op,
            "bytes": nbytes,
            "transport": self.backend,
            "args": {"what": what},
        }
        if caller:
            span["args"]["caller"] = caller
        if via:
            span["args"]["via"] = via
        if issued_async:
            span["args"]["async"] = True
        if dtype:
            span["dtype"] = dtype
        if step is not None:
            span["step"] = step
        if seq is not None and upcoming is not None and seq > upcoming:
            # Several collectives in one call (DDP's broadcast per dtype of BatchNorm's
            # float statistics and int64 count; an object collective's size exchange): the
            # span stands for them all under the first one's seq, the one it was queued as.
            span["args"]["collectives"] = seq - upcoming + 1
            seq = upcoming
        if seq is not None:
            span["seq"] = seq
        if failed:
            # Waited in until it raised, not completed (see the all-reduce's span).
            span["args"]["error"] = True
            self.writer.record(span)
        elif start_ev is not None:
            timer.add(span, start_ev, timer.record_event())
        else:
            self.writer.record(span)

    def note_data_wait(self, start, end, source=None, batch=None):
        """A DataLoader ``next`` on the training thread: given to the step it feeds.
        ``source``: the ``id`` of the loader's dataset; ``batch``: what it returned."""
        if threading.get_ident() != self.train_thread:
            return
        st = self.state
        if st is not None and st.backward_end is not None and not st.will_sync:
            # The next micro-batch of a step accumulating gradients (no_sync).
            self.writer.span("data_wait", st.step, start, end)
            return
        self.data_wait = (start, end)
        self.data_source = source
        if self.fingerprints_left:
            self.data_fingerprint = _fingerprint(batch)

    def warn(self, message, every_rank=False):
        """Says ``message`` on rank 0's console (on every rank's with ``every_rank``: what one
        rank's copy of the program did) and writes it to the rank's trace as a warning, which
        ``summary``, the end of ``ddp-probe run`` and the report show."""
        if every_rank or _rank_and_world()[0] == 0:
            _say(message)
        self.writer.record(
            {"type": "log", "t": now_ns(), "level": "warning", "message": message}
        )

    def joined_shadow(self):
        """Whether a bucket all-reduce with no step under way is DDP's Join shadowing the other
        ranks' backward on this rank, which ran out of inputs (``torch.distributed.algorithms.
        join.Join``: its main hook runs ``_match_all_reduce_for_bwd_pass``, the communication
        hook on zeros, with no backward under way). The first one writes a ``ddp_joined``
        instant with the steps this rank trained; ``summary`` says which ranks joined after how
        many steps, against the others' count."""
        join_config = getattr(self.ddp, "_join_config", None)
        if not getattr(join_config, "enable", False):
            return False
        graph_task = getattr(torch._C, "_current_graph_task_id", None)
        if graph_task is not None and graph_task() != -1:
            return False
        if not self.joined:
            self.joined = True
            self.writer.record(
                {"type": "instant", "name": "ddp_joined", "t": now_ns(),
                 "args": {"steps": self.next_step}}
            )
        return True

    def say_untracked_backward(self):
        """Says once that a backward followed a forward in eval mode. After recorded training
        steps it is most likely training that went on after an evaluation without
        ``model.train()``: a warning, on rank 0's console and in every rank's trace. From the
        start it may be meant (a fine-tuning script that keeps BatchNorm's statistics frozen so):
        a note on the console only."""
        if self.next_step == 0:
            _say(
                "a backward ran after a forward in eval mode (the DDP module and its model both "
                "in eval()): such steps are not recorded"
            )
            return
        message = (
            f"training went on in eval mode: after {self.next_step} training steps a backward "
            "followed a forward of the DistributedDataParallel model with the model in eval(), "
            "most likely an evaluation's `model.eval()` not undone: BatchNorm then normalises "
            "with its running statistics and stops updating them, and dropout is off; unless "
            "that is meant (BatchNorm frozen on purpose, which `eval()` on the BatchNorm layers "
            "alone does without turning dropout off), call `model.train()` before training "
            "again (steps in eval mode are not recorded)"
        )
        self.warn(message)

    def note_save(self, f, start, end):
        """A ``torch.save`` call: a ``checkpoint_save`` instant with the file it wrote (absolute
        path; None for a buffer), how long it took and the step it followed. ``summary`` names
        the ranks of one host that save the same file (they race on it) and the time saves
        take between steps."""
        try:
            path = os.path.abspath(os.fspath(f))
        except TypeError:
            name = getattr(f, "name", None)
            path = os.path.abspath(name) if isinstance(name, str) else None
        st = self.state
        step = st.step if st is not None else (self.next_step - 1 if self.next_step else None)
        args = {"duration_ns": max(end - start, 0)}
        if path is not None:
            args["path"] = path
        record = {"type": "instant", "name": "checkpoint_save", "t": start, "args": args}
        if step is not None:
            record["step"] = step
        self.writer.record(record)

    def note_loader_pass(self, it):
        """The first batch of a DataLoader pass (a new iterator, or a persistent one reset):
        when the pass draws from a shuffling ``DistributedSampler`` with the same epoch as the
        last full pass over the training data, ``set_epoch`` was not called between them and
        the pass repeats that one's order. Said once, on rank 0, and written to every rank's
        trace as a warning (``summary`` shows it)."""
        self.loader_settings[id(getattr(it, "_dataset", None))] = {
            "num_workers": int(getattr(it, "_num_workers", 0) or 0),
            "prefetch_factor": getattr(it, "_prefetch_factor", None),
            "pin_memory": bool(getattr(it, "_pin_memory", False)),
            "persistent_workers": bool(getattr(it, "_persistent_workers", False)),
            "cores": _usable_cores(),
        }
        if self.said_same_epoch:
            return
        sampler = _distributed_sampler(getattr(it, "_index_sampler", None))
        if sampler is None or not getattr(sampler, "shuffle", False):
            return
        epoch = getattr(sampler, "epoch", None)
        it._ddp_probe_sampler = (sampler, epoch)
        before = self.sampler_passes.get(id(sampler))
        if before is None or before[1] != epoch:
            return
        self.said_same_epoch = True
        message = (
            f"the training DataLoader's DistributedSampler (shuffle=True) began another pass "
            f"over the data with the epoch of the pass before ({epoch}): `set_epoch` was not "
            "called between them, so every epoch repeats that pass's shuffle: each rank gets the "
            "same samples, in the same order, every epoch; call `sampler.set_epoch(epoch)` at "
            "the start of each epoch, before iterating the DataLoader"
        )
        self.warn(message)

    def note_loader_end(self, it):
        """A DataLoader pass ran to its end. When it fed the training steps, a
        ``data_pass_end`` instant says so, with the batches it gave: a rank that leaves its
        loop right after ran out of batches (``explain`` tells that apart from a rank that
        left on a condition of its own). When it drew from a shuffling ``DistributedSampler``,
        the epoch it was drawn with is that sampler's last full pass."""
        if id(getattr(it, "_dataset", None)) != self.train_source:
            return
        record = {"type": "instant", "name": "data_pass_end", "t": now_ns(),
                  "args": {"batches": int(getattr(it, "_num_yielded", 0) or 0)}}
        if self.next_step > 0:
            record["step"] = self.next_step - 1
        self.writer.record(record)
        drawn = getattr(it, "_ddp_probe_sampler", None)
        if drawn is not None:
            self.sampler_passes[id(drawn[0])] = drawn

    def wrap_hook(self, hook, own=False):
        """A communication hook that records the bucket and times ``hook``.

        A program's own hook (``own`` False: fp16/bf16 compression, PowerSGD)
        may send something else than the bucket: the ``dist.all_reduce`` calls
        it makes are seen (:func:`_patch_all_reduce`) and the span records
        their dtype and bytes."""
        if not own:
            _patch_all_reduce()

        def ddp_probe_hook(state, bucket):
            t = _ANCHOR_NS + _PERF_NS()
            st = self.note_bucket(bucket, t)
            timer = self.cuda_timer
            if timer is not None and not bucket.buffer().is_cuda:
                timer = None
            start_ev = timer.record_event() if timer is not None and st else None
            post_ev = None
            works = None
            if own and start_ev is None:
                # The common case: nothing to collect while the hook runs.
                fut = hook(state, bucket)
                sent = None
            elif own:
                _SENT.works = []
                try:
                    fut = hook(state, bucket)
                finally:
                    works, _SENT.works = _SENT.works, None
                sent = None
            else:
                _SENT.calls = []
                _SENT.works = [] if start_ev is not None else None
                try:
                    fut = hook(state, bucket)
                finally:
                    sent, _SENT.calls = _SENT.calls, None
                    works, _SENT.works = _SENT.works, None
            if start_ev is not None:
                # Right after the issue: the second bound on the start.
                post_ev = timer.record_event()
            seq = self.seq_after_issue()
            info = st[1] if st else None
            step = st[0] if st else None
            if info is None:
                # No step to record it in: a backward after a forward that the hooks did not
                # take for a training one (the DDP module and its model in eval(), as some
                # fine-tuning scripts keep BatchNorm frozen), or DDP's Join shadowing the other
                # ranks' all-reduces on a rank that ran out of inputs. DDP still needs the
                # bucket back, in the form a Python hook gives it (the process group's future
                # holds a list).
                if not self.joined_shadow() and not self.said_untracked_backward:
                    self.said_untracked_backward = True
                    self.say_untracked_backward()
                return fut.then(_first_tensor) if own else fut
            nbytes, dtype = info[2], info[3]
            if sent:
                nbytes = sum(b for _d, b in sent)
                dtypes = {d for d, _b in sent}
                dtype = sent[0][0] if len(dtypes) == 1 else "mixed"
            if seq is not None:
                # What a hang report needs: this rank has issued collective
                # `seq`; the span with the same seq says it completed.
                self.writer.record_line(
                    f'{{"type":"instant","name":"collective_queued","t":{t},"step":{step},'
                    f'"args":{{"seq":{seq},"op":"all_reduce","bucket":{info[0]},"bytes":{nbytes}}}}}\n'
                )

            def done(failed, end_ev):
                end = _ANCHOR_NS + _PERF_NS()
                self.last_comm_end = end
                if start_ev is None and not failed and not sent and seq is not None:
                    # The common case, formatted directly (see TraceWriter.span).
                    self.writer.record_line(
                        f'{{"type":"span","kind":"collective","step":{step},"start":{t},'
                        f'"end":{max(end, t)},"queued":{t},"op":"all_reduce","bucket":{info[0]},'
                        f'"bytes":{nbytes},"params":{len(info[1])},"dtype":"{dtype}",'
                        f'"transport":{self.backend_json},"seq":{seq}}}\n'
                    )
                    return
                span = {
                    "type": "span",
                    "kind": "collective",
                    "step": step,
                    "start": t,
                    "end": max(end, t),
                    "queued": t,
                    "op": "all_reduce",
                    "bucket": info[0],
                    "bytes": nbytes,
                    "params": len(info[1]),
                    "dtype": dtype,
                    "transport": self.backend,
                }
                if seq is not None:
                    span["seq"] = seq
                if sent and (nbytes != info[2] or len(sent) > 1):
                    span["args"] = {"bucket_bytes": info[2], "collectives": len(sent)}
                if failed:
                    span.setdefault("args", {})["error"] = True
                elif start_ev is not None:
                    # GPU times replace the host's when the events complete.
                    timer.add(span, start_ev, end_ev, post_ev, works or ())
                    return
                self.writer.record(span)

            def then(f):
                # The end event first: PyTorch made this callback's stream wait
                # for the collective, and every microsecond of Python before
                # the record is a microsecond the span may run long.
                end_ev = timer.record_event() if start_ev is not None else None
                try:
                    value = f.value()
                    failed = False
                except Exception:  # noqa: BLE001 - the future's error is the hook's to report
                    value = None
                    failed = True
                # Record, then hand DDP the value (or the error): DDP waits on
                # this future, so the span ends before DDP goes on.
                try:
                    done(failed, end_ev)
                except Exception as e:  # noqa: BLE001 - recording must not break training
                    _LOG.debug("ddp_probe_torch: recording a collective failed: %s", e)
                if failed:
                    f.value()  # raises the collective's error for DDP
                # The process group's own future holds a list of tensors.
                return value[0] if own else value

            try:
                return fut.then(then)
            except AttributeError:
                return fut

        ddp_probe_hook.__qualname__ = getattr(hook, "__qualname__", "hook")
        ddp_probe_hook.__name__ = getattr(hook, "__name__", "hook")
        return ddp_probe_hook

    def next_seq(self):
        """The sequence number the process group will give its next collective, when it
        counts them (None otherwise)."""
        get = self.sequence_number
        if get is None:
            return None
        try:
            return int(get()) + 1
        except Exception:  # noqa: BLE001 - not every backend counts
            return None

    def seq_after_issue(self):
        get = self.sequence_number
        if get is not None:
            try:
                return int(get())
            except Exception:  # noqa: BLE001 - not every backend counts
                pass
        self.local_seq += 1
        return None

    def note_bucket(self, bucket, t):
        """Remembers which parameters make up ``bucket`` in this step.

        Once DDP's layout has settled (after ``_LAYOUT_STEPS``) a bucket's
        parameters are taken from a cache by index and size, not listed again."""
        buf = bucket.buffer()
        numel = buf.numel()
        key = (bucket.index(), numel)
        info = self.bucket_info.get(key)
        if info is None:
            params = [self.index.get(id(p)) for p in bucket.parameters()]
            params = [i for i in params if i is not None]
            info = (key[0], params, numel * buf.element_size(), _dtype_name(buf.dtype))
            if self.next_step > _LAYOUT_STEPS:
                self.bucket_info[key] = info
        with self.lock:
            st = self.state
            if st is None:
                return None
            st.buckets[info[0]] = (t, info[1], info[2], info[3])
            st.synced = True
            return st.step, info

    def hook_compiled(self, compiled):
        """Times the forward of ``compiled`` (``torch.compile`` of this DDP model).

        Dynamo would trace the DDP module's own hooks into its graph (they
        would run once, at tracing); the compiled wrapper's hooks run as
        plain Python around the compiled call, so they take over."""
        if getattr(compiled, "_ddp_probe_hooked", False):
            return
        compiled._ddp_probe_hooked = True
        self.forward_via_compiled = True
        # Any forward hook on the DDP module makes Dynamo break its graph
        # once more (the hooked call path); the wrapper's hooks do their job.
        for handle in self.forward_hooks:
            handle.remove()
        self.forward_hooks = []
        compiled.register_forward_pre_hook(self.on_compiled_forward_pre, with_kwargs=True)
        compiled.register_forward_hook(self.on_compiled_forward)

    def on_compiled_forward_pre(self, module, args, kwargs):
        return self.on_forward_pre(self.ddp, args, kwargs, compiled=True)

    def on_compiled_forward(self, module, args, output):
        return self.on_forward(self.ddp, args, output, compiled=True)

    def on_forward_pre(self, module, args, kwargs, compiled=False):
        self.ddp_forward_seen = True
        # Under torch.compile the DDP module's own hooks are traced (or, after
        # a graph break, run as well): the compiled wrapper's hooks count.
        if not compiled and (self.forward_via_compiled or _compiling()):
            return None
        if not torch.is_grad_enabled() or not (
            module.training or (self.trainable_leaf is not None and self.trainable_leaf.training)
        ):
            # The batch just loaded was for evaluation, not for a step.
            self.data_wait = None
            return None
        t = _ANCHOR_NS + _PERF_NS()
        if not self.comm_hook_registered and self.can_wrap:
            self.comm_hook_registered = True
            self.register_original(self.pg, self.wrap_hook(_allreduce_hook, own=True))
        st = self.state
        if (
            st is not None
            and st.backward_end is not None
            and (st.synced or (not self.can_wrap and st.will_sync))
        ):
            # A synchronised backward without an optimizer step: close its step.
            self.end_step(t)
            st = None
        data_wait, self.data_wait = self.data_wait, None
        if data_wait is not None and self.data_source != self.train_source:
            self.train_source = self.data_source
            settings = self.loader_settings.get(self.data_source)
            if settings is not None:
                # What the summary's note on a step that waits for its data says to change.
                self.writer.record({"type": "instant", "name": "training_loader", "t": t,
                                    "args": settings})
        with self.lock:
            if st is None:
                # The step starts where its batch was asked for.
                step = self.next_step
                start = data_wait[0] if data_wait else t
                st = self.state = _StepState(step, start if start < t else t)
                st.closure = self.in_optimizer
                self.next_step = step + 1
                # Training again (the next epoch's Join): a later join is another one.
                self.joined = False
                st.sampled = (
                    not self.can_wrap or step < _GRAD_FULL_STEPS or step % _GRAD_EVERY == 0
                )
                if st.sampled != bool(self.grad_hooks):
                    self.sample_grads(st.sampled)
            else:
                # Gradient accumulation (no_sync): the next micro-batch, same step.
                st.backward_start = None
                st.backward_end = None
            st.will_sync = self.ddp.require_backward_grad_sync
            if self.ready:
                self.ready = {}
        if data_wait is not None:
            self.writer.span("data_wait", st.step, data_wait[0], max(data_wait))
        first = args[0] if args and isinstance(args[0], torch.Tensor) else None
        if first is None:
            first = next(_tensors((args, kwargs)), None)
        if self.fingerprints_left and st.backward_start is None and st.samples is None:
            self.note_fingerprint(st.step, t, data_wait, (args, kwargs))
        if first is not None and first.dim() > 0:
            # Every micro-batch of the step counts (no_sync accumulation).
            st.samples = (st.samples or 0) + first.shape[0]
        self.forward_start = t
        return None

    def note_fingerprint(self, step, t, data_wait, inputs):
        """Writes the fingerprint of the input of one of the first steps (a ``batch_fingerprint``
        instant): its DataLoader batch's, else that of the forward's ``inputs`` (its CPU
        tensors). ``summary`` compares them across ranks: ranks that all get the same batches
        split no data."""
        fingerprint = self.data_fingerprint if data_wait is not None else None
        self.data_fingerprint = None
        if fingerprint is None:
            fingerprint = _fingerprint(inputs)
        if fingerprint is None:
            return
        self.fingerprints_left -= 1
        self.writer.record_line(
            f'{{"type":"instant","name":"batch_fingerprint","t":{t},"step":{step},'
            f'"args":{{"fingerprint":"{fingerprint}"}}}}\n'
        )

    def on_forward(self, module, args, output, compiled=False):
        if not compiled and (self.forward_via_compiled or _compiling()):
            return None
        st = self.state
        start = self.forward_start
        if st is None or start is None:
            return None
        t = _ANCHOR_NS + _PERF_NS()
        self.writer.span("forward", st.step, start, t)
        self.forward_start = None
        # A single tensor (the usual output) without the generator.
        outputs = (output,) if isinstance(output, torch.Tensor) else _tensors(output)
        for out in outputs:
            if out.requires_grad:
                out.register_hook(self.on_output_grad)
        return None

    def on_output_grad(self, grad):
        st = self.state
        if st is not None and st.backward_start is None:
            st.backward_start = now_ns()
            torch.autograd.Variable._execution_engine.queue_callback(self.on_backward_end)
        return None

    def on_grad_ready(self, param):
        t = now_ns()
        i = self.index.get(id(param))
        if i is not None and i not in self.ready:
            self.ready[i] = t

    def on_backward_end(self):
        st = self.state
        if st is None or st.backward_start is None:
            return
        if st.waited_for_hooks:
            t = st.backward_end
        else:
            t = now_ns()
            st.backward_end = t
            if not st.synced and self.can_wrap and st.will_sync:
                # No bucket was all-reduced during this synchronised backward: DDP delays
                # the all-reduces of a static graph's first iteration to its own callback,
                # queued after this one (``_DDPSink.backward``). Wait for it once, so that
                # the step keeps its ready windows and ``grad_ready`` offsets.
                st.waited_for_hooks = True
                torch.autograd.Variable._execution_engine.queue_callback(self.on_backward_end)
                return
        ready = dict(self.ready) if self.ready else {}
        last = max(ready.values(), default=t)
        self.writer.span("backward", st.step, st.backward_start, max(st.backward_start, min(t, last)))
        buckets = st.buckets
        if not st.synced:
            if self.can_wrap or not st.will_sync:
                return
            # The program's own hook (registered before instrument) runs
            # unseen: the buckets are DDP's current layout, their windows end
            # at their last gradient.
            if st.step < _LAYOUT_STEPS or self.layout is None:
                self.layout = self.current_layout() or self.layout
            if not self.layout:
                return
            buckets = {b["id"]: (None, b["params"], b["bytes"], None) for b in self.layout}
        else:
            self.note_layout(st)
        # Without per-parameter times (a step not sampled, see _GradSampler)
        # a bucket's window runs from the previous bucket's call (or the
        # backward's start) to its own: DDP fills buckets in gradient-ready
        # order and calls the hook when a bucket's last gradient is ready.
        previous = st.backward_start
        for bid, (hook_t, params, nbytes, _dtype) in sorted(
            buckets.items(), key=lambda kv: (kv[1][0] or 0, kv[0])
        ):
            times = [ready[i] for i in params if i in ready]
            approx = ""
            if hook_t is None:
                if not times:
                    continue
                start, end = min(times), max(times)
            elif times:
                start = min(times)
                end = min(max(times), hook_t)
            else:
                start, end = min(previous, hook_t), hook_t
                approx = ',"args":{"from":"previous bucket"}'
            if hook_t is not None:
                previous = max(previous, hook_t)
            self.writer.record_line(
                f'{{"type":"span","kind":"bucket_ready","step":{st.step},'
                f'"start":{min(start, end)},"end":{end},"bucket":{bid},"bytes":{nbytes},'
                f'"params":{len(params)}{approx}}}\n'
            )
        if not st.sampled:
            return
        t0 = st.backward_start
        offsets = ",".join(
            str(max(ready[i] - t0, 0)) if i in ready else "-1" for i in range(len(self.params))
        )
        self.writer.record_line(
            f'{{"type":"grad_ready","step":{st.step},"t0":{t0},"offsets_ns":[{offsets}]}}\n'
        )

    def note_layout(self, st):
        # Once DDP's layout settled, note_bucket hands out the same parameter
        # lists every step: their identities say whether anything changed.
        signature = tuple((bid, id(b[1]), b[2]) for bid, b in st.buckets.items())
        if signature == self.layout_signature:
            return
        if self.bucket_info:
            self.layout_signature = signature
        layout = [
            {"id": bid, "params": params, "bytes": nbytes}
            for bid, (_t, params, nbytes, _d) in sorted(st.buckets.items())
        ]
        if self.layout is None or layout == self.layout:
            self.layout = layout
            return
        self.layout = layout
        self.writer.record(
            {
                "type": "buckets",
                "step": st.step,
                "t": st.backward_start,
                "reason": "rebuild",
                "buckets": layout,
            }
        )

    def steps_this_model(self, optimizer):
        """Whether ``optimizer``'s step is this model's: it holds one of the model's parameters,
        or, holding none while no optimizer that holds one has stepped, it steps once the
        current step's backward has all-reduced (an optimizer over copies of the parameters,
        such as fp32 master weights). Another model's optimizer (a GAN's discriminator's,
        stepped between the generator's forward and its backward) would otherwise end this
        model's step in the middle."""
        groups = len(optimizer.param_groups)
        known = self.optimizer_owns.get(optimizer)
        if known is None or known[0] != groups:
            index = self.index
            owns = any(
                id(p) in index for group in optimizer.param_groups for p in group["params"]
            )
            known = (groups, owns)
            try:
                self.optimizer_owns[optimizer] = known
            except TypeError:  # not weakly referenceable: asked again next time
                pass
        if known[1]:
            self.owner_stepped = True
            return True
        st = self.state
        return (
            not self.owner_stepped
            and st is not None
            and st.backward_end is not None
            and st.synced
        )

    def on_optimizer_pre(self, optimizer, args, kwargs):
        if not self.steps_this_model(optimizer):
            self.foreign_steps.append(id(optimizer))
            return
        self.optimizer_depth += 1
        if self.optimizer_depth > 1:
            return
        self.in_optimizer = True
        st = self.state
        if st is not None:
            st.optimizer_start = now_ns()
        elif not self.ddp_forward_seen and not self.said_bypassed_ddp:
            self.check_bypassed_ddp(optimizer, args, kwargs)

    def check_bypassed_ddp(self, optimizer, args, kwargs):
        """Says once when ``optimizer`` steps this DDP model's parameters holding gradients
        though no forward of the DDP model ever ran: the backward went through the wrapped
        module called directly (``model.module(x)``), DDP all-reduced nothing, and each rank's
        copy of the model drifts apart, silently. Runs only until the first forward of the DDP
        model (never in a recorded run), and not for ``optimizer.step(closure)``, whose forward
        runs later, inside the closure."""
        # PyTorch hands the hook the step's own arguments, the optimizer first.
        closure = args[1] if len(args) > 1 else kwargs.get("closure")
        if closure is not None:
            return
        stepped = sum(
            1
            for group in optimizer.param_groups
            for p in group["params"]
            if p.grad is not None and id(p) in self.index
        )
        if not stepped:
            return
        self.said_bypassed_ddp = True
        message = (
            f"the optimizer stepped {stepped} of the DistributedDataParallel model's "
            "parameters with gradients from a backward that did not go through its forward "
            "(the wrapped module called directly, such as `model.module(x)`): DDP all-reduced "
            "none of them, so each rank's copy of the model drifts apart; call the "
            "DistributedDataParallel model itself"
        )
        self.warn(message, every_rank=True)

    def on_optimizer_post(self, optimizer, args, kwargs):
        if self.foreign_steps and self.foreign_steps[-1] == id(optimizer):
            self.foreign_steps.pop()
            return
        self.optimizer_depth = max(0, self.optimizer_depth - 1)
        if self.optimizer_depth:
            # The end of an optimizer's step inside another's (ZeroRedundancyOptimizer
            # broadcasts the updated shards after its local optimizer's step): not the step's.
            return
        self.in_optimizer = False
        if self.grad_clearing is not None:
            self.grad_clearing.on_optimizer_step()
        st = self.state
        if st is None:
            return
        start = st.optimizer_start
        t = now_ns()
        if st.closure and st.backward_end is not None:
            # optimizer.step(closure): the step's forward and backward ran inside the
            # optimizer's step; its own work began when the closure returned, after backward
            # and DDP's last all-reduce.
            start = max(st.backward_end, self.last_comm_end)
        if start is None:
            return
        self.writer.span("optimizer", st.step, min(start, t), t)
        st.optimizer_start = None
        self.end_step(t)

    def end_step(self, t):
        with self.lock:
            st = self.state
            self.state = None
        if st is None:
            return
        self.writer.span("step", st.step, st.start, t)
        if not _KEPT_OUT_OF_DYNAMO:
            _keep_out_of_dynamo()
        if st.samples is not None:
            self.writer.record_line(
                f'{{"type":"counter","name":"samples","t":{t},"value":{st.samples}}}\n'
            )


def _first_tensor(fut):
    """The bucket's tensor from the process group's future (a list of one tensor)."""
    return fut.value()[0]


def _allreduce_hook(process_group, bucket):
    """DDP's reduction without a hook (divide by the world size, all-reduce)
    as a communication hook that calls the process group directly: PyTorch's
    ``allreduce_hook`` goes through ``dist.all_reduce``'s Python checks and a
    second future (bench/torch/module_overhead.py measured the difference).
    Its future's value is the process group's list of one tensor."""
    buf = bucket.buffer()
    buf.div_(process_group.size())
    work = process_group.allreduce([buf])
    if _SENT.works is not None:
        _SENT.works.append(work)
    return work.get_future()


class _SentByHook(threading.local):
    """The ``dist.all_reduce`` calls a wrapped communication hook makes on this
    thread while it runs (else None): ``calls``, a list of (dtype, bytes);
    ``works``, where the collectives are timed on the GPU, the process group's
    works of the asynchronous ones (their duration on NCCL's stream)."""

    calls = None
    works = None
    #: Inside a recorded program collective (an object collective's own calls are its part).
    inside = False


_SENT = _SentByHook()

#: Per-parameter gradient-ready times: every step of the first ones (warm-up,
#: the bucket rebuild, static_graph's second rebuild), then one step in 10.
_GRAD_FULL_STEPS = 12
_GRAD_EVERY = 10

#: DDP settles its bucket layout within the first steps (the rebuild before
#: the second step; with ``static_graph`` before the third): the layout is
#: read from the reducer until then when no hook of ours sees the buckets.
_LAYOUT_STEPS = 4


def _patch_all_reduce():
    """Lets wrapped hooks see what they send: ``torch.distributed.all_reduce``
    notes the tensor's dtype and size while a hook runs (one thread-local
    check otherwise). PyTorch's hooks call it through the module attribute. The same
    wrapper records the program's own calls (:func:`_record_program_collectives`)."""
    _patch_collective("all_reduce")


#: The ``torch.distributed`` collectives recorded when a program calls them on the training
#: thread, each with the argument that holds what it sends (None: nothing measured).
_PROGRAM_COLLECTIVES = {
    "all_reduce": "tensor",
    "broadcast": "tensor",
    "reduce": "tensor",
    "all_gather": "tensor",
    "all_gather_into_tensor": "input_tensor",
    "reduce_scatter": "input_list",
    "reduce_scatter_tensor": "input",
    "all_to_all_single": "input",
    "barrier": None,
    "all_gather_object": None,
    "broadcast_object_list": None,
    "gather_object": None,
}

#: The instrumentation that records the program's own collectives (the last one built).
_PROGRAM = {"inst": None}


def _record_program_collectives(inst):
    """Records every synchronous ``torch.distributed`` collective of :data:`_PROGRAM_COLLECTIVES`
    that the training thread calls outside DDP's hooks (the program's own: a loss averaged for
    logging, a metric, Hugging Face's Trainer's per-step count of tokens; a library's) as a
    ``collective`` span with ``"what": "program"``: its time counts as communication, and a rank
    that hangs in one is seen waiting in it. Calls with ``async_op=True`` are recorded when
    their work completes, but on NCCL (see :meth:`_Instrumentation.timed_collective`)."""
    _PROGRAM["inst"] = inst
    for name in _PROGRAM_COLLECTIVES:
        _patch_collective(name)


_TORCH_DIR = os.path.dirname(torch.__file__) + os.sep
_THIS_FILE = os.path.abspath(__file__)
#: This package's directory: ``auto.py``'s frames (``python -m ddp_probe_torch.auto``) are not the
#: program's either.
_THIS_DIR = os.path.dirname(_THIS_FILE) + os.sep
#: Source files named in a caller chain at most.
_CALLER_FILES = 3
#: Function names that say what a loop is doing between steps: an evaluation, a checkpoint.
_PHASE_NAMES = re.compile("eval|valid|test|predict|checkpoint|save", re.IGNORECASE)


def _short_path(path):
    """A source file as a reader knows it: the part after ``site-packages/`` for an installed
    package (``transformers/trainer.py``), else the file's name."""
    marker = "site-packages" + os.sep
    i = path.rfind(marker)
    return path[i + len(marker):] if i >= 0 else os.path.basename(path)


def _caller_chain(phase=False):
    """Where the program called a collective: the first :data:`_CALLER_FILES` source files
    outside torch, this package and the interpreter's own frozen modules (``<frozen runpy>``,
    which runs the script under ``ddp-probe run --auto-instrument``) on the stack, innermost
    first, each with its innermost frame (``accelerate/utils/operations.py:345 in
    _gpu_gather_one <- accelerate/accelerator.py:3012 in gather <- transformers/trainer.py:5626
    in _get_num_items_in_batch``; a script's own loop is one file: ``train.py:42 in main``).
    About 10 us; only the program's own collectives pay it.

    With ``phase`` (a call between steps, where the summary names what the loop did), when no
    frame of the chain has a name that says evaluation or checkpoint (:data:`_PHASE_NAMES`),
    the innermost frame that has one, further out on the stack, is added at its end: PyTorch
    Lightning's metric reduction at a validation's end, ``lightning/.../result.py:248 in
    compute``, ends in ``lightning/.../logger_connector.py:148 in
    update_eval_epoch_metrics``."""
    frames = []
    files = 0
    found = not phase  # a frame named like a phase is in ``frames``, or none is wanted
    f = sys._getframe(2)
    walked = 0
    while f is not None and walked < 64:
        walked += 1
        path = f.f_code.co_filename
        if not (
            path.startswith(_TORCH_DIR)
            or path.startswith("<frozen ")
            or os.path.abspath(path).startswith(_THIS_DIR)
        ):
            frame = (path, f.f_lineno, f.f_code.co_name)
            hit = not found and _PHASE_NAMES.search(frame[2]) is not None
            if files < _CALLER_FILES and (not frames or frames[-1][0] != path):
                # A file's innermost frame stands for it.
                frames.append(frame)
                files += 1
                found = found or hit
            elif hit:
                frames.append(frame)
                found = True
            if files == _CALLER_FILES and found:
                break
        f = f.f_back
    return " <- ".join(f"{_short_path(p)}:{line} in {name}" for p, line, name in frames)


def _patch_collective(name):
    original = getattr(dist, name, None)
    if original is None or getattr(original, "_ddp_probe", False):
        return
    import inspect

    try:
        names = list(inspect.signature(original).parameters)
    except (TypeError, ValueError):
        names = []
    sent_name = _PROGRAM_COLLECTIVES.get(name)
    sent_pos = names.index(sent_name) if sent_name in names else None
    async_pos = names.index("async_op") if "async_op" in names else None
    group_pos = names.index("group") if "group" in names else None
    hook_sees = name == "all_reduce"

    def argument(args, kwargs, key, pos):
        if key in kwargs:
            return kwargs[key]
        return args[pos] if pos is not None and pos < len(args) else None

    @functools.wraps(original)
    def collective(*args, **kwargs):
        if _SENT.calls is not None or _SENT.works is not None:
            # Inside a wrapped communication hook: what it sends belongs to the bucket's span.
            sent = argument(args, kwargs, sent_name, sent_pos)
            if hook_sees and _SENT.calls is not None and isinstance(sent, torch.Tensor):
                _SENT.calls.append((_dtype_name(sent.dtype), sent.numel() * sent.element_size()))
            work = original(*args, **kwargs)
            if hook_sees and _SENT.works is not None and work is not None:
                _SENT.works.append(work)
            return work
        inst = _PROGRAM["inst"]
        if (
            inst is None
            or _SENT.inside
            or threading.get_ident() != inst.train_thread
            or _compiling()
        ):
            return original(*args, **kwargs)
        issued_async = bool(argument(args, kwargs, "async_op", async_pos))
        if issued_async and "nccl" in inst.backend:
            # NCCL's work completes on its stream: no host time would be the collective's.
            return original(*args, **kwargs)
        sent = argument(args, kwargs, sent_name, sent_pos) if sent_name else None
        tensors = [sent] if isinstance(sent, torch.Tensor) else [
            x for x in (sent if isinstance(sent, (list, tuple)) else ()) if isinstance(x, torch.Tensor)
        ]
        nbytes = sum(x.numel() * x.element_size() for x in tensors)
        dtype = _dtype_name(tensors[0].dtype) if tensors else None
        on_gpu = bool(tensors) and tensors[0].is_cuda
        group = argument(args, kwargs, "group", group_pos)
        # DDP's group numbers its collectives; a call on another group has other numbers.
        counted = (group if group is not None else dist.group.WORLD) is inst.pg
        # A call that torch's own code made for the program (DDP's Join flags, the
        # ZeroRedundancyOptimizer's broadcasts): the function that made it, its file named from
        # the torch package's directory (`torch/distributed/algorithms/join.py`) wherever torch
        # is installed.
        made_by = sys._getframe(1).f_code
        via = (
            f"torch/{made_by.co_filename[len(_TORCH_DIR):]} in {made_by.co_name}"
            if made_by.co_filename.startswith(_TORCH_DIR)
            else None
        )
        _SENT.inside = True
        try:
            return inst.timed_collective(
                name, nbytes, dtype, "program", lambda: original(*args, **kwargs), on_gpu, counted,
                _caller_chain(phase=inst.state is None), issued_async, via,
            )
        finally:
            _SENT.inside = False

    collective._ddp_probe = True
    setattr(dist, name, collective)


def _patch_torch_save(inst):
    """Times every ``torch.save`` (:meth:`_Instrumentation.note_save`): checkpoints are the
    loop's longest work between steps, and the same file saved by every rank is a race."""
    original = torch.save
    if getattr(original, "_ddp_probe", False):
        return

    @functools.wraps(original)
    def save(obj, f, *args, **kwargs):
        start = _ANCHOR_NS + _PERF_NS()
        try:
            return original(obj, f, *args, **kwargs)
        finally:
            try:
                inst.note_save(f, start, _ANCHOR_NS + _PERF_NS())
            except Exception as e:  # noqa: BLE001 - recording must not break training
                _LOG.debug("ddp_probe_torch: recording a save failed: %s", e)

    save._ddp_probe = True
    torch.save = save


class _GradClearingCheck:
    """Whether the program clears the gradients between optimizer steps (``zero_grad``). Without
    it every backward adds to the gradients of all the steps before, silently: the loss still
    goes down for a while, the updates grow step after step.

    One trainable parameter of the DDP model is watched, over the first steps only. An optimizer
    step arms the check with the gradient tensor it left; the next backward's first gradient
    for the parameter (a tensor hook: before it is added to ``.grad``) finds that tensor
    cleared when a ``zero_grad`` of any optimizer or module ran in between, when ``.grad`` is
    None or a tensor with other values, or when it holds only zeros (a program's own
    ``p.grad.zero_()``; read once per watched step, a device sync on a GPU). ``_KEPT`` steps in a row that found the
    gradient as the optimizer left it say so once, on rank 0's console and in every trace; the
    first step that found it cleared ends the check, and the hook is removed either way."""

    #: Watched steps in a row whose backward found the step before's gradients: a warning.
    _KEPT = 2
    #: Optimizer steps after which the check gives up (a program that steps without any
    #: backward between, then clears: nothing to say).
    _STEPS = 20

    def __init__(self, inst, param):
        self.inst = inst
        self.param = param
        #: A ``zero_grad`` ran since the last optimizer step.
        self.cleared = False
        #: The gradient tensor the last optimizer step left, until the next backward reads it.
        self.left = None
        self.kept = 0
        self.steps = 0
        self.hook = param.register_hook(self.on_incoming_grad)

    def on_zero_grad(self):
        self.cleared = True

    def on_optimizer_step(self):
        if self.hook is None:
            return
        self.steps += 1
        if self.steps > self._STEPS:
            self.finish()
            return
        self.left = self.param.grad
        self.cleared = False

    def on_incoming_grad(self, grad):
        left, self.left = self.left, None
        if left is None or self.hook is None:
            return None
        now = self.param.grad
        if self.cleared or now is None or not self.holds_what_was_left(now, left):
            self.finish()
            return None
        self.kept += 1
        if self.kept >= self._KEPT:
            self.finish()
            self.inst.warn(
                "the gradients were not cleared between optimizer steps: in the "
                f"{self.kept} steps after the first, the backward added its gradients to the "
                "ones the optimizer had just used (no `zero_grad` ran in between and `.grad` "
                "still held them), so every update carries the gradients of all the steps "
                "before it; call `optimizer.zero_grad()` once per optimizer step (after "
                "`optimizer.step()`, or before `loss.backward()`)"
            )
        return None

    @staticmethod
    def holds_what_was_left(now, left):
        """Whether ``.grad`` still holds the nonzero gradient the optimizer step left: the same
        tensor, or (DDP's ``gradient_as_bucket_view``, whose bucket rebuild after the first
        step points ``.grad`` at a new bucket's view with the values copied) equal values."""
        now = now.detach()
        if not bool(now.ne(0).any()):
            return False
        return now.data_ptr() == left.data_ptr() or torch.equal(now, left)

    def finish(self):
        """Ends the check: the hook removed, and the instrumentation no longer calls it at each
        optimizer step or ``zero_grad``."""
        hook, self.hook = self.hook, None
        self.left = None
        if hook is not None:
            hook.remove()
        if self.inst.grad_clearing is self:
            self.inst.grad_clearing = None


def _patch_zero_grad():
    """Tells every instrumented model's :class:`_GradClearingCheck` when a ``zero_grad`` of an
    optimizer or a module runs (subclasses that do not override it included)."""
    for cls in (torch.optim.Optimizer, torch.nn.Module):
        original = cls.zero_grad
        if getattr(original, "_ddp_probe", False):
            continue

        def make(original):
            @functools.wraps(original)
            def zero_grad(self, *args, **kwargs):
                for inst in _ACTIVE:
                    if inst.grad_clearing is not None:
                        inst.grad_clearing.on_zero_grad()
                return original(self, *args, **kwargs)

            zero_grad._ddp_probe = True
            return zero_grad

        cls.zero_grad = make(original)


def _usable_cores():
    """The CPU cores this process may run on (its affinity mask: what a container or a
    launcher's binding gives it), else the machine's."""
    try:
        return len(os.sched_getaffinity(0))
    except (AttributeError, OSError):
        return os.cpu_count()


def _distributed_sampler(sampler):
    """The ``DistributedSampler`` a DataLoader's index sampler draws from: itself, or the
    sampler inside its batch sampler (a wrapper's ``sampler`` or ``batch_sampler``, a few
    levels down); None when there is none."""
    from torch.utils.data.distributed import DistributedSampler

    for _ in range(4):
        if sampler is None:
            return None
        if isinstance(sampler, DistributedSampler):
            return sampler
        inner = getattr(sampler, "sampler", None)
        sampler = inner if inner is not None else getattr(sampler, "batch_sampler", None)
    return None


def _patch_data_loader(inst):
    """Times every ``next`` of a PyTorch DataLoader iterator (the data wait)."""
    from torch.utils.data import dataloader

    cls = dataloader._BaseDataLoaderIter
    original = cls.__next__
    if getattr(original, "_ddp_probe", False):
        return

    @functools.wraps(original)
    def __next__(it):
        t = _ANCHOR_NS + _PERF_NS()
        try:
            if it._num_yielded == 0:
                inst.note_loader_pass(it)
        except Exception as e:  # noqa: BLE001 - recording must not break training
            _LOG.debug("ddp_probe_torch: reading the loader's sampler failed: %s", e)
        # Only a batch counts: the StopIteration that ends an epoch is no step's data (it left
        # a batch pending, and the collectives after the epoch's loop, timm's loss average and
        # BatchNorm all-reduce, went to a next step that never came).
        try:
            batch = original(it)
        except StopIteration:
            try:
                inst.note_loader_end(it)
            except Exception as e:  # noqa: BLE001 - recording must not break training
                _LOG.debug("ddp_probe_torch: recording the loader's end failed: %s", e)
            raise
        try:
            inst.note_data_wait(
                t, _ANCHOR_NS + _PERF_NS(), id(getattr(it, "_dataset", None)), batch
            )
        except Exception as e:  # noqa: BLE001 - recording must not break training
            _LOG.debug("ddp_probe_torch: recording failed: %s", e)
        return batch

    __next__._ddp_probe = True
    cls.__next__ = __next__


_KEPT_OUT_OF_DYNAMO = False


def _module_code():
    """Every code object of this module, nested functions included."""
    found = []

    def walk(code):
        found.append(code)
        for const in code.co_consts:
            if isinstance(const, types.CodeType):
                walk(const)

    for obj in list(globals().values()):
        if isinstance(obj, types.FunctionType) and obj.__module__ == __name__:
            walk(obj.__code__)
        elif isinstance(obj, type) and obj.__module__ == __name__:
            for attr in vars(obj).values():
                fn = getattr(attr, "__func__", attr)
                if isinstance(fn, types.FunctionType):
                    walk(fn.__code__)
    return found


def _keep_out_of_dynamo():
    """Tells Dynamo (``torch.compile``) to run this module's hooks as they are.

    A compiled DDP model calls its forward hooks outside the compiled frame,
    and Dynamo would compile each hook as a frame of its own: graph breaks at
    every clock reading and a warning per rank. Marking the code objects
    "skip, recursively" leaves them plain Python, with no graph break. Done
    once ``torch._dynamo`` is loaded (importing it costs seconds, so it is
    never imported here): at ``instrument``, after ``torch.compile`` and at
    each step's end."""
    global _KEPT_OUT_OF_DYNAMO
    if _KEPT_OUT_OF_DYNAMO or "torch._dynamo" not in sys.modules:
        return
    _KEPT_OUT_OF_DYNAMO = True
    try:
        from torch._dynamo.eval_frame import set_code_exec_strategy
        from torch._dynamo.types import FrameAction, FrameExecStrategy
    except ImportError as e:
        _say(f"cannot keep the hooks out of torch.compile ({e}): expect extra graph breaks")
        return
    strategy = FrameExecStrategy(FrameAction.SKIP, FrameAction.SKIP)
    for code in _module_code():
        set_code_exec_strategy(code, strategy)


def _compiling():
    """True while Dynamo traces (constant-folded there, so a hook that returns
    on it adds nothing to the graph and no graph break)."""
    return torch.compiler.is_compiling()


def _patch_compile():
    """``torch.compile`` that keeps this module's hooks out of Dynamo once it
    loads, and times the forward of a compiled instrumented model."""
    original = torch.compile
    if getattr(original, "_ddp_probe", False):
        return

    @functools.wraps(original)
    def compile(*args, **kwargs):
        result = original(*args, **kwargs)
        _keep_out_of_dynamo()
        target = args[0] if args else kwargs.get("model")
        for inst in _ACTIVE:
            if target is inst.ddp and isinstance(result, torch.nn.Module):
                inst.hook_compiled(result)
        return result

    compile._ddp_probe = True
    torch.compile = compile


_ACTIVE = []


def _accelerate_hint():
    """What to add when Accelerate is loaded and no DistributedDataParallel was built: on CPU it
    starts the process group but leaves the model unwrapped unless told to use the CPU
    (measured with accelerate 1.16 under torchrun: DistributedType.NO)."""
    if "accelerate" not in sys.modules:
        return ""
    return (
        "; Accelerate on CPU wraps the model only with ACCELERATE_USE_CPU=1 (or `accelerate "
        "launch --cpu`)"
    )


def _why_not_ddp(model):
    """Why ``model``, which is not a ``DistributedDataParallel``, cannot be recorded."""
    import torch.distributed as dist

    name = type(model).__name__
    fsdp_types = []
    try:
        from torch.distributed.fsdp import FullyShardedDataParallel

        fsdp_types.append(FullyShardedDataParallel)
        from torch.distributed.fsdp import FSDPModule  # fully_shard (FSDP2), torch 2.6+

        fsdp_types.append(FSDPModule)
    except ImportError:
        pass
    if fsdp_types and isinstance(model, tuple(fsdp_types)):
        return f"got {name}, a model sharded by FSDP: ddp-probe records DistributedDataParallel only"
    hint = _accelerate_hint()
    if not (dist.is_available() and dist.is_initialized()):
        return (
            f"got {name} (not DistributedDataParallel) and torch.distributed is not initialized "
            f"in this process, so the program is not training data-parallel here{hint}"
        )
    world = dist.get_world_size()
    if world == 1:
        return (
            f"got {name} (not DistributedDataParallel) in a job of one process; frameworks "
            "leave the model unwrapped then"
        )
    return (
        f"got {name}, not a torch.nn.parallel.DistributedDataParallel, in a job of {world} "
        f"processes: pass the model that DistributedDataParallel(...) returned{hint}"
    )


def instrument_every_ddp():
    """Records the ``DistributedDataParallel`` model this program builds, without a line in it.

    From this call on, each ``DistributedDataParallel(...)`` built in this process (a framework's:
    Hugging Face's Trainer and Accelerate, PyTorch Lightning's ``strategy="ddp"``, or the
    script's own) is given to :func:`instrument` as its constructor returns; the first one of a
    process is recorded (one trace per rank) and a later one is said once and left unrecorded.
    Ranks that ``torch.multiprocessing.spawn`` starts from here do the same. Nothing that goes
    wrong here stops the training. ``python -m ddp_probe_torch.auto SCRIPT`` (what
    ``ddp-probe run --auto-instrument`` starts) calls it before the script runs. Idempotent.
    """
    from torch.nn.parallel import DistributedDataParallel

    original = DistributedDataParallel.__init__
    if getattr(original, "_ddp_probe_auto", False):
        return

    @functools.wraps(original)
    def __init__(self, *args, **kwargs):
        _DDP_BUILT.append(True)
        # A recorded job pays nothing for the check of training without DDP.
        while _NO_DDP_CHECK:
            _NO_DDP_CHECK.pop().remove()
        args, kwargs = _caps_from_launcher(original, self, args, kwargs)
        try:
            with warnings.catch_warnings(record=True) as raised:
                original(self, *args, **kwargs)
        finally:
            _warn_from_caller(raised, sys._getframe(1))
        _instrument_built(self)

    __init__._ddp_probe_auto = True
    DistributedDataParallel.__init__ = __init__
    _patch_spawn_for_auto()
    _watch_for_training_without_ddp()


#: Whether a DistributedDataParallel was built in this process (under instrument_every_ddp).
_DDP_BUILT = []

#: The handle of the global optimizer step pre-hook of :func:`_watch_for_training_without_ddp`
#: while it is registered.
_NO_DDP_CHECK = []


def _watch_for_training_without_ddp():
    """Says, at the first optimizer step of a process, when the process group has several ranks
    but no ``DistributedDataParallel`` was built: nothing is recorded, and unless the program
    averages the gradients itself its ranks train apart. PyTorch's own ImageNet example does so
    on CPU: ``init_process_group`` runs, the model is never wrapped. A global optimizer step
    pre-hook, removed when a DistributedDataParallel is built; said once, by rank 0. (It cannot
    remove itself: PyTorch iterates over the global hooks while it runs them.)"""
    import torch.optim.optimizer as optim_mod

    register = getattr(optim_mod, "register_optimizer_step_pre_hook", None)
    if register is None or _NO_DDP_CHECK or _DDP_BUILT:
        return
    checked = []

    def first_step(optimizer, args, kwargs):
        if checked:
            return
        checked.append(True)
        try:
            why = _trained_without_ddp(optimizer)
            if why:
                _say(why)
        except Exception:  # noqa: BLE001 - a check must never stop the training
            pass

    _NO_DDP_CHECK.append(register(first_step))


def _trained_without_ddp(optimizer):
    """What to say about an optimizer stepping with no ``DistributedDataParallel`` built, or
    None: nothing when one was built or the job has one rank, or on ranks other than 0 (one
    line for the job). A process the launcher started as one of several ranks that never
    started a process group trains alone: said so."""
    import torch.distributed as dist

    if _DDP_BUILT:
        return None
    if not (dist.is_available() and dist.is_initialized()):
        try:
            world, rank = _env_int("WORLD_SIZE", 1), _env_int("RANK", 0)
        except ValueError:
            return None
        if world < 2 or rank != 0:
            return None
        return (
            f"the optimizer steps in a job of {world} ranks, but this process never called "
            "torch.distributed.init_process_group: every rank trains its own copy of the model "
            "alone and nothing of their work is shared (on the same data, the same work done "
            f"{world} times); nothing is recorded. Call init_process_group and wrap the model in "
            "DistributedDataParallel (torch.nn.DataParallel is one process driving several "
            "GPUs, not a rank of a job), or run the program as one process"
        )
    world, rank = dist.get_world_size(), dist.get_rank()
    if world < 2 or rank != 0:
        return None
    params = [p for group in optimizer.param_groups for p in group["params"]]
    try:
        from torch.distributed.tensor import DTensor
    except ImportError:  # before torch 2.4
        DTensor = ()
    # FSDP marks the parameters it flattened (FSDP1); fully_shard (FSDP2) makes them DTensors.
    if any(getattr(p, "_fsdp_flattened", False) or isinstance(p, DTensor) for p in params):
        return (
            f"the optimizer steps sharded parameters (FSDP) in a job of {world} ranks: "
            "ddp-probe records DistributedDataParallel only; nothing is recorded"
        )
    by = "DeepSpeed's engine" if "deepspeed" in sys.modules else None
    if by:
        return (
            f"the optimizer steps in a job of {world} ranks with no DistributedDataParallel "
            f"built ({by} reduces the gradients): ddp-probe records DistributedDataParallel "
            "only; nothing is recorded"
        )
    return (
        f"the optimizer steps in a job of {world} ranks, but no DistributedDataParallel model "
        "was built, so nothing is recorded; unless the program averages the gradients itself "
        "(its own all_reduce, Horovod), each rank trains its own copy of the model on its own "
        f"data{_accelerate_hint()}"
    )


def _warn_from_caller(raised, caller):
    """Issues again the warnings DistributedDataParallel's constructor raised under
    :func:`instrument_every_ddp`'s wrapper. Those PyTorch aims at the constructor's caller
    (``stacklevel=2``: "`broadcast_buffers` is deprecated", PyTorch 2.13 and later) would name this
    module's line; they name the program's line that built the model, as without the wrapper.
    The others keep their own place."""
    for w in raised:
        if os.path.abspath(w.filename) == _THIS_FILE:
            warnings.warn_explicit(
                w.message,
                w.category,
                caller.f_code.co_filename,
                caller.f_lineno,
                module=caller.f_globals.get("__name__"),
                registry=caller.f_globals.setdefault("__warningregistry__", {}),
                module_globals=caller.f_globals,
            )
        else:
            warnings.showwarning(w.message, w.category, w.filename, w.lineno, w.file, w.line)


def _caps_from_launcher(init, ddp, args, kwargs):
    """The constructor's arguments with the bucket caps ``ddp-probe`` hands the job
    (``DDP_PROBE_BUCKET_CAP_MB``, ``DDP_PROBE_BUCKET_CAP_MB_LIST``: ``run --bucket-cap-mb``,
    each candidate of ``tune``) in place of the program's, so that a program that builds its
    DDP model without reading them is tuned all the same; said once per process."""
    cap = os.environ.get("DDP_PROBE_BUCKET_CAP_MB", "").strip()
    caps = os.environ.get("DDP_PROBE_BUCKET_CAP_MB_LIST", "").strip()
    if not cap and not caps:
        return args, kwargs
    import inspect

    signature = inspect.signature(init)
    try:
        bound = signature.bind(ddp, *args, **kwargs)
    except TypeError:
        return args, kwargs  # the constructor will say what is wrong with its arguments
    said = []
    try:
        if cap:
            before = bound.arguments.get("bucket_cap_mb")
            bound.arguments["bucket_cap_mb"] = float(cap)
            said.append(f"bucket_cap_mb={float(cap):g} (the program's: {before if before is not None else 'default'})")
        if caps:
            if "bucket_cap_mb_list" not in signature.parameters:
                said.append("no bucket_cap_mb_list: this PyTorch's DistributedDataParallel has none")
            else:
                bound.arguments["bucket_cap_mb_list"] = [float(c) for c in caps.split(",") if c.strip()]
                said.append(f"bucket_cap_mb_list={caps}")
    except ValueError as e:
        _say(f"the bucket caps ddp-probe handed the job are not numbers ({e}); the program's are kept")
        return args, kwargs
    if said and not _SAID_CAPS:
        _SAID_CAPS.append(True)
        _say("from ddp-probe: " + ", ".join(said))
    # `self` is the first of the bound arguments; the caller passes it itself.
    return bound.args[1:], bound.kwargs


#: Whether the caps handed by ddp-probe were said.
_SAID_CAPS = []


#: Whether a second DDP model of this process was said to go unrecorded.
_SAID_ANOTHER_MODEL = []


def _instrument_built(ddp_model):
    """:func:`instrument_every_ddp`'s step for each model built; never raises."""
    if any(inst.ddp is ddp_model for inst in _ACTIVE):
        return
    if _ACTIVE:

        def described(model):
            module = getattr(model, "module", model)
            return type(module).__name__, sum(p.numel() for p in module.parameters())

        kind, numel = described(ddp_model)
        if not _SAID_ANOTHER_MODEL:
            _SAID_ANOTHER_MODEL.append(True)
            first_kind, first_numel = described(_ACTIVE[0].ddp)
            _say(
                f"another DistributedDataParallel model ({kind} of {numel:,} parameters) was "
                f"built; only the first ({first_kind} of {first_numel:,} parameters) is "
                "recorded (one trace per rank)"
            )
        # What summary says of the steps' unexplained time (a GAN's discriminator trains there).
        try:
            _ACTIVE[0].writer.record({"type": "instant", "name": "unrecorded_ddp_model",
                                      "t": now_ns(), "args": {"module": kind, "parameters": numel}})
        except Exception as e:  # noqa: BLE001 - recording must never stop the training
            _LOG.debug("ddp_probe_torch: recording failed: %s", e)
        return
    try:
        instrument(ddp_model)
    except Exception as e:  # noqa: BLE001 - recording must never stop the training
        _say(f"instrument failed ({type(e).__name__}: {e}); training goes on, unrecorded")


class _InstrumentedRank:
    """A function ``torch.multiprocessing.spawn`` runs as each rank, with
    :func:`instrument_every_ddp` first (pickled by reference, like the function it wraps)."""

    def __init__(self, fn):
        self.fn = fn

    def __call__(self, *args, **kwargs):
        instrument_every_ddp()
        return self.fn(*args, **kwargs)


def _patch_spawn_for_auto():
    """Makes ``torch.multiprocessing.spawn``/``start_processes`` run each rank through
    :class:`_InstrumentedRank` (a spawned process runs the script's function, not its start)."""
    spawn_mod = sys.modules.get("torch.multiprocessing.spawn")
    if spawn_mod is None or getattr(spawn_mod.start_processes, "_ddp_probe_auto", False):
        return
    original = spawn_mod.start_processes

    @functools.wraps(original)
    def start_processes(fn, *args, **kwargs):
        if not isinstance(fn, _InstrumentedRank):
            fn = _InstrumentedRank(fn)
        return original(fn, *args, **kwargs)

    start_processes._ddp_probe_auto = True
    spawn_mod.start_processes = start_processes
    import torch.multiprocessing as torch_mp

    torch_mp.start_processes = start_processes


def instrument(ddp_model, *, trace_dir=None):
    """Records ``ddp_model`` (a ``DistributedDataParallel``) in the ddp-probe trace format.

    Returns ``ddp_model`` itself, so ``model = instrument(DDP(model))`` works;
    ``torch.compile(DDP(model))`` may be given too (before or after
    ``instrument``, the compiled model's forward is timed outside the graph).
    ``trace_dir`` overrides ``DDP_PROBE_TRACE_DIR``. Without either (or with
    ``DDP_PROBE_TRACE=0``) this logs one line and records nothing; so it does for a model
    that is not a ``DistributedDataParallel`` (a framework that left it unwrapped in a job of
    one process, or sharded it with FSDP), saying why.
    """
    from torch.nn.parallel import DistributedDataParallel

    compiled = None
    if isinstance(getattr(ddp_model, "_orig_mod", None), DistributedDataParallel):
        # torch.compile(DDP(model)) given: instrument the DDP model inside.
        compiled, ddp_model = ddp_model, ddp_model._orig_mod
    if not isinstance(ddp_model, DistributedDataParallel):
        # The one line must not break a script that runs without it: a framework that leaves
        # the model unwrapped (one process, Accelerate on CPU without ACCELERATE_USE_CPU) or
        # shards it instead (FSDP) trains as before, unrecorded, and each rank says why.
        _say(f"instrument: {_why_not_ddp(ddp_model)}; not recording")
        return ddp_model
    if os.environ.get("DDP_PROBE_TRACE", "").strip().lower() in ("0", "off", "false", "no"):
        _say("DDP_PROBE_TRACE=0: not recording")
        return ddp_model if compiled is None else compiled
    trace_dir = trace_dir or os.environ.get("DDP_PROBE_TRACE_DIR")
    if not trace_dir:
        _say(
            "DDP_PROBE_TRACE_DIR is not set (not under `ddp-probe run`): not recording; "
            "run the script with `ddp-probe run -- python SCRIPT` to record a trace"
        )
        return ddp_model if compiled is None else compiled
    if any(inst.ddp is ddp_model for inst in _ACTIVE):
        return ddp_model if compiled is None else compiled
    if _ACTIVE:
        raise RuntimeError(
            "ddp_probe_torch records one DDP model per process (one trace per rank); "
            "instrument() was already called on another model"
        )
    rank, world_size, local_rank, local_world_size = _rank_and_world()
    inst_header = {
        "type": "header",
        "format": "ddp-probe-trace",
        "version": FORMAT_VERSION,
        "run_id": os.environ.get("DDP_PROBE_RUN_ID")
        or os.environ.get("TORCHELASTIC_RUN_ID")
        or "local",
        "rank": rank,
        "world_size": world_size,
        "local_rank": local_rank,
        "local_world_size": local_world_size,
        "node_rank": _env_int("GROUP_RANK", _env_int("NODE_RANK", 0)),
        "hostname": socket.gethostname(),
        "pid": os.getpid(),
        "start_ns": now_ns(),
        "clock": "unix_ns",
        # Not measured: exact for the ranks of one machine (one clock).
        "offset_to_rank0_ns": 0,
        "offset_uncertainty_ns": 0,
        "program": os.path.basename(sys.argv[0]) if sys.argv and sys.argv[0] else "python",
        "argv": list(sys.argv),
    }
    inst = _Instrumentation(ddp_model, None, world_size)
    backend = dist.get_backend(inst.pg) if dist.is_initialized() else "unknown"
    inst.backend = str(backend)
    inst.backend_json = _ENCODE(inst.backend)
    cap_bytes = getattr(ddp_model, "bucket_bytes_cap", None)
    ddp_cfg = {
        "backend": inst.backend,
        "find_unused_parameters": bool(getattr(ddp_model, "find_unused_parameters", False)),
        # With find_unused_parameters but not static_graph, DDP never rebuilds its buckets.
        "static_graph": bool(getattr(ddp_model, "static_graph", False)),
        "gradient_as_bucket_view": bool(getattr(ddp_model, "gradient_as_bucket_view", False)),
        "params": inst.param_table(),
    }
    # The buffers DDP broadcasts from rank 0 before each forward (`broadcast_buffers`).
    buffers = getattr(ddp_model, "named_module_buffers", None)
    if buffers is None:
        buffers = dict(ddp_model.module.named_buffers())
    if getattr(ddp_model, "broadcast_buffers", False) and buffers:
        ddp_cfg["buffers"] = [
            {"name": name, "dtype": _dtype_name(b.dtype), "bytes": b.numel() * b.element_size()}
            for name, b in buffers.items()
        ]
    if cap_bytes:
        ddp_cfg["bucket_cap_mb"] = _cap_mb(cap_bytes)
        first = getattr(getattr(ddp_model, "_bucket_config", None), "first_bucket_bytes_cap", None)
        if first is None:
            default_first = getattr(dist, "_DEFAULT_FIRST_BUCKET_BYTES", 1024 * 1024)
            explicit = not getattr(ddp_model, "bucket_bytes_cap_default", True)
            first = cap_bytes if explicit else min(default_first, cap_bytes)
        ddp_cfg["first_bucket_bytes"] = int(first)
    layout = inst.current_layout()
    if layout is not None:
        ddp_cfg["buckets"] = layout
        inst.layout = layout
    group = _subgroup_ranks(inst.pg, world_size)
    if group:
        ddp_cfg["group_ranks"] = group
    inst_header["ddp"] = ddp_cfg
    path = os.path.join(trace_dir, f"rank-{rank}.jsonl")
    inst.writer = TraceWriter(path, inst_header)
    run_dir = os.environ.get("DDP_PROBE_RUN_DIR")
    if _WATCHER is None and run_dir:
        # A process multiprocessing started (torch.multiprocessing.spawn's ranks) answers from
        # here, as the rank its process group says.
        _start_watcher(run_dir, rank)
    if _WATCHER is not None:
        # The dump's instant goes into the trace from now on.
        _WATCHER.train_thread = inst.train_thread
        _WATCHER.writer = inst.writer
    if "nccl" in inst.backend and torch.cuda.is_available():
        device = next((p.device for p in inst.params if p.is_cuda), None)
        if device is not None:
            inst.cuda_timer = CudaCollectiveTimer(device, inst.writer)
            inst.writer.pollers.append(inst.cuda_timer.poll)
            try:
                # Events around each NCCL call on NCCL's stream: the spans' durations.
                # (a method of ProcessGroup, which passes it to its backends).
                inst.pg._enable_collectives_timing()
            except Exception as e:  # noqa: BLE001 - spans fall back to the end events
                _say(f"NCCL collective timing is unavailable ({e}); spans end at events after the hook")
    inst.install()
    _ACTIVE.append(inst)
    if compiled is not None:
        inst.hook_compiled(compiled)
    _install_exit(inst.writer)
    budget = _calibration_budget_ns()
    if budget is not None and world_size > 1 and dist.is_initialized():
        # Its all-reduces are the calibration's, not the program's (a second DDP model's
        # instrument runs after the first one's collectives are recorded).
        _SENT.inside = True
        try:
            _calibrate(inst, budget)
        except Exception as e:  # noqa: BLE001 - the advice goes without; training must not
            _say(f"the start-up calibration failed ({type(e).__name__}: {e}); advise will fit "
                 "its cost model to the run's own collectives")
        finally:
            _SENT.inside = False
    _record_program_collectives(inst)
    _say(f"recording rank {rank} to {path}")
    return ddp_model if compiled is None else compiled


#: The start-up calibration (the same plan as the reference DDP's, ddp/src/calibrate.rs): at
#: most this many sizes from 4 KiB up to the gradients' size, this many calls each.
_CALIBRATION_SIZES = 8
_CALIBRATION_REPEATS = 3
_CALIBRATION_SMALLEST = 4096
_CALIBRATION_PROBE_ROUNDS = 3


def _calibration_budget_ns():
    """The calibration's budget in ns, or None when ``DDP_PROBE_CALIBRATE`` turns it off."""
    if os.environ.get("DDP_PROBE_CALIBRATE", "").strip().lower() in ("0", "off", "false", "no"):
        return None
    try:
        ms = float(os.environ.get("DDP_PROBE_CALIBRATE_MS", "1000"))
    except ValueError:
        ms = 1000.0
    return ms * 1e6


def _sweep_sizes(gradient_bytes):
    """Sizes in bytes, geometric from 4 KiB to the gradients' size, multiples of 4."""
    top = max(gradient_bytes, _CALIBRATION_SMALLEST)
    n = _CALIBRATION_SIZES
    ratio = (top / _CALIBRATION_SMALLEST) ** (1.0 / (n - 1))
    sizes = []
    for i in range(n):
        b = max(1, round(_CALIBRATION_SMALLEST * ratio**i / 4)) * 4
        if not sizes or sizes[-1] != b:
            sizes.append(b)
    return sizes


def _calibrate(inst, budget_ns):
    """Times all-reduces of a sweep of sizes with nothing else running, then (on the CPU) one
    while the rank multiplies matrices, and records them as the ``calibration`` spans the
    analysis fits its cost model and interference factors to (docs/trace-format.md). Every rank
    runs the same plan: before each size the ranks agree (one small all-reduce) on the time used
    and the last size's time, so they stop together within the budget."""
    pg, writer = inst.pg, inst.writer
    device = inst.params[0].device if inst.params else torch.device("cpu")
    cuda = device.type == "cuda"
    sync = torch.cuda.synchronize if cuda else (lambda: None)
    gradient_bytes = sum(p.numel() * p.element_size() for p in inst.params)
    start = now_ns()

    def record(name, nbytes, t0, t1, seq):
        span = {"type": "span", "kind": "collective", "start": t0, "end": t1,
                "queued": t0, "op": "all_reduce", "name": name, "bytes": nbytes,
                "dtype": "float32", "transport": inst.backend}
        if seq is not None:
            span["seq"] = seq
        writer.record(span)

    def agree(values):
        t = torch.tensor(values, dtype=torch.float64, device=device)
        dist.all_reduce(t, op=dist.ReduceOp.MAX, group=pg)
        return t.tolist()

    def timed_call(data):
        sync()
        t0 = now_ns()
        dist.all_reduce(data, group=pg)
        seq = inst.seq_after_issue()
        sync()
        return t0, now_ns(), seq

    dist.all_reduce(torch.zeros(_CALIBRATION_SMALLEST // 4, device=device), group=pg)
    call_ns, last_bytes, times = 0.0, _CALIBRATION_SMALLEST, []
    for nbytes in _sweep_sizes(gradient_bytes):
        elapsed, last_ns = agree([float(now_ns() - start), call_ns])
        estimate = last_ns * nbytes / last_bytes
        left = budget_ns * 0.6 - elapsed
        repeats = _CALIBRATION_REPEATS if estimate <= 0 else min(
            _CALIBRATION_REPEATS, max(0, int(left // estimate)))
        if repeats == 0:
            break
        data = torch.zeros(nbytes // 4, dtype=torch.float32, device=device)
        durations = []
        for _ in range(repeats):
            t0, t1, seq = timed_call(data)
            record("calibration", nbytes, t0, t1, seq)
            durations.append(t1 - t0)
        durations.sort()
        call_ns, last_bytes = float(durations[len(durations) // 2]), nbytes
        times.append((nbytes, call_ns))
    if cuda or not times:
        return
    # The interference probe: the largest swept size whose round fits.
    agreed = agree([float(now_ns() - start)] + [t for _, t in times])
    left = budget_ns - agreed[0]
    fits = [(b, ns) for (b, _), ns in zip(times, agreed[1:])
            if 4.5 * ns * _CALIBRATION_PROBE_ROUNDS <= left]
    if not fits:
        return
    probe_bytes, probe_ns = fits[-1]
    a = torch.ones(128, 128)

    # Compute runs exactly as long as the collective it overlaps, then the same number of
    # products alone: the slowdown is the ratio of two spans of the same work (as the
    # reference DDP's calibration does; a count timed beforehand made spans far shorter than
    # the collective and the factor noisy).
    def compute_until(name, done):
        c0, n = now_ns(), 0
        while not done(n):
            a.mm(a)
            n += 1
        writer.record({"type": "span", "kind": "user", "start": c0, "end": now_ns(),
                       "name": name})
        return n

    def compute(name, iters):
        compute_until(name, lambda n: n >= iters)

    data = torch.zeros(probe_bytes // 4, dtype=torch.float32)
    # The small calls: the swept size closest to a small bucket (256 KiB), back to back for
    # about as long as the big call (their extra compute slowdown is each call's cost).
    import math
    small_bytes, small_ns = min(zip([b for b, _ in times], agreed[1:]),
                                key=lambda t: abs(math.log(t[0] / (256 * 1024))))
    small_calls = max(1, min(400, math.ceil(probe_ns / max(small_ns, 1.0))))
    small = torch.zeros(small_bytes // 4, dtype=torch.float32)
    for _ in range(_CALIBRATION_PROBE_ROUNDS):
        done = {}
        agree([0.0])  # start together: the collective's time is transfer, not waiting
        m0 = now_ns()
        work = dist.all_reduce(data, group=pg, async_op=True)
        seq = inst.seq_after_issue()
        work.get_future().then(lambda f, done=done: done.setdefault("end", now_ns()))
        iters = compute_until("calibration compute overlapped",
                              lambda n, work=work: n > 0 and work.is_completed())
        work.wait()
        record("calibration overlapped", probe_bytes, m0, done.get("end", now_ns()), seq)
        compute("calibration compute", iters)
        agree([0.0])
        ends, calls = [], []
        s0 = now_ns()
        for _ in range(small_calls):
            work = dist.all_reduce(small, group=pg, async_op=True)
            calls.append((work, inst.seq_after_issue()))
            work.get_future().then(lambda f, ends=ends: ends.append(now_ns()))
        compute("calibration compute overlapped small", iters)
        for work, _ in calls:
            work.wait()
        # The calls run one after another: each starts when the one before it ended.
        start = s0
        for (_, seq), end in zip(calls, sorted(ends)):
            record("calibration overlapped small", small_bytes, start, end, seq)
            start = end


def _subgroup_ranks(pg, world_size):
    """The global ranks of the process group DDP reduces over, when it is smaller than the world
    (``DDP(model, process_group=group)``): that group numbers the bucket all-reduces, so only its
    ranks share their sequence numbers. None for the whole world or when torch cannot say."""
    try:
        if pg is None or pg.size() >= world_size:
            return None
        return [int(r) for r in dist.get_process_group_ranks(pg)]
    except Exception:  # noqa: BLE001 - a torch without the call, a group this rank is not in
        return None


def _cap_mb(cap_bytes):
    """The shortest bucket_cap_mb that DDP turns into ``cap_bytes`` (0.1, not 0.0999994)."""
    exact = cap_bytes / (1024 * 1024)
    for digits in range(1, 10):
        value = round(exact, digits)
        if int(value * 1024 * 1024) == cap_bytes:
            return value
    return exact


def _rank_and_world():
    """This process's rank, world size, local rank and local world size: the process group's
    when it is initialized, else torchrun's variables. The variables count for the local ones
    only when they agree with the group: ``torch.multiprocessing.spawn``'s ranks inherit the
    launching process's ``RANK=0`` and pass their own rank to ``init_process_group`` (on one
    machine: the local rank is the rank)."""
    env_rank = _env_int("RANK", None)
    env_world = _env_int("WORLD_SIZE", None)
    if dist.is_initialized():
        rank, world_size = dist.get_rank(), dist.get_world_size()
    else:
        rank = 0 if env_rank is None else env_rank
        world_size = 1 if env_world is None else env_world
    if env_rank in (None, rank) and env_world in (None, world_size):
        return (
            rank,
            world_size,
            _env_int("LOCAL_RANK", rank),
            _env_int("LOCAL_WORLD_SIZE", world_size),
        )
    return rank, world_size, rank, world_size


def _install_exit(writer):
    previous = sys.excepthook
    failure = {}

    def excepthook(kind, value, tb):
        failure["message"] = f"{kind.__name__}: {value}"
        previous(kind, value, tb)

    sys.excepthook = excepthook

    def at_exit():
        if "message" in failure:
            writer.close("error", failure["message"])
        else:
            writer.close("ok")

    atexit.register(at_exit)


#: This process's :class:`DumpWatcher` under ``ddp-probe run``, from the module's import on.
_WATCHER = None


def _watch_from_import():
    """Under ``ddp-probe run`` (``DDP_PROBE_RUN_DIR`` set), answers the launcher's dump
    requests from the import on: a job that hangs before ``instrument`` (in
    ``init_process_group``, in DDP's construction while rank 0 downloads the data) or
    never calls it (collectives of its own, another wrapper) still says where each rank
    was. Not in a process that multiprocessing starts (a DataLoader worker imports the
    module again under ``spawn``, with the rank's environment): the rank answers."""
    run_dir = os.environ.get("DDP_PROBE_RUN_DIR")
    if not run_dir or os.environ.get("DDP_PROBE_TRACE", "").strip().lower() in (
        "0", "off", "false", "no",
    ):
        return
    import multiprocessing

    if multiprocessing.parent_process() is not None or getattr(
        multiprocessing.current_process(), "_inheriting", False
    ):
        return
    try:
        rank = _env_int("RANK", 0)
    except ValueError as e:
        _say(f"cannot answer flight-recorder dump requests: {e}")
        return
    _start_watcher(run_dir, rank)


def _start_watcher(run_dir, rank):
    """Makes this process :data:`_WATCHER` for ``rank`` and starts its thread."""
    global _WATCHER
    try:
        _WATCHER = DumpWatcher(run_dir, rank)
    except OSError as e:
        _say(f"cannot answer flight-recorder dump requests: {e}")
        return
    threading.Thread(target=_answer_dump_requests, name="ddp-probe-dumps", daemon=True).start()


def _answer_dump_requests():
    while not _WATCHER.answered:
        time.sleep(_DAEMON_PERIOD_S)
        try:
            _WATCHER.poll()
        except Exception as e:  # noqa: BLE001 - recording must not break training
            _LOG.debug("ddp_probe_torch: answering a dump request failed: %s", e)


_watch_from_import()
