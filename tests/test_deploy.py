"""The deployment recipes in deploy/: what can be checked without a cluster.

* SLURM: shellcheck, and the script run end to end against stand-ins for srun, dask and mgmatch
  that record how they were called (the order of steps, the scheduler file, the worker count,
  the exit status, the clean-up of the background steps).
* Kubernetes: every object validated against Kubernetes' schemas (kubernetes-validate, strict), the
  Job's shape (indexed, success policy, GPU per pod, volumes it defines), its script shellchecked.
* Container: the Dockerfile's base and extra, and the build context that .dockerignore leaves.
  Building the image needs a Docker daemon and the CUDA base image, which this suite does not have.
"""

from __future__ import annotations

import fnmatch
import json
import os
import shutil
import signal
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import pytest
import yaml

ROOT = Path(__file__).resolve().parent.parent
DEPLOY = ROOT / "deploy"
SBATCH = DEPLOY / "slurm" / "mgmatch.sbatch"
MANIFEST = DEPLOY / "kubernetes" / "mgmatch.yaml"


def _tool(name: str) -> str:
    found = shutil.which(name) or shutil.which(name, path=str(Path(sys.executable).parent))
    if found is None:
        pytest.skip(f"{name} is not installed (the test extra installs it)")
    return found


def shellcheck(path: Path) -> None:
    proc = subprocess.run([_tool("shellcheck"), "--shell=bash", str(path)], capture_output=True, text=True)
    assert proc.returncode == 0, proc.stdout + proc.stderr


# ------------------------------------------------------------------------------ SLURM
def test_sbatch_passes_shellcheck():
    shellcheck(SBATCH)


STUBS = {
    # srun: drop its own options, run the command (each step runs here, in the background)
    "srun": """
        echo "srun $*" >> "$LOG"
        while [[ $# -gt 0 && $1 == --* ]]; do shift; done
        exec "$@"
    """,
    "dask": """
        echo "dask $*" >> "$LOG"
        echo $$ >> "$PIDS"
        if [[ $1 == scheduler && -z ${NO_SCHEDULER:-} ]]; then
            while [[ $1 != --scheduler-file ]]; do shift; done
            echo '{"address": "tcp://node1:8786"}' > "$2"
        fi
        exec sleep 60
    """,
    "mgmatch": """
        echo "mgmatch $*" >> "$LOG"
        echo "activated=${ACTIVATED:-no} numba=$NUMBA_CACHE_DIR" >> "$LOG"
        while [[ $1 != --scheduler-file ]]; do shift; done
        [[ -s $2 ]] || { echo "no scheduler file" >> "$LOG"; exit 9; }
        for _ in $(seq 100); do  # as --wait-for-workers does: go on once the workers are up
            [[ $(grep -c '^dask cuda worker' "$LOG") -ge 1 && $(wc -l < "$PIDS") -ge 2 ]] && break
            sleep 0.1
        done
        exit "${RUN_STATUS:-0}"
    """,
    "module": """
        echo "module $*" >> "$LOG"
    """,
}


def run_sbatch(tmp_path: Path, *, status=0, no_scheduler=False):
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    for name, body in STUBS.items():
        (bin_dir / name).write_text("#!/usr/bin/env bash\n" + textwrap.dedent(body))
        (bin_dir / name).chmod(0o755)
    env_dir = tmp_path / "venv" / "bin"
    env_dir.mkdir(parents=True)
    (env_dir / "activate").write_text("export ACTIVATED=yes\n")
    log, pids = tmp_path / "log", tmp_path / "pids"
    env = {
        "PATH": f"{bin_dir}{os.pathsep}{os.environ['PATH']}", "HOME": str(tmp_path), "USER": "someone",
        "TMPDIR": str(tmp_path), "LOG": str(log), "PIDS": str(pids), "RUN_STATUS": str(status),
        "SLURM_JOB_ID": "77", "SLURM_SUBMIT_DIR": str(tmp_path), "SLURM_JOB_NUM_NODES": "2",
        "SLURM_GPUS_PER_NODE": "h100:4", "MGMATCH_ENV": str(tmp_path / "venv"),
        "MGMATCH_MODULES": "cuda/12.6 python/3.12", "MGMATCH_SCHEDULER_TIMEOUT": "3",
    }
    if no_scheduler:
        env["NO_SCHEDULER"] = "1"
    proc = subprocess.run(["bash", str(SBATCH), "/shared/g.mtx", "/shared/m.parquet", "--algorithm", "suitor"],
                          env=env, capture_output=True, text=True, timeout=60)
    return proc, log.read_text().splitlines(), pids


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    return True


