#!/usr/bin/env python3
"""Writes the Kubernetes manifests of a rill training job to stdout.

  render.py --name mnist --ps 1 --workers 2 --image IMAGE [--port 2222]
            [--namespace default] [--logdir-claim PVC] [--backoff-limit N]
            [--backoff-limit-per-index N] [--tfjob] [-- PROGRAM ARGS...]

Without --tfjob: a headless Service, a StatefulSet of ps tasks and an
Indexed Job of workers. Every pod builds its TF_CONFIG from its index when
it starts, with its address `<name>-<role>-<index>.<name>:<port>`, the DNS
name the Service gives it. With --tfjob: one Kubeflow TFJob
(kubeflow.org/v1), whose operator writes TF_CONFIG itself. PROGRAM ARGS
default to distributed_mnist with --logdir on the log volume.

Python's standard library and PyYAML (Debian: python3-yaml) only.
"""

import argparse
import json
import re
import shlex
import sys
import textwrap

try:
    import yaml
except ImportError:
    sys.exit("render.py: needs PyYAML (Debian: apt-get install python3-yaml)")

PROGRAM = "/rill/build/examples/distributed_mnist"
LOGDIR = "/logdir"
# Without CURVE keys a task refuses to serve its pod's address unless told
# the network is trusted: anyone who reaches a port can read and change
# every variable. Pass --curve_keys DIR (a mounted Secret) after '--'
# instead of --insecure on a network others share.
DEFAULT_ARGS = [PROGRAM, f"--logdir={LOGDIR}", "--insecure"]
# Leaves room for "-worker-<index>" in a 63-character hostname and for the
# revision hash a StatefulSet adds to its pods' labels.
MAX_NAME = 40

# Each pod's container runs this with the program as its arguments. It
# exports TF_CONFIG for the pod's task, waits until the Service's DNS has
# the pod (the program binds the address its own name resolves to, which a
# headless Service publishes only once the pod has an IP), then becomes the
# program, so that SIGTERM reaches it.
TASK_SCRIPT = r"""set -eu
# The task index: an Indexed Job sets JOB_COMPLETION_INDEX; a StatefulSet's
# pod is named <set>-<ordinal>.
index="${JOB_COMPLETION_INDEX:-${POD_NAME##*-}}"
case "$index" in
  ''|*[!0-9]*) echo "no task index in JOB_COMPLETION_INDEX or POD_NAME '$POD_NAME'" >&2; exit 2 ;;
esac
task="{\"type\": \"$RILL_TASK_TYPE\", \"index\": $index}"
export TF_CONFIG="{\"cluster\": $RILL_CLUSTER, \"task\": $task}"
host="$RILL_HOSTNAME_PREFIX$index.$RILL_SERVICE"
until getent hosts "$host" >/dev/null; do sleep 1; done
exec "$@"
"""

# A TFJob's pods get TF_CONFIG from the operator, their own address among
# its HOST:PORT strings as <pod name>.<namespace>.svc:<port>. The wait is
# the same as above; a pod whose name names no address waits for none.
# Neither script holds "$(": Kubernetes reads $(NAME) in a command as a
# reference to an environment variable.
TFJOB_SCRIPT = r"""set -eu
printf '%s\n' "$TF_CONFIG" | grep -o '"[A-Za-z0-9][A-Za-z0-9.-]*:[0-9][0-9]*"' | tr -d '"' |
  while read -r address; do
    case "$address" in
      "$POD_NAME".*) until getent hosts "${address%:*}" >/dev/null; do sleep 1; done ;;
    esac
  done
exec "$@"
"""


class Dumper(yaml.SafeDumper):
    """Block style, lists indented under their key, scripts as literal blocks."""

    def increase_indent(self, flow=False, indentless=False):
        return super().increase_indent(flow, False)


def _represent_str(dumper, value):
    style = "|" if "\n" in value else None
    return dumper.represent_scalar("tag:yaml.org,2002:str", value, style=style)


Dumper.add_representer(str, _represent_str)


