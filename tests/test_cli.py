"""The command line, and the one-line errors it gives for bad input."""

from __future__ import annotations

import json
import subprocess
import sys
from dataclasses import replace

import pytest
from test_tree_size import CPU_CURVE, cost, flat, write_sizing

from specviz import load_model, load_trace
from specviz.arguments import output_file
from specviz.cli import main
from specviz.decoder_process import ModelSpec
from specviz.drafters import default_drafter, drafter_name, eagle
from specviz.tree_size import acceptance_key
from specviz.verify_cost import KEY, SIZES, Setup

PROMPT = "Repeat exactly: the red fox, the red fox, the red fox."


def test_help_documents_every_option(capsys):
    with pytest.raises(SystemExit):
        main(["generate", "--help"])
    out = capsys.readouterr().out
    for option in ["--gamma", "--temperature", "--top-k", "--top-p", "--drafter", "--verify", "--seed",
                   "--max-new-tokens", "--trace", "--compare-baseline", "--beta", "--tau", "--target-latency-ms"]:
        assert option in out
    with pytest.raises(SystemExit):
        main(["drafters", "--help"])
    out = capsys.readouterr().out   # a study command's help leaves out the options it sets itself
    assert "--kinds" in out and "--temperature" in out and "--drafter " not in out and "--branches" not in out
    top = subprocess.run([sys.executable, "-m", "specviz", "--help"], capture_output=True, text=True,
                         check=True).stdout   # the module runs as a program
    assert "generate" in top and "show" in top and "bench-remote" in top


def test_generate_prints_text_legend_summary_and_saves_trace(embedded, tmp_path, capsys):
    path = tmp_path / "out.json"
    code = main(["generate", PROMPT, "--gamma", "4", "--temperature", "0.7", "--top-p", "0.95", "--drafter", "ngram",
                 "--verify", "sampling", "--seed", "0", "--max-new-tokens", "12", "--trace", str(path),
                 "--compare-baseline", "--no-color", "--show-rejected"])
    out = capsys.readouterr().out
    assert code == 0
    assert "legend:" in out and "alpha" in out and "speedup" in out and "tokens/s" in out
    assert path.exists()
    assert main(["show", str(path), "--no-color"]) == 0
    assert "tokens in" in capsys.readouterr().out


BAD = [
    (["generate", "", "--max-new-tokens", "2"], "prompt is empty"),
    (["generate", PROMPT, "--gamma", "0"], "gamma must be between 1 and 64"),
    (["generate", PROMPT, "--gamma", "65"], "gamma must be between 1 and 64"),
    (["generate", PROMPT, "--max-new-tokens", "0"], "--max-new-tokens must be >= 1"),
    (["generate", PROMPT, "--top-p", "0"], "--top-p must be in (0, 1]"),
    (["generate", PROMPT, "--top-p", "1.5"], "--top-p must be in (0, 1]"),
    (["generate", PROMPT, "--top-k-record", "0"], "--top-k-record must be >= 1"),
    (["generate", PROMPT, "--learn-costs"], "--learn-costs prices an --adaptive run's drafts: set --adaptive too"),
    (["generate", PROMPT, "--seed", "9" * 23], "--seed must lie between -2^63 and 2^63"),
    (["generate", PROMPT, "--temperature", "inf"], "--temperature must be >= 0 and finite"),
    (["generate", PROMPT, "--device", "bogus"], "unknown device 'bogus': cpu, cuda or cuda:N"),
    (["sweep", PROMPT, "--gamma", "3", "--out", "never.json"], "sweep runs chains at each of --gammas: drop --gamma"),
    (["grid", PROMPT, "--beta", "2", "--adaptive", "--out", "never.json"], "drop --beta, --adaptive"),
    (["drafters", PROMPT, "--drafter", "ngram", "--out", "never.json"], "as chains of --gamma: drop --drafter"),
    (["sweep", PROMPT, "--again", "assets/examples/beta-tau-grid.json", "--out", "never.json"],
     "holds a grid study, not a γ sweep"),
    (["bench", "--gammas", "a"], "--gammas takes comma-separated whole numbers, got 'a'"),
    (["bench", "--draft-confidences", "x"], "--draft-confidences takes comma-separated numbers, got 'x'"),
    (["bench", "--draft-confidences", "1"], "--draft-confidences takes comma-separated numbers >= 0 and < 1"),
    (["bench", "--gammas", "65"], "--gammas takes comma-separated whole numbers >= 1 and < 65"),
    (["sweep", PROMPT, "--gammas", "65", "--out", "never.json"], "--gammas must all be between 1 and 64"),
    (["half-precision", "--drafters", "eagle,bogus"], "--drafters takes drafter kinds separated by commas"),
    (["gpu-check", "--drafters", "bogus"], "--drafters takes drafter kinds separated by commas"),
    (["train-drafter", "--lr", "-1"], "--lr must be > 0 and finite, got -1.0"),
    (["train-drafter", "--init", "/no/such.safetensors"], "--init /no/such.safetensors: no such weights file"),
    (["generate", PROMPT, "--temperature", "-1"], "temperature must be >= 0"),
    (["generate", PROMPT, "--target", "./no/such/dir"], "model directory not found"),
    (["generate", PROMPT, "--target", "no-such-org/no-such-model"], "cannot load model 'no-such-org/no-such-model'"),
    (["generate", PROMPT, "--drafter", "model"], "needs a draft model"),
    (["bench", "--drafters", "ngram", "--drafter-model", "some/lm"], "add model to --drafters"),
    (["generate", "word " * 9000, "--max-new-tokens", "8"], "need 9039 positions, but SmolLM2-135M-Instruct has a "
                                                               "context of 8192"),
]


