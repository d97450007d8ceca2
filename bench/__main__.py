"""kronjax's benchmark suite against Pinocchio, adam, jaxsim, MuJoCo MJX and frax, in one run:

    python -m bench            # the default sections (about 10 minutes on 2 cores; all but legged and second_order)
    python -m bench --quick    # a smoke run: small batches, n up to 24
    make bench                 # installs kronjax with its `bench` extra (the peers) and runs the suite

Every library gets the same arm, written by ``kj.to_urdf``; every result is compared with
Pinocchio's on the same samples; a peer that is not installed is skipped with a note. Writes
``bench/results/<date>-<machine>.md``, ``.json`` and ``-scaling.png``; asserts nothing (the
targets are in the report's Goals table). docs/benchmarks/ describes the sections and the results.
"""

from __future__ import annotations

import argparse
import os
import sys
import time
from pathlib import Path


def parse(argv=None) -> argparse.Namespace:
    from . import second_order
    from .legged import COMPILE_ONLY, ROBOTS
    from .suite import SECTIONS

    parser = argparse.ArgumentParser(
        prog="python -m bench", description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--quick", action="store_true", help="a smoke run: small batches, n up to 24")
    parser.add_argument("--no-peers", action="store_true", help="only kronjax and Pinocchio")
    parser.add_argument("--no-float32", action="store_true", help="float64 only")
    parser.add_argument(
        "--sections", nargs="+", choices=SECTIONS, help=f"of {', '.join(SECTIONS)} (default all but legged and second_order)"
    )
    parser.add_argument("--batches", type=int, nargs="+", help="inverse-dynamics batches of kronjax and Pinocchio")
    parser.add_argument("--big", type=int, help="the batch of the peers, forward dynamics, Coriolis, derivatives, float32")
    parser.add_argument("--scaling-n", type=int, nargs="+", help="joint counts of the scaling sections")
    parser.add_argument("--chain-n", type=int, help="joints of the long chain of the compile-time section")
    parser.add_argument("--threads", type=int, help="threads of Pinocchio's *InParallel (default 2)")
    robots = (*ROBOTS, *COMPILE_ONLY)
    parser.add_argument("--legged-robots", nargs="+", choices=robots, help="section legged's models (default all)")
    parser.add_argument("--legged-batch", type=int, help="section legged's batch (default 10000; --quick 500)")
    so = "section second_order's"
    parser.add_argument("--second-order-robots", nargs="+", choices=tuple(second_order.ROBOTS), help=f"{so} models (default all)")
    parser.add_argument(
        "--second-order-batch",
        type=int,
        help=f"{so} batch where the four tensors fit the memory cap (default 10000; --quick 500)",
    )
    parser.add_argument("--second-order-gib", type=float, help=f"{so} cap on the four tensors of a call, GiB (default 1)")
    parser.add_argument(
        "--second-order-timeout",
        type=float,
        help=f"{so} seconds of one kronjax row's process, compilation included (default 1200)",
    )
    parser.add_argument(
        "--second-order-process-gib",
        type=float,
        help=f"{so} address space of one kronjax row's process, GiB (default half the memory)",
    )
    parser.add_argument("--out", type=Path, help="results folder (default bench/results)")
    parser.add_argument(
        "--hugepages",
        action="store_true",
        help=f"run with GLIBC_TUNABLES={HUGEPAGES} (Linux): large arrays on transparent huge pages (docs/benchmarks/measurements.md)",
    )
    return parser.parse_args(argv)


# glibc's malloc advises the kernel to back its large allocations with transparent huge pages (read
# at the process' start, so set by starting the benchmark again): at batch 10^4 every output and
# intermediate is fresh memory at each call, and its first touch is one page fault per 4 KiB
HUGEPAGES = "glibc.malloc.hugetlb=1"


def main(argv=None) -> dict:
    """Runs the suite; returns the paths written (``md``, ``json``, ``png``)."""
    args = parse(argv)
    tunables = os.environ.get("GLIBC_TUNABLES", "")
    if args.hugepages and HUGEPAGES not in tunables:
        env = dict(os.environ, GLIBC_TUNABLES=":".join(filter(None, [tunables, HUGEPAGES])))
        command = [sys.executable, "-m", "bench", *(argv if argv is not None else sys.argv[1:])]
        os.execve(sys.executable, command, env)
    import jax

    jax.config.update("jax_enable_x64", True)  # before any array exists; float32 runs use float32 arrays

    from . import report
    from .peers import PEERS, detect
    from .suite import Config, Suite

    changes = {
        k: v
        for k, v in {
            "batches": tuple(args.batches) if args.batches else None,
            "big": args.big,
            "scaling_n": tuple(args.scaling_n) if args.scaling_n else None,
            "chain_n": args.chain_n,
            "threads": args.threads,
            "sections": tuple(args.sections) if args.sections else None,
            "legged_robots": tuple(args.legged_robots) if args.legged_robots else None,
            "legged_batch": args.legged_batch,
            "second_order_robots": tuple(args.second_order_robots) if args.second_order_robots else None,
            "second_order_batch": args.second_order_batch,
            "second_order_memory": int(args.second_order_gib * 2**30) if args.second_order_gib else None,
            "second_order_timeout": args.second_order_timeout,
            "second_order_process_memory": int(args.second_order_process_gib * 2**30) if args.second_order_process_gib else None,
        }.items()
        if v is not None
    }
    changes.update(peers=not args.no_peers, float32=not args.no_float32)
    config = Config.quick(**changes) if args.quick else Config(**changes)

    start = time.perf_counter()
    meta = report.environment()
    meta["command"] = " ".join(["python -m bench", *(argv if argv is not None else sys.argv[1:])])
    print(
        f"kronjax benchmark on {meta['machine']} ({meta['cpu']}, {meta['cores']} cores), "
        f"load average {meta['load_average_start']}; jax {meta['jax']}, XLA_FLAGS={os.environ.get('XLA_FLAGS', '')!r}, "
        f"GLIBC_TUNABLES={os.environ.get('GLIBC_TUNABLES', '')!r}"
    )
    names = ("pinocchio",) + (tuple(n for n in PEERS if n != "pinocchio") if config.peers else ())
    peers = detect(names)
    for name, info in peers.items():
        print(f"  {name:<9} " + (info["version"] if info["available"] else info["note"]))
    if not config.peers:
        print("  peers other than Pinocchio skipped (--no-peers)")
    if not peers["pinocchio"]["available"]:
        sys.exit("Pinocchio is the reference of every comparison: pip install pin (or make bench)")

    records = Suite(config, peers).run()
    meta["load_average_end"] = report.load_average()
    meta["duration_s"] = time.perf_counter() - start
    paths = report.write(records, meta, peers, config, args.out or report.RESULTS)

    met = [g["met"] for g in report.goals(records, config) if g["met"] is not None]
    print(f"\ngoals met: {sum(met)} of {len(met)} (the report's Goals table)")
    failures = [r for r in records if r.note.startswith("failed")]
    if failures:
        print(f"\n{len(failures)} measurement(s) failed: " + "; ".join(f"{r.library} {r.method}" for r in failures))
    print(f"\nload average at the end {meta['load_average_end']}; {meta['duration_s']:.0f} s")
    for path in paths.values():
        print(f"wrote {path}")
    return paths


if __name__ == "__main__":
    main()