def parse_args(argv):
    program = DEFAULT_ARGS
    if "--" in argv:
        cut = argv.index("--")
        argv, program = argv[:cut], argv[cut + 1:]
        if not program:
            sys.exit("render.py: nothing after '--': expected PROGRAM ARGS...")
    parser = argparse.ArgumentParser(
        prog="render.py", description="Writes a rill training job's Kubernetes manifests.",
        epilog="After '--': the program every task runs and its arguments (default: "
               f"{' '.join(DEFAULT_ARGS)}).")
    parser.add_argument("--name", default="mnist",
                        help="the Service's name; the ps StatefulSet and worker Job are NAME-ps "
                             "and NAME-worker")
    parser.add_argument("--ps", type=int, default=1, help="ps tasks (0: variables on the worker)")
    parser.add_argument("--workers", type=int, default=2,
                        help="worker tasks; worker 0 is the chief")
    parser.add_argument("--image", required=True, help="the image with rill built (deploy/docker)")
    parser.add_argument("--port", type=int, default=2222, help="every task's port")
    parser.add_argument("--namespace", default="default")
    parser.add_argument("--logdir-claim", metavar="PVC",
                        help=f"a PersistentVolumeClaim mounted at {LOGDIR} in the workers "
                             "(default: an emptyDir, lost with the pod)")
    parser.add_argument("--backoff-limit", type=int, default=6,
                        help="container restarts the worker Job allows, all workers together")
    parser.add_argument("--backoff-limit-per-index", type=int, metavar="N",
                        help="N restarts per worker instead (pods are replaced, not restarted in "
                             "place; Kubernetes 1.29 or later)")
    parser.add_argument("--tfjob", action="store_true",
                        help="a Kubeflow TFJob instead (the operator sets TF_CONFIG)")
    args = parser.parse_args(argv)
    args.program = program
    return args, parser


def check_args(args, parser):
    if not re.fullmatch(r"[a-z]([-a-z0-9]*[a-z0-9])?", args.name) or len(args.name) > MAX_NAME:
        parser.error(f"--name '{args.name}': expected a DNS label (lowercase letters, digits and "
                     f"'-', starting with a letter) of at most {MAX_NAME} characters")
    if not re.fullmatch(r"[a-z0-9]([-a-z0-9]*[a-z0-9])?", args.namespace):
        parser.error(f"--namespace '{args.namespace}': expected a DNS label")
    if args.ps < 0:
        parser.error(f"--ps {args.ps}: expected 0 or more")
    if args.workers < 1:
        parser.error(f"--workers {args.workers}: expected 1 or more")
    # Without a ps task each worker keeps its own variables: the chief
    # initializes only its own and the other workers would wait forever.
    if args.ps == 0 and args.workers > 1:
        parser.error(f"--ps 0 with --workers {args.workers}: workers share variables only "
                     "through ps tasks; give --ps 1 or more, or --workers 1")
    if not 1 <= args.port <= 65535:
        parser.error(f"--port {args.port}: expected 1..65535")
    if args.backoff_limit < 0:
        parser.error(f"--backoff-limit {args.backoff_limit}: expected 0 or more")
    if args.backoff_limit_per_index is not None and args.backoff_limit_per_index < 0:
        parser.error(f"--backoff-limit-per-index {args.backoff_limit_per_index}: "
                     "expected 0 or more")
    if args.tfjob and args.backoff_limit_per_index is not None:
        parser.error("--backoff-limit-per-index is for the Indexed Job, not --tfjob")


def labels(args, role=None):
    found = {"app.kubernetes.io/name": "rill", "app.kubernetes.io/instance": args.name}
    if role:
        found["app.kubernetes.io/component"] = role
    return found


def cluster(args):
    """The cluster every pod's TF_CONFIG names: job -> task addresses."""
    jobs = {}
    for role, count in (("ps", args.ps), ("worker", args.workers)):
        if count:
            jobs[role] = [f"{args.name}-{role}-{i}.{args.name}:{args.port}" for i in range(count)]
    return jobs


def resources():
    # Placeholders: size them for the model and the nodes.
    return {"requests": {"cpu": "1", "memory": "1Gi"}, "limits": {"memory": "2Gi"}}


def logdir_volume(args):
    if args.logdir_claim:
        return {"name": "logdir", "persistentVolumeClaim": {"claimName": args.logdir_claim}}
    return {"name": "logdir", "emptyDir": {}}


def pod_name_env():
    return {"name": "POD_NAME", "valueFrom": {"fieldRef": {"fieldPath": "metadata.name"}}}


def task_container(args, role):
    container = {
        "name": role,
        "image": args.image,
        "command": ["sh", "-c", TASK_SCRIPT, "sh"],
        "args": list(args.program),
        "env": [
            {"name": "RILL_CLUSTER", "value": json.dumps(cluster(args))},
            {"name": "RILL_TASK_TYPE", "value": role},
            {"name": "RILL_HOSTNAME_PREFIX", "value": f"{args.name}-{role}-"},
            {"name": "RILL_SERVICE", "value": args.name},
            pod_name_env(),
        ],
        "ports": [{"name": "rill", "containerPort": args.port}],
        "resources": resources(),
    }
    if role == "worker":
        container["volumeMounts"] = [{"name": "logdir", "mountPath": LOGDIR}]
    return container


def service(args):
    return {
        "apiVersion": "v1",
        "kind": "Service",
        "metadata": {"name": args.name, "namespace": args.namespace, "labels": labels(args)},
        "spec": {
            "clusterIP": "None",
            # A pod's name resolves as soon as it has an IP: tasks connect
            # before their peers would count as ready.
            "publishNotReadyAddresses": True,
            "selector": labels(args),
            "ports": [{"name": "rill", "port": args.port, "targetPort": args.port}],
        },
    }


