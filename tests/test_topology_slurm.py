"""Slurm's topology.conf read as alloc's levels and domains: the tree and
block examples of Slurm's documentation (topology.conf(5) and the topology
guide), bad lines named, and the tree form against a real slurmctld (its
``scontrol show topology``), which Debian's Slurm 22.05 runs (it has no block
plugin: the block form is tested on the documented examples)."""
import pytest

from alloc import Cluster, InputError, Job, Server, allocate, violations
from alloc.adapters.loopback import Loopback, missing
from alloc.adapters.scontrol import fields, hostnames
from alloc.adapters.slurm import read_topology


def conf(tmp_path, *lines):
    p = tmp_path / "topology.conf"
    p.write_text("\n".join(lines) + "\n")
    return p


# the examples of topology.conf(5)
TREE_MAN = ("# Slurm's network topology configuration file for use with the",
            "# topology/tree plugin",
            "SwitchName=s0 Nodes=dev[0-5]", "SwitchName=s1 Nodes=dev[6-11]",
            "SwitchName=s2 Nodes=dev[12-17]", "SwitchName=s3 Switches=s[0-2]")
BLOCK_MAN = ("BlockName=block1 Nodes=node[1-32]", "BlockName=block2 Nodes=node[33-64]",
             "BlockName=block3 Nodes=node[65-96]", "BlockName=block4 Nodes=node[97-128]",
             "BlockSizes=30,120")
# the topology guide's first example: three levels, two children each
TREE_GUIDE = ("SwitchName=s0 Nodes=tux[0-1]", "SwitchName=s1 Nodes=tux[2-3]",
              "SwitchName=s2 Nodes=tux[4-5]", "SwitchName=s3 Nodes=tux[6-7]",
              "SwitchName=s4 Switches=s[0-1]", "SwitchName=s5 Switches=s[2-3]",
              "SwitchName=s6 Switches=s[4-5]")


def test_tree_of_the_man_page(tmp_path):
    t = read_topology(conf(tmp_path, *TREE_MAN))
    assert t.form == "tree" and t.levels == ("spine", "leaf", "server", "gpu")
    assert len(t.domains) == 18
    assert t.domains["dev0"] == {"spine": "s3", "leaf": "s0"}
    assert t.domains["dev17"] == {"spine": "s3", "leaf": "s2"}


def test_tree_of_the_guide_three_levels(tmp_path):
    t = read_topology(conf(tmp_path, *TREE_GUIDE))
    assert t.levels == ("core", "spine", "leaf", "server", "gpu")
    assert t.domains["tux0"] == {"core": "s6", "spine": "s4", "leaf": "s0"}
    assert t.domains["tux7"] == {"core": "s6", "spine": "s5", "leaf": "s3"}


def test_block_of_the_man_page(tmp_path):
    t = read_topology(conf(tmp_path, *BLOCK_MAN))
    assert t.form == "block" and t.levels == ("block4", "block", "server", "gpu")
    assert t.domains["node1"] == {"block4": "block1-block4", "block": "block1"}
    assert t.domains["node128"] == {"block4": "block1-block4", "block": "block4"}


def test_block_sizes_default_to_powers_of_two(tmp_path):
    lines = [f"BlockName=b{k} Nodes=n[{4 * k + 1}-{4 * k + 4}]" for k in range(5)]
    t = read_topology(conf(tmp_path, *lines))
    assert t.levels == ("block4", "block2", "block", "server", "gpu")
    assert t.domains["n17"] == {"block4": "b4", "block2": "b4", "block": "b4"}
    assert t.domains["n5"] == {"block4": "b0-b3", "block2": "b0-b1", "block": "b1"}


def test_unbalanced_tree_fills_the_levels_in_between(tmp_path):
    t = read_topology(conf(tmp_path, "SwitchName=a Nodes=n[1-2]", "SwitchName=b Nodes=n[3-4]",
                           "SwitchName=m Switches=a", "SwitchName=top Switches=m,b",
                           "SwitchName=alone Nodes=n5"))
    assert t.levels == ("core", "spine", "leaf", "server", "gpu")
    assert t.domains["n1"] == {"core": "top", "spine": "m", "leaf": "a"}
    assert t.domains["n3"] == {"core": "top", "spine": "b", "leaf": "b"}
    assert t.domains["n5"] == {"core": "alone", "spine": "alone", "leaf": "alone"}


