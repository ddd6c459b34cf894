"""Files and folders written whole: a reader sees all of one or nothing, and a failure leaves nothing behind."""

from __future__ import annotations

import pytest

from specviz.files import save_whole_dir, write_whole


def test_a_failed_write_keeps_the_old_file_and_leaves_no_temporary(tmp_path):
    path = tmp_path / "cost.json"
    write_whole(path, lambda temporary: temporary.write_text("old"))

    def fail(temporary):
        temporary.write_text("half")
        raise RuntimeError("disk full")
    with pytest.raises(RuntimeError):
        write_whole(path, fail)
    assert path.read_text() == "old" and [p.name for p in tmp_path.iterdir()] == ["cost.json"]


def test_a_folder_appears_whole_and_a_failed_save_leaves_nothing(tmp_path):
    def save(folder):
        (folder / "config.json").write_text("{}")
        (folder / "model.safetensors").write_bytes(b"w")
    path = tmp_path / "models" / "cut"
    save_whole_dir(path, save)
    assert sorted(p.name for p in path.iterdir()) == ["config.json", "model.safetensors"]

    def fail(folder):
        (folder / "config.json").write_text("{}")
        raise KeyboardInterrupt
    with pytest.raises(KeyboardInterrupt):
        save_whole_dir(tmp_path / "models" / "other", fail)
    assert [p.name for p in (tmp_path / "models").iterdir()] == ["cut"]


def test_a_folder_another_process_saved_first_is_kept(tmp_path):
    path = tmp_path / "cut"

    def save(folder):   # the other process renames its folder into place while this one saves
        path.mkdir()
        (path / "config.json").write_text("theirs")
        (folder / "config.json").write_text("ours")
    save_whole_dir(path, save)
    assert (path / "config.json").read_text() == "theirs" and [p.name for p in tmp_path.iterdir()] == ["cut"]