@pytest.mark.parametrize("status", [0, 3])
def test_sbatch_starts_scheduler_then_workers_then_the_run_and_cleans_up(tmp_path, status):
    proc, log, pids = run_sbatch(tmp_path, status=status)
    assert proc.returncode == status, proc.stderr
    assert log[0] == "module load cuda/12.6 python/3.12"
    sruns = [line for line in log if line.startswith("srun ")]
    assert len(sruns) == 2 and all(" --overlap " in s for s in sruns)
    assert "--nodes=1 --ntasks=1" in sruns[0] and " dask scheduler --scheduler-file " in sruns[0]
    assert "--nodes=2 --ntasks-per-node=1" in sruns[1] and " dask cuda worker --scheduler-file " in sruns[1]
    scheduler_file = tmp_path / "mgmatch-77" / "scheduler.json"
    assert f"--scheduler-file {scheduler_file}" in sruns[0] and f"--scheduler-file {scheduler_file}" in sruns[1]
    run = next(line for line in log if line.startswith("mgmatch "))
    # the run starts once the scheduler file is there (the stand-in exits 9 otherwise; the workers
    # start beside it, in the background) and waits for 2 nodes x 4 GPUs
    assert log.index(run) > log.index(sruns[0])
    assert "--wait-for-workers 8" in run and "--device gpu" in run
    assert run.endswith("--algorithm suitor /shared/g.mtx --output /shared/m.parquet")
    assert f"activated=yes numba={tmp_path}/numba-cache-someone" in log
    assert not scheduler_file.exists()  # removed on the way out
    started = [int(p) for p in pids.read_text().split()]
    assert len(started) == 2
    deadline = time.monotonic() + 10
    while any(_alive(p) for p in started) and time.monotonic() < deadline:
        time.sleep(0.1)
    leftover = [p for p in started if _alive(p)]
    for p in leftover:
        os.kill(p, signal.SIGKILL)
    assert not leftover, "the scheduler and worker steps outlived the job script"


def test_sbatch_fails_clearly_when_the_scheduler_does_not_start(tmp_path):
    proc, log, pids = run_sbatch(tmp_path, no_scheduler=True)
    assert proc.returncode == 1
    assert "wrote no scheduler file in 3 s" in proc.stderr
    assert not any(line.startswith("mgmatch ") for line in log)
    for p in (int(x) for x in pids.read_text().split()):
        if _alive(p):
            os.kill(p, signal.SIGKILL)


def test_sbatch_needs_its_arguments(tmp_path):
    proc = subprocess.run(["bash", str(SBATCH), "only-one"], capture_output=True, text=True)
    assert proc.returncode == 2 and "usage: sbatch mgmatch.sbatch GRAPH OUTPUT" in proc.stderr


# ------------------------------------------------------------------------- Kubernetes
def manifest() -> list[dict]:
    return [doc for doc in yaml.safe_load_all(MANIFEST.read_text()) if doc]


def _kinds() -> dict:
    return {doc["kind"]: doc for doc in manifest()}


def test_manifest_objects_pass_kubernetes_schemas():
    kv = pytest.importorskip("kubernetes_validate")
    for doc in manifest():
        kv.validate(doc, "1.31.0", strict=True)  # the oldest release with the Job success policy
    # the validator does reject what Kubernetes would: an unknown field, a wrong type
    job = _kinds()["Job"]
    bad = json.loads(json.dumps(job))
    bad["spec"]["template"]["spec"]["containers"][0]["gpus"] = 1
    with pytest.raises(kv.ValidationError):
        kv.validate(bad, "1.31.0", strict=True)
    bad = json.loads(json.dumps(job))
    bad["spec"]["completions"] = "four"
    with pytest.raises(kv.ValidationError):
        kv.validate(bad, "1.31.0", strict=True)


def test_job_releases_its_gpus_when_the_run_ends():
    job = _kinds()["Job"]["spec"]
    assert job["completionMode"] == "Indexed" and job["backoffLimit"] == 0
    assert job["successPolicy"]["rules"] == [{"succeededIndexes": "0"}]  # pod 0's run ends the Job
    assert job["activeDeadlineSeconds"] > 0 and job["ttlSecondsAfterFinished"] >= 0
    pod = job["template"]["spec"]
    assert pod["restartPolicy"] == "Never"
    (container,) = pod["containers"]
    assert container["resources"]["limits"]["nvidia.com/gpu"] == 1
    env = {e["name"]: e["value"] for e in container["env"]}
    assert int(env["MGMATCH_WORKERS"]) == job["completions"] == job["parallelism"]


