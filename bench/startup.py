"""Start-up: how long `lorekeeper --help` takes, the fastest of N runs (this VM's timing noise is ±50%).

Run: .venv/bin/python bench/startup.py [--runs 7]
Target: <= 0.2 s. For scale, the bare interpreter (`python -c pass`) is printed beside it.
"""

from __future__ import annotations

import argparse
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


def best(command: list[str], runs: int) -> float:
    times = []
    for _ in range(runs):
        started = time.perf_counter()
        subprocess.run(command, cwd=ROOT, stdout=subprocess.DEVNULL, check=True)
        times.append(time.perf_counter() - started)
    return min(times)


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=7)
    args = parser.parse_args()
    bare = best([sys.executable, "-c", "pass"], args.runs)
    helped = best([sys.executable, "-m", "bot.cli", "--help"], args.runs)
    imported = best([sys.executable, "-c", "import engine.game"], args.runs)
    print(f"start-up, fastest of {args.runs} runs")
    print(f"  lorekeeper --help   {helped:.3f} s   (target <= 0.2 s: {'met' if helped <= 0.2 else 'NOT met'})")
    print(f"  bare python         {bare:.3f} s")
    print(f"  import engine.game  {imported:.3f} s   (what a command that plays pays before its first line)")
