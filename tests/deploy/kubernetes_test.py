#!/usr/bin/env python3
"""Renders deploy/kubernetes's manifests and checks what each pod would run.

For several cluster shapes the Service must select the pods, the ps
StatefulSet and the worker Job must have one pod per task on the task's
port, and each task's address must be its pod's DNS name. Then every pod's
container script runs in sh with the pod's environment (what the manifest
sets and what Kubernetes adds: JOB_COMPLETION_INDEX, the pod's name), a
stub getent on PATH and, in place of the program, a command that prints
TF_CONFIG; that TF_CONFIG must name the intended cluster and task, read by
Python's json and by `$RILL_BIN cluster --cluster_from tf_config` (without
RILL_BIN, by json only). The committed mnist-job.yaml and mnist-tfjob.yaml
must equal a fresh render, and a TF_CONFIG as the TFJob operator writes it
must parse too.
Exits 77, which meson counts as skipped, without PyYAML.
"""

import json
import os
import shlex
import subprocess
import sys
import tempfile
import unittest

try:
    import yaml
except ImportError:
    print("kubernetes_test: PyYAML is missing (Debian: python3-yaml); skipped")
    sys.exit(77)

SOURCE_ROOT = os.environ.get("RILL_SOURCE_ROOT",
                             os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", ".."))
KUBERNETES_DIR = os.path.join(SOURCE_ROOT, "deploy", "kubernetes")
RENDER = os.path.join(KUBERNETES_DIR, "render.py")
RILL_BIN = os.environ.get("RILL_BIN", "")
PROGRAM = ["/rill/build/examples/distributed_mnist", "--logdir=/logdir", "--insecure"]
# Stands in for the program: what the container script hands it.
PRINT_TF_CONFIG = ["sh", "-c", 'printf "%s" "$TF_CONFIG"']
# (name, ps, workers, extra render flags, port, namespace)
SHAPES = [
    ("mnist", 1, 2, [], 2222, "default"),
    ("train-b", 2, 3, ["--port", "3000", "--namespace", "ml", "--logdir-claim", "runs"], 3000,
     "ml"),
    ("solo", 0, 1, [], 2222, "default"),
]


def render(args):
    return subprocess.run([sys.executable, RENDER, *args], capture_output=True, text=True,
                          timeout=60)


def render_docs(args):
    done = render(args)
    if done.returncode != 0:
        raise AssertionError(f"render.py {' '.join(args)} failed: {done.stderr}")
    return done.stdout, [doc for doc in yaml.safe_load_all(done.stdout) if doc is not None]


def by_kind(docs, kind):
    return [doc for doc in docs if doc["kind"] == kind]


def intended_cluster(name, ps, workers, port):
    jobs = {}
    if ps:
        jobs["ps"] = [f"{name}-ps-{i}.{name}:{port}" for i in range(ps)]
    jobs["worker"] = [f"{name}-worker-{i}.{name}:{port}" for i in range(workers)]
    return jobs


def pod_env(container, pod_name, namespace):
    """The container's environment as the kubelet would set it."""
    env = {}
    for var in container.get("env", []):
        if "value" in var:
            env[var["name"]] = var["value"]
            continue
        field = var["valueFrom"]["fieldRef"]["fieldPath"]
        known = {"metadata.name": pod_name, "metadata.namespace": namespace}
        if field not in known:
            raise AssertionError(f"env {var['name']}: no stand-in for fieldRef {field}")
        env[var["name"]] = known[field]
    return env


def run_container_script(container, env):
    """Runs the container's command with the program replaced by a TF_CONFIG
    printer; returns (exit status, TF_CONFIG or stderr, hosts getent was asked)."""
    command = container["command"]
    if command[:2] != ["sh", "-c"]:
        raise AssertionError(f"container {container['name']}: command {command[:2]}, not sh -c")
    with tempfile.TemporaryDirectory() as stubs:
        log = os.path.join(stubs, "getent.log")
        getent = os.path.join(stubs, "getent")
        with open(getent, "w") as f:
            f.write(f'#!/bin/sh\necho "$*" >> {shlex.quote(log)}\n')
        os.chmod(getent, 0o755)
        done = subprocess.run(command + PRINT_TF_CONFIG, capture_output=True, text=True,
                              timeout=30,
                              env={"PATH": stubs + os.pathsep + os.environ["PATH"], **env})
        asked = []
        if os.path.exists(log):
            with open(log) as f:
                asked = f.read().splitlines()
    return done.returncode, done.stdout if done.returncode == 0 else done.stderr, asked


def pods(docs):
    """(role, index, pod name, hostname, container) of every pod the workloads create."""
    found = []
    for sts in by_kind(docs, "StatefulSet"):
        container = sts["spec"]["template"]["spec"]["containers"][0]
        for i in range(sts["spec"]["replicas"]):
            name = f"{sts['metadata']['name']}-{i}"
            found.append(("ps", i, name, name, container))
    for job in by_kind(docs, "Job"):
        container = job["spec"]["template"]["spec"]["containers"][0]
        for i in range(job["spec"]["completions"]):
            # An Indexed Job's pod: <job>-<index>-<random>, hostname <job>-<index>.
            host = f"{job['metadata']['name']}-{i}"
            found.append(("worker", i, f"{host}-x7k2p", host, container))
    return found


def rill_cluster_available():
    """Whether `$RILL_BIN cluster` can be used; a RILL_BIN without it fails."""
    if not RILL_BIN:
        return False, "RILL_BIN is not set"
    done = subprocess.run([RILL_BIN, "cluster", "--help"], capture_output=True, text=True,
                          timeout=30)
    first = (done.stderr.strip().splitlines() or [""])[0]
    assert done.returncode == 0, f"`{RILL_BIN} cluster --help` exits {done.returncode}: {first}"
    return True, ""


def rill_cluster(tf_config):
    env = {k: v for k, v in os.environ.items() if k != "TF_CONFIG"}
    env["TF_CONFIG"] = tf_config
    return subprocess.run([RILL_BIN, "cluster", "--cluster_from", "tf_config"],
                          capture_output=True, text=True, timeout=30, env=env)


def rill_lines(cluster, task_type, index):
    jobs = ";".join(f"{job}={','.join(cluster[job])}" for job in sorted(cluster))
    return ["source: tf_config", f"cluster: {jobs}", f"task: {task_type} {index}"]


def shape_tf_configs(test, shape):
    """Checks one shape's objects and pods; returns [(TF_CONFIG, cluster, type, index)]."""
    name, ps, workers, flags, port, namespace = shape
    _, docs = render_docs(["--name", name, "--ps", str(ps), "--workers", str(workers),
                           "--image", "registry.example/rill:1", *flags])
    cluster = intended_cluster(name, ps, workers, port)
    (service,) = by_kind(docs, "Service")
    stateful_sets = by_kind(docs, "StatefulSet")
    (job,) = by_kind(docs, "Job")
    test.assertEqual(len(docs), 2 + (1 if ps else 0))
    for doc in docs:
        test.assertEqual(doc["metadata"]["namespace"], namespace)

    test.assertEqual(service["metadata"]["name"], name)
    test.assertEqual(service["spec"]["clusterIP"], "None")
    test.assertTrue(service["spec"]["publishNotReadyAddresses"])
    test.assertEqual([(p["port"], p["targetPort"]) for p in service["spec"]["ports"]],
                     [(port, port)])
    selector = service["spec"]["selector"].items()
    test.assertIn(("app.kubernetes.io/instance", name), selector)

    test.assertEqual(len(stateful_sets), 1 if ps else 0)
    for sts in stateful_sets:
        spec = sts["spec"]
        labels = spec["template"]["metadata"]["labels"].items()
        test.assertEqual(sts["metadata"]["name"], f"{name}-ps")
        test.assertEqual(spec["serviceName"], name)
        test.assertEqual(spec["replicas"], ps)
        test.assertEqual(spec["podManagementPolicy"], "Parallel")
        test.assertLessEqual(spec["selector"]["matchLabels"].items(), labels)
        test.assertLessEqual(selector, labels)

    spec = job["spec"]
    pod = spec["template"]["spec"]
    labels = spec["template"]["metadata"]["labels"].items()
    test.assertEqual(job["metadata"]["name"], f"{name}-worker")
    test.assertEqual(spec["completionMode"], "Indexed")
    test.assertEqual((spec["completions"], spec["parallelism"]), (workers, workers))
    test.assertEqual(pod["subdomain"], name)
    test.assertEqual(pod["restartPolicy"], "OnFailure")
    test.assertLessEqual(selector, labels)
    (volume,) = pod["volumes"]
    claim = flags[flags.index("--logdir-claim") + 1] if "--logdir-claim" in flags else None
    if claim:
        test.assertEqual(volume["persistentVolumeClaim"], {"claimName": claim})
    else:
        test.assertEqual(volume["emptyDir"], {})
    (mount,) = pod["containers"][0]["volumeMounts"]
    test.assertEqual((mount["name"], mount["mountPath"]), (volume["name"], "/logdir"))

    found = []
    for role, index, pod_name, hostname, container in pods(docs):
        with test.subTest(shape=name, role=role, index=index):
            test.assertEqual(container["image"], "registry.example/rill:1")
            test.assertEqual(container["args"], PROGRAM)
            test.assertEqual([p["containerPort"] for p in container["ports"]], [port])
            test.assertIn("requests", container["resources"])
            own = f"{hostname}.{name}"
            test.assertEqual(cluster[role][index], f"{own}:{port}")
            env = pod_env(container, pod_name, namespace)
            if role == "worker":
                env["JOB_COMPLETION_INDEX"] = str(index)
            status, tf_config, asked = run_container_script(container, env)
            test.assertEqual(status, 0, tf_config)
            test.assertEqual(json.loads(tf_config),
                             {"cluster": cluster, "task": {"type": role, "index": index}})
            # It waited for its own name, the address it binds.
            test.assertEqual(asked, [f"hosts {own}"])
            found.append((tf_config, cluster, role, index))
    return found


class KubernetesManifests(unittest.TestCase):
    def test_every_pod_builds_its_tf_config(self):
        for shape in SHAPES:
            shape_tf_configs(self, shape)

    def test_rill_reads_every_pods_tf_config(self):
        available, why = rill_cluster_available()
        if not available:
            self.skipTest(f"{why}: TF_CONFIG checked with Python's json only, not with "
                          "`rill cluster --cluster_from tf_config`")
        for shape in SHAPES:
            for tf_config, cluster, role, index in shape_tf_configs(self, shape):
                with self.subTest(tf_config=tf_config):
                    done = rill_cluster(tf_config)
                    self.assertEqual(done.returncode, 0, done.stderr)
                    self.assertEqual(done.stdout.splitlines(), rill_lines(cluster, role, index))

    def test_a_pod_without_an_index_says_so(self):
        _, docs = render_docs(["--image", "rill:latest"])
        container = by_kind(docs, "StatefulSet")[0]["spec"]["template"]["spec"]["containers"][0]
        status, stderr, asked = run_container_script(container,
                                                     pod_env(container, "mnist-ps", "default"))
        self.assertEqual(status, 2)
        self.assertIn("no task index", stderr)
        self.assertEqual(asked, [])

    def test_committed_files_equal_a_fresh_render(self):
        for file in ("mnist-job.yaml", "mnist-tfjob.yaml"):
            with self.subTest(file=file):
                with open(os.path.join(KUBERNETES_DIR, file)) as f:
                    committed = f.read()
                prefix = "# Rendered by: deploy/kubernetes/render.py "
                first = committed.split("\n", 1)[0]
                self.assertTrue(first.startswith(prefix), first)
                rendered, _ = render_docs(shlex.split(first[len(prefix):]))
                self.assertEqual(committed, rendered,
                                 f"deploy/kubernetes/{file} differs from a fresh render: run "
                                 f"{first[2:]} > deploy/kubernetes/{file}")

    def test_commands_hold_no_kubernetes_variable_references(self):
        # Kubernetes expands $(NAME) and $$ in command and args.
        for flags in ([], ["--tfjob"]):
            text, _ = render_docs(["--image", "rill:latest", *flags])
            self.assertNotIn("$(", text)
            self.assertNotIn("$$", text)

    def test_tfjob_runs_what_the_jobs_run(self):
        with open(os.path.join(KUBERNETES_DIR, "mnist-job.yaml")) as f:
            jobs = [doc for doc in yaml.safe_load_all(f) if doc is not None]
        with open(os.path.join(KUBERNETES_DIR, "mnist-tfjob.yaml")) as f:
            (tfjob,) = [doc for doc in yaml.safe_load_all(f) if doc is not None]
        worker = by_kind(jobs, "Job")[0]["spec"]["template"]["spec"]["containers"][0]
        self.assertEqual((tfjob["apiVersion"], tfjob["kind"]), ("kubeflow.org/v1", "TFJob"))
        replicas = tfjob["spec"]["tfReplicaSpecs"]
        self.assertEqual(sorted(replicas), ["PS", "Worker"])
        self.assertEqual(replicas["PS"]["replicas"], 1)
        self.assertEqual(replicas["Worker"]["replicas"], 2)
        self.assertEqual(tfjob["spec"]["runPolicy"]["cleanPodPolicy"], "Running")
        name, namespace = tfjob["metadata"]["name"], tfjob["metadata"]["namespace"]
        # The cluster as the training operator writes it: a Service per task.
        cluster = {role.lower(): [f"{name}-{role.lower()}-{i}.{namespace}.svc:2222"
                                  for i in range(spec["replicas"])]
                   for role, spec in replicas.items()}
        available, why = rill_cluster_available()
        for role, spec in replicas.items():
            (container,) = spec["template"]["spec"]["containers"]
            self.assertEqual(container["name"], "tensorflow")
            self.assertEqual(container["image"], worker["image"])
            self.assertEqual(container["args"], worker["args"])
            self.assertEqual(container["ports"], [{"name": "tfjob-port", "containerPort": 2222}])
            for index in range(spec["replicas"]):
                with self.subTest(role=role, index=index):
                    task = {"type": role.lower(), "index": index}
                    tf_config = json.dumps({"cluster": cluster, "task": task,
                                            "environment": "cloud"}, separators=(",", ":"))
                    pod_name = f"{name}-{role.lower()}-{index}"
                    env = pod_env(container, pod_name, namespace)
                    env["TF_CONFIG"] = tf_config
                    status, passed, asked = run_container_script(container, env)
                    self.assertEqual(status, 0, passed)
                    self.assertEqual(passed, tf_config)
                    self.assertEqual(asked, [f"hosts {pod_name}.{namespace}.svc"])
                    if available:
                        done = rill_cluster(tf_config)
                        self.assertEqual(done.returncode, 0, done.stderr)
                        self.assertEqual(done.stdout.splitlines(),
                                         rill_lines(cluster, role.lower(), index))
        if not available:
            print(f"kubernetes_test: {why}: the operator's TF_CONFIG not read by rill",
                  file=sys.stderr)

    def test_per_index_retries(self):
        _, docs = render_docs(["--image", "rill:latest", "--backoff-limit-per-index", "2"])
        spec = by_kind(docs, "Job")[0]["spec"]
        self.assertEqual(spec["backoffLimitPerIndex"], 2)
        self.assertEqual(spec["podReplacementPolicy"], "Failed")
        self.assertEqual(spec["template"]["spec"]["restartPolicy"], "Never")

    def test_program_and_arguments_after_a_double_dash(self):
        program = ["/usr/local/bin/distributed_mnist", "--logdir=/logdir", "--issync=1",
                   "--model", "cnn", "an arg with 'quotes'"]
        text, docs = render_docs(["--image", "rill:latest", "--", *program])
        for _, _, _, _, container in pods(docs):
            self.assertEqual(container["args"], program)
        header = text.split("\n", 1)[0].split("render.py ", 1)[1]
        self.assertEqual(shlex.split(header), ["--image", "rill:latest", "--", *program])

    def test_bad_shapes_are_refused_with_the_reason(self):
        cases = [
            (["--ps", "0", "--workers", "2"], "--ps 0 with --workers 2"),
            (["--workers", "0"], "--workers 0"),
            (["--name", "Mnist_1"], "--name 'Mnist_1'"),
            (["--port", "70000"], "--port 70000"),
            (["--tfjob", "--backoff-limit-per-index", "1"], "--backoff-limit-per-index"),
            (["--"], "nothing after '--'"),
        ]
        for args, message in cases:
            with self.subTest(args=args):
                done = render(["--image", "rill:latest", *args])
                self.assertNotEqual(done.returncode, 0)
                self.assertIn(message, done.stderr)
                self.assertEqual(done.stdout, "")


if __name__ == "__main__":
    unittest.main(verbosity=2)
