"""Write models/*.json from the published reference figures.

Per-GPU throughput grids: Synergy (Mohan et al., OSDI 2022), as used by its
public simulator (msr-fiddle/synergy, MIT): 9 CPU levels x 5 memory levels per
GPU, 1.0 at 3 cores and 62.5 GB per GPU; 0.1 marks an infeasible cell.
GPU-type speeds and the spread (unconsolidated) factor: Gavel's measured
throughputs (Narayanan et al., OSDI 2020; stanford-futuredata/gavel, MIT) for
the closest model family at batch size 64 (LM: 20).

Usage: python bench/make_models.py [SHARED_DIR]   (default: ../shared)
"""
from __future__ import annotations

import json
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]

#: Synergy model -> (task class, closest Gavel family)
FAMILY = {
    "alexnet": ("image", "ResNet-18 (batch size 64)"),
    "res18": ("image", "ResNet-18 (batch size 64)"),
    "res50": ("image", "ResNet-50 (batch size 64)"),
    "mobilenet": ("image", "ResNet-18 (batch size 64)"),
    "shufflenet": ("image", "ResNet-18 (batch size 64)"),
    "vae": ("image", "CycleGAN"),
    "bert": ("language", "Transformer (batch size 64)"),
    "gnmt": ("language", "Transformer (batch size 64)"),
    "transformer": ("language", "Transformer (batch size 64)"),
    "lstm": ("language", "LM (batch size 20)"),
    "deepspeech": ("speech", "LM (batch size 20)"),
    "m5": ("speech", "ResNet-18 (batch size 64)"),
}
GB = 1024  # MiB per GB in the grid


def main(shared: Path) -> None:
    syn = json.loads((shared / "data/reference/synergy_profiles.json").read_text())
    gav = json.loads((shared / "data/reference/gavel_throughputs.json").read_text())
    cpu = [int(round(c * 1000)) for c in syn["cpu_per_gpu"]]
    mem = [int(round(m * GB)) for m in syn["mem_gb_per_gpu"]]
    out = ROOT / "models"
    out.mkdir(exist_ok=True)
    for name, m in syn["models"].items():
        cls, fam = FAMILY[name]
        one = {t: gav[t][str((fam, 1))]["null"] for t in ("v100", "p100", "k80")}
        speed = {t.upper(): round(one[t] / one["v100"], 3) for t in one}
        ratios = []
        for n in (2, 4, 8):
            key = str((fam, n))
            if key in gav["v100"] and key in gav["v100_unconsolidated"]:
                ratios.append(gav["v100_unconsolidated"][key]["null"] / gav["v100"][key]["null"])
        spread = round(min(1.0, sum(ratios) / len(ratios)), 3) if ratios else 1.0
        grid = [[None if v <= 0.1 else v for v in row] for row in m["tput"]]
        doc = {
            "format": "alloc.model/1",
            "name": name,
            "class": cls,
            "source": ("throughput grid: Synergy, Mohan et al., OSDI 2022 (msr-fiddle/synergy); "
                       f"GPU speeds and spread factor: Gavel, Narayanan et al., OSDI 2020, "
                       f"family {fam!r}"),
            "cpu_per_gpu": cpu,
            "mem_per_gpu": mem,
            "tput": grid,
            "gpu_speed": speed,
            "span": {"switch": 1.0, "socket": 1.0, "server": 1.0,
                     "rack": spread, "cluster": spread},
            "reference_gpu": "V100",
            "ideal": {"cpu_per_gpu": int(m["ideal_cpu_per_gpu"] * 1000),
                      "mem_per_gpu": int(round(m["ideal_mem_gb_per_gpu"] * GB)),
                      "speedup": m["speedup_at_ideal"]},
            "iter_time_s": m["iter_time_s_at_fair"],
            "batch": m["batch"],
        }
        (out / f"{name}.json").write_text(json.dumps(doc, indent=1) + "\n")
        print(f"models/{name}.json  class={cls}  speed={speed}  spread={spread}")


if __name__ == "__main__":
    main(Path(sys.argv[1]) if len(sys.argv) > 1 else ROOT.parent / "shared")
