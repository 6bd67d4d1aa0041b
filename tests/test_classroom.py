"""The class server's parts without a hub (classroom/; the whole loop: test_class_hub.py).

cgroup limits on a fake cgroupfs (v1 and v2), the students' lecture copies, and the
instructor's messages for bad input: a release of an exercise that does not exist, a double,
late or empty submission, feedback held back for a submission graded before it changed; the
Kubernetes and Slurm files parse and agree with the one-machine setup.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from datetime import UTC, datetime
from pathlib import Path

import pytest
import yaml
from support import ROOT

sys.path.insert(0, str(ROOT / "classroom"))
import lectures  # noqa: E402
import limits  # noqa: E402
import teach  # noqa: E402

V1_MOUNTS = """\
30 25 0:26 / /sys/fs/cgroup/memory rw,relatime - cgroup cgroup rw,memory
31 25 0:27 / /sys/fs/cgroup/cpu rw,relatime - cgroup cgroup rw,cpu
32 25 0:28 / /sys/fs/cgroup/pids rw,relatime - cgroup cgroup rw,pids
"""
V1_SELF = "8:pids:/\n4:memory:/hub/abc\n1:cpu:/\n0::/\n"


def test_cgroup_v1_limits_are_written_where_the_hub_lives(tmp_path: Path) -> None:
    mounts = V1_MOUNTS.replace("/sys/fs/cgroup", str(tmp_path))
    hierarchy = limits.Hierarchy.detect(mounts, V1_SELF)
    assert hierarchy.version == 1
    assert hierarchy.parents["memory"] == tmp_path / "memory" / "hub" / "abc" / "attn-class"
    group = limits.StudentCgroup(hierarchy, "alice")
    group.create(limits.Limits(limits.parse_bytes("2G"), 1.5))
    memory, cpu, pids = group.folders
    assert (memory / "memory.limit_in_bytes").read_text() == str(2 * 2**30)
    assert (cpu / "cpu.cfs_quota_us").read_text() == "150000"
    assert (cpu / "cpu.cfs_period_us").read_text() == "100000"
    assert (pids / "pids.max").read_text() == "1024"
    group.join(4242)
    assert (memory / "cgroup.procs").read_text() == "4242"


def test_cgroup_v2_limits_and_no_hierarchy(tmp_path: Path) -> None:
    (tmp_path / "cgroup.controllers").write_text("cpuset cpu io memory pids")
    mounts = f"40 25 0:30 / {tmp_path} rw - cgroup2 cgroup2 rw\n"
    hierarchy = limits.Hierarchy.detect(mounts, "0::/\n")
    assert hierarchy.version == 2
    group = limits.StudentCgroup(hierarchy, "bob")
    group.create(limits.Limits(limits.parse_bytes("512M"), 0.5))
    folder = tmp_path / "attn-class" / "bob"
    assert (folder / "memory.max").read_text() == str(512 * 2**20)
    assert (folder / "cpu.max").read_text() == "50000 100000"
    assert (tmp_path / "cgroup.subtree_control").read_text() == "+memory +cpu +pids"
    with pytest.raises(RuntimeError, match="systemdspawner"):
        limits.Hierarchy.detect("", "0::/\n")


def test_lecture_copies_never_overwrite_a_students_work(tmp_path: Path) -> None:
    master, mine = tmp_path / "master", tmp_path / "mine"
    master.mkdir()
    (master / "00_a.ipynb").write_text("v1")
    assert lectures.refresh(master, mine) == ["00_a.ipynb: copied"]
    (mine / "00_a.ipynb").write_text("my notes")
    (master / "00_a.ipynb").write_text("v2")  # the course is updated mid-term
    (master / "01_b.ipynb").write_text("new")
    said = lectures.refresh(master, mine)
    assert (mine / "00_a.ipynb").read_text() == "my notes"
    assert (mine / "00_a.updated.ipynb").read_text() == "v2"
    assert "01_b.ipynb: copied" in said and any("00_a.updated.ipynb" in s for s in said)
    (mine / "01_b.ipynb").unlink()
    (mine / "01_b.ipynb").symlink_to("/etc/passwd")  # a link planted in the folder
    assert "not a plain file" in " ".join(lectures.refresh(master, mine))
    assert (mine / "01_b.ipynb").is_symlink()


def _course(tmp_path: Path) -> teach.Course:
    prefix = tmp_path / "class"
    exercises = prefix / "share" / "exercises"
    exercises.mkdir(parents=True)
    for stem in ("00_numpy_attention", "01_causal_attention"):
        (exercises / f"{stem}.ipynb").write_bytes(
            (ROOT / "exercises" / f"{stem}.ipynb").read_bytes()
        )
    root = tmp_path / "course"
    root.mkdir()
    (root / teach.CLASS_FILE).write_text(json.dumps({"prefix": str(prefix), "group": "none-x"}))
    return teach.Course.open(root)


def _submit(course: teach.Course, student: str, when: str, answer: str | None) -> Path:
    """A submission in the exchange's inbound and, collected, in submitted/."""
    assignment = "01_causal_attention"
    notebook = json.loads((course.exercises / f"{assignment}.ipynb").read_text())
    if answer is not None:
        notebook["cells"][3]["source"] = answer
    entry = course.inbound / f"{student}+{assignment}+{when} UTC+r4nd0m"
    entry.mkdir(parents=True)
    folder = course.root / "submitted" / student / assignment
    folder.mkdir(parents=True, exist_ok=True)
    for target in (entry, folder):
        (target / f"{assignment}.ipynb").write_text(json.dumps(notebook))
        (target / "timestamp.txt").write_text(f"{when} UTC")
        (target / "submission_secret.txt").write_text("s3cret")
    return folder