def test_a_slurm_topology_builds_a_cluster_and_is_honoured(tmp_path):
    t = read_topology(conf(tmp_path, *TREE_GUIDE))
    servers = tuple(Server(n, 64000, 512000, 4, "A100", domains=d) for n, d in t.domains.items())
    c = Cluster(servers, t.levels)
    jobs = [Job("a", 8, cpu=8000, mem=8000, locality="leaf"),
            Job("b", 16, cpu=8000, mem=8000, locality="spine"),
            Job("c", 8, cpu=8000, mem=8000, preferred="leaf")]
    a = allocate(c, jobs, solver="best-fit")
    assert not violations(c, jobs, a) and len(a.placements) == 3


@pytest.mark.parametrize("lines, expect", [
    (("SwitchName=s0 Nodes=n1", "SwitchName=s1 Switches=s9"), "line 2: switch 's1' names switch 's9'"),
    (("SwitchName=s0 Nodes=n[1-2]", "SwitchName=s1 Nodes=n2"), "line 2: node 'n2' is under both"),
    (("SwitchName=s0 Nodes=n1", "SwitchName=s0 Nodes=n2"), "line 2: switch 's0' already defined"),
    (("SwitchName=a Switches=b", "SwitchName=b Switches=a"), "above itself"),
    (("SwitchName=s0 Nodes=n1", "SwitchName=t0 Switches=s0", "SwitchName=t1 Switches=s0"),
     "line 3: switch 's0' is under both 't0' and 't1'"),
    (("SwitchName=s0 Nodes=n1 Colour=red",), "line 1: unknown keyword 'colour'"),
    (("PartitionName=x",), "line 1: expected SwitchName=, BlockName= or BlockSizes="),
    (("SwitchName=s0 Nodes=n1", "BlockName=b Nodes=n2"), "one form per file"),
    (("BlockName=b1 Nodes=n[1-4]", "BlockName=b2 Nodes=n[4-8]"), "line 2: node 'n4' is in both"),
    (("BlockName=b1 Nodes=n[1-4]", "BlockSizes=4,12"), "12 is not a power of two"),
    (("BlockName=b1 Nodes=n[1-2]", "BlockSizes=4"), "line 1: block 'b1' has 2 nodes"),
    (("SwitchName=s0 Nodes=n[1-3]", "SwitchName=s1 Nodes=n9"), "line 2: unknown node 'n9'"),
])
def test_bad_lines_are_named(tmp_path, lines, expect):
    with pytest.raises(InputError, match="topology.conf: ") as err:
        read_topology(conf(tmp_path, *lines), nodes=[f"n{k}" for k in range(1, 9)])
    assert expect in str(err.value)
    assert "\n" not in str(err.value)


def test_missing_file_is_named(tmp_path):
    with pytest.raises(InputError, match="no such topology.conf"):
        read_topology(tmp_path / "nope.conf")


class Deep(Loopback):
    """The loopback Slurm with a three-level, unbalanced switch tree."""
    LINES = ("SwitchName=leafA Nodes=gpu[001-002]", "SwitchName=leafB Nodes=gpu003",
             "SwitchName=leafC Nodes=gpu004", "SwitchName=mid Switches=leafA,leafB",
             "SwitchName=root Switches=mid,leafC LinkSpeed=100")

    def write(self):
        super().write()
        (self.dir / "topology.conf").write_text("\n".join(self.LINES) + "\n")


def test_tree_agrees_with_a_real_slurmctld():
    why = missing()
    if why:
        pytest.skip(f"no Slurm on this machine: {why}")
    lb = Deep(nodes=4, gpus=2, switches=2)
    try:
        lb.start()
    except RuntimeError as exc:
        pytest.skip(f"Slurm could not start here: {exc}")
    try:
        out = lb.scontrol("show", "topology").stdout
        ours = read_topology(lb.dir / "topology.conf", nodes=lb.nodes)
    finally:
        lb.stop()
    # Slurm's view: every switch with its level and the nodes under it
    under: dict[str, set] = {}
    level: dict[str, int] = {}
    for line in out.splitlines():
        f = fields(line)
        if "SwitchName" in f:
            under[f["SwitchName"]] = set(hostnames(f.get("Nodes", "")))
            level[f["SwitchName"]] = int(f["Level"])
    assert set(under) == {"leafA", "leafB", "leafC", "mid", "root"}
    for node, doms in ours.domains.items():
        assert {d for d in doms.values()} == {s for s, ns in under.items() if node in ns}
        # Slurm's level of the leaf switch is 0, ours the innermost level
        assert level[doms["leaf"]] == 0
    assert level["root"] == 2 and ours.domains["gpu004"]["spine"] == "leafC"
