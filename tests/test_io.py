"""Instance and allocation files: round trips and one-line errors naming the
file, the field and what was expected."""
import copy
import json

import pytest

from alloc import InputError, allocate, load_instance
from alloc.io import (allocation_from_dict, allocation_to_dict, instance_from_dict,
                      instance_to_dict, load_allocation, dump_allocation)

BASE = {
    "format": "alloc.instance/1",
    "name": "t",
    "cluster": {"levels": ["rack", "server", "socket", "switch", "gpu"],
                "servers": [{"id": "s00", "rack": "r0", "cpu": 24000, "mem": 512000, "gpus": 8,
                             "gpu_type": "V100", "sockets": 2, "switches_per_socket": 2}]},
    "tenants": {"vc-a": {"cells": [{"level": "server", "gpu_type": "V100", "count": 1}]}},
    "jobs": [{"id": "j0", "gpus": 2, "gpu_milli": 1000, "cpu": 6000, "mem": 128000,
              "gpu_types": ["V100"], "locality": "server", "model": "res18",
              "tenant": "vc-a", "guaranteed": True, "priority": 0, "weight": 1.0,
              "current": None}],
}


def write(tmp_path, doc, name="inst.json"):
    p = tmp_path / name
    p.write_text(doc if isinstance(doc, str) else json.dumps(doc))
    return p


def error_of(tmp_path, doc) -> str:
    p = write(tmp_path, doc)
    with pytest.raises(InputError) as ei:
        load_instance(p)
    msg = str(ei.value)
    assert "\n" not in msg
    assert str(p) in msg
    return msg


def test_design_example_loads_and_round_trips(tmp_path):
    inst = load_instance(write(tmp_path, BASE))
    assert inst.jobs[0].profile.name == "res18"
    assert inst.cluster.tenants["vc-a"].cells[0].count == 1
    again = instance_from_dict(instance_to_dict(inst))
    assert again == inst


@pytest.mark.parametrize("path", sorted(__import__("pathlib").Path(__file__).resolve()
                                        .parents[1].joinpath("instances").glob("*.json")),
                         ids=lambda p: p.name)
def test_shipped_instances_load(path):
    inst = load_instance(path)
    assert inst.jobs


def mutate(fn):
    doc = copy.deepcopy(BASE)
    fn(doc)
    return doc


@pytest.mark.parametrize("change, expect", [
    (lambda d: d["jobs"][0].pop("id"), "jobs[0]: missing field 'id'"),
    (lambda d: d["jobs"][0].update(gpus="two"), "jobs[0].gpus: expected integer"),
    (lambda d: d["jobs"][0].update(cpu=-5), "jobs[0].cpu: expected a value >= 0"),
    (lambda d: d["jobs"][0].update(colour="red"), "jobs[0]: unknown key 'colour'"),
    (lambda d: d["cluster"]["servers"][0].update(cpu=0), "cluster.servers[0].cpu: expected a value >= 1"),
    (lambda d: d["cluster"]["servers"][0].update(mem=-1), "cluster.servers[0].mem"),
    (lambda d: d["jobs"][0].update(gpu_milli=0), "jobs[0].gpu_milli: expected a value >= 1"),
    (lambda d: d["jobs"][0].update(gpu_milli=1500), "jobs[0].gpu_milli: expected a value <= 1000"),
    (lambda d: d["jobs"][0].update(gpu_milli=500), "jobs[0].gpu_milli: a share below 1000 needs gpus == 1"),
    (lambda d: d["jobs"][0].update(model="nope"), "jobs[0].model: unknown model 'nope'"),
    (lambda d: d["jobs"][0].update(locality="row"), "jobs[0].locality: level 'row'"),
    (lambda d: d["cluster"].update(levels=["server", "gpu"]) or d["jobs"][0].update(locality="socket"),
     "jobs[0].locality: level 'socket' is not in cluster.levels"),
    (lambda d: d["cluster"].update(levels=["gpu", "server"]), "cluster.levels"),
    (lambda d: d["cluster"].update(levels=["server", "gpu", "pod"]), "cluster.levels"),
    (lambda d: d["jobs"].append(dict(d["jobs"][0])), "duplicate job id 'j0'"),
    (lambda d: d["cluster"]["servers"].append(dict(d["cluster"]["servers"][0])),
     "duplicate server id 's00'"),
    (lambda d: d["jobs"][0].update(tenant=None), "jobs[0].guaranteed: a guaranteed job needs a tenant"),
    (lambda d: d["jobs"][0].update(priority=10 ** 6), "jobs[0].priority"),
    (lambda d: d.update(format="alloc.instance/9"), "format: expected an alloc.instance/1 file, got format 'alloc.instance/9'"),
    (lambda d: d["cluster"]["servers"][0].pop("rack"), "cluster.servers[0].rack"),
])
def test_bad_input_names_the_field(tmp_path, change, expect):
    msg = error_of(tmp_path, mutate(change))
    assert expect in msg, msg