def test_a_release_of_an_exercise_that_does_not_exist_names_the_real_ones(tmp_path) -> None:
    course = _course(tmp_path)
    assert course.assignment("01") == "01_causal_attention"
    with pytest.raises(teach.ClassError, match="no exercise '99'.*00_numpy_attention, 01_causal"):
        course.assignment("99")
    assert teach.main(["release", "99", "--course", str(course.root)]) == 2
    with pytest.raises(teach.ClassError, match="not a course folder"):
        teach.Course.open(tmp_path)


def test_double_late_and_empty_submissions_are_said(tmp_path: Path, monkeypatch) -> None:
    course = _course(tmp_path)
    monkeypatch.setattr(
        teach.Course, "due", lambda self, a: datetime(2026, 1, 1, 12, 0, tzinfo=UTC)
    )
    _submit(course, "ann", "2026-01-01 10:00:00.000001", "def causal_mask(n):\n    return 1")
    _submit(course, "ann", "2026-01-01 11:00:00.000001", "def causal_mask(n):\n    return 2")
    _submit(course, "ben", "2026-01-01 13:30:00.000001", "def causal_mask(n):\n    return 3")
    _submit(course, "cat", "2026-01-01 09:00:00.000001", None)
    entries = {e.student: e for e in teach.survey(course, "01_causal_attention")}
    due = course.due("01_causal_attention")
    said = {s: " ".join(teach.notes(e, due)) for s, e in entries.items()}
    assert "ann submitted 2 times (10:00:00, 11:00:00 UTC): the latest" in said["ann"]
    assert "submitted late" not in said["ann"]
    assert "ben submitted late: 1 h 30 min after the due date 2026-01-01 12:00" in said["ben"]
    assert "cat submitted the released notebook unchanged" in said["cat"]
    assert not entries["ann"].empty and entries["cat"].empty


def test_feedback_is_placed_for_nbgrader_and_held_back_when_stale(tmp_path, monkeypatch) -> None:
    course = _course(tmp_path)
    assignment = "01_causal_attention"
    ran = []
    monkeypatch.setattr(teach.Course, "nbgrader", lambda self, *a: ran.append(a) or _Done())
    grades = course.root / "grades" / assignment
    (grades / "students").mkdir(parents=True)
    (grades / "feedback").mkdir()
    for student in ("ann", "ben"):
        folder = _submit(course, student, "2026-01-01 10:00:00.000001", f"# {student}")
        files = {p.name: teach._sha256(p) for p in folder.glob("*.ipynb")}
        data = {"score": 1, "max_score": 4, "files": files}
        (grades / "students" / f"{student}.json").write_text(json.dumps(data))
        (grades / "feedback" / f"{student}.html").write_text(f"<p>{student}</p>")
    # ben submits again after grading and it is collected: his old page must not go out
    (course.root / "submitted" / "ben" / assignment / f"{assignment}.ipynb").write_text("{}")
    teach.feedback(course, "01")
    placed = course.root / "feedback" / "ann" / assignment
    assert (placed / f"{assignment}.html").read_text() == "<p>ann</p>"
    assert (placed / "timestamp.txt").read_text() == "2026-01-01 10:00:00.000001 UTC"
    assert (placed / "submission_secret.txt").read_text() == "s3cret"
    assert not (course.root / "feedback" / "ben").exists()
    assert ran == [("release_feedback", assignment)]


