"""openb loaders and ``alloc bench openb`` on bad input: one line naming the
file, the line or field and what was expected, exit 2, never a traceback."""
import subprocess
import sys
from pathlib import Path

import pytest

from alloc.cli import main as cli_main
from alloc.errors import InputError
from alloc.experiments.openb import bench_main, load_nodes, load_pods

ROOT = Path(__file__).resolve().parents[1]
NODES = b"sn,cpu_milli,memory_mib,gpu,model\nn1,32000,65536,2,T4\nn0,64000,131072,4,V100\n"
PODS = (b"name,cpu_milli,memory_mib,num_gpu,gpu_milli,gpu_spec\n"
        b"p0,4000,8192,1,500,\np1,8000,8192,2,1000,V100|T4\np2,1000,1024,0,0,\n")
PH = b"name,cpu_milli,memory_mib,num_gpu,gpu_milli\n"
NH = b"sn,cpu_milli,memory_mib,gpu,model\n"

# (which file is bad, its bytes, text the one-line message must hold)
CASES = {
    "int-2^63": ("pods", PH + b"a,9223372036854775808,1,1,100\n", [":2:", "cpu_milli", "0.."]),
    "int-huge": ("pods", PH + b"a,1,99999999999999999999999,1,100\n", [":2:", "memory_mib"]),
    "float-huge": ("pods", PH + b"a,1e400,1,1,100\n", [":2:", "cpu_milli", "integer"]),
    "node-gpus-2^63": ("nodes", NH + b"n,1,1,9223372036854775808,T4\n", [":2:", "'gpu'"]),
    "node-gpus-wide": ("nodes", NH + b"n,1,1,5000,T4\n", [":2:", "'gpu'", "0..1024"]),
    "pod-gpus-huge": ("pods", PH + b"a,1,1,99999999999,1000\n", [":2:", "num_gpu"]),
    "not-utf8-pods": ("pods", PH + b"a,1,1,1,100\nb\xff,1,1,1,100\n", [":3:", "UTF-8"]),
    "not-utf8-nodes": ("nodes", NH + b"n\xe9,1,1,1,T4\n", [":2:", "UTF-8"]),
    "node-no-rows": ("nodes", NH, ["no nodes", "at least one"]),
    "node-no-gpus": ("nodes", NH + b"n,64000,1024,0,\n", ["no node has a GPU"]),
    "pods-no-rows": ("pods", PH, ["no pods"]),
    "missing-column-nodes": ("nodes", b"sn,cpu_milli,memory_mib,model\nn,1,1,T4\n",
                             [":1:", "'gpu'", "missing"]),
    "missing-column-pods": ("pods", b"name,cpu_milli,num_gpu,gpu_milli\na,1,1,100\n",
                            [":1:", "'memory_mib'"]),
    "negative-nodes": ("nodes", NH + b"n,-1,1,1,T4\n", [":2:", "cpu_milli", "0.."]),
    "negative-pods": ("pods", PH + b"a,1,1,-2,1000\n", [":2:", "num_gpu"]),
    "empty-nodes": ("nodes", b"", [":1:", "empty file"]),
    "empty-pods": ("pods", b"", [":1:", "empty file"]),
    "share-too-big": ("pods", PH + b"a,1,1,1,1001\n", [":2:", "gpu_milli", "0..1000"]),
    "directory": ("pods", None, ["is a directory", "expected a CSV file"]),
    "missing-file": ("nodes", "missing", ["cannot read", "expected a CSV file"]),
}


def make(tmp_path, case):
    which, data, _ = CASES[case]
    paths = {"nodes": tmp_path / "nodes.csv", "pods": tmp_path / "pods.csv"}
    paths["nodes"].write_bytes(NODES)
    paths["pods"].write_bytes(PODS)
    bad = tmp_path / f"bad_{which}.csv"
    if data is None:
        bad.mkdir()
    elif data != "missing":
        bad.write_bytes(data)
    paths[which] = bad
    return ["--pods", str(paths["pods"]), "--nodes", str(paths["nodes"]), "--seeds", "1"], bad


@pytest.mark.parametrize("case", sorted(CASES))
def test_bad_input_one_line_exit_2(tmp_path, capsys, case):
    argv, bad = make(tmp_path, case)
    assert bench_main(argv) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1, err
    assert bad.name in err[0] and "Traceback" not in err[0]
    for part in CASES[case][2]:
        assert part in err[0], (part, err[0])
    assert cli_main(["bench", "openb"] + argv) == 2        # the `alloc` entry point
    assert len(capsys.readouterr().err.strip().splitlines()) == 1


@pytest.mark.parametrize("case", ["int-huge", "not-utf8-pods", "node-no-rows"])
def test_python_m_alloc_exit_2(tmp_path, case):
    argv, bad = make(tmp_path, case)
    p = subprocess.run([sys.executable, "-m", "alloc", "bench", "openb"] + argv, cwd=ROOT,
                       capture_output=True, text=True, timeout=60)
    assert p.returncode == 2
    lines = p.stderr.strip().splitlines()
    assert len(lines) == 1 and bad.name in lines[0] and "Traceback" not in p.stderr


@pytest.mark.parametrize("loader,data", [(load_nodes, NODES), (load_pods, PODS)])
def test_byte_order_mark_is_dropped(tmp_path, loader, data):
    plain, bom = tmp_path / "plain.csv", tmp_path / "bom.csv"
    plain.write_bytes(data)
    bom.write_bytes(b"\xef\xbb\xbf" + data)
    a, b = loader(plain), loader(bom)
    assert a.names == b.names and (a.cpu == b.cpu).all()


def test_loader_errors_are_input_errors(tmp_path):
    p = tmp_path / "n.csv"
    p.write_bytes(NH)
    with pytest.raises(InputError, match="no nodes"):
        load_nodes(p)


def test_pod_wider_than_any_node_is_reported_not_nan(tmp_path, capsys):
    nodes, pods = tmp_path / "nodes.csv", tmp_path / "pods.csv"
    nodes.write_bytes(NODES)
    rows = b"".join(b"p%d,1000,1024,1,500,\n" % i for i in range(40))
    pods.write_bytes(PH.replace(b"\n", b",gpu_spec\n") + rows + b"wide,1000,1024,16,1000,\n")
    out = tmp_path / "c.csv"
    assert bench_main(["--pods", str(pods), "--nodes", str(nodes), "--seeds", "1,2",
                       "--policy", "fgd,random", "--out", str(out)]) == 0
    err = capsys.readouterr().err
    assert "Traceback" not in err and "nan" not in err
    assert "1 of 41 pods fit on no node" in err and "wide: 16 GPUs" in err
