"""Committed output: manifests, `nsysgen check`, and what a compile may and may not touch."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

from nsysgen.manifest import MANIFEST_NAME
from tests.conftest import REPO, tree_bytes

STEPS = ["workload=fsdp", "capture=steps", "job.name=train"]
WINDOW = ["workload=fsdp", "capture=window", "job.name=train"]


def snapshot(root: Path) -> dict[str, tuple[bytes, int, int, int]]:
    """content, mode, mtime and inode of every file: 'exactly as it was'."""
    return {
        str(p.relative_to(root)): (
            p.read_bytes(),
            p.stat().st_mode,
            p.stat().st_mtime_ns,
            p.stat().st_ino,
        )
        for p in sorted(root.rglob("*"))
        if p.is_file()
    }


def test_generated_is_current(run_cli) -> None:  # type: ignore[no-untyped-def]
    result = run_cli("check", f"output_dir={REPO / 'generated'}")
    assert result.code == 0, result.out
    assert result.out.startswith("nsysgen check: 6 folders, ")


def test_manifest_records_provenance_and_no_machine_facts(tmp_path: Path, run_cli) -> None:  # type: ignore[no-untyped-def]
    assert (
        run_cli(
            "experiment=fsdp-p4de",
            "capture.first_step=20",
            "capture.last_step=24",
            f"output_dir={tmp_path}",
        ).code
        == 0
    )
    folder = tmp_path / "fsdp-p4de"
    manifest = json.loads((folder / MANIFEST_NAME).read_text())
    assert manifest["command"] == (
        "nsysgen experiment=fsdp-p4de capture.first_step=20 capture.last_step=24"
    )
    assert manifest["overrides"] == [
        "experiment=fsdp-p4de",
        "capture.first_step=20",
        "capture.last_step=24",
    ]
    assert manifest["choices"]["experiment"] == "fsdp-p4de"
    assert manifest["generated_by"] == "nsysgen 0.1.0"
    assert sorted(manifest["files"]) == sorted(
        p.name for p in folder.iterdir() if p.name != MANIFEST_NAME
    )
    assert manifest["files"]["nsys-exec"]["mode"] == "0755"
    assert str(tmp_path) not in (folder / MANIFEST_NAME).read_text()
    for name in manifest["files"]:
        first_lines = (folder / name).read_text().splitlines()[:3]
        assert any(
            "Regenerate: nsysgen experiment=fsdp-p4de capture.first_step=20 "
            "capture.last_step=24" in line
            for line in first_lines
        ), name


def test_recompiling_identical_output_rewrites_nothing(tmp_path: Path, run_cli) -> None:  # type: ignore[no-untyped-def]
    assert run_cli(*STEPS, f"output_dir={tmp_path}").code == 0
    for path in tmp_path.rglob("*"):
        os.utime(path, ns=(1_000_000_000, 1_000_000_000))
    before = snapshot(tmp_path)
    result = run_cli(*STEPS, f"output_dir={tmp_path}")
    assert result.out.endswith("6 files (unchanged)\n")
    assert snapshot(tmp_path) == before


def user_experiment(tmp_path: Path, capture: str) -> list[str]:
    """Arguments compiling a user's experiment `mine` (FSDP) with the given capture option."""
    conf = tmp_path / "conf" / "experiment"
    conf.mkdir(parents=True, exist_ok=True)
    (conf / "mine.yaml").write_text(
        "# @package _global_\ndefaults:\n  - override /workload: fsdp\n"
        f"  - override /capture: {capture}\njob:\n  name: mine\n"
    )
    return ["--config-dir", str(tmp_path / "conf"), "experiment=mine"]


def test_changed_config_updates_only_changed_files_and_removes_orphans(
    tmp_path: Path,
    run_cli,  # type: ignore[no-untyped-def]
) -> None:
    out = tmp_path / "out"
    assert run_cli(*user_experiment(tmp_path, "steps"), f"output_dir={out}").code == 0
    folder = out / "mine"
    (folder / "mine_123.out").write_text("a Slurm log nsysgen did not write\n")
    (folder / "notes").mkdir()
    (folder / "notes" / "mine.txt").write_text("mine\n")
    before = snapshot(out)
    result = run_cli(*user_experiment(tmp_path, "window"), f"output_dir={out}")
    assert result.code == 0
    assert result.out.endswith("6 files (1 removed, 3 updated)\n"), result.out
    after = snapshot(out)
    assert "mine/nsysgen_window.py" not in after
    # Foreign files and unchanged generated files: same inode, bytes and mtime.
    for name in ("mine_123.out", "notes/mine.txt", "install-nsight.sh", "recipes.sh"):
        assert after[f"mine/{name}"] == before[f"mine/{name}"], name
    for name in ("job.sbatch", "nsys-exec", "README.md"):
        assert after[f"mine/{name}"][0] != before[f"mine/{name}"][0], name