def ps_stateful_set(args):
    name = f"{args.name}-ps"
    return {
        "apiVersion": "apps/v1",
        "kind": "StatefulSet",
        "metadata": {"name": name, "namespace": args.namespace, "labels": labels(args, "ps")},
        "spec": {
            "serviceName": args.name,
            "replicas": args.ps,
            "podManagementPolicy": "Parallel",
            "selector": {"matchLabels": labels(args, "ps")},
            "template": {
                "metadata": {"labels": labels(args, "ps")},
                "spec": {"containers": [task_container(args, "ps")]},
            },
        },
    }


def worker_job(args):
    name = f"{args.name}-worker"
    spec = {
        "completionMode": "Indexed",
        "completions": args.workers,
        "parallelism": args.workers,
        "backoffLimit": args.backoff_limit,
    }
    pod = {
        "subdomain": args.name,
        "restartPolicy": "OnFailure",
        "containers": [task_container(args, "worker")],
        "volumes": [logdir_volume(args)],
    }
    if args.backoff_limit_per_index is not None:
        spec["backoffLimitPerIndex"] = args.backoff_limit_per_index
        # A replacement starts only once the pod it replaces is gone, so
        # that no two pods serve one task.
        spec["podReplacementPolicy"] = "Failed"
        pod["restartPolicy"] = "Never"
    spec["template"] = {"metadata": {"labels": labels(args, "worker")}, "spec": pod}
    return {
        "apiVersion": "batch/v1",
        "kind": "Job",
        "metadata": {"name": name, "namespace": args.namespace, "labels": labels(args, "worker")},
        "spec": spec,
    }


def tfjob_replica(args, role, count):
    container = {
        # The operator finds the container and its port by these names.
        "name": "tensorflow",
        "image": args.image,
        "command": ["sh", "-c", TFJOB_SCRIPT, "sh"],
        "args": list(args.program),
        "env": [pod_name_env()],
        "ports": [{"name": "tfjob-port", "containerPort": args.port}],
        "resources": resources(),
    }
    pod = {"containers": [container]}
    if role == "worker":
        container["volumeMounts"] = [{"name": "logdir", "mountPath": LOGDIR}]
        pod["volumes"] = [logdir_volume(args)]
    return {
        "replicas": count,
        "restartPolicy": "OnFailure",
        "template": {"metadata": {"labels": labels(args, role)}, "spec": pod},
    }


def tfjob(args):
    replicas = {}
    if args.ps:
        replicas["PS"] = tfjob_replica(args, "ps", args.ps)
    replicas["Worker"] = tfjob_replica(args, "worker", args.workers)
    return {
        "apiVersion": "kubeflow.org/v1",
        "kind": "TFJob",
        "metadata": {"name": args.name, "namespace": args.namespace, "labels": labels(args)},
        "spec": {
            "runPolicy": {"cleanPodPolicy": "Running", "backoffLimit": args.backoff_limit},
            "tfReplicaSpecs": replicas,
        },
    }


def command_line(argv):
    return " ".join(shlex.quote(a) for a in argv)


def render(argv):
    args, parser = parse_args(argv)
    check_args(args, parser)
    if args.tfjob:
        about = ("A Kubeflow TFJob: the training operator creates a Service per task and sets "
                 "TF_CONFIG. Worker 0 is the chief; no Chief replica, as the program knows only "
                 "ps and worker tasks. The TFJob succeeds when worker 0 does, and then "
                 "cleanPodPolicy: Running deletes the ps pods, which serve until stopped.")
        docs = [tfjob(args)]
    else:
        workers = f"{args.workers} worker" + ("s" if args.workers > 1 else "")
        about = (f"{args.ps} ps + {workers}: a headless Service {args.name} whose "
                 f"DNS names the pods, {args.name}-<role>-<index>.{args.name}; ")
        if args.ps:
            about += "the ps tasks as a StatefulSet (servers: restarted whenever they end), "
        about += (f"the workers as an Indexed Job. The training is done when the Job "
                  f"{args.name}-worker completes (the chief, worker 0, writes checkpoints and "
                  f"events to {LOGDIR}).")
        if args.ps:
            about += " The ps pods serve until stopped: `kubectl delete -f` this file ends them."
        docs = [service(args)]
        if args.ps:
            docs.append(ps_stateful_set(args))
        docs.append(worker_job(args))
    header = ["# Rendered by: deploy/kubernetes/render.py " + command_line(argv)]
    header += textwrap.wrap(about, width=100, initial_indent="# ", subsequent_indent="# ")
    body = "---\n".join(
        yaml.dump(doc, Dumper=Dumper, sort_keys=False, default_flow_style=False, width=100)
        for doc in docs)
    return "\n".join(header) + "\n" + body


def main():
    sys.stdout.write(render(sys.argv[1:]))


if __name__ == "__main__":
    main()
