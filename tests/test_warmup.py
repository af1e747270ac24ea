"""``grilly warmup``: every (group, dtype) task runs the ops it names on the CPU device."""
import pytest

import grilly as gp
from grilly import warmup


def test_tasks_cover_every_group_and_dtype():
    t = warmup.tasks()
    assert {g for g, _ in t} == set(warmup._GROUPS)
    names = {d.name for d in gp.__array_namespace_info__().dtypes().values()}
    assert {n for g, n in t if g == "elementwise"} == names


@pytest.mark.parametrize("group,name", [("linalg", "float64"), ("searching", "int32"),
                                        ("reductions", "float32")])
def test_task_runs(group, name):
    g, n, secs = warmup._run(group, name)
    assert (g, n) == (group, name) and secs >= 0
