"""How much two Python threads sharing one jepa.Model gain over one thread doing both
threads' calls, back to back in one process (docs/python.md, "Threads and the GIL").

    python bench/python_threads.py MODEL.gguf [--calls 24] [--shape 3,16,128,128] [--rounds 5]

Each round runs --calls embeds of one random clip of --shape ([C, T, H, W]) twice in one
thread, then once in each of two threads at the same time (threads=1 per call, so each call
is one engine thread), and prints both wall times, their ratio (0.5 is a perfect overlap)
and the CPU time per wall second while the two threads ran (2.0: both cores busy the whole
time). The ratio moves with the machine's noise and with what the two cores share; the
test suite checks only that the calls overlap (tests/python/test_model.py).
"""
import argparse
import threading
import time

import numpy as np

import jepa_c as jepa


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("model")
    ap.add_argument("--calls", type=int, default=24)
    ap.add_argument("--shape", default="3,16,128,128")
    ap.add_argument("--rounds", type=int, default=5)
    a = ap.parse_args()
    m = jepa.Model(a.model, threads=1)
    x = np.random.default_rng(0).standard_normal(tuple(int(s) for s in a.shape.split(",")),
                                                 dtype=np.float32)
    m.embed(x, pool="mean")

    def work():
        for _ in range(a.calls):
            m.embed(x, pool="mean")
    print(f"{a.model}: {a.calls} calls of [{a.shape}] per thread")
    for r in range(a.rounds):
        t = time.perf_counter()
        work(), work()
        one = time.perf_counter() - t
        ts = [threading.Thread(target=work) for _ in range(2)]
        t, c = time.perf_counter(), time.process_time()
        [th.start() for th in ts]
        [th.join() for th in ts]
        two, cpu = time.perf_counter() - t, time.process_time() - c
        print(f"round {r}: one thread {one * 1e3:.0f} ms, two threads {two * 1e3:.0f} ms, "
              f"ratio {two / one:.3f}, {cpu / two:.2f} cores busy")


if __name__ == "__main__":
    main()