@pytest.mark.parametrize("change, reason", [
    (lambda d: d["jobs"][0].update(gpus=16), "on one server"),
    (lambda d: d["jobs"][0].update(cpu=10 ** 9, model=None), "milli-CPU"),
])
def test_unplaceable_job_is_not_bad_input(tmp_path, change, reason):
    """A well-formed job wider than any server loads; it stays unplaced with a
    reason and the rest is solved (``strict`` refuses it)."""
    doc = mutate(change)
    doc["jobs"].append({"id": "j1", "gpus": 1, "cpu": 1000, "mem": 1000})
    inst = load_instance(write(tmp_path, doc))
    a = allocate(inst.cluster, inst.jobs, solver="hived")
    assert "j0" in a.unplaced and reason in a.reasons["j0"]
    assert list(a.reasons) == ["j0"] and [p.job for p in a.placements] == ["j1"]
    with pytest.raises(InputError, match="cannot be placed on this cluster now"):
        allocate(inst.cluster, inst.jobs, solver="hived", strict=True)


def test_all_problems_are_collected(tmp_path):
    doc = mutate(lambda d: (d["jobs"][0].update(cpu=-1, colour=1),
                            d["cluster"]["servers"][0].update(mem=0)))
    p = write(tmp_path, doc)
    with pytest.raises(InputError) as ei:
        load_instance(p)
    assert len(ei.value.problems) == 3
    assert "(and 2 more problems)" in str(ei.value)


def test_malformed_json(tmp_path):
    msg = error_of(tmp_path, '{"format": "alloc.instance/1", "cluster": [')
    assert "line 1 column" in msg and "malformed JSON" in msg


def test_missing_file(tmp_path):
    with pytest.raises(InputError, match="no such instance file"):
        load_instance(tmp_path / "absent.json")


def test_allocation_round_trip(tmp_path, instances_dir):
    inst = load_instance(instances_dir / "tiny-share.json")
    a = allocate(inst.cluster, inst.jobs, solver="best-fit", instance=inst.name)
    p = tmp_path / "a.json"
    dump_allocation(a, p)
    b = load_allocation(p)
    assert b.placements == a.placements and b.unplaced == a.unplaced
    assert allocation_to_dict(allocation_from_dict(json.loads(p.read_text())))["value"] == a.value


def test_bad_allocation_file(tmp_path):
    p = write(tmp_path, {"format": "alloc.allocation/1", "placements": [{"jobb": "x"}],
                         "unplaced": []}, "a.json")
    with pytest.raises(InputError, match=r"a.json: placements\[0\]"):
        load_allocation(p)


def test_shipped_models_pass_the_model_schema():
    """The shipped model files are loaded without the schema (start-up time),
    so the suite checks them against it."""
    from alloc.profiles import available_models, models_dir, profile_problems
    names = available_models()
    assert len(names) >= 12
    for name in names:
        doc = json.loads((models_dir() / f"{name}.json").read_text())
        assert profile_problems(doc) == [], name
