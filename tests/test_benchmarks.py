"""The benchmark scripts still run and still check what they compare.

No timing is asserted here (speed targets are measured by the scripts themselves,
on a machine whose load they report); these tests run them at toy sizes so that a
change of the package's API cannot leave them broken until someone benchmarks.
"""

import importlib.util
import json
import re
import subprocess
import sys
from pathlib import Path

import pytest
from test_cli import ENV, ROOT

BENCH = Path(ROOT) / "benchmarks"


def test_bench_pipelines_runs_and_its_loops_agree_with_the_package():
    # The script checks every loop against the vectorised result before timing it
    # (exit 1 on disagreement); --min-speedup 0 takes the timing out of the verdict.
    proc = subprocess.run([sys.executable, str(BENCH / "bench_pipelines.py"), "--n", "64", "--reps", "3",
                           "--loop-reps", "2", "--repeat", "1", "--kernel", "--min-speedup", "0",
                           "--check", "all"], cwd=ROOT, env=ENV, capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, proc.stderr
    for row in ("| Legendre m=4, T=20 | FTP |", "| Legendre m=4, T=20 | PTF |",
                "| Gaussian kernel rho=0.2, T=8 | FTP |"):
        assert row in proc.stdout, proc.stdout


def _module(name):
    spec = importlib.util.spec_from_file_location(name, BENCH / f"{name}.py")
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


def test_bench_reproduce_counts_and_its_per_curve_loop_matches_the_engine():
    bench = _module("bench_reproduce")
    total, noise, reps = bench.count_normals(10)
    assert reps == 5280 and 0 < noise < total  # 528 settings; privacy normals come on top
    loop = bench.loop_extrapolation(reps_full=10, n_loop=4, reps_loop=1)
    assert loop["combinations"] == 48
    # the plain loop is the same algorithm: equal to the rounding bound of each repetition's error
    assert loop["max_diff_over_bound"] <= 1


def test_bench_residual_runs_and_reports_both_kernels():
    proc = subprocess.run([sys.executable, str(BENCH / "bench_residual.py"), "--calls", "3", "--points", "20",
                           "--max-growth", "0"], cwd=ROOT, env=ENV, capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, proc.stderr
    assert "### Gaussian kernel rho=0.2" in proc.stdout and "### Brownian motion" in proc.stdout
    assert "| 3 |" in proc.stdout


@pytest.mark.slow
def test_bench_build_times_a_cold_build_and_a_prose_rebuild_of_a_toy_book(tmp_path):
    # A one-page Jupyter Book with the book's execution cache: the cold build executes the
    # notebook (its cache record and the build's log both report it), the prose edit of the
    # rebuild executes nothing (the cache keys on code cells), and the chapter is restored.
    import nbformat

    (tmp_path / "_config.yml").write_text("title: toy\nexecute:\n  execute_notebooks: cache\n"
                                          "only_build_toc_files: true\n")
    (tmp_path / "_toc.yml").write_text("format: jb-book\nroot: intro\n")
    nb = nbformat.v4.new_notebook()
    nb.cells = [nbformat.v4.new_markdown_cell("# Toy\n\nSome prose."), nbformat.v4.new_code_cell("print(1 + 1)")]
    nb.metadata["kernelspec"] = {"name": "python3", "display_name": "Python 3", "language": "python"}
    nbformat.write(nb, tmp_path / "intro.ipynb")
    original = (tmp_path / "intro.ipynb").read_bytes()
    bindir = Path(sys.executable).parent
    out = tmp_path / "bench.json"
    proc = subprocess.run([sys.executable, str(BENCH / "bench_build.py"), "--repo", str(tmp_path),
                           "--command", f'PATH="{bindir}:$PATH" jupyter-book build .', "--chapter", "intro.ipynb",
                           "--python", sys.executable, "--json", str(out)],
                          cwd=ROOT, env=ENV, capture_output=True, text=True, timeout=600)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert (tmp_path / "intro.ipynb").read_bytes() == original
    res = json.loads(out.read_text())
    assert [r["uri"].endswith("intro.ipynb") for r in res["cold"]["cache_records"]] == [True]
    assert res["cold"]["build_log"] == {"intro.ipynb": pytest.approx(res["cold"]["cache_records"][0]["seconds"],
                                                                     abs=0.01)}
    assert res["rebuild"]["cache_records"] == [] and res["rebuild"]["build_log"] == {}
    assert "| intro.ipynb |" in proc.stdout and "## rebuild" in proc.stdout
    # executed by Sphinx, one notebook after the other: the execution's wall time is their sum
    assert res["cold"]["execution_wall"] == res["cold"]["cache_records"][0]["seconds"]  # a sum of one: exact
    assert "one after the other" in proc.stdout

    # the same book with the notebooks executed beforehand, as `make book` does: the script's
    # own clock is the execution's wall time, and its log line names the notebook
    script = Path(ROOT) / "tools" / "execute_notebooks.py"
    proc = subprocess.run([sys.executable, str(BENCH / "bench_build.py"), "--repo", str(tmp_path),
                           "--phases", "cold", "--command",
                           f'export PATH="{bindir}:$PATH"; python {script} --jobs 2 && jupyter-book build .',
                           "--python", sys.executable, "--json", str(out)],
                          cwd=ROOT, env=ENV, capture_output=True, text=True, timeout=600)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    res = json.loads(out.read_text())
    seconds = res["cold"]["cache_records"][0]["seconds"]
    assert res["cold"]["build_log"] == {"intro.ipynb": pytest.approx(seconds, abs=0.06)}
    assert seconds <= res["cold"]["execution_wall"] < res["cold"]["wall"]
    assert "several at a time" in proc.stdout


def test_compare_results_finds_a_changed_number_and_a_changed_verdict(tmp_path):
    """Two copies of one table agree; a number moved by more than the tolerance, or an
    interval moved across 1, makes the script fail."""
    cmp = _module("compare_results")
    table = ("study,n,err_ftp,ratio,ratio_lo,ratio_hi,run_id\n"
             "fig1,4,34.7196068156359,57.79,49.88,66.95,aaa\nfig1,8,0.5,0.98,0.9,1.05,aaa\n")
    a, b = tmp_path / "a", tmp_path / "b"
    for d in (a, b):
        d.mkdir()
        (d / "fig1.csv").write_text(table.replace("aaa", d.name))
    assert cmp.main([str(a), str(b)]) == 0
    (b / "fig1.csv").write_text(table.replace("34.7196068156359", "34.7196068156399"))
    res = cmp.compare(a, b)
    # the two decimals differ by 4e-12 in 34.72: 1.15e-13, to a few ulps of parsing and dividing
    assert res["numbers"] == 10 and res["rel_at"] == "fig1.csv:err_ftp" and 1e-13 < res["rel"] < 1e-12
    assert cmp.main([str(a), str(b), "--rtol", "1e-14"]) == 1
    (b / "fig1.csv").write_text(table.replace("0.9,1.05", "0.9,0.99"))
    assert cmp.main([str(a), str(b)]) == 1


def test_bench_store_runs_and_reads_back_what_both_caches_wrote():
    # The script asserts that each cache returns the arrays it was given before it reports.
    proc = subprocess.run([sys.executable, str(BENCH / "bench_store.py"), "--entries", "20", "--reps", "5"],
                          cwd=ROOT, env=ENV, capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, proc.stderr
    assert "| dpfda store |" in proc.stdout and "| joblib.Memory |" in proc.stdout
    assert "| 1.00 |" in proc.stdout  # one file per entry in the store


@pytest.mark.slow
def test_bench_execute_fills_the_cache_both_ways_and_leaves_a_failing_notebook_out(tmp_path):
    # Two tiny chapters in a subfolder (one reads a file beside its folder, as the book's chapters
    # read ../CITATION.cff) and one that raises: each way executes them into its own cache, finds
    # both good ones there under the key myst-nb looks up, reports the failure and caches it not.
    import nbformat

    bench = _module("bench_execute")
    (tmp_path / "ch").mkdir()
    (tmp_path / "marker.txt").write_text("beside the chapters")
    sources = {"ch/a": "print(open('../marker.txt').read())", "ch/b": "print(2 + 2)",
               "ch/bad": "raise ValueError('boom')"}
    paths = []
    for name, source in sources.items():
        nb = nbformat.v4.new_notebook()
        nb.cells = [nbformat.v4.new_code_cell(source)]
        nb.metadata["kernelspec"] = {"name": "python3", "display_name": "Python 3", "language": "python"}
        paths.append((tmp_path / name).with_suffix(".ipynb"))
        nbformat.write(nb, paths[-1])
    for way in ("A", "B"):
        cache = tmp_path / f"cache_{way}"
        work = tmp_path / f"work_{way}"
        work.mkdir()
        if way == "A":
            rc = bench.run_script(paths, cache, work, jobs=2, timeout=60)
        else:
            rc = bench.run_executor(paths, cache, timeout=60)
        assert rc == 1, way
        assert bench.cached(paths, cache) == paths[:2], way


def test_packages_counts_both_packages_and_a_release_loads_none_of_the_books():
    proc = subprocess.run([sys.executable, str(BENCH / "packages.py"), "--json"], cwd=ROOT, env=ENV,
                          capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, proc.stderr
    report = json.loads(proc.stdout)
    assert set(report["lines"]) == {"dpfda", "dpfda_book"}
    assert all(d["lines"] > 1000 and d["modules"] > 10 for d in report["lines"].values())
    assert "dpfda.mechanisms.pipelines" in report["release"]["modules"] and not report["release"]["book_modules"]
    assert "ftp" in report["dpfda_all"] and report["import_edges"] > 100


def test_bench_tests_charges_each_test_its_own_and_its_subprocesses_cpu(tmp_path):
    # Three tests: one that sleeps (wall, next to no CPU), one that burns 0.5 s of CPU in a
    # subprocess (charged to it when the subprocess ends) and one that fails. Without
    # RUSAGE_CHILDREN the burner would show next to no CPU and come after the sleeper.
    burn = ("import time\nt = time.process_time()\nwhile time.process_time() - t < 0.5:\n    pass\n")
    (tmp_path / "test_toy.py").write_text(
        "import subprocess, sys, time\n\n"
        "def test_sleeps():\n    time.sleep(0.3)\n\n"
        f"def test_burns_in_a_subprocess():\n    subprocess.run([sys.executable, '-c', {burn!r}], check=True)\n\n"
        "def test_fails():\n    assert False\n")
    out = tmp_path / "times.json"
    env = dict(ENV, PYTEST_DISABLE_PLUGIN_AUTOLOAD="1")  # the toy suite needs no plugin: 0.3 s a run, not 4
    proc = subprocess.run([sys.executable, str(BENCH / "bench_tests.py"), "--top", "5", "--json", str(out), "--",
                           "-q", str(tmp_path / "test_toy.py")],
                          cwd=tmp_path, env=env, capture_output=True, text=True, timeout=300)
    assert proc.returncode == 1, proc.stdout + proc.stderr  # pytest's status: a test failed
    tests = json.loads(out.read_text())["tests"]
    rows = {k.split("::")[1]: v for k, v in tests.items()}
    assert set(rows) == {"test_sleeps", "test_burns_in_a_subprocess", "test_fails"}
    assert rows["test_burns_in_a_subprocess"]["cpu"] >= 0.5  # the subprocess's own CPU time
    assert rows["test_sleeps"]["wall"] >= 0.3 and rows["test_sleeps"]["cpu"] < rows["test_burns_in_a_subprocess"]["cpu"]
    assert rows["test_fails"]["failed"] and not rows["test_sleeps"]["failed"]
    table = proc.stdout[proc.stdout.index("| slowest tests"):]
    assert table.index("test_burns_in_a_subprocess") < table.index("test_sleeps")  # slowest by CPU first
    assert "| slowest files (by CPU) |" in proc.stdout and "3 tests:" in proc.stdout

    # --max-unmarked-cpu: the burner, not marked slow, is over 0.4 s (exit 1, named); marked slow,
    # it is not counted; the sleeper stays under
    toy = tmp_path / "test_toy.py"
    toy.write_text(toy.read_text().replace("def test_fails():\n    assert False\n", ""))
    argv = [sys.executable, str(BENCH / "bench_tests.py"), "--max-unmarked-cpu", "0.4", "--", "-q",
            str(tmp_path / "test_toy.py")]
    proc = subprocess.run(argv, cwd=tmp_path, env=env, capture_output=True, text=True, timeout=300)
    assert proc.returncode == 1 and "test_burns_in_a_subprocess (" in proc.stdout, proc.stdout + proc.stderr
    assert "test_sleeps (" not in proc.stdout
    (tmp_path / "conftest.py").write_text("def pytest_configure(config):\n"
                                          "    config.addinivalue_line('markers', 'slow: slow')\n")
    (tmp_path / "test_toy.py").write_text((tmp_path / "test_toy.py").read_text().replace(
        "def test_burns", "import pytest\n\n@pytest.mark.slow\ndef test_burns"))
    proc = subprocess.run(argv, cwd=tmp_path, env=env, capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, proc.stdout + proc.stderr


@pytest.mark.slow
def test_new_space_is_three_files_and_a_hard_coded_list_of_families_is_caught(tmp_path, monkeypatch, capsys):
    # The cheap run of benchmarks/new_space.py (in quick mode: the registry's own tests and a release,
    # not the generic modules): the cosine space is added in a copy of this tree, three files change,
    # tests/test_spaces.py passes on it and the record of a release names it.
    bench = _module("new_space")
    assert bench.main(["--quick"]) == 0
    out = capsys.readouterr().out
    assert "3 files changed, 0 new" in out and "every step held" in out, out
    assert re.search(r"every test of tests/test_spaces.py: \d+ passed in", out), out
    assert '"spec": "cosine:6"' in out, out
    # Negative control: a tree whose tests keep their own list of the families (what a fourth file
    # to edit looks like) fails the run.
    tree = bench.Copy(tmp_path, quick=True).path
    families = sorted(importlib.import_module("dpfda.maths.spaces").SPACE_FAMILIES)
    with open(tree / "tests" / "test_spaces.py", "a", encoding="utf-8") as f:
        f.write(f"\n\ndef test_the_families_are_those_known():\n    assert sorted(SPACE_FAMILIES) == {families!r}\n")
    monkeypatch.setattr(bench, "ROOT", tree)
    assert bench.main(["--quick"]) == 1
    assert "FAILED: tests/test_spaces.py or a doctest" in capsys.readouterr().out
