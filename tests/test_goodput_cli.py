"""``alloc simulate pollux|sia``: a short run with its per-round plots, and
bad input as one line with exit 2."""
import json

import pytest

from alloc.goodput.cli import main
from alloc.goodput.plots import PLOTS

ROWS = """name,time,application,num_replicas,batch_size
cifar10-0,0,cifar10,1,128
ncf-1,30,ncf,1,32768
bert-2,90,bert,2,12
"""


def test_a_pollux_run_writes_its_figures_and_plots(tmp_path, capsys):
    pytest.importorskip("matplotlib")
    wl = tmp_path / "w.csv"
    wl.write_text(ROWS)
    out = tmp_path / "r.json"
    rc = main(["pollux", "--workload", str(wl), "--policy", "tiresias", "--plots",
               str(tmp_path / "plots"), "--out", str(out)])
    assert rc == 0
    r = json.loads(out.read_text())
    assert r["jobs"] == 3 and r["avg_jct_s"] > 0 and r["p99_jct_s"] >= r["avg_jct_s"]
    for name in PLOTS:
        assert (tmp_path / "plots" / name).stat().st_size > 0
    assert "3 jobs" in capsys.readouterr().err


@pytest.mark.parametrize("row,needle", [
    ("cifar10-0,0,cifar10,1,128\nx-1,zero,cifar10,1,128\n", "row 2: column 'time'"),
    ("cifar10-0,0,resnet,1,128\n", "unknown model"),
])
def test_bad_workloads_are_one_line_and_exit_2(tmp_path, capsys, row, needle):
    wl = tmp_path / "w.csv"
    wl.write_text("name,time,application,num_replicas,batch_size\n" + row)
    assert main(["pollux", "--workload", str(wl), "--policy", "tiresias"]) == 2
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1 and needle in err and "w.csv" in err


def test_the_sia_experiment_without_its_artifact_is_one_line(capsys, monkeypatch):
    monkeypatch.delenv("SIA_ARTIFACT", raising=False)
    assert main(["sia", "--workload", "saturn/workload-1.csv", "--policy", "sia",
                 "--artifact", ""]) == 2
    assert "Sia artifact" in capsys.readouterr().err