@pytest.mark.parametrize("argv,message", BAD, ids=[m for _, m in BAD])
def test_bad_input_gives_one_line_error(embedded, capsys, argv, message):
    assert main(argv) == 2
    last = capsys.readouterr().err.strip().splitlines()[-1]  # model loading may show progress bars above
    assert last.startswith("error: ") and message in last


def test_an_output_path_that_cannot_take_the_result_is_refused_before_any_work(tmp_path, capsys):
    for argv in (["generate", PROMPT, "--trace", str(tmp_path)], ["sweep", PROMPT, "--out", f"{tmp_path}/"]):
        with pytest.raises(SystemExit) as stop:
            main(argv)
        assert stop.value.code == 2 and "is a folder: name a file in it" in capsys.readouterr().err
    new = tmp_path / "new" / "sweep.json"   # a folder not there yet is made, so the result has a place
    assert main(["sweep", PROMPT, "--gamma", "3", "--out", str(new)]) == 2 and new.parent.is_dir()


def test_an_output_path_is_written_where_it_was_checked(tmp_path, monkeypatch):
    monkeypatch.setenv("HOME", str(tmp_path))
    assert output_file("~/runs/s.json") == str(tmp_path / "runs" / "s.json") and (tmp_path / "runs").is_dir()


def test_a_prompt_set_that_is_not_one_is_refused_in_one_line(tmp_path, capsys):
    for text, message in [("[1, 2]", 'holds no "prompts" list'), ('{"prompts": [{"id": "a"}]}',
                                                                   "a prompt has no 'category' field")]:
        (tmp_path / "set.json").write_text(text)
        assert main(["bench", "--prompts", str(tmp_path / "set.json"), "--out", str(tmp_path / "r.json")]) == 2
        assert message in capsys.readouterr().err


@pytest.mark.parametrize("kind", ["tiny", "eagle", "lookup+eagle"])
def test_bad_drafter_weights_give_one_line_errors(embedded, tmp_path, capsys, kind):
    text = tmp_path / "passwd"
    text.write_text("root:x:0:0:root:/root:/bin/bash\n")
    for path, message in [(tmp_path / "missing.safetensors", "not found"), (tmp_path, "is a directory"),
                          (text, "is not a .safetensors weights file")]:
        assert main(["generate", PROMPT, "--drafter", kind, "--drafter-model", str(path), "--max-new-tokens", "2"]) == 2
        last = capsys.readouterr().err.strip().splitlines()[-1]
        assert last.startswith("error: ") and str(path) in last and message in last
        assert f"for the {kind.removeprefix('lookup+')} drafter" in last


def test_a_drafter_model_alone_means_the_draft_lm(tiny_llama_dirs, tmp_path, capsys):
    target, drafter = (str(d) for d in tiny_llama_dirs)
    path = tmp_path / "out.json"
    assert main(["generate", "w1 w2 w3", "--target", target, "--drafter-model", drafter, "--gamma", "2",
                 "--max-new-tokens", "2", "--threads", "1", "--trace", str(path)]) == 0
    assert load_trace(path).drafter == drafter   # the draft LM's name, not the default prompt lookup
    with pytest.raises(SystemExit):
        main(["generate", "--help"])
    assert "given without --drafter it means --drafter model" in " ".join(capsys.readouterr().out.split())