def test_hand_edited_orphan_is_kept(tmp_path: Path, run_cli) -> None:  # type: ignore[no-untyped-def]
    assert run_cli(*STEPS, f"output_dir={tmp_path}").code == 0
    helper = tmp_path / "train" / "nsysgen_window.py"
    helper.write_text(helper.read_text() + "# my change\n")
    result = run_cli(*WINDOW, f"output_dir={tmp_path}")
    assert result.code == 0
    assert "1 kept" in result.out
    assert helper.read_text().endswith("# my change\n")


def test_foreign_file_in_the_way_stops_the_compile(tmp_path: Path, run_cli) -> None:  # type: ignore[no-untyped-def]
    folder = tmp_path / "train"
    folder.mkdir()
    (folder / "job.sbatch").write_text("#!/bin/bash\n# hand-written\n")
    before = snapshot(tmp_path)
    result = run_cli(*STEPS, f"output_dir={tmp_path}")
    assert result.code == 2
    assert result.err == (
        f"error: {folder / 'job.sbatch'} exists and was not written by nsysgen; move it away "
        "or choose another job.name or output_dir\n"
    )
    assert snapshot(tmp_path) == before


def test_crash_before_the_swap_leaves_previous_output_exactly(
    tmp_path: Path,
    run_cli,
    monkeypatch: pytest.MonkeyPatch,  # type: ignore[no-untyped-def]
) -> None:
    import nsysgen.write

    assert run_cli(*STEPS, f"output_dir={tmp_path}").code == 0
    before = snapshot(tmp_path)

    def crash(*_: object) -> None:
        raise KeyboardInterrupt  # as if the process died between staging and swapping

    monkeypatch.setattr(nsysgen.write, "_swap_in", crash)
    assert run_cli(*WINDOW, f"output_dir={tmp_path}").code == 130
    monkeypatch.undo()
    visible = {k: v for k, v in snapshot(tmp_path).items() if not k.startswith(".")}
    assert visible == before
    # The next compile cleans the staging left by the crash and succeeds.
    assert run_cli(*WINDOW, f"output_dir={tmp_path}").code == 0
    assert sorted(p.name for p in tmp_path.iterdir()) == ["train"]


def test_check_reports_changed_edited_missing_orphaned(tmp_path: Path, run_cli) -> None:  # type: ignore[no-untyped-def]
    out = tmp_path / "out"
    args = user_experiment(tmp_path, "steps")
    assert run_cli(*args, f"output_dir={out}").code == 0
    assert run_cli("check", f"output_dir={out}").out.startswith("nsysgen check: 1 folders")

    # The config changes: steps -> window. The helper is no longer planned.
    user_experiment(tmp_path, "window")
    folder = out / "mine"
    (folder / "README.md").write_text("edited\n")
    (folder / "recipes.sh").unlink()
    result = run_cli("check", f"output_dir={out}")
    assert result.code == 1
    regenerate = f"(regenerate: nsysgen --config-dir {tmp_path / 'conf'} experiment=mine)"
    lines = result.out.splitlines()
    assert f"{folder / 'README.md'}: edited by hand {regenerate}" in lines
    assert f"{folder / 'job.sbatch'}: changed {regenerate}" in lines
    assert f"{folder / 'nsys-exec'}: changed {regenerate}" in lines
    assert f"{folder / 'recipes.sh'}: missing {regenerate}" in lines
    assert f"{folder / 'nsysgen_window.py'}: orphaned {regenerate}" in lines
    assert "-  --capture-range=cudaProfilerApi \\" in lines  # the diff: on disk -> compiled now
    assert "+  --delay=30 \\" in lines
    assert lines[-1].startswith("nsysgen check: 6 problems in ")

    # Regenerating makes it current again; the hand-edited README is replaced.
    assert run_cli(*args, f"output_dir={out}").code == 0
    assert run_cli("check", f"output_dir={out}").code == 0


def test_check_of_a_missing_output_dir_is_an_input_error(tmp_path: Path, run_cli) -> None:  # type: ignore[no-untyped-def]
    result = run_cli("check", f"output_dir={tmp_path / 'nope'}")
    assert result.code == 2
    assert result.err == f"error: output_dir {tmp_path / 'nope'} does not exist\n"


def test_check_rejects_other_arguments(run_cli) -> None:  # type: ignore[no-untyped-def]
    result = run_cli("check", "cluster=p5")
    assert result.code == 2
    assert result.err.startswith("error: check takes only output_dir=DIR, not cluster=p5")


def test_pre_commit_hook_definition_is_valid() -> None:
    from pre_commit.clientlib import load_manifest

    hooks = load_manifest(str(REPO / ".pre-commit-hooks.yaml"))
    assert [hook["id"] for hook in hooks] == ["nsysgen-check"]
    assert hooks[0]["entry"] == "nsysgen check"
    assert hooks[0]["pass_filenames"] is False


def test_same_bytes_whatever_the_run(tmp_path: Path, run_cli) -> None:  # type: ignore[no-untyped-def]
    assert run_cli("experiment=nemo-p5", f"output_dir={tmp_path / 'a'}").code == 0
    assert run_cli("experiment=nemo-p5", f"output_dir={tmp_path / 'b'}").code == 0
    assert tree_bytes(tmp_path / "a") == tree_bytes(tmp_path / "b")
