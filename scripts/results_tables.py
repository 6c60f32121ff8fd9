#!/usr/bin/env python3
"""Markdown tables from parprims results CSVs (gpu-core format) for the docs.

    python3 scripts/results_tables.py docs/results [--shape SHAPE] [--primitive P]

Prints, per primitive, one table of the rows at the headline shape (or the
shape given): method, type, ms, GB/s, fraction of the copy ceiling, and, for
scan, the fraction on the 8n basis the scan target uses. A primitive's rows
come from its own file (`conv.csv` for conv, not `conv-large.csv`, which
holds other runs of the same shapes); peer rows (from `peers.csv` in the
same folder) are included when their shape matches.
"""
import csv
import glob
import os
import sys

HEADLINE = {
    "scan": ["268435456"],
    "compact": ["268435456"],
    "transpose": ["16384x16384", "8192x16384"],
    "matvec": ["16384x16384", "16384x16384/T"],
    "conv": ["8192x8192/k3", "8192x8192/k5", "8192x8192/k7"],
    "copy": ["268435456"],
}


def load(folder):
    """Every CSV row of the folder, each with its file's stem as `file`."""
    rows = []
    for path in sorted(glob.glob(os.path.join(folder, "*.csv"))):
        stem = os.path.splitext(os.path.basename(path))[0]
        with open(path, newline="") as f:
            rows.extend(dict(r, file=stem) for r in csv.DictReader(f))
    return rows


def main():
    folder = sys.argv[1] if len(sys.argv) > 1 else "docs/results"
    only = None
    if "--primitive" in sys.argv:
        only = sys.argv[sys.argv.index("--primitive") + 1]
    rows = load(folder)
    if not rows:
        sys.exit(f"no CSV rows under {folder}")
    print("Commit and command of each file in docs/results/MANIFEST.md.\n")
    for primitive, shapes in HEADLINE.items():
        if only and primitive != only:
            continue
        chosen = [r for r in rows
                  if r.get("primitive") == primitive and r.get("shape") in shapes
                  and r["file"] in (primitive, "peers")]
        if not chosen:
            continue
        extra = primitive == "scan"
        own = next((r for r in chosen if r["file"] == primitive), chosen[0])
        print(f"### {primitive}\n")
        print(f"{own['device']}; copy ceiling {float(own['ceiling_gbps']):.0f} GB/s "
              f"(read + write), from {own['file']}.csv.\n")
        head = "| method | type | shape | ms | GB/s | × ceiling |"
        sep = "|---|---|---|---|---|---|"
        if extra:
            head += " × ceiling at 8n bytes |"
            sep += "---|"
        print(head)
        print(sep)
        for r in chosen:
            ms = float(r["ms_median"])
            line = (f"| {r['algorithm']} | {r['type']} | {r['shape']} | {ms:.4f} | "
                    f"{float(r['gbps']):.0f} | {float(r['fraction_of_ceiling']):.3f} |")
            if extra:
                n = int(r["shape"])
                size = {"i32": 4, "u32": 4, "f32": 4, "i64": 8, "u64": 8, "f64": 8}[r["type"]]
                frac8n = (2 * n * size) / (ms * 1e-3) / 1e9 / float(r["ceiling_gbps"])
                line += f" {frac8n:.3f} |"
            print(line)
        print()


if __name__ == "__main__":
    main()
