"""helpers.bench: the `cost` subcommand, as a subprocess and in-process."""

import json
import os
import subprocess
import sys

import pytest

from helpers.bench import build_parser, main

KEYS = {"turns", "total_input_tokens", "total_output_tokens", "max_turn_input_tokens", "cost_usd",
        "per_turn_input_tokens", "per_turn_output_tokens", "per_turn_cost_usd", "fitted_exponent", "strategy"}


def run_bench(*args):
    env = {**os.environ, "ANTHROPIC_API_KEY": ""}
    return subprocess.run([sys.executable, "-m", "helpers.bench", *args], capture_output=True, text=True,
                          timeout=120, env=env)


@pytest.mark.slow  # a CLI subprocess (seconds each): the full set runs it
def test_cost_json_as_a_subprocess():
    run = run_bench("cost", "--strategy", "naive", "--turns", "40", "--json")
    assert run.returncode == 0, run.stderr
    report = json.loads(run.stdout)
    assert KEYS <= set(report)
    assert report["strategy"] == "naive" and report["turns"] == 40
    assert report["total_input_tokens"] == sum(report["per_turn_input_tokens"])
    assert report["total_output_tokens"] == sum(report["per_turn_output_tokens"])
    assert report["cost_usd"] == pytest.approx(sum(report["per_turn_cost_usd"]))
    assert report["max_turn_input_tokens"] == max(report["per_turn_input_tokens"])
    assert report["fitted_exponent"] > 1.5
    assert report["cost_by_purpose"]["chat"]["calls"] == 40


def test_last_k_with_keep_last(capsys):
    assert main(["cost", "--strategy", "last_k", "--keep-last", "2", "--turns", "12", "--json", "--no-progress"]) == 0
    report = json.loads(capsys.readouterr().out)
    assert report["keep_last"] == 2 and report["max_turn_input_tokens"] < 250


def test_table_output_and_context_window_overflow(capsys):
    assert main(["cost", "--turns", "30", "--context-window", "1500", "--no-progress"]) == 0
    out = capsys.readouterr().out
    assert "overflow at turn" in out and "prompt is too long" in out and "total: input" in out
    assert main(["cost", "--turns", "30", "--context-window", "1500", "--json", "--no-progress"]) == 0
    report = json.loads(capsys.readouterr().out)
    assert report["overflow_turn"] == report["turns"] + 1 and report["max_turn_input_tokens"] <= 1500


def test_bad_arguments_are_refused(capsys):
    assert main(["cost", "--strategy", "naive", "--keep-last", "4", "--turns", "2"]) == 2
    assert "last_k" in capsys.readouterr().err
    for argv in (["cost", "--turns", "0"], ["cost", "--strategy", "nope"], []):
        with pytest.raises(SystemExit) as info:
            build_parser().parse_args(argv)
        assert info.value.code == 2