def test_job_mounts_only_volumes_it_defines():
    kinds = _kinds()
    pod = kinds["Job"]["spec"]["template"]["spec"]
    volumes = {v["name"]: v for v in pod["volumes"]}
    mounts = [m["name"] for c in pod["containers"] for m in c["volumeMounts"]]
    assert set(mounts) == set(volumes)
    claims = {v["persistentVolumeClaim"]["claimName"] for v in volumes.values() if "persistentVolumeClaim" in v}
    defined = {doc["metadata"]["name"] for doc in manifest() if doc["kind"] == "PersistentVolumeClaim"}
    assert claims and claims <= defined


def test_pods_find_the_scheduler_through_the_headless_service():
    kinds = _kinds()
    service, job = kinds["Service"], kinds["Job"]
    pod = job["spec"]["template"]["spec"]
    assert service["spec"]["clusterIP"] == "None" and pod["subdomain"] == service["metadata"]["name"]
    assert service["spec"]["selector"] == {"batch.kubernetes.io/job-name": job["metadata"]["name"]}
    env = {e["name"]: e["value"] for e in pod["containers"][0]["env"]}
    assert env["SCHEDULER"] == f"tcp://{job['metadata']['name']}-0.{service['metadata']['name']}:8786"


def test_job_script_passes_shellcheck_and_waits_for_its_workers(tmp_path):
    container = _kinds()["Job"]["spec"]["template"]["spec"]["containers"][0]
    assert container["command"][:2] == ["/bin/bash", "-ec"]
    script = container["args"][0]
    assert '--wait-for-workers "$MGMATCH_WORKERS"' in script
    path = tmp_path / "job.sh"
    path.write_text("#!/usr/bin/env bash\nset -e\n" + script)
    shellcheck(path)


# -------------------------------------------------------------------------- container
def _ignored(path: str, patterns: list[str]) -> bool:
    """Whether Docker's build context leaves ``path`` out (the patterns used here: names,
    ``**/`` prefixes and ``*`` wildcards; a directory's exclusion covers what is inside it)."""
    parts = path.split("/")
    prefixes = ["/".join(parts[: i + 1]) for i in range(len(parts))]
    for pattern in patterns:
        bare = pattern[3:] if pattern.startswith("**/") else pattern
        for prefix in prefixes:
            candidates = [prefix, prefix.split("/")[-1]] if pattern.startswith("**/") else [prefix]
            if any(fnmatch.fnmatchcase(c, bare) for c in candidates):
                return True
    return False


def test_dockerignore_keeps_the_environment_and_history_out_but_the_package_in():
    patterns = [line.strip() for line in (ROOT / ".dockerignore").read_text().splitlines()
                if line.strip() and not line.startswith("#")]
    for path in (".venv/lib/python3.11/site-packages/numpy/__init__.py", ".git/HEAD", "out/demo-suitor.parquet",
                 "mgmatch/__pycache__/graph.cpython-311.pyc", "build/lib/x.py"):
        assert _ignored(path, patterns), path
    needed = ["pyproject.toml", "README.md", "LICENSE", "mgmatch/graph.py", "mgmatch/py.typed",
              "_mgmatch_nx/__init__.py", *(f"kernels/{p.name}" for p in (ROOT / "kernels").iterdir())]
    for path in needed:
        assert not _ignored(path, patterns), path


def test_dockerfile_builds_from_cuda_with_the_gpu_extra():
    text = (DEPLOY / "container" / "Dockerfile").read_text()
    lines = [line.strip() for line in text.splitlines() if line.strip() and not line.lstrip().startswith("#")]
    base = next(line for line in lines if line.startswith("ARG CUDA_IMAGE="))
    assert base.startswith("ARG CUDA_IMAGE=nvidia/cuda:12.") and "runtime" in base
    assert "FROM ${CUDA_IMAGE}" in lines
    assert any('pip install "/tmp/mgmatch-src[gpu]"' in line for line in lines)
    assert any(line.startswith("USER ") and "root" not in line for line in lines)