@pytest.mark.parametrize("command", ["sweep", "grid", "drafters"])
@pytest.mark.parametrize("repeats", ["0", "-2", "two"])
def test_rounds_below_one_are_refused_before_anything_loads(capsys, command, repeats):
    with pytest.raises(SystemExit) as exit_:
        main([command, PROMPT, "--out", "never.json", "--repeats", repeats])
    assert exit_.value.code == 2
    assert f"argument --repeats: must be a whole number >= 1, got {repeats}" in capsys.readouterr().err


DRAFTER_MODEL_COMMANDS = {"generate": [], "sweep": ["--out", "sweep.json"],
                          "grid": ["--out", "grid.json"]}   # every command that takes --drafter-model
MISCHOSEN = [(["--drafter", "ngram", "--drafter-model", "lm"], "--drafter ngram takes no --drafter-model (got lm)"),
             (["--drafter", "none", "--drafter-model", "lm"], "--drafter none takes no --drafter-model (got lm)"),
             (["--drafter-model", "head.safetensors"], "--drafter-model head.safetensors is a file, not a draft LM"),
             (["--drafter-model", "table"], "--drafter-model table is a file, not a draft LM")]


@pytest.mark.parametrize("command", DRAFTER_MODEL_COMMANDS)
@pytest.mark.parametrize("argv,message", MISCHOSEN, ids=["ngram", "none", "weights", "existing-file"])
def test_a_drafter_model_the_drafter_cannot_take_is_refused_before_any_model_loads(tmp_path, monkeypatch, capsys,
                                                                                   command, argv, message):
    monkeypatch.chdir(tmp_path)
    (tmp_path / "table").write_bytes(b"")
    missing = str(tmp_path / "no-target")   # loading it would fail with another error
    assert main([command, PROMPT, *DRAFTER_MODEL_COMMANDS[command], "--target", missing, *argv]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and err[0].startswith("error: ") and message in err[0]


@pytest.mark.parametrize("env,argv,message", [
    ({"SPECVIZ_MAX_NEW_TOKENS": "many"}, [], "SPECVIZ_MAX_NEW_TOKENS must be a whole number >= 1, got 'many'"),
    ({"SPECVIZ_MAX_PROMPT_TOKENS": "5"}, [], "this host accepts at most 5 (SPECVIZ_MAX_PROMPT_TOKENS)"),
    ({"SPECVIZ_MAX_NEW_TOKENS": "8"}, ["--max-new-tokens", "9"], "this host allows at most 8 (SPECVIZ_MAX_NEW_TOKENS)"),
], ids=["malformed", "prompt", "new-tokens"])
def test_host_limits_give_one_line_errors(tiny_llama_dirs, capsys, monkeypatch, env, argv, message):
    for name, value in env.items():
        monkeypatch.setenv(name, value)
    assert main(["generate", "w1 w2 w3 w1 w2 w3", "--target", str(tiny_llama_dirs[0]), *argv]) == 2
    last = capsys.readouterr().err.strip().splitlines()[-1]
    assert last.startswith("error: ") and message in last


def test_the_run_time_limit_is_reported(tiny_llama_dirs, tmp_path, capsys, monkeypatch):
    monkeypatch.setenv("SPECVIZ_MAX_RUN_SECONDS", "1e-9")
    path = tmp_path / "out.json"
    assert main(["generate", "w1 w2 w3 w1 w2", "--target", str(tiny_llama_dirs[0]), "--max-new-tokens", "12",
                 "--temperature", "0", "--trace", str(path)]) == 0
    assert "stopped early by the host's run-time limit of 1e-09 s (SPECVIZ_MAX_RUN_SECONDS)" in capsys.readouterr().out
    assert len(load_trace(path).iterations) == 1 and main(["show", str(path)]) == 0
    assert "stopped early" in capsys.readouterr().out


def test_mismatched_vocabularies_are_refused(embedded, tiny_llama_dirs, capsys):
    assert main(["generate", PROMPT, "--drafter", "model", "--drafter-model", str(tiny_llama_dirs[1])]) == 2
    err = capsys.readouterr().err
    assert "SmolLM2-135M-Instruct" in err and str(tiny_llama_dirs[1]) in err and "different vocabularies" in err


def test_a_file_that_is_not_a_trace_is_refused(tmp_path, capsys):
    path = tmp_path / "notes.json"
    path.write_text('{"hello": "world"}')
    assert main(["show", str(path)]) == 2
    assert "neither a specviz trace nor a study" in capsys.readouterr().err


def test_without_the_eagle_weights_the_default_drafter_is_prompt_lookup(embedded, tmp_path, monkeypatch):
    assert default_drafter() == "lookup+eagle" and ModelSpec().drafter == "lookup+eagle"
    assert default_drafter("some-org/some-model") == ModelSpec("some-org/some-model").drafter == "ngram"
    monkeypatch.setattr(eagle, "DEFAULT_WEIGHTS", tmp_path / "missing.safetensors")
    assert default_drafter() == ModelSpec().drafter == "ngram"
    path = tmp_path / "out.json"
    assert main(["generate", PROMPT, "--max-new-tokens", "2", "--trace", str(path)]) == 0
    assert load_trace(path).drafter == drafter_name("ngram")


def test_the_default_gamma_is_the_chain_measured_for_the_pair(tiny_llama_dirs, tmp_path, monkeypatch):
    monkeypatch.setenv("SPECVIZ_CACHE", str(tmp_path / "cache"))
    target, path = str(tiny_llama_dirs[0]), tmp_path / "out.json"
    argv = ["generate", "w1 w2 w3 w1 w2", "--target", target, "--max-new-tokens", "2", "--trace", str(path)]

    def gamma(*extra: str) -> int:
        assert main(argv + list(extra)) == 0
        return load_trace(path).settings.gamma

    assert gamma() == 4                                   # nothing measured yet
    write_sizing(Setup.of(load_model(target)), drafter_name("ngram"), flat([0.8, 0.1, 0.05, 0.0]), cost(CPU_CURVE))
    assert gamma() == 7 and gamma("--gamma", "3") == 3   # γ 5 leads γ 7 by 1.4%: a tie (tree_size.TIE)


def test_sizing_shows_the_cached_measurements_and_takes_them_again(tiny_llama_dirs, tmp_path, monkeypatch, capsys,
                                                                    kept_threads):
    monkeypatch.setenv("SPECVIZ_CACHE", str(tmp_path / "cache"))
    target = str(tiny_llama_dirs[0])
    setup = replace(Setup.of(load_model(target)), threads=1)
    busy = replace(flat([0.8, 0.1, 0.05, 0.0]), others=1.5)   # timed beside other work
    write_sizing(setup, drafter_name("ngram"), busy, cost(CPU_CURVE))
    argv = ["sizing", "--target", target, "--drafter", "ngram", "--threads", "1"]
    assert main(argv) == 0
    out = capsys.readouterr().out   # read back as kept, nothing measured
    assert "drafter step 2.00 ms" in out and "  1: 0.80 0.10 0.05 0.00   (100)" in out and "fastest size:" in out
    assert "warning: the drafter's step was measured while other processes kept 1.5 of" in out
    assert "sizing --again" in out and "verify-cost curve was measured" not in out
    assert main(argv + ["--again"]) == 0
    out = capsys.readouterr().out
    assert out.count("dropped ") == 2 and "(100)" not in out
    # the new measurements say how busy the machine was
    assert "cores busy while the verify-cost curve was measured" in out and "while the drafter was measured" in out
    assert json.loads(setup.path(KEY).read_text())["sizes"] == list(SIZES)   # measured anew, at today's sizes
    assert json.loads(setup.path(acceptance_key(drafter_name("ngram"))).read_text())["samples"] != [100] * 8
    assert main(["sizing", "--target", target, "--drafter", "none"]) == 2
    assert "name a drafter with --drafter" in capsys.readouterr().err


@pytest.mark.parametrize("argv", [
    ["generate", "hi", "--threads", "0"], ["sweep", "hi", "--repeats", "0"], ["bench", "--per-category", "0"],
    ["bench", "--model-per-category", "-1"], ["bench", "--warmup", "-1"], ["corpus", "stats", "--threads", "0"],
    ["acceptance", "--gamma", "0"], ["drafter-report", "--per-kind", "0"], ["count-drafter", "--eval-tokens", "0"],
    ["train-drafter", "--steps", "-5"], ["bench-remote", "--threads", "0"], ["half-precision", "--threads", "x"],
    ["gpu-check", "--threads", "1.5"], ["gpu-check", "--repeats", "0"], ["gpu-check", "--pair-repeats", "0"],
    ["half-precision", "--repeats", "0"],
])
def test_every_count_is_a_whole_number_checked_before_anything_runs(argv, capsys):
    with pytest.raises(SystemExit) as stop:
        main(argv)
    option, value = argv[-2:]
    assert stop.value.code == 2
    assert f"argument {option}: must be a whole number >= {0 if option == '--warmup' else 1}, got {value}" in \
        capsys.readouterr().err