class _Done:
    returncode = 0
    stdout = stderr = ""


def test_the_kubernetes_and_slurm_files_agree_with_the_one_machine_setup() -> None:
    k8s = ROOT / "classroom" / "k8s"
    values = yaml.safe_load((k8s / "values.yaml").read_text())
    # keys of the jupyterhub chart's values (4.x); the chart's schema could not be fetched here
    assert set(values) <= {"hub", "singleuser", "cull", "scheduling", "proxy", "ingress"}
    assert values["cull"]["enabled"] is True
    assert values["singleuser"]["memory"]["limit"] and values["singleuser"]["cpu"]["limit"]
    job = yaml.safe_load((k8s / "grade-job.yaml").read_text())
    spec = job["spec"]
    assert spec["completionMode"] == "Indexed"
    assert (
        f"--shard $shard/{spec['completions']}"
        in spec["template"]["spec"]["containers"][0]["args"][0]
    )
    merge = yaml.safe_load((k8s / "grade-merge-job.yaml").read_text())
    assert "--merge shard-*/" in merge["spec"]["template"]["spec"]["containers"][0]["args"][0]
    etc = k8s / "etc" / "jupyter"
    server = json.loads((etc / "jupyter_server_config.json").read_text())
    assert server["ServerApp"]["jpserver_extensions"] == teach.SERVER_EXTENSIONS
    page = json.loads((etc / "labconfig" / "page_config.json").read_text())
    assert page["disabledExtensions"] == teach.LAB_DISABLED
    sbatch = (ROOT / "classroom" / "slurm" / "grade.sbatch").read_text()
    assert "#SBATCH --array=1-8" in sbatch and "--shard" in sbatch


def test_the_class_extra_pins_exact_versions() -> None:
    import tomllib

    extra = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]
    pins = extra["optional-dependencies"]["class"]
    assert pins and all("==" in pin for pin in pins), pins
    package = json.loads((ROOT / "classroom" / "package.json").read_text())
    assert all(v[0].isdigit() for v in package["dependencies"].values()), "npm: exact pins"


def test_a_second_release_is_refused_and_says_what_students_keep(tmp_path, monkeypatch) -> None:
    course = _course(tmp_path)

    class Exists(_Done):
        returncode = 1
        stderr = "[ReleaseAssignmentApp | ERROR] Destination already exists, add --force"

    monkeypatch.setattr(teach.Course, "nbgrader", lambda self, *a: Exists())
    with pytest.raises(teach.ClassError, match="already released; students who fetched it keep"):
        teach.release(course, "01", None, force=False)
    assert (course.root / "release" / "01_causal_attention" / "01_causal_attention.ipynb").is_file()


@pytest.mark.slow
@pytest.mark.skipif(os.geteuid() != 0, reason="making a cgroup needs root")
def test_a_process_over_its_memory_limit_is_killed_and_one_within_runs() -> None:
    group = limits.StudentCgroup(limits.Hierarchy.detect(), f"pytest-{os.getpid()}")
    group.create(limits.Limits(96 * 2**20, 1.0))
    try:

        def run(mib: int) -> subprocess.CompletedProcess:
            code = f"x = b'x' * ({mib} * 2**20); print('survived')"  # pages written: charged
            return subprocess.run(
                [sys.executable, "-c", code], preexec_fn=group.join, capture_output=True, text=True
            )

        over = run(300)
        assert over.returncode == -9 and "survived" not in over.stdout, over
        assert run(16).stdout.strip() == "survived"
    finally:
        group.remove()
