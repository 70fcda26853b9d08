"""Runs a PyTorch program with its DistributedDataParallel model recorded, no line added to it.

    python -m ddp_probe_torch.auto SCRIPT [ARGS...]       # as `python SCRIPT ARGS...`
    python -m ddp_probe_torch.auto -m MODULE [ARGS...]    # as `python -m MODULE ARGS...`

``ddp-probe run --auto-instrument`` starts every rank so. Before the program runs,
:func:`ddp_probe_torch.instrument_every_ddp` makes each ``DistributedDataParallel(...)`` it
builds (Hugging Face's Trainer and Accelerate, PyTorch Lightning's ``strategy="ddp"``, the
script's own) recorded as ``ddp_probe_torch.instrument`` would. The program then runs as Python
runs it: ``__name__`` is ``"__main__"``, ``sys.argv`` and ``sys.path[0]`` are what ``python
SCRIPT`` (or ``python -m MODULE``) gives, its exceptions and exit status are its own (like
``python -m cProfile`` and ``coverage run``).
"""

import os
import runpy
import sys


def main(argv):
    if not argv or argv[0] in ("-h", "--help"):
        print(__doc__.strip())
        return 0 if argv else 2
    import ddp_probe_torch

    ddp_probe_torch.instrument_every_ddp()
    if argv[0] == "-m":
        if len(argv) < 2:
            print("ddp_probe_torch.auto: -m needs a module name", file=sys.stderr)
            return 2
        # `python -m` puts the working directory first on the path; so does this module's own -m.
        sys.argv = argv[1:]
        runpy.run_module(argv[1], run_name="__main__", alter_sys=True)
        return 0
    script = argv[0]
    if not os.path.exists(script):
        # Python's own words, which `ddp-probe explain` knows.
        python = os.path.basename(sys.executable or "python")
        print(
            f"{python}: can't open file {os.path.abspath(script)!r}: "
            "[Errno 2] No such file or directory",
            file=sys.stderr,
        )
        return 2
    sys.argv = list(argv)
    sys.path[0] = os.path.dirname(os.path.abspath(script))
    runpy.run_path(script, run_name="__main__")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
